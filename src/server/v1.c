/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /v1 REST (v1.h): the routes, their token scopes, JSON in and out, the command stream
 * fed from the ts_cmd handle on the loop, whole-file transfers through ts_xfer.
 */
#include <errno.h>
#include <jansson.h>
#include <nettle/base64.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "backend.h"
#include "cleanup.h"
#include "http.h"
#include "loop.h"
#include "server.h"
#include "tokens.h"
#include "util.h"
#include "v1.h"

#define STEPS_PER_WAKE 64 /* events handled per loop wake-up, so one stream never starves others */
#define STDIN_CHUNK (64U << 10) /* bytes of input per message to the sandbox */
/* A command stream silent this long gets a keepalive (a blank before a JSON result, a
 * {"type":"keepalive"} event in ndjson), so no idle timeout on the way cuts it. */
#define KEEPALIVE_MS 20000

/* --- replies ------------------------------------------------------------------------- */

/* The status of each error code of /v1 (the codes are ts_be_code_name's, plus ours). */
static const struct {
	const char *code;
	unsigned status;
} error_status[] = {
	{ "invalid_argument", 400 },  { "unauthenticated", 401 },    { "permission_denied", 403 },
	{ "not_found", 404 },	      { "method_not_allowed", 405 }, { "already_exists", 409 },
	{ "payload_too_large", 413 }, { "resource_exhausted", 429 }, { "internal", 500 },
	{ "unimplemented", 501 },     { "unavailable", 503 },	     { "deadline_exceeded", 504 },
	{ "not_enough_space", 507 },
};

static unsigned status_of(const char *code)
{
	for (size_t i = 0; i < ELEMENTSOF(error_status); i++)
		if (!strcmp(error_status[i].code, code))
			return error_status[i].status;
	return 500;
}

static json_t *error_json(const char *code, const char *msg)
{
	return json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", msg);
}

__attribute__((format(printf, 3, 4))) static void reply_error(struct ts_req *req, const char *code,
							      const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ts_sanitize_text(msg);
	ts_req_reply_json(req, status_of(code), error_json(code, msg));
}

/* The code of a backend failure: ts_be_code_name's, with the HTTP status serve uses. */
static const char *be_code(const struct ts_error *err)
{
	enum ts_be_code c = ts_be_code(err);

	switch (c) {
	case TS_BE_TIMEOUT:
		return "deadline_exceeded";
	case TS_BE_NOT_ENOUGH_SPACE:
		return "not_enough_space";
	case TS_BE_RATE_LIMIT:
		return "resource_exhausted";
	case TS_BE_AUTHENTICATION:
		return "unauthenticated";
	case TS_BE_PERMISSION:
		return "permission_denied";
	case TS_BE_TEMPLATE:
		return "invalid_argument";
	case TS_BE_COMMAND_EXIT:
		return "internal";
	default:
		break;
	}
	{
		const char *name = ts_be_code_name(c);

		for (size_t i = 0; i < ELEMENTSOF(error_status); i++)
			if (!strcmp(error_status[i].code, name))
				return name;
	}
	return "internal";
}

static void reply_be_error(struct ts_req *req, const struct ts_error *err)
{
	reply_error(req, be_code(err), "%s", err->msg);
}

static void reply_json(struct ts_req *req, unsigned status, json_t *j)
{
	if (!j) {
		reply_error(req, "internal", "out of memory");
		return;
	}
	ts_req_reply_json(req, status, j);
}

/* --- auth ---------------------------------------------------------------------------- */

/*
 * Does req carry a token with scope? Bearer first, else X-API-KEY (the E2B SDKs' header;
 * an E2B key maps to a token in the tokens file). Replies 401/403 itself when not.
 */
static bool authorized(struct ts_srv *srv, struct ts_req *req, const char *scope)
{
	struct ts_error err = { 0 };
	const char *secret = ts_tokens_bearer(ts_req_header(req, "Authorization"));
	int r;

	if (!secret)
		secret = ts_req_header(req, "X-API-KEY");
	r = ts_tokens_check(srv->tokens, secret, scope, &err);
	if (r == 0)
		return true;
	if (r == -EACCES) {
		ts_req_add_header(req, "WWW-Authenticate", "Bearer");
		reply_error(req, "unauthenticated", "%s", err.msg);
	} else if (r == -EPERM) {
		reply_error(req, "permission_denied", "%s", err.msg);
	} else {
		reply_error(req, "internal", "%s", err.msg);
	}
	return false;
}

/* --- input --------------------------------------------------------------------------- */

/* The body as a JSON object; replies 400 when it is not one. */
static json_t *body_object(struct ts_req *req)
{
	struct ts_error err = { 0 };
	json_t *j = ts_req_json(req, &err);

	if (!j) {
		reply_error(req, "invalid_argument", "malformed JSON: %s",
			    err.msg[0] ? err.msg : "not JSON");
		return NULL;
	}
	if (!json_is_object(j)) {
		reply_error(req, "invalid_argument", "the body must be a JSON object");
		return NULL;
	}
	return j;
}

/* A string member (NULL when absent); false after replying 400 for a bad one. */
static bool get_string(struct ts_req *req, json_t *o, const char *key, const char **ret)
{
	json_t *v = json_object_get(o, key);

	*ret = NULL;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_string(v) || json_string_length(v) > TS_V1_STRING_MAX ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		reply_error(req, "invalid_argument",
			    "`%s` must be a string of at most %u bytes without NUL", key,
			    TS_V1_STRING_MAX);
		return false;
	}
	*ret = json_string_value(v);
	return true;
}

static bool get_int(struct ts_req *req, json_t *o, const char *key, long long min, long long max,
		    long long *ret)
{
	json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v))
		return true;
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
		reply_error(req, "invalid_argument", "`%s` must be an integer from %lld to %lld",
			    key, min, max);
		return false;
	}
	*ret = json_integer_value(v);
	return true;
}

static bool get_bool(struct ts_req *req, json_t *o, const char *key, bool *ret)
{
	json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v))
		return true;
	if (!json_is_boolean(v)) {
		reply_error(req, "invalid_argument", "`%s` must be true or false", key);
		return false;
	}
	*ret = json_is_true(v);
	return true;
}

/* An object of strings into kvs (borrowed from o). env: keys must be variable names. */
static bool get_kvs(struct ts_req *req, json_t *o, const char *key, bool env, struct ts_kv **ret,
		    size_t *n)
{
	json_t *v = json_object_get(o, key), *val;
	const char *k;
	size_t i = 0;

	*ret = NULL;
	*n = 0;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_object(v) || json_object_size(v) > TS_V1_ENVS_MAX) {
		reply_error(req, "invalid_argument", "`%s` must be an object of at most %d strings",
			    key, TS_V1_ENVS_MAX);
		return false;
	}
	*ret = calloc(json_object_size(v) + 1, sizeof(**ret));
	if (!*ret) {
		reply_error(req, "internal", "out of memory");
		return false;
	}
	json_object_foreach(v, k, val) {
		if (!json_is_string(val) || json_string_length(val) > TS_V1_STRING_MAX ||
		    strlen(json_string_value(val)) != json_string_length(val) || strlen(k) > 256 ||
		    !*k || (env && !ts_env_name_valid(k)) || (!env && strchr(k, '='))) {
			free(*ret);
			*ret = NULL;
			reply_error(req, "invalid_argument",
				    "`%s`: every value must be a string without NUL, every key %s",
				    key, env ? "a variable name" : "1-256 bytes without `=`");
			return false;
		}
		(*ret)[i].key = k;
		(*ret)[i++].value = json_string_value(val);
	}
	*n = i;
	return true;
}

/* A decimal pid of a path segment. */
static bool parse_pid(struct ts_req *req, const char *s, pid_t *ret)
{
	unsigned long long v;

	if (!s || ts_parse_ull(s, &v) < 0 || v == 0 || v > 4194304) {
		reply_error(req, "invalid_argument", "bad pid `%.32s`", s ? s : "");
		return false;
	}
	*ret = (pid_t)v;
	return true;
}

/* --- encodings ----------------------------------------------------------------------- */

static json_t *base64_json(const uint8_t *p, size_t n)
{
	_cleanup_free_ char *b = malloc(BASE64_ENCODE_RAW_LENGTH(n) + 1);

	if (!b)
		return NULL;
	base64_encode_raw(b, n, p);
	return json_stringn(b, BASE64_ENCODE_RAW_LENGTH(n));
}

/* Decode standard base64; -EINVAL when it is not. */
static int base64_decode(const char *s, size_t len, uint8_t **ret, size_t *n)
{
	struct base64_decode_ctx ctx;
	_cleanup_free_ uint8_t *b = malloc(BASE64_DECODE_LENGTH(len) + 1);
	size_t got = BASE64_DECODE_LENGTH(len) + 1;

	if (!b)
		return -ENOMEM;
	base64_decode_init(&ctx);
	if (!base64_decode_update(&ctx, &got, b, len, s) || !base64_decode_final(&ctx))
		return -EINVAL;
	*ret = TAKE_PTR(b);
	*n = got;
	return 0;
}

/* How many bytes at the end of p[0..n) start a UTF-8 sequence that is not complete. */
static size_t utf8_incomplete_tail(const uint8_t *p, size_t n)
{
	for (size_t i = 1; i <= 3 && i <= n; i++) {
		uint8_t b = p[n - i];

		if ((b & 0xC0) == 0x80)
			continue;
		if (b >= 0xC0) {
			size_t want = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;

			return want > i ? i : 0;
		}
		return 0;
	}
	return 0;
}

/* data as text when it is UTF-8 (and text allowed), else base64; *enc says which. */
static json_t *data_json(const uint8_t *p, size_t n, bool text, const char **enc)
{
	json_t *j = text ? json_stringn((const char *)p, n) : NULL;

	*enc = "utf-8";
	if (j)
		return j;
	*enc = "base64";
	return base64_json(p, n);
}

static void rfc3339(long long ms, char *buf, size_t size)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char s[32];

	if (!gmtime_r(&t, &tm) || !strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm)) {
		snprintf(buf, size, "1970-01-01T00:00:00.000Z");
		return;
	}
	snprintf(buf, size, "%s.%03lldZ", s, ms % 1000);
}

static json_t *time_json(long long ms)
{
	char buf[64];

	if (ms <= 0)
		return json_null();
	rfc3339(ms, buf, sizeof(buf));
	return json_string(buf);
}

/* --- sandboxes ----------------------------------------------------------------------- */

static const char *state_name(enum ts_sb_state s)
{
	return s == TS_SB_RUNNING ? "running" : s == TS_SB_PAUSED ? "paused" : "stopped";
}

static json_t *sandbox_json(const struct ts_sb_info *i)
{
	json_t *md = json_object(), *j;

	for (size_t k = 0; md && k < i->n_metadata; k++) {
		const char *eq = strchr(i->metadata[k], '=');

		if (eq) {
			_cleanup_free_ char *key =
				strndup(i->metadata[k], (size_t)(eq - i->metadata[k]));

			if (key)
				json_object_set_new(md, key, json_string(eq + 1));
		}
	}
	j = json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:I,s:b,s:o}", "id", i->id, "name", i->name,
		      "image", i->template_id[0] ? i->template_id : "base", "state",
		      state_name(i->state), "created_at", time_json(i->created_ms), "started_at",
		      time_json(i->started_ms), "end_at", time_json(i->end_at_ms), "timeout_ms",
		      (json_int_t)i->timeout_ms, "timeout_absolute", i->timeout_absolute,
		      "metadata", md ? md : json_object());
	return j;
}

/* The sandbox of the route's first "*"; replies 404 (or the backend's error) when none. */
static struct ts_sb *route_sandbox(struct ts_srv *srv, struct ts_req *req)
{
	struct ts_error err = { 0 };
	struct ts_sb *sb = NULL;
	const char *id = ts_req_param(req, 0);
	int r = ts_srv_sandbox(srv, id, &sb, &err);

	if (r == -ENOENT) {
		reply_error(req, "not_found", "sandbox `%.64s` not found", id);
		return NULL;
	}
	if (r < 0) {
		reply_be_error(req, &err);
		return NULL;
	}
	return sb;
}

static void h_create(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_sb_create_opts o = { .timeout_ms = -1 };
	_cleanup_free_ struct ts_kv *envs = NULL, *md = NULL;
	_cleanup_(ts_sb_closep) struct ts_sb *sb = NULL;
	struct ts_sb_info info = { 0 };
	struct ts_error err = { 0 };
	json_t *b;
	int r;

	if (!authorized(srv, req, TS_SCOPE_SANDBOXES_RUN) || !(b = body_object(req)))
		return;
	if (!get_string(req, b, "image", &o.template_id) ||
	    !get_kvs(req, b, "envs", true, &envs, &o.n_envs) ||
	    !get_kvs(req, b, "metadata", false, &md, &o.n_metadata) ||
	    !get_int(req, b, "timeout_ms", 0, TS_SB_TIMEOUT_MAX_MS, &o.timeout_ms) ||
	    !get_bool(req, b, "timeout_absolute", &o.timeout_absolute))
		return;
	o.envs = envs;
	o.metadata = md;
	r = ts_sb_create(srv->be, &o, &sb, &err);
	if (r == 0)
		r = ts_sb_info(sb, &info, &err);
	if (r < 0) {
		reply_be_error(req, &err);
		return;
	}
	reply_json(req, 201, sandbox_json(&info));
	ts_sb_info_clear(&info);
}

/* "running,paused" into the list options. */
static bool parse_states(const char *s, struct ts_sb_list_opts *o)
{
	while (s && *s) {
		size_t n = strcspn(s, ",");

		if (n == 7 && !strncmp(s, "running", n))
			o->running = true;
		else if (n == 7 && !strncmp(s, "stopped", n))
			o->stopped = true;
		else if (n == 6 && !strncmp(s, "paused", n))
			o->paused = true;
		else
			return false;
		s += n;
		if (*s == ',')
			s++;
	}
	return true;
}

static void h_list(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_sb_list_opts o = { 0 };
	struct ts_kv md[32];
	_cleanup_free_ char *mdbuf = NULL, *next = NULL;
	struct ts_sb_info *v = NULL;
	struct ts_error err = { 0 };
	const char *q;
	size_t n = 0;
	json_t *arr;
	int r;

	if (!authorized(srv, req, TS_SCOPE_SANDBOXES_READ))
		return;
	if (!parse_states(ts_req_query(req, "state"), &o)) {
		reply_error(req, "invalid_argument",
			    "`state` is a comma-separated list of running, stopped, paused");
		return;
	}
	if ((q = ts_req_query(req, "limit"))) {
		unsigned long long l;

		if (ts_parse_ull(q, &l) < 0 || l == 0 || l > 1000) {
			reply_error(req, "invalid_argument", "`limit` is from 1 to 1000");
			return;
		}
		o.limit = (unsigned)l;
	}
	o.next_token = ts_req_query(req, "next_token");
	/* metadata=k1=v1,k2=v2: every pair must match */
	if ((q = ts_req_query(req, "metadata")) && *q) {
		char *save = NULL, *tok;

		mdbuf = strdup(q);
		if (!mdbuf) {
			reply_error(req, "internal", "out of memory");
			return;
		}
		for (tok = strtok_r(mdbuf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			char *eq = strchr(tok, '=');

			if (!eq || eq == tok || o.n_metadata == ELEMENTSOF(md)) {
				reply_error(
					req, "invalid_argument",
					"`metadata` is up to %zu comma-separated key=value pairs",
					ELEMENTSOF(md));
				return;
			}
			*eq = '\0';
			md[o.n_metadata].key = tok;
			md[o.n_metadata++].value = eq + 1;
		}
		o.metadata = md;
	}
	r = ts_sb_list(srv->be, &o, &v, &n, &next, &err);
	if (r < 0) {
		reply_be_error(req, &err);
		return;
	}
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		json_array_append_new(arr, sandbox_json(&v[i]));
	ts_sb_infos_free(v, n);
	reply_json(req, 200,
		   arr ? json_pack("{s:o,s:o}", "sandboxes", arr, "next_token",
				   next ? json_string(next) : json_null())
		       : NULL);
}

static void h_get(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_sb_info info = { 0 };
	struct ts_error err = { 0 };
	struct ts_sb *sb;

	if (!authorized(srv, req, TS_SCOPE_SANDBOXES_READ) || !(sb = route_sandbox(srv, req)))
		return;
	if (ts_sb_info(sb, &info, &err) < 0) {
		reply_be_error(req, &err);
		return;
	}
	reply_json(req, 200, sandbox_json(&info));
	ts_sb_info_clear(&info);
}

static void h_delete(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_error err = { 0 };
	const char *id = ts_req_param(req, 0);
	int r;

	if (!authorized(srv, req, TS_SCOPE_SANDBOXES_RUN))
		return;
	/* our cached handle goes first: the sandbox it names is about to be removed */
	ts_srv_forget(srv, id);
	r = ts_sb_kill(srv->be, id, &err);
	if (r == -ENOENT) {
		reply_error(req, "not_found", "sandbox `%.64s` not found", id);
		return;
	}
	if (r < 0) {
		reply_be_error(req, &err);
		return;
	}
	ts_req_reply(req, 204, NULL, NULL, 0);
}

/* --- commands ------------------------------------------------------------------------ */

struct capture {
	uint8_t *p;
	size_t n, max;
	bool truncated;
	uint8_t carry[4]; /* ndjson: an incomplete UTF-8 sequence held for the next piece */
	size_t ncarry;
};

struct run {
	struct ts_srv *srv;
	struct ts_stream *s;
	struct ts_cmd *c;
	struct ts_loop_fd *w;
	struct ts_loop_timer *keepalive;
	long long last_write_ms;
	bool ndjson, text, ended, closed, paused;
	unsigned in_pump;
	pid_t pid;
	uint8_t *stdin_data;
	size_t stdin_len, stdin_off;
	bool stdin_close; /* close stdin once stdin_data is in */
	struct capture out, err;
	int exit_code, signal;
	bool timed_out;
};

static void run_free(struct run *run)
{
	ts_loop_del_timer(run->keepalive);
	ts_loop_del_fd(run->w);
	ts_cmd_close(run->c);
	free(run->stdin_data);
	free(run->out.p);
	free(run->err.p);
	free(run);
}

static void run_on_close(void *userdata, bool client_gone)
{
	struct run *run = userdata;

	/* a client that went only stops the stream: the process runs on to its timeout, as
	 * an E2B command does (the processes routes still reach it) */
	run->closed = true;
	run->s = NULL;
	if (!run->in_pump)
		run_free(run);
}

static int send_line(struct run *run, json_t *j)
{
	_cleanup_free_ char *s = NULL;

	if (!j)
		return -ENOMEM;
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!s)
		return -ENOMEM;
	/* one event a line: a JSON dump has no raw newline */
	if (ts_stream_write(run->s, s, strlen(s)) < 0 || ts_stream_write(run->s, "\n", 1) < 0)
		return -EPIPE;
	run->last_write_ms = ts_loop_now(run->srv->loop);
	return 0;
}

/* A piece of output as an ndjson event, holding back an incomplete UTF-8 tail. */
static int send_output(struct run *run, const char *type, struct capture *cap, const uint8_t *p,
		       size_t n, bool last)
{
	_cleanup_free_ uint8_t *buf = malloc(cap->ncarry + n + 1);
	size_t len = cap->ncarry + n, tail;
	const char *enc;
	json_t *d;

	if (!buf)
		return -ENOMEM;
	memcpy(buf, cap->carry, cap->ncarry);
	if (n)
		memcpy(buf + cap->ncarry, p, n);
	cap->ncarry = 0;
	tail = run->text && !last ? utf8_incomplete_tail(buf, len) : 0;
	if (tail && tail < len) {
		memcpy(cap->carry, buf + len - tail, tail);
		cap->ncarry = tail;
		len -= tail;
	} else if (tail) {
		memcpy(cap->carry, buf, tail);
		cap->ncarry = tail;
		return 0;
	}
	if (!len)
		return 0;
	d = data_json(buf, len, run->text, &enc);
	if (!d)
		return -ENOMEM;
	return send_line(run, json_pack("{s:s,s:o,s:s}", "type", type, "data", d, "encoding", enc));
}

static void capture_add(struct capture *cap, const uint8_t *p, size_t n)
{
	size_t take = n;

	if (cap->n + take > cap->max) {
		take = cap->max - cap->n;
		cap->truncated = true;
	}
	if (!take)
		return;
	if (!cap->p) {
		cap->p = malloc(cap->max + 1);
		if (!cap->p) {
			cap->truncated = true;
			return;
		}
	}
	memcpy(cap->p + cap->n, p, take);
	cap->n += take;
}

static void put_capture(json_t *j, const char *name, struct capture *cap, bool text)
{
	char key[32];
	const char *enc;
	size_t n = cap->n;

	/* a cut in the middle of a character would make the whole text look like binary */
	if (cap->truncated && text)
		n -= utf8_incomplete_tail(cap->p, n);
	json_object_set_new(j, name,
			    data_json(cap->p ? cap->p : (const uint8_t *)"", n, text, &enc));
	snprintf(key, sizeof(key), "%s_encoding", name);
	json_object_set_new(j, key, json_string(enc));
	snprintf(key, sizeof(key), "%s_truncated", name);
	json_object_set_new(j, key, json_boolean(cap->truncated));
}

static json_t *end_json(struct run *run)
{
	return json_pack("{s:s,s:i,s:i,s:o,s:b}", "type", "end", "pid", (int)run->pid, "exit_code",
			 run->exit_code, "signal",
			 run->signal ? json_integer(run->signal) : json_null(), "timed_out",
			 run->timed_out);
}

/* Finish the reply after the end (or a failure: err). The stream may close at once. */
static void run_finish(struct run *run, const struct ts_error *err)
{
	struct ts_stream *s = run->s;

	if (run->ndjson) {
		if (err)
			send_line(run, json_pack("{s:s,s:o}", "type", "error", "error",
						 json_pack("{s:s,s:s}", "code", be_code(err),
							   "message", err->msg)));
		else {
			send_output(run, "stdout", &run->out, NULL, 0, true);
			send_output(run, "stderr", &run->err, NULL, 0, true);
			send_line(run, end_json(run));
		}
	} else {
		json_t *j = err ? error_json(be_code(err), err->msg) : end_json(run);
		_cleanup_free_ char *text = NULL;

		if (j && !err) {
			json_object_del(j, "type");
			put_capture(j, "stdout", &run->out, run->text);
			put_capture(j, "stderr", &run->err, run->text);
		}
		text = j ? json_dumps(j, JSON_COMPACT) : NULL;
		json_decref(j);
		if (text)
			ts_stream_write(s, text, strlen(text));
	}
	run->ended = true;
	ts_stream_end(s);
}

static void run_pump(void *userdata);

static void run_on_keepalive(void *userdata)
{
	struct run *run = userdata;
	long long now = ts_loop_now(run->srv->loop);

	if (run->ended || run->closed)
		return;
	if (!run->paused && now - run->last_write_ms >= KEEPALIVE_MS) {
		/* JSON allows white space before the value; ndjson readers skip unknown types */
		if (run->ndjson)
			send_line(run, json_pack("{s:s}", "type", "keepalive"));
		else if (ts_stream_write(run->s, " ", 1) == 0)
			run->last_write_ms = now;
	}
	ts_loop_timer_set(run->keepalive, now + KEEPALIVE_MS);
}

static void run_on_drain(void *userdata)
{
	struct run *run = userdata;

	if (run->paused) {
		run->paused = false;
		run_pump(run);
	}
}

static void run_on_fd(void *userdata, short revents)
{
	run_pump(userdata);
}

/* Feed stdin, then step the command until it has nothing more or the client is full. */
static void run_pump(void *userdata)
{
	struct run *run = userdata;
	struct ts_error err = { 0 };

	run->in_pump++;
	while (run->stdin_off < run->stdin_len && !run->ended && !run->closed) {
		size_t n = run->stdin_len - run->stdin_off;
		int r = ts_cmd_input(run->c, run->stdin_data + run->stdin_off,
				     n > STDIN_CHUNK ? STDIN_CHUNK : n, &err);

		if (r == -EAGAIN)
			break;
		if (r < 0) {
			/* a process that exits without reading its input is not an error */
			run->stdin_off = run->stdin_len;
			break;
		}
		run->stdin_off += n > STDIN_CHUNK ? STDIN_CHUNK : n;
	}
	if (run->stdin_close && run->stdin_off == run->stdin_len && !run->closed) {
		ts_cmd_input_close(run->c, &err);
		run->stdin_close = false;
	}
	for (unsigned i = 0; i < STEPS_PER_WAKE && !run->ended && !run->closed; i++) {
		struct ts_cmd_event ev;
		int r;

		/* backpressure: a client that does not read stops us reading the sandbox */
		if (run->ndjson && ts_stream_pending(run->s) > TS_HTTP_STREAM_HIGH) {
			run->paused = true;
			ts_loop_mod_fd(run->w, 0);
			break;
		}
		r = ts_cmd_step(run->c, &ev, &err);
		if (r == 0)
			break;
		if (r < 0) {
			run_finish(run, &err);
			break;
		}
		switch (ev.type) {
		case TS_CMD_EV_START:
			if (ev.pid)
				run->pid = ev.pid;
			break;
		case TS_CMD_EV_STDOUT:
		case TS_CMD_EV_STDERR:
		case TS_CMD_EV_PTY: {
			struct capture *cap = ev.type == TS_CMD_EV_STDERR ? &run->err : &run->out;

			if (!run->ndjson)
				capture_add(cap, ev.data, ev.len);
			else if (send_output(run, ev.type == TS_CMD_EV_STDERR ? "stderr" : "stdout",
					     cap, ev.data, ev.len, false) < 0) {
				ts_err(&err, -ENOMEM, "out of memory");
				run_finish(run, &err);
			}
			break;
		}
		case TS_CMD_EV_END:
			run->exit_code = ev.exit_code;
			run->signal = ev.signal;
			run->timed_out = ev.timed_out;
			run_finish(run, NULL);
			break;
		}
	}
	if (!run->ended && !run->closed && !run->paused)
		ts_loop_mod_fd(run->w, ts_cmd_events(run->c));
	if (!--run->in_pump && run->closed)
		run_free(run);
}

/* The argv of a command body: cmd (through /bin/sh -c) or argv. */
static bool command_argv(struct ts_req *req, json_t *b, char ***ret)
{
	json_t *argv = json_object_get(b, "argv"), *v;
	const char *cmd;
	size_t i;

	if (!get_string(req, b, "cmd", &cmd))
		return false;
	if (!!cmd == !!(argv && !json_is_null(argv))) {
		reply_error(req, "invalid_argument", "give either `cmd` or `argv`");
		return false;
	}
	if (cmd) {
		*ret = calloc(4, sizeof(char *));
		if (!*ret) {
			reply_error(req, "internal", "out of memory");
			return false;
		}
		(*ret)[0] = (char *)"/bin/sh";
		(*ret)[1] = (char *)"-c";
		(*ret)[2] = (char *)cmd;
		return true;
	}
	if (!json_is_array(argv) || json_array_size(argv) == 0 ||
	    json_array_size(argv) > TS_V1_ARGV_MAX) {
		reply_error(req, "invalid_argument", "`argv` must be 1-%d strings", TS_V1_ARGV_MAX);
		return false;
	}
	*ret = calloc(json_array_size(argv) + 1, sizeof(char *));
	if (!*ret) {
		reply_error(req, "internal", "out of memory");
		return false;
	}
	json_array_foreach(argv, i, v) {
		if (!json_is_string(v) || json_string_length(v) > TS_V1_STRING_MAX ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			free(*ret);
			*ret = NULL;
			reply_error(req, "invalid_argument",
				    "`argv` must be strings of at most %u bytes without NUL",
				    TS_V1_STRING_MAX);
			return false;
		}
		(*ret)[i] = (char *)json_string_value(v);
	}
	return true;
}

/* Does the client want the event stream: Accept: application/x-ndjson or "stream": true. */
static bool wants_stream(struct ts_req *req, json_t *b, bool *ret)
{
	const char *accept = ts_req_header(req, "Accept");

	*ret = accept && strstr(accept, "application/x-ndjson");
	return get_bool(req, b, "stream", ret);
}

static void h_commands(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_cmd_opts o = { .timeout_ms = 60000 };
	_cleanup_free_ char **argv = NULL;
	_cleanup_free_ struct ts_kv *envs = NULL;
	_cleanup_free_ uint8_t *in = NULL;
	struct ts_error err = { 0 };
	struct ts_sb *sb;
	struct run *run;
	const char *stdin_s = NULL, *stdin_b64 = NULL, *enc = NULL;
	long long timeout = 60000, max_out = TS_V1_OUTPUT_DEFAULT;
	bool ndjson = false, keep_stdin = false;
	size_t in_len = 0;
	json_t *b, *sv;
	int r;

	if (!authorized(srv, req, TS_SCOPE_SANDBOXES_RUN) || !(b = body_object(req)))
		return;
	if (!command_argv(req, b, &argv) || !get_kvs(req, b, "envs", true, &envs, &o.n_envs) ||
	    !get_string(req, b, "cwd", &o.cwd) || !get_string(req, b, "user", &o.user) ||
	    !get_string(req, b, "tag", &o.tag) ||
	    !get_int(req, b, "timeout_ms", 0, TS_SB_TIMEOUT_MAX_MS, &timeout) ||
	    !get_int(req, b, "max_output_bytes", 0, TS_V1_OUTPUT_MAX, &max_out) ||
	    !get_string(req, b, "encoding", &enc) ||
	    !get_string(req, b, "stdin_base64", &stdin_b64) || !wants_stream(req, b, &ndjson))
		return;
	if (enc && strcmp(enc, "utf-8") && strcmp(enc, "base64")) {
		reply_error(req, "invalid_argument", "`encoding` is `utf-8` or `base64`");
		return;
	}
	/* stdin: a string (given, then closed), or true (a pipe kept open for .../stdin) */
	sv = json_object_get(b, "stdin");
	if (json_is_boolean(sv))
		keep_stdin = json_is_true(sv);
	else if (!get_string(req, b, "stdin", &stdin_s))
		return;
	if (stdin_s && stdin_b64) {
		reply_error(req, "invalid_argument", "give `stdin` or `stdin_base64`, not both");
		return;
	}
	if (stdin_b64 && base64_decode(stdin_b64, strlen(stdin_b64), &in, &in_len) < 0) {
		reply_error(req, "invalid_argument", "`stdin_base64` is not base64");
		return;
	}
	if (stdin_s) {
		in_len = strlen(stdin_s);
		in = malloc(in_len + 1);
		if (!in) {
			reply_error(req, "internal", "out of memory");
			return;
		}
		memcpy(in, stdin_s, in_len);
	}
	if (!(sb = route_sandbox(srv, req)))
		return;
	o.argv = argv;
	o.envs = envs;
	o.timeout_ms = (unsigned long long)timeout;
	o.stdin_open = keep_stdin || in;

	run = calloc(1, sizeof(*run));
	if (!run) {
		reply_error(req, "internal", "out of memory");
		return;
	}
	run->srv = srv;
	run->ndjson = ndjson;
	run->text = !enc || !strcmp(enc, "utf-8");
	run->out.max = run->err.max = (size_t)max_out;
	run->stdin_data = TAKE_PTR(in);
	run->stdin_len = in_len;
	run->stdin_close = run->stdin_data != NULL;
	r = ts_cmd_start(sb, &o, &run->c, &run->pid, NULL, &err);
	if (r < 0) {
		run_free(run);
		reply_be_error(req, &err);
		return;
	}
	run->w =
		ts_loop_add_fd(srv->loop, ts_cmd_fd(run->c), ts_cmd_events(run->c), run_on_fd, run);
	if (!run->w) {
		run_free(run);
		reply_error(req, "internal", "cannot watch the command's stream");
		return;
	}
	/* Both forms are a stream: the status is known once the process started (any
	 * failure before is a typed error above), and a long command keeps no reply open
	 * in the HTTP layer's buffers. */
	run->s = ts_req_stream(req, 200, ndjson ? "application/x-ndjson" : "application/json",
			       run_on_close, run, &err);
	if (!run->s) {
		/* the caller hears a failure: the command it asked for does not run on */
		ts_cmd_signal_self(run->c, SIGKILL, NULL);
		run_free(run);
		reply_error(req, "internal", "%s", err.msg);
		return;
	}
	ts_stream_on_drain(run->s, run_on_drain);
	run->last_write_ms = ts_loop_now(srv->loop);
	run->keepalive = ts_loop_add_timer(srv->loop, run->last_write_ms + KEEPALIVE_MS,
					   run_on_keepalive, run);
	if (ndjson &&
	    send_line(run, json_pack("{s:s,s:i}", "type", "start", "pid", (int)run->pid)) < 0) {
		ts_stream_abort(run->s);
		return;
	}
	run_pump(run);
}

/* --- processes ----------------------------------------------------------------------- */

static json_t *strv_json(char **v)
{
	json_t *a = json_array();

	for (size_t i = 0; a && v && v[i]; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static void h_processes(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_proc_entry *v = NULL;
	struct ts_error err = { 0 };
	struct ts_sb *sb;
	size_t n = 0;
	json_t *arr;

	if (!authorized(srv, req, TS_SCOPE_SANDBOXES_READ) || !(sb = route_sandbox(srv, req)))
		return;
	if (ts_cmd_list(sb, &v, &n, &err) < 0) {
		reply_be_error(req, &err);
		return;
	}
	arr = json_array();
	/* envs are left out: a reader of the list is not told the secrets passed to a process */
	for (size_t i = 0; arr && i < n; i++) {
		const struct ts_proc_entry *p = &v[i];
		bool exited = !p->running && WIFEXITED(p->status);
		bool signaled = !p->running && WIFSIGNALED(p->status);

		json_array_append_new(
			arr,
			json_pack("{s:i,s:b,s:o,s:o,s:b,s:o,s:o,s:o,s:o,s:b,s:b,s:o,s:o}", "pid",
				  (int)p->pid, "running", p->running, "exit_code",
				  exited ? json_integer(WEXITSTATUS(p->status)) : json_null(),
				  "signal",
				  signaled ? json_integer(WTERMSIG(p->status)) : json_null(),
				  "timed_out", p->timed_out, "argv", strv_json(p->argv), "cwd",
				  p->cwd ? json_string(p->cwd) : json_null(), "tag",
				  p->tag ? json_string(p->tag) : json_null(), "user",
				  p->user ? json_string(p->user) : json_null(), "pty", p->pty,
				  "background", p->background, "started_at",
				  time_json(p->started_ms), "ended_at", time_json(p->ended_ms)));
	}
	ts_proc_entries_free(v, n);
	reply_json(req, 200, arr ? json_pack("{s:o}", "processes", arr) : NULL);
}

static const struct {
	const char *name;
	int sig;
} signals[] = {
	{ "SIGKILL", SIGKILL }, { "SIGTERM", SIGTERM }, { "SIGINT", SIGINT },
	{ "SIGHUP", SIGHUP },	{ "SIGQUIT", SIGQUIT }, { "SIGUSR1", SIGUSR1 },
	{ "SIGUSR2", SIGUSR2 }, { "SIGSTOP", SIGSTOP }, { "SIGCONT", SIGCONT },
};

static void h_kill(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_proc_sel sel = { 0 };
	struct ts_error err = { 0 };
	struct ts_sb *sb;
	int sig = SIGKILL;
	json_t *b, *s;

	if (!authorized(srv, req, TS_SCOPE_SANDBOXES_RUN) || !(b = body_object(req)) ||
	    !parse_pid(req, ts_req_param(req, 1), &sel.pid))
		return;
	s = json_object_get(b, "signal");
	if (json_is_integer(s) && json_integer_value(s) > 0 && json_integer_value(s) < 65) {
		sig = (int)json_integer_value(s);
	} else if (json_is_string(s)) {
		const char *name = json_string_value(s);
		char full[32];
		size_t i;

		snprintf(full, sizeof(full), "%s%s", strncmp(name, "SIG", 3) ? "SIG" : "", name);
		for (i = 0; i < ELEMENTSOF(signals) && strcmp(signals[i].name, full); i++)
			;
		if (i == ELEMENTSOF(signals)) {
			reply_error(req, "invalid_argument", "unknown signal `%.16s`", name);
			return;
		}
		sig = signals[i].sig;
	} else if (s && !json_is_null(s)) {
		reply_error(req, "invalid_argument",
			    "`signal` is a number 1-64 or a name (SIGTERM)");
		return;
	}
	if (!(sb = route_sandbox(srv, req)))
		return;
	if (ts_cmd_signal(sb, &sel, sig, &err) < 0) {
		reply_be_error(req, &err);
		return;
	}
	ts_req_reply(req, 204, NULL, NULL, 0);
}

static void h_stdin(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_proc_sel sel = { 0 };
	struct ts_error err = { 0 };
	_cleanup_free_ uint8_t *dec = NULL;
	const char *data = NULL, *b64 = NULL;
	const uint8_t *p = NULL;
	struct ts_sb *sb;
	bool close = false;
	size_t n = 0;
	json_t *b;

	if (!authorized(srv, req, TS_SCOPE_SANDBOXES_RUN) || !(b = body_object(req)) ||
	    !parse_pid(req, ts_req_param(req, 1), &sel.pid) || !get_string(req, b, "data", &data) ||
	    !get_string(req, b, "data_base64", &b64) || !get_bool(req, b, "close", &close))
		return;
	if (data && b64) {
		reply_error(req, "invalid_argument", "give `data` or `data_base64`, not both");
		return;
	}
	if (b64) {
		if (base64_decode(b64, strlen(b64), &dec, &n) < 0) {
			reply_error(req, "invalid_argument", "`data_base64` is not base64");
			return;
		}
		p = dec;
	} else if (data) {
		p = (const uint8_t *)data;
		n = strlen(data);
	}
	if (!(sb = route_sandbox(srv, req)))
		return;
	for (size_t off = 0; off < n;) {
		size_t k = n - off > STDIN_CHUNK ? STDIN_CHUNK : n - off;

		if (ts_cmd_send_stdin(sb, &sel, p + off, k, &err) < 0) {
			reply_be_error(req, &err);
			return;
		}
		off += k;
	}
	if (close && ts_cmd_close_stdin(sb, &sel, &err) < 0) {
		reply_be_error(req, &err);
		return;
	}
	ts_req_reply(req, 204, NULL, NULL, 0);
}

/* --- files --------------------------------------------------------------------------- */

/* ?path= (required) and ?user=; replies 400 when path is missing. */
static bool file_args(struct ts_req *req, const char **path, const char **user)
{
	*path = ts_req_query(req, "path");
	*user = ts_req_query(req, "user");
	if (!*path || !**path || strlen(*path) > 4096) {
		reply_error(req, "invalid_argument", "`path` is required (1-4096 bytes)");
		return false;
	}
	if (*user && !**user)
		*user = NULL;
	return true;
}

struct get {
	struct ts_stream *s;
	struct ts_xfer *x;
	struct ts_loop_fd *w;
	bool closed, paused, done;
	unsigned in_pump;
};

static void get_free(struct get *g)
{
	ts_loop_del_fd(g->w);
	ts_xfer_close(g->x);
	free(g);
}

static void get_on_close(void *userdata, bool client_gone)
{
	struct get *g = userdata;

	g->closed = true;
	if (!g->in_pump)
		get_free(g);
}

static void get_pump(void *userdata)
{
	struct get *g = userdata;
	struct ts_error err = { 0 };

	g->in_pump++;
	for (unsigned i = 0; i < STEPS_PER_WAKE && !g->closed && !g->done; i++) {
		const uint8_t *d;
		size_t len;
		int r;

		if (ts_stream_pending(g->s) > TS_HTTP_STREAM_HIGH) {
			g->paused = true;
			ts_loop_mod_fd(g->w, 0);
			break;
		}
		r = ts_xfer_step(g->x, &d, &len, &err);
		if (r == 0)
			break;
		if (r == 1 && ts_stream_write(g->s, d, len) == 0)
			continue;
		g->done = true;
		/* the status went out with the first byte: a failure can only cut the body
		 * short, which the client sees as a broken chunked transfer */
		if (r == 2)
			ts_stream_end(g->s);
		else
			ts_stream_abort(g->s);
	}
	if (!g->closed && !g->done && !g->paused)
		ts_loop_mod_fd(g->w, ts_xfer_events(g->x));
	if (!--g->in_pump && g->closed)
		get_free(g);
}

static void get_on_drain(void *userdata)
{
	struct get *g = userdata;

	if (g->paused) {
		g->paused = false;
		get_pump(g);
	}
}

static void get_on_fd(void *userdata, short revents)
{
	get_pump(userdata);
}

static void h_file_get(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_error err = { 0 };
	struct ts_be_entry e = { 0 };
	const char *path, *user;
	struct ts_sb *sb;
	struct get *g;

	if (!authorized(srv, req, TS_SCOPE_FILES_READ) || !file_args(req, &path, &user) ||
	    !(sb = route_sandbox(srv, req)))
		return;
	/* what can be known before the status is: that the file is there and a file */
	if (ts_file_stat(sb, path, user, &e, &err) < 0) {
		reply_be_error(req, &err);
		return;
	}
	if (e.type == TS_BE_DIR) {
		ts_be_entry_clear(&e);
		reply_error(req, "invalid_argument", "`%.256s` is a directory", path);
		return;
	}
	ts_be_entry_clear(&e);
	g = calloc(1, sizeof(*g));
	if (!g) {
		reply_error(req, "internal", "out of memory");
		return;
	}
	if (ts_xfer_read_start(sb, path, user, &g->x, &err) < 0) {
		free(g);
		reply_be_error(req, &err);
		return;
	}
	g->w = ts_loop_add_fd(srv->loop, ts_xfer_fd(g->x), ts_xfer_events(g->x), get_on_fd, g);
	if (!g->w) {
		get_free(g);
		reply_error(req, "internal", "cannot watch the transfer");
		return;
	}
	g->s = ts_req_stream(req, 200, "application/octet-stream", get_on_close, g, &err);
	if (!g->s) {
		get_free(g);
		reply_error(req, "internal", "%s", err.msg);
		return;
	}
	ts_stream_on_drain(g->s, get_on_drain);
	get_pump(g);
}

static void h_file_put(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_error err = { 0 };
	const char *path, *user, *ms;
	const uint8_t *body;
	struct ts_sb *sb;
	unsigned long long mode = 0;
	size_t len;
	int r;

	if (!authorized(srv, req, TS_SCOPE_FILES_WRITE) || !file_args(req, &path, &user))
		return;
	ms = ts_req_query(req, "mode");
	if (ms) {
		char *end;

		errno = 0;
		mode = strtoull(ms, &end, 8);
		if (errno || end == ms || *end || mode > 07777) {
			reply_error(req, "invalid_argument", "`mode` is octal, at most 7777");
			return;
		}
	}
	if (!(sb = route_sandbox(srv, req)))
		return;
	body = ts_req_body(req, &len);
	/* E2B's uploads create the parents; so do ours */
	{
		_cleanup_free_ char *dir = strdup(path);
		char *slash = dir ? strrchr(dir, '/') : NULL;
		bool made;

		if (slash && slash != dir) {
			*slash = '\0';
			if (ts_file_mkdir(sb, dir, user, &made, &err) < 0) {
				reply_be_error(req, &err);
				return;
			}
		}
	}
	r = ts_file_write(sb, path, user, body ? body : (const uint8_t *)"", len,
			  ms ? (int)mode : -1, &err);
	if (r < 0) {
		reply_be_error(req, &err);
		return;
	}
	reply_json(req, 200, json_pack("{s:s,s:I}", "path", path, "size", (json_int_t)len));
}

/* --- the document and the rest ------------------------------------------------------- */

static void h_openapi(void *ctx, struct ts_req *req)
{
	ts_req_reply(req, 200, "application/json", ts_v1_openapi_json, ts_v1_openapi_json_len);
}

/* Does path match pattern (http.h's: "*" one segment, a trailing "**" the rest)? */
static bool pattern_match(const char *pattern, const char *path)
{
	while (*pattern && *path) {
		if (!strcmp(pattern, "**"))
			return true;
		if (*pattern == '*') {
			size_t n = strcspn(path, "/");

			if (!n)
				return false;
			path += n;
			pattern++;
			continue;
		}
		if (*pattern++ != *path++)
			return false;
	}
	return !*path && (!*pattern || !strcmp(pattern, "**"));
}

/* /v1 paths no route took: 405 when the path is known with another method, else 404 —
 * in /v1's error shape, not E2B's. */
static void h_fallback(void *ctx, struct ts_req *req)
{
	const char *path = ts_req_path(req);

	for (const struct ts_route *rt = ts_v1_routes; rt->pattern; rt++)
		if (rt->method && pattern_match(rt->pattern, path)) {
			reply_error(req, "method_not_allowed", "`%.16s` is not allowed on `%.256s`",
				    ts_req_method(req), path);
			return;
		}
	reply_error(req, "not_found", "no route `%.256s`", path);
}

const struct ts_route ts_v1_routes[] = {
	{ "GET", "/v1/openapi.json", h_openapi, NULL, 0 },
	{ "POST", "/v1/sandboxes", h_create, NULL, 0 },
	{ "GET", "/v1/sandboxes", h_list, NULL, 0 },
	{ "GET", "/v1/sandboxes/*", h_get, NULL, 0 },
	{ "DELETE", "/v1/sandboxes/*", h_delete, NULL, 0 },
	{ "POST", "/v1/sandboxes/*/commands", h_commands, NULL, 0 },
	{ "GET", "/v1/sandboxes/*/files", h_file_get, NULL, 0 },
	{ "PUT", "/v1/sandboxes/*/files", h_file_put, NULL, TS_V1_FILE_MAX },
	{ "GET", "/v1/sandboxes/*/processes", h_processes, NULL, 0 },
	{ "POST", "/v1/sandboxes/*/processes/*/kill", h_kill, NULL, 0 },
	{ "POST", "/v1/sandboxes/*/processes/*/stdin", h_stdin, NULL, 0 },
	/* last: every other /v1 path and method */
	{ NULL, "/v1/**", h_fallback, NULL, 0 },
	{ 0 },
};
