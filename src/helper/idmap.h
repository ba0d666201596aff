/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <sys/types.h>

#include "helper.h"

/*
 * Refuse (-EPERM) any map whose outside range includes the uid or gid that is 0 in our
 * parent namespace: the sandbox never runs as the host's root, also when the helper is
 * started by root. Our own namespace does not change: checked once, before the clone,
 * off the path on which the new namespace waits for its maps.
 */
int ts_idmap_check(const struct ts_helper_ctx *ctx, struct ts_error *err);

/*
 * Write the uid and gid maps (checked with ts_idmap_check) of the child `pid`, which is
 * waiting in its new user namespace. Directly through /proc/PID/{setgroups,uid_map,
 * gid_map} when we may, or through newuidmap/newgidmap (--newidmap) for subordinate
 * ranges.
 */
int ts_idmap_apply(pid_t pid, const struct ts_helper_ctx *ctx, struct ts_error *err);
