/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spawn-lab: what init's way of starting a command costs against the alternatives, on
 * the host, from a process as small as init (built static with musl, as init is).
 *
 * Usage: spawn-lab -n ROUNDS [-f FILTER.bpf] [-l SUFFIX] -o OUT.csv [PROGRAM]
 *
 * Rows, interleaved (round r starts with row r mod K), each spawn + wait of PROGRAM
 * (default /bin/true):
 *   posix_spawn                 musl's posix_spawn (clone CLONE_VM|CLONE_VFORK)
 *   posix_spawn setsid+sigdef   + POSIX_SPAWN_SETSID|SETSIGMASK|SETSIGDEF (runtime/spawn.c)
 *   fork + init's child steps   what runtime/proctab.c start_child does: a status pipe,
 *                               fork, signal() of every signal to SIG_DFL, sigprocmask,
 *                               setsid, 3 dup2, dup2 + F_SETFD of the status pipe,
 *                               close_range, 41 PR_CAPBSET_DROP, capset, chdir, execve;
 *                               the parent reads the status pipe to EOF, then waits
 *   vfork + the same steps      the same child steps after vfork (no page-table copy)
 *
 * -f loads a seccomp filter first (a cached .bpf of the state root: the sandbox's own),
 * so every syscall of the lab, its children and PROGRAM pays it as inside a sandbox; -l
 * appends SUFFIX to the labels. Needs root for the capability steps to succeed (they are
 * timed either way).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static char *prog[2] = { "/bin/true", NULL };
static int devnull;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int wait_for(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 127;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int row_spawn(int flags)
{
	posix_spawnattr_t attr;
	posix_spawn_file_actions_t fa;
	sigset_t empty, all;
	pid_t pid;
	int r;

	sigemptyset(&empty);
	sigfillset(&all);
	posix_spawnattr_init(&attr);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, devnull, 0);
	posix_spawn_file_actions_adddup2(&fa, devnull, 1);
	if (flags) {
		posix_spawnattr_setsigmask(&attr, &empty);
		posix_spawnattr_setsigdefault(&attr, &all);
		posix_spawnattr_setflags(&attr, (short)flags);
	}
	r = posix_spawn(&pid, prog[0], &fa, &attr, prog, environ);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	return r ? 127 : wait_for(pid);
}

/* The child's steps of runtime/proctab.c start_child, up to and including execve. */
static void child_steps(int status_fd)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { { 0 } };
	sigset_t none;

	for (int sig = 1; sig < _NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	dup2(devnull, 0);
	dup2(devnull, 1);
	dup2(devnull, 2);
	if (status_fd != 3) {
		dup2(status_fd, 3);
		fcntl(3, F_SETFD, FD_CLOEXEC);
	}
	syscall(SYS_close_range, 4U, ~0U, 0);
	for (int cap = 0; cap <= 40; cap++)
		prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
	syscall(SYS_capset, &h, d);
	if (chdir("/") < 0)
		_exit(126);
	execve(prog[0], prog, environ);
	_exit(127);
}

static int row_fork(bool use_vfork)
{
	int status[2];
	char c;
	pid_t pid;

	if (pipe2(status, O_CLOEXEC) < 0)
		return 127;
	pid = use_vfork ? vfork() : fork();
	if (pid == 0)
		child_steps(status[1]);
	close(status[1]);
	if (pid < 0) {
		close(status[0]);
		return 127;
	}
	while (read(status[0], &c, 1) < 0 && errno == EINTR)
		;
	close(status[0]);
	return wait_for(pid);
}

static int load_filter(const char *path)
{
	static unsigned char buf[1 << 20];
	struct sock_fprog fp;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0 || n % sizeof(struct sock_filter))
		return -EINVAL;
	fp.len = (unsigned short)(n / sizeof(struct sock_filter));
	fp.filter = (struct sock_filter *)buf;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp) < 0)
		return -errno;
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const labels[] = { "posix_spawn", "posix_spawn setsid+sigdef",
					      "fork + init's child steps",
					      "vfork + init's child steps" };
	const char *out = NULL, *filter = NULL, *suffix = "";
	int n = 100, opt;
	FILE *o;

	while ((opt = getopt(argc, argv, "n:f:l:o:")) != -1) {
		switch (opt) {
		case 'n':
			n = atoi(optarg);
			break;
		case 'f':
			filter = optarg;
			break;
		case 'l':
			suffix = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		default:
			return 2;
		}
	}
	if (!out) {
		fputs("usage: spawn-lab -n ROUNDS [-f FILTER.bpf] [-l SUFFIX] -o OUT.csv "
		      "[PROGRAM]\n",
		      stderr);
		return 2;
	}
	if (optind < argc)
		prog[0] = argv[optind];
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (filter) {
		int r = load_filter(filter);

		if (r < 0) {
			fprintf(stderr, "spawn-lab: load `%s`: %s\n", filter, strerror(-r));
			return 2;
		}
	}
	o = fopen(out, "a");
	if (!o)
		return 2;
	for (int r = -3; r < n; r++)
		for (int j = 0; j < 4; j++) {
			int k = (((r % 4) + 4) % 4 + j) % 4, st;
			long long t0 = now_ns(), t1;

			st = k == 0   ? row_spawn(0)
			     : k == 1 ? row_spawn(POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
						  POSIX_SPAWN_SETSIGDEF)
			     : k == 2 ? row_fork(false)
				      : row_fork(true);
			t1 = now_ns();
			if (r >= 0)
				fprintf(o, "\"%s%s\",%d,%lld,%d\n", labels[k], suffix, r, t1 - t0,
					st);
		}
	fclose(o);
	return 0;
}
