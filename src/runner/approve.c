/* SPDX-License-Identifier: Apache-2.0 */
/* The terminal and --approve-cmd approvers (approve.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "approve.h"
#include "cleanup.h"
#include "util.h"

#define SUMMARY_MAX 2000 /* bytes of the call shown in a prompt */
#define REASON_MAX 1024	 /* bytes of a hook's reason */

/* s as one line that cannot drive a terminal: control characters (escape sequences, CR
 * that would overwrite the prompt) become \xNN, and long text is cut. */
static void safe_line(const char *s, char *out, size_t len)
{
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p && o + 8 < len; p++) {
		if (o >= SUMMARY_MAX) {
			o += (size_t)snprintf(out + o, len - o, "...");
			break;
		}
		if (*p < 0x20 || *p == 0x7f)
			o += (size_t)snprintf(out + o, len - o, "\\x%02x", *p);
		else
			out[o++] = (char)*p;
	}
	out[o < len ? o : len - 1] = '\0';
}

static int write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -errno;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

static int terminal_ask(void *userdata, const struct ts_approval_req *q, bool *allow, char **reason,
			struct ts_error *err)
{
	char line[SUMMARY_MAX + 64], prompt[SUMMARY_MAX * 4 + 256], answer[64];
	_cleanup_close_ int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	size_t got = 0;

	if (fd < 0)
		return ts_err_errno(err, -errno, "open /dev/tty");
	safe_line(q->summary, line, sizeof(line));
	snprintf(prompt, sizeof(prompt),
		 "\ntoren-sandbox: %s%s%s wants to run:\n  %s\nallow? [y/N] ", q->tool,
		 q->run && *q->run ? " in run " : "", q->run ? q->run : "", line);
	if (write_all(fd, prompt, strlen(prompt)) < 0)
		return ts_err_errno(err, -errno, "write to /dev/tty");
	while (got < sizeof(answer) - 1) {
		ssize_t n = read(fd, answer + got, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return ts_err_errno(err, -errno, "read from /dev/tty");
		if (n == 0 || answer[got] == '\n')
			break;
		got++;
	}
	answer[got] = '\0';
	*allow = answer[0] == 'y' || answer[0] == 'Y';
	*reason = strdup(*allow ? "approved at the terminal" : "denied at the terminal");
	return 0;
}

int ts_approver_terminal(struct ts_approver *ret, struct ts_error *err)
{
	int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return ts_err_errno(err, -ENXIO, "no terminal to ask (open /dev/tty)");
	close(fd);
	*ret = (struct ts_approver){ .name = "terminal", .ask = terminal_ask };
	return 0;
}

/* The call's arguments as the hook's stdin: a memory file, so that a hook that never
 * reads them cannot block us. */
static int args_fd(const char *args, struct ts_error *err)
{
	int fd = memfd_create("toren-approval", MFD_CLOEXEC);
	if (fd < 0)
		return ts_err_errno(err, -errno, "memfd_create");
	if (write_all(fd, args, strlen(args)) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
		int k = -errno;
		close(fd);
		return ts_err_errno(err, k, "writing the call for the approval hook");
	}
	return fd;
}

static int command_ask(void *userdata, const struct ts_approval_req *q, bool *allow, char **reason,
		       struct ts_error *err)
{
	const char *cmd = userdata;
	char call[32], out[REASON_MAX + 1];
	_cleanup_close_ int in = args_fd(q->args ? q->args : "{}", err);
	int pipefd[2], status;
	size_t got = 0;
	pid_t pid;

	if (in < 0)
		return in;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return ts_err_errno(err, -errno, "pipe");
	snprintf(call, sizeof(call), "%llu", (unsigned long long)q->call);
	/* the environment is built before fork: the child only dups and execs */
	_cleanup_free_ char *e_tool = NULL, *e_run = NULL, *e_call = NULL, *e_sum = NULL;
	size_t n_env = 0;
	while (environ[n_env])
		n_env++;
	_cleanup_free_ char **envp = calloc(n_env + 5, sizeof(char *));
	if (!envp || asprintf(&e_tool, "TOREN_TOOL=%s", q->tool) < 0 ||
	    asprintf(&e_run, "TOREN_RUN=%s", q->run ? q->run : "") < 0 ||
	    asprintf(&e_call, "TOREN_CALL=%s", call) < 0 ||
	    asprintf(&e_sum, "TOREN_SUMMARY=%s", q->summary ? q->summary : "") < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	size_t k = 0;
	for (size_t i = 0; i < n_env; i++)
		if (strncmp(environ[i], "TOREN_TOOL=", 11) &&
		    strncmp(environ[i], "TOREN_RUN=", 10) &&
		    strncmp(environ[i], "TOREN_CALL=", 11) &&
		    strncmp(environ[i], "TOREN_SUMMARY=", 14))
			envp[k++] = environ[i];
	envp[k++] = e_tool;
	envp[k++] = e_run;
	envp[k++] = e_call;
	envp[k++] = e_sum;
	pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return ts_err_errno(err, -errno, "fork");
	}
	if (pid == 0) {
		/* the child: only async-signal-safe work before exec */
		if (dup2(in, 0) < 0 || dup2(pipefd[1], 1) < 0)
			_exit(127);
		signal(SIGPIPE, SIG_DFL);
		execle("/bin/sh", "sh", "-c", cmd, (char *)NULL, envp);
		_exit(127);
	}
	close(pipefd[1]);
	/* the first REASON_MAX bytes are the reason; the rest is read and dropped so that a
	 * chatty hook does not block on a full pipe */
	for (;;) {
		char sink[4096];
		char *dst = got < REASON_MAX ? out + got : sink;
		size_t room = got < REASON_MAX ? REASON_MAX - got : sizeof(sink);
		ssize_t n = read(pipefd[0], dst, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (dst != sink)
			got += (size_t)n;
	}
	close(pipefd[0]);
	out[got] = '\0';
	out[strcspn(out, "\n")] = '\0';
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return ts_err_errno(err, -errno, "waitpid");
	if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 1))
		return ts_err(err, -EPROTO,
			      "the approval command `%.200s` failed (%s %d): it must exit 0 to "
			      "approve or 1 to deny",
			      cmd, WIFEXITED(status) ? "exit status" : "signal",
			      WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	*allow = WEXITSTATUS(status) == 0;
	*reason = strdup(out);
	return 0;
}

void ts_approver_command(struct ts_approver *ret, const char *cmd)
{
	*ret = (struct ts_approver){ .name = "command",
				     .ask = command_ask,
				     .userdata = (void *)cmd };
}
