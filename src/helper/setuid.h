/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>

#include "helper.h"

/*
 * Setuid-root install mode, for hosts that forbid unprivileged user namespaces.
 *
 * When started setuid root, the helper immediately becomes the caller again (real,
 * effective and saved ids), keeping exactly one capability, CAP_SYS_ADMIN, which is what
 * the kernel asks for to create a user namespace there — in its permitted set only.
 * It is effective for the clone alone (ts_setuid_raise just before, ts_setuid_leave
 * right after), so nothing else the helper does (parsing, opening the program and the
 * host paths, checking maps) runs with it. The namespace is then owned by the caller. What the command line may ask is narrowed:
 * only the caller's own uid and gid may be mapped directly (ranges go through newuidmap,
 * which checks /etc/subuid itself), and no cgroup may be created.
 */

/* Detect setuid mode and leave privilege as described; *active says whether it applies. */
int ts_setuid_enter(const struct ts_helper_ctx *ctx, bool *active, struct ts_error *err);

/* Make the kept capability effective, for the clone that creates the namespaces. */
int ts_setuid_raise(struct ts_error *err);

/* Drop the kept capability for good (parent, after clone). */
int ts_setuid_leave(struct ts_error *err);
