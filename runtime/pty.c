/* SPDX-License-Identifier: Apache-2.0 */
#include "pty.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

int ts_pty_open(struct ts_pty *pty, int from, struct ts_error *err)
{
	char name[64];
	struct termios tio;

	pty->master = pty->slave = -1;
	pty->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (pty->master < 0)
		return ts_err_errno(err, -errno, "open `/dev/ptmx`");
	if (unlockpt(pty->master) < 0 || ptsname_r(pty->master, name, sizeof(name)) != 0) {
		int e = errno;

		close(pty->master);
		return ts_err_errno(err, -e, "unlock pty");
	}
	pty->slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (pty->slave < 0) {
		int e = errno;

		close(pty->master);
		return ts_err_errno(err, -e, "open `%s`", name);
	}
	/* The slave starts with the caller's modes (the CLI put its own tty in raw mode,
	 * so take the modes from before that: canonical defaults are fine). */
	if (tcgetattr(pty->slave, &tio) == 0) {
		tio.c_iflag |= IUTF8;
		tcsetattr(pty->slave, TCSANOW, &tio);
	}
	ts_pty_sync_winsize(pty, from);
	return 0;
}

void ts_pty_sync_winsize(const struct ts_pty *pty, int from)
{
	struct winsize ws;

	if (ioctl(from, TIOCGWINSZ, &ws) == 0)
		ioctl(pty->master, TIOCSWINSZ, &ws);
}
