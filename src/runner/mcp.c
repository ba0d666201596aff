/* SPDX-License-Identifier: Apache-2.0 */
/* The MCP server: newline-delimited JSON-RPC 2.0 on two fds, the toolkit of one runner. */
#include "mcp.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "util.h"

/* JSON-RPC 2.0's error codes (MCP uses them as they are). */
#define RPC_PARSE_ERROR -32700
#define RPC_INVALID_REQUEST -32600
#define RPC_METHOD_NOT_FOUND -32601
#define RPC_INVALID_PARAMS -32602
#define RPC_INTERNAL_ERROR -32603
#define RPC_SERVER_BUSY -32000 /* implementation-defined: the queue is full */

#define READ_CHUNK (64U << 10)
#define ELICIT_SUMMARY_MAX 4000 /* bytes of the command shown to whoever approves */

const char *const ts_mcp_versions[] = {
	"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", NULL,
};

struct queued {
	json_t *msg;
	size_t bytes;
};

struct ts_mcp {
	int in_fd, out_fd;
	char *version;
	struct ts_runner *runner;	    /* borrowed, while serving */
	struct ts_approver approver;	    /* ours, given to the runner */
	const struct ts_approver *fallback; /* --approve-cmd, or NULL */
	ts_mcp_log_fn log;
	void *userdata;

	/* input: buf[0..len) read, not yet consumed */
	char *buf;
	size_t len, cap;
	size_t consumed; /* the line last returned, dropped by the next read */
	bool eof;
	bool discarding; /* inside a line past TS_MCP_LINE_MAX: dropped up to its newline */

	bool initialized; /* initialize answered */
	bool elicit;	  /* the client takes form-mode elicitation requests */

	struct queued queue[TS_MCP_QUEUE_MAX];
	size_t n_queued, queued_bytes;

	json_t *cur_id;		   /* the tools/call being executed (borrowed), or NULL */
	bool cur_cancelled;	   /* the client cancelled it while it waited for approval */
	uint64_t next_id;	   /* of our own requests to the client */
	struct ts_error write_err; /* the first write that failed: serving ends */
};

__attribute__((format(printf, 2, 3))) static void logf_(struct ts_mcp *m, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!m->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	m->log(m->userdata, msg);
}

/* --- text ------------------------------------------------------------------------------ */

/* A JSON string of text, every invalid UTF-8 byte (a tool's output may have any) shown as
 * U+FFFD; at most max bytes of text taken, cut at a character's boundary. */
static json_t *text_json(const char *text, size_t max)
{
	const unsigned char *s = (const unsigned char *)(text ? text : "");
	size_t n = strlen((const char *)s), o = 0;
	_cleanup_free_ char *out = NULL;
	json_t *j;

	if (n <= max && (j = json_stringn((const char *)s, n)))
		return j;
	out = malloc((n < max ? n : max) * 3 + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t l = ts_utf8_seq((const char *)s + i, n - i);

		if (i + (l ? l : 1) > max)
			break;
		if (l) {
			memcpy(out + o, s + i, l);
			o += l;
			i += l;
		} else {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	return json_stringn(out, o);
}

/* --- output ---------------------------------------------------------------------------- */

/* One message, one line (compact JSON escapes every control character: no newline
 * inside). Steals msg. */
static int send_msg(struct ts_mcp *m, json_t *msg, struct ts_error *err)
{
	_cleanup_free_ char *s = NULL;
	size_t n;
	int r;

	if (!msg)
		return ts_err(err, -ENOMEM, "out of memory building a response");
	s = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	if (!s)
		return ts_err(err, -ENOMEM, "out of memory writing a response");
	n = strlen(s);
	s[n] = '\n';
	r = ts_write_all(m->out_fd, s, n + 1);
	if (r < 0) {
		r = ts_err_errno(err, r, "write to the client");
		if (!m->write_err.code)
			m->write_err = *err;
		return r;
	}
	return 0;
}

static int send_result(struct ts_mcp *m, json_t *id, json_t *result, struct ts_error *err)
{
	if (!result)
		return ts_err(err, -ENOMEM, "out of memory building a response");
	return send_msg(
		m, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result), err);
}

__attribute__((format(printf, 4, 5))) static int send_error(struct ts_mcp *m, json_t *id, int code,
							    const char *fmt, ...)
{
	struct ts_error err = { 0 };
	char msg[1024];
	va_list ap;
	json_t *e;
	int r;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	e = json_pack("{s:i, s:o}", "code", code, "message", text_json(msg, sizeof(msg)));
	r = send_msg(m,
		     json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(),
			       "error", e),
		     &err);
	if (r < 0)
		logf_(m, "%s", err.msg);
	return r;
}

/* --- input ----------------------------------------------------------------------------- */

enum {
	LINE_EOF = 0,
	LINE_OK,
	LINE_TOO_LONG,
	LINE_TIMEOUT,
};

static void drop(struct ts_mcp *m, size_t n)
{
	if (n == 0)
		return;
	memmove(m->buf, m->buf + n, m->len - n);
	m->len -= n;
}

/* Room for READ_CHUNK more bytes (and a NUL): the buffer doubles, up to a line's bound. */
static int grow(struct ts_mcp *m, struct ts_error *err)
{
	size_t cap;
	char *b;

	if (m->cap - m->len > READ_CHUNK)
		return 0;
	cap = m->cap * 2 > m->len + READ_CHUNK + 1 ? m->cap * 2 : m->len + READ_CHUNK + 1;
	if (cap > TS_MCP_LINE_MAX + 2 * (size_t)READ_CHUNK)
		cap = TS_MCP_LINE_MAX + 2 * (size_t)READ_CHUNK;
	b = realloc(m->buf, cap);
	if (!b)
		return ts_err(err, -ENOMEM, "out of memory reading a request");
	m->buf = b;
	m->cap = cap;
	return 0;
}

/*
 * The next line into *line and *n (its newline replaced by a NUL; valid until the next
 * call). timeout_ms < 0 waits for ever. LINE_TOO_LONG, once, for a line past
 * TS_MCP_LINE_MAX, whose bytes are dropped up to its newline. A last line without a
 * newline is a line. -errno when reading failed.
 */
static int read_line(struct ts_mcp *m, int timeout_ms, char **line, size_t *n, struct ts_error *err)
{
	unsigned long long deadline = timeout_ms < 0 ? 0 : ts_now_ms() + (unsigned)timeout_ms;
	size_t scanned = 0;
	int r;

	drop(m, m->consumed);
	m->consumed = 0;
	for (;;) {
		char *nl = m->len > scanned ? memchr(m->buf + scanned, '\n', m->len - scanned)
					    : NULL;
		ssize_t k;

		if (nl) {
			size_t l = (size_t)(nl - m->buf);

			if (m->discarding || l > TS_MCP_LINE_MAX) {
				bool report = !m->discarding;

				m->discarding = false;
				drop(m, l + 1);
				scanned = 0;
				if (report)
					return LINE_TOO_LONG;
				continue;
			}
			*nl = '\0';
			*line = m->buf;
			*n = l;
			m->consumed = l + 1;
			return LINE_OK;
		}
		if (m->discarding) {
			m->len = 0;
		} else if (m->len > TS_MCP_LINE_MAX) {
			m->discarding = true;
			m->len = 0;
			return LINE_TOO_LONG;
		}
		scanned = m->len;
		if (m->eof) {
			if (m->len == 0)
				return LINE_EOF;
			/* the last line, unterminated (grow left room for its NUL) */
			m->buf[m->len] = '\0';
			*line = m->buf;
			*n = m->len;
			m->consumed = m->len;
			return LINE_OK;
		}
		r = grow(m, err);
		if (r < 0)
			return r;
		if (timeout_ms >= 0) {
			struct pollfd p = { .fd = m->in_fd, .events = POLLIN };
			unsigned long long now = ts_now_ms();
			int pr;

			if (now >= deadline)
				return LINE_TIMEOUT;
			pr = poll(&p, 1, deadline - now > 60000 ? 60000 : (int)(deadline - now));
			if (pr < 0 && errno == EINTR)
				continue;
			if (pr < 0)
				return ts_err_errno(err, -errno, "poll the client's input");
			if (pr == 0)
				continue;
		}
		k = read(m->in_fd, m->buf + m->len, m->cap - m->len - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return ts_err_errno(err, -errno, "read from the client");
		if (k == 0)
			m->eof = true;
		m->len += (size_t)k;
	}
}

enum msg_kind {
	MSG_REQUEST,
	MSG_NOTIFICATION,
	MSG_RESPONSE,
};

/*
 * The next message: 1 with *msg (an object with "jsonrpc": "2.0" and a valid shape, its
 * kind in *kind), 1 with *msg NULL when a line was none (blank, or answered with an
 * error here), 0 at end of input, -ETIMEDOUT when timeout_ms passed first.
 */
static int next_msg(struct ts_mcp *m, int timeout_ms, json_t **msg, enum msg_kind *kind,
		    size_t *bytes, struct ts_error *err)
{
	json_t *j, *id, *method;
	json_error_t jerr;
	const char *v;
	char *line = NULL;
	size_t n = 0;
	int r;

	*msg = NULL;
	r = read_line(m, timeout_ms, &line, &n, err);
	if (r < 0)
		return r;
	if (r == LINE_EOF)
		return 0;
	if (r == LINE_TIMEOUT)
		return -ETIMEDOUT;
	if (r == LINE_TOO_LONG) {
		logf_(m, "a message longer than %u MiB was dropped", TS_MCP_LINE_MAX >> 20);
		send_error(m, NULL, RPC_PARSE_ERROR,
			   "message longer than %u MiB: dropped (one JSON-RPC message per line, "
			   "each at most %u bytes)",
			   TS_MCP_LINE_MAX >> 20, TS_MCP_LINE_MAX);
		return 1;
	}
	*bytes = n;
	while (n && strchr(" \t\r", line[n - 1]))
		n--;
	if (strspn(line, " \t\r") == n)
		return 1;
	if (!ts_json_depth_ok(line, n, TS_MCP_DEPTH_MAX)) {
		logf_(m, "a message nested deeper than %d levels was refused", TS_MCP_DEPTH_MAX);
		send_error(m, NULL, RPC_PARSE_ERROR, "JSON nested deeper than %d levels",
			   TS_MCP_DEPTH_MAX);
		return 1;
	}
	j = json_loadb(line, n, JSON_REJECT_DUPLICATES, &jerr);
	if (!j) {
		logf_(m, "a line that is not JSON: column %d: %s", jerr.column, jerr.text);
		send_error(m, NULL, RPC_PARSE_ERROR,
			   "parse error at column %d: %s (one JSON-RPC 2.0 message per line)",
			   jerr.column, jerr.text);
		return 1;
	}
	if (!json_is_object(j)) {
		send_error(m, NULL, RPC_INVALID_REQUEST,
			   json_is_array(j) ? "batches are not supported: send one message per line"
					    : "a message is a JSON object");
		json_decref(j);
		return 1;
	}
	id = json_object_get(j, "id");
	if (id && !json_is_string(id) && !json_is_integer(id))
		id = NULL; /* not one to echo: the error goes out with id null */
	v = json_string_value(json_object_get(j, "jsonrpc"));
	if (!v || strcmp(v, "2.0")) {
		send_error(m, id, RPC_INVALID_REQUEST, "`jsonrpc` must be \"2.0\"");
		json_decref(j);
		return 1;
	}
	method = json_object_get(j, "method");
	if (method) {
		if (!json_is_string(method)) {
			send_error(m, id, RPC_INVALID_REQUEST, "`method` must be a string");
			json_decref(j);
			return 1;
		}
		if (json_object_get(j, "id") && !id) {
			send_error(m, NULL, RPC_INVALID_REQUEST,
				   "`id` must be a string or an integer");
			json_decref(j);
			return 1;
		}
		*kind = id ? MSG_REQUEST : MSG_NOTIFICATION;
	} else if (id && (json_object_get(j, "result") || json_object_get(j, "error"))) {
		*kind = MSG_RESPONSE;
	} else {
		send_error(m, id, RPC_INVALID_REQUEST,
			   "neither a request (`method`) nor a response (`result` or `error`)");
		json_decref(j);
		return 1;
	}
	*msg = j;
	return 1;
}

/* --- requests -------------------------------------------------------------------------- */

static void dispatch(struct ts_mcp *m, json_t *msg, enum msg_kind kind, size_t bytes, bool waiting);

static json_t *tool_names(unsigned version)
{
	json_t *schemas = ts_toolbox_schemas(version), *t;
	_cleanup_free_ char *s = NULL;
	size_t i, len = 0;

	if (!schemas)
		return NULL;
	json_array_foreach(schemas, i, t) {
		const char *name = json_string_value(json_object_get(t, "name"));
		size_t l = name ? strlen(name) : 0;
		char *p = realloc(s, len + l + 3);

		if (!p)
			break;
		s = p;
		len += (size_t)sprintf(s + len, "%s%s", len ? ", " : "", name ? name : "");
	}
	json_decref(schemas);
	return text_json(s, 4096);
}

static int on_initialize(struct ts_mcp *m, json_t *id, json_t *params, struct ts_error *err)
{
	const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
	json_t *caps = json_object_get(params, "capabilities");
	json_t *el = json_object_get(caps, "elicitation");
	json_t *info = json_object_get(params, "clientInfo");
	const char *version = ts_mcp_versions[0];

	if (m->initialized)
		return send_error(m, id, RPC_INVALID_REQUEST, "already initialized");
	if (!asked)
		return send_error(m, id, RPC_INVALID_PARAMS,
				  "`params.protocolVersion` (a string) is required");
	for (size_t i = 0; ts_mcp_versions[i]; i++)
		if (!strcmp(asked, ts_mcp_versions[i]))
			version = ts_mcp_versions[i];
	/* form mode: declared, or implied by an elicitation capability that names no mode */
	m->elicit = json_is_object(el) &&
		    (json_object_get(el, "form") || !json_object_get(el, "url"));
	m->approver.name = m->elicit || !m->fallback ? "mcp" : m->fallback->name;
	m->initialized = true;
	logf_(m, "client %s %s, protocol %s, approvals by %s",
	      json_string_value(json_object_get(info, "name")) ?: "(unnamed)",
	      json_string_value(json_object_get(info, "version")) ?: "", version,
	      m->elicit	    ? "elicitation"
	      : m->fallback ? m->fallback->name
			    : "nobody (denied)");
	return send_result(
		m, id,
		json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", version,
			  "capabilities", "tools", "listChanged", 0, "serverInfo", "name",
			  "toren-sandbox", "title", "toren-sandbox agent toolkit", "version",
			  m->version, "instructions",
			  "The tools act in a Linux sandbox: paths are relative to the workspace, "
			  "the sandbox user's home. A result with isError says what failed and what "
			  "to do next."),
		err);
}

static int on_tools_list(struct ts_mcp *m, json_t *id, json_t *params, struct ts_error *err)
{
	json_t *cursor = json_object_get(params, "cursor");
	json_t *tools;

	if (cursor && !json_is_null(cursor))
		return send_error(m, id, RPC_INVALID_PARAMS,
				  "unknown cursor: the list comes whole, without one");
	tools = ts_toolbox_schemas(ts_runner_tools_version(m->runner));
	if (!tools)
		return send_error(m, id, RPC_INTERNAL_ERROR, "out of memory listing the tools");
	return send_result(m, id, json_pack("{s:o}", "tools", tools), err);
}

/* The outcome of a call whose runner failed (not the tool): an isError result all the
 * same, for the model to read. */
static void runner_failure(int r, const struct ts_error *cerr, struct ts_tool_result *res)
{
	const char *code = r == -EILSEQ ? "divergence" : "runner";
	const char *msg = cerr->msg[0] ? cerr->msg : strerror(-r);
	char text[1024];

	ts_tool_result_clear(res);
	if (r == -EILSEQ)
		snprintf(text, sizeof(text),
			 "the call was not run: it diverges from the run's log: %s (repeat the "
			 "run's calls in their order, or start a new run)",
			 msg);
	else
		snprintf(text, sizeof(text),
			 "the call was not run: %s (the sandbox or the event log failed; calling "
			 "again retries)",
			 msg);
	res->is_error = true;
	res->text = strdup(text);
	res->data = json_pack("{s:s, s:s}", "error", code, "message", msg);
}

static int on_tools_call(struct ts_mcp *m, json_t *id, json_t *params, struct ts_error *err)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *args = json_object_get(params, "arguments");
	unsigned version = ts_runner_tools_version(m->runner);
	_cleanup_(json_decrefp) json_t *empty = NULL;
	struct ts_tool_result res = { 0 };
	struct ts_call_info info = { .index = UINT64_MAX, .attempt = 1 };
	struct ts_error cerr = { 0 };
	json_t *result, *meta;
	bool cancelled;
	int r;

	if (!json_is_object(params) || !name)
		return send_error(m, id, RPC_INVALID_PARAMS,
				  "`params.name` (the tool's name, a string) is required");
	if (args && !json_is_null(args) && !json_is_object(args))
		return send_error(m, id, RPC_INVALID_PARAMS,
				  "`params.arguments` must be an object (the tool's arguments)");
	if (!ts_tool_known(version, name)) {
		_cleanup_(json_decrefp) json_t *names = tool_names(version);

		return send_error(m, id, RPC_INVALID_PARAMS,
				  "unknown tool `%.100s`: the tools are %s (see tools/list)", name,
				  json_string_value(names) ?: "in tools/list");
	}
	if (!args || json_is_null(args)) {
		empty = json_object();
		args = empty;
	}
	m->cur_id = id;
	m->cur_cancelled = false;
	r = ts_runner_call(m->runner, NULL, name, args, &res, &info, &cerr);
	cancelled = m->cur_cancelled;
	m->cur_id = NULL;
	if (r < 0) {
		logf_(m, "`%s`: %s", name, cerr.msg[0] ? cerr.msg : strerror(-r));
		runner_failure(r, &cerr, &res);
	}
	if (cancelled) {
		/* the client gave up on it: no response (MCP's cancellation) */
		ts_tool_result_clear(&res);
		return 0;
	}
	meta = json_pack("{s:b, s:I}", "replayed", info.replayed, "attempt",
			 (json_int_t)info.attempt);
	if (meta && info.index != UINT64_MAX)
		json_object_set_new(meta, "index", json_integer((json_int_t)info.index));
	if (meta && ts_runner_run_id(m->runner)[0])
		json_object_set_new(meta, "run", json_string(ts_runner_run_id(m->runner)));
	result = json_pack("{s:[{s:s, s:o}], s:b, s:{s:o}}", "content", "type", "text", "text",
			   text_json(res.text, TS_MCP_LINE_MAX / 2), "isError", res.is_error,
			   "_meta", "toren-sandbox/call", meta);
	/* structuredContent is an object (MCP): anything else is wrapped */
	if (result && json_is_object(res.data))
		json_object_set(result, "structuredContent", res.data);
	else if (result && res.data)
		json_object_set_new(result, "structuredContent",
				    json_pack("{s:O}", "value", res.data));
	ts_tool_result_clear(&res);
	return send_result(m, id, result, err);
}

/* A request, answered (or queued: a tools/call while another waits for approval). */
static int on_request(struct ts_mcp *m, json_t *msg, struct ts_error *err)
{
	const char *method = json_string_value(json_object_get(msg, "method"));
	json_t *id = json_object_get(msg, "id");
	json_t *params = json_object_get(msg, "params");

	if (params && !json_is_object(params))
		return send_error(m, id, RPC_INVALID_PARAMS, "`params` must be an object");
	if (!strcmp(method, "ping"))
		return send_result(m, id, json_object(), err);
	if (!strcmp(method, "initialize"))
		return on_initialize(m, id, params, err);
	if (!strcmp(method, "tools/list") || !strcmp(method, "tools/call")) {
		if (!m->initialized)
			return send_error(m, id, RPC_INVALID_REQUEST,
					  "not initialized: send `initialize` first");
		if (!strcmp(method, "tools/list"))
			return on_tools_list(m, id, params, err);
		return on_tools_call(m, id, params, err);
	}
	return send_error(m, id, RPC_METHOD_NOT_FOUND,
			  "method `%.100s` not found: this server has initialize, ping, tools/list "
			  "and tools/call",
			  method);
}

static void on_notification(struct ts_mcp *m, json_t *msg)
{
	const char *method = json_string_value(json_object_get(msg, "method"));
	json_t *params = json_object_get(msg, "params");
	json_t *rid = json_object_get(params, "requestId");

	if (strcmp(method, "notifications/cancelled") || !rid)
		return; /* initialized, progress, roots/list_changed...: nothing to do */
	if (m->cur_id && json_equal(rid, m->cur_id)) {
		m->cur_cancelled = true;
		return;
	}
	for (size_t i = 0; i < m->n_queued; i++)
		if (json_equal(rid, json_object_get(m->queue[i].msg, "id"))) {
			m->queued_bytes -= m->queue[i].bytes;
			json_decref(m->queue[i].msg);
			memmove(&m->queue[i], &m->queue[i + 1],
				(m->n_queued - i - 1) * sizeof(m->queue[0]));
			m->n_queued--;
			return;
		}
}

/* Takes msg. waiting: inside an approval: a tools/call waits in the queue. */
static void dispatch(struct ts_mcp *m, json_t *msg, enum msg_kind kind, size_t bytes, bool waiting)
{
	const char *method = json_string_value(json_object_get(msg, "method"));
	struct ts_error err = { 0 };

	switch (kind) {
	case MSG_RESPONSE:
		logf_(m, "a response to no request of ours was dropped");
		break;
	case MSG_NOTIFICATION:
		on_notification(m, msg);
		break;
	case MSG_REQUEST:
		if (waiting && !strcmp(method, "tools/call")) {
			if (m->n_queued == TS_MCP_QUEUE_MAX ||
			    m->queued_bytes + bytes > TS_MCP_QUEUE_BYTES_MAX) {
				send_error(m, json_object_get(msg, "id"), RPC_SERVER_BUSY,
					   "busy: %zu calls wait for one that waits for approval; "
					   "send this one again after it",
					   m->n_queued);
				break;
			}
			m->queue[m->n_queued++] = (struct queued){ msg, bytes };
			m->queued_bytes += bytes;
			return;
		}
		if (on_request(m, msg, &err) < 0)
			logf_(m, "%s", err.msg);
		break;
	}
	json_decref(msg);
}

/* --- approvals ------------------------------------------------------------------------- */

static int deny(bool *allow, char **reason, const char *why, struct ts_error *err)
{
	*allow = false;
	*reason = strdup(why);
	if (!*reason)
		return ts_err(err, -ENOMEM, "out of memory");
	return 0;
}

static void send_cancel(struct ts_mcp *m, uint64_t id, const char *why)
{
	struct ts_error err = { 0 };

	if (send_msg(m,
		     json_pack("{s:s, s:s, s:{s:I, s:s}}", "jsonrpc", "2.0", "method",
			       "notifications/cancelled", "params", "requestId", (json_int_t)id,
			       "reason", why),
		     &err) < 0)
		logf_(m, "%s", err.msg);
}

/* The client's answer to our elicitation/create. */
static int decide(struct ts_mcp *m, json_t *msg, const char *tool, bool *allow, char **reason,
		  struct ts_error *err)
{
	json_t *e = json_object_get(msg, "error");
	json_t *res = json_object_get(msg, "result");
	const char *action = json_string_value(json_object_get(res, "action"));
	json_t *content = json_object_get(res, "content");
	const char *why = json_string_value(json_object_get(content, "reason"));
	char text[1024];

	if (e) {
		const char *em = json_string_value(json_object_get(e, "message"));

		logf_(m, "the client could not ask for approval of `%s`: %s", tool, em ?: "");
		snprintf(text, sizeof(text),
			 "the client could not ask for approval (%.400s): nothing was run; set "
			 "`approval: never` in the agent's config to run without asking, or start "
			 "`toren-sandbox mcp` with --approve-cmd CMD",
			 em ?: "an error without a message");
		return deny(allow, reason, text, err);
	}
	if (action && !strcmp(action, "accept") &&
	    json_is_true(json_object_get(content, "approve"))) {
		*allow = true;
		*reason = why ? strndup(why, 500) : NULL;
		return 0;
	}
	if (action && !strcmp(action, "accept"))
		snprintf(text, sizeof(text), "the user did not approve it%s%.500s", why ? ": " : "",
			 why ?: "");
	else if (action && !strcmp(action, "decline"))
		snprintf(text, sizeof(text), "the user declined it%s%.500s", why ? ": " : "",
			 why ?: "");
	else if (action && !strcmp(action, "cancel"))
		snprintf(text, sizeof(text), "the user dismissed the approval without deciding");
	else
		snprintf(text, sizeof(text),
			 "the client's answer to the approval was not one "
			 "(no `action` of accept, decline or cancel)");
	return deny(allow, reason, text, err);
}

static int elicit(struct ts_mcp *m, const struct ts_approval_req *q, bool *allow, char **reason,
		  struct ts_error *err)
{
	uint64_t id = ++m->next_id;
	unsigned long long deadline = ts_now_ms() + TS_MCP_ELICIT_TIMEOUT_MS;
	_cleanup_free_ char *text = NULL;
	_cleanup_(json_decrefp) json_t *summary = text_json(q->summary, ELICIT_SUMMARY_MAX);
	char where[128] = "";
	json_t *req;
	int r;

	if (q->run && q->run[0])
		snprintf(where, sizeof(where), " (run %.40s, call %llu)", q->run,
			 (unsigned long long)q->call);
	if (asprintf(&text, "The agent wants to run `%s`%s:\n\n%s%s\n\nApprove?", q->tool, where,
		     json_string_value(summary) ?: "",
		     q->summary && strlen(q->summary) > ELICIT_SUMMARY_MAX ? " [...]" : "") < 0)
		return ts_err(err, -ENOMEM, "out of memory");
	req = json_pack("{s:s, s:I, s:s, s:{s:o, s:{s:s, s:{s:{s:s, s:s, s:s, s:b}, s:{s:s, s:s, "
			"s:s, s:i}}, s:[s]}}}",
			"jsonrpc", "2.0", "id", (json_int_t)id, "method", "elicitation/create",
			"params", "message", text_json(text, 2 * ELICIT_SUMMARY_MAX),
			"requestedSchema", "type", "object", "properties", "approve", "type",
			"boolean", "title", "Approve", "description",
			"Run this call (true) or refuse it (false)", "default", 0, "reason", "type",
			"string", "title", "Reason", "description",
			"Optional: why (the agent reads it)", "maxLength", 500, "required",
			"approve");
	r = send_msg(m, req, err);
	if (r < 0)
		return r;
	for (;;) {
		enum msg_kind kind;
		unsigned long long now;
		json_t *msg, *rid;
		size_t bytes = 0;

		if (m->cur_cancelled) {
			send_cancel(m, id, "the tool call was cancelled");
			return deny(allow, reason,
				    "the client cancelled the call while it waited for approval",
				    err);
		}
		now = ts_now_ms();
		if (now >= deadline) {
			send_cancel(m, id, "no answer in time");
			return deny(allow, reason, "no answer to the approval within an hour", err);
		}
		r = next_msg(m, (int)(deadline - now), &msg, &kind, &bytes, err);
		if (r == -ETIMEDOUT)
			continue;
		if (r < 0)
			return r;
		if (r == 0)
			return deny(
				allow, reason,
				"the client closed the connection before answering the approval",
				err);
		if (!msg)
			continue;
		rid = json_object_get(msg, "id");
		if (kind == MSG_RESPONSE && json_is_integer(rid) &&
		    json_integer_value(rid) == (json_int_t)id) {
			r = decide(m, msg, q->tool, allow, reason, err);
			json_decref(msg);
			return r;
		}
		dispatch(m, msg, kind, bytes, true);
	}
}

static int mcp_ask(void *userdata, const struct ts_approval_req *q, bool *allow, char **reason,
		   struct ts_error *err)
{
	struct ts_mcp *m = userdata;
	char text[512];

	*reason = NULL;
	if (m->elicit)
		return elicit(m, q, allow, reason, err);
	if (m->fallback)
		return m->fallback->ask(m->fallback->userdata, q, allow, reason, err);
	snprintf(text, sizeof(text),
		 "`%s` needs approval and there is no way to ask: this MCP client does not take "
		 "elicitation requests and `toren-sandbox mcp` has no --approve-cmd; set "
		 "`approval: never` in the agent's config to run without asking, or start it "
		 "with --approve-cmd CMD",
		 q->tool);
	return deny(allow, reason, text, err);
}

/* --- the server ------------------------------------------------------------------------ */

int ts_mcp_new(const struct ts_mcp_opts *o, struct ts_mcp **ret, struct ts_error *err)
{
	_cleanup_(ts_mcp_freep) struct ts_mcp *m = NULL;

	if (o->in_fd < 0 || o->out_fd < 0)
		return ts_err(err, -EBADF, "the MCP server needs an input and an output fd");
	m = calloc(1, sizeof(*m));
	if (!m)
		return ts_err(err, -ENOMEM, "out of memory");
	m->in_fd = o->in_fd;
	m->out_fd = o->out_fd;
	m->version = strdup(o->version ? o->version : "");
	if (!m->version)
		return ts_err(err, -ENOMEM, "out of memory");
	m->log = o->log;
	m->userdata = o->userdata;
	m->fallback = o->fallback;
	m->approver = (struct ts_approver){ .name = "mcp", .ask = mcp_ask, .userdata = m };
	*ret = TAKE_PTR(m);
	return 0;
}

void ts_mcp_free(struct ts_mcp *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_queued; i++)
		json_decref(m->queue[i].msg);
	free(m->buf);
	free(m->version);
	free(m);
}

const struct ts_approver *ts_mcp_approver(struct ts_mcp *m)
{
	return &m->approver;
}

int ts_mcp_serve(struct ts_mcp *m, struct ts_runner *runner, struct ts_error *err)
{
	m->runner = runner;
	while (!m->write_err.code) {
		enum msg_kind kind;
		size_t bytes = 0;
		json_t *msg;
		int r;

		if (m->n_queued) {
			struct queued q = m->queue[0];

			memmove(&m->queue[0], &m->queue[1],
				(m->n_queued - 1) * sizeof(m->queue[0]));
			m->n_queued--;
			m->queued_bytes -= q.bytes;
			dispatch(m, q.msg, MSG_REQUEST, q.bytes, false);
			continue;
		}
		r = next_msg(m, -1, &msg, &kind, &bytes, err);
		if (r <= 0)
			return r;
		if (msg)
			dispatch(m, msg, kind, bytes, false);
	}
	if (err)
		*err = m->write_err;
	return -m->write_err.code;
}
