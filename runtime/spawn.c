/* SPDX-License-Identifier: Apache-2.0 */
#include "spawn.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

pid_t ts_spawn(char **argv, int pty_slave, struct ts_error *err)
{
	sigset_t empty;
	pid_t pid = fork();

	if (pid < 0)
		return ts_err_errno(err, -errno, "fork");
	if (pid > 0)
		return pid;

	sigemptyset(&empty);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	sigprocmask(SIG_SETMASK, &empty, NULL);
	if (pty_slave >= 0) {
		if (setsid() < 0 || ioctl(pty_slave, TIOCSCTTY, 0) < 0 || dup2(pty_slave, 0) < 0 ||
		    dup2(pty_slave, 1) < 0 || dup2(pty_slave, 2) < 0) {
			fprintf(stderr, "toren-sandbox-init: set up terminal: %s\n",
				strerror(errno));
			_exit(126);
		}
		if (pty_slave > 2)
			close(pty_slave);
	} else if (setpgid(0, 0) < 0) {
		fprintf(stderr, "toren-sandbox-init: setpgid: %s\n", strerror(errno));
		_exit(126);
	}
	execvp(argv[0], argv);
	/* The shell's conventions: 127 not found, 126 found but not executable. */
	fprintf(stderr, "toren-sandbox: `%s`: %s\n", argv[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}
