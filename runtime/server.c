/* SPDX-License-Identifier: Apache-2.0 */
#include "server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "ctl.h"
#include "files.h"
#include "ids.h"
#include "proctab.h"
#include "sudo.h"
#include "syscall.h"
#include "util.h"

#define TS_MAX_CONNS 256
#define TS_SHUTDOWN_GRACE_MS 2000
#define TS_ACCEPT_BACKOFF_MS 100       /* listening paused after accept ran out of fds */
#define TS_CONN_QUEUE_HARD (16U << 20) /* a client this far behind is disconnected */

struct ts_conn {
	int fd; /* -1: free slot */
	struct ts_ctl_conn rx;
	struct ts_ctl_outq q;
	bool doomed; /* fell too far behind, or its queue failed: closed after this round */
};

struct ts_server {
	const struct ts_server_cfg *cfg;
	struct ts_ids ids;
	struct ts_proctab *procs;
	struct ts_sudo *sudo; /* NULL: no sudo in this sandbox */
	int sfd;
	struct ts_conn conns[TS_MAX_CONNS];
	pid_t workers[TS_MAX_CONNS]; /* live file workers: each is a client at work */
	size_t n_workers;
	unsigned long long last_activity; /* CLOCK_MONOTONIC ms */
	bool shutting_down;
	bool paused;	  /* PAUSE: every other process of the sandbox is stopped */
	int pause_holder; /* PAUSE_HOLD, HOLD: the connection holding the pause (-1: none) */
	bool hold_keeps;  /* HOLD: the pause was made before the hold and outlasts it */
	/* CLOCK_MONOTONIC ms until which the listening socket is left alone (0: listen).
	 * accept() failing for want of fds or memory leaves the connection queued, so the
	 * socket stays readable: polling it at once again would spin. */
	unsigned long long accept_paused_until;
	/* the RLIMIT_NOFILE the sandbox was given: init raises its own soft limit to the
	 * hard one (every background process holds pipes here), processes it starts get
	 * this one back */
	struct rlimit nofile;
};

/* --- connections ------------------------------------------------------------------ */

static void conn_emit(void *ctx, int ci, const struct ts_ctl_msg *m)
{
	struct ts_server *s = ctx;
	struct ts_conn *c = &s->conns[ci];

	if (c->fd < 0 || c->doomed)
		return;
	if (ts_ctl_outq_push(&c->q, m) < 0 || c->q.bytes > TS_CONN_QUEUE_HARD) {
		c->doomed = true;
		return;
	}
	/* most replies go at once; what does not waits for POLLOUT */
	if (ts_ctl_outq_flush(&c->q, c->fd) < 0)
		c->doomed = true;
}

static size_t conn_queued(void *ctx, int ci)
{
	struct ts_server *s = ctx;

	return s->conns[ci].fd >= 0 ? s->conns[ci].q.bytes : 0;
}

static void close_conn(struct ts_server *s, int ci)
{
	struct ts_conn *c = &s->conns[ci];

	if (c->fd < 0)
		return;
	close(c->fd);
	c->fd = -1;
	c->doomed = false;
	ts_ctl_conn_free(&c->rx);
	ts_ctl_outq_free(&c->q);
	ts_proctab_conn_gone(s->procs, ci);
	/* a held pause goes with its connection (a snapshot killed while it copied) */
	if (s->pause_holder == ci) {
		s->pause_holder = -1;
		if (!s->hold_keeps && s->paused && (kill(-1, SIGCONT) == 0 || errno == ESRCH))
			s->paused = false;
		s->hold_keeps = false;
	}
}

static void reply_error(struct ts_server *s, int ci, uint32_t id, int code, const char *msg)
{
	struct ts_ctl_msg m = { 0 };

	ts_ctl_msg_init(&m, TS_CTL_ERROR, id);
	if (ts_ctl_put_u64(&m, TS_T_CODE, (uint64_t)code) == 0 &&
	    ts_ctl_put_str(&m, TS_T_MSG, msg) == 0)
		conn_emit(s, ci, &m);
	ts_ctl_msg_free(&m);
}

/* Clients at work: one per running process a client is attached to, one per file worker
 * (a long copy or a watch is activity for as long as it lasts). */
static size_t attached(const struct ts_server *s)
{
	return s->n_workers + ts_proctab_attached(s->procs) + ts_sudo_running(s->sudo);
}

static void send_hello(struct ts_server *s, int ci, uint32_t id, uint64_t version)
{
	struct ts_ctl_msg m = { 0 };

	ts_ctl_msg_init(&m, TS_CTL_HELLO, id);
	if (ts_ctl_put_u64(&m, TS_T_VERSION, version) == 0 &&
	    ts_ctl_put_u64(&m, TS_T_PID, (uint64_t)getpid()) == 0 &&
	    ts_ctl_put_u64(&m, TS_T_IDLE_MS, attached(s) ? 0 : ts_now_ms() - s->last_activity) ==
		    0 &&
	    ts_ctl_put_u64(&m, TS_T_ATTACHED, attached(s)) == 0 &&
	    ts_ctl_put_u64(&m, TS_T_PAUSED, s->paused) == 0)
		conn_emit(s, ci, &m);
	ts_ctl_msg_free(&m);
}

/* --- file worker ------------------------------------------------------------------- */

/* Hand the connection to a forked file worker; it is no longer ours. */
static void handle_file(struct ts_server *s, int ci, struct ts_ctl_msg *req)
{
	struct ts_files_cfg fcfg = { .protect_patterns = s->cfg->protect_patterns,
				     .n_protect = s->cfg->n_protect,
				     .home = "/home/user",
				     .root = "/" };
	struct ts_conn *c = &s->conns[ci];
	uint64_t op = 0, uid = s->ids.uid;
	char msg[256];
	pid_t pid;
	int r;

	/* A connection's user is fixed by its first request (TS_FILE_USER), else init's. */
	if (ts_ctl_get_u64(req, TS_T_OP, &op) == 0 && op == TS_FILE_USER) {
		r = ts_ctl_get_u64(req, TS_T_UID, &uid) < 0
			    ? -EINVAL
			    : ts_ids_check(&s->ids, uid, msg, sizeof(msg));
		if (r < 0) {
			reply_error(s, ci, req->id, -r,
				    r == -EINVAL ? "a user request without a valid uid" : msg);
			c->doomed = true;
			return;
		}
	}
	if (s->n_workers >= TS_MAX_CONNS) {
		reply_error(s, ci, req->id, EAGAIN, "too many file connections");
		c->doomed = true;
		return;
	}
	pid = fork();
	if (pid < 0) {
		reply_error(s, ci, req->id, errno, "fork file worker");
		return;
	}
	if (pid > 0) {
		s->workers[s->n_workers++] = pid;
		/* the worker has the connection now: ours closes, without a word on it */
		ts_ctl_outq_free(&c->q);
		close_conn(s, ci);
		return;
	}
	/* the worker */
	{
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
	}
	/* only this connection: not the listener, the logs, other clients (nor the fds their
	 * half-received messages hold), pipes or ptys of processes */
	for (int i = 0; i < TS_MAX_CONNS; i++) {
		if (s->conns[i].fd < 0)
			continue;
		ts_ctl_conn_free(&s->conns[i].rx);
		if (i != ci) {
			close(s->conns[i].fd);
			ts_ctl_outq_free(&s->conns[i].q);
		}
	}
	ts_proctab_close_all(s->procs);
	ts_sudo_close_all(s->sudo);
	close(s->cfg->listen_fd);
	close(s->cfg->logs_fd);
	close(s->sfd);
	/* no file operation takes descriptors: any sent with the request go */
	for (size_t k = 0; k < req->n_fds; k++)
		close(req->fds[k]);
	req->n_fds = 0;
	fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) & ~O_NONBLOCK);
	/* replies queued before the request first, in order */
	while (ts_ctl_outq_flush(&c->q, c->fd) > 0) {
		struct pollfd p = { .fd = c->fd, .events = POLLOUT };

		poll(&p, 1, 1000);
	}
	ts_ctl_outq_free(&c->q);
	r = ts_ids_become(&s->ids, (uid_t)uid);
	if (r < 0) {
		ts_ctl_send_error(c->fd, req->id, -r, "file worker: become uid %u: %s",
				  (unsigned)uid, strerror(-r));
		_exit(1);
	}
	/* a change of ids resets dumpability from fs.suid_dumpable: not ours */
	prctl(PR_SET_DUMPABLE, 0);
	/* relative paths start in the home of a user asked for by name */
	if (op == TS_FILE_USER)
		fcfg.home = ts_ids_home((uid_t)uid);
	_exit(ts_files_serve(c->fd, req, &fcfg) < 0 ? 1 : 0);
}

/* --- the loop ---------------------------------------------------------------------- */

static void reap(struct ts_server *s)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		bool worker = false;

		if (pid <= 0)
			return;
		for (size_t i = 0; i < s->n_workers; i++)
			if (s->workers[i] == pid) {
				s->workers[i] = s->workers[--s->n_workers];
				worker = true;
				break;
			}
		if (worker || ts_proctab_reaped(s->procs, pid, status) ||
		    ts_sudo_reaped(s->sudo, pid, status))
			s->last_activity = ts_now_ms(); /* idle from the end of its work */
	}
}

static void shutdown_all(struct ts_server *s)
{
	unsigned long long deadline;

	s->shutting_down = true;
	kill(-1, SIGTERM);
	/* a stopped process acts on SIGTERM only once continued */
	if (s->paused)
		kill(-1, SIGCONT);
	deadline = ts_now_ms() + TS_SHUTDOWN_GRACE_MS;
	while (ts_now_ms() < deadline) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid < 0 && errno == ECHILD)
			break;
		if (pid > 0)
			continue;
		usleep(10000);
	}
	kill(-1, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	/* the OK of SHUTDOWN, and what else was queued, before we go */
	for (int i = 0; i < TS_MAX_CONNS; i++)
		if (s->conns[i].fd >= 0)
			ts_ctl_outq_flush(&s->conns[i].q, s->conns[i].fd);
}

/*
 * PAUSE and RESUME. kill(-1) from pid 1 reaches every process of our pid namespace but
 * init itself (kill(2)), and init holds the capabilities of the sandbox's user namespace,
 * so whatever uid a process runs as it is stopped; init keeps serving. The stopped ones
 * cannot continue each other (a stopped process runs nothing), and nothing new starts
 * while paused (handle), so the whole sandbox stays still until RESUME.
 */
/* Does the task whose stat file is at path show as running (not stopped, dead or gone)? */
static bool task_running(const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	char buf[512], *p;
	ssize_t n;

	if (fd < 0)
		return false; /* gone meanwhile */
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* "pid (comm) S ...": comm may hold anything, the state follows its last ')' */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && !strchr("TtZX", p[2]);
}

/*
 * Does every thread of every process of the sandbox but init show as stopped (or gone)
 * in /proc? Each thread, not the process's leader alone: a leader that has stopped (or
 * exited: a zombie while its threads run) says nothing of a thread still in write(2).
 */
static bool all_stopped(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	bool all = true;

	if (!d)
		return true; /* no /proc to ask: the SIGSTOP is all there is */
	while (all && (de = readdir(d))) {
		char path[96];
		struct dirent *te;
		DIR *t;

		if (de->d_name[0] < '1' || de->d_name[0] > '9' || !strcmp(de->d_name, "1"))
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s/task", de->d_name);
		t = opendir(path);
		if (!t) {
			snprintf(path, sizeof(path), "/proc/%.20s/stat", de->d_name);
			all = !task_running(path);
			continue;
		}
		while (all && (te = readdir(t))) {
			if (te->d_name[0] < '1' || te->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "/proc/%.20s/task/%.20s/stat", de->d_name,
				 te->d_name);
			all = !task_running(path);
		}
		closedir(t);
	}
	closedir(d);
	return all;
}

/* Wait, bounded, until the SIGSTOP has stopped every process: one in a system call stops
 * only on its way back, and a copy started before would see it still writing. */
static void settle_stopped(void)
{
	unsigned long long deadline = ts_now_ms() + TS_CTL_PAUSE_SETTLE_MS;

	while (!all_stopped() && ts_now_ms() < deadline)
		usleep(2000);
}

static void pause_resume(struct ts_server *s, int ci, struct ts_ctl_msg *req, bool pause, bool hold)
{
	struct ts_ctl_msg m = { 0 };

	if (!pause && s->paused && s->pause_holder >= 0 && s->pause_holder != ci) {
		reply_error(s, ci, req->id, EBUSY,
			    s->hold_keeps ? "the sandbox's pause is held by a snapshot being "
					    "taken: it can be resumed when the copy is done"
					  : "the sandbox is paused by a snapshot being taken: it "
					    "resumes when the copy is done");
		return;
	}
	if (s->paused == pause) {
		reply_error(s, ci, req->id, EALREADY,
			    pause ? "the sandbox is paused already" : "the sandbox is not paused");
		return;
	}
	/* ESRCH: there is no other process, which is fine */
	if (kill(-1, pause ? SIGSTOP : SIGCONT) < 0 && errno != ESRCH) {
		char msg[96];

		snprintf(msg, sizeof(msg), "%s the sandbox's processes: %s",
			 pause ? "stop" : "continue", strerror(errno));
		reply_error(s, ci, req->id, errno, msg);
		return;
	}
	s->paused = pause;
	s->pause_holder = pause && hold ? ci : -1;
	s->hold_keeps = false;
	if (pause)
		settle_stopped();
	ts_ctl_msg_init(&m, TS_CTL_OK, req->id);
	conn_emit(s, ci, &m);
	ts_ctl_msg_free(&m);
}

/* HOLD (ctl.h): the pause made before belongs to ci until its connection closes. */
static void hold_pause(struct ts_server *s, int ci, uint32_t id)
{
	struct ts_ctl_msg m = { 0 };

	if (!s->paused) {
		reply_error(s, ci, id, EINVAL, "the sandbox is not paused");
		return;
	}
	if (s->pause_holder >= 0 && s->pause_holder != ci) {
		reply_error(s, ci, id, EBUSY, "the sandbox's pause is held by another client");
		return;
	}
	if (s->pause_holder != ci) {
		s->pause_holder = ci;
		s->hold_keeps = true;
	}
	ts_ctl_msg_init(&m, TS_CTL_OK, id);
	conn_emit(s, ci, &m);
	ts_ctl_msg_free(&m);
}

/* Is s[0..len) a variable name, [A-Za-z_][A-Za-z0-9_]*? */
static bool env_name_ok(const char *s, size_t len)
{
	if (len == 0 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

/*
 * SETENV (ctl.h): the variables become part of our own environment, which every process
 * starts from (proctab.c build_env), exactly as the helper's --setenv would have put them
 * there; HOME, USER and LOGNAME among them then win over the user's defaults, as
 * --global-env says at a start. Checked whole before anything is set.
 */
static void set_env(struct ts_server *s, int ci, const struct ts_ctl_msg *req)
{
	struct ts_ctl_msg m = { 0 };
	const uint8_t *v;
	uint16_t tag;
	uint32_t len;
	size_t pos = 0, n = 0;
	int r;

	while ((r = ts_ctl_next(req, &pos, &tag, &v, &len)) > 0) {
		const uint8_t *eq = tag == TS_T_ENV ? memchr(v, '=', len) : NULL;

		if (tag != TS_T_ENV)
			continue;
		if (!eq || memchr(v, '\0', len) ||
		    !env_name_ok((const char *)v, (size_t)(eq - v)) || ++n > TS_CTL_SETENV_MAX) {
			reply_error(s, ci, req->id, EINVAL,
				    "SETENV: want NAME=VALUE with NAME [A-Za-z_][A-Za-z0-9_]*");
			return;
		}
	}
	if (r < 0) {
		reply_error(s, ci, req->id, EBADMSG, "SETENV: malformed");
		return;
	}
	pos = 0;
	while (ts_ctl_next(req, &pos, &tag, &v, &len) > 0) {
		char name[256], *val;
		const uint8_t *eq;

		if (tag != TS_T_ENV)
			continue;
		eq = memchr(v, '=', len);
		val = strndup((const char *)eq + 1, len - (size_t)(eq - v) - 1);
		if ((size_t)(eq - v) >= sizeof(name) || !val) {
			free(val);
			reply_error(s, ci, req->id,
				    (size_t)(eq - v) >= sizeof(name) ? EINVAL : ENOMEM,
				    "SETENV: name too long or out of memory");
			return;
		}
		snprintf(name, sizeof(name), "%.*s", (int)(eq - v), (const char *)v);
		r = setenv(name, val, 1);
		free(val);
		if (r < 0) {
			reply_error(s, ci, req->id, errno, "SETENV: setenv failed");
			return;
		}
		ts_proctab_set_global(s->procs, name);
	}
	ts_ctl_msg_init(&m, TS_CTL_OK, req->id);
	conn_emit(s, ci, &m);
	ts_ctl_msg_free(&m);
}

static void handle(struct ts_server *s, int ci, struct ts_ctl_msg *req)
{
	/* asking how idle we are (reap, ls, inspect) is not itself activity */
	if (req->type != TS_CTL_HELLO)
		s->last_activity = ts_now_ms();
	switch (req->type) {
	case TS_CTL_HELLO: {
		uint64_t v = 0, vmax;
		char msg[96];

		/* the newest version both speak (ctl.h, HELLO) */
		if (ts_ctl_get_u64(req, TS_T_VERSION, &v) < 0)
			v = 0;
		if (ts_ctl_get_u64(req, TS_T_VERSION_MAX, &vmax) < 0 || vmax < v)
			vmax = v;
		if (vmax > TS_CTL_VERSION)
			vmax = TS_CTL_VERSION;
		if (v > TS_CTL_VERSION || vmax < TS_CTL_VERSION_MIN) {
			snprintf(msg, sizeof(msg),
				 "protocol version %llu; this init speaks %d to %d",
				 (unsigned long long)v, TS_CTL_VERSION_MIN, TS_CTL_VERSION);
			reply_error(s, ci, req->id, EPROTO, msg);
		} else {
			send_hello(s, ci, req->id, vmax);
		}
		break;
	}
	case TS_CTL_SETENV:
		set_env(s, ci, req);
		break;
	case TS_CTL_SPAWN:
	case TS_CTL_FILE:
		/* a process started now would run in a sandbox meant to be still */
		if (s->paused) {
			reply_error(s, ci, req->id, EHOSTDOWN, "the sandbox is paused");
			break;
		}
		if (req->type == TS_CTL_SPAWN)
			ts_proctab_spawn(s->procs, ci, req);
		else
			handle_file(s, ci, req);
		break;
	case TS_CTL_PAUSE:
	case TS_CTL_PAUSE_HOLD:
	case TS_CTL_RESUME:
		pause_resume(s, ci, req, req->type != TS_CTL_RESUME,
			     req->type == TS_CTL_PAUSE_HOLD);
		break;
	case TS_CTL_HOLD:
		hold_pause(s, ci, req->id);
		break;
	case TS_CTL_ATTACH:
	case TS_CTL_INPUT:
	case TS_CTL_CLOSE_STDIN:
	case TS_CTL_RESIZE:
	case TS_CTL_SIGNAL:
	case TS_CTL_PS:
		/* as E2B's paused sandbox: its processes can be neither reached nor listed
		 * (the backend interface behaves the same on every backend) */
		if (s->paused) {
			reply_error(s, ci, req->id, EHOSTDOWN, "the sandbox is paused");
			break;
		}
		ts_proctab_request(s->procs, ci, req);
		break;
	case TS_CTL_DETACH:
	case TS_CTL_WAIT:
		ts_proctab_request(s->procs, ci, req);
		break;
	case TS_CTL_SHUTDOWN: {
		struct ts_ctl_msg m = { 0 };

		ts_ctl_msg_init(&m, TS_CTL_OK, req->id);
		conn_emit(s, ci, &m);
		s->shutting_down = true;
		break;
	}
	default: {
		char msg[64];

		snprintf(msg, sizeof(msg), "unexpected message type %u", (unsigned)req->type);
		reply_error(s, ci, req->id, EOPNOTSUPP, msg);
	}
	}
}

static void accept_all(struct ts_server *s)
{
	for (;;) {
		int fd = accept4(s->cfg->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		int i;

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				s->accept_paused_until = ts_now_ms() + TS_ACCEPT_BACKOFF_MS;
			return;
		}
		for (i = 0; i < TS_MAX_CONNS && s->conns[i].fd >= 0; i++)
			;
		if (i == TS_MAX_CONNS) {
			ts_ctl_send_error(fd, 0, EMFILE, "too many connections");
			close(fd);
			continue;
		}
		s->conns[i].fd = fd;
		s->conns[i].doomed = false;
		ts_ctl_conn_init(&s->conns[i].rx);
		memset(&s->conns[i].q, 0, sizeof(s->conns[i].q));
	}
}

static void read_conn(struct ts_server *s, int ci)
{
	/* a message at a time; the next poll round serves the rest */
	for (int rounds = 0; rounds < 64 && s->conns[ci].fd >= 0 && !s->conns[ci].doomed;
	     rounds++) {
		struct ts_ctl_msg m = { 0 };
		int r = ts_ctl_conn_read(&s->conns[ci].rx, s->conns[ci].fd, &m);

		if (r == 0)
			break;
		if (r < 0) {
			s->conns[ci].doomed = true;
			break;
		}
		handle(s, ci, &m);
		ts_ctl_msg_free(&m);
	}
}

int ts_server_run(const struct ts_server_cfg *cfg)
{
	/* Large, and zero already (static): never cleared as a whole, so that the pages
	 * of records never used stay out of an idle sandbox's memory. */
	static struct ts_server s;
	static struct pollfd pfd[2 + TS_MAX_CONNS + 3 * TS_PROC_MAX + TS_SUDO_MAX + 1];
	static int map[2 + TS_MAX_CONNS + 3 * TS_PROC_MAX + TS_SUDO_MAX + 1];
	struct ts_proctab_ops ops = { .ctx = &s, .emit = conn_emit, .queued = conn_queued };
	struct ts_proctab_cfg pcfg;
	sigset_t mask;

	s.cfg = cfg;
	ts_ids_init(&s.ids);
	s.last_activity = ts_now_ms();
	s.pause_holder = -1;
	for (int i = 0; i < TS_MAX_CONNS; i++)
		s.conns[i].fd = -1;
	sigfillset(&mask);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	s.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s.sfd < 0)
		return 125;
	fcntl(cfg->listen_fd, F_SETFL, O_NONBLOCK);
	if (getrlimit(RLIMIT_NOFILE, &s.nofile) == 0 && s.nofile.rlim_cur < s.nofile.rlim_max) {
		struct rlimit raised = { s.nofile.rlim_max, s.nofile.rlim_max };

		setrlimit(RLIMIT_NOFILE, &raised);
	}
	pcfg = (struct ts_proctab_cfg){ .ids = &s.ids,
					.logs_fd = cfg->logs_fd,
					.nofile = s.nofile,
					.global_env = cfg->global_env,
					.n_global_env = cfg->n_global_env,
					.first_id = cfg->first_proc };
	s.procs = ts_proctab_get(&pcfg, &ops);
	/* without it, `sudo` finds no socket and says that sudo is off */
	if (cfg->sudo && ts_sudo_open(&s.sudo, &s.ids, s.nofile, NULL) < 0)
		s.sudo = NULL;

	while (!s.shutting_down) {
		nfds_t n = 0, sudo_lo, sudo_hi;
		int timeout = ts_proctab_tick(s.procs);

		if (s.accept_paused_until && ts_now_ms() >= s.accept_paused_until)
			s.accept_paused_until = 0;
		if (s.accept_paused_until) {
			int left = (int)(s.accept_paused_until - ts_now_ms() + 1);

			timeout = timeout < 0 || left < timeout ? left : timeout;
		}
		pfd[n] = (struct pollfd){ .fd = s.sfd, .events = POLLIN };
		map[n++] = -1;
		if (!s.accept_paused_until) {
			pfd[n] = (struct pollfd){ .fd = cfg->listen_fd, .events = POLLIN };
			map[n++] = -2;
		}
		for (int i = 0; i < TS_MAX_CONNS; i++) {
			if (s.conns[i].fd < 0)
				continue;
			if (s.conns[i].doomed) {
				close_conn(&s, i);
				continue;
			}
			pfd[n] = (struct pollfd){
				.fd = s.conns[i].fd,
				.events = (short)(POLLIN | (s.conns[i].q.bytes ? POLLOUT : 0))
			};
			map[n++] = i;
		}
		{
			size_t k = ts_proctab_pollfds(s.procs, pfd + n, map + n);

			/* the table's map values go after ours: -3 - value */
			for (size_t j = 0; j < k; j++)
				map[n + j] = -3 - map[n + j];
			n += (nfds_t)k;
		}
		/* paused: a request already queued starts nothing until RESUME */
		sudo_lo = n;
		if (!s.paused)
			n += (nfds_t)ts_sudo_pollfds(s.sudo, pfd + n, map + n);
		sudo_hi = n;
		if (poll(pfd, n, timeout) < 0 && errno != EINTR)
			return 125;
		for (nfds_t k = 0; k < n; k++) {
			if (!pfd[k].revents)
				continue;
			if (k >= sudo_lo && k < sudo_hi) {
				ts_sudo_ready(s.sudo, map[k], pfd[k].revents);
			} else if (map[k] == -1) {
				struct signalfd_siginfo si;

				while (read(s.sfd, &si, sizeof(si)) == sizeof(si)) {
					/* No signal is a request: the host stops us with SHUTDOWN
					 * over the socket, or SIGKILL through a pidfd. A sender's
					 * siginfo cannot be trusted: once the sandbox's processes
					 * have used up the pending-signal budget they share with
					 * us, the kernel delivers their signals without it, and
					 * they read as the host's (SI_USER from pid 0). */
					if (si.ssi_signo == SIGCHLD)
						reap(&s);
				}
			} else if (map[k] == -2) {
				accept_all(&s);
			} else if (map[k] >= 0) {
				int ci = map[k];

				if (s.conns[ci].fd < 0)
					continue;
				if ((pfd[k].revents & POLLOUT) &&
				    ts_ctl_outq_flush(&s.conns[ci].q, s.conns[ci].fd) < 0)
					s.conns[ci].doomed = true;
				if (pfd[k].revents & (POLLIN | POLLHUP | POLLERR))
					read_conn(&s, ci);
			} else {
				ts_proctab_ready(s.procs, -3 - map[k], pfd[k].fd, pfd[k].revents);
			}
		}
	}
	shutdown_all(&s);
	return 0;
}
