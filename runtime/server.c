/* SPDX-License-Identifier: Apache-2.0 */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "ctl.h"
#include "files.h"
#include "ids.h"
#include "pty.h"
#include "sigorigin.h"
#include "syscall.h"
#include "util.h"

extern char **environ;

#define TS_MAX_CONNS 256
#define TS_MAX_PROCS 1024	 /* running + finished records */
#define TS_MAX_FINISHED 256	 /* finished records kept (oldest dropped first) */
#define TS_LOG_CAP (64ULL << 20) /* bytes of output kept per background process */
#define TS_MAX_ENV 1024
#define TS_MAX_ARGS 4096
#define TS_SHUTDOWN_GRACE_MS 2000
#define TS_ACCEPT_BACKOFF_MS 100 /* listening paused after accept ran out of fds */

struct ts_proc {
	uint64_t id;
	pid_t pid;
	bool running;
	int status;
	uint32_t flags;
	uid_t uid; /* inside the sandbox */
	long long started_ms, ended_ms;
	char summary[256]; /* argv joined, for ps */
	int out_fd;	   /* detached: read end of the output pipe, else -1 */
	int log_fd;	   /* detached: the log file, else -1 */
	unsigned long long log_bytes;
	bool log_truncated;
};

struct ts_waiter {
	int conn; /* index into conns */
	uint32_t req;
	uint64_t proc;
};

struct ts_conn {
	int fd; /* -1: free slot */
	struct ts_ctl_conn rx;
};

struct ts_server {
	const struct ts_server_cfg *cfg;
	struct ts_ids ids;
	int sfd;
	struct ts_conn conns[TS_MAX_CONNS];
	struct ts_proc procs[TS_MAX_PROCS];
	size_t n_procs;
	struct ts_waiter waiters[TS_MAX_CONNS];
	size_t n_waiters;
	pid_t workers[TS_MAX_CONNS]; /* live file workers: each is a client at work */
	size_t n_workers;
	uint64_t next_id;
	unsigned long long last_activity; /* CLOCK_MONOTONIC ms */
	bool shutting_down;
	/* CLOCK_MONOTONIC ms until which the listening socket is left alone (0: listen).
	 * accept() failing for want of fds or memory leaves the connection queued, so the
	 * socket stays readable: polling it at once again would spin. */
	unsigned long long accept_paused_until;
	/* the RLIMIT_NOFILE the sandbox was given: init raises its own soft limit to the
	 * hard one (every background process holds a pipe and a log here), processes it
	 * starts get this one back */
	struct rlimit nofile;
};

static long long realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct ts_proc *find_proc(struct ts_server *s, uint64_t id)
{
	for (size_t i = 0; i < s->n_procs; i++)
		if (s->procs[i].id == id)
			return &s->procs[i];
	return NULL;
}

/* No writer is left (or the record goes): the pipe and the log are done with. Every
 * `exec -d` would otherwise keep its log open for as long as init runs. */
static void close_output(struct ts_proc *p)
{
	if (p->out_fd >= 0)
		close(p->out_fd);
	if (p->log_fd >= 0)
		close(p->log_fd);
	p->out_fd = p->log_fd = -1;
}

/* Clients at work: one per live process a client waits for, one per file worker (a long
 * copy or a watch is activity for as long as it lasts). */
static size_t attached(const struct ts_server *s)
{
	size_t n = s->n_workers;

	for (size_t i = 0; i < s->n_waiters; i++) {
		const struct ts_proc *p = NULL;

		for (size_t k = 0; k < s->n_procs; k++)
			if (s->procs[k].id == s->waiters[i].proc)
				p = &s->procs[k];
		if (p && p->running)
			n++;
	}
	return n;
}

/* Drop the oldest finished records beyond TS_MAX_FINISHED. */
static void trim_finished(struct ts_server *s)
{
	size_t finished = 0;

	for (size_t i = 0; i < s->n_procs; i++)
		finished += !s->procs[i].running;
	while (finished > TS_MAX_FINISHED) {
		size_t oldest = s->n_procs;

		for (size_t i = 0; i < s->n_procs; i++)
			if (!s->procs[i].running &&
			    (oldest == s->n_procs ||
			     s->procs[i].ended_ms < s->procs[oldest].ended_ms))
				oldest = i;
		if (oldest == s->n_procs)
			break;
		/* a survivor of its group may still hold the pipe: the record's fds go too */
		close_output(&s->procs[oldest]);
		s->procs[oldest] = s->procs[--s->n_procs];
		finished--;
	}
}

static void close_conn(struct ts_server *s, int idx)
{
	struct ts_conn *c = &s->conns[idx];

	if (c->fd < 0)
		return;
	close(c->fd);
	c->fd = -1;
	ts_ctl_conn_free(&c->rx);
	for (size_t i = 0; i < s->n_waiters;)
		if (s->waiters[i].conn == idx)
			s->waiters[i] = s->waiters[--s->n_waiters];
		else
			i++;
}

/* Append output of a detached process to its log, up to the cap. */
static void drain(struct ts_proc *p)
{
	char buf[65536];

	for (;;) {
		ssize_t n = read(p->out_fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0 || errno != EAGAIN)
				close_output(p);
			return;
		}
		if (p->log_fd < 0 || p->log_truncated)
			continue; /* keep draining: a full pipe must never block the process */
		if (p->log_bytes + (unsigned long long)n > TS_LOG_CAP) {
			static const char mark[] = "\n[toren-sandbox: log truncated at 64 MiB]\n";

			ts_write_all(p->log_fd, mark, sizeof(mark) - 1);
			p->log_truncated = true;
			continue;
		}
		if (ts_write_all(p->log_fd, buf, (size_t)n) == 0)
			p->log_bytes += (unsigned long long)n;
	}
}

static void on_exit_status(struct ts_server *s, pid_t pid, int status)
{
	for (size_t i = 0; i < s->n_workers; i++)
		if (s->workers[i] == pid) {
			s->workers[i] = s->workers[--s->n_workers];
			s->last_activity = ts_now_ms(); /* idle from the end of its work */
			return;
		}
	for (size_t i = 0; i < s->n_procs; i++) {
		struct ts_proc *p = &s->procs[i];

		if (!p->running || p->pid != pid)
			continue;
		p->running = false;
		p->status = status;
		p->ended_ms = realtime_ms();
		if (p->out_fd >= 0)
			drain(p);
		/* Its group may have survivors (a background job it left): the group dies with
		 * its leader, as `kill` promises for the whole process group. */
		kill(-p->pid, SIGKILL);
		for (size_t w = 0; w < s->n_waiters;) {
			struct ts_waiter *wt = &s->waiters[w];

			if (wt->proc != p->id) {
				w++;
				continue;
			}
			if (s->conns[wt->conn].fd >= 0) {
				struct ts_ctl_msg m = { 0 };

				ts_ctl_msg_init(&m, TS_CTL_EXITED, wt->req);
				if (ts_ctl_put_u64(&m, TS_T_PROC, p->id) == 0 &&
				    ts_ctl_put_u64(&m, TS_T_STATUS, (uint64_t)status) == 0)
					ts_ctl_send(s->conns[wt->conn].fd, &m, NULL, 0);
				ts_ctl_msg_free(&m);
			}
			s->waiters[w] = s->waiters[--s->n_waiters];
		}
		s->last_activity = ts_now_ms();
		trim_finished(s);
		return;
	}
}

static void reap(struct ts_server *s)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid <= 0)
			return;
		on_exit_status(s, pid, status);
	}
}

static int send_hello(struct ts_server *s, int fd, uint32_t id)
{
	struct ts_ctl_msg m = { 0 };
	int r;

	ts_ctl_msg_init(&m, TS_CTL_HELLO, id);
	r = ts_ctl_put_u64(&m, TS_T_VERSION, TS_CTL_VERSION);
	if (r == 0)
		r = ts_ctl_put_u64(&m, TS_T_PID, (uint64_t)getpid());
	if (r == 0)
		r = ts_ctl_put_u64(&m, TS_T_IDLE_MS,
				   attached(s) ? 0 : ts_now_ms() - s->last_activity);
	if (r == 0)
		r = ts_ctl_put_u64(&m, TS_T_ATTACHED, attached(s));
	if (r == 0)
		r = ts_ctl_send(fd, &m, NULL, 0);
	ts_ctl_msg_free(&m);
	return r;
}

/* Replace NAME's value in envp[0..n) (init's own environment, so NAME is there). */
static int env_set(char **envp, size_t n, const char *name, const char *value)
{
	size_t len = strlen(name);

	for (size_t k = 0; k < n; k++)
		if (envp[k] && !strncmp(envp[k], name, len) && envp[k][len] == '=') {
			char *e;

			if (asprintf(&e, "%s=%s", name, value) < 0)
				return -ENOMEM;
			free(envp[k]);
			envp[k] = e;
		}
	return 0;
}

/* Build argv and envp from the request; envp starts from init's environment, with HOME
 * and USER of the user the process runs as (other_user) when that is not init's. */
static int spawn_args(const struct ts_ctl_msg *req, char ***argv_ret, char ***envp_ret, char *cwd,
		      size_t cwd_len, const uid_t *other_user)
{
	size_t pos = 0, na = 0, ne = 0, nbase = 0;
	char **argv, **envp;
	uint16_t tag;
	const uint8_t *v;
	uint32_t len;
	int r;

	while (environ[nbase])
		nbase++;
	argv = calloc(TS_MAX_ARGS + 1, sizeof(char *));
	envp = calloc(nbase + TS_MAX_ENV + 1, sizeof(char *));
	if (!argv || !envp) {
		free(argv);
		free(envp);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nbase; i++)
		envp[ne++] = strdup(environ[i]);
	snprintf(cwd, cwd_len, "/home/user");
	r = 0;
	if (other_user && ((r = env_set(envp, ne, "HOME", ts_ids_home(*other_user))) < 0 ||
			   (r = env_set(envp, ne, "USER", ts_ids_name(*other_user))) < 0 ||
			   (r = env_set(envp, ne, "LOGNAME", ts_ids_name(*other_user))) < 0)) {
		*argv_ret = argv;
		*envp_ret = envp;
		return r;
	}
	while ((r = ts_ctl_next(req, &pos, &tag, &v, &len)) > 0) {
		char *str;

		if (tag != TS_T_ARG && tag != TS_T_ENV && tag != TS_T_CWD)
			continue;
		if (memchr(v, '\0', len) || !(str = strndup((const char *)v, len))) {
			r = -EINVAL;
			break;
		}
		if (tag == TS_T_ARG) {
			if (na >= TS_MAX_ARGS) {
				free(str);
				r = -E2BIG;
				break;
			}
			argv[na++] = str;
		} else if (tag == TS_T_ENV) {
			char *eq = strchr(str, '=');
			size_t k;

			if (!eq || eq == str || ne >= nbase + TS_MAX_ENV) {
				free(str);
				r = -EINVAL;
				break;
			}
			/* a later NAME= replaces an earlier one */
			for (k = 0; k < ne; k++)
				if (envp[k] && !strncmp(envp[k], str, (size_t)(eq - str) + 1))
					break;
			if (k < ne) {
				free(envp[k]);
				envp[k] = str;
			} else {
				envp[ne++] = str;
			}
		} else {
			if (len == 0 || len >= cwd_len || v[0] != '/') {
				free(str);
				r = -EINVAL;
				break;
			}
			snprintf(cwd, cwd_len, "%s", str);
			free(str);
		}
	}
	if (r == 0 && na == 0)
		r = -EINVAL;
	*argv_ret = argv;
	*envp_ret = envp;
	return r < 0 ? r : 0;
}

static void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

static pid_t start_process(const struct ts_server *s, uid_t uid, char **argv, char **envp,
			   const char *cwd, const int stdio[3], int pty_slave, int *err_out)
{
	pid_t pid = fork();

	if (pid != 0) {
		if (pid < 0)
			*err_out = errno;
		return pid;
	}
	/* child: init's signal mask and dispositions do not belong here */
	int r;

	ts_signals_reset();
	if (pty_slave >= 0) {
		if (setsid() < 0 || ioctl(pty_slave, TIOCSCTTY, 0) < 0)
			_exit(126);
		if (dup2(pty_slave, 0) < 0 || dup2(pty_slave, 1) < 0 || dup2(pty_slave, 2) < 0)
			_exit(126);
	} else {
		/* a session of its own, never init's (spawn.c says why) */
		if (setsid() < 0)
			_exit(126);
		for (int i = 0; i < 3; i++)
			if (dup2(stdio[i], i) < 0)
				_exit(126);
	}
	/* nothing of init's (sockets, logs directory, other processes' pipes) follows */
	ts_close_range(3, ~0U, 0);
	if (s->nofile.rlim_max)
		setrlimit(RLIMIT_NOFILE, &s->nofile);
	/* init's capabilities (if any) end here, whoever the process runs as */
	if ((r = ts_ids_become(&s->ids, uid)) < 0) {
		fprintf(stderr, "toren-sandbox: become uid %u: %s\n", (unsigned)uid, strerror(-r));
		_exit(126);
	}
	if (chdir(cwd) < 0) {
		fprintf(stderr, "toren-sandbox: working directory `%s`: %s\n", cwd,
			strerror(errno));
		_exit(126);
	}
	environ = envp;
	execvp(argv[0], argv);
	fprintf(stderr, "toren-sandbox: `%s`: %s\n", argv[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

static void handle_spawn(struct ts_server *s, int ci, struct ts_ctl_msg *req)
{
	int fd = s->conns[ci].fd;
	char **argv = NULL, **envp = NULL, cwd[4096], logname[64];
	uint64_t flags = 0, uid = s->ids.uid;
	uid_t as;
	int stdio[3] = { -1, -1, -1 }, pipefd[2] = { -1, -1 }, devnull = -1, log_fd = -1, e = 0, r;
	struct ts_pty pty = { -1, -1 };
	struct ts_error err = { 0 };
	struct ts_proc *p;
	struct ts_ctl_msg rep = { 0 };
	pid_t pid;

	ts_ctl_get_u64(req, TS_T_FLAGS, &flags);
	if (s->n_procs >= TS_MAX_PROCS) {
		ts_ctl_send_error(fd, req->id, EAGAIN, "too many processes (%d)", TS_MAX_PROCS);
		return;
	}
	r = ts_ctl_get_u64(req, TS_T_UID, &uid);
	if (r < 0 && r != -ENOENT) {
		/* never fall back to init's own ids on a garbled request */
		ts_ctl_send_error(fd, req->id, EINVAL, "bad spawn request: malformed uid");
		return;
	}
	if (r == 0) {
		char msg[256];

		if (ts_ids_check(&s->ids, uid, msg, sizeof(msg)) < 0) {
			ts_ctl_send_error(fd, req->id, EPERM, "%s", msg);
			return;
		}
	}
	as = (uid_t)uid;
	r = spawn_args(req, &argv, &envp, cwd, sizeof(cwd), as != s->ids.uid ? &as : NULL);
	if (r < 0) {
		ts_ctl_send_error(fd, req->id, -r, "bad spawn request: %s", strerror(-r));
		goto out;
	}
	if (flags & TS_SPAWN_PTY) {
		/* The window size comes later from the client (TIOCSWINSZ on the master). The
		 * slave belongs to whoever opens the master: the process's user. */
		ts_ids_fs_as(&s->ids, as);
		r = ts_pty_open(&pty, -1, &err);
		ts_ids_fs_as(&s->ids, s->ids.uid);
		if (r < 0) {
			ts_ctl_send_error(fd, req->id, err.code, "%s", err.msg);
			goto out;
		}
	} else if (flags & TS_SPAWN_STDIO) {
		if (req->n_fds != 3) {
			ts_ctl_send_error(fd, req->id, EINVAL, "stdio needs 3 descriptors, got %zu",
					  req->n_fds);
			goto out;
		}
		for (int k = 0; k < 3; k++) {
			int bad = ts_stdio_fd_safe(req->fds[k]);

			if (bad < 0) {
				ts_ctl_send_error(
					fd, req->id, -bad,
					"stdio fd %d is a directory or an O_PATH fd: refused", k);
				goto out;
			}
		}
		memcpy(stdio, req->fds, sizeof(stdio));
	} else {
		/* detached: stdin /dev/null, stdout+stderr into a pipe init drains to the log */
		devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (devnull < 0 || pipe2(pipefd, O_CLOEXEC) < 0) {
			ts_ctl_send_error(fd, req->id, errno, "pipe: %s", strerror(errno));
			goto out;
		}
		stdio[0] = devnull;
		stdio[1] = stdio[2] = pipefd[1];
	}
	if (pipefd[0] >= 0) {
		/* the log first: a background process whose output would be lost is refused */
		snprintf(logname, sizeof(logname), "%llu.log",
			 (unsigned long long)(s->next_id + 1));
		log_fd = openat(s->cfg->logs_fd, logname,
				O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (log_fd < 0) {
			ts_ctl_send_error(fd, req->id, errno, "create log `%s`: %s", logname,
					  strerror(errno));
			goto out;
		}
	}
	pid = start_process(s, as, argv, envp, cwd, stdio, pty.slave, &e);
	if (pid < 0) {
		ts_ctl_send_error(fd, req->id, e, "fork: %s", strerror(e));
		goto out;
	}
	p = &s->procs[s->n_procs++];
	memset(p, 0, sizeof(*p));
	p->id = ++s->next_id;
	p->pid = pid;
	p->running = true;
	p->flags = (uint32_t)flags;
	p->uid = as;
	p->started_ms = realtime_ms();
	p->out_fd = p->log_fd = -1;
	for (char **a = argv; *a; a++) {
		size_t used = strlen(p->summary);

		snprintf(p->summary + used, sizeof(p->summary) - used, "%s%s", used ? " " : "", *a);
	}
	if (pipefd[0] >= 0) {
		p->log_fd = log_fd;
		log_fd = -1;
		p->out_fd = pipefd[0];
		pipefd[0] = -1;
		fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
	}
	ts_ctl_msg_init(&rep, TS_CTL_SPAWNED, req->id);
	ts_ctl_put_u64(&rep, TS_T_PROC, p->id);
	ts_ctl_put_u64(&rep, TS_T_PID, (uint64_t)pid);
	ts_ctl_send(fd, &rep, pty.master >= 0 ? &pty.master : NULL, pty.master >= 0 ? 1 : 0);
	ts_ctl_msg_free(&rep);
	s->last_activity = ts_now_ms();
out:
	strv_free(argv);
	strv_free(envp);
	if (pty.master >= 0)
		close(pty.master);
	if (pty.slave >= 0)
		close(pty.slave);
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	if (devnull >= 0)
		close(devnull);
	if (log_fd >= 0)
		close(log_fd);
	/* the client's stdio fds belong to the request and are closed with it */
}

static void handle_wait(struct ts_server *s, int ci, struct ts_ctl_msg *req)
{
	int fd = s->conns[ci].fd;
	struct ts_proc *p;
	uint64_t id;

	if (ts_ctl_get_u64(req, TS_T_PROC, &id) < 0 || !(p = find_proc(s, id))) {
		ts_ctl_send_error(fd, req->id, ESRCH, "no process %llu", (unsigned long long)id);
		return;
	}
	if (!p->running) {
		struct ts_ctl_msg m = { 0 };

		ts_ctl_msg_init(&m, TS_CTL_EXITED, req->id);
		ts_ctl_put_u64(&m, TS_T_PROC, p->id);
		ts_ctl_put_u64(&m, TS_T_STATUS, (uint64_t)p->status);
		ts_ctl_send(fd, &m, NULL, 0);
		ts_ctl_msg_free(&m);
		return;
	}
	if (s->n_waiters >= TS_MAX_CONNS) {
		ts_ctl_send_error(fd, req->id, EAGAIN, "too many waiters");
		return;
	}
	s->waiters[s->n_waiters++] = (struct ts_waiter){ ci, req->id, id };
}

static void handle_signal(struct ts_server *s, int ci, struct ts_ctl_msg *req)
{
	int fd = s->conns[ci].fd;
	struct ts_proc *p;
	uint64_t id = 0, sig = 0;

	if (ts_ctl_get_u64(req, TS_T_PROC, &id) < 0 || ts_ctl_get_u64(req, TS_T_SIGNAL, &sig) < 0 ||
	    sig < 1 || sig > 64) {
		ts_ctl_send_error(fd, req->id, EINVAL, "bad signal request");
		return;
	}
	p = find_proc(s, id);
	if (!p) {
		ts_ctl_send_error(fd, req->id, ESRCH, "no process %llu", (unsigned long long)id);
		return;
	}
	if (!p->running) {
		ts_ctl_send_error(fd, req->id, ESRCH, "process %llu has exited",
				  (unsigned long long)id);
		return;
	}
	/* the whole process group: a job's children go with it; our own pid namespace and
	 * the record of a running child make the pid unambiguous */
	if (kill(-p->pid, (int)sig) < 0 && kill(p->pid, (int)sig) < 0) {
		ts_ctl_send_error(fd, req->id, errno, "kill: %s", strerror(errno));
		return;
	}
	ts_ctl_send_simple(fd, TS_CTL_OK, req->id);
}

static void handle_ps(struct ts_server *s, int ci, struct ts_ctl_msg *req)
{
	int fd = s->conns[ci].fd;

	for (size_t i = 0; i < s->n_procs; i++) {
		const struct ts_proc *p = &s->procs[i];
		struct ts_ctl_msg m = { 0 };

		ts_ctl_msg_init(&m, TS_CTL_PS_ENTRY, req->id);
		ts_ctl_put_u64(&m, TS_T_PROC, p->id);
		ts_ctl_put_u64(&m, TS_T_PID, (uint64_t)p->pid);
		ts_ctl_put_str(&m, TS_T_STATE, p->running ? "running" : "exited");
		ts_ctl_put_u64(&m, TS_T_STATUS, (uint64_t)p->status);
		ts_ctl_put_u64(&m, TS_T_FLAGS, p->flags);
		ts_ctl_put_u64(&m, TS_T_UID, (uint64_t)p->uid);
		ts_ctl_put_u64(&m, TS_T_STARTED, (uint64_t)p->started_ms);
		ts_ctl_put_u64(&m, TS_T_ENDED, (uint64_t)p->ended_ms);
		ts_ctl_put_str(&m, TS_T_ARG, p->summary);
		ts_ctl_send(fd, &m, NULL, 0);
		ts_ctl_msg_free(&m);
	}
	ts_ctl_send_simple(fd, TS_CTL_END, req->id);
}

/* Hand the connection to a forked file worker; it is no longer ours. */
static void handle_file(struct ts_server *s, int ci, struct ts_ctl_msg *req)
{
	struct ts_files_cfg fcfg = { .protect_patterns = s->cfg->protect_patterns,
				     .n_protect = s->cfg->n_protect,
				     .home = "/home/user",
				     .root = "/" };
	int fd = s->conns[ci].fd;
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
			ts_ctl_send_error(fd, req->id, -r, "%s",
					  r == -EINVAL ? "a user request without a valid uid"
						       : msg);
			close_conn(s, ci);
			return;
		}
	}
	if (s->n_workers >= TS_MAX_CONNS) {
		ts_ctl_send_error(fd, req->id, EAGAIN, "too many file connections (%d)",
				  TS_MAX_CONNS);
		close_conn(s, ci);
		return;
	}
	pid = fork();
	if (pid < 0) {
		ts_ctl_send_error(fd, req->id, errno, "fork file worker: %s", strerror(errno));
		return;
	}
	if (pid > 0)
		s->workers[s->n_workers++] = pid;
	if (pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/* only this connection: not the listener, the logs, other clients (nor the
		 * fds their half-received messages hold) or pipes */
		for (int i = 0; i < TS_MAX_CONNS; i++) {
			if (s->conns[i].fd < 0)
				continue;
			ts_ctl_conn_free(&s->conns[i].rx);
			if (i != ci)
				close(s->conns[i].fd);
		}
		/* no file operation takes descriptors: any sent with the request go */
		for (size_t k = 0; k < req->n_fds; k++)
			close(req->fds[k]);
		req->n_fds = 0;
		close(s->cfg->listen_fd);
		close(s->cfg->logs_fd);
		close(s->sfd);
		for (size_t i = 0; i < s->n_procs; i++) {
			if (s->procs[i].out_fd >= 0)
				close(s->procs[i].out_fd);
			if (s->procs[i].log_fd >= 0)
				close(s->procs[i].log_fd);
		}
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		r = ts_ids_become(&s->ids, (uid_t)uid);
		if (r < 0) {
			ts_ctl_send_error(fd, req->id, -r, "file worker: become uid %u: %s",
					  (unsigned)uid, strerror(-r));
			_exit(1);
		}
		/* a change of ids resets dumpability from fs.suid_dumpable: not ours */
		prctl(PR_SET_DUMPABLE, 0);
		/* relative paths start in the home of a user asked for by name */
		if (op == TS_FILE_USER)
			fcfg.home = ts_ids_home((uid_t)uid);
		_exit(ts_files_serve(fd, req, &fcfg) < 0 ? 1 : 0);
	}
	close_conn(s, ci);
}

static void shutdown_all(struct ts_server *s)
{
	unsigned long long deadline;

	s->shutting_down = true;
	kill(-1, SIGTERM);
	deadline = ts_now_ms() + TS_SHUTDOWN_GRACE_MS;
	while (ts_now_ms() < deadline) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid < 0 && errno == ECHILD)
			break;
		if (pid > 0) {
			on_exit_status(s, pid, status);
			continue;
		}
		usleep(10000);
	}
	kill(-1, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
}

static void handle(struct ts_server *s, int ci, struct ts_ctl_msg *req)
{
	int fd = s->conns[ci].fd;

	/* asking how idle we are (reap, ls, inspect) is not itself activity */
	if (req->type != TS_CTL_HELLO)
		s->last_activity = ts_now_ms();
	switch (req->type) {
	case TS_CTL_HELLO: {
		uint64_t v = 0;

		if (ts_ctl_get_u64(req, TS_T_VERSION, &v) < 0 || v != TS_CTL_VERSION)
			ts_ctl_send_error(fd, req->id, EPROTO,
					  "protocol version %llu; this init speaks %d",
					  (unsigned long long)v, TS_CTL_VERSION);
		else
			send_hello(s, fd, req->id);
		break;
	}
	case TS_CTL_SPAWN:
		handle_spawn(s, ci, req);
		break;
	case TS_CTL_WAIT:
		handle_wait(s, ci, req);
		break;
	case TS_CTL_SIGNAL:
		handle_signal(s, ci, req);
		break;
	case TS_CTL_PS:
		handle_ps(s, ci, req);
		break;
	case TS_CTL_FILE:
		handle_file(s, ci, req);
		break;
	case TS_CTL_SHUTDOWN:
		ts_ctl_send_simple(fd, TS_CTL_OK, req->id);
		s->shutting_down = true;
		break;
	default:
		ts_ctl_send_error(fd, req->id, EOPNOTSUPP, "unexpected message type %u",
				  (unsigned)req->type);
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
		ts_ctl_conn_init(&s->conns[i].rx);
	}
}

int ts_server_run(const struct ts_server_cfg *cfg)
{
	/* Large, and zero already (static): never cleared as a whole, so that the pages
	 * of process records never used stay out of an idle sandbox's memory. */
	static struct ts_server s;
	struct pollfd pfd[2 + TS_MAX_CONNS + TS_MAX_PROCS];
	int map[2 + TS_MAX_CONNS + TS_MAX_PROCS];
	sigset_t mask;

	s.cfg = cfg;
	s.next_id = cfg->first_proc > 0 ? cfg->first_proc - 1 : 0;
	ts_ids_init(&s.ids);
	s.last_activity = ts_now_ms();
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

	while (!s.shutting_down) {
		nfds_t n = 0;
		int timeout;

		pfd[n] = (struct pollfd){ .fd = s.sfd, .events = POLLIN };
		map[n++] = -1;
		if (s.accept_paused_until && ts_now_ms() >= s.accept_paused_until)
			s.accept_paused_until = 0;
		if (!s.accept_paused_until) {
			pfd[n] = (struct pollfd){ .fd = cfg->listen_fd, .events = POLLIN };
			map[n++] = -2;
		}
		for (int i = 0; i < TS_MAX_CONNS; i++)
			if (s.conns[i].fd >= 0) {
				pfd[n] = (struct pollfd){ .fd = s.conns[i].fd, .events = POLLIN };
				map[n++] = i;
			}
		for (size_t i = 0; i < s.n_procs; i++)
			if (s.procs[i].out_fd >= 0) {
				pfd[n] = (struct pollfd){ .fd = s.procs[i].out_fd,
							  .events = POLLIN };
				map[n++] = -3 - (int)i;
			}
		timeout = s.accept_paused_until ? (int)(s.accept_paused_until - ts_now_ms() + 1)
						: -1;
		if (poll(pfd, n, timeout) < 0 && errno != EINTR)
			return 125;
		for (nfds_t k = 0; k < n; k++) {
			if (!pfd[k].revents)
				continue;
			if (map[k] == -1) {
				struct signalfd_siginfo si;

				while (read(s.sfd, &si, sizeof(si)) == sizeof(si)) {
					if (si.ssi_signo == SIGCHLD)
						reap(&s);
					/* from outside the sandbox only: the host asks us to stop */
					else if (ts_signal_from_outside(&si) &&
						 (si.ssi_signo == SIGTERM ||
						  si.ssi_signo == SIGINT || si.ssi_signo == SIGHUP))
						s.shutting_down = true;
				}
			} else if (map[k] == -2) {
				accept_all(&s);
			} else if (map[k] >= 0) {
				int ci = map[k];

				/* a message at a time; the next poll round serves the rest */
				for (int rounds = 0; rounds < 64 && s.conns[ci].fd >= 0; rounds++) {
					struct ts_ctl_msg m = { 0 };
					int r = ts_ctl_conn_read(&s.conns[ci].rx, s.conns[ci].fd,
								 &m);

					if (r == 0)
						break;
					if (r < 0) {
						close_conn(&s, ci);
						break;
					}
					handle(&s, ci, &m);
					ts_ctl_msg_free(&m);
				}
			} else {
				size_t pi = (size_t)(-3 - map[k]);

				if (pi < s.n_procs && s.procs[pi].out_fd >= 0)
					drain(&s.procs[pi]);
			}
		}
	}
	shutdown_all(&s);
	return 0;
}
