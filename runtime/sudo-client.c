/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toren-sandbox-sudo: the sandbox's /usr/bin/sudo (policy `sudo: true`).
 *
 * Setuid programs cannot gain privilege in a sandbox (a user namespace without
 * capabilities, no_new_privs, the setid guard), so this sudo asks init to start the
 * command as the sandbox's root (or user) over TS_SUDO_SOCKET and relays: it hands over
 * its standard streams, forwards the signals it gets to the command's process group, and
 * exits with the command's status (128+N for a signal). No password is asked for, as on
 * E2B's templates. The protocol and what the command gets: sudo.h.
 *
 * Usage: sudo [-n] [-H] [-u USER] [-i | -s] [--] [COMMAND [ARG...]]
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "ctl.h"
#include "ids.h"
#include "sudo.h"

/* exit statuses of our own failures, as sudo's */
#define SUDO_EXIT_FAIL 1

static const int forwarded[] = { SIGINT,  SIGTERM,  SIGHUP,  SIGQUIT, SIGUSR1,
				 SIGUSR2, SIGWINCH, SIGALRM, SIGCONT };

static int usage(FILE *f, int status)
{
	fputs("usage: sudo [-n] [-H] [-u USER] [-i | -s] [--] [COMMAND [ARG...]]\n"
	      "runs COMMAND as the sandbox's root (or USER: root, user, #0, #1000);\n"
	      "-i: a login shell (in the user's home), -s: a shell; -E is not supported:\n"
	      "the command gets a fixed environment (see toren-sandbox-policy(5), sudo)\n",
	      f);
	return status;
}

static int parse_user(const char *s, uid_t *ret)
{
	if (!strcmp(s, "root") || !strcmp(s, "#0") || !strcmp(s, "0"))
		*ret = TS_IDS_ROOT;
	else if (!strcmp(s, "user") || !strcmp(s, "#1000") || !strcmp(s, "1000"))
		*ret = TS_IDS_USER;
	else
		return -ENOENT;
	return 0;
}

/* sudo's quoting for -i/-s COMMAND: every character but [A-Za-z0-9_$-] escaped */
static char *shell_join(char **argv)
{
	size_t len = 1;
	char *out, *o;

	for (char **a = argv; *a; a++)
		len += 2 * strlen(*a) + 1;
	out = o = malloc(len);
	if (!out)
		return NULL;
	for (char **a = argv; *a; a++) {
		if (a != argv)
			*o++ = ' ';
		for (const char *c = *a; *c; c++) {
			if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			      (*c >= '0' && *c <= '9') || *c == '_' || *c == '-' || *c == '$'))
				*o++ = '\\';
			*o++ = *c;
		}
	}
	*o = '\0';
	return out;
}

static int build(struct ts_ctl_msg *m, char **cmd, uid_t uid, char mode)
{
	static const char *const env_prefixes[] = { "TERM=", "LANG=", "LANGUAGE=", "LC_" };
	const char *shell = access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
	char cwd[PATH_MAX];
	int r = 0;

	if (mode) {
		_cleanup_free_ char *joined = cmd[0] ? shell_join(cmd) : NULL;

		if (cmd[0] && !joined)
			return -ENOMEM;
		r |= ts_ctl_put_str(m, TS_T_ARG, shell);
		if (mode == 'i')
			r |= ts_ctl_put_str(m, TS_T_ARG, "-l");
		if (joined) {
			r |= ts_ctl_put_str(m, TS_T_ARG, "-c");
			r |= ts_ctl_put_str(m, TS_T_ARG, joined);
		}
	} else {
		for (char **a = cmd; *a; a++)
			r |= ts_ctl_put_str(m, TS_T_ARG, *a);
	}
	/* only what init keeps anyway (sudo.h): the rest of ours is not the command's */
	for (char **e = environ; *e; e++)
		for (size_t i = 0; i < sizeof(env_prefixes) / sizeof(*env_prefixes); i++)
			if (!strncmp(*e, env_prefixes[i], strlen(env_prefixes[i])))
				r |= ts_ctl_put_str(m, TS_T_ENV, *e);
	/* -i starts in the target's home; otherwise here, if we know where that is */
	if (mode != 'i' && getcwd(cwd, sizeof(cwd)))
		r |= ts_ctl_put_str(m, TS_T_CWD, cwd);
	r |= ts_ctl_put_u64(m, TS_T_UID, uid);
	return r ? -E2BIG : 0;
}

static int relay(int fd, sigset_t *mask)
{
	_cleanup_close_ int sfd = signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK);

	if (sfd < 0) {
		fprintf(stderr, "sudo: signalfd: %s\n", strerror(errno));
		return SUDO_EXIT_FAIL;
	}
	for (;;) {
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
				       { .fd = sfd, .events = POLLIN } };
		struct ts_ctl_msg m = { 0 };
		uint64_t v = 0;
		char msg[512];
		int r;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return SUDO_EXIT_FAIL;
		}
		if (p[1].revents & POLLIN) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				ts_ctl_msg_init(&m, TS_CTL_SIGNAL, 0);
				if (ts_ctl_put_u64(&m, TS_T_SIGNAL, si.ssi_signo) == 0)
					ts_ctl_send(fd, &m, NULL, 0);
				ts_ctl_msg_free(&m);
			}
		}
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = ts_ctl_recv(fd, &m);
		if (r < 0) {
			fprintf(stderr, "sudo: the sandbox's init went away\n");
			return SUDO_EXIT_FAIL;
		}
		switch (m.type) {
		case TS_CTL_SPAWNED:
			break;
		case TS_CTL_EXITED:
			r = ts_ctl_get_u64(&m, TS_T_STATUS, &v);
			ts_ctl_msg_free(&m);
			if (r < 0)
				return SUDO_EXIT_FAIL;
			if (WIFSIGNALED((int)v))
				return 128 + WTERMSIG((int)v);
			return WEXITSTATUS((int)v);
		case TS_CTL_ERROR:
			if (ts_ctl_get_str(&m, TS_T_MSG, msg, sizeof(msg)) < 0)
				snprintf(msg, sizeof(msg), "refused");
			fprintf(stderr, "sudo: %s\n", msg);
			ts_ctl_msg_free(&m);
			return SUDO_EXIT_FAIL;
		default:
			fprintf(stderr, "sudo: unexpected reply %u\n", (unsigned)m.type);
			ts_ctl_msg_free(&m);
			return SUDO_EXIT_FAIL;
		}
		ts_ctl_msg_free(&m);
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_(ts_ctl_msg_freep) struct ts_ctl_msg m = { 0 };
	_cleanup_close_ int fd = -EBADF;
	static const int stdio[3] = { 0, 1, 2 };
	uid_t uid = TS_IDS_ROOT;
	char mode = 0; /* 'i' login shell, 's' shell */
	sigset_t mask;
	int i, r;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		if (!strcmp(a, "--help"))
			return usage(stdout, 0);
		if (!strcmp(a, "--version")) {
			puts("toren-sandbox sudo (asks the sandbox's init; no password)");
			return 0;
		}
		if (!strcmp(a, "--non-interactive") || !strcmp(a, "--set-home"))
			continue;
		if (!strcmp(a, "--login") || !strcmp(a, "--shell")) {
			mode = a[2] == 'l' ? 'i' : 's';
			continue;
		}
		if (!strncmp(a, "--user=", 7) || !strcmp(a, "--user")) {
			const char *u = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : NULL);

			if (!u)
				return fprintf(stderr, "sudo: `--user` needs a user\n"),
				       SUDO_EXIT_FAIL;
			if (parse_user(u, &uid) < 0)
				return fprintf(stderr, "sudo: unknown user `%s` (root or user)\n",
					       u),
				       SUDO_EXIT_FAIL;
			continue;
		}
		if (a[1] == '-') {
			fprintf(stderr, "sudo: option `%s` is not supported\n", a);
			return usage(stderr, SUDO_EXIT_FAIL);
		}
		/* a cluster of short options: -nu root, -iu user */
		for (const char *c = a + 1; *c; c++) {
			if (*c == 'n' || *c == 'H')
				continue;
			if (*c == 'i' || *c == 's') {
				mode = *c;
				continue;
			}
			if (*c == 'h')
				return usage(stdout, 0);
			if (*c == 'E') {
				fprintf(stderr,
					"sudo: -E is not supported: the command gets a fixed "
					"environment (TERM, LANG, LC_*; PATH reset)\n");
				return SUDO_EXIT_FAIL;
			}
			if (*c == 'u') {
				const char *u = c[1] ? c + 1 : (i + 1 < argc ? argv[++i] : NULL);

				if (!u)
					return fprintf(stderr, "sudo: `-u` needs a user\n"),
					       SUDO_EXIT_FAIL;
				if (parse_user(u, &uid) < 0)
					return fprintf(stderr,
						       "sudo: unknown user `%s` (root or user)\n",
						       u),
					       SUDO_EXIT_FAIL;
				break;
			}
			fprintf(stderr, "sudo: option `-%c` is not supported\n", *c);
			return usage(stderr, SUDO_EXIT_FAIL);
		}
	}
	if (i >= argc && !mode)
		return usage(stderr, SUDO_EXIT_FAIL);
	ts_ctl_msg_init(&m, TS_CTL_SPAWN, 1);
	if ((r = build(&m, argv + i, uid, mode)) < 0) {
		fprintf(stderr, "sudo: the command is too long (at most 1 MiB, %d arguments)\n",
			TS_SUDO_MAX_ARGS);
		return SUDO_EXIT_FAIL;
	}
	/* Signals are the command's: the terminal's Ctrl-C reaches us, not it (its own
	 * session), so we forward it. Blocked before the connection, so none is lost. */
	sigemptyset(&mask);
	for (size_t k = 0; k < sizeof(forwarded) / sizeof(*forwarded); k++)
		sigaddset(&mask, forwarded[k]);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", TS_SUDO_SOCKET);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == ENOENT || errno == ECONNREFUSED)
			fprintf(stderr,
				"sudo: sudo is off in this sandbox (policy `sudo: true` turns it "
				"on, where the sandbox has a root)\n");
		else
			fprintf(stderr, "sudo: connect to `%s`: %s\n", TS_SUDO_SOCKET,
				strerror(errno));
		return SUDO_EXIT_FAIL;
	}
	/* init may have refused us already (too many at once): its reply says why */
	if ((r = ts_ctl_send(fd, &m, stdio, 3)) < 0 && r != -EPIPE && r != -ECONNRESET) {
		fprintf(stderr, "sudo: send the request: %s\n", strerror(-r));
		return SUDO_EXIT_FAIL;
	}
	return relay(fd, &mask);
}
