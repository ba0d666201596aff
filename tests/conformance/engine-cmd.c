/* SPDX-License-Identifier: Apache-2.0 */
/* The conformance engine: processes (run, start, attach, streams, input, signals,
 * listings) (engine.h). */
#include "engine.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --- commands ----------------------------------------------------------------------- */

void conf_handle_reset(struct handle *h)
{
	ts_cmd_close(h->c);
	for (int i = 0; i < 3; i++)
		free(h->s[i].buf);
	memset(h, 0, sizeof(*h));
}

static int fill_opts(struct conf *c, const struct conf_step *st, struct ts_cmd_opts *o,
		     char ***argv, char ***envs, struct ts_kv **kv, char bufs[3][4096])
{
	memset(o, 0, sizeof(*o));
	*argv = conf_expand_strv(c, st->argv);
	*envs = conf_expand_strv(c, st->envs);
	*kv = conf_kv_of(*envs, &o->n_envs);
	if (!*argv || !*envs || !*kv)
		return conf_fail(c, "out of memory");
	o->argv = *argv;
	o->envs = *kv;
	o->cwd = conf_expand(c, st->cwd, bufs[0], sizeof(bufs[0]));
	o->user = st->user;
	o->tag = conf_expand(c, st->tag, bufs[1], sizeof(bufs[1]));
	o->timeout_ms = st->ms > 0 ? (unsigned long long)st->ms : 0;
	o->stdin_open = st->stdin_open;
	o->pty = st->pty;
	o->cols = st->cols;
	o->rows = st->rows;
	o->log = st->log;
	o->detach = st->detach;
	return 0;
}

/* An END as the step expects it. */
static int check_end(struct conf *c, const struct conf_expect *e, int exit_code, int sig,
		     bool timed_out)
{
	if (e->timed_out != timed_out)
		return conf_fail(c, "timed_out %d, want %d (exit %d, signal %d)", timed_out,
				 e->timed_out, exit_code, sig);
	if (timed_out)
		return 0; /* killed at its deadline: how is the backend's */
	if (e->code == TS_BE_COMMAND_EXIT && exit_code == 0)
		return conf_fail(c, "exit 0, want a failure (exit %d)", e->exit_code);
	if (exit_code != e->exit_code || sig != e->signal)
		return conf_fail(c, "exit %d signal %d, want exit %d signal %d", exit_code, sig,
				 e->exit_code, e->signal);
	return 0;
}

/* Text checks of what a command wrote (out: stdout or a pty's output). */
static int check_text(struct conf *c, const struct conf_expect *e, const char *out,
		      const char *errout)
{
	char buf[4096];

	if (e->out && !e->data && strcmp(out, conf_expand(c, e->out, buf, sizeof(buf))) != 0)
		return conf_fail(c, "stdout `%.1500s`, want `%s` (stderr `%.200s`)", out, buf,
				 errout);
	if (e->err && strcmp(errout, conf_expand(c, e->err, buf, sizeof(buf))) != 0)
		return conf_fail(c, "stderr `%.1500s`, want `%s`", errout, buf);
	if (e->out_has && !strstr(out, conf_expand(c, e->out_has, buf, sizeof(buf))))
		return conf_fail(c, "stdout `%.1500s` lacks `%s` (stderr `%.200s`)", out, buf,
				 errout);
	if (e->out_lacks && strstr(out, conf_expand(c, e->out_lacks, buf, sizeof(buf))))
		return conf_fail(c, "stdout `%.1500s` has `%s`", out, buf);
	if (e->err_has && !strstr(errout, conf_expand(c, e->err_has, buf, sizeof(buf))))
		return conf_fail(c, "stderr `%.1500s` lacks `%s`", errout, buf);
	return 0;
}

static int do_run(struct conf *c, const struct conf_step *st)
{
	const struct conf_expect *e = &st->expect;
	struct ts_cmd_opts o;
	struct ts_run_result res = { 0 };
	struct ts_error err = { 0 };
	char **argv = NULL, **envs = NULL, bufs[3][4096];
	struct ts_kv *kv = NULL;
	int r;

	if (conf_need_sb(c, st->sb) < 0)
		return -1;
	r = fill_opts(c, st, &o, &argv, &envs, &kv, bufs);
	if (r == 0) {
		r = ts_be_run(c->sb[st->sb], &o, NULL, NULL, true, CONF_CAPTURE_MAX, &res, &err);
		r = conf_check_code(c, r, &err, e);
	}
	if (r == 0)
		r = check_end(c, e, res.exit_code, res.signal, res.timed_out);
	if (r == 0)
		r = check_text(c, e, res.out ? (char *)res.out : "",
			       res.errout ? (char *)res.errout : "");
	if (r == 0 && e->data)
		r = conf_check_content(c, e, res.out, res.out_len, "stdout");
	ts_run_result_clear(&res);
	free(kv);
	conf_strv_free(argv);
	conf_strv_free(envs);
	return r < 0 ? r : 0;
}

/* Take one event into h. */
static int take(struct conf *c, struct handle *h, const struct ts_cmd_event *ev)
{
	struct stream *s;
	uint8_t *grown;

	if (ev->type == TS_CMD_EV_START && h->started)
		return conf_fail(c, "a second start event");
	if (ev->type != TS_CMD_EV_START && !h->started)
		return conf_fail(c, "event %d before the start", (int)ev->type);
	if (ev->pid != ts_cmd_pid(h->c))
		return conf_fail(c, "an event of pid %d on the stream of pid %d", (int)ev->pid,
				 (int)ts_cmd_pid(h->c));
	switch (ev->type) {
	case TS_CMD_EV_START:
		h->started = true;
		return 0;
	case TS_CMD_EV_END:
		h->ended = true;
		h->end = *ev;
		return 0;
	case TS_CMD_EV_STDOUT:
	case TS_CMD_EV_STDERR:
	case TS_CMD_EV_PTY:
		break;
	default:
		return conf_fail(c, "an event of unknown type %d", (int)ev->type);
	}
	s = &h->s[ev->type - TS_CMD_EV_STDOUT];
	if (!s->started) {
		s->started = true;
		s->first_off = s->next_off = ev->offset;
	}
	if (ev->offset != s->next_off)
		return conf_fail(c, "output at offset %llu, want %llu: bytes lost or reordered",
				 (unsigned long long)ev->offset, (unsigned long long)s->next_off);
	s->next_off += ev->len;
	if (s->len + ev->len > CONF_CAPTURE_MAX)
		return conf_fail(c, "more than %u bytes of output", CONF_CAPTURE_MAX);
	grown = realloc(s->buf, s->len + ev->len + 1);
	if (!grown)
		return conf_fail(c, "out of memory");
	s->buf = grown;
	memcpy(s->buf + s->len, ev->data, ev->len);
	s->len += ev->len;
	s->buf[s->len] = '\0';
	return 0;
}

static const char *text_of(const struct stream *s)
{
	return s->buf ? (const char *)s->buf : "";
}

int conf_need_h(struct conf *c, int slot)
{
	return c->h[slot].c ? 0 : conf_fail(c, "no process stream in slot %d", slot);
}

static int do_start(struct conf *c, const struct conf_step *st)
{
	struct ts_cmd_opts o;
	struct ts_error err = { 0 };
	struct ts_cmd *cmd = NULL;
	char **argv = NULL, **envs = NULL, bufs[3][4096];
	struct ts_kv *kv = NULL;
	pid_t pid = 0;
	uint64_t proc = 0;
	int r;

	if (conf_need_sb(c, st->sb) < 0)
		return -1;
	r = fill_opts(c, st, &o, &argv, &envs, &kv, bufs);
	if (r == 0) {
		r = ts_cmd_start(c->sb[st->sb], &o, st->detach ? NULL : &cmd, &pid, &proc, &err);
		r = conf_check_code(c, r, &err, &st->expect);
	}
	free(kv);
	conf_strv_free(argv);
	conf_strv_free(envs);
	if (r != 0)
		return r < 0 ? r : 0;
	if (pid <= 0)
		r = conf_fail(c, "started, but pid %d", (int)pid);
	else if (cmd && ts_cmd_pid(cmd) != pid)
		r = conf_fail(c, "the stream's pid %d, the start said %d", (int)ts_cmd_pid(cmd),
			      (int)pid);
	else if (st->detach && cmd)
		r = conf_fail(c, "a detached start gave a stream");
	c->pid[st->pid] = pid;
	c->proc[st->pid] = proc;
	if (cmd) {
		conf_handle_reset(&c->h[st->h]);
		c->h[st->h].c = cmd;
	}
	return r;
}

static struct ts_proc_sel sel_of(struct conf *c, const struct conf_step *st, char *tag, size_t len)
{
	switch (st->sel) {
	case SEL_TAG:
		return (struct ts_proc_sel){ .tag = conf_expand(c, st->tag, tag, len) };
	case SEL_PROC:
		return (struct ts_proc_sel){ .proc = c->proc[st->pid] };
	case SEL_UNKNOWN_PID:
		return (struct ts_proc_sel){ .pid = 4194000 };
	default:
		return (struct ts_proc_sel){ .pid = c->pid[st->pid] };
	}
}

static int do_connect(struct conf *c, const struct conf_step *st)
{
	char tag[256];
	struct ts_proc_sel p = sel_of(c, st, tag, sizeof(tag));
	struct ts_error err = { 0 };
	struct ts_cmd *cmd = NULL;
	int r;

	if (conf_need_sb(c, st->sb) < 0)
		return -1;
	r = ts_cmd_connect(c->sb[st->sb], &p, &cmd, &err);
	if ((r = conf_check_code(c, r, &err, &st->expect)) != 0)
		return r < 0 ? r : 0;
	conf_handle_reset(&c->h[st->h]);
	c->h[st->h].c = cmd;
	if (c->pid[st->pid] && ts_cmd_pid(cmd) != c->pid[st->pid])
		return conf_fail(c, "attached to pid %d, want %d", (int)ts_cmd_pid(cmd),
				 (int)c->pid[st->pid]);
	if (!c->pid[st->pid])
		c->pid[st->pid] = ts_cmd_pid(cmd);
	return 0;
}

/* Events into h until done(h) or the deadline; the handle's fd and events polled. */
static int pump(struct conf *c, struct handle *h, long long wait_ms,
		bool (*until)(const struct handle *h, const void *arg), const void *arg)
{
	long long deadline = conf_mono_ms() + wait_ms;

	while (!until(h, arg)) {
		struct ts_cmd_event ev;
		struct ts_error err = { 0 };
		struct pollfd p;
		long long left;
		int r;

		if (h->ended)
			return conf_fail(c, "the process ended first (exit %d, signal %d)",
					 h->end.exit_code, h->end.signal);
		r = ts_cmd_step(h->c, &ev, &err);
		if (r < 0)
			return conf_fail(c, "step: %s (%s)", err.msg,
					 ts_be_code_name(ts_be_code(&err)));
		if (r > 0) {
			if (take(c, h, &ev) < 0)
				return -1;
			continue;
		}
		left = deadline - conf_mono_ms();
		if (left <= 0)
			return conf_fail(c, "nothing more in %lld ms", wait_ms);
		p = (struct pollfd){ .fd = ts_cmd_fd(h->c), .events = ts_cmd_events(h->c) };
		if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
			return conf_fail(c, "poll: %s", strerror(errno));
	}
	return 0;
}

struct has_arg {
	int stream;
	const char *text;
};

static bool has_text(const struct handle *h, const void *arg)
{
	const struct has_arg *a = arg;

	return strstr(text_of(&h->s[a->stream]), a->text) != NULL;
}

static int do_wait_output(struct conf *c, const struct conf_step *st)
{
	char buf[4096];
	struct has_arg a = { st->stream ? (int)st->stream - TS_CMD_EV_STDOUT : 0,
			     conf_expand(c, st->expect.out_has, buf, sizeof(buf)) };
	struct handle *h = &c->h[st->h];

	if (conf_need_h(c, st->h) < 0)
		return -1;
	if (pump(c, h, st->ms ? st->ms : CONF_WAIT_MS, has_text, &a) < 0) {
		size_t l = strlen(c->why);

		snprintf(c->why + l, sizeof(c->why) - l, "; waiting for `%s`, got `%.1000s`",
			 a.text, text_of(&h->s[a.stream]));
		return -1;
	}
	return 0;
}

static int do_wait_end(struct conf *c, const struct conf_step *st)
{
	const struct conf_expect *e = &st->expect;
	struct handle *h = &c->h[st->h];
	long long deadline = conf_mono_ms() + (st->ms ? st->ms : CONF_WAIT_MS);
	int stream = st->stream ? (int)st->stream - TS_CMD_EV_STDOUT : 0;
	struct ts_cmd_event ev;
	struct ts_error err = { 0 };
	int r;

	if (conf_need_h(c, st->h) < 0)
		return -1;
	while (!h->ended) {
		long long left = deadline - conf_mono_ms();

		if (left <= 0)
			return conf_fail(c, "no end in %lld ms (stdout `%.500s`)",
					 st->ms ? st->ms : CONF_WAIT_MS, text_of(&h->s[0]));
		r = ts_cmd_wait_event(h->c, &ev, (int)left, &err);
		if (r == -ETIMEDOUT)
			continue;
		/* a stream that must end in an error (its sandbox went) */
		if (r < 0 && (e->code != TS_BE_OK && e->code != TS_BE_COMMAND_EXIT))
			return conf_check_code(c, r, &err, e) < 0 ? -1 : 0;
		if (r < 0)
			return conf_fail(c, "waiting for the end: %s (%s)", err.msg,
					 ts_be_code_name(ts_be_code(&err)));
		if (take(c, h, &ev) < 0)
			return -1;
	}
	/* the stream is over: a step says so, and says nothing else */
	err = (struct ts_error){ 0 };
	r = ts_cmd_step(h->c, &ev, &err);
	if (r != -EPIPE)
		return conf_fail(c, "a step after the end gave %d, want -EPIPE", r);
	if (check_end(c, e, h->end.exit_code, h->end.signal, h->end.timed_out) < 0 ||
	    check_text(c, e, text_of(&h->s[stream]), text_of(&h->s[1])) < 0)
		return -1;
	if (e->data) {
		const struct stream *s = &h->s[stream];
		size_t want_len;
		uint8_t *want = conf_gen(c, e->data, e->size, NULL, &want_len);
		size_t off = s->started ? (size_t)s->first_off : want_len;

		r = 0;
		if (!want)
			r = conf_fail(c, "out of memory");
		else if (e->whole && off != 0)
			r = conf_fail(c, "output from offset %zu, want all of it", off);
		else if (off > want_len || off + s->len != want_len)
			r = conf_fail(c, "output %zu bytes from offset %zu, want up to %zu", s->len,
				      off, want_len);
		else if (conf_first_diff(s->buf, want + off, s->len) != s->len)
			r = conf_fail(c, "output differs at byte %zu",
				      off + conf_first_diff(s->buf, want + off, s->len));
		free(want);
		return r;
	}
	return 0;
}

static int do_proc_request(struct conf *c, const struct conf_step *st)
{
	char tag[256], text[4096];
	struct ts_proc_sel p = sel_of(c, st, tag, sizeof(tag));
	struct ts_error err = { 0 };
	struct ts_sb *sb = c->sb[st->sb];
	struct ts_cmd *h = c->h[st->h].c;
	size_t len;
	uint8_t *bytes = st->data ? conf_gen(c, st->data, st->size, st->text, &len) : NULL;
	const char *data = bytes ? (const char *)bytes
				 : conf_expand(c, st->text ? st->text : "", text, sizeof(text));
	int r;

	if (!bytes)
		len = strlen(data);

	if (conf_need_sb(c, st->sb) < 0 || ((st->op == C_INPUT || st->op == C_INPUT_CLOSE ||
					     st->op == C_SIGNAL_SELF || st->op == C_RESIZE_SELF) &&
					    conf_need_h(c, st->h) < 0)) {
		free(bytes);
		return -1;
	}
	switch (st->op) {
	case C_STDIN:
		r = ts_cmd_send_stdin(sb, &p, data, len, &err);
		break;
	case C_STDIN_CLOSE:
		r = ts_cmd_close_stdin(sb, &p, &err);
		break;
	case C_INPUT:
		r = ts_cmd_input(h, data, len, &err);
		break;
	case C_INPUT_CLOSE:
		r = ts_cmd_input_close(h, &err);
		break;
	case C_SIGNAL:
		r = ts_cmd_signal(sb, &p, st->sig, &err);
		break;
	case C_SIGNAL_SELF:
		r = ts_cmd_signal_self(h, st->sig, &err);
		break;
	case C_RESIZE:
		r = ts_cmd_resize(sb, &p, st->cols, st->rows, &err);
		break;
	default:
		r = ts_cmd_resize_self(h, st->cols, st->rows, &err);
		break;
	}
	free(bytes);
	r = conf_check_code(c, r, &err, &st->expect);
	return r < 0 ? r : 0;
}

static bool strv_eq(char **got, const char *const *want, struct conf *c)
{
	size_t i = 0;

	for (; want[i]; i++) {
		char buf[4096];

		if (!got || !got[i] ||
		    strcmp(got[i], conf_expand(c, want[i], buf, sizeof(buf))) != 0)
			return false;
	}
	return !got || !got[i];
}

static int do_procs(struct conf *c, const struct conf_step *st)
{
	const struct conf_expect *e = &st->expect;
	struct ts_proc_entry *v = NULL, *p = NULL;
	struct ts_error err = { 0 };
	char buf[4096];
	size_t n = 0;
	int r;

	if (conf_need_sb(c, st->sb) < 0)
		return -1;
	r = ts_cmd_list(c->sb[st->sb], &v, &n, &err);
	if ((r = conf_check_code(c, r, &err, e)) != 0)
		return r < 0 ? r : 0;
	for (size_t i = 0; i < n; i++)
		if (v[i].pid == c->pid[st->pid] && (v[i].running || !p))
			p = &v[i];
	if (e->absent) {
		r = p && p->running
			    ? conf_fail(c, "pid %d is listed as running", (int)c->pid[st->pid])
			    : 0;
	} else if (!p) {
		r = conf_fail(c, "pid %d is not listed (%zu processes)", (int)c->pid[st->pid], n);
	} else if (p->running != e->yes) {
		r = conf_fail(c, "pid %d running %d, want %d", (int)p->pid, p->running, e->yes);
	} else if ((c->r->caps & CONF_CAP_PROC_ID) && c->proc[st->pid] &&
		   p->proc != c->proc[st->pid]) {
		r = conf_fail(c, "pid %d is process %llu, the start said %llu", (int)p->pid,
			      (unsigned long long)p->proc, (unsigned long long)c->proc[st->pid]);
	} else if (e->argv && !strv_eq(p->argv, e->argv, c)) {
		r = conf_fail(c, "pid %d argv[0] `%s`, not the one started", (int)p->pid,
			      p->argv && p->argv[0] ? p->argv[0] : "");
	} else if (e->cwd && (!p->cwd || strcmp(p->cwd, e->cwd) != 0)) {
		r = conf_fail(c, "pid %d cwd `%s`, want `%s`", (int)p->pid,
			      p->cwd ? p->cwd : "(none)", e->cwd);
	} else if (e->user && (!p->user || strcmp(p->user, e->user) != 0)) {
		r = conf_fail(c, "pid %d user `%s`, want `%s`", (int)p->pid,
			      p->user ? p->user : "(none)", e->user);
	} else if (e->tag &&
		   (!p->tag || strcmp(p->tag, conf_expand(c, e->tag, buf, sizeof(buf))) != 0)) {
		r = conf_fail(c, "pid %d tag `%s`, want `%s`", (int)p->pid,
			      p->tag ? p->tag : "(none)", buf);
	}
	for (const char *const *want = e->envs; r == 0 && want && *want; want++) {
		bool found = false;

		for (char **g = p->envs; g && *g; g++)
			found |= !strcmp(*g, *want);
		if (!found)
			r = conf_fail(c, "pid %d has no variable `%s` in its config", (int)p->pid,
				      *want);
	}
	ts_proc_entries_free(v, n);
	return r;
}

static int do_log_read(struct conf *c, const struct conf_step *st)
{
	uint8_t *all = NULL;
	size_t len = 0;
	int r = 0;

	if (conf_need_sb(c, st->sb) < 0)
		return -1;
	for (;;) {
		struct ts_error err = { 0 };
		uint8_t buf[65536], *grown;
		size_t got = 0;

		r = ts_cmd_log_read(c->sb[st->sb], c->proc[st->pid], len, buf, sizeof(buf), &got,
				    &err);
		if (r < 0 || got == 0) {
			r = conf_check_code(c, r, &err, &st->expect);
			break;
		}
		grown = realloc(all, len + got);
		if (!grown) {
			r = conf_fail(c, "out of memory");
			break;
		}
		all = grown;
		memcpy(all + len, buf, got);
		len += got;
	}
	if (r == 0 && (st->expect.data || st->expect.out))
		r = conf_check_content(c,
				       &(struct conf_expect){ .data = st->expect.data ?: D_TEXT,
							      .size = st->expect.size,
							      .out = st->expect.out },
				       all, len, "the log");
	free(all);
	return r < 0 ? r : 0;
}

static int do_wait_quiet(struct conf *c, const struct conf_step *st)
{
	struct handle *h = &c->h[st->h];
	struct ts_cmd_event ev;
	struct ts_error err = { 0 };
	int r;

	if (conf_need_h(c, st->h) < 0)
		return -1;
	/* what is already there (its start) first: then nothing more comes */
	while ((r = ts_cmd_step(h->c, &ev, &err)) > 0)
		if (ev.type != TS_CMD_EV_START || take(c, h, &ev) < 0)
			return c->why[0] ? -1
					 : conf_fail(c, "an event of type %d, want none",
						     (int)ev.type);
	if (r < 0)
		return conf_fail(c, "step: %s", err.msg);
	r = ts_cmd_wait_event(h->c, &ev, (int)st->ms, &err);
	if (r == 0)
		return conf_fail(c, "an event of type %d, want none", (int)ev.type);
	r = conf_check_code(c, r, &err, &st->expect);
	return r < 0 ? r : 0;
}

int conf_cmd_step(struct conf *c, const struct conf_step *st)
{
	switch (st->op) {
	case C_RUN:
		return do_run(c, st);
	case C_START:
		return do_start(c, st);
	case C_CONNECT:
		return do_connect(c, st);
	case C_WAIT_OUTPUT:
		return do_wait_output(c, st);
	case C_WAIT_END:
		return do_wait_end(c, st);
	case C_WAIT_QUIET:
		return do_wait_quiet(c, st);
	case C_DETACH:
		conf_handle_reset(&c->h[st->h]);
		return 0;
	case C_PROCS:
		return do_procs(c, st);
	case C_LOG_READ:
		return do_log_read(c, st);
	case C_INPUT_PENDING0:
		if (conf_need_h(c, st->h) < 0)
			return -1;
		return ts_cmd_input_pending(c->h[st->h].c) == 0
			       ? 0
			       : conf_fail(c, "%zu bytes of input pending",
					   ts_cmd_input_pending(c->h[st->h].c));
	default:
		return do_proc_request(c, st);
	}
}
