/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * init as the sandbox's process and file server (toren-sandbox-init --server).
 *
 * fd 3 is the listening control socket (its path exists only on the host), fd 4 an
 * O_DIRECTORY fd of the host's $ROOT/<id>/logs. Both are close-on-exec and reach no
 * other process. init accepts connections, speaks ctl.h (v3), keeps the process table
 * (proctab.h: init owns every process's streams and relays them to attached clients),
 * and hands file requests to a forked worker. It never blocks on a client: every reply
 * and every piece of output is queued per connection and written as the socket takes it.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ts_server_cfg {
	int listen_fd;
	int logs_fd;
	char **protect_patterns;
	size_t n_protect;
	uint64_t first_proc; /* the first process id (ids go on across starts), >= 1 */
	char **global_env;   /* names of the sandbox-wide variables in our environment */
	size_t n_global_env;
	bool sudo; /* --sudo: serve sudo.h's socket (where root and user exist) */
};

/* Serve until SHUTDOWN or a terminating signal from outside. Returns the exit status. */
int ts_server_run(const struct ts_server_cfg *cfg);
