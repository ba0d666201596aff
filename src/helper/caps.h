/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>

#include "error.h"

/*
 * Empty the bounding set (so nothing can be regained by executing a file) and the
 * ambient set. With keep_setid, the four capabilities of ts_caps_keep_setid stay in
 * the bounding set. Must run while CAP_SETPCAP is still effective
 * (before the final setresuid).
 */
int ts_caps_drop_bounding(bool keep_setid, struct ts_error *err);

/* Clear the permitted, effective, inheritable and ambient sets of this thread. */
int ts_caps_clear(struct ts_error *err);

/*
 * Keep exactly CAP_SETUID, CAP_SETGID, CAP_SETPCAP and CAP_KILL, as permitted,
 * effective, inheritable and ambient capabilities, so that they survive the exec of a
 * durable sandbox's init (no_new_privs allows that: they are a subset of what we hold).
 * They are capabilities in the sandbox's user namespace only: they let init start a
 * process as root or as user (the two ids the helper checked are mapped), make that
 * process drop its bounding set, and signal it whichever id it runs as; nothing more.
 * Every process init starts drops all four.
 */
int ts_caps_keep_setid(struct ts_error *err);
