/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toren-sandbox exec [-i] [-t] [-d] [--user NAME] [-e NAME[=VALUE]] [--cwd DIR] [--tag T]
 *                    [--timeout SECONDS] ID -- CMD...
 * toren-sandbox attach ID PROC
 *
 * The debugging entry point: runs a command in a sandbox (starting a stopped one around
 * its workspace first), through the backend interface. The sandbox's init owns the
 * command's streams; exec copies them to our stdout and stderr, our stdin (with -i) or
 * our terminal (with -t: a pty inside) to the command, and our signals to its process
 * group. No descriptor of ours ever enters the sandbox. attach joins a running process
 * later (its recent output, then live) and exits with its status; Ctrl-C detaches.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "backend.h"
#include "cleanup.h"
#include "cli.h"
#include "commands.h"
#include "util.h"

#define MAX_ENV 256
#define INPUT_AHEAD (256U << 10) /* stdin read ahead of what the command has taken */
#define HANGUP_GRACE_MS 2000	 /* after a hang-up, how long the command has to exit */
#define EXIT_TIMEOUT 124

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
	      "  -e, --env NAME[=VALUE] set a variable for this command only (NAME alone:\n"
	      "                         our value); repeatable\n"
	      "      --cwd DIR          working directory inside (default: the user's home)\n"
	      "      --tag TAG          a tag shown by ps\n"
	      "      --timeout SECONDS  kill the command's group at this deadline (exit 124)\n"
	      "  -h, --help             show this help\n",
	      f);
}

/* Our terminal in raw mode while a pty is relayed; restored on every way out. */
struct term {
	struct termios saved;
	bool raw;
};

static void term_raw(struct term *t)
{
	struct termios r;

	if (tcgetattr(STDIN_FILENO, &t->saved) < 0)
		return;
	r = t->saved;
	cfmakeraw(&r);
	t->raw = tcsetattr(STDIN_FILENO, TCSANOW, &r) == 0;
}

static void term_restore(struct term *t)
{
	if (t->raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
	t->raw = false;
}

struct relay {
	struct ts_cmd *c;
	int sfd;
	bool pty, stdin_open, stdin_paused, detach_on_int;
	int hung_up;  /* the signal we ended the command with */
	bool seen[4]; /* attach: a stream's first chunk was seen (enum ts_stream) */
	unsigned long long deadline;
};

/* Our stdin to the command, as much as it takes ahead (flow control: the command's
 * pipe, through init, holds the rest back). */
static int pump_stdin(struct relay *rl, struct ts_error *err)
{
	char buf[65536];
	ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n < 0 && errno == EIO && !rl->pty) {
		rl->stdin_paused = true; /* in the background: wait for SIGCONT */
		return 0;
	}
	if (n <= 0) {
		rl->stdin_open = false;
		if (rl->pty)
			return 1; /* a terminal at EOF or EIO has hung up */
		return ts_cmd_input_close(rl->c, err);
	}
	return ts_cmd_input(rl->c, buf, (size_t)n, err);
}

/* Hang up (our terminal went away, or SIGHUP/SIGTERM/SIGQUIT with a pty): the command's
 * group gets the signal, and we leave once it exits or HANGUP_GRACE_MS later. */
static void hang_up(struct relay *rl, int sig)
{
	struct ts_error ignore;

	if (rl->hung_up)
		return;
	ts_cmd_signal_self(rl->c, sig, &ignore);
	rl->hung_up = sig;
	rl->stdin_open = false;
	rl->deadline = ts_now_ms() + HANGUP_GRACE_MS;
}

static void on_signal(struct relay *rl, const struct signalfd_siginfo *si)
{
	struct ts_error ignore;

	switch (si->ssi_signo) {
	case SIGWINCH: {
		struct winsize ws;

		if (rl->pty && ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
			ts_cmd_resize_self(rl->c, ws.ws_col, ws.ws_row, &ignore);
		break;
	}
	case SIGCONT:
		rl->stdin_paused = false; /* perhaps in the foreground again */
		break;
	case SIGINT:
		if (rl->detach_on_int) {
			rl->hung_up = -1; /* attach: Ctrl-C leaves, the process runs on */
			break;
		}
		ts_cmd_signal_self(rl->c, SIGINT, &ignore);
		break;
	case SIGHUP:
	case SIGTERM:
	case SIGQUIT:
		if (rl->pty) {
			hang_up(rl, (int)si->ssi_signo);
			break;
		}
		ts_cmd_signal_self(rl->c, (int)si->ssi_signo, &ignore);
		break;
	default:
		ts_cmd_signal_self(rl->c, (int)si->ssi_signo, &ignore);
	}
}

/*
 * An attach starts at what init still holds: say how much of a stream came before it
 * (the offset of its first chunk), once per stream.
 */
static void note_gap(struct relay *rl, const struct ts_cmd_event *ev)
{
	static const char *const names[] = { "", "standard output", "standard error", "output" };
	unsigned s = ev->type == TS_CMD_EV_STDERR ? 2 : ev->type == TS_CMD_EV_PTY ? 3 : 1;

	if (!rl->detach_on_int || rl->seen[s])
		return;
	rl->seen[s] = true;
	if (ev->offset > 0)
		fprintf(stderr,
			"toren-sandbox attach: the first %llu bytes of its %s are no longer "
			"held\n",
			(unsigned long long)ev->offset, names[s]);
}

/* Relay until the command ends (*status: its exit status as a shell gives it). */
static int relay(struct relay *rl, int *status, struct ts_error *err)
{
	for (;;) {
		struct pollfd p[3] = {
			{ .fd = ts_cmd_fd(rl->c), .events = ts_cmd_events(rl->c) },
			{ .fd = rl->sfd, .events = POLLIN },
			{ .fd = -1, .events = POLLIN },
		};
		struct ts_cmd_event ev;
		int timeout = -1, r;

		if (rl->hung_up < 0)
			return 1; /* detached */
		if (rl->deadline) {
			unsigned long long now = ts_now_ms();

			if (now >= rl->deadline) {
				*status = 128 + rl->hung_up;
				return 0;
			}
			timeout = (int)(rl->deadline - now);
		}
		if (rl->stdin_open && !rl->stdin_paused &&
		    ts_cmd_input_pending(rl->c) < INPUT_AHEAD)
			p[2].fd = STDIN_FILENO;
		/* what is ready now first, then wait */
		while ((r = ts_cmd_step(rl->c, &ev, err)) > 0) {
			const int out = ev.type == TS_CMD_EV_STDERR ? STDERR_FILENO : STDOUT_FILENO;

			if (ev.type == TS_CMD_EV_END) {
				*status = ev.timed_out	      ? EXIT_TIMEOUT
					  : ev.exit_code >= 0 ? ev.exit_code
							      : 128 + ev.signal;
				if (ev.timed_out)
					fprintf(stderr, "toren-sandbox exec: timed out\n");
				return 0;
			}
			if (ev.type == TS_CMD_EV_START)
				continue;
			note_gap(rl, &ev);
			ts_write_all(out, ev.data, ev.len);
		}
		if (r < 0)
			return r;
		if (poll(p, 3, timeout) < 0 && errno != EINTR)
			return ts_err_errno(err, -errno, "poll");
		if (p[1].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(rl->sfd, &si, sizeof(si)) == sizeof(si))
				on_signal(rl, &si);
		}
		if (p[2].revents & (POLLIN | POLLHUP | POLLERR)) {
			r = pump_stdin(rl, err);
			if (r < 0)
				return r;
			if (r > 0)
				hang_up(rl, SIGHUP);
		}
	}
}

/* Signals from here on are the command's, not ours. */
/*
 * A directory as a standard stream: run refuses one (it would be a handle outside the
 * sandbox's root); exec copies its streams, where a directory would fail only at the
 * first byte, after the command ran. Refuse it before starting anything.
 */
static bool streams_refused(bool with_stdin)
{
	static const char *const names[] = { "input", "output", "error" };

	for (int fd = with_stdin ? 0 : 1; fd <= 2; fd++) {
		struct stat st;

		if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
			fprintf(stderr,
				"toren-sandbox exec: standard %s is a directory; refusing it\n",
				names[fd]);
			return true;
		}
	}
	return false;
}

static int block_signals(void)
{
	static const int sigs[] = { SIGINT,   SIGTERM, SIGHUP,	SIGQUIT,
				    SIGWINCH, SIGCONT, SIGUSR1, SIGUSR2 };
	sigset_t mask;

	sigemptyset(&mask);
	for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
		sigaddset(&mask, sigs[i]);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	/* reading our terminal in the background fails (EIO) instead of stopping us */
	signal(SIGTTIN, SIG_IGN);
	return signalfd(-1, &mask, SFD_CLOEXEC);
}

int ts_subcmd_exec(int argc, char **argv)
{
	enum {
		O_USER = 256,
		O_CWD,
		O_TAG,
		O_TIMEOUT
	};
	static const struct option longopts[] = { { "interactive", no_argument, NULL, 'i' },
						  { "tty", no_argument, NULL, 't' },
						  { "detach", no_argument, NULL, 'd' },
						  { "user", required_argument, NULL, O_USER },
						  { "env", required_argument, NULL, 'e' },
						  { "cwd", required_argument, NULL, O_CWD },
						  { "tag", required_argument, NULL, O_TAG },
						  { "timeout", required_argument, NULL, O_TIMEOUT },
						  { "help", no_argument, NULL, 'h' },
						  {} };
	_cleanup_(ts_sb_closep) struct ts_sb *sb = NULL;
	_cleanup_(ts_cmd_closep) struct ts_cmd *cmd = NULL;
	struct ts_backend *b = NULL;
	struct ts_kv env[MAX_ENV];
	char env_names[MAX_ENV][256]; /* the keys of env: nothing to free on any exit */
	struct ts_cmd_opts o = { 0 };
	struct ts_error err = { 0 };
	struct term term = { 0 };
	struct relay rl = { 0 };
	bool interactive = false, tty = false, detach = false, spawn_failed = false;
	unsigned long long v;
	size_t n_env = 0;
	uint64_t proc = 0;
	int c, status = 0, r, code;

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
		case O_USER:
			if (strcmp(optarg, "root") != 0 && strcmp(optarg, "user") != 0) {
				fprintf(stderr, "toren-sandbox exec: bad --user `%s`\n", optarg);
				return 2;
			}
			o.user = optarg;
			break;
		case 'e': {
			char *eq = strchr(optarg, '='), *name;
			size_t len = eq ? (size_t)(eq - optarg) : strlen(optarg);

			if (n_env >= MAX_ENV) {
				fprintf(stderr, "toren-sandbox exec: too many --env: at most %d\n",
					MAX_ENV);
				return 2;
			}
			name = env_names[n_env];
			snprintf(name, sizeof(env_names[0]), "%.*s", (int)len, optarg);
			if (len >= sizeof(env_names[0]) || !ts_env_name_valid(name) ||
			    (!eq && !getenv(name))) {
				fprintf(stderr,
					"toren-sandbox exec: bad --env `%s`: want NAME=VALUE, or "
					"NAME set here\n",
					optarg);
				return 2;
			}
			env[n_env].key = name;
			env[n_env++].value = eq ? eq + 1 : getenv(name);
			break;
		}
		case O_CWD:
			if (optarg[0] != '/') {
				fprintf(stderr, "toren-sandbox exec: --cwd `%s` is not absolute\n",
					optarg);
				return 2;
			}
			o.cwd = optarg;
			break;
		case O_TAG:
			if (!optarg[0] || strlen(optarg) > 255) {
				fprintf(stderr, "toren-sandbox exec: bad --tag: 1 to 255 bytes\n");
				return 2;
			}
			o.tag = optarg;
			break;
		case O_TIMEOUT:
			r = ts_parse_duration_ms(optarg, &v);
			if (r < 0 || v == 0) {
				fprintf(stderr,
					"toren-sandbox exec: bad --timeout `%s`: %swant seconds > 0\n",
					optarg, r == -EOVERFLOW ? "too large; " : "");
				return 2;
			}
			o.timeout_ms = v;
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
		o.argv = argv + optind + 2;
	else
		o.argv = argv + optind + 1;
	if (!o.argv[0]) {
		usage(stderr);
		return 2;
	}
	o.envs = env;
	o.n_envs = n_env;
	o.pty = !detach && tty && isatty(STDIN_FILENO);
	o.stdin_open = interactive || o.pty;
	o.detach = o.log = detach;
	if (o.pty) {
		struct winsize ws;

		if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
			o.cols = ws.ws_col;
			o.rows = ws.ws_row;
		}
	}
	code = 125;
	if (!detach && streams_refused(o.stdin_open && !o.pty))
		goto out;
	/* a sandbox whose init is gone (reboot, OOM, kill -9) is rebuilt around its files */
	if ((r = ts_cli_backend("exec", &b)) < 0)
		goto out;
	/* a request for a user the sandbox has not starts nothing, not even the sandbox */
	r = o.user ? ts_sb_lookup(b, argv[optind], &sb, &err) : 0;
	if (r == 0 && o.user)
		r = ts_sb_check_user(sb, o.user, &err);
	if (r == 0 && sb) {
		ts_sb_close(sb);
		sb = NULL;
	}
	if (r == 0)
		r = ts_sb_connect(b, argv[optind], -1, &sb, &err);
	if (r == 0) {
		rl.sfd = detach ? -1 : block_signals();
		r = ts_cmd_start(sb, &o, detach ? NULL : &cmd, NULL, &proc, &err);
		spawn_failed = r < 0;
	}
	if (r < 0) {
		ts_cli_error("exec", &err);
		/* the shell's conventions for what the sandbox said of the command: 127 not
		 * found, 126 found but not executable (or no such working directory) */
		code = !spawn_failed				? 125
		       : r == -ENOENT				? 127
		       : r == -EACCES				? 126
		       : r == -EINVAL && strstr(err.msg, "cwd") ? 126
								: 125;
		goto out;
	}
	if (detach) {
		printf("%llu\n", (unsigned long long)proc);
		code = 0;
		goto out;
	}
	rl.c = cmd;
	rl.pty = o.pty;
	rl.stdin_open = o.stdin_open;
	if (o.pty)
		term_raw(&term);
	r = relay(&rl, &status, &err);
	term_restore(&term);
	if (r < 0) {
		ts_err_prefix(&err, r, "sandbox `%s`", ts_sb_id(sb));
		ts_cli_error("exec", &err);
		code = 125;
		goto out;
	}
	code = status;
out:
	if (rl.sfd > 0)
		close(rl.sfd);
	ts_sb_close(TAKE_PTR(sb));
	ts_cmd_close(TAKE_PTR(cmd));
	ts_backend_free(b);
	return code;
}

int ts_subcmd_attach(int argc, char **argv)
{
	_cleanup_(ts_sb_closep) struct ts_sb *sb = NULL;
	_cleanup_(ts_cmd_closep) struct ts_cmd *cmd = NULL;
	struct ts_backend *b = NULL;
	struct ts_error err = { 0 };
	struct ts_proc_sel sel = { 0 };
	struct relay rl = { 0 };
	unsigned long long v;
	int status = 0, r;

	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs("usage: toren-sandbox attach ID PROC\n\n"
		      "Follow a process's output (stdout to stdout, stderr to stderr) from its\n"
		      "recent backlog on, and exit with its status; Ctrl-C detaches and leaves\n"
		      "it running.\n\n  -h, --help  show this help\n",
		      stdout);
		return 0;
	}
	if (argc != 3 || ts_parse_ull(argv[2], &v) < 0 || v == 0) {
		fputs("usage: toren-sandbox attach ID PROC\n", stderr);
		return 2;
	}
	sel.proc = v;
	if (ts_cli_backend("attach", &b) < 0)
		return 125;
	r = ts_sb_lookup(b, argv[1], &sb, &err);
	if (r == 0) {
		rl.sfd = block_signals();
		r = ts_cmd_connect(sb, &sel, &cmd, &err);
	}
	if (r == 0) {
		rl.c = cmd;
		rl.detach_on_int = true;
		r = relay(&rl, &status, &err);
	}
	if (rl.sfd > 0)
		close(rl.sfd);
	ts_sb_close(TAKE_PTR(sb));
	ts_cmd_close(TAKE_PTR(cmd));
	ts_backend_free(b);
	if (r < 0) {
		ts_cli_error("attach", &err);
		return 125;
	}
	return r > 0 ? 0 : status;
}
