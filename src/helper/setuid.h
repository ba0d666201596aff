/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>

#include "helper.h"

/*
 * Setuid-root install mode, for hosts that forbid unprivileged user namespaces.
 *
 * When started setuid root, the helper immediately becomes the caller again (real,
 * effective and saved ids), keeping exactly one capability, CAP_SYS_ADMIN, which is what
 * the kernel asks for to create a user namespace there. The namespace is then owned by
 * the caller, every host path is opened with the caller's credentials, and the parent
 * drops the capability right after clone. What the command line may ask is narrowed:
 * only the caller's own uid and gid may be mapped directly (ranges go through newuidmap,
 * which checks /etc/subuid itself), and no cgroup may be created.
 */

/* Detect setuid mode and leave privilege as described; *active says whether it applies. */
int ts_setuid_enter(const struct ts_helper_ctx *ctx, bool *active, struct ts_error *err);

/* Drop the kept capability for good (parent, after clone). */
int ts_setuid_leave(struct ts_error *err);
