/* SPDX-License-Identifier: Apache-2.0 */
/* The e2b backend's processes: envd's process.Process (Start, Connect and the unary RPCs). */
#include "e2b.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "util.h"

struct e2b_cmd {
	struct e2b_target t;
	struct e2b_stream *st;
	bool pty, pty_known; /* started on a pty by us, or pty output seen */
	bool start_seen, start_yielded, end_seen, finished;
	struct ts_cmd_event end;
	uint64_t off[3]; /* stdout, stderr, pty: bytes since we attached */
	uint8_t *cur;	 /* the current event's data */
};

static struct e2b_cmd *ec(const struct ts_cmd *c)
{
	return c->impl;
}

static json_t *selector(const struct ts_proc_sel *p, struct ts_error *err)
{
	json_t *j;

	/* E2B's processes have no id but their pid: the process id is the pid */
	if (p->pid > 0 || (p->proc > 0 && p->proc <= INT32_MAX))
		j = json_pack("{s:I}", "pid",
			      (json_int_t)(p->pid > 0 ? (uint64_t)p->pid : p->proc));
	else if (p->tag && *p->tag)
		j = json_pack("{s:s}", "tag", p->tag);
	else {
		ts_err(err, -EINVAL, "E2B names a process by its pid or its tag");
		return NULL;
	}
	if (!j)
		ts_err(err, -ENOMEM, "out of memory");
	return j;
}

static int kv_envs(const struct ts_kv *kv, size_t n, json_t *o, struct ts_error *err)
{
	for (size_t i = 0; i < n; i++)
		if (!kv[i].key || !kv[i].value ||
		    json_object_set_new(o, kv[i].key, json_string(kv[i].value)) < 0)
			return ts_err(err, -EINVAL,
				      "a variable that is not a valid name and value");
	return 0;
}

/* Open a stream of process.Process/<method> with request req (taken). */
static int open_stream(struct e2b_cmd *m, const char *method, json_t *req, const char *user,
		       long long timeout_ms, struct ts_error *err)
{
	char path[64];

	snprintf(path, sizeof(path), "process.Process/%s", method);
	return e2b_stream_rpc(&m->t, path, req, user, timeout_ms, &m->st, err);
}

/* The stream broke or ended without its end-stream envelope. */
static int stream_gone(struct e2b_cmd *m, struct ts_error *err)
{
	struct e2b_stream *s = m->st;

	if (s->result != CURLE_OK)
		return e2b_curl_error(s->C, s->result, s->errbuf, "the process's stream", err);
	if (s->status != 200)
		return e2b_connect_error(s->status, (const char *)s->in.buf + s->in.off,
					 e2b_envelopes_pending(&s->in), "the process's stream",
					 err);
	if (e2b_envelopes_pending(&s->in))
		return ts_err(err, -EHOSTDOWN, "the process's stream was cut mid-message");
	return ts_err(err, -EIO, "the process's stream ended without its EndStreamResponse");
}

static int end_from(json_t *end, struct ts_cmd_event *ev, struct ts_error *err)
{
	long long code = 0;
	const char *status = e2b_pj_str(end, "status", NULL, "");

	if (e2b_pj_int(e2b_pj_get(end, "exitCode", "exit_code"), &code) < 0 || code < -1 ||
	    code > 255)
		return ts_err(err, -EPROTO, "a process end with a bad exit code");
	memset(ev, 0, sizeof(*ev));
	ev->type = TS_CMD_EV_END;
	if (e2b_pj_bool(end, "exited", NULL) && code >= 0) {
		ev->exit_code = (int)code;
	} else {
		ev->exit_code = -1;
		ev->signal = e2b_signal_from_status(status);
	}
	return 0;
}

/*
 * The next event from what is buffered: 1 with *ev, 0 when nothing whole is there, -errno.
 * Before the start event only the start (or the end-stream envelope) is taken.
 */
static int next_event(struct e2b_cmd *m, struct ts_cmd_event *ev, struct ts_error *err)
{
	for (;;) {
		const uint8_t *payload;
		size_t len;
		uint8_t flags;
		json_t *j, *e, *v;
		int r;

		if (m->st->status && m->st->status != 200)
			return m->st->done ? stream_gone(m, err) : 0;
		r = e2b_envelopes_next(&m->st->in, &flags, &payload, &len, err);
		if (r <= 0)
			return r;
		j = e2b_json_parse(len ? (const char *)payload : "{}", len ? len : 2, err);
		if (!j)
			return -EPROTO;
		if (flags & E2B_FLAG_END) {
			json_t *error = json_object_get(j, "error");
			const char *code = e2b_pj_str(error, "code", NULL, NULL);

			m->finished = true;
			if (error && code && !strcmp(code, "deadline_exceeded") && m->start_seen) {
				/* envd's deadline: the process was killed at its timeout */
				if (!m->end_seen) {
					memset(&m->end, 0, sizeof(m->end));
					m->end.type = TS_CMD_EV_END;
					m->end.exit_code = -1;
					m->end.signal = SIGKILL;
				}
				m->end.timed_out = true;
			} else if (error) {
				r = ts_err(err, e2b_connect_errno(code), "process: %.300s",
					   e2b_pj_str(error, "message", NULL, "no message"));
				json_decref(j);
				return r;
			} else if (!m->end_seen) {
				json_decref(j);
				return ts_err(err, -EPROTO,
					      "the process's stream ended without its end");
			}
			json_decref(j);
			*ev = m->end;
			return 1;
		}
		e = json_object_get(j, "event");
		if ((v = e2b_pj_get(e, "start", NULL))) {
			long long pid = 0;

			if (e2b_pj_int(e2b_pj_get(v, "pid", NULL), &pid) < 0 || pid <= 0 ||
			    pid > INT32_MAX) {
				json_decref(j);
				return ts_err(err, -EPROTO, "a start event without a pid");
			}
			m->start_seen = true;
			memset(ev, 0, sizeof(*ev));
			ev->type = TS_CMD_EV_START;
			ev->pid = (pid_t)pid;
			json_decref(j);
			return 1;
		}
		if (!m->start_seen) {
			json_decref(j);
			return ts_err(err, -EPROTO,
				      "the process's stream did not begin with start");
		}
		if ((v = e2b_pj_get(e, "data", NULL))) {
			static const char *const names[] = { "stdout", "stderr", "pty" };
			static const enum ts_cmd_event_type types[] = { TS_CMD_EV_STDOUT,
									TS_CMD_EV_STDERR,
									TS_CMD_EV_PTY };

			for (int k = 0; k < 3; k++) {
				json_t *d = e2b_pj_get(v, names[k], NULL);
				size_t n;

				if (!json_is_string(d))
					continue;
				free(m->cur);
				m->cur = NULL;
				if (e2b_base64_decode(json_string_value(d), &m->cur, &n) < 0) {
					json_decref(j);
					return ts_err(err, -EPROTO, "output that is not base64");
				}
				if (k == 2)
					m->pty = m->pty_known = true;
				memset(ev, 0, sizeof(*ev));
				ev->type = types[k];
				ev->data = m->cur;
				ev->len = n;
				ev->offset = m->off[k];
				m->off[k] += n;
				json_decref(j);
				return 1;
			}
		} else if ((v = e2b_pj_get(e, "end", NULL))) {
			r = end_from(v, &m->end, err);
			json_decref(j);
			if (r < 0)
				return r;
			m->end_seen = true;
			/* held until the end-stream envelope says whether it was a deadline */
			continue;
		}
		json_decref(j); /* keepalive, or something newer than us */
	}
}

/* Wait for the start event (bounded): the pid, or the error that came instead. */
static int handshake(struct e2b_cmd *m, pid_t *pid, struct ts_error *err)
{
	long long deadline = (long long)ts_now_ms() + TS_BE_REPLY_MS;

	for (;;) {
		struct ts_cmd_event ev;
		int r = next_event(m, &ev, err);

		if (r > 0 && ev.type == TS_CMD_EV_START) {
			*pid = ev.pid;
			e2b_stream_guard_off(m->st);
			return 0;
		}
		if (r > 0)
			return ts_err(err, -EPROTO,
				      "the process's stream did not begin with start");
		if (r < 0)
			return r;
		if (m->st->done)
			return stream_gone(m, err);
		if ((long long)ts_now_ms() > deadline)
			return ts_err(err, -ETIMEDOUT,
				      "the sandbox did not start the process in %d s",
				      TS_BE_REPLY_MS / 1000);
		r = e2b_stream_wait(m->st, 1000, err);
		if (r < 0)
			return r;
	}
}

static bool pty_known(struct ts_sb *sb, pid_t pid)
{
	struct e2b_sb *s = sb->impl;

	for (unsigned i = 0; pid > 0 && i < s->n_pty && i < E2B_PTY_PIDS; i++)
		if (s->pty_pids[i] == pid)
			return true;
	return false;
}

static void pty_remember(struct ts_sb *sb, pid_t pid)
{
	struct e2b_sb *s = sb->impl;

	if (pty_known(sb, pid))
		return;
	s->pty_pids[s->n_pty % E2B_PTY_PIDS] = pid;
	s->n_pty++;
}

static void cmd_free(struct e2b_cmd *m)
{
	if (!m)
		return;
	e2b_stream_free(m->st);
	free(m->cur);
	free(m);
}

int e2b_cmd_start(struct ts_sb *sb, const struct ts_cmd_opts *o, struct ts_cmd *c, pid_t *pid,
		  uint64_t *proc, struct ts_error *err)
{
	struct e2b_cmd *m = calloc(1, sizeof(*m));
	json_t *req, *process, *args, *envs;
	int r;

	if (!m)
		return ts_err(err, -ENOMEM, "out of memory");
	m->t = *e2b_target_of(sb);
	m->pty = o->pty;
	m->pty_known = true;
	args = json_array();
	envs = json_object();
	process = json_pack("{s:s}", "cmd", o->argv[0]);
	req = json_object();
	if (!args || !envs || !process || !req) {
		json_decref(args);
		json_decref(envs);
		json_decref(process);
		json_decref(req);
		cmd_free(m);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	for (char **a = o->argv + 1; *a; a++)
		json_array_append_new(args, json_string(*a));
	json_object_set_new(process, "args", args);
	r = kv_envs(o->envs, o->n_envs, envs, err);
	json_object_set_new(process, "envs", envs);
	if (o->cwd)
		json_object_set_new(process, "cwd", json_string(o->cwd));
	json_object_set_new(req, "process", process);
	if (o->tag)
		json_object_set_new(req, "tag", json_string(o->tag));
	if (o->pty)
		json_object_set_new(req, "pty",
				    json_pack("{s:{s:i,s:i}}", "size", "cols",
					      o->cols ? (int)o->cols : 80, "rows",
					      o->rows ? (int)o->rows : 24));
	else
		json_object_set_new(req, "stdin", json_boolean(o->stdin_open));
	if (r < 0) {
		json_decref(req);
		cmd_free(m);
		return r;
	}
	r = open_stream(m, "Start", req, o->user, (long long)o->timeout_ms, err);
	if (r == 0)
		r = handshake(m, pid, err);
	if (r < 0) {
		cmd_free(m);
		return r;
	}
	*proc = (uint64_t)*pid;
	if (o->pty)
		pty_remember(sb, *pid);
	if (o->detach) {
		/* envd keeps a process whose client went: closing the stream detaches */
		cmd_free(m);
		return 0;
	}
	e2b_stream_wake(m->st); /* the start event is the first step's */
	c->impl = m;
	return 0;
}

int e2b_cmd_connect(struct ts_sb *sb, const struct ts_proc_sel *p, struct ts_cmd *c,
		    struct ts_error *err)
{
	struct e2b_cmd *m = calloc(1, sizeof(*m));
	json_t *sel = selector(p, err);
	pid_t pid = 0;
	int r;

	if (!m || !sel) {
		free(m);
		json_decref(sel);
		return m ? -EINVAL : ts_err(err, -ENOMEM, "out of memory");
	}
	m->t = *e2b_target_of(sb);
	r = open_stream(m, "Connect", json_pack("{s:o}", "process", sel), NULL, 0, err);
	if (r == 0)
		r = handshake(m, &pid, err);
	if (r < 0) {
		cmd_free(m);
		return r;
	}
	c->pid = pid;
	m->pty = m->pty_known = pty_known(sb, pid);
	e2b_stream_wake(m->st);
	c->impl = m;
	return 0;
}

int e2b_cmd_fd(const struct ts_cmd *c)
{
	return ec(c)->st->epfd;
}

short e2b_cmd_events(const struct ts_cmd *c)
{
	return POLLIN;
}

int e2b_cmd_step(struct ts_cmd *c, struct ts_cmd_event *ev, struct ts_error *err)
{
	struct e2b_cmd *m = ec(c);

	memset(ev, 0, sizeof(*ev));
	free(m->cur);
	m->cur = NULL;
	if (!m->start_yielded) {
		m->start_yielded = true;
		ev->type = TS_CMD_EV_START;
		ev->pid = c->pid;
		return 1;
	}
	for (int round = 0; round < 2; round++) {
		int r = next_event(m, ev, err);

		if (r != 0) {
			if (r > 0) {
				ev->pid = c->pid;
				/* more may be buffered: the fd must stay readable for it */
				e2b_stream_wake(m->st);
			}
			return r;
		}
		if (m->st->done)
			return stream_gone(m, err);
		/* drive once, then look at what it buffered: a drive whose take is not looked
		 * at hands the caller 0 for something it already has */
		if (round == 0 && (r = e2b_stream_drive(m->st, err)) < 0)
			return r;
	}
	return 0;
}

void e2b_cmd_close(struct ts_cmd *c)
{
	cmd_free(ec(c));
	c->impl = NULL;
}

/* A unary process.Process call; the answer is dropped. */
static int unary(const struct e2b_target *t, const char *method, json_t *req, const char *what,
		 struct ts_error *err)
{
	char path[64];
	json_t *ans = NULL;
	int r;

	if (!req)
		return ts_err(err, -ENOMEM, "out of memory");
	snprintf(path, sizeof(path), "process.Process/%s", method);
	r = e2b_envd_unary(t, path, req, NULL, &ans, err);
	json_decref(req);
	json_decref(ans);
	return r < 0 ? ts_err_prefix(err, r, "%s", what) : 0;
}

static int input_once(const struct e2b_target *t, const struct ts_proc_sel *p, bool pty,
		      const char *b64, struct ts_error *err)
{
	json_t *sel = selector(p, err);

	if (!sel)
		return -EINVAL;
	return unary(t, "SendInput",
		     json_pack("{s:o,s:{s:s}}", "process", sel, "input", pty ? "pty" : "stdin",
			       b64),
		     "send input", err);
}

/* pty: what the caller knows (a process of ours, or one whose output came as pty). */
static int send_input(const struct e2b_target *t, const struct ts_proc_sel *p, bool pty, bool known,
		      const void *data, size_t len, bool close, struct ts_error *err)
{
	_cleanup_free_ char *b64 = NULL;
	struct ts_error first;
	int r;

	if (close) {
		json_t *sel = selector(p, err);

		if (!sel)
			return -EINVAL;
		return unary(t, "CloseStdin", json_pack("{s:o}", "process", sel), "close stdin",
			     err);
	}
	if (e2b_base64_encode(data, len, &b64) < 0)
		return ts_err(err, -ENOMEM, "out of memory");
	r = input_once(t, p, pty, b64, err);
	/* envd refuses input of the wrong kind as internal (spec §4.1): a process we did not
	 * start may be on a pty, so the other kind is tried once */
	if (r != -EIO || known)
		return r;
	first = *err;
	r = input_once(t, p, !pty, b64, err);
	if (r < 0)
		*err = first;
	return r < 0 ? -first.code : 0;
}

static int send_signal(const struct e2b_target *t, const struct ts_proc_sel *p, int sig,
		       struct ts_error *err)
{
	json_t *sel = selector(p, err), *req;

	if (!sel)
		return -EINVAL;
	/* envd's Signal enum has SIGKILL and SIGTERM; any other goes as its number, which
	 * envd answers with unimplemented */
	if (sig == SIGKILL || sig == SIGTERM)
		req = json_pack("{s:o,s:s}", "process", sel, "signal",
				sig == SIGKILL ? "SIGNAL_SIGKILL" : "SIGNAL_SIGTERM");
	else
		req = json_pack("{s:o,s:i}", "process", sel, "signal", sig);
	return unary(t, "SendSignal", req, "signal", err);
}

static int resize(const struct e2b_target *t, const struct ts_proc_sel *p, unsigned cols,
		  unsigned rows, struct ts_error *err)
{
	json_t *sel = selector(p, err);

	if (!sel)
		return -EINVAL;
	if (!cols || !rows || cols > 65535 || rows > 65535) {
		json_decref(sel);
		return ts_err(err, -EINVAL, "a terminal of %u x %u", cols, rows);
	}
	return unary(t, "Update",
		     json_pack("{s:o,s:{s:{s:I,s:I}}}", "process", sel, "pty", "size", "cols",
			       (json_int_t)cols, "rows", (json_int_t)rows),
		     "resize", err);
}

int e2b_cmd_input(struct ts_cmd *c, const void *data, size_t len, bool close, struct ts_error *err)
{
	struct ts_proc_sel p = { .pid = c->pid };

	return send_input(&ec(c)->t, &p, ec(c)->pty, ec(c)->pty_known, data, len, close, err);
}

int e2b_cmd_signal_self(struct ts_cmd *c, int sig, struct ts_error *err)
{
	struct ts_proc_sel p = { .pid = c->pid };

	return send_signal(&ec(c)->t, &p, sig, err);
}

int e2b_cmd_resize_self(struct ts_cmd *c, unsigned cols, unsigned rows, struct ts_error *err)
{
	struct ts_proc_sel p = { .pid = c->pid };

	return resize(&ec(c)->t, &p, cols, rows, err);
}

size_t e2b_cmd_input_pending(const struct ts_cmd *c)
{
	return 0; /* input is a request answered before ts_cmd_input returns */
}

int e2b_cmd_signal(struct ts_sb *sb, const struct ts_proc_sel *p, int sig, struct ts_error *err)
{
	return send_signal(e2b_target_of(sb), p, sig, err);
}

int e2b_cmd_send_stdin(struct ts_sb *sb, const struct ts_proc_sel *p, const void *data, size_t len,
		       bool close, struct ts_error *err)
{
	bool pty = pty_known(sb, p->pid);

	return send_input(e2b_target_of(sb), p, pty, pty, data, len, close, err);
}

int e2b_cmd_resize(struct ts_sb *sb, const struct ts_proc_sel *p, unsigned cols, unsigned rows,
		   struct ts_error *err)
{
	return resize(e2b_target_of(sb), p, cols, rows, err);
}

#define E2B_PROCS_MAX 65536

static int strv_push(char ***v, size_t *n, const char *s)
{
	char **grown = realloc(*v, (*n + 2) * sizeof(char *));

	if (!grown)
		return -ENOMEM;
	*v = grown;
	if (!(grown[*n] = strdup(s)))
		return -ENOMEM;
	grown[++*n] = NULL;
	return 0;
}

static int proc_from(json_t *j, struct ts_proc_entry *e)
{
	json_t *config = json_object_get(j, "config"), *args = json_object_get(config, "args");
	json_t *envs = json_object_get(config, "envs"), *v;
	const char *cmd = e2b_pj_str(config, "cmd", NULL, ""), *k, *tag, *cwd;
	long long pid = 0;
	size_t na = 0, ne = 0, i;

	if (e2b_pj_int(json_object_get(j, "pid"), &pid) < 0 || pid <= 0 || pid > INT32_MAX)
		return -EPROTO;
	e->pid = (pid_t)pid;
	e->proc = (uint64_t)pid;
	e->running = true; /* envd lists only processes that run */
	if (strv_push(&e->argv, &na, cmd) < 0)
		return -ENOMEM;
	json_array_foreach(args, i, v)
		if (json_is_string(v) && strv_push(&e->argv, &na, json_string_value(v)) < 0)
			return -ENOMEM;
	if (!(e->envs = calloc(1, sizeof(char *))))
		return -ENOMEM;
	json_object_foreach(envs, k, v) {
		_cleanup_free_ char *kv = NULL;

		if (!json_is_string(v))
			continue;
		if (asprintf(&kv, "%s=%s", k, json_string_value(v)) < 0 ||
		    strv_push(&e->envs, &ne, kv) < 0)
			return -ENOMEM;
	}
	tag = e2b_pj_str(j, "tag", NULL, NULL);
	cwd = e2b_pj_str(config, "cwd", NULL, NULL);
	if ((tag && !(e->tag = strdup(tag))) || (cwd && !(e->cwd = strdup(cwd))))
		return -ENOMEM;
	return 0;
}

int e2b_cmd_list(struct ts_sb *sb, struct ts_proc_entry **ret, size_t *n, struct ts_error *err)
{
	json_t *ans = NULL, *procs;
	json_t *req = json_object();
	struct ts_proc_entry *v;
	size_t count;
	int r;

	if (!req)
		return ts_err(err, -ENOMEM, "out of memory");
	r = e2b_envd_unary(e2b_target_of(sb), "process.Process/List", req, NULL, &ans, err);
	json_decref(req);
	if (r < 0)
		return ts_err_prefix(err, r, "list processes");
	procs = json_object_get(ans, "processes");
	count = json_array_size(procs);
	if (count > E2B_PROCS_MAX) {
		json_decref(ans);
		return ts_err(err, -EPROTO, "list processes: %zu of them", count);
	}
	v = calloc(count ? count : 1, sizeof(*v));
	if (!v) {
		json_decref(ans);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < count; i++)
		if ((r = proc_from(json_array_get(procs, i), &v[i])) < 0) {
			ts_proc_entries_free(v, i + 1);
			json_decref(ans);
			return ts_err(err, r, "list processes: a bad entry");
		}
	json_decref(ans);
	*ret = v;
	*n = count;
	return 0;
}
