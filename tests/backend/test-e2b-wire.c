/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The e2b backend's wire without I/O (src/backend/e2b-wire.c): Connect envelopes, the list
 * query's three-step metadata encoding, ProtoJSON values as Go's envd emits them, and the
 * error mapping that must round-trip through ts_be_code(). Expected values come from the
 * spec's captures (e2b-protocol.md) or from an independent decoder written here.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "e2b-wire.h"
#include "e2b.h"
#include "tap.h"

static void test_envelope_encode(void)
{
	char payload[111];
	uint8_t *b = NULL;
	size_t n = 0;
	struct ts_error err = { 0 };

	memset(payload, 'x', sizeof(payload));
	ok(e2b_envelope_encode(payload, sizeof(payload), &b, &n, &err) == 0 && n == 116 &&
		   !memcmp(b, "\x00\x00\x00\x00\x6f", 5) && !memcmp(b + 5, payload, 111),
	   "a 111-byte request is `00 00 00 00 6f` and the payload (the spec's capture)");
	free(b);
	ok(e2b_envelope_encode(NULL, E2B_ENVELOPE_MAX + 1, &b, &n, &err) == -E2BIG,
	   "an oversized request is refused");
}

/* Three envelopes as a server sends them: two messages, then the end-stream one. */
static size_t build_stream(uint8_t *out)
{
	static const char *const msgs[] = { "{\"event\":{\"start\":{\"pid\":7}}}",
					    "{\"event\":{\"data\":{\"stdout\":\"aGk=\"}}}", "{}" };
	size_t n = 0;

	for (int i = 0; i < 3; i++) {
		size_t l = strlen(msgs[i]);

		out[n++] = i == 2 ? E2B_FLAG_END : 0;
		out[n++] = 0;
		out[n++] = 0;
		out[n++] = (uint8_t)(l >> 8);
		out[n++] = (uint8_t)l;
		memcpy(out + n, msgs[i], l);
		n += l;
	}
	return n;
}

/* Feed the stream in pieces of `piece` bytes; collect what comes out. */
static bool reassemble(size_t piece)
{
	static const char *const want[] = { "{\"event\":{\"start\":{\"pid\":7}}}",
					    "{\"event\":{\"data\":{\"stdout\":\"aGk=\"}}}", "{}" };
	struct e2b_envelopes e = { 0 };
	struct ts_error err = { 0 };
	uint8_t buf[256];
	size_t n = build_stream(buf), got = 0;
	bool good = true;

	for (size_t off = 0; off < n && good; off += piece) {
		size_t l = n - off < piece ? n - off : piece;
		const uint8_t *p;
		size_t pl;
		uint8_t flags;
		int r;

		if (e2b_envelopes_feed(&e, buf + off, l) < 0)
			good = false;
		while (good && (r = e2b_envelopes_next(&e, &flags, &p, &pl, &err)) == 1) {
			good = got < 3 && pl == strlen(want[got]) && !memcmp(p, want[got], pl) &&
			       flags == (got == 2 ? E2B_FLAG_END : 0);
			got++;
		}
		if (r < 0)
			good = false;
	}
	good = good && got == 3 && e2b_envelopes_pending(&e) == 0;
	e2b_envelopes_clear(&e);
	return good;
}

static void test_envelope_decode(void)
{
	static const size_t pieces[] = { 1, 2, 3, 4, 5, 6, 7, 13, 64, 256 };
	struct e2b_envelopes e = { 0 };
	struct ts_error err = { 0 };
	const uint8_t *p;
	size_t pl;
	uint8_t flags;
	bool all = true;

	for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++)
		if (!reassemble(pieces[i])) {
			diag("pieces of %zu bytes: wrong", pieces[i]);
			all = false;
		}
	ok(all, "envelopes reassemble whatever the pieces the body came in (1 to 256 bytes)");

	e2b_envelopes_feed(&e, "\x00\x00\x00\x00\x05{\"a\"", 9);
	ok(e2b_envelopes_next(&e, &flags, &p, &pl, &err) == 0 && e2b_envelopes_pending(&e) == 9,
	   "a partial envelope waits (and is counted as pending)");
	e2b_envelopes_clear(&e);
	e2b_envelopes_feed(&e, "\x01\x00\x00\x00\x02{}", 7);
	ok(e2b_envelopes_next(&e, &flags, &p, &pl, &err) == -EPROTO,
	   "a compressed envelope is refused");
	e2b_envelopes_clear(&e);
	e2b_envelopes_feed(&e, "\x00\x7f\x00\x00\x00", 5);
	ok(e2b_envelopes_next(&e, &flags, &p, &pl, &err) == -EPROTO,
	   "an envelope announcing 2 GiB is refused before it arrives");
	e2b_envelopes_clear(&e);
	e2b_envelopes_feed(&e, "\x02\x00\x00\x00\x00", 5);
	ok(e2b_envelopes_next(&e, &flags, &p, &pl, &err) == 1 && flags == E2B_FLAG_END && pl == 0,
	   "an empty end-stream envelope is whole");
	e2b_envelopes_clear(&e);
}

/* The server's side, written independently: URL-decode, split form data, decode again. */
static int unhex(int c)
{
	return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
}

static void pct_decode(char *s, bool plus)
{
	char *o = s;

	for (; *s; s++) {
		if (*s == '%' && isxdigit((unsigned char)s[1]) && isxdigit((unsigned char)s[2])) {
			*o++ = (char)(unhex((unsigned char)s[1]) << 4 | unhex((unsigned char)s[2]));
			s += 2;
		} else {
			*o++ = plus && *s == '+' ? ' ' : *s;
		}
	}
	*o = '\0';
}

static bool decode_matches(const char *q, const char *const *k, const char *const *v, size_t n)
{
	char *copy = strdup(q), *save = NULL, *pair;
	size_t i = 0;
	bool good = true;

	pct_decode(copy, false);
	for (pair = strtok_r(copy, "&", &save); pair && good; pair = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(pair, '=');

		if (!eq || i >= n) {
			good = false;
			break;
		}
		*eq = '\0';
		pct_decode(pair, true);
		pct_decode(eq + 1, true);
		pct_decode(pair, false);
		pct_decode(eq + 1, false);
		good = !strcmp(pair, k[i]) && !strcmp(eq + 1, v[i]);
		i++;
	}
	free(copy);
	return good && i == n;
}

static void test_metadata_query(void)
{
	const char *k1[] = { "test-key" }, *v1[] = { "a b&c=d" };
	const char *k2[] = { "u&=+", "~!'()*", "ünï" }, *v2[] = { "100%", "x=y&z", "a+b c" };
	char *q = e2b_metadata_query(k1, v1, 1);

	ok(q && !strcmp(q, "test-key%3Da%252520b%252526c%25253Dd"),
	   "the spec's capture: {'test-key': 'a b&c=d'} encodes as the SDK sends it (%s)",
	   q ? q : "NULL");
	free(q);
	q = e2b_metadata_query(k2, v2, 3);
	ok(q && decode_matches(q, k2, v2, 3),
	   "keys and values with & = + %% ~ ! ' ( ) * and UTF-8 survive the three decodings");
	ok(q && !strpbrk(q, "&=+ "), "the query value has no raw separators (%s)", q ? q : "NULL");
	free(q);
	q = e2b_uri_component("a b/~");
	ok(q && !strcmp(q, "a%20b%2F~"), "encodeURIComponent keeps ~ and encodes / and space");
	free(q);
}

static void test_base64(void)
{
	uint8_t *d = NULL;
	size_t n = 0;
	char *s = NULL;

	ok(e2b_base64_encode("abc", 3, &s) == 0 && !strcmp(s, "YWJj"), "base64 of `abc`");
	free(s);
	ok(e2b_base64_encode("ls\n", 3, &s) == 0 && !strcmp(s, "bHMK"),
	   "base64 of `ls\\n` (the spec's pty input)");
	free(s);
	ok(e2b_base64_encode("a", 1, &s) == 0 && !strcmp(s, "YQ=="), "padding is sent");
	free(s);
	ok(e2b_base64_decode("aGk=", &d, &n) == 0 && n == 2 && !memcmp(d, "hi", 2),
	   "padded input decodes");
	free(d);
	ok(e2b_base64_decode("aGk", &d, &n) == 0 && n == 2 && !memcmp(d, "hi", 2),
	   "unpadded input decodes");
	free(d);
	ok(e2b_base64_decode("-_8", &d, &n) == 0 && n == 2 && d[0] == 0xfb && d[1] == 0xff,
	   "URL-safe input decodes");
	free(d);
	ok(e2b_base64_decode("+/8=", &d, &n) == 0 && n == 2 && d[0] == 0xfb && d[1] == 0xff,
	   "the standard alphabet's +/ decode the same bytes");
	free(d);
	ok(e2b_base64_decode("a$b=", &d, &n) == -EINVAL &&
		   e2b_base64_decode("a", &d, &n) == -EINVAL,
	   "bad characters and impossible lengths are refused");
	ok(e2b_base64_decode("", &d, &n) == 0 && n == 0, "empty input is zero bytes");
	free(d);
}

static void test_protojson(void)
{
	static const char *const types[] = { "UNSPECIFIED", "FILE", "DIRECTORY", "SYMLINK" };
	json_t *j = json_loads("{\"size\":\"5\",\"n\":7,\"neg\":\"-1\",\"bad\":\"5x\",\"real\":5.5,"
			       "\"exit_code\":3,\"exitCode\":4,\"snake_only\":\"s\",\"nul\":null,"
			       "\"t\":\"FILE_TYPE_DIRECTORY\",\"t2\":\"SYMLINK\",\"t3\":1,\"t4\":"
			       "\"FILE_TYPE_BOGUS\"}",
			       0, NULL);
	long long v = -99;
	int e = -1;

	ok(j != NULL, "the fixture parses");
	ok(e2b_pj_int(json_object_get(j, "size"), &v) == 0 && v == 5,
	   "an int64 as Go sends it (a string) reads");
	ok(e2b_pj_int(json_object_get(j, "n"), &v) == 0 && v == 7, "a plain number reads");
	ok(e2b_pj_int(json_object_get(j, "neg"), &v) == 0 && v == -1, "a negative string reads");
	ok(e2b_pj_int(json_object_get(j, "bad"), &v) == -EINVAL &&
		   e2b_pj_int(json_object_get(j, "real"), &v) == -EINVAL,
	   "`5x` and 5.5 are not integers");
	ok(e2b_pj_int(NULL, &v) == 0 && v == 0, "a missing field reads as its default");
	ok(e2b_pj_int(e2b_pj_get(j, "exitCode", "exit_code"), &v) == 0 && v == 4,
	   "the lowerCamelCase name wins over the proto name");
	ok(!strcmp(e2b_pj_str(j, "snakeOnly", "snake_only", ""), "s"),
	   "the proto name is read when the camel one is missing");
	ok(e2b_pj_get(j, "nul", NULL) == NULL, "null reads as missing");
	ok(e2b_pj_enum(json_object_get(j, "t"), "FILE_TYPE_", types, 4, &e) == 0 && e == 2,
	   "an enum by its full name");
	ok(e2b_pj_enum(json_object_get(j, "t2"), "FILE_TYPE_", types, 4, &e) == 0 && e == 3,
	   "an enum without its prefix");
	ok(e2b_pj_enum(json_object_get(j, "t3"), "FILE_TYPE_", types, 4, &e) == 0 && e == 1,
	   "an enum by number");
	ok(e2b_pj_enum(json_object_get(j, "t4"), "FILE_TYPE_", types, 4, &e) == -EINVAL,
	   "an unknown enum name is refused");
	json_decref(j);

	ok(e2b_time_parse("2024-01-02T03:04:05.123456789Z", &v) == 0 && v == 1704164645123LL,
	   "an RFC 3339 time with nanoseconds (Go's Timestamp) reads to the ms");
	ok(e2b_time_parse("2024-01-02T04:04:05+01:00", &v) == 0 && v == 1704164645000LL,
	   "an offset is applied");
	ok(e2b_time_parse("2024-01-02T03:04:05.5Z", &v) == 0 && v == 1704164645500LL,
	   "one fractional digit is tenths");
	ok(e2b_time_parse("2024-01-02 03:04:05Z", &v) == -EINVAL &&
		   e2b_time_parse("2024-13-02T03:04:05Z", &v) == -EINVAL &&
		   e2b_time_parse("2024-01-02T03:04:05", &v) == -EINVAL,
	   "a space, month 13 and a missing zone are refused");
}

struct code_case {
	const char *name;
	enum ts_be_code want;
};

static enum ts_be_code class_of(int r)
{
	struct ts_error err = { .code = -r };

	return ts_be_code(&err);
}

static void test_errors(void)
{
	static const struct code_case connect[] = {
		{ "canceled", TS_BE_TIMEOUT },
		{ "unknown", TS_BE_INTERNAL },
		{ "invalid_argument", TS_BE_INVALID_ARGUMENT },
		{ "deadline_exceeded", TS_BE_TIMEOUT },
		{ "not_found", TS_BE_NOT_FOUND },
		{ "already_exists", TS_BE_ALREADY_EXISTS },
		{ "permission_denied", TS_BE_PERMISSION },
		{ "resource_exhausted", TS_BE_RATE_LIMIT },
		{ "failed_precondition", TS_BE_INTERNAL },
		{ "aborted", TS_BE_INTERNAL },
		{ "out_of_range", TS_BE_INVALID_ARGUMENT },
		{ "unimplemented", TS_BE_UNIMPLEMENTED },
		{ "internal", TS_BE_INTERNAL },
		{ "unavailable", TS_BE_UNAVAILABLE },
		{ "data_loss", TS_BE_INTERNAL },
		{ "unauthenticated", TS_BE_AUTHENTICATION },
		{ "no_such_code", TS_BE_INTERNAL },
	};
	static const struct {
		long status;
		enum ts_be_code rest, connect;
	} statuses[] = {
		{ 400, TS_BE_INVALID_ARGUMENT, TS_BE_INTERNAL },
		{ 401, TS_BE_AUTHENTICATION, TS_BE_AUTHENTICATION },
		{ 403, TS_BE_PERMISSION, TS_BE_PERMISSION },
		{ 404, TS_BE_NOT_FOUND, TS_BE_UNIMPLEMENTED },
		{ 409, TS_BE_ALREADY_EXISTS, TS_BE_INTERNAL },
		{ 429, TS_BE_RATE_LIMIT, TS_BE_UNAVAILABLE },
		{ 500, TS_BE_INTERNAL, TS_BE_INTERNAL },
		{ 502, TS_BE_UNAVAILABLE, TS_BE_UNAVAILABLE },
		{ 504, TS_BE_TIMEOUT, TS_BE_UNAVAILABLE },
		{ 507, TS_BE_NOT_ENOUGH_SPACE, TS_BE_INTERNAL },
	};
	bool all = true;

	for (size_t i = 0; i < sizeof(connect) / sizeof(connect[0]); i++)
		if (class_of(e2b_connect_errno(connect[i].name)) != connect[i].want) {
			diag("connect code `%s` gives class `%s`", connect[i].name,
			     ts_be_code_name(class_of(e2b_connect_errno(connect[i].name))));
			all = false;
		}
	ok(all, "every Connect code maps onto the class of the SDK's error (spec §6)");

	all = true;
	for (int c = TS_BE_NOT_FOUND; c <= TS_BE_INTERNAL; c++)
		if (class_of(e2b_connect_errno(ts_be_code_name(c))) != (enum ts_be_code)c) {
			diag("`%s` does not round-trip", ts_be_code_name(c));
			all = false;
		}
	ok(all, "every class's own name comes back as that class (a server sending "
		"ts_be_code_name round-trips)");

	all = true;
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
		if (class_of(e2b_rest_errno(statuses[i].status)) != statuses[i].rest) {
			diag("REST %ld gives `%s`", statuses[i].status,
			     ts_be_code_name(class_of(e2b_rest_errno(statuses[i].status))));
			all = false;
		}
		if (class_of(e2b_connect_http_errno(statuses[i].status)) != statuses[i].connect) {
			diag("Connect HTTP %ld gives `%s`", statuses[i].status,
			     ts_be_code_name(class_of(e2b_connect_http_errno(statuses[i].status))));
			all = false;
		}
	}
	ok(all, "HTTP statuses map as the SDK maps them: REST/files by status, a Connect "
		"answer without Connect JSON as connect-web derives it");

	ok(e2b_signal_from_status("signal: killed") == 9 &&
		   e2b_signal_from_status("signal: terminated") == 15 &&
		   e2b_signal_from_status("signal: segmentation fault (core dumped)") == 11 &&
		   e2b_signal_from_status("signal: user defined signal 1") == 10,
	   "Go's ProcessState signal strings give their numbers");
	ok(e2b_signal_from_status("exit status 1") == 0 && e2b_signal_from_status(NULL) == 0 &&
		   e2b_signal_from_status("signal: bogus") == 0,
	   "an exit or an unknown name is no signal");
}

static void test_basic_user(void)
{
	char buf[128];

	ok(e2b_basic_user("root", buf, sizeof(buf)) == 0 &&
		   !strcmp(buf, "Authorization: Basic cm9vdDo="),
	   "user root is `Basic cm9vdDo=` (the spec's capture)");
	ok(e2b_basic_user("user", buf, 10) == -ENAMETOOLONG, "a short buffer is refused");
}

/* The backend's configuration as the SDK reads it (spec §1.1, §1.2). */
static void test_config(void)
{
	struct ts_error err = { 0 };
	struct ts_backend *b = NULL;
	struct e2b *e;
	char url[600];

	unsetenv("E2B_API_URL");
	unsetenv("E2B_SANDBOX_URL");
	unsetenv("E2B_DEBUG");
	unsetenv("E2B_DOMAIN");
	setenv("E2B_API_KEY", "e2b_00", 1);
	if (!ok(ts_backend_open("e2b", &b, &err) == 0, "open with a key (%s)", err.msg))
		return;
	e = b->impl;
	ok(!strcmp(e->api_url, "https://api.e2b.app"), "the API defaults to https://api.e2b.app");
	ok(e2b_envd_url(e, "sbx", NULL, url, sizeof(url), &err) == 0 &&
		   !strcmp(url, "https://sandbox.e2b.app"),
	   "envd of E2B's own domain goes through its proxy host (%s)", url);
	ok(e2b_envd_url(e, "sbx", "example.org", url, sizeof(url), &err) == 0 &&
		   !strcmp(url, "https://49983-sbx.example.org"),
	   "the answer's domain wins; another domain has a host per sandbox (%s)", url);
	ts_backend_free(b);

	setenv("E2B_DOMAIN", "e2b.dev", 1);
	ts_backend_open("e2b", &b, &err);
	e = b->impl;
	ok(!strcmp(e->api_url, "https://api.e2b.dev") &&
		   e2b_envd_url(e, "sbx", "", url, sizeof(url), &err) == 0 &&
		   !strcmp(url, "https://sandbox.e2b.dev"),
	   "E2B_DOMAIN sets both (an empty answer domain is the configured one)");
	ts_backend_free(b);

	setenv("E2B_DEBUG", "TRUE", 1);
	ts_backend_open("e2b", &b, &err);
	e = b->impl;
	ok(!strcmp(e->api_url, "http://localhost:3000") &&
		   e2b_envd_url(e, "sbx", NULL, url, sizeof(url), &err) == 0 &&
		   !strcmp(url, "http://localhost:49983"),
	   "E2B_DEBUG=TRUE (any case): localhost:3000 and :49983");
	ts_backend_free(b);

	setenv("E2B_API_URL", "http://127.0.0.1:9/api/", 1);
	setenv("E2B_SANDBOX_URL", "http://127.0.0.1:8", 1);
	ts_backend_open("e2b", &b, &err);
	e = b->impl;
	ok(!strcmp(e->api_url, "http://127.0.0.1:9/api") &&
		   e2b_envd_url(e, "sbx", "example.org", url, sizeof(url), &err) == 0 &&
		   !strcmp(url, "http://127.0.0.1:8"),
	   "E2B_API_URL and E2B_SANDBOX_URL win over everything (a trailing slash dropped)");
	ts_backend_free(b);
	unsetenv("E2B_DEBUG");
	unsetenv("E2B_API_URL");
	unsetenv("E2B_SANDBOX_URL");
	setenv("E2B_DOMAIN", "evil.org/x", 1);
	ok(ts_backend_open("e2b", &b, &err) == -EINVAL, "E2B_DOMAIN with a path is refused");
	unsetenv("E2B_DOMAIN");
	unsetenv("E2B_API_KEY");
	setenv("TOREN_SANDBOX", "e2b", 1);
	ok(ts_backend_open(NULL, &b, &err) < 0 && ts_be_code(&err) == TS_BE_AUTHENTICATION,
	   "TOREN_SANDBOX=e2b without a key: an authentication error");
}

static void test_envd_versions(void)
{
	ok(e2b_envd_older("0.5.6", 0, 5, 7) && e2b_envd_older("0.4.99", 0, 5, 7) &&
		   !e2b_envd_older("0.5.7", 0, 5, 7) && !e2b_envd_older("0.6.13", 0, 5, 7) &&
		   !e2b_envd_older("1.0.0", 0, 5, 7) && !e2b_envd_older("", 0, 5, 7) &&
		   !e2b_envd_older("99.99.99", 0, 5, 7),
	   "envd versions compare as semver (not reported: not older)");
}

int main(void)
{
	plan(0);
	test_envelope_encode();
	test_envelope_decode();
	test_metadata_query();
	test_base64();
	test_protojson();
	test_errors();
	test_basic_user();
	test_config();
	test_envd_versions();
	return done();
}
