/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

/*
 * Start the program as a child of init: in its own process group (so a signal to the
 * group reaches the whole job), with init's signal mask and dispositions reset, and no fd
 * of init's beyond 0-2. With pty_slave >= 0 the child starts a session with the pty as
 * its controlling terminal and stdio. Returns the child's pid or -errno.
 */
pid_t ts_spawn(char **argv, int pty_slave, struct ts_error *err);
