/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toren-sandbox-init: PID 1 of a sandbox.
 *
 * It starts the program, forwards signals that come from outside the sandbox to the
 * program's process group, reaps every process that ends up re-parented to it, and when
 * the program exits, kills what is left and exits with the program's status (128+N when
 * the program was killed by signal N). Signals from inside the sandbox are ignored: the
 * kernel already never delivers SIGKILL/SIGSTOP from inside to a namespace's init, and
 * the rest arrive through our signalfd, where only those provably sent from outside are
 * acted on (sigorigin.h).
 *
 * Usage: toren-sandbox-init [--pty] [--] PROGRAM [ARG...]
 *        toren-sandbox-init --server [--sudo] [--protect-pattern GLOB]...   (durable
 *        sandboxes, see server.h; --sudo: sudo.h)
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"
#include "error.h"
#include "pty.h"
#include "server.h"
#include "sigorigin.h"
#include "spawn.h"
#include "util.h"

#define TS_INIT_MAX_PATTERNS 256

struct ts_init {
	pid_t child;
	bool child_done;
	int child_status;
	int sfd;
	bool use_pty;
	struct ts_pty pty;
	bool stdin_open;
};

static int init_exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 125;
}

static void reap(struct ts_init *in)
{
	for (;;) {
		int status;
		pid_t p = waitpid(-1, &status, WNOHANG);

		if (p <= 0)
			return;
		if (p == in->child) {
			in->child_done = true;
			in->child_status = status;
		}
	}
}

static void on_signal(struct ts_init *in, const struct signalfd_siginfo *si)
{
	if (si->ssi_signo == SIGCHLD) {
		reap(in);
		return;
	}
	/* Only what the helper or the CLI sends is forwarded; anything a process inside
	 * sends to PID 1, or has the kernel send, is dropped (sigorigin.h). */
	if (!ts_signal_from_outside(si) || in->child_done)
		return;
	if (si->ssi_signo == SIGWINCH && in->use_pty)
		ts_pty_sync_winsize(&in->pty, STDIN_FILENO);
	/* The child leads its own process group (or session, with a pty). */
	kill(-in->child, (int)si->ssi_signo);
}

/* Copy what is readable from `from` to `to`; false on EOF/error of `from`. */
static bool pump(int from, int to)
{
	char buf[16384];
	ssize_t n = read(from, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	return ts_write_all(to, buf, (size_t)n) == 0 || true;
}

static int run(struct ts_init *in)
{
	while (!in->child_done) {
		struct pollfd pfd[3];
		nfds_t n = 0;

		pfd[n++] = (struct pollfd){ .fd = in->sfd, .events = POLLIN };
		if (in->use_pty) {
			pfd[n++] = (struct pollfd){ .fd = in->pty.master, .events = POLLIN };
			if (in->stdin_open)
				pfd[n++] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
		}
		if (poll(pfd, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(in->sfd, &si, sizeof(si)) == sizeof(si))
				on_signal(in, &si);
		}
		if (in->use_pty && (pfd[1].revents & (POLLIN | POLLHUP)))
			pump(in->pty.master, STDOUT_FILENO);
		if (in->use_pty && n > 2 && (pfd[2].revents & (POLLIN | POLLHUP))) {
			if (!pump(STDIN_FILENO, in->pty.master)) {
				/* EOF on the caller's side: end-of-file for the program too. */
				char eot = 4;

				in->stdin_open = false;
				(void)!write(in->pty.master, &eot, 1);
			}
		}
	}
	if (in->use_pty) {
		/* Drain what the program wrote before it exited. */
		fcntl(in->pty.master, F_SETFL, fcntl(in->pty.master, F_GETFL) | O_NONBLOCK);
		while (pump(in->pty.master, STDOUT_FILENO)) {
			struct pollfd p = { .fd = in->pty.master, .events = POLLIN };

			if (poll(&p, 1, 0) <= 0)
				break;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ts_init in = { .sfd = -1, .stdin_open = true };
	struct ts_error err = { 0 };
	char *protect[TS_INIT_MAX_PATTERNS + 1] = { 0 };
	char *global[TS_INIT_MAX_PATTERNS + 1] = { 0 };
	size_t n_protect = 0, n_global = 0;
	bool server = false, sudo = false;
	unsigned long long first_proc = 1;
	sigset_t mask;
	int i = 1;

	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("toren-sandbox-init %s\n", TS_VERSION);
		return 0;
	}
	/* Whatever the helper's caller ignored (an ignored SIGCHLD reaps our children
	 * before we see them exit) or blocked is not ours. From here on init sets no
	 * disposition (signals come through a signalfd): its children reset only the mask
	 * (proctab.c start_child relies on this). */
	ts_signals_reset();
	/* Processes of the same uid inside must not ptrace us or read our memory. */
	prctl(PR_SET_DUMPABLE, 0);
	/* We run from a sealed memfd: name ourselves rather than show "memfd:...". */
	prctl(PR_SET_NAME, "toren-init");
	/* The control channel (fd 3), when given, is ours alone. */
	fcntl(3, F_SETFD, FD_CLOEXEC);

	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--pty"))
			in.use_pty = true;
		else if (!strcmp(argv[i], "--server"))
			server = true;
		else if (!strcmp(argv[i], "--sudo"))
			sudo = true;
		else if (!strcmp(argv[i], "--first-proc") && i + 1 < argc) {
			unsigned long long n;

			if (ts_parse_ull(argv[++i], &n) == 0 && n >= 1 && n < (1ULL << 52))
				first_proc = n;
		} else if (!strcmp(argv[i], "--global-env") && i + 1 < argc) {
			/* a sandbox-wide variable: over the user's HOME, USER, LOGNAME */
			if (n_global < TS_INIT_MAX_PATTERNS)
				global[n_global++] = argv[++i];
			else
				i++;
		} else if (!strcmp(argv[i], "--protect-pattern") && i + 1 < argc) {
			if (n_protect < TS_INIT_MAX_PATTERNS)
				protect[n_protect++] = argv[++i];
			else
				i++;
		} else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else
			break;
	}
	if (server) {
		struct ts_server_cfg cfg = { .listen_fd = 3,
					     .logs_fd = 4,
					     .protect_patterns = protect,
					     .n_protect = n_protect,
					     .first_proc = first_proc,
					     .global_env = global,
					     .n_global_env = n_global,
					     .sudo = sudo };
		struct stat st;

		/* fd 3: the listening control socket, fd 4: the logs directory (helper
		 * --control-fd/--logs-fd). Both ours alone. */
		if (fstat(3, &st) < 0 || !S_ISSOCK(st.st_mode) || fstat(4, &st) < 0 ||
		    !S_ISDIR(st.st_mode)) {
			fprintf(stderr,
				"toren-sandbox-init: --server needs the control socket as fd "
				"3 and the logs directory as fd 4\n");
			return 125;
		}
		fcntl(4, F_SETFD, FD_CLOEXEC);
		return ts_server_run(&cfg);
	}
	if (i >= argc) {
		fprintf(stderr, "usage: toren-sandbox-init [--pty] [--] PROGRAM [ARG...]\n");
		return 125;
	}
	if (getpid() != 1)
		fprintf(stderr, "toren-sandbox-init: warning: not PID 1\n");

	sigfillset(&mask);
	sigdelset(&mask, SIGSEGV);
	sigdelset(&mask, SIGBUS);
	sigdelset(&mask, SIGILL);
	sigdelset(&mask, SIGFPE);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	in.sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (in.sfd < 0) {
		fprintf(stderr, "toren-sandbox-init: signalfd: %s\n", strerror(errno));
		return 125;
	}
	if (in.use_pty && ts_pty_open(&in.pty, STDIN_FILENO, &err) < 0) {
		fprintf(stderr, "toren-sandbox-init: %s\n", err.msg);
		return 125;
	}
	in.child = ts_spawn(argv + i, in.use_pty ? in.pty.slave : -1, &err);
	if (in.child == -ENOENT)
		return 127;
	if (in.child == -EACCES)
		return 126;
	if (in.child < 0) {
		fprintf(stderr, "toren-sandbox-init: %s\n", err.msg);
		return 125;
	}
	if (in.use_pty)
		close(in.pty.slave);
	run(&in);
	/* The program is done: nothing it left behind outlives it. */
	kill(-1, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	return init_exit_code(in.child_status);
}
