/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <sys/types.h>

#include "helper.h"

/*
 * Write the uid and gid maps of the child `pid` (which is waiting in its new user
 * namespace). Directly through /proc/PID/{setgroups,uid_map,gid_map} when we may, or
 * through newuidmap/newgidmap (--newidmap) for subordinate ranges.
 *
 * Refuses (-EPERM) any map whose outside range includes the uid or gid that is 0 in our
 * parent namespace: the sandbox never runs as the host's root, also when the helper is
 * started by root.
 */
int ts_idmap_apply(pid_t pid, const struct ts_helper_ctx *ctx, struct ts_error *err);
