// SPDX-License-Identifier: Apache-2.0
/*
 * /v1's agent runner routes (v1.h): runs, their tool calls and events, tool calls in a
 * sandbox without a run, and the approval queue. A tool call never runs on the loop: the
 * handler queues it (runs.h) and defers its reply, which the loop gives once a worker is
 * done with it.
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent-text.h"
#include "cleanup.h"
#include "http.h"
#include "runs.h"
#include "server.h"
#include "tokens.h"
#include "util.h"
#include "v1.h"

#define TOOL_NAME_MAX 64
#define CALL_ID_MAX 256
#define REASON_MAX 1024
#define EVENTS_LIMIT_DEFAULT 1000 /* calls per page of GET .../events */
#define EVENTS_LIMIT_MAX 10000
#define EVENTS_BYTES_MAX (16U << 20) /* a page stops before it grows past this */

/* --- replies ------------------------------------------------------------------------- */

/* A /v1 error with a code of the runner's own (diverged, run_finished, ...). */
static void reply_code(struct ts_req *req, unsigned status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void reply_code(struct ts_req *req, unsigned status, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ts_sanitize_text(msg);
	ts_req_reply_json(req, status, ts_v1_error_json(code, msg));
}

/* The reply of a failed call or run: the runner's -errno and the backend's classes. */
static void reply_failure(struct ts_req *req, int r, const struct ts_error *err)
{
	switch (r) {
	case -EILSEQ:
		reply_code(req, 409, "diverged", "%s", err->msg);
		return;
	case -ESTALE:
		reply_code(req, 409, "run_finished", "%s", err->msg);
		return;
	case -ECANCELED:
	case -ESHUTDOWN:
		reply_code(req, 503, "unavailable", "%s", err->msg);
		return;
	case -EAGAIN:
		reply_code(req, 429, "resource_exhausted", "%s", err->msg);
		return;
	case -EINVAL:
		ts_v1_reply_error(req, "invalid_argument", "%s", err->msg);
		return;
	case -ENOENT:
		ts_v1_reply_error(req, "not_found", "%s", err->msg);
		return;
	default:
		ts_v1_reply_be_error(req, err);
	}
}

static void reply_stopping(struct ts_req *req)
{
	reply_code(req, 503, "unavailable",
		   "serve is stopping: the call was not answered (if it had started, the run's "
		   "log keeps it as started and it executes again when the run repeats it)");
}

/* --- checks ---------------------------------------------------------------------------- */

/* Tools that change nothing: a sandboxes:read token may call them. Every other tool
 * (bash, bash_stop, writes, send_file, and any unknown name) needs sandboxes:run. */
static const char *tool_scope(const char *tool)
{
	static const char *const readonly[] = { "read_file", "find", "grep", "bash_output",
						"bash_list" };

	for (size_t i = 0; i < ELEMENTSOF(readonly); i++)
		if (!strcmp(tool, readonly[i]))
			return TS_SCOPE_SANDBOXES_READ;
	return TS_SCOPE_SANDBOXES_RUN;
}

static bool tool_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > TOOL_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

/* Printable, no control characters, 1-CALL_ID_MAX bytes. */
static bool call_id_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > CALL_ID_MAX)
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

/* Does object o have only members of names (NULL-terminated)? Replies 400 when not. */
static bool only_members(struct ts_req *req, json_t *o, const char *what, const char *const *names)
{
	const char *k;
	json_t *v;

	json_object_foreach(o, k, v) {
		size_t i;

		for (i = 0; names[i] && strcmp(names[i], k); i++)
			;
		if (!names[i]) {
			char list[256] = "";

			for (i = 0; names[i]; i++)
				snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s`%s`",
					 i ? ", " : "", names[i]);
			ts_v1_reply_error(req, "invalid_argument",
					  "unknown member `%.64s` in %s: its members are %s", k,
					  what, list);
			return false;
		}
	}
	return true;
}

/* What an HTTP caller may not ask of serve's host: the configuration keys that would
 * hand it serve's environment, host files or serve's network position. */
static bool agent_allowed(struct ts_req *req, struct ts_srv *srv, const struct ts_agent *a)
{
	const char *backend = srv->opts->backend ? srv->opts->backend : "local";

	if (a->n_env) {
		ts_v1_reply_error(
			req, "invalid_argument",
			"`sandbox.env` is not accepted over HTTP: it would pass serve's "
			"own environment variables to the sandbox; give the variables "
			"to the sandbox another way, or start the run with `toren-sandbox "
			"runs new`");
		return false;
	}
	if (a->policy) {
		ts_v1_reply_error(req, "invalid_argument",
				  "`sandbox.policy` is not accepted over HTTP: it names a file on "
				  "serve's host; start the run with `toren-sandbox runs new`");
		return false;
	}
	if (a->outbox_dir || a->webhook_url) {
		ts_v1_reply_error(
			req, "invalid_argument",
			"`sandbox.channel` is not accepted over HTTP: serve would write "
			"host files or post to an address the caller picks; start the run "
			"with `toren-sandbox runs new`");
		return false;
	}
	if (a->backend && strcmp(a->backend, backend)) {
		ts_v1_reply_error(req, "invalid_argument",
				  "`sandbox.backend: %.32s`: this serve runs the %s backend",
				  a->backend, backend);
		return false;
	}
	if (!a->sandbox) {
		ts_v1_reply_error(req, "invalid_argument",
				  "`sandbox: false`: an agent's tools run only in a sandbox");
		return false;
	}
	return true;
}

/* --- queueing ------------------------------------------------------------------------- */

static void job_gone(void *userdata)
{
	struct ts_run_job *j = userdata;

	j->userdata = NULL;
}

/* Queue j and defer req's reply until j is done; replies itself when it cannot. */
static void submit(struct ts_srv *srv, struct ts_req *req, struct ts_run_job *j)
{
	struct ts_error err = { 0 };
	int r;

	j->userdata = req;
	r = ts_runs_submit(srv->runs, j, &err);
	if (r < 0) {
		ts_run_job_free(j);
		reply_failure(req, r, &err);
		return;
	}
	/* done() runs from the loop later, never before this */
	if (ts_req_defer(req, job_gone, j) < 0)
		j->userdata = NULL;
}

/* --- POST /v1/runs --------------------------------------------------------------------- */

static void open_done(struct ts_run_job *j, bool abandoned)
{
	struct ts_req *req = j->userdata;

	if (!req)
		return;
	j->userdata = NULL;
	if (abandoned) {
		reply_stopping(req);
		return;
	}
	if (j->r < 0) {
		reply_failure(req, j->r, &j->err);
		return;
	}
	ts_req_reply_json(req, 201,
			  json_pack("{s:s, s:s, s:o}", "run", j->run_id, "sandbox", j->sandbox_id,
				    "tools", j->tools ? json_incref(j->tools) : json_array()));
}

void ts_v1_run_new(void *ctx, struct ts_req *req)
{
	static const char *const members[] = { "agent", "agent_yaml", "sandbox", NULL };
	struct ts_srv *srv = ctx;
	_cleanup_(ts_agent_freep) struct ts_agent a = { 0 };
	_cleanup_free_ char *dumped = NULL;
	struct ts_error err = { 0 };
	const char *yaml = NULL, *sandbox = NULL, *text = NULL, *name = NULL;
	json_t *b, *agent;
	int r;

	if (!ts_v1_authorized(srv, req, TS_SCOPE_SANDBOXES_RUN) || !(b = ts_v1_body_object(req)) ||
	    !only_members(req, b, "the body", members))
		return;
	agent = json_object_get(b, "agent");
	if (!ts_v1_get_string(req, b, "agent_yaml", &yaml) ||
	    !ts_v1_get_string(req, b, "sandbox", &sandbox))
		return;
	if (agent && !json_is_null(agent) && !json_is_object(agent)) {
		ts_v1_reply_error(req, "invalid_argument",
				  "`agent` must be an object: the agent configuration, with the "
				  "keys of its YAML file (toren-sandbox.yaml(5))");
		return;
	}
	if (agent && json_is_null(agent))
		agent = NULL;
	if (agent && yaml) {
		ts_v1_reply_error(req, "invalid_argument",
				  "give `agent` or `agent_yaml`, not both");
		return;
	}
	if (sandbox &&
	    (!*sandbox || strlen(sandbox) >= sizeof(((struct ts_run_job *)0)->sandbox_id))) {
		ts_v1_reply_error(req, "invalid_argument", "`sandbox` must be a sandbox id");
		return;
	}
	if (agent) {
		/* JSON is YAML: the object goes to the same parser as a file would */
		if (!(dumped = json_dumps(agent, JSON_COMPACT))) {
			ts_v1_reply_error(req, "internal", "out of memory");
			return;
		}
		text = dumped;
		name = "agent";
	} else if (yaml) {
		text = yaml;
		name = "agent_yaml";
	}
	r = text ? ts_agent_load_text(text, strlen(text), name, &a, &err)
		 : ts_agent_default(&a, &err);
	if (r < 0) {
		reply_failure(req, r == -E2BIG ? -EINVAL : r, &err);
		return;
	}
	if (!agent_allowed(req, srv, &a))
		return;
	if (sandbox) {
		/* the runner would build a new sandbox for a run whose sandbox is gone: one the
		 * caller names must be there now */
		struct ts_srv_sb *e;

		r = ts_srv_sandbox(srv, sandbox, &e, &err);
		if (r == -ENOENT) {
			ts_v1_reply_error(req, "not_found", "sandbox `%.64s` not found", sandbox);
			return;
		}
		if (r < 0) {
			ts_v1_reply_be_error(req, &err);
			return;
		}
	}

	struct ts_run_job *j = ts_run_job_new(TS_RUN_JOB_OPEN);
	if (!j || (sandbox && !(j->sandbox = strdup(sandbox)))) {
		ts_run_job_free(j);
		ts_v1_reply_error(req, "internal", "out of memory");
		return;
	}
	j->agent = a;
	a = (struct ts_agent){ 0 };
	j->done = open_done;
	submit(srv, req, j);
}

/* --- tool calls -------------------------------------------------------------------------- */

static void call_done(struct ts_run_job *j, bool abandoned)
{
	struct ts_req *req = j->userdata;
	json_t *o;

	if (!req)
		return; /* the client went: the result is in the run's log */
	j->userdata = NULL;
	if (abandoned) {
		reply_stopping(req);
		return;
	}
	if (j->r < 0) {
		reply_failure(req, j->r, &j->err);
		return;
	}
	o = ts_tool_result_to_json(&j->res);
	if (o && j->run)
		/* an unknown tool takes no index: nothing of it is recorded */
		json_object_set_new(o, "call",
				    json_pack("{s:o, s:b, s:i}", "index",
					      j->info.index == UINT64_MAX
						      ? json_null()
						      : json_integer((json_int_t)j->info.index),
					      "replayed", j->info.replayed, "attempt",
					      (int)j->info.attempt));
	else if (o)
		json_object_set_new(o, "call", json_null());
	if (!o) {
		ts_v1_reply_error(req, "internal", "out of memory");
		return;
	}
	ts_req_reply_json(req, 200, o);
}

/*
 * The call of the route: {"arguments": {...}, "call_id": "KEY"} (both optional; call_id
 * only with a run). run: the run's id, or NULL for the sandbox of the route's first "*".
 */
static void tool_call(struct ts_srv *srv, struct ts_req *req, const char *run, const char *tool)
{
	static const char *const members_run[] = { "arguments", "call_id", NULL };
	static const char *const members_sb[] = { "arguments", NULL };
	const char *call_id = NULL;
	json_t *b, *args;

	if (!ts_v1_authorized(srv, req,
			      tool_name_ok(tool) ? tool_scope(tool) : TS_SCOPE_SANDBOXES_RUN))
		return;
	if (!tool_name_ok(tool)) {
		ts_v1_reply_error(req, "invalid_argument",
				  "`%.80s` is not a tool name (1-%d of a-z, 0-9, _)", tool,
				  TOOL_NAME_MAX);
		return;
	}
	if (!(b = ts_v1_body_object(req)) ||
	    !only_members(req, b, "a tool call (its arguments go in `arguments`)",
			  run ? members_run : members_sb) ||
	    !ts_v1_get_string(req, b, "call_id", &call_id))
		return;
	args = json_object_get(b, "arguments");
	if (args && !json_is_null(args) && !json_is_object(args)) {
		ts_v1_reply_error(req, "invalid_argument",
				  "`arguments` must be an object, like {\"command\": \"ls\"}");
		return;
	}
	if (call_id && !call_id_ok(call_id)) {
		ts_v1_reply_error(req, "invalid_argument",
				  "`call_id` must be 1-%d bytes without control characters",
				  CALL_ID_MAX);
		return;
	}
	if (run) {
		/* known and live, answered now rather than after a queue */
		_cleanup_(ts_run_rec_clear) struct ts_run_rec rec = { 0 };
		struct ts_error err = { 0 };
		struct ts_runlog *log;
		int r = ts_runs_log(srv->runs, &log, &err);

		if (r == 0)
			r = ts_runlog_run_get(log, run, &rec, &err);
		if (r == -ENOENT) {
			ts_v1_reply_error(req, "not_found", "no run `%.40s`", run);
			return;
		}
		if (r < 0) {
			reply_failure(req, r, &err);
			return;
		}
		if (rec.finished_ms) {
			reply_code(req, 409, "run_finished",
				   "run %s is finished: begin a new run (POST /v1/runs)", rec.id);
			return;
		}
	} else if (!ts_v1_route_sandbox(srv, req, NULL)) {
		return;
	}

	struct ts_run_job *j = ts_run_job_new(TS_RUN_JOB_CALL);
	if (!j || !(j->tool = strdup(tool)) || (call_id && !(j->key = strdup(call_id))) ||
	    (run && !(j->run = strdup(run))) ||
	    (!run && !(j->sandbox = strdup(ts_req_param(req, 0)))) ||
	    !(j->args = args && !json_is_null(args) ? json_deep_copy(args) : json_object())) {
		ts_run_job_free(j);
		ts_v1_reply_error(req, "internal", "out of memory");
		return;
	}
	j->done = call_done;
	submit(srv, req, j);
}

void ts_v1_run_tool(void *ctx, struct ts_req *req)
{
	tool_call(ctx, req, ts_req_param(req, 0), ts_req_param(req, 1));
}

void ts_v1_sandbox_tool(void *ctx, struct ts_req *req)
{
	tool_call(ctx, req, NULL, ts_req_param(req, 1));
}

/* --- GET /v1/runs/{run}/events ----------------------------------------------------------- */

static json_t *parse_or_string(const char *text)
{
	json_t *j = text ? json_loads(text, 0, NULL) : NULL;

	return j ? j : (text ? json_string(text) : json_null());
}

/* The records of `toren-sandbox runs export`: calls and events. */
static json_t *call_json(const struct ts_call_rec *c)
{
	return json_pack("{s:s, s:I, s:s, s:s, s:o, s:b, s:i, s:I, s:I, s:o}", "type", "call",
			 "index", (json_int_t)c->index, "key", c->key ? c->key : "", "tool",
			 c->tool ? c->tool : "", "args", parse_or_string(c->args), "completed",
			 c->completed, "attempts", (int)c->attempts, "started_ms",
			 (json_int_t)c->started_ms, "completed_ms", (json_int_t)c->completed_ms,
			 "result", c->result ? parse_or_string(c->result) : json_null());
}

static json_t *event_json(const struct ts_run_event *e)
{
	json_t *call = e->call == UINT64_MAX ? json_null() : json_integer((json_int_t)e->call);

	return json_pack("{s:s, s:I, s:o, s:I, s:s, s:o}", "type", "event", "seq",
			 (json_int_t)e->seq, "call", call, "ms", (json_int_t)e->ms, "event",
			 e->type ? e->type : "", "data", parse_or_string(e->data));
}

struct textbuf {
	char *p;
	size_t n, cap;
};

static int textbuf_add(struct textbuf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *np;

		while (cap < b->n + n + 1)
			cap *= 2;
		if (!(np = realloc(b->p, cap)))
			return -ENOMEM;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
	return 0;
}

static bool parse_query_u64(struct ts_req *req, const char *name, unsigned long long min,
			    unsigned long long max, unsigned long long *ret)
{
	const char *q = ts_req_query(req, name);
	unsigned long long v;

	if (!q)
		return true;
	if (ts_parse_ull(q, &v) < 0 || v < min || v > max) {
		ts_v1_reply_error(req, "invalid_argument", "`%s` is an integer from %llu to %llu",
				  name, min, max);
		return false;
	}
	*ret = v;
	return true;
}

void ts_v1_run_events(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	const char *run = ts_req_param(req, 0), *format = ts_req_query(req, "format");
	_cleanup_(ts_run_rec_clear) struct ts_run_rec rec = { 0 };
	unsigned long long since = 0, limit = EVENTS_LIMIT_DEFAULT;
	struct ts_call_rec *calls = NULL;
	struct ts_run_event *evs = NULL;
	size_t n_calls = 0, n_all = 0, n_evs = 0, i = 0, k = 0, items = 0;
	struct textbuf out = { 0 };
	struct ts_error err = { 0 };
	struct ts_runlog *log;
	bool lines, cut = false;
	int r;

	if (!ts_v1_authorized(srv, req, TS_SCOPE_SANDBOXES_READ) ||
	    !parse_query_u64(req, "since", 0, UINT64_MAX - 1, &since) ||
	    !parse_query_u64(req, "limit", 1, EVENTS_LIMIT_MAX, &limit))
		return;
	if (format && strcmp(format, "json") && strcmp(format, "jsonl")) {
		ts_v1_reply_error(req, "invalid_argument", "`format` is json or jsonl");
		return;
	}
	lines = format && !strcmp(format, "jsonl");
	r = ts_runs_log(srv->runs, &log, &err);
	if (r == 0)
		r = ts_runlog_run_get(log, run, &rec, &err);
	if (r == 0)
		r = ts_runlog_call_list(log, run, since, &calls, &n_all, &err);
	n_calls = n_all;
	if (r == 0)
		r = ts_runlog_event_list(log, run, &evs, &n_evs, &err);
	if (r == -ENOENT) {
		ts_v1_reply_error(req, "not_found", "no run `%.40s`", run);
		goto out;
	}
	if (r < 0) {
		reply_failure(req, r, &err);
		goto out;
	}
	if (n_calls > limit) {
		n_calls = (size_t)limit;
		cut = true;
	}
	r = textbuf_add(&out, lines ? "" : "[", lines ? 0 : 1);
	/* merged by time as `runs export` merges them: a call at its start, an event when it
	 * happened; events of the calls listed, and the run's own ones from the start */
	while (r == 0 && (i < n_calls || k < n_evs)) {
		const struct ts_run_event *e = k < n_evs ? &evs[k] : NULL;
		bool ev_in = e && (e->call == UINT64_MAX
					   ? since == 0
					   : e->call >= since &&
						     (n_calls ? e->call <= calls[n_calls - 1].index
							      : false));
		bool is_call = !e || (i < n_calls && calls[i].started_ms <= e->ms);
		json_t *j;

		if (!is_call && !ev_in) {
			k++;
			continue;
		}
		j = is_call ? call_json(&calls[i]) : event_json(e);
		_cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
		json_decref(j);
		if (!text) {
			r = -ENOMEM;
			break;
		}
		if (is_call && items && out.n + strlen(text) > EVENTS_BYTES_MAX) {
			n_calls = i; /* the page ends before this call */
			cut = true;
			break;
		}
		if (!lines && items)
			r = textbuf_add(&out, ",", 1);
		if (r == 0)
			r = textbuf_add(&out, text, strlen(text));
		if (r == 0 && lines)
			r = textbuf_add(&out, "\n", 1);
		items++;
		if (is_call)
			i++;
		else
			k++;
	}
	if (r == 0 && !lines)
		r = textbuf_add(&out, "]", 1);
	if (r < 0) {
		ts_v1_reply_error(req, "internal", "out of memory");
		goto out;
	}
	if (cut && n_calls) {
		char next[32];

		/* where the next page begins */
		snprintf(next, sizeof(next), "%llu",
			 (unsigned long long)calls[n_calls - 1].index + 1);
		ts_req_add_header(req, "X-Next-Since", next);
	}
	ts_req_reply_take(req, 200, lines ? "application/x-ndjson" : "application/json",
			  TAKE_PTR(out.p), out.n);
out:
	free(out.p);
	ts_call_recs_free(calls, n_all);
	ts_run_events_free(evs, n_evs);
}

/* --- approvals --------------------------------------------------------------------------- */

void ts_v1_approvals(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	json_t *a;

	if (!ts_v1_authorized(srv, req, TS_SCOPE_APPROVALS))
		return;
	if (!(a = ts_runs_approvals(srv->runs))) {
		ts_v1_reply_error(req, "internal", "out of memory");
		return;
	}
	ts_req_reply_json(req, 200, json_pack("{s:o}", "approvals", a));
}

void ts_v1_approval_decide(void *ctx, struct ts_req *req)
{
	static const char *const members[] = { "approve", "reason", NULL };
	struct ts_srv *srv = ctx;
	const char *id = ts_req_param(req, 0), *reason = NULL;
	struct ts_error err = { 0 };
	json_t *b, *approve;
	int r;

	if (!ts_v1_authorized(srv, req, TS_SCOPE_APPROVALS) || !(b = ts_v1_body_object(req)) ||
	    !only_members(req, b, "a decision", members) ||
	    !ts_v1_get_string(req, b, "reason", &reason))
		return;
	approve = json_object_get(b, "approve");
	if (!json_is_boolean(approve)) {
		ts_v1_reply_error(req, "invalid_argument",
				  "`approve` (true or false) is required: {\"approve\": true, "
				  "\"reason\": \"...\"}");
		return;
	}
	if (reason && strlen(reason) > REASON_MAX) {
		ts_v1_reply_error(req, "invalid_argument", "`reason` is at most %d bytes",
				  REASON_MAX);
		return;
	}
	r = ts_runs_decide(srv->runs, id, json_is_true(approve), reason, &err);
	if (r == -ENOENT) {
		ts_v1_reply_error(req, "not_found", "%s", err.msg);
		return;
	}
	if (r == -EALREADY) {
		reply_code(req, 409, "already_decided", "%s", err.msg);
		return;
	}
	if (r < 0) {
		reply_failure(req, r, &err);
		return;
	}
	ts_req_reply_json(req, 200,
			  json_pack("{s:s, s:b, s:o}", "id", id, "approve", json_is_true(approve),
				    "reason", reason ? json_string(reason) : json_null()));
}

int ts_v1_tools_begin(void *ctx, struct ts_req *req)
{
	return ts_v1_body_begin(req, TS_V1_TOOL_BODY_MAX);
}
