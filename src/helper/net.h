/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include "error.h"

/*
 * Bring the loopback interface of the (new, empty) network namespace up. Nothing else is
 * configured: no other interface, no route, so nothing leaves the sandbox.
 */
int ts_net_loopback_up(struct ts_error *err);
