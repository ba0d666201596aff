// SPDX-License-Identifier: Apache-2.0
/*
 * RT and TT: the runtime boundary (leaked fds, cwd, exe, init, escapees) and the
 * terminal (security-cases.md §B.3, §B.4).
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

static void msleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

PROBE_CASE(rt01_fds)
{
	if (ctx->n_entry_fds == 0)
		res_fail(r, "ctl: no fds recorded at entry (stdout must be open)");
	for (size_t i = 0; i < ctx->n_entry_fds; i++) {
		int fd = ctx->entry_fds[i];
		const char *link = ctx->entry_links[i];
		struct stat st;
		if (fd > 2) {
			res_fail(r, "fd %d leaked -> %s", fd, link);
			if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
				int h = openat(fd, "../../../etc/hostname", O_RDONLY | O_CLOEXEC);
				res_fail(r,
					 "fd %d is a directory; openat(../../../etc/hostname)=%s",
					 fd, h >= 0 ? "OK" : en(errno));
				if (h >= 0)
					close(h);
			}
			continue;
		}
		if (fstat(fd, &st) < 0) {
			res_note(r, "fd%d=closed", fd);
			continue;
		}
		if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISSOCK(st.st_mode))
			res_note(r, "fd%d=%s", fd,
				 S_ISFIFO(st.st_mode)	? "pipe"
				 : S_ISSOCK(st.st_mode) ? "socket"
							: link);
		else
			res_fail(r, "fd%d is a %s -> %s", fd,
				 S_ISDIR(st.st_mode) ? "directory" : "file", link);
	}
}

PROBE_CASE(rt02_cwd)
{
	char buf[PATH_MAX], link[PATH_MAX];
	if (!getcwd(buf, sizeof(buf))) {
		res_fail(r, "getcwd=%s", en(errno));
		return;
	}
	res_note(r, "ctl:getcwd=OK");
	if (buf[0] != '/' || strstr(buf, "(unreachable)"))
		res_fail(r, "cwd %s is outside the root", buf);
	else if (strcmp(buf, "/home/user"))
		res_fail(r, "cwd %s, want /home/user", buf);
	else
		res_note(r, "cwd=/home/user");
	ssize_t n = readlink("/proc/self/cwd", link, sizeof(link) - 1);
	if (n < 0 || (link[n] = '\0', strcmp(link, buf)))
		res_fail(r, "/proc/self/cwd -> %s", n < 0 ? en(errno) : link);
	for (int i = 0; i < 64; i++)
		if (chdir("..") < 0) {
			res_fail(r, "chdir(..)=%s", en(errno));
			break;
		}
	struct stat a, b;
	if (!getcwd(buf, sizeof(buf)) || strcmp(buf, "/") || stat(".", &a) || stat("/", &b) ||
	    a.st_ino != b.st_ino || a.st_dev != b.st_dev)
		res_fail(r, "64x chdir(..) ends at %s, not the sandbox /", buf);
	else
		res_note(r, "64x..=/");
}

PROBE_CASE(rt03_exe)
{
	pid_t pids[256];
	char path[64], what[80], link[PATH_MAX];
	size_t n = proc_pids(pids, 256);
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	control_ok(r, "open(/proc/self/exe,RDONLY)", fd, errno);
	if (fd >= 0)
		close(fd);
	for (size_t i = 0; i < n && i < 256; i++) {
		snprintf(path, sizeof(path), "/proc/%d/exe", (int)pids[i]);
		snprintf(what, sizeof(what), "open(%s,WRONLY)", path);
		errno = 0;
		fd = open(path, O_WRONLY | O_CLOEXEC);
		/* ETXTBSY for a running binary; EACCES for non-dumpable processes or modes. */
		expect_err(r, what, fd, errno, ERRS(ETXTBSY, EACCES, EROFS, EPERM, ENOENT));
		if (fd >= 0)
			close(fd); /* never written */
	}
	ssize_t m = readlink("/proc/1/exe", link, sizeof(link) - 1);
	if (m < 0) {
		res_note(r, "readlink(/proc/1/exe)=%s", en(errno));
	} else {
		link[m] = '\0';
		res_note(r, "pid1 exe=%s", link);
		errno = 0;
		fd = open(link, O_WRONLY | O_CLOEXEC);
		expect_err(r, "open(init binary,WRONLY)", fd, errno,
			   ERRS(ETXTBSY, EACCES, EROFS, EPERM, ENOENT));
		if (fd >= 0)
			close(fd);
	}
	res_note(r, "replace-/bin/sh variant needs a persistent sandbox");
}

PROBE_CASE(rt05_scm_rights)
{
	int socks = 0;
	for (int fd = 0; fd < 3; fd++) {
		struct stat st;
		if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
			continue;
		socks++;
		/* Whatever the runtime sent us, it must never be a host fd. */
		if (fd == 0) {
			char data[64];
			union {
				struct cmsghdr h;
				char buf[CMSG_SPACE(sizeof(int) * 64)];
			} c;
			struct iovec iov = { data, sizeof(data) };
			struct msghdr mh = { .msg_iov = &iov,
					     .msg_iovlen = 1,
					     .msg_control = c.buf,
					     .msg_controllen = sizeof(c.buf) };
			ssize_t n = recvmsg(0, &mh, MSG_DONTWAIT | MSG_PEEK);
			if (n >= 0 && mh.msg_controllen > 0)
				res_fail(r, "fd0 carries ancillary data from the runtime");
		}
		int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
		for (int count = 1; count <= 253; count += 252) {
			union {
				struct cmsghdr h;
				char buf[CMSG_SPACE(sizeof(int) * 253)];
			} c;
			memset(&c, 0, sizeof(c));
			struct iovec iov = { (void *)"\n", 1 };
			struct msghdr mh = { .msg_iov = &iov,
					     .msg_iovlen = 1,
					     .msg_control = c.buf,
					     .msg_controllen = CMSG_SPACE(sizeof(int) * count) };
			struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int) * count);
			for (int i = 0; i < count; i++)
				((int *)CMSG_DATA(cm))[i] = devnull;
			ssize_t n = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
			res_note(r, "fd%d sendmsg(%d fds)=%s", fd, count,
				 n >= 0 ? "OK" : en(errno));
		}
		/* A control length far beyond what the kernel accepts. */
		static char huge[1 << 17];
		struct iovec iov = { (void *)"\n", 1 };
		struct msghdr mh = { .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = huge,
				     .msg_controllen = sizeof(huge) };
		struct cmsghdr *cm = (struct cmsghdr *)huge;
		cm->cmsg_len = sizeof(huge);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		ssize_t n = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
		res_note(r, "fd%d huge cmsg=%s", fd, n >= 0 ? "OK" : en(errno));
		if (devnull >= 0)
			close(devnull);
	}
	if (!socks)
		res_skip(r, "no inherited socket fds (stdio are pipes or ttys)");
	else
		res_note(r, "the runtime survived iff the run completes (harness)");
}

static size_t count_zombies(void)
{
	pid_t pids[4096];
	char st[64];
	size_t n = proc_pids(pids, 4096), z = 0;
	for (size_t i = 0; i < n && i < 4096; i++)
		if (proc_status(pids[i], "State", st, sizeof(st)) == 0 && st[0] == 'Z')
			z++;
	return z;
}

/* Field 22 of /proc/<pid>/stat: start time, to tell a restarted pid 1 from the same one. */
static unsigned long long start_time(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	char *p = strrchr(buf, ')');
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

PROBE_CASE(rt07_init)
{
	/* Control: a zombie of our own is visible to the counter. */
	pid_t z = fork();
	if (z == 0)
		_exit(0);
	size_t seen = 0;
	for (int i = 0; i < 100 && !(seen = count_zombies()); i++)
		msleep(10);
	if (seen == 0)
		res_fail(r, "ctl: an unreaped child never showed as a zombie");
	else
		res_note(r, "ctl:zombie visible");
	waitpid(z, NULL, 0);

	size_t ok = 0, failed = 0;
	for (int i = 0; i < 1000; i++) {
		pid_t c = fork();
		if (c == 0) {
			if (fork() == 0)
				_exit(0);
			_exit(0);
		}
		if (c < 0) {
			failed++;
			msleep(2);
			continue;
		}
		waitpid(c, NULL, 0);
		ok++;
	}
	msleep(1000);
	size_t left = count_zombies();
	res_note(r, "orphans=%zu fork-failures=%zu", ok, failed);
	if (left)
		res_fail(r, "%zu zombies after 1 s", left);
	else
		res_note(r, "zombies=0");

	/* Signal pid 1 only when it is the sandbox's init (as in NS-01), never a host init. */
	pid_t pids[64];
	char ppid[32];
	size_t n = proc_pids(pids, 64), roots = 0;
	for (size_t i = 0; i < n && i < 64; i++)
		if (proc_status(pids[i], "PPid", ppid, sizeof(ppid)) == 0 && !strcmp(ppid, "0"))
			roots++;
	if (n > 16 || roots != 1) {
		res_fail(r, "precondition (own pid namespace) failed: pid 1 not signalled");
		return;
	}
	unsigned long long t0 = start_time(1);
	errno = 0;
	int rc = kill(1, SIGTERM);
	res_note(r, "kill(1,TERM)=%s", rc == 0 ? "OK" : en(errno));
	msleep(200);
	errno = 0;
	rc = kill(1, SIGKILL);
	res_note(r, "kill(1,KILL)=%s", rc == 0 ? "OK" : en(errno));
	msleep(200);
	if (!t0 || start_time(1) != t0)
		res_fail(r, "pid 1 changed or vanished after kill from inside");
	else
		res_note(r, "pid1 alive");
}

/* Spawn a detached `probe --linger <marker>-<tag>` the way daemons do. */
static void spawn_escapee(struct probe_ctx *ctx, const char *tag, bool use_setsid, bool keep_stdio)
{
	pid_t c = fork();
	if (c != 0) {
		if (c > 0)
			waitpid(c, NULL, 0);
		return;
	}
	if (use_setsid)
		setsid();
	else
		setpgid(0, 0);
	if (fork() != 0)
		_exit(0);
	if (!keep_stdio) {
		int fd = open("/dev/null", O_RDWR);
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
	}
	char m[256];
	snprintf(m, sizeof(m), "%s-%s", ctx->marker, tag);
	execl("/proc/self/exe", ctx->self, "--linger", m, (char *)NULL);
	_exit(127);
}

PROBE_CASE(rt08_escapees)
{
	if (!ctx->marker) {
		res_skip(r, "no --marker given");
		return;
	}
	spawn_escapee(ctx, "setsid", true, true);
	spawn_escapee(ctx, "setpgid", false, false);
	spawn_escapee(ctx, "nohup", true, false);
	msleep(300);
	/* Control: the escapees run (the host then checks they do not outlive the sandbox). */
	pid_t pids[256];
	char path[64], buf[512];
	size_t n = proc_pids(pids, 256), found = 0;
	for (size_t i = 0; i < n && i < 256; i++) {
		snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pids[i]);
		ssize_t m = read_file(path, buf, sizeof(buf));
		for (ssize_t j = 0; j < m; j++)
			if (!buf[j])
				buf[j] = ' ';
		if (m > 0 && strstr(buf, ctx->marker))
			found++;
	}
	if (found < 3)
		res_fail(r, "ctl: only %zu of 3 escapees running", found);
	else
		res_note(r, "ctl:3 escapees running; verdict is the host check");
}

/* ---- terminal ---- */

struct tty_try {
	unsigned long cmd;
	int linux_sub; /* TIOCLINUX subcode, or 0 for TIOCSTI */
};

/* Issue the ioctl on fd; returns 0 on success or errno. */
static int tty_ioctl(int fd, const struct tty_try *t)
{
	char c = '#';
	struct {
		char sub;
		short xs, ys, xe, ye, mode;
	} __attribute__((packed)) sel = { 2, 1, 1, 1, 1, 0 };
	char paste = 3;
	void *arg = &c;
	if (t->linux_sub == 2)
		arg = &sel;
	else if (t->linux_sub == 3)
		arg = &paste;
	return syscall(SYS_ioctl, (long)fd, (long)t->cmd, arg) == 0 ? 0 : errno;
}

/*
 * In a child: new session, open a private pty pair and make the slave our controlling
 * tty. Then TIOCSTI is allowed by the kernel (legacy_tiocsti=1, own ctty), so only the
 * seccomp filter can refuse it: decisive.
 */
static int private_ctty_try(void *arg)
{
	const struct tty_try *t = arg;
	if (setsid() < 0)
		return 200;
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0)
		return 201;
	char *name = ptsname(m);
	int s = name ? open(name, O_RDWR) : -1;
	if (s < 0)
		return 202;
	ioctl(s, TIOCSCTTY, 0);
	int e = tty_ioctl(s, t);
	return e == 0 ? 0 : (e & 0x7f) | 0x80; /* 0 = went through */
}

static void tty_case(struct probe_res *r, const struct tty_try *t, const int *errs,
		     const int *private_errs)
{
	char what[64];
	for (int fd = 0; fd < 3; fd++) {
		int e = tty_ioctl(fd, t);
		snprintf(what, sizeof(what), "fd%d%s", fd, isatty(fd) ? "(tty)" : "");
		expect_err(r, what, e ? -1 : 0, e, errs);
	}
	int tfd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (tfd < 0) {
		res_note(r, "/dev/tty=%s", en(errno));
	} else {
		int e = tty_ioctl(tfd, t);
		expect_err(r, "/dev/tty", e ? -1 : 0, e, errs);
		close(tfd);
	}
	int st = run_child(private_ctty_try, (void *)t, 5);
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) >= 200) {
		res_fail(r, "ctl: private pty as ctty could not be set up (%d)",
			 st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : st);
		return;
	}
	int code = WEXITSTATUS(st);
	if (code == 0)
		res_fail(r, "private-ctty=went through");
	else
		expect_err(r, "private-ctty", -1, code & 0x7f, private_errs);
}

PROBE_CASE(tt01_tiocsti)
{
	struct tty_try t = { TIOCSTI, 0 };
	CTL(r, "ioctl(-1,TIOCGWINSZ)", ioctl(-1, TIOCGWINSZ, NULL), EBADF);
	tty_case(r, &t, ERRS(EPERM, EIO, ENOTTY, EBADF), ERRS(EPERM));
}

PROBE_CASE(tt02_tiocsti_high)
{
	struct tty_try t = { (unsigned long)TIOCSTI | (1UL << 32), 0 };
	CTL(r, "ioctl(-1,TIOCGWINSZ|1<<32)",
	    syscall(SYS_ioctl, -1L, (long)TIOCGWINSZ | (1L << 32), NULL), EBADF);
	tty_case(r, &t, ERRS(EPERM, EIO, ENOTTY, EBADF), ERRS(EPERM));
}

PROBE_CASE(tt03_tioclinux)
{
	struct tty_try paste = { TIOCLINUX, 3 }, setsel = { TIOCLINUX, 2 };
	CTL(r, "ioctl(-1,TIOCGWINSZ)", ioctl(-1, TIOCGWINSZ, NULL), EBADF);
	res_note(r, "PASTESEL:");
	tty_case(r, &paste, ERRS(EPERM, ENOTTY, EBADF, EINVAL), ERRS(EPERM, ENOTTY, EINVAL));
	res_note(r, "SETSEL:");
	tty_case(r, &setsel, ERRS(EPERM, ENOTTY, EBADF, EINVAL), ERRS(EPERM, ENOTTY, EINVAL));
}

/*
 * Is our controlling tty one of the sandbox devpts' ptys? TIOCGPGRP succeeds on a tty
 * only when it is the caller's controlling tty; fstat's st_dev names the devpts
 * instance (pty device numbers repeat across instances, superblocks do not).
 */
static bool is_our_ctty(int fd, dev_t pts_dev)
{
	struct stat st;
	pid_t pg;
	return fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_dev == pts_dev &&
	       ioctl(fd, TIOCGPGRP, &pg) == 0;
}

static bool ctty_in_sandbox_devpts(void)
{
	struct stat pts;
	if (stat("/dev/pts", &pts) < 0)
		return false;
	for (int fd = 0; fd < 3; fd++)
		if (is_our_ctty(fd, pts.st_dev))
			return true;
	DIR *d = opendir("/dev/pts");
	bool found = false;
	struct dirent *de;
	while (d && !found && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		int fd = openat(dirfd(d), de->d_name, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
		if (fd >= 0) {
			found = is_our_ctty(fd, pts.st_dev);
			close(fd);
		}
	}
	if (d)
		closedir(d);
	return found;
}

static int steal_ctty(void *arg)
{
	(void)arg;
	if (setsid() < 0)
		return 200;
	return ioctl(0, TIOCSCTTY, 1) == 0 ? 0 : (errno & 0x7f) | 0x80;
}

PROBE_CASE(tt04_ctty)
{
	CTL(r, "ioctl(-1,TIOCGWINSZ)", ioctl(-1, TIOCGWINSZ, NULL), EBADF);
	errno = 0;
	int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		expect_err(r, "open(/dev/tty)", fd, errno, ERRS(ENXIO));
	else if (ctty_in_sandbox_devpts())
		res_note(r, "/dev/tty=a pty of the sandbox's own devpts"); /* -t */
	else
		res_fail(r, "the controlling tty is not a pty of the sandbox's own devpts");
	if (fd >= 0)
		close(fd);
	pid_t sid = getsid(0);
	/* In a pid namespace getsid() is 0 when the session leader is outside it. */
	if (sid <= 0)
		res_fail(r, "getsid=%d: the session leader is outside the sandbox", (int)sid);
	else
		res_note(r, "sid=%d(inside)", (int)sid);
	int ws = run_child(steal_ctty, NULL, 5);
	int code = ws >= 0 && WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
	if (code == 0)
		res_fail(r, "TIOCSCTTY(0,steal) went through");
	else if (code == 200 || code < 0)
		res_fail(r, "ctl: setsid in a child failed");
	else
		expect_err(r, isatty(0) ? "TIOCSCTTY(tty0,steal)" : "TIOCSCTTY(fd0)", -1,
			   code & 0x7f, ERRS(EPERM, ENOTTY));
}
