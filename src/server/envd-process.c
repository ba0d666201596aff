/* SPDX-License-Identifier: Apache-2.0 */
/*
 * envd's process.Process service on the backend interface: Start and Connect stream a
 * process's events (a ts_cmd handle's fd in serve's loop, one event per step, each a
 * StartResponse envelope), the unary calls are one backend request each. What envd does
 * and the SDKs rely on, beyond the shapes: the start event goes out at once; keepalives
 * after Keepalive-Ping-Interval seconds of silence; at Connect-Timeout-Ms the stream ends
 * with deadline_exceeded (never an end event) and a started process is killed; a client
 * that goes away never takes the process with it; a sandbox that dies mid-stream drops
 * the connection without an end-stream frame.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "connect.h"
#include "envd.h"
#include "server.h"

#define PROC_MAX_ARGS 4096 /* argv entries of one Start */
#define PROC_MAX_ENVS 4096
#define PROC_KEEPALIVE_S 90 /* envd's default Keepalive-Ping-Interval */
#define PROC_KEEPALIVE_MAX_S 86400

/* --- requests ------------------------------------------------------------------------- */

/* A process named by a ProcessSelector, with the pid as given (for the messages). */
struct proc_ref {
	struct ts_proc_sel sel;
	long long pid;
};

/* {"pid":N} or {"tag":"..."}. -EINVAL with why otherwise. */
static int get_selector(json_t *msg, struct proc_ref *p, char *why, size_t size)
{
	json_t *sel = ts_pj_get(msg, "process", NULL), *v;

	memset(p, 0, sizeof(*p));
	if (!json_is_object(sel)) {
		snprintf(why, size, "a process selector is required");
		return -EINVAL;
	}
	v = ts_pj_get(sel, "pid", NULL);
	if (v) {
		if (ts_pj_int(v, &p->pid) < 0 || p->pid < 0 || p->pid > UINT32_MAX) {
			snprintf(why, size, "invalid value for uint32 field pid");
			return -EINVAL;
		}
		/* pid 0 (the field's default) and pids no kernel gives are looked up by envd
		 * and not found: -1 names nothing here either */
		p->sel.pid = p->pid > 0 && p->pid <= 4194304 ? (pid_t)p->pid : -1;
		return 0;
	}
	v = ts_pj_get(sel, "tag", NULL);
	if (v) {
		if (!json_is_string(v)) {
			snprintf(why, size, "invalid value for string field tag");
			return -EINVAL;
		}
		p->sel.tag = json_string_value(v);
		return 0;
	}
	snprintf(why, size, "invalid process selector: neither pid nor tag");
	return -EINVAL;
}

static void not_found_msg(const struct proc_ref *p, char *buf, size_t size)
{
	if (p->sel.tag)
		snprintf(buf, size, "process with tag %s not found", p->sel.tag);
	else
		snprintf(buf, size, "process with pid %lld not found", p->pid);
}

/* Is the process p names running (envd's table holds only running ones), and on a pty?
 * 0, -ENOENT with err, or another -errno with err. */
static int find_running(struct ts_sb *sb, const struct proc_ref *p, bool *pty, struct ts_error *err)
{
	struct ts_proc_entry *v = NULL;
	size_t n = 0;
	int r;

	if (!p->sel.tag && p->sel.pid < 0)
		return ts_err(err, -ENOENT, "no such process");
	r = ts_cmd_list(sb, &v, &n, err);
	if (r < 0)
		return r;
	r = -ENOENT;
	for (size_t i = 0; i < n && r == -ENOENT; i++) {
		if (!v[i].running)
			continue;
		if (p->sel.tag ? v[i].tag && !strcmp(v[i].tag, p->sel.tag)
			       : v[i].pid == p->sel.pid) {
			*pty = v[i].pty;
			r = 0;
		}
	}
	ts_proc_entries_free(v, n);
	return r == -ENOENT ? ts_err(err, -ENOENT, "no such process") : r;
}

/* The sandbox of an RPC and its user; the error reply is sent when it fails. */
static int rpc_target(struct ts_srv *srv, struct ts_req *req, bool streaming,
		      struct ts_envd_target *t)
{
	return ts_envd_target(srv, req, TS_ENVD_TOKEN, t) < 0 ? -1 : 0;
}

/* A backend failure as envd words it, for a call that names a process. */
static void reply_proc_error(struct ts_req *req, bool streaming, const struct proc_ref *p,
			     const struct ts_error *err)
{
	enum ts_be_code code = ts_be_code(err);
	char msg[600];

	if (code == TS_BE_NOT_FOUND)
		not_found_msg(p, msg, sizeof(msg));
	else
		snprintf(msg, sizeof(msg), "%s", err->msg);
	if (streaming)
		ts_connect_stream_error(req, ts_connect_code_name(code), "%s", msg);
	else
		ts_connect_reply_error(req, ts_connect_code_name(code), "%s", msg);
}

/* --- the stream of a process ------------------------------------------------------------ */

struct proc_stream {
	struct ts_srv *srv;
	struct ts_srv_sb *e; /* a reference: its `gone` says the sandbox was killed */
	struct ts_stream *s;
	struct ts_cmd *c;
	struct ts_loop_fd *w;
	struct ts_loop_timer *keepalive, *deadline;
	long long keepalive_ms;
	bool paused; /* the client is behind: no step until on_drain */
	bool done;   /* ended or aborted: only on_close is still to come */
	bool in_step;
};

/* Stop producing: nothing of ours runs for this stream any more but on_close. */
static void stream_quiesce(struct proc_stream *st)
{
	st->done = true;
	ts_loop_del_fd(st->w);
	st->w = NULL;
	ts_loop_del_timer(st->keepalive);
	st->keepalive = NULL;
	ts_loop_del_timer(st->deadline);
	st->deadline = NULL;
	/* the process runs on (E2B's disconnect): only our view of it goes */
	ts_cmd_close(st->c);
	st->c = NULL;
}

static void stream_on_close(void *userdata, bool client_gone)
{
	struct proc_stream *st = userdata;

	stream_quiesce(st);
	ts_srv_sb_unref(st->e);
	free(st);
}

/* End with the end-stream frame ({} for code_name NULL). st may be gone after. */
__attribute__((format(printf, 3, 4))) static void
stream_finish(struct proc_stream *st, const char *code_name, const char *fmt, ...)
{
	struct ts_stream *s = st->s;
	char msg[600] = "";
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
	}
	stream_quiesce(st);
	if (code_name)
		ts_connect_end(s, code_name, "%s", msg);
	else
		ts_connect_end(s, NULL, NULL);
}

/* The sandbox went away under the stream: drop the connection without an end-stream
 * frame, so the SDK probes /health and reports a killed sandbox (delta §2.3). */
static void stream_drop(struct proc_stream *st)
{
	struct ts_stream *s = st->s;

	stream_quiesce(st);
	ts_stream_abort(s);
}

static void keepalive_arm(struct proc_stream *st)
{
	if (st->keepalive)
		ts_loop_timer_set(st->keepalive, ts_loop_now(st->srv->loop) + st->keepalive_ms);
}

static int send_event(struct proc_stream *st, json_t *event)
{
	int r = ts_connect_send(st->s, json_pack("{s:o}", "event", event));

	keepalive_arm(st);
	return r;
}

/* Go's syscall.Signal.String() on Linux, which os.ProcessState.String() prints. */
static const char *const go_signal_names[] = {
	[SIGHUP] = "hangup",
	[SIGINT] = "interrupt",
	[SIGQUIT] = "quit",
	[SIGILL] = "illegal instruction",
	[SIGTRAP] = "trace/breakpoint trap",
	[SIGABRT] = "aborted",
	[SIGBUS] = "bus error",
	[SIGFPE] = "floating point exception",
	[SIGKILL] = "killed",
	[SIGUSR1] = "user defined signal 1",
	[SIGSEGV] = "segmentation fault",
	[SIGUSR2] = "user defined signal 2",
	[SIGPIPE] = "broken pipe",
	[SIGALRM] = "alarm clock",
	[SIGTERM] = "terminated",
	[SIGSTKFLT] = "stack fault",
	[SIGCHLD] = "child exited",
	[SIGCONT] = "continued",
	[SIGSTOP] = "stopped (signal)",
	[SIGTSTP] = "stopped",
	[SIGTTIN] = "stopped (tty input)",
	[SIGTTOU] = "stopped (tty output)",
	[SIGURG] = "urgent I/O condition",
	[SIGXCPU] = "CPU time limit exceeded",
	[SIGXFSZ] = "file size limit exceeded",
	[SIGVTALRM] = "virtual timer expired",
	[SIGPROF] = "profiling timer expired",
	[SIGWINCH] = "window changed",
	[SIGIO] = "I/O possible",
	[SIGPWR] = "power failure",
	[SIGSYS] = "bad system call",
};

/* The end event as envd fills it from Go's os.ProcessState: exitCode (-1 after a signal,
 * omitted when 0), exited, status, and error only when the exit was not clean. */
static json_t *end_event(const struct ts_cmd_event *ev)
{
	json_t *end = json_object();
	char status[64];

	if (!end)
		return NULL;
	if (ev->exit_code < 0 && ev->signal > 0) {
		if ((size_t)ev->signal < ELEMENTSOF(go_signal_names) && go_signal_names[ev->signal])
			snprintf(status, sizeof(status), "signal: %s", go_signal_names[ev->signal]);
		else
			snprintf(status, sizeof(status), "signal: signal %d", ev->signal);
		json_object_set_new(end, "exitCode", json_integer(-1));
	} else {
		snprintf(status, sizeof(status), "exit status %d", ev->exit_code);
		if (ev->exit_code)
			json_object_set_new(end, "exitCode", json_integer(ev->exit_code));
		json_object_set_new(end, "exited", json_true());
	}
	json_object_set_new(end, "status", json_string(status));
	if (ev->exit_code)
		json_object_set_new(end, "error", json_string(status));
	return json_pack("{s:o}", "end", end);
}

static void stream_step(struct proc_stream *st);

static void on_cmd_fd(void *userdata, short revents)
{
	stream_step(userdata);
}

static void on_drain(void *userdata)
{
	struct proc_stream *st = userdata;

	if (st->done || !st->paused)
		return;
	st->paused = false;
	stream_step(st);
}

/* Forward every event that is ready, until the client is behind or nothing is left. */
static void stream_step(struct proc_stream *st)
{
	struct ts_error err = { 0 };
	struct ts_cmd_event ev;
	const char *key;
	json_t *j;
	int r;

	/* on_drain can run from inside a write of ours */
	if (st->done || st->in_step)
		return;
	if (st->e->gone) {
		stream_drop(st);
		return;
	}
	st->in_step = true;
	for (;;) {
		if (ts_stream_pending(st->s) > TS_HTTP_STREAM_HIGH) {
			st->paused = true;
			break;
		}
		r = ts_cmd_step(st->c, &ev, &err);
		if (r == 0)
			break;
		if (r < 0) {
			st->in_step = false;
			/* the sandbox's connection broke: it died or was killed */
			if (ts_be_code(&err) == TS_BE_UNAVAILABLE)
				stream_drop(st);
			else
				stream_finish(st, ts_connect_code_name(ts_be_code(&err)), "%s",
					      err.msg);
			return;
		}
		switch (ev.type) {
		case TS_CMD_EV_START:
			j = json_pack("{s:{s:i}}", "start", "pid", (int)ev.pid);
			break;
		case TS_CMD_EV_STDOUT:
		case TS_CMD_EV_STDERR:
		case TS_CMD_EV_PTY:
			key = ev.type == TS_CMD_EV_STDOUT   ? "stdout"
			      : ev.type == TS_CMD_EV_STDERR ? "stderr"
							    : "pty";
			j = json_pack("{s:{s:o}}", "data", key, ts_pj_bytes(ev.data, ev.len));
			break;
		case TS_CMD_EV_END:
			st->in_step = false;
			/* killed at the deadline: connect-go's own deadline came first in envd,
			 * and the SDK wants it, not an end event (delta §2.2) */
			if (ev.timed_out) {
				stream_finish(st, "deadline_exceeded", "context deadline exceeded");
				return;
			}
			j = end_event(&ev);
			if (!j || send_event(st, j) < 0) {
				stream_drop(st);
				return;
			}
			stream_finish(st, NULL, NULL);
			return;
		default:
			continue;
		}
		if (!j || send_event(st, j) < 0) {
			st->in_step = false;
			stream_drop(st);
			return;
		}
	}
	st->in_step = false;
	ts_loop_mod_fd(st->w, st->paused ? 0 : ts_cmd_events(st->c));
}

static void on_keepalive(void *userdata)
{
	struct proc_stream *st = userdata;

	if (st->done)
		return;
	if (st->e->gone) {
		stream_drop(st);
		return;
	}
	/* a client that is behind has bytes to read: it needs no ping */
	if (!st->paused && send_event(st, json_pack("{s:{}}", "keepalive")) < 0) {
		stream_drop(st);
		return;
	}
	keepalive_arm(st);
}

static void on_deadline(void *userdata)
{
	struct proc_stream *st = userdata;

	if (!st->done)
		stream_finish(st, "deadline_exceeded", "context deadline exceeded");
}

/* Keepalive-Ping-Interval in seconds, as envd reads it (strconv.Atoi; else 90). */
static long long keepalive_ms(struct ts_req *req)
{
	const char *h = ts_req_header(req, "Keepalive-Ping-Interval");
	char *end;
	long v;

	if (!h || !*h)
		return PROC_KEEPALIVE_S * 1000LL;
	errno = 0;
	v = strtol(h, &end, 10);
	if (errno || *end || v <= 0)
		return PROC_KEEPALIVE_S * 1000LL;
	if (v > PROC_KEEPALIVE_MAX_S)
		v = PROC_KEEPALIVE_MAX_S;
	return v * 1000LL;
}

/* Stream c's events to req's client; c is taken (closed on failure). */
static void stream_run(struct ts_srv *srv, struct ts_req *req, struct ts_envd_target *t,
		       struct ts_cmd *c, long long timeout_ms)
{
	struct proc_stream *st = calloc(1, sizeof(*st));
	struct ts_error err = { 0 };
	long long now = ts_loop_now(srv->loop);

	if (!st) {
		ts_cmd_close(c);
		ts_connect_stream_error(req, "internal", "out of memory");
		return;
	}
	st->srv = srv;
	st->c = c;
	st->e = ts_srv_sb_ref(t->e);
	st->keepalive_ms = keepalive_ms(req);
	st->s = ts_connect_stream(req, stream_on_close, st, &err);
	if (!st->s) {
		ts_cmd_close(c);
		ts_srv_sb_unref(st->e);
		free(st);
		ts_connect_stream_error(req, "internal", "%s", err.msg);
		return;
	}
	ts_stream_on_drain(st->s, on_drain);
	st->w = ts_loop_add_fd(srv->loop, ts_cmd_fd(c), ts_cmd_events(c), on_cmd_fd, st);
	st->keepalive = ts_loop_add_timer(srv->loop, now + st->keepalive_ms, on_keepalive, st);
	if (timeout_ms > 0)
		st->deadline = ts_loop_add_timer(srv->loop, now + timeout_ms, on_deadline, st);
	if (!st->w || !st->keepalive || (timeout_ms > 0 && !st->deadline)) {
		stream_finish(st, "internal", "cannot watch the process");
		return;
	}
	/* the start event is ready without any I/O: out with the headers, at once (the SDK
	 * gives up on a stream whose start does not come within its request timeout) */
	stream_step(st);
}

/* --- Start ----------------------------------------------------------------------------- */

struct start_req {
	struct ts_cmd_opts o;
	char **argv;
	struct ts_kv *envs;
	char *cwd; /* resolved */
	char user_buf[64];
};

static void start_req_clear(struct start_req *s)
{
	free(s->argv);
	free(s->envs);
	free(s->cwd);
}

/* envd's cwd: `~` expanded, a relative path taken from the user's home (the default
 * user is E2B's `user`). */
static int resolve_cwd(const char *cwd, const char *user, char **ret)
{
	char home[128];
	int r;

	if (user && !strcmp(user, "root"))
		snprintf(home, sizeof(home), "/root");
	else
		snprintf(home, sizeof(home), "/home/%s", user ? user : "user");
	if (cwd[0] == '/')
		r = (*ret = strdup(cwd)) ? 0 : -1;
	else if (!strcmp(cwd, "~"))
		r = (*ret = strdup(home)) ? 0 : -1;
	else if (!strncmp(cwd, "~/", 2))
		r = asprintf(ret, "%s/%s", home, cwd + 2);
	else
		r = asprintf(ret, "%s/%s", home, cwd);
	if (r < 0) {
		*ret = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* StartRequest into s->o. -EINVAL with why for a bad one. */
static int parse_start(json_t *msg, const char *user, struct start_req *s, char *why, size_t size)
{
	json_t *proc = ts_pj_get(msg, "process", NULL), *v, *m;
	const char *k;
	size_t i, n;
	long long cols = 0, rows = 0;

	if (!json_is_object(proc) || !json_is_string(ts_pj_get(proc, "cmd", NULL)) ||
	    !*json_string_value(ts_pj_get(proc, "cmd", NULL))) {
		snprintf(why, size, "a process config with a cmd is required");
		return -EINVAL;
	}
	v = ts_pj_get(proc, "args", NULL);
	if (v && !json_is_array(v)) {
		snprintf(why, size, "invalid value for repeated string field args");
		return -EINVAL;
	}
	n = v ? json_array_size(v) : 0;
	if (n >= PROC_MAX_ARGS) {
		snprintf(why, size, "at most %d arguments", PROC_MAX_ARGS - 1);
		return -EINVAL;
	}
	s->argv = calloc(n + 2, sizeof(char *));
	if (!s->argv)
		return -ENOMEM;
	s->argv[0] = (char *)json_string_value(ts_pj_get(proc, "cmd", NULL));
	json_array_foreach(v, i, m) {
		if (!json_is_string(m)) {
			snprintf(why, size, "invalid value for repeated string field args");
			return -EINVAL;
		}
		s->argv[i + 1] = (char *)json_string_value(m);
	}
	s->o.argv = s->argv;

	v = ts_pj_get(proc, "envs", NULL);
	if (v && !json_is_object(v)) {
		snprintf(why, size, "invalid value for map field envs");
		return -EINVAL;
	}
	n = v ? json_object_size(v) : 0;
	if (n > PROC_MAX_ENVS) {
		snprintf(why, size, "at most %d variables", PROC_MAX_ENVS);
		return -EINVAL;
	}
	s->envs = calloc(n ? n : 1, sizeof(*s->envs));
	if (!s->envs)
		return -ENOMEM;
	json_object_foreach(v, k, m) {
		if (!json_is_string(m)) {
			snprintf(why, size, "invalid value for map field envs");
			return -EINVAL;
		}
		s->envs[s->o.n_envs].key = k;
		s->envs[s->o.n_envs++].value = json_string_value(m);
	}
	s->o.envs = s->envs;

	v = ts_pj_get(proc, "cwd", NULL);
	if (v) {
		if (!json_is_string(v)) {
			snprintf(why, size, "invalid value for string field cwd");
			return -EINVAL;
		}
		if (*json_string_value(v)) {
			if (resolve_cwd(json_string_value(v), user, &s->cwd) < 0)
				return -ENOMEM;
			s->o.cwd = s->cwd;
		}
	}

	v = ts_pj_get(msg, "tag", NULL);
	if (v) {
		if (!json_is_string(v)) {
			snprintf(why, size, "invalid value for string field tag");
			return -EINVAL;
		}
		if (*json_string_value(v))
			s->o.tag = json_string_value(v);
	}

	v = ts_pj_get(msg, "pty", NULL);
	if (v) {
		json_t *sz = json_is_object(v) ? ts_pj_get(v, "size", NULL) : NULL;

		if (!json_is_object(v) || (sz && !json_is_object(sz)) ||
		    (sz && ts_pj_get(sz, "cols", NULL) &&
		     ts_pj_int(ts_pj_get(sz, "cols", NULL), &cols) < 0) ||
		    (sz && ts_pj_get(sz, "rows", NULL) &&
		     ts_pj_int(ts_pj_get(sz, "rows", NULL), &rows) < 0) ||
		    cols < 0 || rows < 0 || cols > 65535 || rows > 65535) {
			snprintf(why, size, "invalid pty size");
			return -EINVAL;
		}
		s->o.pty = true;
		s->o.cols = (unsigned)cols;
		s->o.rows = (unsigned)rows;
	}

	/* stdin: a pipe when true, and when absent (clients older than the field); a pty
	 * process takes its input through the pty */
	v = ts_pj_get(msg, "stdin", NULL);
	if (v && !json_is_boolean(v)) {
		snprintf(why, size, "invalid value for bool field stdin");
		return -EINVAL;
	}
	s->o.stdin_open = !s->o.pty && (!v || json_is_true(v));
	s->o.user = user;
	return 0;
}

static void handle_start(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	_cleanup_(json_decrefp) json_t *msg = NULL;
	struct start_req s = { 0 };
	struct ts_envd_target t;
	struct ts_error err = { 0 };
	struct ts_cmd *c = NULL;
	long long timeout_ms;
	char why[256];
	bool bad;
	int r;

	if (rpc_target(srv, req, true, &t) < 0)
		return;
	msg = ts_connect_request(req, true);
	if (!msg)
		return;
	timeout_ms = ts_connect_timeout_ms(req);
	s.o.user = ts_envd_user(req, s.user_buf, sizeof(s.user_buf), &bad);
	if (bad) {
		ts_connect_stream_error(req, "unauthenticated", "invalid authorization header");
		return;
	}
	r = parse_start(msg, s.o.user, &s, why, sizeof(why));
	if (r < 0) {
		start_req_clear(&s);
		ts_connect_stream_error(req, r == -EINVAL ? "invalid_argument" : "internal", "%s",
					r == -EINVAL ? why : "out of memory");
		return;
	}
	/* a name the sandbox does not know is envd's failed user lookup; a user it knows
	 * but cannot run as (no root in a one-id namespace) is the backend's refusal */
	r = s.o.user ? ts_sb_check_user(t.e->sb, s.o.user, &err) : 0;
	if (r < 0) {
		if (r == -EINVAL)
			ts_connect_stream_error(req, "unauthenticated", "invalid username: '%s'",
						s.o.user);
		else
			ts_connect_stream_error(req, ts_connect_code_name(ts_be_code(&err)), "%s",
						err.msg);
		start_req_clear(&s);
		return;
	}
	/* envd kills the process at the call's deadline (its process context has the same
	 * timeout); the backend's own timer does it here, and its end comes as timed_out */
	if (timeout_ms > 0)
		s.o.timeout_ms = (unsigned long long)timeout_ms;
	r = ts_cmd_start(t.e->sb, &s.o, &c, NULL, NULL, &err);
	if (r < 0) {
		if (s.o.cwd && r == -EINVAL && strstr(err.msg, "cwd '"))
			ts_connect_stream_error(req, "invalid_argument", "cwd '%s' does not exist",
						s.o.cwd);
		else if (r == -ENOENT || r == -EACCES)
			ts_connect_stream_error(req, "internal", "error starting process: %s",
						err.msg);
		else
			ts_connect_stream_error(req, ts_connect_code_name(ts_be_code(&err)), "%s",
						err.msg);
		start_req_clear(&s);
		return;
	}
	start_req_clear(&s);
	stream_run(srv, req, &t, c, timeout_ms);
}

/* --- Connect --------------------------------------------------------------------------- */

static void handle_connect(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	_cleanup_(json_decrefp) json_t *msg = NULL;
	struct ts_envd_target t;
	struct ts_error err = { 0 };
	struct proc_ref sel;
	struct ts_cmd *c = NULL;
	char why[256];

	if (rpc_target(srv, req, true, &t) < 0)
		return;
	msg = ts_connect_request(req, true);
	if (!msg)
		return;
	if (get_selector(msg, &sel, why, sizeof(why)) < 0) {
		ts_connect_stream_error(req, "invalid_argument", "%s", why);
		return;
	}
	if (!sel.sel.tag && sel.sel.pid < 0) {
		ts_connect_stream_error(req, "not_found", "process with pid %lld not found",
					sel.pid);
		return;
	}
	/* envd forks the process's event channels: a Connect hears what comes after it,
	 * never output a client before it saw */
	sel.sel.live = true;
	if (ts_cmd_connect(t.e->sb, &sel.sel, &c, &err) < 0) {
		reply_proc_error(req, true, &sel, &err);
		return;
	}
	/* Connect's deadline ends the stream only: the process is not this call's */
	stream_run(srv, req, &t, c, ts_connect_timeout_ms(req));
}

/* --- unary calls ------------------------------------------------------------------------ */

static void handle_list(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	_cleanup_(json_decrefp) json_t *msg = NULL;
	struct ts_proc_entry *v = NULL;
	struct ts_envd_target t;
	struct ts_error err = { 0 };
	json_t *procs, *res;
	size_t n = 0;

	if (rpc_target(srv, req, false, &t) < 0)
		return;
	msg = ts_connect_request(req, false);
	if (!msg)
		return;
	if (ts_cmd_list(t.e->sb, &v, &n, &err) < 0) {
		ts_connect_reply_be_error(req, &err);
		return;
	}
	res = json_object();
	procs = json_array();
	for (size_t i = 0; i < n && res && procs; i++) {
		json_t *config = json_object(), *args = json_array(), *envs = json_object(), *p;

		if (!v[i].running || !config || !args || !envs) {
			json_decref(config);
			json_decref(args);
			json_decref(envs);
			continue;
		}
		/* ProtoJSON: empty lists and maps, and unset optionals, are left out */
		json_object_set_new(config, "cmd",
				    json_string(v[i].argv && v[i].argv[0] ? v[i].argv[0] : ""));
		for (size_t a = 1; v[i].argv && v[i].argv[0] && v[i].argv[a]; a++)
			json_array_append_new(args, json_string(v[i].argv[a]));
		if (json_array_size(args))
			json_object_set(config, "args", args);
		for (size_t e = 0; v[i].envs && v[i].envs[e]; e++) {
			char *eq = strchr(v[i].envs[e], '=');

			if (eq) {
				*eq = '\0';
				json_object_set_new(envs, v[i].envs[e], json_string(eq + 1));
			}
		}
		if (json_object_size(envs))
			json_object_set(config, "envs", envs);
		if (v[i].cwd)
			json_object_set_new(config, "cwd", json_string(v[i].cwd));
		json_decref(args);
		json_decref(envs);
		p = json_pack("{s:o,s:I}", "config", config, "pid", (json_int_t)v[i].pid);
		if (p && v[i].tag)
			json_object_set_new(p, "tag", json_string(v[i].tag));
		json_array_append_new(procs, p);
	}
	ts_proc_entries_free(v, n);
	if (!res || !procs) {
		json_decref(res);
		json_decref(procs);
		ts_connect_reply_error(req, "internal", "out of memory");
		return;
	}
	if (json_array_size(procs))
		json_object_set(res, "processes", procs);
	json_decref(procs);
	ts_connect_reply(req, res);
}

/* The signal of a SendSignalRequest: SIGNAL_SIGKILL (9) and SIGNAL_SIGTERM (15) are the
 * enum's values; another name reads as unspecified (0), a number as itself. */
static int get_signal(json_t *msg, long long *ret, char *name, size_t size)
{
	json_t *v = ts_pj_get(msg, "signal", NULL);

	*ret = 0;
	snprintf(name, size, "SIGNAL_UNSPECIFIED");
	if (!v)
		return 0;
	if (json_is_string(v)) {
		const char *s = json_string_value(v);

		if (!strcmp(s, "SIGNAL_SIGKILL"))
			*ret = SIGKILL;
		else if (!strcmp(s, "SIGNAL_SIGTERM"))
			*ret = SIGTERM;
		else if (ts_pj_int(v, ret) < 0)
			*ret = 0;
	} else if (ts_pj_int(v, ret) < 0 || *ret < INT32_MIN || *ret > INT32_MAX) {
		return -EINVAL;
	}
	if (*ret == SIGKILL)
		snprintf(name, size, "SIGNAL_SIGKILL");
	else if (*ret == SIGTERM)
		snprintf(name, size, "SIGNAL_SIGTERM");
	else if (*ret)
		snprintf(name, size, "%lld", *ret);
	return 0;
}

/* The common start of the unary calls on one process: target, message, selector. */
static int unary_proc(struct ts_srv *srv, struct ts_req *req, struct ts_envd_target *t,
		      json_t **msg, struct proc_ref *sel)
{
	char why[256];

	if (rpc_target(srv, req, false, t) < 0)
		return -1;
	*msg = ts_connect_request(req, false);
	if (!*msg)
		return -1;
	if (get_selector(*msg, sel, why, sizeof(why)) < 0) {
		ts_connect_reply_error(req, "invalid_argument", "%s", why);
		return -1;
	}
	if (!sel->sel.tag && sel->sel.pid < 0) {
		ts_connect_reply_error(req, "not_found", "process with pid %lld not found",
				       sel->pid);
		return -1;
	}
	return 0;
}

static void handle_send_signal(void *ctx, struct ts_req *req)
{
	_cleanup_(json_decrefp) json_t *msg = NULL;
	struct ts_envd_target t;
	struct ts_error err = { 0 };
	struct proc_ref sel;
	bool pty = false;
	long long sig;
	char name[32];
	int r;

	if (unary_proc(ctx, req, &t, &msg, &sel) < 0)
		return;
	if (get_signal(msg, &sig, name, sizeof(name)) < 0) {
		ts_connect_reply_error(req, "invalid_argument",
				       "invalid value for enum field signal");
		return;
	}
	if (sig != SIGKILL && sig != SIGTERM) {
		/* envd looks the process up first: an unknown one is not_found whatever
		 * the signal */
		r = find_running(t.e->sb, &sel, &pty, &err);
		if (r == 0)
			ts_connect_reply_error(req, "unimplemented", "invalid signal: %s", name);
		else
			reply_proc_error(req, false, &sel, &err);
		return;
	}
	if (ts_cmd_signal(t.e->sb, &sel.sel, (int)sig, &err) < 0) {
		reply_proc_error(req, false, &sel, &err);
		return;
	}
	ts_connect_reply(req, json_object());
}

static void handle_send_input(void *ctx, struct ts_req *req)
{
	_cleanup_(json_decrefp) json_t *msg = NULL;
	_cleanup_free_ uint8_t *data = NULL;
	struct ts_envd_target t;
	struct ts_error err = { 0 };
	struct proc_ref sel;
	bool pty = false;
	json_t *input, *in_stdin, *in_pty;
	size_t len = 0;
	int r;

	if (unary_proc(ctx, req, &t, &msg, &sel) < 0)
		return;
	input = ts_pj_get(msg, "input", NULL);
	in_stdin = json_is_object(input) ? ts_pj_get(input, "stdin", NULL) : NULL;
	in_pty = json_is_object(input) ? ts_pj_get(input, "pty", NULL) : NULL;
	if (input && !json_is_object(input)) {
		ts_connect_reply_error(req, "invalid_argument", "invalid value for field input");
		return;
	}
	if (in_stdin && in_pty) {
		ts_connect_reply_error(req, "invalid_argument",
				       "input: more than one field of the oneof set");
		return;
	}
	if ((in_stdin || in_pty) && ts_pj_bytes_decode(in_stdin ? in_stdin : in_pty, &data, &len)) {
		ts_connect_reply_error(req, "invalid_argument", "invalid value for bytes field %s",
				       in_stdin ? "stdin" : "pty");
		return;
	}
	/* the process first (envd: not_found before anything), then whether it has what
	 * the input is for: our backend would write either into whichever it has */
	r = find_running(t.e->sb, &sel, &pty, &err);
	if (r < 0) {
		reply_proc_error(req, false, &sel, &err);
		return;
	}
	if (!in_stdin && !in_pty) {
		ts_connect_reply_error(req, "unimplemented", "invalid input type <nil>");
		return;
	}
	if (in_stdin && pty) {
		ts_connect_reply_error(req, "internal",
				       "error writing to stdin: stdin not enabled or closed");
		return;
	}
	if (in_pty && !pty) {
		ts_connect_reply_error(req, "internal",
				       "error writing to tty: tty not assigned to process");
		return;
	}
	if (len && ts_cmd_send_stdin(t.e->sb, &sel.sel, data, len, &err) < 0) {
		if (err.code == EPIPE)
			ts_connect_reply_error(req, "internal", "error writing to %s: %s",
					       in_stdin ? "stdin" : "tty",
					       in_stdin ? "stdin not enabled or closed"
							: "tty not assigned to process");
		else
			reply_proc_error(req, false, &sel, &err);
		return;
	}
	ts_connect_reply(req, json_object());
}

static void handle_close_stdin(void *ctx, struct ts_req *req)
{
	_cleanup_(json_decrefp) json_t *msg = NULL;
	struct ts_envd_target t;
	struct ts_error err = { 0 };
	struct proc_ref sel;
	bool pty = false;

	if (unary_proc(ctx, req, &t, &msg, &sel) < 0)
		return;
	if (find_running(t.e->sb, &sel, &pty, &err) < 0) {
		reply_proc_error(req, false, &sel, &err);
		return;
	}
	/* a pty process has no stdin of its own: closing ours would hang up its terminal */
	if (pty) {
		ts_connect_reply_error(req, "internal",
				       "error closing stdin: stdin not enabled or closed");
		return;
	}
	if (ts_cmd_close_stdin(t.e->sb, &sel.sel, &err) < 0) {
		if (err.code == EPIPE)
			ts_connect_reply_error(req, "internal",
					       "error closing stdin: stdin not enabled or closed");
		else
			reply_proc_error(req, false, &sel, &err);
		return;
	}
	ts_connect_reply(req, json_object());
}

static void handle_update(void *ctx, struct ts_req *req)
{
	_cleanup_(json_decrefp) json_t *msg = NULL;
	struct ts_envd_target t;
	struct ts_error err = { 0 };
	struct proc_ref sel;
	json_t *pty, *size;
	long long cols = 0, rows = 0;

	if (unary_proc(ctx, req, &t, &msg, &sel) < 0)
		return;
	pty = ts_pj_get(msg, "pty", NULL);
	if (!pty) {
		/* nothing to update: envd still answers once it found the process */
		bool on_pty = false;

		if (find_running(t.e->sb, &sel, &on_pty, &err) < 0) {
			reply_proc_error(req, false, &sel, &err);
			return;
		}
		ts_connect_reply(req, json_object());
		return;
	}
	size = json_is_object(pty) ? ts_pj_get(pty, "size", NULL) : NULL;
	if (!json_is_object(pty) || (size && !json_is_object(size)) ||
	    (size && ts_pj_get(size, "cols", NULL) &&
	     ts_pj_int(ts_pj_get(size, "cols", NULL), &cols) < 0) ||
	    (size && ts_pj_get(size, "rows", NULL) &&
	     ts_pj_int(ts_pj_get(size, "rows", NULL), &rows) < 0) ||
	    cols < 0 || rows < 0 || cols > 65535 || rows > 65535) {
		ts_connect_reply_error(req, "invalid_argument", "invalid pty size");
		return;
	}
	if (ts_cmd_resize(t.e->sb, &sel.sel, (unsigned)cols, (unsigned)rows, &err) < 0) {
		if (err.code == ENOTTY)
			ts_connect_reply_error(req, "internal",
					       "error resizing tty: tty not assigned to process");
		else
			reply_proc_error(req, false, &sel, &err);
		return;
	}
	ts_connect_reply(req, json_object());
}

/* A client-streaming call: connect-go answers it as a stream, with the error in the
 * end-stream frame. The SDKs never use it. */
static void handle_stream_input(void *ctx, struct ts_req *req)
{
	struct ts_envd_target t;

	if (rpc_target(ctx, req, true, &t) < 0)
		return;
	ts_connect_stream_error(req, "unimplemented",
				"process.Process.StreamInput is not implemented");
}

/* Start's envelope can be as large as Connect allows; SendInput carries base64 input. */
#define ENVELOPE_BODY_MAX (TS_CONNECT_ENVELOPE_MAX + 5)

const struct ts_route ts_envd_process_routes[] = {
	{ NULL, "/process.Process/Start", handle_start, NULL, ENVELOPE_BODY_MAX },
	{ NULL, "/process.Process/Connect", handle_connect, NULL, 0 },
	{ NULL, "/process.Process/List", handle_list, NULL, 0 },
	{ NULL, "/process.Process/SendSignal", handle_send_signal, NULL, 0 },
	{ NULL, "/process.Process/SendInput", handle_send_input, NULL, ENVELOPE_BODY_MAX },
	{ NULL, "/process.Process/CloseStdin", handle_close_stdin, NULL, 0 },
	{ NULL, "/process.Process/Update", handle_update, NULL, 0 },
	{ NULL, "/process.Process/StreamInput", handle_stream_input, NULL, 0 },
	{ 0 },
};
