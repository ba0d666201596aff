/* SPDX-License-Identifier: Apache-2.0 */
#include "spawn.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "util.h"

extern char **environ;

/* Without a pty: posix_spawn, which glibc implements with a vfork-style clone (no page
 * table copy), on the critical path of every command. */
static pid_t spawn_plain(char **argv, struct ts_error *err)
{
	posix_spawnattr_t attr;
	sigset_t empty, all;
	pid_t pid;
	int r;

	sigemptyset(&empty);
	sigfillset(&all);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigmask(&attr, &empty);
	posix_spawnattr_setsigdefault(&attr, &all);
	/* A session (and process group) of its own: nothing but init is ever in init's
	 * session, so no process can join init's process group 1 and reach init through
	 * it (setpriority(PRIO_PGRP, 0), ioprio_set(IOPRIO_WHO_PGRP, 0)). */
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
						POSIX_SPAWN_SETSIGDEF);
	r = posix_spawnp(&pid, argv[0], NULL, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	if (r != 0) {
		/* The shell's conventions: 127 not found, 126 found but not executable. */
		fprintf(stderr, "toren-sandbox: `%s`: %s\n", argv[0], strerror(r));
		return ts_err(err, r == ENOENT ? -ENOENT : -EACCES, "execute `%s`", argv[0]);
	}
	return pid;
}

pid_t ts_spawn(char **argv, int pty_slave, struct ts_error *err)
{
	pid_t pid;

	if (pty_slave < 0)
		return spawn_plain(argv, err);
	pid = fork();

	if (pid < 0)
		return ts_err_errno(err, -errno, "fork");
	if (pid > 0)
		return pid;

	ts_signals_reset();
	if (pty_slave >= 0) {
		if (setsid() < 0 || ioctl(pty_slave, TIOCSCTTY, 0) < 0 || dup2(pty_slave, 0) < 0 ||
		    dup2(pty_slave, 1) < 0 || dup2(pty_slave, 2) < 0) {
			fprintf(stderr, "toren-sandbox-init: set up terminal: %s\n",
				strerror(errno));
			_exit(126);
		}
		if (pty_slave > 2)
			close(pty_slave);
	} else if (setsid() < 0) {
		fprintf(stderr, "toren-sandbox-init: setsid: %s\n", strerror(errno));
		_exit(126);
	}
	execvp(argv[0], argv);
	/* The shell's conventions: 127 not found, 126 found but not executable. */
	fprintf(stderr, "toren-sandbox: `%s`: %s\n", argv[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}
