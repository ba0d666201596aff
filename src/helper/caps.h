/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include "error.h"

/*
 * Drop every capability for good: the bounding set (so nothing can be regained by
 * executing a file), the ambient and inheritable sets, then the permitted and effective
 * sets. Must run while CAP_SETPCAP is still effective (before the final setresuid).
 */
int ts_caps_drop_bounding(struct ts_error *err);

/* Clear the permitted, effective, inheritable and ambient sets of this thread. */
int ts_caps_clear(struct ts_error *err);
