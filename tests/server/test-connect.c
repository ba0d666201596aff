/* SPDX-License-Identifier: Apache-2.0 */
/*
 * src/server/connect.c against a fake http layer (fake-http.c): the content-type and
 * method checks, the unary and enveloped requests and every way an envelope can be bad,
 * the error replies (status, body) and stream envelopes byte for byte, and the ProtoJSON
 * helpers (base64 in both alphabets, padded and not; int64 strings; Timestamps).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "connect.h"
#include "fake-http.h"
#include "tap.h"

/* An envelope of flags and payload into buf (5 + strlen bytes); its length. */
static size_t env(uint8_t *buf, uint8_t flags, const char *payload)
{
	size_t n = strlen(payload);

	buf[0] = flags;
	buf[1] = (uint8_t)(n >> 24);
	buf[2] = (uint8_t)(n >> 16);
	buf[3] = (uint8_t)(n >> 8);
	buf[4] = (uint8_t)n;
	memcpy(buf + 5, payload, n);
	return n + 5;
}

/* {"k":[[...]]} with n arrays; its length. */
static size_t nested(char *buf, int n)
{
	size_t o = 0;

	memcpy(buf, "{\"k\":", 5);
	o = 5;
	for (int i = 0; i < n; i++)
		buf[o++] = '[';
	for (int i = 0; i < n; i++)
		buf[o++] = ']';
	buf[o++] = '}';
	return o;
}

static bool reply_is(const struct ts_req *r, unsigned status, const char *ct, const char *body)
{
	return r->replies == 1 && r->status == status && !strcmp(r->content_type, ct) &&
	       r->reply_len == strlen(body) &&
	       (!r->reply_len || !memcmp(r->reply, body, r->reply_len));
}

/* A lone end-stream envelope carrying {"error":{"code":code,"message":msg}}. */
static bool stream_error_is(const struct ts_req *r, const char *code, const char *msg)
{
	char payload[1024];
	uint8_t want[1100];
	size_t n;

	snprintf(payload, sizeof(payload), "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}", code,
		 msg);
	n = env(want, 0x02, payload);
	return r->replies == 1 && !r->streaming && r->status == 200 &&
	       !strcmp(r->content_type, "application/connect+json") && r->reply_len == n &&
	       !memcmp(r->reply, want, n);
}

static void show(const struct ts_req *r)
{
	diag("replies %u status %u type `%s` body %zu bytes: %.*s", r->replies, r->status,
	     r->content_type, r->reply_len, r->reply_len > 5 ? (int)r->reply_len - 5 : 0,
	     r->reply_len > 5 ? (const char *)r->reply + 5 : "");
}

static void test_codes(void)
{
	ok(!strcmp(ts_connect_code_name(TS_BE_NOT_FOUND), "not_found") &&
		   !strcmp(ts_connect_code_name(TS_BE_INVALID_ARGUMENT), "invalid_argument") &&
		   !strcmp(ts_connect_code_name(TS_BE_TIMEOUT), "deadline_exceeded") &&
		   !strcmp(ts_connect_code_name(TS_BE_UNIMPLEMENTED), "unimplemented") &&
		   !strcmp(ts_connect_code_name(TS_BE_NOT_ENOUGH_SPACE), "resource_exhausted") &&
		   !strcmp(ts_connect_code_name(TS_BE_INTERNAL), "internal") &&
		   !strcmp(ts_connect_code_name((enum ts_be_code)999), "internal"),
	   "backend classes map onto Connect code names");
	ok(ts_connect_http_status("canceled") == 499 && ts_connect_http_status("unknown") == 500 &&
		   ts_connect_http_status("invalid_argument") == 400 &&
		   ts_connect_http_status("deadline_exceeded") == 504 &&
		   ts_connect_http_status("not_found") == 404 &&
		   ts_connect_http_status("already_exists") == 409 &&
		   ts_connect_http_status("permission_denied") == 403 &&
		   ts_connect_http_status("resource_exhausted") == 429 &&
		   ts_connect_http_status("failed_precondition") == 400 &&
		   ts_connect_http_status("aborted") == 409 &&
		   ts_connect_http_status("out_of_range") == 400 &&
		   ts_connect_http_status("unimplemented") == 501 &&
		   ts_connect_http_status("internal") == 500 &&
		   ts_connect_http_status("unavailable") == 503 &&
		   ts_connect_http_status("data_loss") == 500 &&
		   ts_connect_http_status("unauthenticated") == 401,
	   "the Connect HTTP status table");
	ok(ts_connect_http_status("bogus") == 500 && ts_connect_http_status(NULL) == 500,
	   "an unknown code name is 500");
}

static void test_unary(void)
{
	struct ts_req r;
	json_t *v;
	static const char *good_types[] = { "application/json", "application/json; charset=utf-8",
					    "Application/JSON;charset=UTF-8",
					    "application/json ; charset = \"utf-8\"" };
	static const char *bad_types[] = { "application/connect+json",	       "application/jsonx",
					   "application/json; charset=latin1", "text/json",
					   "application/json; foo=bar",	       "" };

	for (size_t i = 0; i < sizeof(good_types) / sizeof(*good_types); i++) {
		fake_req_init(&r, good_types[i], "{\"a\":1}", 7);
		v = ts_connect_request(&r, false);
		ok(v && json_integer_value(json_object_get(v, "a")) == 1 && !r.replies,
		   "unary `%s` is accepted and parsed", good_types[i]);
		json_decref(v);
		fake_req_clear(&r);
	}
	for (size_t i = 0; i < sizeof(bad_types) / sizeof(*bad_types); i++) {
		fake_req_init(&r, bad_types[i], "{}", 2);
		v = ts_connect_request(&r, false);
		ok(!v && r.replies == 1 && r.status == 415 && !r.reply_len &&
			   strstr(r.reply_headers,
				  "Accept-Post: application/json, application/json; charset=utf-8\n"),
		   "unary `%s`: 415 with Accept-Post", bad_types[i]);
		fake_req_clear(&r);
	}
	fake_req_init(&r, NULL, "{}", 2);
	v = ts_connect_request(&r, false);
	ok(!v && r.status == 415, "unary without a content type: 415");
	fake_req_clear(&r);

	fake_req_init(&r, "application/json", "{}", 2);
	r.method = "GET";
	v = ts_connect_request(&r, false);
	ok(!v && r.replies == 1 && r.status == 405 && strstr(r.reply_headers, "Allow: POST\n"),
	   "GET: 405 with Allow: POST");
	fake_req_clear(&r);

	static const struct {
		const char *body, *msg;
	} bad_bodies[] = {
		{ "", "zero-length payload is not a valid JSON object" },
		{ "[1]", "unmarshal request: not a JSON object" },
		{ "\"s\"", NULL },
		{ "{\"a\":", NULL },
		{ "{\"a\":1}x", NULL },
		{ "{\"a\":1,\"a\":2}", NULL },
		{ "{\"a\":\"\\u0000\"}", NULL },
	};
	for (size_t i = 0; i < sizeof(bad_bodies) / sizeof(*bad_bodies); i++) {
		fake_req_init(&r, "application/json", bad_bodies[i].body,
			      strlen(bad_bodies[i].body));
		v = ts_connect_request(&r, false);
		if (bad_bodies[i].msg) {
			char want[256];

			snprintf(want, sizeof(want),
				 "{\"code\":\"invalid_argument\",\"message\":\"%s\"}",
				 bad_bodies[i].msg);
			ok(!v && reply_is(&r, 400, "application/json", want),
			   "unary body `%s`: 400 %s", bad_bodies[i].body, want);
		} else {
			ok(!v && r.replies == 1 && r.status == 400 &&
				   !strcmp(r.content_type, "application/json") &&
				   r.reply_len > 40 &&
				   !memcmp(r.reply, "{\"code\":\"invalid_argument\",\"message\":\"",
					   38),
			   "unary body `%s`: 400 invalid_argument", bad_bodies[i].body);
		}
		if (r.replies)
			diag("%.*s", (int)r.reply_len, (const char *)r.reply);
		fake_req_clear(&r);
	}

	/* depth: an object and 31 arrays (32 levels) pass, one more does not */
	char deep[200];
	size_t o = nested(deep, 31);
	fake_req_init(&r, "application/json", deep, o);
	v = ts_connect_request(&r, false);
	ok(v && !r.replies, "32 levels of nesting are accepted");
	json_decref(v);
	fake_req_clear(&r);
	o = nested(deep, 32);
	fake_req_init(&r, "application/json", deep, o);
	v = ts_connect_request(&r, false);
	ok(!v && reply_is(&r, 400, "application/json",
			  "{\"code\":\"invalid_argument\",\"message\":\"unmarshal request: nested "
			  "deeper than 32\"}"),
	   "33 levels: invalid_argument");
	fake_req_clear(&r);

	fake_req_init(&r, "application/json", "{}", 2);
	fake_req_header(&r, "Connect-Protocol-Version", "2");
	v = ts_connect_request(&r, false);
	ok(!v && reply_is(&r, 400, "application/json",
			  "{\"code\":\"invalid_argument\",\"message\":\"connect-protocol-version "
			  "must be \\\"1\\\": got \\\"2\\\"\"}"),
	   "Connect-Protocol-Version 2: invalid_argument");
	fake_req_clear(&r);
	fake_req_init(&r, "application/json", "{}", 2);
	fake_req_header(&r, "Connect-Protocol-Version", "1");
	v = ts_connect_request(&r, false);
	ok(v && !r.replies, "Connect-Protocol-Version 1 (control)");
	json_decref(v);
	fake_req_clear(&r);

	fake_req_init(&r, "application/json", "{}", 2);
	fake_req_header(&r, "Content-Encoding", "gzip");
	v = ts_connect_request(&r, false);
	ok(!v && r.status == 501 && strstr((char *)r.reply, "\"code\":\"unimplemented\""),
	   "Content-Encoding gzip: unimplemented");
	fake_req_clear(&r);
	fake_req_init(&r, "application/json", "{}", 2);
	fake_req_header(&r, "Content-Encoding", "identity");
	v = ts_connect_request(&r, false);
	ok(v && !r.replies, "Content-Encoding identity (control)");
	json_decref(v);
	fake_req_clear(&r);

	/* Python's SDK sends the timeout on unary calls too: accepted */
	fake_req_init(&r, "application/json", "{}", 2);
	fake_req_header(&r, "Connect-Timeout-Ms", "60000");
	v = ts_connect_request(&r, false);
	ok(v && !r.replies && ts_connect_timeout_ms(&r) == 60000,
	   "unary Connect-Timeout-Ms 60000 accepted");
	json_decref(v);
	fake_req_clear(&r);
}

static void test_timeout(void)
{
	static const struct {
		const char *h;
		long long want;
	} cases[] = {
		{ NULL, 0 },   { "1500", 1500 },      { "0", 1 },    { "9999999999", 9999999999LL },
		{ "", -1 },    { "12345678901", -1 }, { "-5", -1 },  { "+5", -1 },
		{ "1.5", -1 }, { "5 ", -1 },	      { "abc", -1 },
	};
	struct ts_req r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		fake_req_init(&r, "application/json", "{}", 2);
		if (cases[i].h)
			fake_req_header(&r, "Connect-Timeout-Ms", cases[i].h);
		ok(ts_connect_timeout_ms(&r) == cases[i].want, "Connect-Timeout-Ms `%s` is %lld",
		   cases[i].h ? cases[i].h : "(none)", cases[i].want);
		fake_req_clear(&r);
	}
	fake_req_init(&r, "application/connect+json", "\0\0\0\0\2{}", 7);
	fake_req_header(&r, "Connect-Timeout-Ms", "soon");
	ok(!ts_connect_request(&r, true) &&
		   stream_error_is(&r, "invalid_argument",
				   "protocol error: invalid connect timeout \\\"soon\\\""),
	   "a malformed Connect-Timeout-Ms on a stream: end-stream invalid_argument");
	fake_req_clear(&r);

	/* a message quoting bytes that are not UTF-8 still makes JSON (found by fuzz-connect) */
	fake_req_init(&r, "application/connect+json", "\0\0\0\0\2{}", 7);
	fake_req_header(&r, "Connect-Timeout-Ms", "\xe1\xe1x");
	ok(!ts_connect_request(&r, true) &&
		   stream_error_is(&r, "invalid_argument",
				   "protocol error: invalid connect timeout \\\"??x\\\""),
	   "a header that is not UTF-8 in an error message: '?' for each byte outside ASCII");
	show(&r);
	fake_req_clear(&r);
	fake_req_init(&r, "application/json", "{}", 2);
	ts_connect_reply_error(&r, "not_found", "tag %s", "\xff\xfe");
	ok(reply_is(&r, 404, "application/json", "{\"code\":\"not_found\",\"message\":\"tag ??\"}"),
	   "a unary error message that is not UTF-8: '?' too");
	fake_req_clear(&r);
}

static void test_stream_request(void)
{
	uint8_t buf[256];
	struct ts_req r;
	size_t n;
	json_t *v;

	n = env(buf, 0, "{\"process\":{\"pid\":7}}");
	fake_req_init(&r, "application/connect+json", buf, n);
	v = ts_connect_request(&r, true);
	ok(v && json_integer_value(json_object_get(json_object_get(v, "process"), "pid")) == 7 &&
		   !r.replies,
	   "one envelope is the request");
	json_decref(v);
	fake_req_clear(&r);

	fake_req_init(&r, "application/connect+json; charset=utf-8", buf, n);
	v = ts_connect_request(&r, true);
	ok(v && !r.replies, "application/connect+json; charset=utf-8 is accepted");
	json_decref(v);
	fake_req_clear(&r);

	fake_req_init(&r, "application/json", buf, n);
	v = ts_connect_request(&r, true);
	ok(!v && r.status == 415 && !r.reply_len &&
		   strstr(r.reply_headers, "Accept-Post: application/connect+json, "
					   "application/connect+json; charset=utf-8\n"),
	   "a stream sent as application/json: 415 with Accept-Post");
	fake_req_clear(&r);

	buf[0] = 0x01;
	fake_req_init(&r, "application/connect+json", buf, n);
	v = ts_connect_request(&r, true);
	ok(!v && stream_error_is(&r, "invalid_argument",
				 "protocol error: sent compressed message without compression "
				 "support"),
	   "compressed flag: 200 + end-stream invalid_argument, byte-exact");
	show(&r);
	fake_req_clear(&r);

	buf[0] = 0x02;
	fake_req_init(&r, "application/connect+json", buf, n);
	v = ts_connect_request(&r, true);
	ok(!v && stream_error_is(&r, "invalid_argument",
				 "protocol error: invalid envelope flags 0x2"),
	   "end-stream flag on a request: invalid_argument");
	show(&r);
	fake_req_clear(&r);
	buf[0] = 0;

	fake_req_init(&r, "application/connect+json", buf, n - 1);
	v = ts_connect_request(&r, true);
	ok(!v && stream_error_is(&r, "invalid_argument",
				 "protocol error: promised 21 bytes in enveloped message, got 20 "
				 "bytes"),
	   "a body shorter than its envelope: invalid_argument");
	show(&r);
	fake_req_clear(&r);

	memcpy(buf + n, "\0\0\0\0\2{}", 7);
	fake_req_init(&r, "application/connect+json", buf, n + 7);
	v = ts_connect_request(&r, true);
	ok(!v && stream_error_is(&r, "invalid_argument",
				 "protocol error: 7 bytes after the request message"),
	   "a second envelope (trailing bytes): invalid_argument");
	show(&r);
	fake_req_clear(&r);

	fake_req_init(&r, "application/connect+json", buf, 3);
	v = ts_connect_request(&r, true);
	ok(!v && stream_error_is(&r, "invalid_argument",
				 "protocol error: incomplete envelope: 3 bytes"),
	   "3 bytes: incomplete envelope");
	fake_req_clear(&r);

	fake_req_init(&r, "application/connect+json", "", 0);
	v = ts_connect_request(&r, true);
	ok(!v && stream_error_is(&r, "invalid_argument",
				 "protocol error: incomplete envelope: 0 bytes"),
	   "an empty body: incomplete envelope");
	fake_req_clear(&r);

	/* a length over the bound is refused before anything else is read */
	uint8_t big[5] = { 0, 0x00, 0x40, 0x00, 0x01 }; /* 4 MiB + 1 */
	fake_req_init(&r, "application/connect+json", big, 5);
	v = ts_connect_request(&r, true);
	ok(!v && stream_error_is(&r, "resource_exhausted",
				 "message size 4194305 is larger than configured max 4194304"),
	   "an envelope over TS_CONNECT_ENVELOPE_MAX: resource_exhausted");
	show(&r);
	fake_req_clear(&r);

	n = env(buf, 0, "not json");
	fake_req_init(&r, "application/connect+json", buf, n);
	v = ts_connect_request(&r, true);
	ok(!v && r.status == 200 && r.reply_len > 5 && r.reply[0] == 0x02 &&
		   strstr((char *)r.reply + 5, "{\"error\":{\"code\":\"invalid_argument\""),
	   "non-JSON payload: end-stream invalid_argument");
	show(&r);
	fake_req_clear(&r);

	n = env(buf, 0, "");
	fake_req_init(&r, "application/connect+json", buf, n);
	v = ts_connect_request(&r, true);
	ok(!v && stream_error_is(&r, "invalid_argument",
				 "zero-length payload is not a valid JSON object"),
	   "an empty envelope: invalid_argument");
	fake_req_clear(&r);

	n = env(buf, 0, "{}");
	fake_req_init(&r, "application/connect+json", buf, n);
	fake_req_header(&r, "Connect-Content-Encoding", "gzip");
	v = ts_connect_request(&r, true);
	ok(!v && stream_error_is(&r, "unimplemented",
				 "unknown compression \\\"gzip\\\": supported encodings are "
				 "identity"),
	   "Connect-Content-Encoding gzip: end-stream unimplemented");
	show(&r);
	fake_req_clear(&r);
}

static void test_replies(void)
{
	struct ts_error err = { 0 };
	struct ts_req r;

	fake_req_init(&r, "application/json", "{}", 2);
	ts_connect_reply(&r, json_pack("{s:s,s:i}", "b", "x", "a", 1));
	ok(reply_is(&r, 200, "application/json", "{\"b\":\"x\",\"a\":1}"),
	   "unary reply: 200 application/json, compact, members in order");
	fake_req_clear(&r);

	fake_req_init(&r, "application/json", "{}", 2);
	ts_connect_reply(&r, json_object());
	ok(reply_is(&r, 200, "application/json", "{}"), "an empty reply is {} (never no body)");
	fake_req_clear(&r);

	fake_req_init(&r, "application/json", "{}", 2);
	ts_connect_reply_error(&r, "not_found", "process with pid %d not found", 42);
	ok(reply_is(&r, 404, "application/json",
		    "{\"code\":\"not_found\",\"message\":\"process with pid 42 not found\"}"),
	   "unary error: 404 + {code,message}");
	fake_req_clear(&r);

	fake_req_init(&r, "application/json", "{}", 2);
	ts_connect_reply_error(&r, "unimplemented", "say \"%s\"\n", "hi");
	ok(reply_is(&r, 501, "application/json",
		    "{\"code\":\"unimplemented\",\"message\":\"say \\\"hi\\\"\\n\"}"),
	   "an error message is JSON-escaped");
	fake_req_clear(&r);

	fake_req_init(&r, "application/json", "{}", 2);
	ts_err(&err, -ENOENT, "no `x`");
	ts_connect_reply_be_error(&r, &err);
	ok(reply_is(&r, 404, "application/json", "{\"code\":\"not_found\",\"message\":\"no `x`\"}"),
	   "a backend ENOENT: 404 not_found with its message");
	fake_req_clear(&r);

	fake_req_init(&r, "application/json", "{}", 2);
	ts_err(&err, -EIO, "broken");
	ts_connect_reply_be_error(&r, &err);
	ok(reply_is(&r, 500, "application/json", "{\"code\":\"internal\",\"message\":\"broken\"}"),
	   "a backend EIO: 500 internal");
	fake_req_clear(&r);

	fake_req_init(&r, "application/connect+json", "", 0);
	ts_connect_stream_error(&r, "not_found", "process with pid %d not found", 9);
	ok(stream_error_is(&r, "not_found", "process with pid 9 not found"),
	   "stream error before the first message: 200 + lone end-stream");
	fake_req_clear(&r);
}

static int closed;
static void on_close(void *userdata, bool gone)
{
	closed++;
}

static void test_stream_out(void)
{
	struct ts_error err = { 0 };
	struct ts_stream *s;
	uint8_t want[256];
	struct ts_req r;
	size_t n;

	fake_req_init(&r, "application/connect+json", "", 0);
	s = ts_connect_stream(&r, on_close, NULL, &err);
	ok(s && r.streaming && r.status == 200 &&
		   !strcmp(r.content_type, "application/connect+json"),
	   "a stream opens as 200 application/connect+json");
	ts_connect_send(s, json_pack("{s:{s:{s:i}}}", "event", "start", "pid", 7));
	n = env(want, 0, "{\"event\":{\"start\":{\"pid\":7}}}");
	ok(s->len == n && !memcmp(s->data, want, n), "a message envelope: 00 len32 JSON");
	ts_connect_send(s, json_pack("{s:{s:{}}}", "event", "keepalive"));
	n += env(want + n, 0, "{\"event\":{\"keepalive\":{}}}");
	ok(s->len == n && !memcmp(s->data, want, n), "envelopes are written back to back");
	closed = 0;
	ts_connect_end(s, NULL, NULL);
	n += env(want + n, 2, "{}");
	ok(s->len == n && !memcmp(s->data, want, n) && s->ended && !s->aborted && closed == 1,
	   "the end-stream envelope 02 00000002 {} ends the stream");
	fake_req_clear(&r);

	fake_req_init(&r, "application/connect+json", "", 0);
	s = ts_connect_stream(&r, NULL, NULL, &err);
	ts_connect_end(s, "deadline_exceeded", "the call ran past its %d ms", 100);
	n = env(want, 2,
		"{\"error\":{\"code\":\"deadline_exceeded\",\"message\":\"the call ran past its 100 "
		"ms\"}}");
	ok(s->len == n && !memcmp(s->data, want, n) && s->ended,
	   "an end-stream error: 02 len {\"error\":{code,message}}");
	fake_req_clear(&r);
}

static void test_pj(void)
{
	json_t *o = json_pack("{s:i,s:i,s:n}", "exitCode", 1, "exit_code", 2, "nul", "x");
	json_t *o2 = json_pack("{s:i}", "exit_code", 3);
	uint8_t *b = NULL;
	size_t n;
	json_t *v;
	int r;

	ok(json_integer_value(ts_pj_get(o, "exitCode", "exit_code")) == 1 &&
		   json_integer_value(ts_pj_get(o2, "exitCode", "exit_code")) == 3 &&
		   !ts_pj_get(o2, "exitCode", NULL) && !ts_pj_get(o, "nul", NULL),
	   "ts_pj_get: camelCase first, snake_case too, null reads as absent");
	json_decref(o);
	json_decref(o2);

	static const struct {
		const char *in, *out;
	} vec[] = {
		{ "", "" },
		{ "f", "Zg==" },
		{ "fo", "Zm8=" },
		{ "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" },
		{ "fooba", "Zm9vYmE=" },
		{ "foobar", "Zm9vYmFy" },
	};
	bool all = true;
	for (size_t i = 0; i < sizeof(vec) / sizeof(*vec); i++) {
		v = ts_pj_bytes(vec[i].in, strlen(vec[i].in));
		if (!v || strcmp(json_string_value(v), vec[i].out)) {
			all = false;
			diag("`%s` gave `%s`", vec[i].in, v ? json_string_value(v) : "NULL");
		}
		r = ts_pj_bytes_decode(v, &b, &n);
		if (r < 0 || n != strlen(vec[i].in) || memcmp(b, vec[i].in, n))
			all = false;
		free(b);
		b = NULL;
		json_decref(v);
	}
	ok(all, "base64 of the RFC 4648 vectors, and back");

	uint8_t every[256], *back = NULL;
	for (int i = 0; i < 256; i++)
		every[i] = (uint8_t)(255 - i);
	v = ts_pj_bytes(every, 256);
	r = ts_pj_bytes_decode(v, &back, &n);
	ok(r == 0 && n == 256 && !memcmp(back, every, 256) &&
		   strspn(json_string_value(v),
			  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			  "0123456789+/=") == 344,
	   "every byte value round-trips through standard base64");
	free(back);
	json_decref(v);

	static const struct {
		const char *in;
		int r;
		const char *out;
		size_t n;
	} dec[] = {
		{ "Zm9vYg", 0, "foob", 4 },	   /* unpadded */
		{ "Zm9vYmE", 0, "fooba", 5 },	   /* unpadded */
		{ "-_8=", 0, "\xfb\xff", 2 },	   /* url-safe, padded */
		{ "-_8", 0, "\xfb\xff", 2 },	   /* url-safe, unpadded */
		{ "+/8=", 0, "\xfb\xff", 2 },	   /* standard */
		{ "+_8=", -EINVAL, NULL, 0 },	   /* mixed alphabets */
		{ "Zm9vY", -EINVAL, NULL, 0 },	   /* 4n+1 characters */
		{ "Zm=vYg==", -EINVAL, NULL, 0 },  /* padding inside */
		{ "Zm9vYg=", -EINVAL, NULL, 0 },   /* padding, but not to a multiple of 4 */
		{ "Zg===", -EINVAL, NULL, 0 },	   /* too much padding */
		{ "Zm9v YmFy", -EINVAL, NULL, 0 }, /* whitespace */
		{ "Zm9v!", -EINVAL, NULL, 0 },	   /* not base64 */
	};
	for (size_t i = 0; i < sizeof(dec) / sizeof(*dec); i++) {
		v = json_string(dec[i].in);
		r = ts_pj_bytes_decode(v, &b, &n);
		ok(r == dec[i].r && (r < 0 || (n == dec[i].n && !memcmp(b, dec[i].out, n))),
		   "decode `%s`: %d", dec[i].in, dec[i].r);
		free(b);
		b = NULL;
		json_decref(v);
	}
	v = json_integer(5);
	ok(ts_pj_bytes_decode(v, &b, &n) == -EINVAL, "bytes given as a number: -EINVAL");
	json_decref(v);
	ok(ts_pj_bytes_decode(NULL, &b, &n) == 0 && !b && n == 0, "absent bytes are empty");

	v = ts_pj_int64(-9223372036854775807LL - 1);
	ok(!strcmp(json_string_value(v), "-9223372036854775808"), "int64 is a string");
	json_decref(v);

	static const struct {
		const char *json;
		int r;
		long long want;
	} ints[] = {
		{ "5", 0, 5 },
		{ "\"5\"", 0, 5 },
		{ "\"-12\"", 0, -12 },
		{ "1.0", 0, 1 },
		{ "1e3", 0, 1000 },
		{ "\"9223372036854775807\"", 0, 9223372036854775807LL },
		{ "1.5", -EINVAL, 0 },
		{ "\"1.5\"", -EINVAL, 0 },
		{ "\"\"", -EINVAL, 0 },
		{ "\"5x\"", -EINVAL, 0 },
		{ "\" 5\"", -EINVAL, 0 },
		{ "\"9223372036854775808\"", -EINVAL, 0 },
		{ "true", -EINVAL, 0 },
		{ "null", -EINVAL, 0 },
	};
	for (size_t i = 0; i < sizeof(ints) / sizeof(*ints); i++) {
		long long got = 0;

		v = json_loads(ints[i].json, JSON_DECODE_ANY, NULL);
		r = ts_pj_int(v, &got);
		ok(r == ints[i].r && (r < 0 || got == ints[i].want), "ts_pj_int(%s): %d %lld",
		   ints[i].json, r, got);
		json_decref(v);
	}

	static const struct {
		long long ms;
		const char *want;
	} times[] = {
		{ 0, "1970-01-01T00:00:00Z" },
		{ 1704164645123LL, "2024-01-02T03:04:05.123Z" },
		{ 1704164645000LL, "2024-01-02T03:04:05Z" },
		{ 1704164645001LL, "2024-01-02T03:04:05.001Z" },
		{ -1, "1969-12-31T23:59:59.999Z" },
		{ 253402300799999LL, "9999-12-31T23:59:59.999Z" },
	};
	for (size_t i = 0; i < sizeof(times) / sizeof(*times); i++) {
		v = ts_pj_time(times[i].ms);
		ok(v && !strcmp(json_string_value(v), times[i].want), "time %lld is %s (%s)",
		   times[i].ms, times[i].want, v ? json_string_value(v) : "NULL");
		json_decref(v);
	}
	ok(!ts_pj_time(253402300800000LL), "a Timestamp past year 9999 is refused");
}

int main(void)
{
	plan(0);
	test_codes();
	test_unary();
	test_timeout();
	test_stream_request();
	test_replies();
	test_stream_out();
	test_pj();
	return done();
}
