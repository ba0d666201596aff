/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The local backend's processes: each stream is a control connection of its own to the
 * sandbox's init (SPAWN with ATTACH, or ATTACH), each request on a process one call on a
 * fresh connection. What init sends is checked before use: init runs inside the sandbox.
 */
#include "local.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cleanup.h"
#include "util.h"

#define TS_LOCAL_MAX_PROCS 4096

struct local_cmd {
	struct ts_ctl_client *c;
	struct local *l; /* for the connection when the stream is done (the backend outlives
			  * its handles) */
	char id[64];	 /* the sandbox's */
	bool ended;	 /* EXITED seen: the connection is attached to nothing any more */
	uint64_t proc;
	uint32_t req; /* the SPAWN or ATTACH: OUTPUT and EXITED carry its id */
	bool start_pending;
	struct ts_ctl_msg cur; /* the message the last event's data points into */
	size_t input_pending;  /* bytes of INPUT sent, not yet OK */
	uint32_t input_ids[64];
	size_t input_lens[64];
	size_t n_inputs;
};

static struct local_cmd *lc(const struct ts_cmd *c)
{
	return c->impl;
}

static int put_sel(struct ts_ctl_msg *m, const struct ts_proc_sel *p)
{
	if (p->tag)
		return ts_ctl_put_str(m, TS_T_TAG, p->tag);
	if (p->pid > 0)
		return ts_ctl_put_u64(m, TS_T_PID, (uint64_t)p->pid);
	return ts_ctl_put_u64(m, TS_T_PROC, p->proc);
}

static int build_spawn(struct ts_ctl_msg *m, const struct ts_cmd_opts *o, struct ts_error *err)
{
	uint64_t flags = 0;
	long uid;
	int r = ts_local_uid(o->user, &uid, err);

	if (r < 0)
		return r;
	ts_ctl_msg_init(m, TS_CTL_SPAWN, 0);
	for (char **a = o->argv; *a && r == 0; a++)
		r = ts_ctl_put_str(m, TS_T_ARG, *a);
	for (size_t i = 0; i < o->n_envs && r == 0; i++) {
		char *e;

		if (!o->envs[i].key || !ts_env_name_valid(o->envs[i].key))
			return ts_err(err, -EINVAL, "bad variable name `%.64s`",
				      o->envs[i].key ? o->envs[i].key : "");
		if (asprintf(&e, "%s=%s", o->envs[i].key,
			     o->envs[i].value ? o->envs[i].value : "") < 0)
			return ts_err(err, -ENOMEM, "out of memory");
		r = ts_ctl_put_str(m, TS_T_ENV, e);
		free(e);
	}
	if (o->cwd && r == 0) {
		if (o->cwd[0] != '/')
			return ts_err(err, -EINVAL, "cwd `%.128s` is not absolute", o->cwd);
		r = ts_ctl_put_str(m, TS_T_CWD, o->cwd);
	}
	if (o->tag && r == 0)
		r = ts_ctl_put_str(m, TS_T_TAG, o->tag);
	if (uid >= 0 && r == 0)
		r = ts_ctl_put_u64(m, TS_T_UID, (uint64_t)uid);
	if (o->timeout_ms && r == 0)
		r = ts_ctl_put_u64(m, TS_T_TIMEOUT_MS, o->timeout_ms);
	if (o->pty) {
		flags |= TS_SPAWN_PTY;
		if (r == 0 && o->cols)
			r = ts_ctl_put_u64(m, TS_T_COLS, o->cols);
		if (r == 0 && o->rows)
			r = ts_ctl_put_u64(m, TS_T_ROWS, o->rows);
	}
	if (o->stdin_open)
		flags |= TS_SPAWN_STDIN;
	if (o->log)
		flags |= TS_SPAWN_LOG;
	if (!o->detach)
		flags |= TS_SPAWN_ATTACH;
	if (r == 0)
		r = ts_ctl_put_u64(m, TS_T_FLAGS, flags);
	if (r < 0)
		return ts_err(err, r,
			      "command line too large: arguments and variables must fit in one "
			      "%u KiB control message",
			      TS_CTL_MAX_PAYLOAD / 1024);
	return 0;
}

/* The reply's PROC and PID, checked. */
static int get_ids(const struct ts_ctl_msg *m, uint64_t *proc, pid_t *pid, struct ts_error *err)
{
	uint64_t p = 0, v = 0;

	if (ts_ctl_get_u64(m, TS_T_PROC, &p) < 0 || ts_ctl_get_u64(m, TS_T_PID, &v) < 0 || !v ||
	    v > 4194304)
		return ts_err(err, -EPROTO, "bad answer from the sandbox: no process or pid");
	*proc = p;
	*pid = (pid_t)v;
	return 0;
}

/*
 * m (its id set here) on a process connection of sb, waiting for reply_type: the spare if
 * there is one, a new connection when the spare turns out to be gone. *conn is the
 * connection used (the caller's to keep or give back), also on error (NULL when none).
 */
static int proc_request(struct ts_sb *sb, struct ts_ctl_msg *m, uint16_t reply_type,
			struct ts_ctl_msg *reply, struct ts_ctl_client **conn, struct ts_error *err)
{
	bool reused;
	int r = ts_local_proc_conn(sb, conn, &reused, err);

	if (r < 0)
		return r;
	r = ts_ctl_client_call(*conn, m, reply_type, reply, err);
	if (r < 0 && reused && ts_local_conn_gone(r)) {
		/* the spare's init is gone: once more on a new connection, which says why */
		ts_ctl_client_free(*conn);
		*conn = NULL;
		ts_err_clear(err);
		r = ts_local_connect(sb, conn, err);
		if (r == 0)
			r = ts_ctl_client_call(*conn, m, reply_type, reply, err);
	}
	return r;
}

int ts_local_cmd_start(struct ts_sb *sb, const struct ts_cmd_opts *o, struct ts_cmd *c, pid_t *pid,
		       uint64_t *proc, struct ts_error *err)
{
	_cleanup_free_ struct local_cmd *l = calloc(1, sizeof(*l));
	struct ts_ctl_msg m = { 0 }, reply = { 0 };
	int r;

	if (!l)
		return ts_err(err, -ENOMEM, "out of memory");
	l->l = ((struct local_sb *)sb->impl)->l;
	snprintf(l->id, sizeof(l->id), "%s", ts_sb_id(sb));
	r = build_spawn(&m, o, err);
	if (r == 0)
		r = proc_request(sb, &m, TS_CTL_SPAWNED, &reply, &l->c, err);
	ts_ctl_msg_free(&m);
	if (r == 0)
		r = get_ids(&reply, &l->proc, pid, err);
	ts_ctl_msg_free(&reply);
	if (r < 0) {
		/* a refusal (no such program, cwd) leaves the connection as good as it was */
		ts_local_proc_conn_done(l->l, l->id, l->c, r != -EPROTO);
		return r;
	}
	if (o->detach) {
		/* nothing is attached to a background process's connection */
		ts_local_proc_conn_done(l->l, l->id, TAKE_PTR(l->c), true);
		*proc = l->proc;
		return 0;
	}
	*proc = l->proc;
	l->req = m.id;
	l->start_pending = true;
	c->impl = TAKE_PTR(l);
	return 0;
}

int ts_local_cmd_connect(struct ts_sb *sb, const struct ts_proc_sel *p, struct ts_cmd *c,
			 struct ts_error *err)
{
	_cleanup_free_ struct local_cmd *l = calloc(1, sizeof(*l));
	struct ts_ctl_msg m = { 0 }, reply = { 0 };
	pid_t got;
	int r;

	if (!l)
		return ts_err(err, -ENOMEM, "out of memory");
	l->l = ((struct local_sb *)sb->impl)->l;
	snprintf(l->id, sizeof(l->id), "%s", ts_sb_id(sb));
	ts_ctl_msg_init(&m, TS_CTL_ATTACH, 0);
	r = put_sel(&m, p);
	if (r == 0 && p->live)
		r = ts_ctl_put_u64(&m, TS_T_FLAGS, TS_ATTACH_LIVE);
	if (r == 0)
		r = proc_request(sb, &m, TS_CTL_ATTACHED, &reply, &l->c, err);
	ts_ctl_msg_free(&m);
	if (r == 0)
		r = get_ids(&reply, &l->proc, &got, err);
	ts_ctl_msg_free(&reply);
	if (r < 0) {
		ts_local_proc_conn_done(l->l, l->id, l->c, r != -EPROTO);
		return r;
	}
	c->pid = got;
	l->req = m.id;
	l->start_pending = true;
	c->impl = TAKE_PTR(l);
	return 0;
}

int ts_local_cmd_fd(const struct ts_cmd *c)
{
	return lc(c)->c->fd;
}

short ts_local_cmd_events(const struct ts_cmd *c)
{
	return ts_ctl_client_events(lc(c)->c);
}

/* An OK or ERROR for one of our INPUT requests. */
static bool input_answered(struct local_cmd *l, uint32_t id)
{
	for (size_t i = 0; i < l->n_inputs; i++)
		if (l->input_ids[i] == id) {
			l->input_pending -= l->input_lens[i];
			l->input_ids[i] = l->input_ids[--l->n_inputs];
			l->input_lens[i] = l->input_lens[l->n_inputs];
			return true;
		}
	return false;
}

int ts_local_cmd_step(struct ts_cmd *c, struct ts_cmd_event *ev, struct ts_error *err)
{
	struct local_cmd *l = lc(c);

	memset(ev, 0, sizeof(*ev));
	ts_ctl_msg_free(&l->cur);
	if (l->start_pending) {
		l->start_pending = false;
		ev->type = TS_CMD_EV_START;
		ev->pid = c->pid;
		return 1;
	}
	for (int rounds = 0; rounds < 64; rounds++) {
		struct ts_ctl_msg m = { 0 };
		int r = ts_ctl_client_flush(l->c);

		if (r < 0)
			return ts_err_errno(err, r, "the sandbox's connection");
		r = ts_ctl_client_read(l->c, &m);
		if (r == 0)
			return 0;
		if (r == -ECONNRESET)
			return ts_err(err, -ECONNRESET,
				      "the sandbox went away while the process ran");
		if (r < 0)
			return ts_err_errno(err, r, "the sandbox's answer");
		if ((m.type == TS_CTL_OK || m.type == TS_CTL_ERROR) && input_answered(l, m.id)) {
			ts_ctl_msg_free(&m);
			continue;
		}
		if (m.id != l->req || (m.type != TS_CTL_OUTPUT && m.type != TS_CTL_EXITED)) {
			ts_ctl_msg_free(&m); /* the answer to a signal or resize of ours */
			continue;
		}
		if (m.type == TS_CTL_OUTPUT) {
			uint64_t stream = 0, off = 0;
			const uint8_t *v = NULL;
			uint32_t len = 0;
			size_t pos = 0;
			uint16_t tag;

			while (ts_ctl_next(&m, &pos, &tag, &v, &len) > 0 && tag != TS_T_DATA)
				;
			if (tag != TS_T_DATA || ts_ctl_get_u64(&m, TS_T_STREAM, &stream) < 0 ||
			    stream < TS_STREAM_STDOUT || stream > TS_STREAM_PTY) {
				ts_ctl_msg_free(&m);
				return ts_err(err, -EPROTO, "bad output message from the sandbox");
			}
			ts_ctl_get_u64(&m, TS_T_OFFSET, &off);
			ev->type = stream == TS_STREAM_STDOUT	? TS_CMD_EV_STDOUT
				   : stream == TS_STREAM_STDERR ? TS_CMD_EV_STDERR
								: TS_CMD_EV_PTY;
			ev->pid = c->pid;
			ev->data = v;
			ev->len = len;
			ev->offset = off;
			l->cur = m; /* the data stays valid until the next step */
			return 1;
		} else {
			uint64_t st = 0, timed_out = 0;

			if (ts_ctl_get_u64(&m, TS_T_STATUS, &st) < 0 || st > 0xffff) {
				ts_ctl_msg_free(&m);
				return ts_err(err, -EPROTO, "bad exit message from the sandbox");
			}
			ts_ctl_get_u64(&m, TS_T_TIMED_OUT, &timed_out);
			ts_ctl_msg_free(&m);
			l->ended = true;
			ev->type = TS_CMD_EV_END;
			ev->pid = c->pid;
			ev->timed_out = timed_out == 1;
			if (WIFEXITED((int)st)) {
				ev->exit_code = WEXITSTATUS((int)st);
			} else {
				ev->exit_code = -1;
				ev->signal = WIFSIGNALED((int)st) ? WTERMSIG((int)st) : 0;
			}
			return 1;
		}
	}
	return 0;
}

void ts_local_cmd_close(struct ts_cmd *c)
{
	struct local_cmd *l = lc(c);

	if (!l)
		return;
	ts_ctl_msg_free(&l->cur);
	/* Closing the connection detaches it, and the process runs on. After its end the
	 * connection is attached to nothing: the next request may use it. */
	ts_local_proc_conn_done(l->l, l->id, l->c, l->ended && l->n_inputs == 0);
	free(l);
}

int ts_local_cmd_input(struct ts_cmd *c, const void *data, size_t len, bool close,
		       struct ts_error *err)
{
	struct local_cmd *l = lc(c);
	struct ts_ctl_msg m = { 0 };
	int r;

	if (!close && l->n_inputs >= sizeof(l->input_ids) / sizeof(l->input_ids[0]))
		return ts_err(err, -EAGAIN, "too much input in flight");
	if (len > TS_CTL_CHUNK)
		return ts_err(err, -E2BIG, "at most %u bytes of input at a time", TS_CTL_CHUNK);
	ts_ctl_msg_init(&m, close ? TS_CTL_CLOSE_STDIN : TS_CTL_INPUT, ts_ctl_client_id(l->c));
	r = ts_ctl_put_u64(&m, TS_T_PROC, l->proc);
	if (r == 0 && !close)
		r = ts_ctl_put(&m, TS_T_DATA, data, len);
	if (r == 0)
		r = ts_ctl_client_send(l->c, &m);
	if (r == 0 && !close) {
		l->input_ids[l->n_inputs] = m.id;
		l->input_lens[l->n_inputs++] = len;
		l->input_pending += len;
	}
	ts_ctl_msg_free(&m);
	return r < 0 ? ts_err_errno(err, r, "send input") : 0;
}

size_t ts_local_cmd_input_pending(const struct ts_cmd *c)
{
	return lc(c)->input_pending;
}

static int self_request(struct ts_cmd *c, uint16_t type, uint64_t a, uint64_t b,
			struct ts_error *err)
{
	struct local_cmd *l = lc(c);
	struct ts_ctl_msg m = { 0 };
	int r;

	ts_ctl_msg_init(&m, type, ts_ctl_client_id(l->c));
	r = ts_ctl_put_u64(&m, TS_T_PROC, l->proc);
	if (r == 0 && type == TS_CTL_SIGNAL)
		r = ts_ctl_put_u64(&m, TS_T_SIGNAL, a);
	if (r == 0 && type == TS_CTL_RESIZE)
		r = ts_ctl_put_u64(&m, TS_T_COLS, a) | ts_ctl_put_u64(&m, TS_T_ROWS, b);
	if (r == 0)
		r = ts_ctl_client_send(l->c, &m);
	ts_ctl_msg_free(&m);
	return r < 0 ? ts_err_errno(err, r, "send to the sandbox") : 0;
}

int ts_local_cmd_signal_self(struct ts_cmd *c, int sig, struct ts_error *err)
{
	return self_request(c, TS_CTL_SIGNAL, (uint64_t)sig, 0, err);
}

int ts_local_cmd_resize_self(struct ts_cmd *c, unsigned cols, unsigned rows, struct ts_error *err)
{
	return self_request(c, TS_CTL_RESIZE, cols, rows, err);
}

/* One request naming a process, on a connection of its own; expects OK. */
static int proc_call(struct ts_sb *sb, uint16_t type, const struct ts_proc_sel *p,
		     int (*fill)(struct ts_ctl_msg *m, const void *arg), const void *arg,
		     struct ts_error *err)
{
	struct ts_ctl_client *c = NULL;
	_cleanup_(ts_ctl_msg_freep) struct ts_ctl_msg m = { 0 }, reply = { 0 };
	int r;

	ts_ctl_msg_init(&m, type, 0);
	r = put_sel(&m, p);
	if (r == 0 && fill)
		r = fill(&m, arg);
	if (r < 0)
		return ts_err(err, r, "request too large");
	r = proc_request(sb, &m, TS_CTL_OK, &reply, &c, err);
	ts_local_proc_conn_done(((struct local_sb *)sb->impl)->l, ts_sb_id(sb), c,
				r == 0 || (r != -EPROTO && !ts_local_conn_gone(r)));
	return r;
}

static int fill_signal(struct ts_ctl_msg *m, const void *arg)
{
	return ts_ctl_put_u64(m, TS_T_SIGNAL, (uint64_t) * (const int *)arg);
}

int ts_local_cmd_signal(struct ts_sb *sb, const struct ts_proc_sel *p, int sig,
			struct ts_error *err)
{
	return proc_call(sb, TS_CTL_SIGNAL, p, fill_signal, &sig, err);
}

struct data_arg {
	const void *data;
	size_t len;
};

static int fill_data(struct ts_ctl_msg *m, const void *arg)
{
	const struct data_arg *d = arg;

	return ts_ctl_put(m, TS_T_DATA, d->data, d->len);
}

int ts_local_cmd_send_stdin(struct ts_sb *sb, const struct ts_proc_sel *p, const void *data,
			    size_t len, bool close, struct ts_error *err)
{
	struct data_arg d = { data, len };
	size_t off = 0;
	int r = 0;

	if (close)
		return proc_call(sb, TS_CTL_CLOSE_STDIN, p, NULL, NULL, err);
	/* in chunks a control message takes; each OK says it is in the pipe */
	do {
		d.data = (const uint8_t *)data + off;
		d.len = len - off > TS_CTL_CHUNK ? TS_CTL_CHUNK : len - off;
		r = proc_call(sb, TS_CTL_INPUT, p, fill_data, &d, err);
		off += d.len;
	} while (r == 0 && off < len);
	return r;
}

struct size_arg {
	unsigned cols, rows;
};

static int fill_size(struct ts_ctl_msg *m, const void *arg)
{
	const struct size_arg *s = arg;

	return ts_ctl_put_u64(m, TS_T_COLS, s->cols) | ts_ctl_put_u64(m, TS_T_ROWS, s->rows);
}

int ts_local_cmd_resize(struct ts_sb *sb, const struct ts_proc_sel *p, unsigned cols, unsigned rows,
			struct ts_error *err)
{
	struct size_arg s = { cols, rows };

	return proc_call(sb, TS_CTL_RESIZE, p, fill_size, &s, err);
}

/* A string field, copied (bounded by the message). */
static char *dup_field(const uint8_t *v, uint32_t len)
{
	if (memchr(v, '\0', len))
		return NULL;
	return strndup((const char *)v, len);
}

static int push_str(char ***v, size_t *n, char *s)
{
	char **grown = realloc(*v, (*n + 2) * sizeof(char *));

	if (!grown) {
		free(s);
		return -ENOMEM;
	}
	*v = grown;
	(*v)[(*n)++] = s;
	(*v)[*n] = NULL;
	return 0;
}

static int parse_entry(const struct ts_ctl_msg *m, struct ts_proc_entry *e)
{
	uint64_t proc = 0, pid = 0, status = 0, flags = 0, uid = 0, started = 0, ended = 0, to = 0;
	char state[16] = "";
	size_t pos = 0, na = 0, ne = 0;
	const uint8_t *v;
	uint32_t len;
	uint16_t tag;

	memset(e, 0, sizeof(*e));
	if (ts_ctl_get_u64(m, TS_T_PROC, &proc) < 0 || ts_ctl_get_u64(m, TS_T_PID, &pid) < 0 ||
	    ts_ctl_get_str(m, TS_T_STATE, state, sizeof(state)) < 0 ||
	    ts_ctl_get_u64(m, TS_T_STATUS, &status) < 0 || pid > 4194304 || status > 0xffff)
		return -EPROTO;
	ts_ctl_get_u64(m, TS_T_FLAGS, &flags);
	ts_ctl_get_u64(m, TS_T_UID, &uid);
	ts_ctl_get_u64(m, TS_T_STARTED, &started);
	ts_ctl_get_u64(m, TS_T_ENDED, &ended);
	ts_ctl_get_u64(m, TS_T_TIMED_OUT, &to);
	e->proc = proc;
	e->pid = (pid_t)pid;
	e->running = !strcmp(state, "running");
	e->status = (int)status;
	e->timed_out = to == 1;
	e->pty = flags & TS_SPAWN_PTY;
	e->background = flags & TS_SPAWN_LOG;
	e->started_ms = (long long)started;
	e->ended_ms = (long long)ended;
	e->user = strdup(uid == 0 ? "root" : uid == 1000 ? "user" : "?");
	while (ts_ctl_next(m, &pos, &tag, &v, &len) > 0) {
		char *s;

		if (tag != TS_T_ARG && tag != TS_T_ENV && tag != TS_T_CWD && tag != TS_T_TAG)
			continue;
		s = dup_field(v, len);
		if (!s)
			return -EPROTO;
		if (tag == TS_T_ARG && push_str(&e->argv, &na, s) < 0)
			return -ENOMEM;
		if (tag == TS_T_ENV && push_str(&e->envs, &ne, s) < 0)
			return -ENOMEM;
		if (tag == TS_T_CWD) {
			free(e->cwd);
			e->cwd = s;
		}
		if (tag == TS_T_TAG) {
			free(e->tag);
			e->tag = s;
		}
	}
	if (!e->argv && push_str(&e->argv, &na, strdup("?")) < 0)
		return -ENOMEM;
	return 0;
}

int ts_local_cmd_list(struct ts_sb *sb, struct ts_proc_entry **ret, size_t *n, struct ts_error *err)
{
	_cleanup_(ts_ctl_client_freep) struct ts_ctl_client *c = NULL;
	struct ts_ctl_msg m = { 0 };
	struct ts_proc_entry *list = NULL;
	size_t count = 0;
	int r = ts_local_connect(sb, &c, err);

	if (r < 0)
		return r;
	ts_ctl_msg_init(&m, TS_CTL_PS, ts_ctl_client_id(c));
	r = ts_ctl_client_send(c, &m);
	ts_ctl_msg_free(&m);
	if (r < 0)
		return ts_err_errno(err, r, "send ps request");
	for (;;) {
		struct ts_proc_entry *grown;

		r = ts_ctl_client_wait(c, &m, TS_CTL_REPLY_MS, err);
		if (r < 0)
			break;
		if (m.type == TS_CTL_END) {
			ts_ctl_msg_free(&m);
			break;
		}
		if (m.type == TS_CTL_ERROR) {
			r = ts_ctl_client_remote_error(&m, err);
			ts_ctl_msg_free(&m);
			break;
		}
		if (m.type != TS_CTL_PS_ENTRY || count >= TS_LOCAL_MAX_PROCS ||
		    !(grown = realloc(list, (count + 1) * sizeof(*list)))) {
			r = ts_err(err, -EPROTO, "bad ps reply");
			ts_ctl_msg_free(&m);
			break;
		}
		list = grown;
		r = parse_entry(&m, &list[count]);
		count++;
		ts_ctl_msg_free(&m);
		if (r < 0) {
			ts_err(err, r, "bad ps entry");
			break;
		}
	}
	if (r < 0) {
		ts_proc_entries_free(list, count);
		return r;
	}
	*ret = list;
	*n = count;
	return 0;
}
