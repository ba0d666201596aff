/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include "error.h"

/*
 * A pseudo-terminal from the sandbox's private devpts. The caller's terminal stays with
 * init (fd 0/1); only the pty slave reaches the program, so nothing inside can issue
 * ioctls on the host's terminal.
 */
struct ts_pty {
	int master;
	int slave;
};

/* Open a pty pair and copy the window size and modes of fd `from` (a tty) onto it. */
int ts_pty_open(struct ts_pty *pty, int from, struct ts_error *err);

/* Copy the window size of `from` to the pty (after SIGWINCH). */
void ts_pty_sync_winsize(const struct ts_pty *pty, int from);
