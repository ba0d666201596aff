/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The MCP server's protocol (src/runner/mcp.c) against a fake runner, over pipes: what
 * the official SDK's client cannot be made to send (malformed lines, over-long and too
 * deep messages, batches, requests while an approval waits, cancellations, end of input
 * in the middle). The fake runner has the tools `echo` (its `text` back), `gated` (asks
 * the approver), `fail` (the runner fails), `diverge` (-EILSEQ) and `binary` (invalid
 * UTF-8 in its text).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../tap.h"
#include "mcp.h"
#include "util.h"

/* --- the fake runner ------------------------------------------------------------------- */

struct ts_runner {
	const struct ts_approver *approver;
	unsigned version;
	uint64_t calls;
};

int ts_runner_open(const struct ts_runner_opts *o, struct ts_runner **ret, struct ts_error *err)
{
	struct ts_runner *r = calloc(1, sizeof(*r));

	if (!r)
		return ts_err(err, -ENOMEM, "out of memory");
	r->approver = o->approver;
	r->version = 2;
	*ret = r;
	return 0;
}

void ts_runner_free(struct ts_runner *r)
{
	free(r);
}

const char *ts_runner_run_id(const struct ts_runner *r)
{
	(void)r;
	return "rfake";
}

const char *ts_runner_sandbox_id(const struct ts_runner *r)
{
	(void)r;
	return "";
}

unsigned ts_runner_tools_version(const struct ts_runner *r)
{
	return r->version;
}

static const char *const fake_tools[] = { "echo", "gated", "fail", "diverge", "binary", NULL };

bool ts_tool_known(unsigned version, const char *name)
{
	(void)version;
	for (size_t i = 0; fake_tools[i]; i++)
		if (!strcmp(name, fake_tools[i]))
			return true;
	return false;
}

json_t *ts_toolbox_schemas(unsigned version)
{
	json_t *a = json_array();

	(void)version;
	for (size_t i = 0; fake_tools[i]; i++)
		json_array_append_new(a, json_pack("{s:s, s:s, s:{s:s}}", "name", fake_tools[i],
						   "description", "a fake tool", "inputSchema",
						   "type", "object"));
	return a;
}

void ts_tool_result_clear(struct ts_tool_result *r)
{
	free(r->text);
	json_decref(r->data);
	*r = (struct ts_tool_result){ 0 };
}

int ts_runner_call(struct ts_runner *r, const char *key, const char *tool, json_t *args,
		   struct ts_tool_result *res, struct ts_call_info *info, struct ts_error *err)
{
	(void)key;
	*res = (struct ts_tool_result){ 0 };
	info->index = r->calls++;
	info->replayed = false;
	info->attempt = 1;
	if (!strcmp(tool, "echo")) {
		const char *t = json_string_value(json_object_get(args, "text"));

		res->text = strdup(t ? t : "");
		res->data = json_pack("{s:s}", "text", t ? t : "");
		return 0;
	}
	if (!strcmp(tool, "gated")) {
		struct ts_approval_req q = { .run = "rfake",
					     .call = info->index,
					     .tool = "bash",
					     .args = "{}",
					     .summary = "rm -rf /tmp/x" };
		char *reason = NULL;
		bool allow = false;
		int rr;

		rr = r->approver->ask(r->approver->userdata, &q, &allow, &reason, err);
		if (rr < 0)
			return rr;
		if (allow) {
			res->text = strdup("ran");
			res->data = json_pack("{s:b}", "ran", 1);
		} else {
			res->is_error = true;
			if (asprintf(&res->text, "denied: %s", reason ? reason : "") < 0)
				res->text = NULL;
			res->data = json_pack("{s:s, s:s}", "error", "denied", "message",
					      reason ? reason : "");
		}
		free(reason);
		return 0;
	}
	if (!strcmp(tool, "fail"))
		return ts_err(err, -EIO, "sandbox `x` does not answer");
	if (!strcmp(tool, "diverge"))
		return ts_err(err, -EILSEQ, "call 0 was `bash`, not `fail`");
	res->text = strdup("bad \xff\xfe bytes \xc3\xa9");
	res->data = json_object();
	return 0;
}

/* --- the harness ----------------------------------------------------------------------- */

struct srv {
	pid_t pid;
	int to, from; /* write requests, read responses */
	char buf[1 << 16];
	size_t len;
};

static int fallback_ask(void *userdata, const struct ts_approval_req *q, bool *allow, char **reason,
			struct ts_error *err)
{
	(void)userdata;
	(void)q;
	(void)err;
	*allow = true;
	*reason = NULL;
	return 0;
}

static const struct ts_approver fallback = { .name = "command", .ask = fallback_ask };

static void start(struct srv *s, bool with_fallback)
{
	int in[2], out[2];

	memset(s, 0, sizeof(*s));
	if (pipe(in) < 0 || pipe(out) < 0)
		abort();
	s->pid = fork();
	if (s->pid == 0) {
		struct ts_mcp_opts o = { .in_fd = in[0], .out_fd = out[1], .version = "test" };
		struct ts_runner_opts ro = { 0 };
		struct ts_runner *runner = NULL;
		struct ts_error err = { 0 };
		struct ts_mcp *m = NULL;
		int r;

		close(in[1]);
		close(out[0]);
		o.fallback = with_fallback ? &fallback : NULL;
		r = ts_mcp_new(&o, &m, &err);
		if (r == 0) {
			ro.approver = ts_mcp_approver(m);
			r = ts_runner_open(&ro, &runner, &err);
		}
		if (r == 0)
			r = ts_mcp_serve(m, runner, &err);
		ts_mcp_free(m);
		ts_runner_free(runner);
		_exit(r == 0 ? 0 : 3);
	}
	close(in[0]);
	close(out[1]);
	s->to = in[1];
	s->from = out[0];
}

static void sendl(struct srv *s, const char *line)
{
	if (ts_write_all(s->to, line, strlen(line)) < 0 || ts_write_all(s->to, "\n", 1) < 0)
		diag("write to the server failed");
}

/* The next message from the server, or NULL after 10 s (or at its end). */
static json_t *recvm(struct srv *s, int timeout_ms)
{
	for (;;) {
		char *nl = memchr(s->buf, '\n', s->len);
		struct pollfd p = { .fd = s->from, .events = POLLIN };
		ssize_t k;

		if (nl) {
			json_error_t jerr;
			json_t *j = json_loadb(s->buf, (size_t)(nl - s->buf), 0, &jerr);

			if (!j)
				diag("not JSON from the server: %.*s", (int)(nl - s->buf), s->buf);
			memmove(s->buf, nl + 1, s->len - (size_t)(nl + 1 - s->buf));
			s->len -= (size_t)(nl + 1 - s->buf);
			return j;
		}
		if (poll(&p, 1, timeout_ms) <= 0)
			return NULL;
		k = read(s->from, s->buf + s->len, sizeof(s->buf) - s->len);
		if (k <= 0)
			return NULL;
		s->len += (size_t)k;
	}
}

static int stop(struct srv *s)
{
	int status = -1;

	close(s->to);
	for (int i = 0; i < 100; i++) {
		if (waitpid(s->pid, &status, WNOHANG) == s->pid)
			break;
		usleep(50000);
		status = -1;
	}
	if (status == -1) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, &status, 0);
	}
	close(s->from);
	return status;
}

static long long err_code(json_t *j)
{
	return json_integer_value(json_object_get(json_object_get(j, "error"), "code"));
}

static const char *err_msg(json_t *j)
{
	const char *m = json_string_value(json_object_get(json_object_get(j, "error"), "message"));

	return m ? m : "";
}

static const char *text_of(json_t *j)
{
	json_t *c = json_object_get(json_object_get(j, "result"), "content");
	const char *t = json_string_value(json_object_get(json_array_get(c, 0), "text"));

	return t ? t : "";
}

static bool is_error(json_t *j)
{
	return json_is_true(json_object_get(json_object_get(j, "result"), "isError"));
}

static bool id_is(json_t *j, long long id)
{
	json_t *i = json_object_get(j, "id");

	return json_is_integer(i) && json_integer_value(i) == id;
}

static void init(struct srv *s, bool elicitation)
{
	json_t *j;

	sendl(s, elicitation
			 ? "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
			   "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{"
			   "\"elicitation\":{}},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}"
			 : "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
			   "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
			   "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
	j = recvm(s, 10000);
	if (!id_is(j, 0))
		diag("initialize was not answered");
	json_decref(j);
	sendl(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

#define CALL_GATED(id)                                                                             \
	"{\"jsonrpc\":\"2.0\",\"id\":" #id                                                         \
	",\"method\":\"tools/call\",\"params\":{\"name\":\"gated\",\"arguments\":{}}}"
#define CALL_ECHO(id, text)                                                                        \
	"{\"jsonrpc\":\"2.0\",\"id\":" #id                                                         \
	",\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"" text \
	"\"}}}"
#define PING(id) "{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":\"ping\"}"

static void test_handshake(void)
{
	struct srv s;
	json_t *j, *r;

	start(&s, false);
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	j = recvm(&s, 10000);
	ok(id_is(j, 1) && err_code(j) == -32600 && strstr(err_msg(j), "initialize"),
	   "tools/list before initialize: -32600 naming `initialize` (%s)", err_msg(j));
	json_decref(j);
	sendl(&s, PING(2));
	j = recvm(&s, 10000);
	ok(id_is(j, 2) && json_is_object(json_object_get(j, "result")) &&
		   json_object_size(json_object_get(j, "result")) == 0,
	   "ping before initialize: {}");
	json_decref(j);
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"initialize\",\"params\":{"
		  "\"protocolVersion\":\"2024-11-05\",\"capabilities\":{}}}");
	j = recvm(&s, 10000);
	r = json_object_get(j, "result");
	ok(json_is_string(json_object_get(j, "id")) &&
		   !strcmp(json_string_value(json_object_get(r, "protocolVersion")), "2024-11-05"),
	   "initialize: a supported version is answered as asked (string id kept)");
	ok(!strcmp(json_string_value(json_object_get(json_object_get(r, "serverInfo"), "name"))
			   ?: "",
		   "toren-sandbox") &&
		   json_is_object(json_object_get(json_object_get(r, "capabilities"), "tools")),
	   "initialize: serverInfo.name toren-sandbox, capabilities.tools");
	json_decref(j);
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\",\"params\":{"
		  "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{}}}");
	j = recvm(&s, 10000);
	ok(id_is(j, 3) && err_code(j) == -32600, "a second initialize: -32600");
	json_decref(j);
	ok(stop(&s) == 0, "end of input: the server exits 0");

	start(&s, false);
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}");
	j = recvm(&s, 10000);
	ok(id_is(j, 1) && err_code(j) == -32602 && strstr(err_msg(j), "protocolVersion"),
	   "initialize without protocolVersion: -32602 naming it (%s)", err_msg(j));
	json_decref(j);
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{"
		  "\"protocolVersion\":\"1999-01-01\",\"capabilities\":{}}}");
	j = recvm(&s, 10000);
	ok(id_is(j, 2) && !strcmp(json_string_value(json_object_get(json_object_get(j, "result"),
								    "protocolVersion"))
					  ?: "",
				  ts_mcp_versions[0]),
	   "initialize: an unknown version is answered with the newest (%s)", ts_mcp_versions[0]);
	json_decref(j);
	stop(&s);
}

static void test_malformed(void)
{
	struct srv s;
	json_t *j;
	char *big, *deep;
	size_t n = TS_MCP_LINE_MAX + 10;

	start(&s, false);
	init(&s, false);
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":");
	j = recvm(&s, 10000);
	ok(j && json_is_null(json_object_get(j, "id")) && err_code(j) == -32700,
	   "a line that is not JSON: -32700 with id null (%s)", err_msg(j));
	json_decref(j);
	sendl(&s, PING(2));
	j = recvm(&s, 10000);
	ok(id_is(j, 2), "the server goes on after a parse error");
	json_decref(j);

	big = malloc(n + 1);
	memset(big, ' ', n);
	{
		const char *head = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"x\":\"";

		memcpy(big, head, strlen(head));
	}
	big[n - 2] = '"';
	big[n - 1] = '}';
	big[n] = '\0';
	sendl(&s, big);
	free(big);
	sendl(&s, PING(4));
	j = recvm(&s, 20000);
	ok(j && err_code(j) == -32700 && strstr(err_msg(j), "MiB"),
	   "a line past 16 MiB: -32700 saying so (%s)", err_msg(j));
	json_decref(j);
	j = recvm(&s, 10000);
	ok(id_is(j, 4), "the server goes on after an over-long line (the next one answered)");
	json_decref(j);

	deep = malloc(200 + 100);
	strcpy(deep, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":{\"a\":");
	for (int i = 0; i < 100; i++)
		strcat(deep, "[");
	for (int i = 0; i < 100; i++)
		strcat(deep, "]");
	strcat(deep, "}}");
	sendl(&s, deep);
	free(deep);
	j = recvm(&s, 10000);
	ok(j && err_code(j) == -32700 && strstr(err_msg(j), "deeper"),
	   "JSON 100 levels deep: -32700 (%s)", err_msg(j));
	json_decref(j);

	sendl(&s, "[" PING(6) "]");
	j = recvm(&s, 10000);
	ok(j && err_code(j) == -32600 && strstr(err_msg(j), "batch"), "a batch: -32600 (%s)",
	   err_msg(j));
	json_decref(j);
	sendl(&s, "{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"ping\"}");
	j = recvm(&s, 10000);
	ok(id_is(j, 7) && err_code(j) == -32600, "jsonrpc 1.0: -32600 with the id");
	json_decref(j);
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"resources/list\"}");
	j = recvm(&s, 10000);
	ok(id_is(j, 8) && err_code(j) == -32601 && strstr(err_msg(j), "tools/call"),
	   "an unknown method: -32601 naming the methods (%s)", err_msg(j));
	json_decref(j);
	sendl(&s, "");
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}");
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"}");
	sendl(&s, PING(10));
	j = recvm(&s, 10000);
	ok(id_is(j, 10),
	   "a blank line, a stray response and an unknown notification get no answer");
	json_decref(j);
	ok(stop(&s) == 0, "the server exits 0 at end of input");
}

static void test_tools(void)
{
	struct srv s;
	json_t *j, *r;

	start(&s, false);
	init(&s, false);
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	j = recvm(&s, 10000);
	r = json_object_get(json_object_get(j, "result"), "tools");
	ok(json_array_size(r) == 5 &&
		   !strcmp(json_string_value(json_object_get(json_array_get(r, 0), "name")),
			   "echo"),
	   "tools/list: the runner's schemas");
	json_decref(j);
	sendl(&s, CALL_ECHO(2, "hi"));
	j = recvm(&s, 10000);
	r = json_object_get(j, "result");
	ok(id_is(j, 2) && !is_error(j) && !strcmp(text_of(j), "hi") &&
		   !strcmp(json_string_value(
				   json_object_get(json_object_get(r, "structuredContent"), "text"))
				   ?: "",
			   "hi"),
	   "tools/call: content text and structuredContent");
	ok(json_integer_value(json_object_get(
		   json_object_get(json_object_get(r, "_meta"), "toren-sandbox/call"), "index")) ==
		   0,
	   "tools/call: _meta names the call's index");
	json_decref(j);
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
		  "\"nope\",\"arguments\":{}}}");
	j = recvm(&s, 10000);
	ok(id_is(j, 3) && err_code(j) == -32602 && strstr(err_msg(j), "echo, gated"),
	   "an unknown tool: -32602 naming the tools (%s)", err_msg(j));
	json_decref(j);
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
		  "\"echo\",\"arguments\":[1]}}");
	j = recvm(&s, 10000);
	ok(id_is(j, 4) && err_code(j) == -32602, "arguments not an object: -32602");
	json_decref(j);
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":"
		  "\"echo\"}}");
	j = recvm(&s, 10000);
	ok(id_is(j, 5) && !is_error(j), "arguments absent: {}");
	json_decref(j);
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":"
		  "\"fail\"}}");
	j = recvm(&s, 10000);
	ok(id_is(j, 6) && is_error(j) && strstr(text_of(j), "does not answer") &&
		   !json_object_get(j, "error"),
	   "the runner failed: an isError result, not a JSON-RPC error (%s)", text_of(j));
	json_decref(j);
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
		  "\"diverge\"}}");
	j = recvm(&s, 10000);
	ok(id_is(j, 7) && is_error(j) && strstr(text_of(j), "diverges"),
	   "a divergence: an isError result saying so (%s)", text_of(j));
	json_decref(j);
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":"
		  "\"binary\"}}");
	j = recvm(&s, 10000);
	ok(id_is(j, 8) && !strcmp(text_of(j), "bad \xef\xbf\xbd\xef\xbf\xbd bytes \xc3\xa9"),
	   "invalid UTF-8 in a result's text: U+FFFD for each bad byte, the rest kept");
	json_decref(j);
	sendl(&s, CALL_GATED(9));
	j = recvm(&s, 10000);
	ok(id_is(j, 9) && is_error(j) && strstr(text_of(j), "`approval: never`") &&
		   strstr(text_of(j), "--approve-cmd"),
	   "gated, no elicitation, no --approve-cmd: denied naming `approval: never` and "
	   "--approve-cmd (%s)",
	   text_of(j));
	json_decref(j);
	/* end of input right after requests: every one is still answered */
	sendl(&s, CALL_ECHO(10, "a"));
	sendl(&s, CALL_ECHO(11, "b"));
	close(s.to);
	s.to = -1;
	j = recvm(&s, 10000);
	ok(id_is(j, 10), "requests before end of input are answered (1)");
	json_decref(j);
	j = recvm(&s, 10000);
	ok(id_is(j, 11) && !strcmp(text_of(j), "b"),
	   "requests before end of input are answered (2)");
	json_decref(j);
	ok(stop(&s) == 0, "then the server exits 0");

	start(&s, true);
	init(&s, false);
	sendl(&s, CALL_GATED(1));
	j = recvm(&s, 10000);
	ok(id_is(j, 1) && !is_error(j) && !strcmp(text_of(j), "ran"),
	   "gated, no elicitation: the fallback approver (--approve-cmd) decides");
	json_decref(j);
	stop(&s);
}

/* The server's elicitation request, or NULL. */
static json_t *expect_elicit(struct srv *s, long long *id)
{
	json_t *j = recvm(s, 10000);
	const char *method = json_string_value(json_object_get(j, "method"));
	json_t *p = json_object_get(j, "params");

	if (!method || strcmp(method, "elicitation/create") ||
	    !json_is_integer(json_object_get(j, "id"))) {
		json_decref(j);
		return NULL;
	}
	*id = json_integer_value(json_object_get(j, "id"));
	(void)p;
	return j;
}

static void answer(struct srv *s, long long id, const char *result)
{
	char line[512];

	snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":%s}", id, result);
	sendl(s, line);
}

static void test_elicitation(void)
{
	struct srv s;
	long long eid = 0;
	json_t *j, *p;
	const char *msg;

	start(&s, false);
	init(&s, true);
	sendl(&s, CALL_GATED(1));
	j = expect_elicit(&s, &eid);
	p = json_object_get(j, "params");
	msg = json_string_value(json_object_get(p, "message"));
	ok(j && msg && strstr(msg, "`bash`") && strstr(msg, "rm -rf /tmp/x"),
	   "a gated call with elicitation: elicitation/create naming the tool and the command");
	ok(!strcmp(json_string_value(json_object_get(
			   json_object_get(json_object_get(json_object_get(p, "requestedSchema"),
							   "properties"),
					   "approve"),
			   "type"))
			   ?: "",
		   "boolean"),
	   "its requestedSchema has a boolean `approve`");
	json_decref(j);
	/* while it waits: a ping is answered, a tools/call waits, a notification is taken */
	sendl(&s, PING(2));
	sendl(&s, CALL_ECHO(3, "queued"));
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}");
	j = recvm(&s, 10000);
	ok(id_is(j, 2), "a ping while the approval waits is answered at once");
	json_decref(j);
	answer(&s, eid, "{\"action\":\"accept\",\"content\":{\"approve\":true}}");
	j = recvm(&s, 10000);
	ok(id_is(j, 1) && !is_error(j) && !strcmp(text_of(j), "ran"),
	   "accept with approve true: the call runs");
	json_decref(j);
	j = recvm(&s, 10000);
	ok(id_is(j, 3) && !strcmp(text_of(j), "queued"),
	   "the tools/call sent while it waited runs after it");
	json_decref(j);

	sendl(&s, CALL_GATED(4));
	j = expect_elicit(&s, &eid);
	json_decref(j);
	answer(&s, eid, "{\"action\":\"decline\"}");
	j = recvm(&s, 10000);
	ok(id_is(j, 4) && is_error(j) && strstr(text_of(j), "declined"), "decline: denied (%s)",
	   text_of(j));
	json_decref(j);

	sendl(&s, CALL_GATED(5));
	j = expect_elicit(&s, &eid);
	json_decref(j);
	answer(&s, eid,
	       "{\"action\":\"accept\",\"content\":{\"approve\":false,\"reason\":\"not today\"}}");
	j = recvm(&s, 10000);
	ok(id_is(j, 5) && is_error(j) && strstr(text_of(j), "not today"),
	   "accept with approve false: denied with the reason (%s)", text_of(j));
	json_decref(j);

	sendl(&s, CALL_GATED(6));
	j = expect_elicit(&s, &eid);
	json_decref(j);
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{\"action\":\"accept\",\"content\":{"
		  "\"approve\":true}}}");
	{
		char line[256];

		snprintf(line, sizeof(line),
			 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32601,"
			 "\"message\":\"Method not found\"}}",
			 eid);
		sendl(&s, line);
	}
	j = recvm(&s, 10000);
	ok(id_is(j, 6) && is_error(j) && strstr(text_of(j), "Method not found"),
	   "a response of another id is not the answer; an error answer denies (%s)", text_of(j));
	json_decref(j);

	/* cancelled while it waits: the server cancels its request, the call gets no response */
	sendl(&s, CALL_GATED(7));
	j = expect_elicit(&s, &eid);
	json_decref(j);
	sendl(&s, CALL_ECHO(8, "dropped"));
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
		  "\"requestId\":8}}");
	sendl(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
		  "\"requestId\":7,\"reason\":\"user\"}}");
	j = recvm(&s, 10000);
	ok(j &&
		   !strcmp(json_string_value(json_object_get(j, "method")) ?: "",
			   "notifications/cancelled") &&
		   json_integer_value(json_object_get(json_object_get(j, "params"), "requestId")) ==
			   eid,
	   "cancelled while it waits: the server cancels its elicitation");
	json_decref(j);
	sendl(&s, PING(9));
	j = recvm(&s, 10000);
	ok(id_is(j, 9), "the cancelled call and the cancelled queued call get no response");
	json_decref(j);

	/* end of input while it waits: denied, the server ends cleanly */
	sendl(&s, CALL_GATED(10));
	j = expect_elicit(&s, &eid);
	json_decref(j);
	close(s.to);
	s.to = -1;
	j = recvm(&s, 10000);
	ok(id_is(j, 10) && is_error(j) && strstr(text_of(j), "closed"),
	   "end of input while it waits: denied (%s)", text_of(j));
	json_decref(j);
	ok(stop(&s) == 0, "then the server exits 0");
}

int main(void)
{
	plan(0);
	signal(SIGPIPE, SIG_IGN);
	test_handshake();
	test_malformed();
	test_tools();
	test_elicitation();
	return done();
}
