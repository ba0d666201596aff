/* SPDX-License-Identifier: Apache-2.0 */
#include "sudo.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "ctl.h"
#include "syscall.h"
#include "util.h"

#define TS_SUDO_ENV_MAX 64	 /* variables taken from a client */
#define TS_SUDO_ENV_LEN 1024	 /* the longest one */
#define TS_SUDO_COMMAND_LEN 4096 /* SUDO_COMMAND, truncated */

struct sudo_conn {
	int fd; /* -1: free */
	struct ts_ctl_conn rx;
	uid_t peer_uid;
	pid_t pid; /* the command, 0 before it starts, -1 after it ended */
};

struct ts_sudo {
	const struct ts_ids *ids;
	struct rlimit nofile;
	int listen_fd;
	struct sudo_conn conns[TS_SUDO_MAX];
};

static void conn_close(struct sudo_conn *c)
{
	if (c->fd < 0)
		return;
	/* a client that goes away takes its command along: nothing it started as root may
	 * live on unseen, holding a slot */
	if (c->pid > 0)
		kill(-c->pid, SIGKILL);
	close(c->fd);
	c->fd = -1;
	c->pid = 0;
	ts_ctl_conn_free(&c->rx);
}

static void reply_error(struct sudo_conn *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void reply_error(struct sudo_conn *c, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ts_ctl_send_error(c->fd, 0, code, "%s", msg);
}

int ts_sudo_open(struct ts_sudo **ret, const struct ts_ids *ids, struct rlimit nofile,
		 struct ts_error *err)
{
	/* one per init, like the process table; zero until used */
	static struct ts_sudo s;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int dfd = -EBADF, fd = -EBADF;
	struct stat st;
	int r = 0;

	if (!ids->can_switch)
		return ts_err(err, -EPERM, "sudo needs a sandbox with both root and user");
	s.ids = ids;
	s.nofile = nofile;
	s.listen_fd = -1;
	for (int i = 0; i < TS_SUDO_MAX; i++)
		s.conns[i].fd = -1;
	/* Root's directory, so that no process of the user can put anything of its own in
	 * the socket's place (or a symlink on the way to it); made with root's file-system
	 * ids since we hold no CAP_DAC_OVERRIDE. /run is a fresh tmpfs of root's, and no
	 * process of the sandbox runs yet. */
	ts_ids_fs_as(ids, TS_IDS_ROOT);
	if (mkdir(TS_SUDO_DIR, 0755) < 0 && errno != EEXIST)
		r = ts_err_errno(err, -errno, "create `%s`", TS_SUDO_DIR);
	if (r == 0) {
		dfd = open(TS_SUDO_DIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dfd < 0)
			r = ts_err_errno(err, -errno, "open `%s`", TS_SUDO_DIR);
		else if (fstat(dfd, &st) < 0)
			r = ts_err_errno(err, -errno, "stat `%s`", TS_SUDO_DIR);
		else if (st.st_uid != TS_IDS_ROOT || (st.st_mode & 022))
			r = ts_err(err, -EPERM, "`%s` is not root's alone", TS_SUDO_DIR);
	}
	if (r == 0) {
		/* through our own fd: the directory we checked, whatever the path says now */
		snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/sudo.sock", dfd);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			r = ts_err_errno(err, -errno, "sudo socket");
		else if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			r = ts_err_errno(err, -errno, "bind `%s`", TS_SUDO_SOCKET);
		else if (chmod(sa.sun_path, 0666) < 0)
			r = ts_err_errno(err, -errno, "chmod `%s`", TS_SUDO_SOCKET);
		else if (listen(fd, TS_SUDO_MAX) < 0)
			r = ts_err_errno(err, -errno, "listen on `%s`", TS_SUDO_SOCKET);
	}
	ts_ids_fs_as(ids, ids->uid);
	if (r < 0)
		return r;
	s.listen_fd = TAKE_FD(fd);
	*ret = &s;
	return 0;
}

size_t ts_sudo_pollfds(struct ts_sudo *s, struct pollfd *pfd, int *map)
{
	size_t n = 0;

	if (!s)
		return 0;
	pfd[n] = (struct pollfd){ .fd = s->listen_fd, .events = POLLIN };
	map[n++] = -1;
	for (int i = 0; i < TS_SUDO_MAX; i++) {
		if (s->conns[i].fd < 0)
			continue;
		pfd[n] = (struct pollfd){ .fd = s->conns[i].fd, .events = POLLIN };
		map[n++] = i;
	}
	return n;
}

static void accept_one(struct ts_sudo *s)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	int i;

	if (fd < 0)
		return;
	for (i = 0; i < TS_SUDO_MAX && s->conns[i].fd >= 0; i++)
		;
	if (i == TS_SUDO_MAX) {
		ts_ctl_send_error(fd, 0, EAGAIN, "too many sudo commands at once (%d)",
				  TS_SUDO_MAX);
		close(fd);
		return;
	}
	/* The peer as the kernel saw it at connect: a process of this sandbox (a pid in our
	 * namespace), as one of its two users. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid <= 0 ||
	    (cred.uid != TS_IDS_ROOT && cred.uid != TS_IDS_USER)) {
		ts_ctl_send_error(fd, 0, EPERM, "not a process of this sandbox");
		close(fd);
		return;
	}
	s->conns[i].fd = fd;
	s->conns[i].peer_uid = cred.uid;
	s->conns[i].pid = 0;
	ts_ctl_conn_init(&s->conns[i].rx);
}

static bool env_allowed(const char *e, size_t len)
{
	static const char *const names[] = { "TERM=", "LANG=", "LANGUAGE=" };

	if (len > TS_SUDO_ENV_LEN || memchr(e, '\0', len))
		return false;
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (len >= strlen(names[i]) && !strncmp(e, names[i], strlen(names[i])))
			return true;
	/* LC_ALL, LC_CTYPE, ...: a name of capitals and _ only */
	if (len < 4 || strncmp(e, "LC_", 3))
		return false;
	for (size_t k = 3; k < len && e[k] != '='; k++)
		if (!((e[k] >= 'A' && e[k] <= 'Z') || e[k] == '_'))
			return false;
	return memchr(e, '=', len) != NULL;
}

struct sudo_req {
	char **argv;
	size_t na;
	char **envp;
	size_t ne;
	char cwd[PATH_MAX];
	uint64_t uid;
};

static void req_free(struct sudo_req *q)
{
	for (size_t i = 0; q->argv && i < q->na; i++)
		free(q->argv[i]);
	for (size_t i = 0; q->envp && i < q->ne; i++)
		free(q->envp[i]);
	free(q->argv);
	free(q->envp);
}

static int push(char **v, size_t *n, size_t max, char *s)
{
	if (!s)
		return -ENOMEM;
	if (*n >= max) {
		free(s);
		return -E2BIG;
	}
	v[(*n)++] = s;
	return 0;
}

static int pushf(char **v, size_t *n, size_t max, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int pushf(char **v, size_t *n, size_t max, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vasprintf(&s, fmt, ap);
	va_end(ap);
	return push(v, n, max, k < 0 ? NULL : s);
}

/* Parse and check a request; the command's environment is ours to build. */
static int parse_req(const struct ts_sudo *s, const struct sudo_conn *c, const struct ts_ctl_msg *m,
		     struct sudo_req *q, char *msg, size_t len)
{
	const size_t env_max = TS_SUDO_ENV_MAX + 16;
	char command[TS_SUDO_COMMAND_LEN] = "";
	size_t pos = 0, used = 0;
	const uint8_t *v;
	uint32_t vlen;
	uint16_t tag;
	bool have_cwd = false;
	int r;

	q->argv = calloc(TS_SUDO_MAX_ARGS + 1, sizeof(char *));
	q->envp = calloc(env_max + 1, sizeof(char *));
	if (!q->argv || !q->envp)
		return -ENOMEM;
	q->uid = TS_IDS_ROOT;
	while ((r = ts_ctl_next(m, &pos, &tag, &v, &vlen)) > 0) {
		if (tag == TS_T_ARG) {
			if (memchr(v, '\0', vlen)) {
				snprintf(msg, len, "an argument holds a NUL byte");
				return -EINVAL;
			}
			r = push(q->argv, &q->na, TS_SUDO_MAX_ARGS, strndup((const char *)v, vlen));
			if (r == -E2BIG)
				snprintf(msg, len, "more than %d arguments", TS_SUDO_MAX_ARGS);
			if (r < 0)
				return r;
			if (used < sizeof(command) - 1)
				used += (size_t)snprintf(command + used, sizeof(command) - used,
							 "%s%.*s", q->na > 1 ? " " : "", (int)vlen,
							 (const char *)v);
		} else if (tag == TS_T_ENV) {
			/* the rest of the caller's environment is not the command's */
			if (q->ne < TS_SUDO_ENV_MAX && env_allowed((const char *)v, vlen) &&
			    (r = push(q->envp, &q->ne, env_max, strndup((const char *)v, vlen))) <
				    0)
				return r;
		}
	}
	if (r == 0)
		r = ts_ctl_get_u64(m, TS_T_UID, &q->uid);
	if (r < 0 && r != -ENOENT) {
		snprintf(msg, len, "a malformed request");
		return -EINVAL;
	}
	if (q->na == 0) {
		snprintf(msg, len, "no command");
		return -EINVAL;
	}
	r = ts_ctl_get_str(m, TS_T_CWD, q->cwd, sizeof(q->cwd));
	have_cwd = r == 0;
	if (r < 0 && r != -ENOENT) {
		snprintf(msg, len, "a malformed or too long working directory");
		return -EINVAL;
	}
	/* an absolute path, entered by the command itself with its own ids (below) */
	if (!have_cwd)
		snprintf(q->cwd, sizeof(q->cwd), "%s", ts_ids_home((uid_t)q->uid));
	else if (q->cwd[0] != '/') {
		snprintf(msg, len, "the working directory `%.200s` is not absolute", q->cwd);
		return -EINVAL;
	}
	if ((r = ts_ids_check(s->ids, q->uid, msg, len)) < 0)
		return r;
	r = 0;
	r |= pushf(q->envp, &q->ne, env_max, "PATH=%s", TS_SUDO_SECURE_PATH);
	r |= pushf(q->envp, &q->ne, env_max, "HOME=%s", ts_ids_home((uid_t)q->uid));
	r |= pushf(q->envp, &q->ne, env_max, "USER=%s", ts_ids_name((uid_t)q->uid));
	r |= pushf(q->envp, &q->ne, env_max, "LOGNAME=%s", ts_ids_name((uid_t)q->uid));
	r |= pushf(q->envp, &q->ne, env_max, "SHELL=%s",
		   access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh");
	r |= pushf(q->envp, &q->ne, env_max, "SUDO_USER=%s", ts_ids_name(c->peer_uid));
	r |= pushf(q->envp, &q->ne, env_max, "SUDO_UID=%u", (unsigned)c->peer_uid);
	r |= pushf(q->envp, &q->ne, env_max, "SUDO_GID=%u", (unsigned)c->peer_uid);
	r |= pushf(q->envp, &q->ne, env_max, "SUDO_COMMAND=%s", command);
	return r ? -ENOMEM : 0;
}

static void child_fail(const char *what, const char *arg, int e, int status)
{
	dprintf(STDERR_FILENO, "sudo: %s%s%s: %s\n", what, arg ? " " : "", arg ? arg : "",
		strerror(e));
	_exit(status);
}

/* The forked command: everything init's other children get, then exec. */
static void run_child(const struct ts_sudo *s, const struct sudo_req *q, const int fds[3])
{
	sigset_t none;
	int r;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* a session and process group of its own, never init's (spawn.c) */
	if (setsid() < 0)
		_exit(126);
	for (int i = 0; i < 3; i++)
		if (dup2(fds[i], i) < 0)
			_exit(126);
	ts_close_range(3, ~0U, 0);
	if (s->nofile.rlim_max)
		setrlimit(RLIMIT_NOFILE, &s->nofile);
	if ((r = ts_ids_become(s->ids, (uid_t)q->uid)) < 0)
		child_fail("become uid", ts_ids_name((uid_t)q->uid), -r, 126);
	/* the client's cwd, with the target's ids and nothing more: it reaches what that
	 * user could reach by `cd` */
	if (chdir(q->cwd) < 0)
		child_fail("cannot change directory to", q->cwd, errno, 1);
	environ = q->envp;
	execvp(q->argv[0], q->argv);
	if (errno == ENOENT)
		dprintf(STDERR_FILENO, "sudo: %s: command not found\n", q->argv[0]);
	else
		dprintf(STDERR_FILENO, "sudo: %s: %s\n", q->argv[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

static void start(struct ts_sudo *s, struct sudo_conn *c, struct ts_ctl_msg *m)
{
	struct sudo_req q = { 0 };
	struct ts_ctl_msg out = { 0 };
	char msg[256] = "";
	pid_t pid;
	int r;

	if (m->n_fds != 3) {
		reply_error(c, EINVAL, "a sudo request carries exactly three descriptors");
		conn_close(c);
		return;
	}
	r = parse_req(s, c, m, &q, msg, sizeof(msg));
	if (r < 0) {
		reply_error(c, -r, "%s", msg[0] ? msg : strerror(-r));
		req_free(&q);
		conn_close(c);
		return;
	}
	pid = fork();
	if (pid == 0)
		run_child(s, &q, m->fds);
	req_free(&q);
	if (pid < 0) {
		reply_error(c, errno, "fork: %s", strerror(errno));
		conn_close(c);
		return;
	}
	c->pid = pid;
	ts_ctl_msg_init(&out, TS_CTL_SPAWNED, m->id);
	if (ts_ctl_put_u64(&out, TS_T_PID, (uint64_t)pid) < 0 ||
	    ts_ctl_send(c->fd, &out, NULL, 0) < 0)
		conn_close(c);
	ts_ctl_msg_free(&out);
}

void ts_sudo_ready(struct ts_sudo *s, int which, short revents)
{
	struct sudo_conn *c;

	if (which == -1) {
		accept_one(s);
		return;
	}
	c = &s->conns[which];
	for (int rounds = 0; rounds < 16 && c->fd >= 0; rounds++) {
		struct ts_ctl_msg m = { 0 };
		uint64_t sig = 0;
		int r = ts_ctl_conn_read(&c->rx, c->fd, &m);

		if (r == 0)
			return;
		if (r < 0) {
			conn_close(c);
			return;
		}
		if (m.type == TS_CTL_SPAWN && c->pid == 0) {
			start(s, c, &m);
		} else if (m.type == TS_CTL_SIGNAL && ts_ctl_get_u64(&m, TS_T_SIGNAL, &sig) == 0 &&
			   sig >= 1 && sig < 65) {
			if (c->pid > 0)
				kill(-c->pid, (int)sig);
		} else {
			reply_error(c, EPROTO, "unexpected message type %u", (unsigned)m.type);
			conn_close(c);
		}
		ts_ctl_msg_free(&m);
	}
}

bool ts_sudo_reaped(struct ts_sudo *s, pid_t pid, int status)
{
	if (!s)
		return false;
	for (int i = 0; i < TS_SUDO_MAX; i++) {
		struct sudo_conn *c = &s->conns[i];
		struct ts_ctl_msg out = { 0 };

		if (c->fd < 0 || c->pid != pid)
			continue;
		/* the process group rule of every command: what the leader left goes */
		kill(-pid, SIGKILL);
		c->pid = -1;
		ts_ctl_msg_init(&out, TS_CTL_EXITED, 0);
		if (ts_ctl_put_u64(&out, TS_T_STATUS, (uint64_t)(unsigned)status) == 0)
			ts_ctl_send(c->fd, &out, NULL, 0);
		ts_ctl_msg_free(&out);
		conn_close(c);
		return true;
	}
	return false;
}

size_t ts_sudo_running(const struct ts_sudo *s)
{
	size_t n = 0;

	for (int i = 0; s && i < TS_SUDO_MAX; i++)
		if (s->conns[i].fd >= 0 && s->conns[i].pid > 0)
			n++;
	return n;
}

void ts_sudo_close_all(struct ts_sudo *s)
{
	if (!s)
		return;
	for (int i = 0; i < TS_SUDO_MAX; i++) {
		if (s->conns[i].fd < 0)
			continue;
		close(s->conns[i].fd);
		s->conns[i].fd = -1;
		ts_ctl_conn_free(&s->conns[i].rx);
	}
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	s->listen_fd = -1;
}
