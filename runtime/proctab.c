/* SPDX-License-Identifier: Apache-2.0 */
#include "proctab.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "pty.h"
#include "syscall.h"
#include "util.h"

extern char **environ;

#define TS_MAX_ARGS 4096
#define TS_MAX_ENV 1024
#define TS_READ_CHUNK (32U << 10) /* envd's: 32 KiB of stdout/stderr per message */

/* A piece of output kept for late attachers. */
struct chunk {
	struct chunk *next;
	uint8_t stream;
	uint32_t len;
	uint64_t off; /* of its first byte in its stream */
	uint8_t data[];
};

/* A client attached to a process: OUTPUT (unless wait_only) and EXITED, with its request id. */
struct attacher {
	int conn;
	uint32_t req;
	bool wait_only;
};

/* Input accepted for a process: each request's OK goes when its last byte is written. */
struct input {
	struct input *next;
	int conn; /* -1: no reply (CLOSE_STDIN marker with close set) */
	uint32_t req;
	bool close; /* close stdin here */
	size_t len, off;
	uint8_t data[];
};

struct ts_proc {
	uint64_t id;
	pid_t pid;
	bool running, timed_out;
	int status;
	uint32_t flags;
	uid_t uid;
	long long started_ms, ended_ms;		 /* CLOCK_REALTIME */
	unsigned long long deadline, ended_mono; /* CLOCK_MONOTONIC; 0: none */
	/* config, for listings (bounded: TS_PROC_CONFIG_MAX) */
	char **argv, **env, *cwd, *tag;
	/* streams */
	int out_fd, err_fd, pty_fd, in_fd; /* -1: none; pty_fd serves output and input */
	uint64_t off[4];		   /* bytes produced, per TS_STREAM_* */
	struct chunk *bl_head, *bl_tail;
	size_t bl_bytes;
	struct input *in_head, *in_tail;
	size_t in_bytes;
	int log_fd;
	unsigned long long log_bytes;
	bool log_truncated;
	struct attacher att[TS_PROC_MAX_ATTACH];
	size_t n_att;
};

struct ts_proctab {
	struct ts_proctab_cfg cfg;
	struct ts_proctab_ops ops;
	uint64_t next_id;
	struct ts_proc procs[TS_PROC_MAX];
	size_t n_procs;	       /* procs[0..n_procs) are used */
	void *child_stack;     /* start_child's, mapped at the first spawn */
	unsigned set_user_env; /* bits of user_env_names made sandbox-wide by SETENV */
};

/* The variables a process gets from its user unless the sandbox sets them (build_env). */
static const char *const user_env_names[] = { "HOME", "USER", "LOGNAME" };

static void emit(struct ts_proctab *t, int conn, const struct ts_ctl_msg *m)
{
	t->ops.emit(t->ops.ctx, conn, m);
}

static void reply_error(struct ts_proctab *t, int conn, uint32_t id, int code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void reply_error(struct ts_proctab *t, int conn, uint32_t id, int code, const char *fmt, ...)
{
	struct ts_ctl_msg m = { 0 };
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ts_ctl_msg_init(&m, TS_CTL_ERROR, id);
	if (ts_ctl_put_u64(&m, TS_T_CODE, (uint64_t)(code < 0 ? -code : code)) == 0 &&
	    ts_ctl_put_str(&m, TS_T_MSG, buf) == 0)
		emit(t, conn, &m);
	ts_ctl_msg_free(&m);
}

static void reply_simple(struct ts_proctab *t, int conn, uint16_t type, uint32_t id)
{
	struct ts_ctl_msg m = { 0 };

	ts_ctl_msg_init(&m, type, id);
	emit(t, conn, &m);
}

static void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The record's output is done with: every pipe, the log. */
static void close_streams(struct ts_proc *p)
{
	if (p->pty_fd >= 0 && p->in_fd == p->pty_fd)
		p->in_fd = -1;
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
	close_fd(&p->pty_fd);
	close_fd(&p->in_fd);
	close_fd(&p->log_fd);
}

static void free_input(struct ts_proc *p)
{
	while (p->in_head) {
		struct input *in = p->in_head;

		p->in_head = in->next;
		free(in);
	}
	p->in_tail = NULL;
	p->in_bytes = 0;
}

static void drop_backlog(struct ts_proc *p)
{
	while (p->bl_head) {
		struct chunk *c = p->bl_head;

		p->bl_head = c->next;
		free(c);
	}
	p->bl_tail = NULL;
	p->bl_bytes = 0;
}

static void free_record(struct ts_proc *p)
{
	close_streams(p);
	free_input(p);
	drop_backlog(p);
	strv_free(p->argv);
	strv_free(p->env);
	free(p->cwd);
	free(p->tag);
	memset(p, 0, sizeof(*p));
}

struct ts_proctab *ts_proctab_get(const struct ts_proctab_cfg *cfg,
				  const struct ts_proctab_ops *ops)
{
	static struct ts_proctab t;

	t.cfg = *cfg;
	t.ops = *ops;
	t.next_id = cfg->first_id > 0 ? cfg->first_id - 1 : 0;
	return &t;
}

/* --- records --------------------------------------------------------------------- */

static struct ts_proc *by_id(struct ts_proctab *t, uint64_t id)
{
	for (size_t i = 0; i < t->n_procs; i++)
		if (t->procs[i].id == id)
			return &t->procs[i];
	return NULL;
}

/* The running process with that pid, else the latest record of it. */
static struct ts_proc *by_pid(struct ts_proctab *t, uint64_t pid)
{
	struct ts_proc *latest = NULL;

	for (size_t i = 0; i < t->n_procs; i++) {
		struct ts_proc *p = &t->procs[i];

		if ((uint64_t)p->pid != pid)
			continue;
		if (p->running)
			return p;
		if (!latest || p->id > latest->id)
			latest = p;
	}
	return latest;
}

static struct ts_proc *by_tag(struct ts_proctab *t, const char *tag)
{
	struct ts_proc *latest = NULL;

	for (size_t i = 0; i < t->n_procs; i++) {
		struct ts_proc *p = &t->procs[i];

		if (!p->tag || strcmp(p->tag, tag) != 0)
			continue;
		if (p->running)
			return p;
		if (!latest || p->id > latest->id)
			latest = p;
	}
	return latest;
}

/* The process a request names (PROC, PID or TAG); replies ESRCH itself when none. */
static struct ts_proc *selected(struct ts_proctab *t, int conn, const struct ts_ctl_msg *req)
{
	struct ts_proc *p = NULL;
	char tag[256];
	uint64_t v;

	if (ts_ctl_get_u64(req, TS_T_PROC, &v) == 0) {
		p = by_id(t, v);
		if (!p)
			reply_error(t, conn, req->id, ESRCH, "no process %llu",
				    (unsigned long long)v);
	} else if (ts_ctl_get_u64(req, TS_T_PID, &v) == 0) {
		p = by_pid(t, v);
		if (!p)
			reply_error(t, conn, req->id, ESRCH, "process with pid %llu not found",
				    (unsigned long long)v);
	} else if (ts_ctl_get_str(req, TS_T_TAG, tag, sizeof(tag)) == 0) {
		p = by_tag(t, tag);
		if (!p)
			reply_error(t, conn, req->id, ESRCH, "process with tag `%s` not found",
				    tag);
	} else {
		reply_error(t, conn, req->id, EINVAL, "no process named: want PROC, PID or TAG");
	}
	return p;
}

/* Room for a new record: drop finished ones that nobody waits on, oldest first — those
 * older than TS_PROC_KEEP_MS beyond TS_PROC_MAX_FINISHED, and any when the table is
 * full. */
static void trim(struct ts_proctab *t, bool need_slot)
{
	for (;;) {
		size_t finished = 0, oldest = t->n_procs;
		unsigned long long now = ts_now_ms();
		bool over;

		for (size_t i = 0; i < t->n_procs; i++) {
			const struct ts_proc *p = &t->procs[i];

			if (p->running)
				continue;
			finished++;
			if (oldest == t->n_procs || p->ended_mono < t->procs[oldest].ended_mono)
				oldest = i;
		}
		if (oldest == t->n_procs)
			return;
		over = finished > TS_PROC_MAX_FINISHED &&
		       now - t->procs[oldest].ended_mono >= TS_PROC_KEEP_MS;
		if (!over && !(need_slot && t->n_procs >= TS_PROC_MAX))
			return;
		free_record(&t->procs[oldest]);
		t->procs[oldest] = t->procs[--t->n_procs];
		memset(&t->procs[t->n_procs], 0, sizeof(t->procs[0]));
	}
}

/* --- output ------------------------------------------------------------------------ */

static void backlog_add(struct ts_proc *p, uint8_t stream, const uint8_t *data, uint32_t len)
{
	struct chunk *c = malloc(sizeof(*c) + len);

	if (!c)
		return; /* the backlog is best effort; live clients got the data */
	c->next = NULL;
	c->stream = stream;
	c->len = len;
	c->off = p->off[stream];
	memcpy(c->data, data, len);
	if (p->bl_tail)
		p->bl_tail->next = c;
	else
		p->bl_head = c;
	p->bl_tail = c;
	p->bl_bytes += len;
	while (p->bl_bytes > TS_PROC_BACKLOG && p->bl_head != p->bl_tail) {
		struct chunk *old = p->bl_head;

		p->bl_head = old->next;
		p->bl_bytes -= old->len;
		free(old);
	}
}

static void send_output(struct ts_proctab *t, const struct ts_proc *p, const struct attacher *a,
			uint8_t stream, uint64_t off, const uint8_t *data, uint32_t len)
{
	struct ts_ctl_msg m = { 0 };

	ts_ctl_msg_init(&m, TS_CTL_OUTPUT, a->req);
	if (ts_ctl_put_u64(&m, TS_T_PROC, p->id) == 0 &&
	    ts_ctl_put_u64(&m, TS_T_STREAM, stream) == 0 &&
	    ts_ctl_put_u64(&m, TS_T_OFFSET, off) == 0 && ts_ctl_put(&m, TS_T_DATA, data, len) == 0)
		emit(t, a->conn, &m);
	ts_ctl_msg_free(&m);
}

static void log_append(struct ts_proc *p, const uint8_t *buf, size_t n)
{
	static const char mark[] = "\n[toren-sandbox: log truncated at 64 MiB]\n";

	if (p->log_fd < 0 || p->log_truncated)
		return;
	if (p->log_bytes + n > TS_PROC_LOG_CAP) {
		ts_write_all(p->log_fd, mark, sizeof(mark) - 1);
		p->log_truncated = true;
		return;
	}
	if (ts_write_all(p->log_fd, buf, n) == 0)
		p->log_bytes += n;
}

/* Read what is there on one of p's output fds. Returns false at EOF/error (fd closed). */
static bool read_stream(struct ts_proctab *t, struct ts_proc *p, int *fd, uint8_t stream)
{
	uint8_t buf[TS_READ_CHUNK];
	ssize_t n = read(*fd, buf, stream == TS_STREAM_PTY ? 16384 : sizeof(buf));

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0) {
		/* EOF, or EIO on a pty whose slave is closed by all */
		if (fd == &p->pty_fd && p->in_fd == p->pty_fd)
			p->in_fd = -1;
		close_fd(fd);
		if (p->out_fd < 0 && p->err_fd < 0 && p->pty_fd < 0)
			close_fd(&p->log_fd);
		return false;
	}
	for (size_t i = 0; i < p->n_att; i++)
		if (!p->att[i].wait_only)
			send_output(t, p, &p->att[i], stream, p->off[stream], buf, (uint32_t)n);
	backlog_add(p, stream, buf, (uint32_t)n);
	p->off[stream] += (uint64_t)n;
	log_append(p, buf, (size_t)n);
	return true;
}

/* Every attached client under its queue's soft limit? (else the process waits) */
static bool clients_keep_up(const struct ts_proctab *t, const struct ts_proc *p)
{
	for (size_t i = 0; i < p->n_att; i++)
		if (!p->att[i].wait_only &&
		    t->ops.queued(t->ops.ctx, p->att[i].conn) > TS_PROC_QUEUE_SOFT)
			return false;
	return true;
}

/* --- spawning ---------------------------------------------------------------------- */

/* NAME=... in envp[0..n)? */
static ssize_t env_find(char **envp, size_t n, const char *name, size_t len)
{
	for (size_t k = 0; k < n; k++)
		if (envp[k] && !strncmp(envp[k], name, len) && envp[k][len] == '=')
			return (ssize_t)k;
	return -1;
}

static bool is_global(const struct ts_proctab *t, const char *name)
{
	for (size_t i = 0; i < sizeof(user_env_names) / sizeof(user_env_names[0]); i++)
		if ((t->set_user_env & (1U << i)) && !strcmp(user_env_names[i], name))
			return true;
	for (size_t i = 0; i < t->cfg.n_global_env; i++)
		if (!strcmp(t->cfg.global_env[i], name))
			return true;
	return false;
}

void ts_proctab_set_global(struct ts_proctab *t, const char *name)
{
	for (size_t i = 0; i < sizeof(user_env_names) / sizeof(user_env_names[0]); i++)
		if (!strcmp(user_env_names[i], name))
			t->set_user_env |= 1U << i;
}

/* NAME=value into envp (replacing), n counted. */
static int env_put(char **envp, size_t *n, size_t cap, char *entry)
{
	size_t len = (size_t)(strchr(entry, '=') - entry);
	ssize_t k = env_find(envp, *n, entry, len);

	if (k >= 0) {
		free(envp[k]);
		envp[k] = entry;
		return 0;
	}
	if (*n >= cap) {
		free(entry);
		return -E2BIG;
	}
	envp[(*n)++] = entry;
	return 0;
}

/*
 * The environment, lowest precedence first (E2B's envd): init's own (PATH, TERM, LANG, ...),
 * the HOME, USER and LOGNAME of the user the process runs as (init's own user too: its
 * environment need not have all three), the sandbox-wide variables (which init's
 * environment holds too, so they win over the user's defaults), then the request's own,
 * for this process only.
 */
static int build_env(const struct ts_proctab *t, uid_t as, char **req_env, size_t n_req,
		     char ***ret)
{
	const char *const *names = user_env_names;
	const char *vals[] = { ts_ids_home(as), ts_ids_name(as), ts_ids_name(as) };
	size_t nbase = 0, n = 0, cap;
	char **envp;
	int r = 0;

	while (environ[nbase])
		nbase++;
	cap = nbase + 3 + n_req + 1;
	envp = calloc(cap + 1, sizeof(char *));
	if (!envp)
		return -ENOMEM;
	for (size_t i = 0; i < nbase; i++)
		if (!(envp[n] = strdup(environ[i])) || (n++, false))
			r = -ENOMEM;
	for (int i = 0; i < 3 && r == 0; i++) {
		char *e;

		if (is_global(t, names[i]))
			continue;
		if (asprintf(&e, "%s=%s", names[i], vals[i]) < 0)
			r = -ENOMEM;
		else
			r = env_put(envp, &n, cap, e);
	}
	for (size_t i = 0; i < n_req && r == 0; i++) {
		char *e = strdup(req_env[i]);

		r = e ? env_put(envp, &n, cap, e) : -ENOMEM;
	}
	if (r < 0) {
		strv_free(envp);
		return r;
	}
	*ret = envp;
	return 0;
}

struct spawn_req {
	char **argv, **env, *cwd, *tag;
	size_t na, ne;
	uint64_t flags, timeout_ms, cols, rows;
	uid_t as;
};

static void spawn_req_free(struct spawn_req *s)
{
	strv_free(s->argv);
	strv_free(s->env);
	free(s->cwd);
	free(s->tag);
}

/* The request's fields, checked. 0 or -errno with a message in err. */
static int parse_spawn(struct ts_proctab *t, const struct ts_ctl_msg *req, struct spawn_req *s,
		       struct ts_error *err)
{
	size_t pos = 0, config = 0;
	uint64_t uid = t->cfg.ids->uid;
	const uint8_t *v;
	uint16_t tag;
	uint32_t len;
	int r;

	memset(s, 0, sizeof(*s));
	/* the vectors as long as this request needs (counted first, bounded below): a
	 * maximal one is large enough to be mapped and unmapped by malloc on every spawn */
	{
		size_t na = 0, ne = 0;

		while (ts_ctl_next(req, &pos, &tag, &v, &len) > 0) {
			na += tag == TS_T_ARG;
			ne += tag == TS_T_ENV;
		}
		pos = 0;
		s->argv = calloc((na < TS_MAX_ARGS ? na : TS_MAX_ARGS) + 1, sizeof(char *));
		s->env = calloc((ne < TS_MAX_ENV ? ne : TS_MAX_ENV) + 1, sizeof(char *));
	}
	if (!s->argv || !s->env)
		return ts_err(err, -ENOMEM, "out of memory");
	ts_ctl_get_u64(req, TS_T_FLAGS, &s->flags);
	ts_ctl_get_u64(req, TS_T_TIMEOUT_MS, &s->timeout_ms);
	s->cols = 80;
	s->rows = 24;
	ts_ctl_get_u64(req, TS_T_COLS, &s->cols);
	ts_ctl_get_u64(req, TS_T_ROWS, &s->rows);
	if (s->cols == 0 || s->cols > 65535 || s->rows == 0 || s->rows > 65535)
		return ts_err(err, -EINVAL, "bad pty size %llux%llu", (unsigned long long)s->cols,
			      (unsigned long long)s->rows);
	r = ts_ctl_get_u64(req, TS_T_UID, &uid);
	if (r < 0 && r != -ENOENT) /* never init's own ids on a garbled request */
		return ts_err(err, -EINVAL, "bad spawn request: malformed uid");
	if (r == 0) {
		char msg[256];

		if (ts_ids_check(t->cfg.ids, uid, msg, sizeof(msg)) < 0)
			return ts_err(err, -EPERM, "%s", msg);
	}
	s->as = (uid_t)uid;
	while ((r = ts_ctl_next(req, &pos, &tag, &v, &len)) > 0) {
		char *str;

		if (tag != TS_T_ARG && tag != TS_T_ENV && tag != TS_T_CWD && tag != TS_T_TAG)
			continue;
		if (memchr(v, '\0', len) || !(str = strndup((const char *)v, len)))
			return ts_err(err, -EINVAL, "bad spawn request: a NUL in a string");
		config += len;
		if (tag == TS_T_ARG) {
			if (s->na >= TS_MAX_ARGS) {
				free(str);
				return ts_err(err, -E2BIG, "more than %d arguments", TS_MAX_ARGS);
			}
			s->argv[s->na++] = str;
		} else if (tag == TS_T_ENV) {
			char *eq = strchr(str, '=');

			if (!eq || eq == str || s->ne >= TS_MAX_ENV) {
				free(str);
				return ts_err(err, -EINVAL, "bad variable in spawn request");
			}
			s->env[s->ne++] = str;
		} else if (tag == TS_T_CWD) {
			if (len == 0 || len >= 4096 || v[0] != '/') {
				free(str);
				return ts_err(err, -EINVAL, "cwd must be an absolute path");
			}
			free(s->cwd);
			s->cwd = str;
		} else {
			if (len == 0 || len > 255) {
				free(str);
				return ts_err(err, -EINVAL, "a tag is 1 to 255 bytes");
			}
			free(s->tag);
			s->tag = str;
		}
	}
	if (r < 0)
		return ts_err(err, -EINVAL, "bad spawn request");
	if (s->na == 0)
		return ts_err(err, -EINVAL, "spawn request without a program");
	(void)config;
	return 0;
}

/* What the child reports before it executes: which step failed, and its errno. */
struct child_failure {
	int step; /* 0 none (it executed), 1 cwd, 2 exec, 3 ids, 4 stdio */
	int err;
};

/* Everything the child needs, in the parent's frame: the child shares init's memory until
 * it executes, and reports a failure by writing fail here. */
struct child_args {
	const struct ts_proctab *t;
	const struct spawn_req *s;
	const int *stdio;
	int pty_slave;
	struct child_failure fail;
};

/* The child's stack: a vfork-style child must not run on the frames of the parent it
 * shares memory with. execvp's own buffers live here (a PATH entry plus the name, and
 * glibc's script fallback copies argv: TS_MAX_ARGS pointers), with room to spare. */
#define TS_CHILD_STACK ((size_t)(64U << 10) + TS_MAX_ARGS * sizeof(char *))

static int child_fail(struct child_args *a, int step, int e)
{
	a->fail.step = step;
	a->fail.err = e;
	_exit(127);
}

/*
 * The child, until it executes: it shares init's memory (CLONE_VM|CLONE_VFORK, init
 * suspended meanwhile), so it makes system calls only: no allocation, no stdio, no libc
 * lock, nothing written but its own stack, errno and a->fail. Init has no signal handler
 * (it reads signals from a signalfd, see init.c) that could run here on init's data.
 */
static int child_main(void *arg)
{
	struct child_args *a = arg;
	const struct ts_proctab *t = a->t;
	const struct spawn_req *s = a->s;
	int r;

	/* init's signal mask does not belong here. Its dispositions are the defaults (init
	 * catches nothing), so the mask is all there is to reset. */
	{
		sigset_t none;

		sigemptyset(&none);
		if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
			return child_fail(a, 4, errno);
	}
	/* a session of its own, never init's (spawn.c says why) */
	if (setsid() < 0)
		return child_fail(a, 4, errno);
	if (a->pty_slave >= 0) {
		if (ioctl(a->pty_slave, TIOCSCTTY, 0) < 0 || dup2(a->pty_slave, 0) < 0 ||
		    dup2(a->pty_slave, 1) < 0 || dup2(a->pty_slave, 2) < 0)
			return child_fail(a, 4, errno);
	} else {
		for (int i = 0; i < 3; i++)
			if (dup2(a->stdio[i], i) < 0)
				return child_fail(a, 4, errno);
	}
	/* nothing of init's beyond 0-2 follows: close, not close-on-exec, so that a failure
	 * to close is a failure to start */
	if (ts_close_range(3, ~0U, 0) < 0)
		return child_fail(a, 4, errno);
	/* prlimit64 itself: musl's setrlimit goes through __synccall, libc state */
	if (t->cfg.nofile.rlim_max &&
	    syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &t->cfg.nofile, NULL) < 0)
		return child_fail(a, 4, errno);
	/* init's capabilities (if any) end here, whoever the process runs as */
	if ((r = ts_ids_become(t->cfg.ids, s->as)) < 0)
		return child_fail(a, 3, -r);
	if (chdir(s->cwd ? s->cwd : ts_ids_home(s->as)) < 0)
		return child_fail(a, 1, errno);
	/* environ is the process's here (start_child set it for the call): execvp searches
	 * the process's PATH, as a shell would */
	execvp(s->argv[0], s->argv);
	return child_fail(a, 2, errno);
}

/*
 * Start the child and wait until it has executed or failed (CLONE_VFORK: no pipe, no
 * page-table copy, one wake-up). A failure before the exec comes back in *fail, the
 * child then already exited (127) and is to be reaped by the caller. Returns the pid or
 * -errno (the clone failed; nothing started).
 */
static pid_t start_child(struct ts_proctab *t, const struct spawn_req *s, char **envp,
			 const int stdio[3], int pty_slave, struct child_failure *fail)
{
	struct child_args a = { .t = t, .s = s, .stdio = stdio, .pty_slave = pty_slave };
	char **saved = environ;
	pid_t pid;

	if (!t->child_stack) {
		/* once, reused by every child (one at a time: init waits for each); a guard
		 * page below, so that an overflow faults instead of writing init's memory */
		void *m = mmap(NULL, TS_CHILD_STACK + 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);

		if (m == MAP_FAILED)
			return -errno;
		if (mprotect(m, 4096, PROT_NONE) < 0) {
			int e = errno;

			munmap(m, TS_CHILD_STACK + 4096);
			return -e;
		}
		t->child_stack = m;
	}
	/* The child's execvp reads environ; init's own is restored as soon as the child has
	 * executed (the parent runs again only then). Init has one thread. */
	environ = envp;
	pid = clone(child_main, (char *)t->child_stack + 4096 + TS_CHILD_STACK,
		    CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
	environ = saved;
	if (pid < 0)
		return -errno;
	*fail = a.fail;
	return pid;
}

/* Keep at most TS_PROC_CONFIG_MAX bytes of a string vector for listings. */
static char **keep_config(char **v, size_t n, size_t *budget)
{
	char **out = calloc(n + 1, sizeof(char *));
	size_t k = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(v[i]);

		if (len > *budget)
			break;
		*budget -= len;
		out[k] = strdup(v[i]);
		if (!out[k])
			break;
		k++;
	}
	return out;
}

static void attach(struct ts_proctab *t, struct ts_proc *p, int conn, uint32_t req, bool wait_only,
		   bool live);

void ts_proctab_spawn(struct ts_proctab *t, int conn, const struct ts_ctl_msg *req)
{
	struct spawn_req s;
	struct ts_error err = { 0 };
	struct ts_pty pty = { -1, -1 };
	int out[2] = { -1, -1 }, errp[2] = { -1, -1 }, in[2] = { -1, -1 };
	int devnull = -1, stdio[3], log_fd = -1;
	char **envp = NULL, logname[64];
	struct child_failure f = { 0 };
	struct ts_proc *p;
	pid_t pid;
	int r;

	r = parse_spawn(t, req, &s, &err);
	if (r < 0)
		goto fail;
	trim(t, true);
	if (t->n_procs >= TS_PROC_MAX) {
		r = ts_err(&err, -EAGAIN, "too many processes (%d)", TS_PROC_MAX);
		goto fail;
	}
	r = build_env(t, s.as, s.env, s.ne, &envp);
	if (r < 0) {
		ts_err(&err, r, "environment: %s", strerror(-r));
		goto fail;
	}
	if (s.flags & TS_SPAWN_PTY) {
		struct winsize ws = { .ws_row = (unsigned short)s.rows,
				      .ws_col = (unsigned short)s.cols };

		/* the slave belongs to whoever opens the master: the process's user */
		ts_ids_fs_as(t->cfg.ids, s.as);
		r = ts_pty_open(&pty, -1, &err);
		ts_ids_fs_as(t->cfg.ids, t->cfg.ids->uid);
		if (r < 0)
			goto fail;
		ioctl(pty.master, TIOCSWINSZ, &ws);
	} else {
		/* openat: musl's open adds an fcntl for O_CLOEXEC that the kernel does not need */
		devnull = openat(AT_FDCWD, "/dev/null", O_RDWR | O_CLOEXEC);
		if (devnull < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
		    ((s.flags & TS_SPAWN_STDIN) && pipe2(in, O_CLOEXEC) < 0)) {
			r = ts_err_errno(&err, -errno, "pipe");
			goto fail;
		}
		stdio[0] = in[0] >= 0 ? in[0] : devnull;
		stdio[1] = out[1];
		stdio[2] = errp[1];
	}
	if (s.flags & TS_SPAWN_LOG) {
		/* the log first: a background process whose output would be lost is refused */
		snprintf(logname, sizeof(logname), "%llu.log",
			 (unsigned long long)(t->next_id + 1));
		log_fd = openat(t->cfg.logs_fd, logname,
				O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (log_fd < 0) {
			r = ts_err_errno(&err, -errno, "create log `%s`", logname);
			goto fail;
		}
	}
	pid = start_child(t, &s, envp, stdio, pty.slave, &f);
	if (pid < 0) {
		r = ts_err_errno(&err, pid, "start the process (clone)");
		goto fail;
	}
	/* the child's ends are the child's now */
	close_fd(&out[1]);
	close_fd(&errp[1]);
	close_fd(&in[0]);
	close_fd(&pty.slave);
	close_fd(&devnull);
	if (f.step != 0) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		if (f.step == 1)
			r = ts_err(&err, -EINVAL,
				   "cwd '%s' does not exist or cannot be entered: %s",
				   s.cwd ? s.cwd : ts_ids_home(s.as), strerror(f.err));
		else if (f.step == 2)
			r = ts_err(&err, f.err == ENOENT ? -ENOENT : -EACCES, "`%s`: %s", s.argv[0],
				   strerror(f.err));
		else
			r = ts_err(&err, -f.err, "start the process: %s", strerror(f.err));
		goto fail;
	}
	p = &t->procs[t->n_procs++];
	memset(p, 0, sizeof(*p));
	p->id = ++t->next_id;
	p->pid = pid;
	p->running = true;
	p->flags = (uint32_t)s.flags;
	p->uid = s.as;
	p->started_ms = ts_realtime_ms();
	p->deadline = s.timeout_ms ? ts_now_ms() + s.timeout_ms : 0;
	{
		size_t budget = TS_PROC_CONFIG_MAX;

		p->argv = keep_config(s.argv, s.na, &budget);
		p->env = keep_config(s.env, s.ne, &budget);
	}
	p->cwd = s.cwd ? strdup(s.cwd) : NULL;
	p->tag = s.tag ? strdup(s.tag) : NULL;
	p->out_fd = out[0];
	p->err_fd = errp[0];
	p->pty_fd = pty.master;
	p->in_fd = pty.master >= 0 ? pty.master : in[1];
	p->log_fd = log_fd;
	out[0] = errp[0] = in[1] = pty.master = log_fd = -1;
	if (p->out_fd >= 0)
		fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
	if (p->err_fd >= 0)
		fcntl(p->err_fd, F_SETFL, O_NONBLOCK);
	if (p->pty_fd >= 0)
		fcntl(p->pty_fd, F_SETFL, O_NONBLOCK);
	if (p->in_fd >= 0)
		fcntl(p->in_fd, F_SETFL, O_NONBLOCK);
	{
		struct ts_ctl_msg m = { 0 };

		ts_ctl_msg_init(&m, TS_CTL_SPAWNED, req->id);
		if (ts_ctl_put_u64(&m, TS_T_PROC, p->id) == 0 &&
		    ts_ctl_put_u64(&m, TS_T_PID, (uint64_t)pid) == 0)
			emit(t, conn, &m);
		ts_ctl_msg_free(&m);
	}
	if (s.flags & TS_SPAWN_ATTACH)
		attach(t, p, conn, req->id, false, false);
	strv_free(envp);
	spawn_req_free(&s);
	return;
fail:
	reply_error(t, conn, req->id, err.code ? err.code : EIO, "%s", err.msg);
	close_fd(&out[0]);
	close_fd(&out[1]);
	close_fd(&errp[0]);
	close_fd(&errp[1]);
	close_fd(&in[0]);
	close_fd(&in[1]);
	close_fd(&pty.master);
	close_fd(&pty.slave);
	close_fd(&devnull);
	close_fd(&log_fd);
	strv_free(envp);
	spawn_req_free(&s);
}

/* --- attach, exit ------------------------------------------------------------------ */

static void send_exited(struct ts_proctab *t, const struct ts_proc *p, int conn, uint32_t req)
{
	struct ts_ctl_msg m = { 0 };

	ts_ctl_msg_init(&m, TS_CTL_EXITED, req);
	if (ts_ctl_put_u64(&m, TS_T_PROC, p->id) == 0 &&
	    ts_ctl_put_u64(&m, TS_T_PID, (uint64_t)p->pid) == 0 &&
	    ts_ctl_put_u64(&m, TS_T_STATUS, (uint64_t)p->status) == 0 &&
	    (!p->timed_out || ts_ctl_put_u64(&m, TS_T_TIMED_OUT, 1) == 0))
		emit(t, conn, &m);
	ts_ctl_msg_free(&m);
}

static void attach(struct ts_proctab *t, struct ts_proc *p, int conn, uint32_t req, bool wait_only,
		   bool live)
{
	/* live: E2B's Connect hears only what comes after it, never output seen before */
	if (!wait_only && !live) {
		/* from where the backlog starts: what is older is gone, and OFFSET says so */
		for (const struct chunk *c = p->bl_head; c; c = c->next) {
			struct attacher a = { conn, req, false };

			send_output(t, p, &a, c->stream, c->off, c->data, c->len);
		}
	}
	if (!p->running) {
		send_exited(t, p, conn, req);
		return;
	}
	for (size_t i = 0; i < p->n_att; i++)
		if (p->att[i].conn == conn && p->att[i].wait_only == wait_only) {
			p->att[i].req = req; /* attached again: the newer request */
			return;
		}
	if (p->n_att >= TS_PROC_MAX_ATTACH) {
		reply_error(t, conn, req, EAGAIN, "too many clients attached to process %llu",
			    (unsigned long long)p->id);
		return;
	}
	p->att[p->n_att++] = (struct attacher){ conn, req, wait_only };
}

static void detach(struct ts_proc *p, int conn)
{
	for (size_t i = 0; i < p->n_att;)
		if (p->att[i].conn == conn)
			p->att[i] = p->att[--p->n_att];
		else
			i++;
}

void ts_proctab_conn_gone(struct ts_proctab *t, int conn)
{
	for (size_t i = 0; i < t->n_procs; i++) {
		struct ts_proc *p = &t->procs[i];

		detach(p, conn);
		/* its pending input stays (it was accepted); only its replies go */
		for (struct input *in = p->in_head; in; in = in->next)
			if (in->conn == conn)
				in->conn = -1;
	}
}

/* Everything the process wrote before it ended, without waiting for writers that
 * outlived it: read until the pipes are empty now. */
static void drain(struct ts_proctab *t, struct ts_proc *p)
{
	for (int round = 0; round < 64; round++) {
		bool any = false;

		if (p->out_fd >= 0) {
			uint64_t before = p->off[TS_STREAM_STDOUT];

			if (read_stream(t, p, &p->out_fd, TS_STREAM_STDOUT))
				any |= p->off[TS_STREAM_STDOUT] != before;
		}
		if (p->err_fd >= 0) {
			uint64_t before = p->off[TS_STREAM_STDERR];

			if (read_stream(t, p, &p->err_fd, TS_STREAM_STDERR))
				any |= p->off[TS_STREAM_STDERR] != before;
		}
		if (p->pty_fd >= 0) {
			uint64_t before = p->off[TS_STREAM_PTY];

			if (read_stream(t, p, &p->pty_fd, TS_STREAM_PTY))
				any |= p->off[TS_STREAM_PTY] != before;
		}
		if (!any)
			break;
	}
}

static void ended(struct ts_proctab *t, struct ts_proc *p, int status)
{
	p->running = false;
	p->status = status;
	p->ended_ms = ts_realtime_ms();
	p->ended_mono = ts_now_ms();
	drain(t, p);
	/* Its group may have survivors (a background job it left): the group dies with its
	 * leader, as a kill of the process promises for the whole group. */
	kill(-p->pid, SIGKILL);
	for (size_t i = 0; i < p->n_att; i++)
		send_exited(t, p, p->att[i].conn, p->att[i].req);
	p->n_att = 0;
	/* nobody reads the output any more, nobody writes input */
	close_streams(p);
	for (struct input *in = p->in_head; in; in = in->next)
		if (in->conn >= 0 && !in->close)
			reply_error(t, in->conn, in->req, EPIPE, "process %llu has exited",
				    (unsigned long long)p->id);
	free_input(p);
	trim(t, false);
}

bool ts_proctab_reaped(struct ts_proctab *t, pid_t pid, int status)
{
	for (size_t i = 0; i < t->n_procs; i++) {
		struct ts_proc *p = &t->procs[i];

		if (p->running && p->pid == pid) {
			ended(t, p, status);
			return true;
		}
	}
	return false;
}

/* --- input ------------------------------------------------------------------------- */

/* Write queued input; OK each request whose data is all in the pipe. */
static void flush_input(struct ts_proctab *t, struct ts_proc *p)
{
	while (p->in_head && p->in_fd >= 0) {
		struct input *in = p->in_head;

		if (in->close) {
			if (p->in_fd != p->pty_fd)
				close_fd(&p->in_fd);
			else /* a pty has no end of input of its own: EOT, as a terminal would */
				(void)!write(p->in_fd, "\x04", 1);
		} else {
			while (in->off < in->len) {
				ssize_t n = write(p->in_fd, in->data + in->off, in->len - in->off);

				if (n < 0 && errno == EINTR)
					continue;
				if (n < 0 && errno == EAGAIN)
					return;
				if (n < 0) {
					/* the reader is gone: the rest of the input is too */
					if (in->conn >= 0)
						reply_error(t, in->conn, in->req, errno,
							    "stdin of process %llu: %s",
							    (unsigned long long)p->id,
							    strerror(errno));
					if (p->in_fd != p->pty_fd)
						close_fd(&p->in_fd);
					free_input(p);
					return;
				}
				in->off += (size_t)n;
			}
			if (in->conn >= 0)
				reply_simple(t, in->conn, TS_CTL_OK, in->req);
		}
		p->in_bytes -= in->len;
		p->in_head = in->next;
		if (!p->in_head)
			p->in_tail = NULL;
		free(in);
	}
}

static void queue_input(struct ts_proctab *t, struct ts_proc *p, int conn, uint32_t req,
			const uint8_t *data, size_t len, bool close)
{
	struct input *in;

	if (!p->running || p->in_fd < 0) {
		reply_error(t, conn, req, p->running ? EPIPE : ESRCH,
			    p->running ? "process %llu has no stdin open"
				       : "process %llu has exited",
			    (unsigned long long)p->id);
		return;
	}
	if (p->in_bytes + len > TS_PROC_STDIN_MAX) {
		reply_error(t, conn, req, EAGAIN, "stdin of process %llu is full",
			    (unsigned long long)p->id);
		return;
	}
	in = malloc(sizeof(*in) + len);
	if (!in) {
		reply_error(t, conn, req, ENOMEM, "out of memory");
		return;
	}
	*in = (struct input){ .conn = close ? -1 : conn, .req = req, .close = close, .len = len };
	memcpy(in->data, data, len);
	if (p->in_tail)
		p->in_tail->next = in;
	else
		p->in_head = in;
	p->in_tail = in;
	p->in_bytes += len;
	if (close)
		reply_simple(t, conn, TS_CTL_OK, req);
	flush_input(t, p);
}

/* --- requests ---------------------------------------------------------------------- */

static void put_config(struct ts_ctl_msg *m, const struct ts_proc *p)
{
	for (char **a = p->argv; a && *a; a++)
		ts_ctl_put_str(m, TS_T_ARG, *a);
	for (char **e = p->env; e && *e; e++)
		ts_ctl_put_str(m, TS_T_ENV, *e);
	if (p->cwd)
		ts_ctl_put_str(m, TS_T_CWD, p->cwd);
	if (p->tag)
		ts_ctl_put_str(m, TS_T_TAG, p->tag);
}

static void ps(struct ts_proctab *t, int conn, uint32_t req)
{
	for (size_t i = 0; i < t->n_procs; i++) {
		const struct ts_proc *p = &t->procs[i];
		struct ts_ctl_msg m = { 0 };

		ts_ctl_msg_init(&m, TS_CTL_PS_ENTRY, req);
		ts_ctl_put_u64(&m, TS_T_PROC, p->id);
		ts_ctl_put_u64(&m, TS_T_PID, (uint64_t)p->pid);
		ts_ctl_put_str(&m, TS_T_STATE, p->running ? "running" : "exited");
		ts_ctl_put_u64(&m, TS_T_STATUS, (uint64_t)p->status);
		ts_ctl_put_u64(&m, TS_T_FLAGS, p->flags);
		ts_ctl_put_u64(&m, TS_T_UID, (uint64_t)p->uid);
		ts_ctl_put_u64(&m, TS_T_STARTED, (uint64_t)p->started_ms);
		ts_ctl_put_u64(&m, TS_T_ENDED, (uint64_t)p->ended_ms);
		if (p->timed_out)
			ts_ctl_put_u64(&m, TS_T_TIMED_OUT, 1);
		put_config(&m, p);
		emit(t, conn, &m);
		ts_ctl_msg_free(&m);
	}
	reply_simple(t, conn, TS_CTL_END, req);
}

void ts_proctab_request(struct ts_proctab *t, int conn, const struct ts_ctl_msg *req)
{
	struct ts_proc *p;

	if (req->type == TS_CTL_PS) {
		ps(t, conn, req->id);
		return;
	}
	p = selected(t, conn, req);
	if (!p)
		return;
	switch (req->type) {
	case TS_CTL_ATTACH: {
		struct ts_ctl_msg m = { 0 };
		uint64_t flags = 0;

		ts_ctl_msg_init(&m, TS_CTL_ATTACHED, req->id);
		if (ts_ctl_put_u64(&m, TS_T_PROC, p->id) == 0 &&
		    ts_ctl_put_u64(&m, TS_T_PID, (uint64_t)p->pid) == 0 &&
		    ts_ctl_put_u64(&m, TS_T_FLAGS, p->flags) == 0) {
			put_config(&m, p);
			emit(t, conn, &m);
		}
		ts_ctl_msg_free(&m);
		ts_ctl_get_u64(req, TS_T_FLAGS, &flags);
		attach(t, p, conn, req->id, false, flags & TS_ATTACH_LIVE);
		break;
	}
	case TS_CTL_WAIT:
		attach(t, p, conn, req->id, true, false);
		break;
	case TS_CTL_DETACH:
		detach(p, conn);
		reply_simple(t, conn, TS_CTL_OK, req->id);
		break;
	case TS_CTL_INPUT: {
		const uint8_t *v = NULL;
		uint32_t len = 0;
		size_t pos = 0;
		uint16_t tag;

		while (ts_ctl_next(req, &pos, &tag, &v, &len) > 0 && tag != TS_T_DATA)
			;
		if (tag != TS_T_DATA) {
			reply_error(t, conn, req->id, EINVAL, "input without data");
			break;
		}
		queue_input(t, p, conn, req->id, v, len, false);
		break;
	}
	case TS_CTL_CLOSE_STDIN:
		queue_input(t, p, conn, req->id, NULL, 0, true);
		break;
	case TS_CTL_RESIZE: {
		uint64_t cols = 0, rows = 0;
		struct winsize ws;

		if (ts_ctl_get_u64(req, TS_T_COLS, &cols) < 0 ||
		    ts_ctl_get_u64(req, TS_T_ROWS, &rows) < 0 || !cols || !rows || cols > 65535 ||
		    rows > 65535) {
			reply_error(t, conn, req->id, EINVAL, "bad size");
			break;
		}
		if (p->pty_fd < 0) {
			reply_error(t, conn, req->id, ENOTTY, "process %llu has no pty",
				    (unsigned long long)p->id);
			break;
		}
		ws = (struct winsize){ .ws_row = (unsigned short)rows,
				       .ws_col = (unsigned short)cols };
		/* the kernel sends SIGWINCH to the pty's foreground group */
		if (ioctl(p->pty_fd, TIOCSWINSZ, &ws) < 0)
			reply_error(t, conn, req->id, errno, "resize: %s", strerror(errno));
		else
			reply_simple(t, conn, TS_CTL_OK, req->id);
		break;
	}
	case TS_CTL_SIGNAL: {
		uint64_t sig = 0;

		if (ts_ctl_get_u64(req, TS_T_SIGNAL, &sig) < 0 || sig < 1 || sig > 64) {
			reply_error(t, conn, req->id, EINVAL, "bad signal request");
			break;
		}
		if (!p->running) {
			reply_error(t, conn, req->id, ESRCH, "process %llu has exited",
				    (unsigned long long)p->id);
			break;
		}
		/* the whole process group: a job's children go with it; our own pid namespace
		 * and the record of a running child make the pid unambiguous */
		if (kill(-p->pid, (int)sig) < 0 && kill(p->pid, (int)sig) < 0)
			reply_error(t, conn, req->id, errno, "kill: %s", strerror(errno));
		else
			reply_simple(t, conn, TS_CTL_OK, req->id);
		break;
	}
	default:
		reply_error(t, conn, req->id, EOPNOTSUPP, "unexpected message type %u",
			    (unsigned)req->type);
	}
}

/* --- the poll loop's part ---------------------------------------------------------- */

/* map values: index * 4 + which (0 out, 1 err, 2 pty, 3 stdin) */
size_t ts_proctab_pollfds(struct ts_proctab *t, struct pollfd *pfd, int *map)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n_procs; i++) {
		struct ts_proc *p = &t->procs[i];
		bool out = clients_keep_up(t, p);
		bool in = p->in_head && p->in_fd >= 0;

		if (out && p->out_fd >= 0) {
			pfd[n] = (struct pollfd){ .fd = p->out_fd, .events = POLLIN };
			map[n++] = (int)i * 4;
		}
		if (out && p->err_fd >= 0) {
			pfd[n] = (struct pollfd){ .fd = p->err_fd, .events = POLLIN };
			map[n++] = (int)i * 4 + 1;
		}
		if (p->pty_fd >= 0 && (out || in)) {
			pfd[n] = (struct pollfd){ .fd = p->pty_fd,
						  .events = (short)((out ? POLLIN : 0) |
								    (in ? POLLOUT : 0)) };
			map[n++] = (int)i * 4 + 2;
		} else if (in && p->in_fd != p->pty_fd) {
			pfd[n] = (struct pollfd){ .fd = p->in_fd, .events = POLLOUT };
			map[n++] = (int)i * 4 + 3;
		}
	}
	return n;
}

void ts_proctab_ready(struct ts_proctab *t, int m, int fd, short revents)
{
	size_t i = (size_t)m / 4;
	struct ts_proc *p;

	if (i >= t->n_procs)
		return;
	p = &t->procs[i];
	/* a record that ended in this round may have moved: only its own fd counts */
	if (fd != (m % 4 == 0	? p->out_fd
		   : m % 4 == 1 ? p->err_fd
		   : m % 4 == 2 ? p->pty_fd
				: p->in_fd))
		return;
	switch (m % 4) {
	case 0:
		if (p->out_fd >= 0)
			read_stream(t, p, &p->out_fd, TS_STREAM_STDOUT);
		break;
	case 1:
		if (p->err_fd >= 0)
			read_stream(t, p, &p->err_fd, TS_STREAM_STDERR);
		break;
	case 2:
		if ((revents & POLLOUT) && p->in_head)
			flush_input(t, p);
		if ((revents & (POLLIN | POLLHUP | POLLERR)) && p->pty_fd >= 0)
			read_stream(t, p, &p->pty_fd, TS_STREAM_PTY);
		break;
	default:
		if (revents & (POLLERR | POLLHUP)) {
			/* nobody reads its stdin any more */
			for (struct input *in = p->in_head; in; in = in->next)
				if (in->conn >= 0 && !in->close)
					reply_error(t, in->conn, in->req, EPIPE,
						    "stdin of process %llu is closed",
						    (unsigned long long)p->id);
			free_input(p);
			close_fd(&p->in_fd);
		} else {
			flush_input(t, p);
		}
	}
}

int ts_proctab_tick(struct ts_proctab *t)
{
	unsigned long long now = ts_now_ms(), next = 0;

	for (size_t i = 0; i < t->n_procs; i++) {
		struct ts_proc *p = &t->procs[i];

		if (!p->running && p->bl_head) {
			/* a finished process's output is kept TS_PROC_KEEP_MS for a late attach;
			 * then only its end (an idle init gives the memory back) */
			unsigned long long until = p->ended_mono + TS_PROC_KEEP_MS;

			if (now >= until && p->n_att == 0)
				drop_backlog(p);
			else if (!next || until < next)
				next = until;
		}
		if (!p->running || !p->deadline)
			continue;
		if (now >= p->deadline) {
			/* its deadline: the whole group, reported as a timeout, not an exit */
			p->timed_out = true;
			p->deadline = 0;
			kill(-p->pid, SIGKILL);
			kill(p->pid, SIGKILL);
			continue;
		}
		if (!next || p->deadline < next)
			next = p->deadline;
	}
	trim(t, false);
	return next ? (int)(next - now) + 1 : -1;
}

size_t ts_proctab_attached(const struct ts_proctab *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n_procs; i++)
		n += t->procs[i].running && t->procs[i].n_att > 0;
	return n;
}

void ts_proctab_close_all(struct ts_proctab *t)
{
	for (size_t i = 0; i < t->n_procs; i++)
		close_streams(&t->procs[i]);
}

void ts_proctab_kill_all(struct ts_proctab *t, int sig)
{
	for (size_t i = 0; i < t->n_procs; i++)
		if (t->procs[i].running)
			kill(-t->procs[i].pid, sig);
}
