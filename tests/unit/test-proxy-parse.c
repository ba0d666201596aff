/* SPDX-License-Identifier: Apache-2.0 */
/* The name proxy's parsers: allow-list patterns and their matching (src/common/hostpat.c),
 * request heads and TLS ClientHellos (src/proxy/parse.c), malformed and truncated ones
 * included. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cidr.h"
#include "hostpat.h"
#include "parse.h"
#include "tap.h"

static void pattern_ok(const char *s, const char *want_fmt)
{
	struct ts_hostpat p;
	char why[160], buf[TS_HOSTPAT_STRLEN];
	int r = ts_hostpat_parse(s, &p, why, sizeof(why));

	ok(r == 0 && !strcmp(ts_hostpat_format(&p, buf, sizeof(buf)), want_fmt),
	   "pattern `%s` parses as `%s` (%s)", s, want_fmt, r == 0 ? buf : why);
}

static void pattern_bad(const char *s, const char *why_has)
{
	struct ts_hostpat p;
	char why[160] = "";
	int r = ts_hostpat_parse(s, &p, why, sizeof(why));

	ok(r == -EINVAL && strstr(why, why_has), "pattern `%s` refused: %s", s, why);
}

static bool match(const char *pat, const char *name, unsigned port)
{
	struct ts_hostpat p;
	char why[160], norm[TS_HOSTNAME_MAX + 1];

	if (ts_hostpat_parse(pat, &p, why, sizeof(why)) < 0 ||
	    ts_hostname_normalize(name, strlen(name), norm) < 0)
		return false;
	return ts_hostpat_match(&p, norm, port);
}

static void patterns(void)
{
	char long_name[300], label64[80], why[160];
	struct ts_hostpat p;

	pattern_ok("api.github.com", "api.github.com");
	pattern_ok("API.GitHub.Com", "api.github.com");
	pattern_ok("*.example.com", "*.example.com");
	pattern_ok("localhost", "localhost");
	pattern_ok("a-b.example.com:8443", "a-b.example.com:8443");
	pattern_ok("*.example.com:443", "*.example.com:443");
	pattern_ok("xn--bcher-kva.example", "xn--bcher-kva.example");
	pattern_bad("", "empty");
	pattern_bad("*", "first label");
	pattern_bad("*.", "empty");
	pattern_bad("a.*.example.com", "first label");
	pattern_bad("*example.com", "first label");
	pattern_bad("**.example.com", "first label");
	pattern_ok("example.com.", "example.com");
	pattern_ok("*.Example.com.:8443", "*.example.com:8443");
	pattern_bad("example.com..", "empty label");
	pattern_bad(".", "empty");
	pattern_bad("a..example.com", "empty label");
	pattern_bad(".example.com", "empty label");
	pattern_bad("-a.example.com", "`-`");
	pattern_bad("a-.example.com", "`-`");
	pattern_bad("under_score.example.com", "letters, digits");
	pattern_bad("exämple.com", "letters, digits");
	pattern_bad("a b.com", "letters, digits");
	pattern_bad("10.1.2.3", "all digits");
	pattern_bad("example.123", "all digits");
	pattern_bad("example.com:0", "port");
	pattern_bad("example.com:65536", "port");
	pattern_bad("example.com:", "port");
	pattern_bad("example.com:08", "port");
	pattern_bad("example.com:44a", "port");
	pattern_bad("[::1]:443", "letters, digits");
	memset(label64, 'a', 64);
	memcpy(label64 + 64, ".com", 5);
	pattern_bad(label64, "63 bytes");
	ok(ts_hostpat_parse(label64 + 1, &p, why, sizeof(why)) == 0, "a 63-byte label is fine");
	/* 254 bytes: 126 labels "a." + "bc" */
	for (int i = 0; i < 126; i++)
		memcpy(long_name + 2 * i, "a.", 2);
	memcpy(long_name + 252, "bc", 3);
	pattern_bad(long_name, "253 bytes");
	ok(ts_hostpat_parse(long_name + 1, &p, why, sizeof(why)) < 0 &&
		   ts_hostpat_parse(long_name + 2, &p, why, sizeof(why)) == 0,
	   "a 252-byte name is fine (control for the length bound)");

	ok(match("api.github.com", "api.github.com", 443), "exact name, 443");
	ok(match("api.github.com", "API.GITHUB.COM.", 80), "case and a trailing dot ignored, 80");
	ok(match("api.github.com.", "api.github.com", 443) &&
		   match("api.github.com.", "api.github.com.", 443) &&
		   !match("api.github.com.", "api.github.com.evil.com", 443),
	   "an entry with a trailing dot is the same entry");
	ok(!match("api.github.com", "api.github.com..", 443), "two trailing dots are no name");
	ok(!match("api.github.com", "api.github.com", 22), "port 22 not by default");
	ok(!match("api.github.com", "github.com", 443), "a parent is not the name");
	ok(!match("api.github.com", "x.api.github.com", 443), "a child is not the name");
	ok(!match("api.github.com", "api.github.com.evil.com", 443), "a longer name is not it");
	ok(match("*.example.com", "a.example.com", 443), "wildcard: one label");
	ok(match("*.example.com", "a.b.example.com", 443), "wildcard: two labels");
	ok(!match("*.example.com", "example.com", 443), "wildcard: not the suffix itself");
	ok(!match("*.example.com", "badexample.com", 443), "wildcard: at a label boundary");
	ok(!match("*.example.com", "a.example.com.evil.org", 443), "wildcard: a suffix only");
	ok(match("h.example.com:8443", "h.example.com", 8443), "named port");
	ok(!match("h.example.com:8443", "h.example.com", 443), "a named port replaces 80/443");
	{
		struct ts_hostpat ps[2];
		bool name_ok;

		ts_hostpat_parse("a.example.com", &ps[0], why, sizeof(why));
		ts_hostpat_parse("*.b.example.com:22", &ps[1], why, sizeof(why));
		ok(!ts_hostpat_match_any(ps, 2, "x.b.example.com", 443, &name_ok) && name_ok,
		   "match_any: the name is allowed on another port");
		ok(ts_hostpat_match_any(ps, 2, "x.b.example.com", 22, &name_ok) && name_ok,
		   "match_any: name and port");
		ok(!ts_hostpat_match_any(ps, 2, "c.example.com", 443, &name_ok) && !name_ok,
		   "match_any: the name is not on the list");
	}
}

static void request(const char *head, int want_r, int kind, const char *host, unsigned port)
{
	struct ts_proxy_req req;
	char why[160] = "";
	int r = ts_proxy_parse_request(head, strlen(head), &req, why, sizeof(why));

	if (want_r == 0)
		ok(r == 0 && (int)req.kind == kind && !strcmp(req.host, host) && req.port == port,
		   "request `%.*s`: %s:%u (%s)", (int)strcspn(head, "\r\n"), head, req.host,
		   req.port, why);
	else
		ok(r == want_r, "request `%.*s` refused: %s", (int)strcspn(head, "\r\n"), head,
		   why);
}

static void requests(void)
{
	static char big[TS_PROXY_HEAD_MAX + 10];

	ok(ts_proxy_head_len("CONNECT a:1 HTTP/1.1\r\n\r\nxyz", 27) == 24, "head length");
	ok(ts_proxy_head_len("CONNECT a:1 HTTP/1.1\r\nHost: a\r\n", 32) == 0, "head incomplete");
	memset(big, 'a', sizeof(big));
	ok(ts_proxy_head_len(big, sizeof(big)) == -E2BIG, "head past 16 KiB");
	request("CONNECT api.github.com:443 HTTP/1.1\r\nHost: api.github.com:443\r\n\r\n", 0,
		TS_PROXY_REQ_CONNECT, "api.github.com", 443);
	request("CONNECT Api.GitHub.com.:80 HTTP/1.0\r\n\r\n", 0, TS_PROXY_REQ_CONNECT,
		"api.github.com", 80);
	request("GET http://example.com/x HTTP/1.1\r\nHost: example.com\r\n\r\n", 0,
		TS_PROXY_REQ_ABSOLUTE, "example.com", 80);
	request("GET http://example.com:8080?q HTTP/1.1\r\n\r\n", 0, TS_PROXY_REQ_ABSOLUTE,
		"example.com", 8080);
	request("CONNECT api.github.com HTTP/1.1\r\n\r\n", -EINVAL, 0, NULL, 0);
	request("CONNECT 192.0.2.1:443 HTTP/1.1\r\n\r\n", -EINVAL, 0, NULL, 0);
	request("CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n", -EINVAL, 0, NULL, 0);
	request("CONNECT a.com:0 HTTP/1.1\r\n\r\n", -EINVAL, 0, NULL, 0);
	request("CONNECT a.com:99999 HTTP/1.1\r\n\r\n", -EINVAL, 0, NULL, 0);
	request("CONNECT user@a.com:443 HTTP/1.1\r\n\r\n", -EINVAL, 0, NULL, 0);
	request("CONNECT a.com:443 HTTP/2\r\n\r\n", -EINVAL, 0, NULL, 0);
	request("CONNECT  a.com:443 HTTP/1.1\r\n\r\n", -EINVAL, 0, NULL, 0);
	request("CONNECT a.com:443 HTTP/1.1 x\r\n\r\n", -EINVAL, 0, NULL, 0);
	request("GET / HTTP/1.1\r\nHost: a.com\r\n\r\n", -EINVAL, 0, NULL, 0);
	request("GET https://a.com/ HTTP/1.1\r\n\r\n", -EINVAL, 0, NULL, 0);
	request("CONNECT a\x01.com:443 HTTP/1.1\r\n\r\n", -EINVAL, 0, NULL, 0);
	request("CONNECT a.com:443 HTTP/1.1\n\n", -EINVAL, 0, NULL, 0);
	request("\r\n\r\n", -EINVAL, 0, NULL, 0);
}

/* A ClientHello as a TLS 1.3 client sends it, with a server_name of sni (or none), an
 * ECH extension when ech; split into records of at most split bytes. Returns its length. */
static size_t hello(unsigned char *out, const char *sni, bool ech, size_t split)
{
	unsigned char body[2048], msg[2100];
	size_t b = 0, m = 0, o = 0, ext_at;

	body[b++] = 3;
	body[b++] = 3;
	memset(body + b, 0x11, 32);
	b += 32;
	body[b++] = 32; /* session id */
	memset(body + b, 0x22, 32);
	b += 32;
	body[b++] = 0;
	body[b++] = 4; /* two suites */
	body[b++] = 0x13;
	body[b++] = 0x01;
	body[b++] = 0x13;
	body[b++] = 0x02;
	body[b++] = 1;
	body[b++] = 0; /* null compression */
	ext_at = b;
	b += 2;
	/* supported_versions: TLS 1.3 */
	memcpy(body + b, "\x00\x2b\x00\x03\x02\x03\x04", 7);
	b += 7;
	if (sni) {
		size_t n = strlen(sni);

		body[b++] = 0;
		body[b++] = 0;
		body[b++] = (unsigned char)((n + 5) >> 8);
		body[b++] = (unsigned char)(n + 5);
		body[b++] = (unsigned char)((n + 3) >> 8);
		body[b++] = (unsigned char)(n + 3);
		body[b++] = 0;
		body[b++] = (unsigned char)(n >> 8);
		body[b++] = (unsigned char)n;
		memcpy(body + b, sni, n);
		b += n;
	}
	if (ech) {
		memcpy(body + b, "\xfe\x0d\x00\x04\x00\x01\x02\x03", 8);
		b += 8;
	}
	body[ext_at] = (unsigned char)((b - ext_at - 2) >> 8);
	body[ext_at + 1] = (unsigned char)(b - ext_at - 2);
	msg[m++] = 1;
	msg[m++] = 0;
	msg[m++] = (unsigned char)(b >> 8);
	msg[m++] = (unsigned char)b;
	memcpy(msg + m, body, b);
	m += b;
	for (size_t at = 0; at < m; at += split) {
		size_t n = m - at < split ? m - at : split;

		out[o++] = 0x16;
		out[o++] = 3;
		out[o++] = 1;
		out[o++] = (unsigned char)(n >> 8);
		out[o++] = (unsigned char)n;
		memcpy(out + o, msg + at, n);
		o += n;
	}
	return o;
}

static void hellos(void)
{
	unsigned char h[4096], bad[4096];
	struct ts_tls_hello out;
	size_t n;
	int r, eagain = 0, other = 0;

	n = hello(h, "api.github.com", false, 16384);
	ok(ts_proxy_is_tls(h, n), "a ClientHello looks like TLS");
	ok(!ts_proxy_is_tls((const unsigned char *)"GET ", 4), "plain text does not");
	r = ts_proxy_parse_hello(h, n, &out);
	ok(r == 0 && out.has_sni && !strcmp(out.sni, "api.github.com") && !out.ech,
	   "server name read: %d `%s`", r, out.sni);
	/* every truncation asks for more, never reads past the end (ASan watches) */
	for (size_t k = 0; k < n; k++) {
		unsigned char *cut = malloc(k ? k : 1);

		memcpy(cut, h, k);
		r = ts_proxy_parse_hello(cut, k, &out);
		eagain += r == -EAGAIN;
		other += r != -EAGAIN;
		free(cut);
	}
	ok(eagain == (int)n && other == 0, "every truncation of %zu bytes: need more (%d)", n,
	   other);
	n = hello(h, "a.example.com", false, 7);
	r = ts_proxy_parse_hello(h, n, &out);
	ok(r == 0 && out.has_sni && !strcmp(out.sni, "a.example.com"),
	   "a ClientHello over many records of 7 bytes");
	n = hello(h, NULL, false, 16384);
	r = ts_proxy_parse_hello(h, n, &out);
	ok(r == 0 && !out.has_sni, "no server name");
	n = hello(h, "public.example.com", true, 16384);
	r = ts_proxy_parse_hello(h, n, &out);
	ok(r == 0 && out.ech && out.has_sni, "encrypted ClientHello seen");

	n = hello(h, "api.github.com", false, 16384);
	memcpy(bad, h, n);
	bad[5] = 2; /* server_hello */
	ok(ts_proxy_parse_hello(bad, n, &out) == -EINVAL, "not a ClientHello");
	memcpy(bad, h, n);
	bad[0] = 0x17;
	ok(ts_proxy_parse_hello(bad, n, &out) == -EINVAL, "not a handshake record");
	memcpy(bad, h, n);
	bad[3] = 0;
	bad[4] = 0;
	ok(ts_proxy_parse_hello(bad, n, &out) == -EINVAL, "an empty record");
	memcpy(bad, h, n);
	bad[3] = 0x48; /* 18432: past the record limit */
	ok(ts_proxy_parse_hello(bad, n, &out) == -EINVAL, "a record past 16 KiB");
	memcpy(bad, h, n);
	bad[6] = 0xff; /* a message length of 16 MiB */
	ok(ts_proxy_parse_hello(bad, n, &out) == -E2BIG, "a message past the bound");
	memcpy(bad, h, n);
	bad[5 + 4 + 34] = 200; /* session id longer than 32 */
	ok(ts_proxy_parse_hello(bad, n, &out) == -EINVAL, "session id past 32 bytes");
	/* the server name's length one past the extension */
	memcpy(bad, h, n);
	for (size_t k = 0; k + 9 < n; k++)
		if (!memcmp(bad + k, "\x00\x00\x00\x13\x00\x11\x00\x00\x0e", 9)) {
			bad[k + 8] = 0x0f;
			break;
		}
	ok(ts_proxy_parse_hello(bad, n, &out) == -EINVAL, "server name past its extension");
	/* a record with bytes after the message */
	memcpy(bad, h, n);
	bad[4]++;
	bad[n] = 0;
	ok(ts_proxy_parse_hello(bad, n + 1, &out) == -EINVAL, "bytes after the ClientHello");
	/* two server_name extensions */
	{
		unsigned char two[4096];
		size_t m = hello(two, "a.com", false, 16384);

		ok(ts_proxy_parse_hello(two, m, &out) == 0, "control: one server_name");
	}
	/* random bytes: never a crash, never a success with a name past the buffer */
	srand(11);
	for (int i = 0; i < 20000; i++) {
		n = hello(h, "x.example.com", i % 3 == 0, 16384);
		for (int k = 0; k < 1 + i % 4; k++)
			h[5 + (size_t)rand() % (n - 5)] = (unsigned char)rand();
		r = ts_proxy_parse_hello(h, n, &out);
		/* a NUL inside the name is the caller's to refuse (ts_hostname_normalize
		 * sees every byte of sni_len); the buffer itself stays terminated */
		if (r == 0 && out.has_sni &&
		    (out.sni_len >= sizeof(out.sni) || out.sni[out.sni_len]))
			other++;
	}
	ok(other == 0, "20000 mutated ClientHellos parse or are refused");
}

static void blocked(void)
{
	static const struct {
		const char *a;
		bool blocked;
	} cases[] = {
		{ "10.1.2.3", true },
		{ "127.0.0.1", true },
		{ "169.254.169.254", true },
		{ "100.64.0.1", true },
		{ "172.16.0.1", true },
		{ "192.168.1.1", true },
		{ "224.0.0.1", true },
		{ "0.0.0.0", true },
		{ "255.255.255.255", true },
		{ "192.0.2.10", false },
		{ "198.51.100.7", false },
		{ "8.8.8.8", false },
		{ "::1", true },
		{ "::", true },
		{ "fe80::1", true },
		{ "fd00::1", true },
		{ "::ffff:10.0.0.1", true },
		{ "::ffff:8.8.8.8", true },
		{ "ff02::1", true },
		{ "2002:a00:1::", true },
		{ "64:ff9b::a00:1", true },
		{ "2001:db8::1", false },
		{ "2606:4700::1111", false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ts_cidr c;

		ts_cidr_parse(cases[i].a, &c);
		ok(ts_cidr_blocked(c.family, c.addr) == cases[i].blocked, "%s %s", cases[i].a,
		   cases[i].blocked ? "blocked" : "public");
	}
}

int main(void)
{
	plan(0);
	patterns();
	requests();
	hellos();
	blocked();
	return done();
}
