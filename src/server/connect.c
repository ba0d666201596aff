/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Connect's JSON codec as connect-go (envd) serves it: the content types a procedure
 * accepts, the unary and the enveloped streaming request, the error replies in the shape
 * both SDKs parse, and the ProtoJSON value encodings Go's protojson emits.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cleanup.h"
#include "connect.h"
#include "gowire.h"
#include "util.h"

/* Deeper than any envd request message; jansson's own parser limit is 2048. */
#define CONNECT_JSON_DEPTH 32

#define FLAG_COMPRESSED 0x01
#define FLAG_END_STREAM 0x02

/* --- codes ------------------------------------------------------------------------------ */

const char *ts_connect_code_name(enum ts_be_code code)
{
	switch (code) {
	case TS_BE_OK:
		return "ok";
	case TS_BE_NOT_FOUND:
		return "not_found";
	case TS_BE_INVALID_ARGUMENT:
		return "invalid_argument";
	case TS_BE_TIMEOUT:
		return "deadline_exceeded";
	case TS_BE_NOT_ENOUGH_SPACE:
	case TS_BE_RATE_LIMIT:
		return "resource_exhausted";
	case TS_BE_AUTHENTICATION:
		return "unauthenticated";
	case TS_BE_PERMISSION:
		return "permission_denied";
	case TS_BE_ALREADY_EXISTS:
		return "already_exists";
	case TS_BE_UNAVAILABLE:
		return "unavailable";
	case TS_BE_UNIMPLEMENTED:
		return "unimplemented";
	case TS_BE_TEMPLATE:
		return "failed_precondition";
	case TS_BE_COMMAND_EXIT:
		return "unknown";
	case TS_BE_INTERNAL:
		break;
	}
	return "internal";
}

/* Connect's table (connectrpc.com/docs/protocol, "Error Codes"). */
static const struct {
	const char *name;
	unsigned status;
} connect_status[] = {
	{ "canceled", 499 },
	{ "unknown", 500 },
	{ "invalid_argument", 400 },
	{ "deadline_exceeded", 504 },
	{ "not_found", 404 },
	{ "already_exists", 409 },
	{ "permission_denied", 403 },
	{ "resource_exhausted", 429 },
	{ "failed_precondition", 400 },
	{ "aborted", 409 },
	{ "out_of_range", 400 },
	{ "unimplemented", 501 },
	{ "internal", 500 },
	{ "unavailable", 503 },
	{ "data_loss", 500 },
	{ "unauthenticated", 401 },
};

unsigned ts_connect_http_status(const char *code_name)
{
	for (size_t i = 0; code_name && i < ELEMENTSOF(connect_status); i++)
		if (!strcmp(connect_status[i].name, code_name))
			return connect_status[i].status;
	return 500;
}

/* --- JSON ------------------------------------------------------------------------------- */

static bool depth_ok(json_t *v, unsigned left)
{
	const char *k;
	json_t *m;
	size_t i;

	if (!json_is_object(v) && !json_is_array(v))
		return true;
	if (!left)
		return false;
	if (json_is_object(v)) {
		json_object_foreach(v, k, m)
			if (!depth_ok(m, left - 1))
				return false;
	} else {
		json_array_foreach(v, i, m)
			if (!depth_ok(m, left - 1))
				return false;
	}
	return true;
}

/* A request message: one JSON object, bounded in depth. NULL with msg filled otherwise. */
static json_t *parse_message(const uint8_t *p, size_t n, char *msg, size_t size)
{
	json_error_t jerr;
	json_t *v;

	/* connect-go's JSON codec refuses an empty payload too: protojson wants an object */
	if (!n) {
		snprintf(msg, size, "zero-length payload is not a valid JSON object");
		return NULL;
	}
	v = json_loadb((const char *)p, n, JSON_REJECT_DUPLICATES, &jerr);
	if (!v) {
		snprintf(msg, size, "unmarshal request: %s (at %d)", jerr.text, jerr.position);
		return NULL;
	}
	if (!json_is_object(v)) {
		json_decref(v);
		snprintf(msg, size, "unmarshal request: not a JSON object");
		return NULL;
	}
	if (!depth_ok(v, CONNECT_JSON_DEPTH)) {
		json_decref(v);
		snprintf(msg, size, "unmarshal request: nested deeper than %d", CONNECT_JSON_DEPTH);
		return NULL;
	}
	return v;
}

static char *dump(json_t *json)
{
	return json ? json_dumps(json, JSON_COMPACT) : NULL;
}

/* {"code":code,"message":msg}: a unary error body, and the "error" of an end-stream. A
 * message quoting the request (a header, a tag) may not be UTF-8, which JSON cannot
 * carry: then every byte outside ASCII becomes '?'. */
static json_t *error_json(const char *code_name, const char *msg)
{
	json_t *m = json_string(msg);
	char ascii[1024];
	size_t i;

	if (!m) {
		for (i = 0; msg[i] && i < sizeof(ascii) - 1; i++)
			ascii[i] = (unsigned char)msg[i] < 0x80 ? msg[i] : '?';
		ascii[i] = '\0';
		m = json_string(ascii);
	}
	return json_pack("{s:s,s:o}", "code", code_name, "message", m);
}

/* --- content types ---------------------------------------------------------------------- */

/*
 * Does the Content-Type name `want` (lowercase, "application/json")? As connect-go
 * canonicalises it: the media type case-insensitively, and only a charset=utf-8
 * parameter (its value case-insensitive too).
 */
static bool content_type_is(const char *ct, const char *want)
{
	size_t n = strlen(want);
	const char *p;

	if (!ct || strncasecmp(ct, want, n))
		return false;
	p = ct + n;
	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p)
		return true;
	if (*p++ != ';')
		return false;
	while (*p == ' ' || *p == '\t')
		p++;
	if (strncasecmp(p, "charset", 7))
		return false;
	p += 7;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p++ != '=')
		return false;
	while (*p == ' ' || *p == '\t')
		p++;
	if (!strncasecmp(p, "\"utf-8\"", 7))
		p += 7;
	else if (!strncasecmp(p, "utf-8", 5))
		p += 5;
	else
		return false;
	while (*p == ' ' || *p == '\t')
		p++;
	return !*p;
}

/* --- requests --------------------------------------------------------------------------- */

/* An error before the call started: unary as an error status, streaming as a lone
 * end-stream envelope (connect-go answers a streaming call's errors with 200). */
__attribute__((format(printf, 4, 5))) static void
request_error(struct ts_req *req, bool streaming, const char *code_name, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (streaming)
		ts_connect_stream_error(req, code_name, "%s", msg);
	else
		ts_connect_reply_error(req, code_name, "%s", msg);
}

static bool identity(const char *enc)
{
	return !enc || !*enc || !strcasecmp(enc, "identity");
}

json_t *ts_connect_request(struct ts_req *req, bool streaming)
{
	const char *want = streaming ? "application/connect+json" : "application/json";
	const char *method = ts_req_method(req), *version, *enc;
	const uint8_t *body;
	char msg[256];
	size_t len;
	uint32_t n;
	json_t *v;

	/* connect-go: only POST reaches a procedure that is not idempotent (GET is for
	 * side-effect-free unary calls, which envd has none of) */
	if (!method || strcmp(method, "POST")) {
		ts_req_add_header(req, "Allow", "POST");
		ts_req_reply(req, 405, NULL, NULL, 0);
		return NULL;
	}
	/* No protocol of ours speaks this content type: connect-go's 415, naming what would
	 * be understood, before any Connect error can be framed. */
	if (!content_type_is(ts_req_header(req, "Content-Type"), want)) {
		ts_req_add_header(req, "Accept-Post",
				  streaming ? "application/connect+json, "
					      "application/connect+json; charset=utf-8"
					    : "application/json, application/json; charset=utf-8");
		ts_req_reply(req, 415, NULL, NULL, 0);
		return NULL;
	}
	version = ts_req_header(req, "Connect-Protocol-Version");
	if (version && strcmp(version, "1")) {
		request_error(req, streaming, "invalid_argument",
			      "connect-protocol-version must be \"1\": got \"%.64s\"", version);
		return NULL;
	}
	enc = ts_req_header(req, streaming ? "Connect-Content-Encoding" : "Content-Encoding");
	if (!identity(enc)) {
		request_error(req, streaming, "unimplemented",
			      "unknown compression \"%.64s\": supported encodings are identity",
			      enc);
		return NULL;
	}
	if (ts_connect_timeout_ms(req) < 0) {
		request_error(req, streaming, "invalid_argument",
			      "protocol error: invalid connect timeout \"%.64s\"",
			      ts_req_header(req, "Connect-Timeout-Ms"));
		return NULL;
	}

	body = ts_req_body(req, &len);
	if (!body)
		len = 0;
	if (!streaming) {
		v = parse_message(body, len, msg, sizeof(msg));
		if (!v)
			ts_connect_reply_error(req, "invalid_argument", "%s", msg);
		return v;
	}

	/* A server-streaming request is exactly one uncompressed message envelope. */
	if (len < 5) {
		ts_connect_stream_error(req, "invalid_argument",
					"protocol error: incomplete envelope: %zu bytes", len);
		return NULL;
	}
	if (body[0] & FLAG_COMPRESSED) {
		ts_connect_stream_error(req, "invalid_argument",
					"protocol error: sent compressed message without "
					"compression support");
		return NULL;
	}
	if (body[0]) {
		ts_connect_stream_error(req, "invalid_argument",
					"protocol error: invalid envelope flags %#x", body[0]);
		return NULL;
	}
	n = (uint32_t)body[1] << 24 | (uint32_t)body[2] << 16 | (uint32_t)body[3] << 8 | body[4];
	if (n > TS_CONNECT_ENVELOPE_MAX) {
		ts_connect_stream_error(req, "resource_exhausted",
					"message size %" PRIu32 " is larger than configured max %u",
					n, TS_CONNECT_ENVELOPE_MAX);
		return NULL;
	}
	if (n > len - 5) {
		ts_connect_stream_error(req, "invalid_argument",
					"protocol error: promised %" PRIu32
					" bytes in enveloped message, got %zu bytes",
					n, len - 5);
		return NULL;
	}
	if (n < len - 5) {
		ts_connect_stream_error(req, "invalid_argument",
					"protocol error: %zu bytes after the request message",
					len - 5 - n);
		return NULL;
	}
	v = parse_message(body + 5, n, msg, sizeof(msg));
	if (!v)
		ts_connect_stream_error(req, "invalid_argument", "%s", msg);
	return v;
}

long long ts_connect_timeout_ms(struct ts_req *req)
{
	const char *h = ts_req_header(req, "Connect-Timeout-Ms");
	long long v = 0;
	size_t i;

	if (!h)
		return 0;
	/* Connect: 1 to 10 ASCII digits */
	for (i = 0; h[i]; i++) {
		if (h[i] < '0' || h[i] > '9' || i >= 10)
			return -1;
		v = v * 10 + (h[i] - '0');
	}
	if (!i)
		return -1;
	/* A zero timeout is a deadline already passed, not "none" (connect-go's
	 * context.WithTimeout(0)): the smallest deadline we can arm. */
	return v ? v : 1;
}

/* --- unary replies ---------------------------------------------------------------------- */

int ts_connect_reply(struct ts_req *req, json_t *json)
{
	char *s = dump(json);

	json_decref(json);
	if (!s)
		return ts_connect_reply_error(req, "internal", "encode the response");
	return ts_req_reply_take(req, 200, "application/json", s, strlen(s));
}

static int reply_error_msg(struct ts_req *req, const char *code_name, const char *msg)
{
	json_t *j = error_json(code_name, msg);
	char *s = dump(j);

	json_decref(j);
	if (!s) {
		static const char oom[] = "{\"code\":\"internal\",\"message\":\"out of memory\"}";

		return ts_req_reply(req, 500, "application/json", oom, sizeof(oom) - 1);
	}
	return ts_req_reply_take(req, ts_connect_http_status(code_name), "application/json", s,
				 strlen(s));
}

int ts_connect_reply_error(struct ts_req *req, const char *code_name, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return reply_error_msg(req, code_name, msg);
}

int ts_connect_reply_be_error(struct ts_req *req, const struct ts_error *err)
{
	return reply_error_msg(req, ts_connect_code_name(ts_be_code(err)), err->msg);
}

/* --- streams ---------------------------------------------------------------------------- */

/* flags, u32 big-endian length, payload: one buffer, so one write. */
static uint8_t *envelope(uint8_t flags, const char *payload, size_t *len)
{
	size_t n = strlen(payload);
	uint8_t *b;

	if (n > UINT32_MAX)
		return NULL;
	b = malloc(n + 5);
	if (!b)
		return NULL;
	b[0] = flags;
	b[1] = (uint8_t)(n >> 24);
	b[2] = (uint8_t)(n >> 16);
	b[3] = (uint8_t)(n >> 8);
	b[4] = (uint8_t)n;
	memcpy(b + 5, payload, n);
	*len = n + 5;
	return b;
}

/* The end-stream message: {} or {"error":{"code","message"}}. */
static char *end_stream_payload(const char *code_name, const char *msg)
{
	json_t *j;
	char *s;

	if (!code_name)
		return strdup("{}");
	j = json_pack("{s:o}", "error", error_json(code_name, msg));
	s = dump(j);
	json_decref(j);
	return s;
}

struct ts_stream *ts_connect_stream(struct ts_req *req, void (*on_close)(void *, bool),
				    void *userdata, struct ts_error *err)
{
	return ts_req_stream(req, 200, "application/connect+json", on_close, userdata, err);
}

int ts_connect_send(struct ts_stream *s, json_t *json)
{
	_cleanup_free_ char *p = dump(json);
	_cleanup_free_ uint8_t *b = NULL;
	size_t len;

	json_decref(json);
	if (!p)
		return -ENOMEM;
	b = envelope(0, p, &len);
	if (!b)
		return -ENOMEM;
	return ts_stream_write(s, b, len);
}

int ts_connect_end(struct ts_stream *s, const char *code_name, const char *fmt, ...)
{
	_cleanup_free_ uint8_t *b = NULL;
	_cleanup_free_ char *p = NULL;
	char msg[1024] = "";
	size_t len;
	va_list ap;
	int r;

	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
	}
	p = end_stream_payload(code_name, msg);
	b = p ? envelope(FLAG_END_STREAM, p, &len) : NULL;
	/* Without its end-stream frame the client reports the stream as broken anyway:
	 * dropping the connection says the same without pretending it ended. */
	if (!b) {
		ts_stream_abort(s);
		return -ENOMEM;
	}
	r = ts_stream_write(s, b, len);
	if (r < 0) {
		ts_stream_abort(s);
		return r;
	}
	ts_stream_end(s);
	return 0;
}

int ts_connect_stream_error(struct ts_req *req, const char *code_name, const char *fmt, ...)
{
	_cleanup_free_ char *p = NULL;
	char msg[1024];
	uint8_t *b;
	size_t len;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p = end_stream_payload(code_name ? code_name : "unknown", msg);
	b = p ? envelope(FLAG_END_STREAM, p, &len) : NULL;
	if (!b)
		return ts_req_reply(req, 500, NULL, NULL, 0);
	return ts_req_reply_take(req, 200, "application/connect+json", b, len);
}

/* --- ProtoJSON ------------------------------------------------------------------------- */

json_t *ts_pj_get(json_t *obj, const char *camel, const char *snake)
{
	json_t *v = json_object_get(obj, camel);

	if (!v && snake)
		v = json_object_get(obj, snake);
	/* protojson reads null as the field's default, as if absent */
	return json_is_null(v) ? NULL : v;
}

json_t *ts_pj_bytes(const void *p, size_t n)
{
	size_t len;
	char *s = ts_base64_encode(p, n, &len);
	json_t *v = s ? json_stringn_nocheck(s, len) : NULL;

	free(s);
	return v;
}

json_t *ts_pj_text(const char *s)
{
	size_t n, i = 0, o = 0, k;
	char *buf;
	json_t *v;

	if (!s)
		return NULL;
	v = json_string(s);
	if (v)
		return v;
	n = strlen(s);
	if (n > SIZE_MAX / 3)
		return NULL;
	buf = malloc(n * 3 + 1);
	if (!buf)
		return NULL;
	while (i < n) {
		k = ts_utf8_seq(s + i, n - i);
		if (k) {
			memcpy(buf + o, s + i, k);
			o += k;
			i += k;
		} else {
			memcpy(buf + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i++;
		}
	}
	buf[o] = '\0';
	v = json_stringn(buf, o);
	free(buf);
	return v;
}

int ts_pj_bytes_decode(json_t *v, uint8_t **ret, size_t *n)
{
	if (!v) {
		*ret = NULL;
		*n = 0;
		return 0;
	}
	if (!json_is_string(v))
		return -EINVAL;
	return ts_base64_decode(json_string_value(v), json_string_length(v), ret, n);
}

json_t *ts_pj_int64(long long v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%lld", v);
	return json_string(buf);
}

int ts_pj_int(json_t *v, long long *ret)
{
	const char *s;
	char *end;
	double d;

	if (json_is_integer(v)) {
		*ret = json_integer_value(v);
		return 0;
	}
	/* protojson takes 1.0 and 1e3 for an integer field, never 1.5 */
	if (json_is_real(v)) {
		d = json_real_value(v);
		if (d != floor(d) || d < -9.2233720368547758e18 || d >= 9.2233720368547758e18)
			return -EINVAL;
		*ret = (long long)d;
		return 0;
	}
	if (!json_is_string(v))
		return -EINVAL;
	s = json_string_value(v);
	if (!*s || !(*s == '-' || (*s >= '0' && *s <= '9')))
		return -EINVAL;
	errno = 0;
	*ret = strtoll(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	return 0;
}

json_t *ts_pj_time(long long ms)
{
	long long secs = ms / 1000, frac = ms % 1000;
	char buf[48];
	struct tm tm;
	time_t t;

	if (frac < 0) {
		frac += 1000;
		secs--;
	}
	/* google.protobuf.Timestamp's range: 0001-01-01 to 9999-12-31 */
	if (secs < -62135596800LL || secs > 253402300799LL)
		return NULL;
	t = (time_t)secs;
	if (!gmtime_r(&t, &tm))
		return NULL;
	/* protojson: Z-normalised, 0, 3, 6 or 9 fractional digits as the value needs */
	if (frac)
		snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03lldZ",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			 tm.tm_sec, frac);
	else
		snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	return json_string(buf);
}
