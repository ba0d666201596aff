/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * init as the sandbox's process and file server (toren-sandbox-init --server).
 *
 * fd 3 is the listening control socket (its path exists only on the host), fd 4 an
 * O_DIRECTORY fd of the host's $ROOT/<id>/logs. Both are close-on-exec and reach no
 * other process. init accepts connections, speaks ctl.h, spawns processes in their own
 * process groups (with the client's stdio, a pty whose master goes back to the client,
 * or, detached, a pipe that init drains into a bounded log file), reports exits, keeps
 * finished processes for a while, and hands file requests to a forked worker.
 */
#include <stddef.h>
#include <stdint.h>

struct ts_server_cfg {
	int listen_fd;
	int logs_fd;
	char **protect_patterns;
	size_t n_protect;
	uint64_t first_proc; /* the first process id (ids go on across starts), >= 1 */
};

/* Serve until SHUTDOWN or a terminating signal from outside. Returns the exit status. */
int ts_server_run(const struct ts_server_cfg *cfg);
