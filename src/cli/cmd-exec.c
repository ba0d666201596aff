/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toren-sandbox exec [-i] [-t] [-d] [--user root] [--env K=V] [--cwd DIR] ID -- CMD...
 *
 * The debugging entry point: runs a command in a running sandbox (starting a stopped one
 * around its workspace first). Attached, the command gets our stdio fds themselves
 * (passed with SCM_RIGHTS: no copying), or with -t a pty whose master init hands back to
 * us; -d starts it in the background and prints its process id.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "commands.h"
#include "ctl.h"
#include "procs.h"
#include "relay.h"
#include "sandbox.h"
#include "util.h"

#define MAX_ENV 256

static void usage(FILE *f)
{
	fputs("usage: toren-sandbox exec [OPTIONS] ID -- CMD [ARG...]\n"
	      "\n"
	      "  -i, --interactive      pass our standard input (default: /dev/null)\n"
	      "  -t, --tty              a pty, when standard input is a terminal\n"
	      "  -d, --detach           in the background: print the process id and return;\n"
	      "                         output goes to `toren-sandbox logs ID PROC`\n"
	      "      --user NAME        run as `user` or `root` (default: the sandbox's own\n"
	      "                         user; root needs a sandbox with a root: created\n"
	      "                         by root, or with --user root)\n"
	      "  -e, --env NAME=VALUE   set a variable for this command; repeatable\n"
	      "      --cwd DIR          working directory inside (default /home/user)\n"
	      "  -h, --help             show this help\n",
	      f);
}

/* After hanging up, how long the command has to exit before we go anyway. */
#define HANGUP_GRACE_MS 2000

/*
 * Relay between our terminal and the pty master until the command exits. When our
 * terminal goes away (EOF or EIO on it, SIGHUP) or we are told to end (SIGTERM, SIGQUIT),
 * the command's process group gets SIGHUP (or that signal), as a terminal's session
 * would, and we leave once it exits or after HANGUP_GRACE_MS: a shell left running with
 * nobody at its terminal would count as attached for ever.
 */
static int relay_pty(int conn, uint64_t proc, int master, int sfd, int *status)
{
	unsigned long long deadline = 0;
	bool in_open = true;
	int hung_up = 0;

	for (;;) {
		struct pollfd p[4] = { { .fd = conn, .events = POLLIN },
				       { .fd = master, .events = POLLIN },
				       { .fd = sfd, .events = POLLIN },
				       { .fd = in_open ? STDIN_FILENO : -1, .events = POLLIN } };
		int timeout = -1, end_sig = 0;
		char buf[16384];
		ssize_t n;

		if (deadline) {
			unsigned long long now = ts_now_ms();

			if (now >= deadline) {
				*status = hung_up; /* a wait status: killed by that signal */
				return 0;
			}
			timeout = (int)(deadline - now);
		}
		if (poll(p, 4, timeout) < 0 && errno != EINTR)
			return -errno;
		if (p[1].revents & (POLLIN | POLLHUP)) {
			n = read(master, buf, sizeof(buf));
			if (n > 0)
				ts_write_all(STDOUT_FILENO, buf, (size_t)n);
		}
		if (p[3].revents & (POLLIN | POLLHUP | POLLERR)) {
			n = read(STDIN_FILENO, buf, sizeof(buf));
			if (n > 0)
				ts_write_all(master, buf, (size_t)n);
			else if (n == 0 || errno != EINTR)
				end_sig = SIGHUP; /* a terminal at EOF or EIO has hung up */
		}
		if (p[2].revents & POLLIN) {
			struct signalfd_siginfo si;
			struct winsize ws;

			if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGWINCH) {
					if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
						ioctl(master, TIOCSWINSZ, &ws);
				} else if (si.ssi_signo == SIGINT) {
					struct ts_error ignore; /* not from our raw terminal */

					ts_procs_signal_async(conn, proc, SIGINT, &ignore);
				} else if (si.ssi_signo != SIGCONT) {
					end_sig = (int)si.ssi_signo; /* HUP, TERM, QUIT */
				}
			}
		}
		if (end_sig && !hung_up) {
			struct ts_error ignore;

			ts_procs_signal_async(conn, proc, end_sig, &ignore);
			hung_up = end_sig;
			in_open = false;
			deadline = ts_now_ms() + HANGUP_GRACE_MS;
		}
		if (p[0].revents & (POLLIN | POLLHUP)) {
			struct ts_ctl_msg m = { 0 };
			uint64_t st = 0;
			int r = ts_ctl_recv(conn, &m);

			if (r < 0)
				return r;
			if (m.type == TS_CTL_EXITED && ts_ctl_get_u64(&m, TS_T_STATUS, &st) == 0) {
				ts_ctl_msg_free(&m);
				/* what the command wrote last is still in the master */
				fcntl(master, F_SETFL, O_NONBLOCK);
				while ((n = read(master, buf, sizeof(buf))) > 0)
					ts_write_all(STDOUT_FILENO, buf, (size_t)n);
				*status = (int)(st & 0xffff);
				return 0;
			}
			ts_ctl_msg_free(&m); /* OK/ERROR of the hang-up signal */
		}
	}
}

/* Forward our signals to the command and copy its terminal streams; wait for its exit. */
static int wait_exit(int conn, uint64_t proc, int sfd, struct ts_relay *relay, int *status)
{
	for (;;) {
		struct pollfd p[8] = { { .fd = conn, .events = POLLIN },
				       { .fd = sfd, .events = POLLIN } };
		size_t n = 2 + ts_relay_pollfds(relay, p + 2);

		if (poll(p, n, -1) < 0 && errno != EINTR)
			return -errno;
		ts_relay_step(relay, p + 2);
		if (p[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			struct ts_error ignore;

			if (read(sfd, &si, sizeof(si)) != sizeof(si))
				continue;
			if (si.ssi_signo == SIGCONT)
				ts_relay_resume(relay); /* perhaps in the foreground again */
			else if (si.ssi_signo != SIGWINCH)
				ts_procs_signal_async(conn, proc, (int)si.ssi_signo, &ignore);
		}
		if (p[0].revents & (POLLIN | POLLHUP)) {
			struct ts_ctl_msg m = { 0 };
			uint64_t st = 0;
			int r = ts_ctl_recv(conn, &m);

			if (r < 0)
				return r;
			if (m.type == TS_CTL_EXITED && ts_ctl_get_u64(&m, TS_T_STATUS, &st) == 0) {
				ts_ctl_msg_free(&m);
				ts_relay_finish(relay);
				*status = (int)(st & 0xffff);
				return 0;
			}
			ts_ctl_msg_free(&m); /* OK/ERROR of a forwarded signal */
		}
	}
}

int ts_cmd_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "interactive", no_argument, NULL, 'i' }, { "tty", no_argument, NULL, 't' },
		{ "detach", no_argument, NULL, 'd' },	   { "user", required_argument, NULL, 'u' },
		{ "env", required_argument, NULL, 'e' },   { "cwd", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },	   {}
	};
	struct ts_store *st = NULL;
	struct ts_sandbox_rec rec;
	struct ts_error err = { 0 };
	struct ts_spawn_req req = { 0 };
	struct termios saved;
	struct ts_relay relay;
	char *env[MAX_ENV + 1] = { 0 };
	size_t n_env = 0;
	bool interactive = false, tty = false, detach = false, raw = false;
	_cleanup_close_ int conn = -EBADF, devnull = -EBADF, master = -EBADF, sfd = -EBADF;
	int stdio[3], c, status = 0, r, code;
	uint64_t proc = 0;
	pid_t pid = 0;
	sigset_t mask;

	ts_relay_init(&relay);
	optind = 1;
	while ((c = getopt_long(argc, argv, "+itde:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			interactive = true;
			break;
		case 't':
			tty = true;
			break;
		case 'd':
			detach = true;
			break;
		case 'u':
			if (!strcmp(optarg, "root"))
				req.as = TS_SPAWN_AS_ROOT;
			else if (!strcmp(optarg, "user"))
				req.as = TS_SPAWN_AS_USER;
			else {
				fprintf(stderr, "toren-sandbox exec: bad --user `%s`\n", optarg);
				return 2;
			}
			break;
		case 'e': {
			const char *eq = strchr(optarg, '=');
			char name[256];

			snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - optarg) : 0, optarg);
			if (!eq || !ts_env_name_valid(name) || n_env >= MAX_ENV) {
				fprintf(stderr,
					"toren-sandbox exec: bad --env `%s`: want NAME=VALUE\n",
					optarg);
				return 2;
			}
			env[n_env++] = optarg;
			break;
		}
		case 'C':
			if (optarg[0] != '/') {
				fprintf(stderr, "toren-sandbox exec: --cwd `%s` is not absolute\n",
					optarg);
				return 2;
			}
			req.cwd = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	if (detach && (tty || interactive)) {
		/* a background process reads /dev/null and writes its log: no terminal */
		fprintf(stderr, "toren-sandbox exec: -d cannot be combined with -t or -i\n");
		return 2;
	}
	if (optind + 1 < argc && !strcmp(argv[optind + 1], "--"))
		req.argv = argv + optind + 2;
	else
		req.argv = argv + optind + 1;
	if (!req.argv[0]) {
		usage(stderr);
		return 2;
	}
	if (ts_cli_lookup("exec", argv[optind], &st, &rec) < 0)
		return 1;
	if (req.as == TS_SPAWN_AS_ROOT && ts_sandbox_check_root(&rec, &err) < 0)
		goto fail;
	/* a sandbox whose init is gone (reboot, OOM, kill -9) is rebuilt around its files */
	if (ts_sandbox_start(st, &rec, &err) < 0)
		goto fail;
	/* Activity is init's to count (every request but HELLO); reap asks it. No write
	 * to the store on this path: each would be a synchronous transaction. */
	conn = ts_sandbox_connect(&rec, &err);
	if (conn < 0)
		goto fail;
	req.env = env;
	req.detach = detach;
	req.pty = !detach && tty && isatty(STDIN_FILENO);
	if (!detach && !req.pty) {
		/* our fds themselves, except a terminal: that gets a pipe we copy (relay.h) */
		if (ts_relay_setup(&relay, (interactive ? 1U : 0U) | 2U | 4U, &err) < 0)
			goto fail;
		devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
		stdio[0] = interactive ? relay.sandbox_fds[0] : devnull;
		stdio[1] = relay.sandbox_fds[1];
		stdio[2] = relay.sandbox_fds[2];
		req.stdio = stdio;
	}
	/* signals from here on are the command's, not ours */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigaddset(&mask, SIGWINCH);
	sigaddset(&mask, SIGCONT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	/* reading our terminal in the background fails (EIO) instead of stopping us: the
	 * relay then waits for SIGCONT */
	if (ts_relay_active(&relay))
		signal(SIGTTIN, SIG_IGN);
	r = ts_procs_spawn(conn, &req, &proc, &pid, &master, &err);
	ts_relay_handed_over(&relay);
	if (r < 0)
		goto fail;
	if (detach) {
		printf("%llu\n", (unsigned long long)proc);
		code = 0;
		goto out;
	}
	if (ts_procs_watch(conn, proc, &err) < 0)
		goto fail;
	if (req.pty) {
		struct winsize ws;

		if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
			ioctl(master, TIOCSWINSZ, &ws);
		if (tcgetattr(STDIN_FILENO, &saved) == 0) {
			struct termios t = saved;

			cfmakeraw(&t);
			raw = tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
		}
		r = relay_pty(conn, proc, master, sfd, &status);
		if (raw)
			tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	} else {
		r = wait_exit(conn, proc, sfd, &relay, &status);
	}
	if (r < 0) {
		ts_err_errno(&err, r, "sandbox `%s` went away while the command ran", rec.id);
		goto fail;
	}
	code = ts_procs_exit_code(status);
	goto out;
fail:
	ts_cli_error("exec", &err);
	code = 125;
out:
	ts_relay_close(&relay);
	ts_sandbox_rec_free(&rec);
	ts_store_close(st);
	return code;
}
