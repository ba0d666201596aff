/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /v1 REST (v1.h): the routes, their token scopes, bodies and JSON in and out, errors,
 * sandboxes and processes (commands: v1-cmd.c, files: v1-files.c).
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
#include "oci-store.h"
#include "pool.h"
#include "pulls.h"
#include "http.h"
#include "loop.h"
#include "server.h"
#include "snapshots.h"
#include "tokens.h"
#include "util.h"
#include "v1.h"

#define STDIN_CHUNK (64U << 10) /* bytes of input per message to the sandbox */

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
	{ "not_enough_space", 507 },  { "snapshot_running", 409 },
};

static unsigned status_of(const char *code)
{
	for (size_t i = 0; i < ELEMENTSOF(error_status); i++)
		if (!strcmp(error_status[i].code, code))
			return error_status[i].status;
	return 500;
}

json_t *ts_v1_error_json(const char *code, const char *msg)
{
	return json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", msg);
}

void ts_v1_reply_error(struct ts_req *req, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ts_sanitize_text(msg);
	ts_req_reply_json(req, status_of(code), ts_v1_error_json(code, msg));
}

/* The code of a backend failure: ts_be_code_name's, with the HTTP status serve uses. */
const char *ts_v1_be_code(const struct ts_error *err)
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

void ts_v1_reply_be_error(struct ts_req *req, const struct ts_error *err)
{
	ts_v1_reply_error(req, ts_v1_be_code(err), "%s", err->msg);
}

static void reply_json(struct ts_req *req, unsigned status, json_t *j)
{
	if (!j) {
		ts_v1_reply_error(req, "internal", "out of memory");
		return;
	}
	ts_req_reply_json(req, status, j);
}

/* --- bodies ------------------------------------------------------------------------- */

/* Every /v1 route takes its body itself (route.begin), so that one past the bound is
 * answered by the handler, in /v1's error shape, like every other error. */

#define JSON_DEPTH 64 /* nesting of a request's JSON */

struct body {
	uint8_t *p;
	size_t n, cap, max;
	int error; /* -EFBIG past max, -ENOMEM */
	json_t *json;
};

static void body_free(void *userdata)
{
	struct body *b = userdata;

	if (!b)
		return;
	json_decref(b->json);
	free(b->p);
	free(b);
}

static int body_on_data(void *userdata, const uint8_t *p, size_t n)
{
	struct body *b = userdata;

	if (n > b->max - b->n) {
		free(b->p);
		b->p = NULL;
		b->n = b->cap = 0;
		b->error = -EFBIG;
		return -EFBIG;
	}
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		uint8_t *np;

		while (cap < b->n + n + 1)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			b->error = -ENOMEM;
			return -ENOMEM;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
	b->p[b->n] = '\0';
	return 0;
}

int ts_v1_body_begin(struct ts_req *req, size_t max)
{
	struct body *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b->max = max;
	ts_req_set_userdata(req, b, body_free);
	ts_req_on_data(req, body_on_data, b);
	return 0;
}

static int begin_json(void *ctx, struct ts_req *req)
{
	return ts_v1_body_begin(req, TS_HTTP_BODY_MAX);
}

const uint8_t *ts_v1_body(struct ts_req *req, size_t *len)
{
	struct body *b = ts_req_userdata(req);

	*len = b ? b->n : 0;
	return b && b->p ? b->p : (const uint8_t *)"";
}

/* --- auth ---------------------------------------------------------------------------- */

/*
 * Does req carry a token with scope? Bearer first, else X-API-KEY (the E2B SDKs' header;
 * an E2B key maps to a token in the tokens file). Replies 401/403 itself when not.
 */
int ts_v1_check_token(struct ts_srv *srv, struct ts_req *req, const char *scope,
		      struct ts_error *err)
{
	const char *secret = ts_tokens_bearer(ts_req_header(req, "Authorization"));

	if (!secret)
		secret = ts_req_header(req, "X-API-KEY");
	return ts_tokens_check(srv->tokens, secret, scope, err);
}

void ts_v1_reply_token_error(struct ts_req *req, int r, const struct ts_error *err)
{
	if (r == -EACCES) {
		ts_req_add_header(req, "WWW-Authenticate", "Bearer");
		ts_v1_reply_error(req, "unauthenticated", "%s", err->msg);
	} else if (r == -EPERM) {
		ts_v1_reply_error(req, "permission_denied", "%s", err->msg);
	} else {
		ts_v1_reply_error(req, "internal", "%s", err->msg);
	}
}

bool ts_v1_authorized(struct ts_srv *srv, struct ts_req *req, const char *scope)
{
	struct ts_error err = { 0 };
	struct body *b = ts_req_userdata(req);
	int r;

	/* the body came in first: one past its bound is refused in /v1's shape */
	if (b && b->error == -EFBIG) {
		ts_v1_reply_error(req, "payload_too_large", "request body larger than %zu bytes",
				  b->max);
		return false;
	}
	if (b && b->error) {
		ts_v1_reply_error(req, "internal", "out of memory");
		return false;
	}
	r = ts_v1_check_token(srv, req, scope, &err);
	if (r < 0)
		ts_v1_reply_token_error(req, r, &err);
	return r == 0;
}

/* --- input --------------------------------------------------------------------------- */

/* The body as a JSON object; replies 400 when it is not one. */
json_t *ts_v1_body_object(struct ts_req *req)
{
	struct body *b = ts_req_userdata(req);
	json_error_t jerr;
	json_t *j;

	if (!b || !b->n) /* no body: {} */
		return b && (b->json = json_object()) ? b->json : NULL;
	if (b->json)
		return b->json;
	if (!ts_http_json_depth_ok(b->p, b->n, JSON_DEPTH)) {
		ts_v1_reply_error(req, "invalid_argument", "malformed JSON: nested deeper than %d",
				  JSON_DEPTH);
		return NULL;
	}
	j = b->json = json_loadb((const char *)b->p, b->n, JSON_REJECT_DUPLICATES, &jerr);
	if (!j) {
		ts_v1_reply_error(req, "invalid_argument", "malformed JSON: %s (line %d)",
				  jerr.text, jerr.line);
		return NULL;
	}
	if (!json_is_object(j)) {
		ts_v1_reply_error(req, "invalid_argument", "the body must be a JSON object");
		return NULL;
	}
	return j;
}

/* A string member (NULL when absent); false after replying 400 for a bad one. */
bool ts_v1_get_string(struct ts_req *req, json_t *o, const char *key, const char **ret)
{
	json_t *v = json_object_get(o, key);

	*ret = NULL;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_string(v) || json_string_length(v) > TS_V1_STRING_MAX ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		ts_v1_reply_error(req, "invalid_argument",
				  "`%s` must be a string of at most %u bytes without NUL", key,
				  TS_V1_STRING_MAX);
		return false;
	}
	*ret = json_string_value(v);
	return true;
}

bool ts_v1_get_int(struct ts_req *req, json_t *o, const char *key, long long min, long long max,
		   long long *ret)
{
	json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v))
		return true;
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
		ts_v1_reply_error(req, "invalid_argument",
				  "`%s` must be an integer from %lld to %lld", key, min, max);
		return false;
	}
	*ret = json_integer_value(v);
	return true;
}

bool ts_v1_get_bool(struct ts_req *req, json_t *o, const char *key, bool *ret)
{
	json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v))
		return true;
	if (!json_is_boolean(v)) {
		ts_v1_reply_error(req, "invalid_argument", "`%s` must be true or false", key);
		return false;
	}
	*ret = json_is_true(v);
	return true;
}

/* An object of strings into kvs (borrowed from o). env: keys must be variable names. */
bool ts_v1_get_kvs(struct ts_req *req, json_t *o, const char *key, bool env, struct ts_kv **ret,
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
		ts_v1_reply_error(req, "invalid_argument",
				  "`%s` must be an object of at most %d strings", key,
				  TS_V1_ENVS_MAX);
		return false;
	}
	*ret = calloc(json_object_size(v) + 1, sizeof(**ret));
	if (!*ret) {
		ts_v1_reply_error(req, "internal", "out of memory");
		return false;
	}
	json_object_foreach(v, k, val) {
		if (!json_is_string(val) || json_string_length(val) > TS_V1_STRING_MAX ||
		    strlen(json_string_value(val)) != json_string_length(val) || strlen(k) > 256 ||
		    !*k || (env && !ts_env_name_valid(k)) || (!env && strchr(k, '='))) {
			free(*ret);
			*ret = NULL;
			ts_v1_reply_error(
				req, "invalid_argument",
				"`%s`: every value must be a string without NUL, every key %s", key,
				env ? "a variable name" : "1-256 bytes without `=`");
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
		ts_v1_reply_error(req, "invalid_argument", "bad pid `%.32s`", s ? s : "");
		return false;
	}
	*ret = (pid_t)v;
	return true;
}

/* --- encodings ----------------------------------------------------------------------- */

json_t *ts_v1_base64_json(const uint8_t *p, size_t n)
{
	_cleanup_free_ char *b = malloc(BASE64_ENCODE_RAW_LENGTH(n) + 1);

	if (!b)
		return NULL;
	base64_encode_raw(b, n, p);
	return json_stringn(b, BASE64_ENCODE_RAW_LENGTH(n));
}

/* Decode standard base64; -EINVAL when it is not. */
int ts_v1_base64_decode(const char *s, size_t len, uint8_t **ret, size_t *n)
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
size_t ts_v1_utf8_incomplete_tail(const uint8_t *p, size_t n)
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
json_t *ts_v1_data_json(const uint8_t *p, size_t n, bool text, const char **enc)
{
	json_t *j = text ? json_stringn((const char *)p, n) : NULL;

	*enc = "utf-8";
	if (j)
		return j;
	*enc = "base64";
	return ts_v1_base64_json(p, n);
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
struct ts_sb *ts_v1_route_sandbox(struct ts_srv *srv, struct ts_req *req, struct ts_srv_sb **entry)
{
	struct ts_error err = { 0 };
	struct ts_srv_sb *e = NULL;
	const char *id = ts_req_param(req, 0);
	int r = ts_srv_sandbox(srv, id, &e, &err);

	if (r == -ENOENT) {
		ts_v1_reply_error(req, "not_found", "sandbox `%.64s` not found", id);
		return NULL;
	}
	if (r < 0) {
		ts_v1_reply_be_error(req, &err);
		return NULL;
	}
	if (entry)
		*entry = e;
	return e->sb;
}

static void create_failed(struct ts_req *req, unsigned status, const char *msg)
{
	ts_v1_reply_error(req,
			  status == 404	  ? "not_found"
			  : status == 503 ? "unavailable"
					  : "internal",
			  "%s", msg);
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

	if (!ts_v1_authorized(srv, req, TS_SCOPE_SANDBOXES_RUN) || !(b = ts_v1_body_object(req)))
		return;
	if (!ts_v1_get_string(req, b, "image", &o.template_id) ||
	    !ts_v1_get_kvs(req, b, "envs", true, &envs, &o.n_envs) ||
	    !ts_v1_get_kvs(req, b, "metadata", false, &md, &o.n_metadata) ||
	    !ts_v1_get_int(req, b, "timeout_ms", 0, TS_SB_TIMEOUT_MAX_MS, &o.timeout_ms) ||
	    !ts_v1_get_bool(req, b, "timeout_absolute", &o.timeout_absolute))
		return;
	/* an image of the local store or `base`: never a host path from the network */
	if (o.template_id && strcmp(o.template_id, "base") != 0 &&
	    !ts_oci_name_valid(o.template_id)) {
		ts_v1_reply_error(req, "invalid_argument",
				  "image: `base` or a name of `toren-sandbox image ls`; host paths "
				  "are not accepted over the API");
		return;
	}
	/* a registry reference the store lacks: pulled first, then this handler again */
	if (o.template_id && ts_pulls_first(srv, req, o.template_id, h_create, create_failed))
		return;
	if (ts_pool_reserved(md, o.n_metadata)) {
		ts_v1_reply_error(req, "invalid_argument",
				  "metadata key `%s` is reserved for serve's warm pool",
				  ts_pool_reserved(md, o.n_metadata));
		return;
	}
	o.envs = envs;
	o.metadata = md;
	/* a started sandbox of the warm pool's /v1 kind when one fits (pool.h), else a new one */
	r = ts_pool_claim(srv->pool, srv->be, &o, &sb) == 0 ? 0
							    : ts_sb_create(srv->be, &o, &sb, &err);
	if (r == 0)
		r = ts_sb_info(sb, &info, &err);
	if (r < 0) {
		ts_v1_reply_be_error(req, &err);
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

	if (!ts_v1_authorized(srv, req, TS_SCOPE_SANDBOXES_READ))
		return;
	if (!parse_states(ts_req_query(req, "state"), &o)) {
		ts_v1_reply_error(req, "invalid_argument",
				  "`state` is a comma-separated list of running, stopped, paused");
		return;
	}
	if ((q = ts_req_query(req, "limit"))) {
		unsigned long long l;

		if (ts_parse_ull(q, &l) < 0 || l == 0 || l > 1000) {
			ts_v1_reply_error(req, "invalid_argument", "`limit` is from 1 to 1000");
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
			ts_v1_reply_error(req, "internal", "out of memory");
			return;
		}
		for (tok = strtok_r(mdbuf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			char *eq = strchr(tok, '=');

			if (!eq || eq == tok || o.n_metadata == ELEMENTSOF(md)) {
				ts_v1_reply_error(
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
		ts_v1_reply_be_error(req, &err);
		return;
	}
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		if (!ts_pool_member(&v[i]))
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

	if (!ts_v1_authorized(srv, req, TS_SCOPE_SANDBOXES_READ) ||
	    !(sb = ts_v1_route_sandbox(srv, req, NULL)))
		return;
	if (ts_sb_info(sb, &info, &err) < 0) {
		ts_v1_reply_be_error(req, &err);
		return;
	}
	reply_json(req, 200, sandbox_json(&info));
	ts_sb_info_clear(&info);
}

/* Does id (or the prefix id) name a pool member, also one still starting, which
 * ts_pool_holds does not know yet? Its labels say so. */
static bool names_member(struct ts_srv *srv, const char *id)
{
	struct ts_sb *sb = NULL;
	struct ts_sb_info info = { 0 };
	struct ts_error ignore = { 0 };
	bool member = false;

	if (ts_sb_lookup(srv->be, id, &sb, &ignore) == 0 && ts_sb_info(sb, &info, &ignore) == 0)
		member = ts_pool_member(&info);
	ts_sb_info_clear(&info);
	ts_sb_close(sb);
	return member;
}

/* Is a snapshot of the sandbox id names (an id, a prefix or a name) being taken? */
static bool snapshot_of(struct ts_srv *srv, const char *id)
{
	struct ts_sb *sb = NULL;
	struct ts_sb_info info = { 0 };
	struct ts_error ignore = { 0 };
	bool busy;

	if (!srv->snap_jobs)
		return false;
	busy = ts_snapshots_busy(srv, id);
	if (!busy && ts_sb_lookup(srv->be, id, &sb, &ignore) == 0 &&
	    ts_sb_info(sb, &info, &ignore) == 0)
		busy = ts_snapshots_busy(srv, info.id);
	ts_sb_info_clear(&info);
	ts_sb_close(sb);
	return busy;
}

static void h_delete(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_error err = { 0 };
	const char *id = ts_req_param(req, 0);
	struct ts_sb *sb = NULL;
	char full[64];
	int r;

	if (!ts_v1_authorized(srv, req, TS_SCOPE_SANDBOXES_RUN))
		return;
	/* the kill below takes id prefixes: none may name a pool member */
	if (ts_pool_holds(srv->pool, id) || names_member(srv, id)) {
		ts_v1_reply_error(req, "not_found", "sandbox `%.64s` not found", id);
		return;
	}
	/* a prefix names its sandbox for the kill; the cache and E2B's record go by full id */
	if (ts_sb_lookup(srv->be, id, &sb, &err) == 0) {
		snprintf(full, sizeof(full), "%s", ts_sb_id(sb));
		ts_sb_close(sb);
		id = full;
	}
	/* the kill races the copy, which pauses the sandbox and resumes it after */
	if (snapshot_of(srv, id)) {
		ts_v1_reply_error(req, "snapshot_running",
				  "sandbox `%.64s` is being snapshotted: try again when the "
				  "snapshot is done",
				  id);
		return;
	}
	/* our cached handle goes first: the sandbox it names is about to be removed */
	ts_srv_forget(srv, id);
	r = ts_sb_kill(srv->be, id, &err);
	/* and E2B's record of it, if it was made through the control plane */
	if (r == 0 && srv->meta)
		ts_meta_delete(srv->meta, id, NULL);
	if (r == -ENOENT) {
		ts_v1_reply_error(req, "not_found", "sandbox `%.64s` not found", id);
		return;
	}
	if (r < 0) {
		ts_v1_reply_be_error(req, &err);
		return;
	}
	ts_req_reply(req, 204, NULL, NULL, 0);
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

	if (!ts_v1_authorized(srv, req, TS_SCOPE_SANDBOXES_READ) ||
	    !(sb = ts_v1_route_sandbox(srv, req, NULL)))
		return;
	if (ts_cmd_list(sb, &v, &n, &err) < 0) {
		ts_v1_reply_be_error(req, &err);
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

	if (!ts_v1_authorized(srv, req, TS_SCOPE_SANDBOXES_RUN) || !(b = ts_v1_body_object(req)) ||
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
			ts_v1_reply_error(req, "invalid_argument", "unknown signal `%.16s`", name);
			return;
		}
		sig = signals[i].sig;
	} else if (s && !json_is_null(s)) {
		ts_v1_reply_error(req, "invalid_argument",
				  "`signal` is a number 1-64 or a name (SIGTERM)");
		return;
	}
	if (!(sb = ts_v1_route_sandbox(srv, req, NULL)))
		return;
	if (ts_cmd_signal(sb, &sel, sig, &err) < 0) {
		ts_v1_reply_be_error(req, &err);
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

	if (!ts_v1_authorized(srv, req, TS_SCOPE_SANDBOXES_RUN) || !(b = ts_v1_body_object(req)) ||
	    !parse_pid(req, ts_req_param(req, 1), &sel.pid) ||
	    !ts_v1_get_string(req, b, "data", &data) ||
	    !ts_v1_get_string(req, b, "data_base64", &b64) ||
	    !ts_v1_get_bool(req, b, "close", &close))
		return;
	if (data && b64) {
		ts_v1_reply_error(req, "invalid_argument",
				  "give `data` or `data_base64`, not both");
		return;
	}
	if (b64) {
		if (ts_v1_base64_decode(b64, strlen(b64), &dec, &n) < 0) {
			ts_v1_reply_error(req, "invalid_argument", "`data_base64` is not base64");
			return;
		}
		p = dec;
	} else if (data) {
		p = (const uint8_t *)data;
		n = strlen(data);
	}
	if (!(sb = ts_v1_route_sandbox(srv, req, NULL)))
		return;
	for (size_t off = 0; off < n;) {
		size_t k = n - off > STDIN_CHUNK ? STDIN_CHUNK : n - off;

		if (ts_cmd_send_stdin(sb, &sel, p + off, k, &err) < 0) {
			ts_v1_reply_be_error(req, &err);
			return;
		}
		off += k;
	}
	if (close && ts_cmd_close_stdin(sb, &sel, &err) < 0) {
		ts_v1_reply_be_error(req, &err);
		return;
	}
	ts_req_reply(req, 204, NULL, NULL, 0);
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
			ts_v1_reply_error(req, "method_not_allowed",
					  "`%.16s` is not allowed on `%.256s`", ts_req_method(req),
					  path);
			return;
		}
	ts_v1_reply_error(req, "not_found", "no route `%.256s`", path);
}

const struct ts_route ts_v1_routes[] = {
	{ "GET", "/v1/openapi.json", h_openapi, begin_json, 0 },
	{ "GET", "/v1/pool", ts_pool_status, begin_json, 0 },
	{ "POST", "/v1/sandboxes", h_create, begin_json, 0 },
	{ "GET", "/v1/sandboxes", h_list, begin_json, 0 },
	{ "GET", "/v1/sandboxes/*", h_get, begin_json, 0 },
	{ "DELETE", "/v1/sandboxes/*", h_delete, begin_json, 0 },
	{ "POST", "/v1/sandboxes/*/commands", ts_v1_commands, begin_json, 0 },
	{ "GET", "/v1/sandboxes/*/files", ts_v1_file_get, begin_json, 0 },
	{ "PUT", "/v1/sandboxes/*/files", ts_v1_file_put, ts_v1_file_put_begin, TS_V1_FILE_MAX },
	{ "GET", "/v1/sandboxes/*/processes", h_processes, begin_json, 0 },
	{ "POST", "/v1/sandboxes/*/processes/*/kill", h_kill, begin_json, 0 },
	{ "POST", "/v1/sandboxes/*/processes/*/stdin", h_stdin, begin_json, 0 },
	{ "POST", "/v1/sandboxes/*/tools/*", ts_v1_sandbox_tool, ts_v1_tools_begin,
	  TS_V1_TOOL_BODY_MAX },
	{ "POST", "/v1/runs", ts_v1_run_new, begin_json, 0 },
	{ "POST", "/v1/runs/*/tools/*", ts_v1_run_tool, ts_v1_tools_begin, TS_V1_TOOL_BODY_MAX },
	{ "GET", "/v1/runs/*/events", ts_v1_run_events, begin_json, 0 },
	{ "GET", "/v1/approvals", ts_v1_approvals, begin_json, 0 },
	{ "POST", "/v1/approvals/*", ts_v1_approval_decide, begin_json, 0 },
	/* last: every other /v1 path and method */
	{ NULL, "/v1/**", h_fallback, begin_json, 0 },
	{ 0 },
};
