/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <sys/types.h>

#include "helper.h"

/*
 * Resource limits through cgroups, where the host delegates them to us.
 *
 * cgroup v1 (one hierarchy per controller, as on hosts with a hybrid layout): a leaf
 * `toren-sandbox/<name>` under each of memory, pids and cpu we may write. cgroup v2: a
 * leaf below our own cgroup when its controllers are enabled for us. The caller (the
 * CLI) decides beforehand whether limits go here or to rlimits; the helper only creates,
 * joins and removes.
 */

/* Create the leaves, write the limits and move pid into them. 0 or -errno. */
int ts_cgroup_setup(struct ts_cgroup_plan *plan, pid_t pid, struct ts_error *err);

/* Remove the leaves (after the sandbox's last process is gone). Best effort. */
void ts_cgroup_cleanup(struct ts_cgroup_plan *plan);
