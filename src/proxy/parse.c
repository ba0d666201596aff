/* SPDX-License-Identifier: Apache-2.0 */
#include "parse.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

long ts_proxy_head_len(const char *buf, size_t len)
{
	size_t n = len < TS_PROXY_HEAD_MAX ? len : TS_PROXY_HEAD_MAX;

	for (size_t i = 3; i < n; i++)
		if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' &&
		    buf[i - 3] == '\r')
			return (long)(i + 1);
	return len >= TS_PROXY_HEAD_MAX ? -E2BIG : 0;
}

static int parse_port(const char *s, size_t len, unsigned *port)
{
	unsigned v = 0;

	if (len == 0 || len > 5 || s[0] == '0')
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v < 1 || v > 65535)
		return -EINVAL;
	*port = v;
	return 0;
}

/* host[:port] of an authority; need_port for CONNECT's authority-form (RFC 9110 9.3.6) */
static int parse_authority(const char *s, size_t len, bool need_port, unsigned dflt,
			   struct ts_proxy_req *req, char *why, size_t why_len)
{
	const char *colon = memchr(s, ':', len);
	size_t hlen = colon ? (size_t)(colon - s) : len;

	if (len && s[0] == '[') {
		snprintf(why, why_len, "an address is not a name on the allow-list");
		return -EINVAL;
	}
	if (memchr(s, '@', len)) {
		snprintf(why, why_len, "no user information in a proxy target");
		return -EINVAL;
	}
	if (colon) {
		if (parse_port(colon + 1, len - hlen - 1, &req->port) < 0) {
			snprintf(why, why_len, "bad port in the target");
			return -EINVAL;
		}
	} else if (need_port) {
		snprintf(why, why_len, "CONNECT needs host:port");
		return -EINVAL;
	} else {
		req->port = dflt;
	}
	if (ts_hostname_normalize(s, hlen, req->host) < 0) {
		snprintf(why, why_len,
			 "the target is not a host name (the allow-list has names only)");
		return -EINVAL;
	}
	return 0;
}

int ts_proxy_parse_request(const char *head, size_t len, struct ts_proxy_req *req, char *why,
			   size_t why_len)
{
	const char *eol = memchr(head, '\r', len), *sp1, *sp2, *target;
	size_t llen, tlen;

	memset(req, 0, sizeof(*req));
	if (!eol || (size_t)(eol - head) + 1 >= len || eol[1] != '\n') {
		snprintf(why, why_len, "no request line");
		return -EINVAL;
	}
	llen = (size_t)(eol - head);
	for (size_t i = 0; i < llen; i++)
		if ((unsigned char)head[i] < 0x20 || head[i] == 0x7f) {
			snprintf(why, why_len, "control characters in the request line");
			return -EINVAL;
		}
	sp1 = memchr(head, ' ', llen);
	sp2 = sp1 ? memchr(sp1 + 1, ' ', llen - (size_t)(sp1 + 1 - head)) : NULL;
	if (!sp1 || !sp2 || sp1 == head || sp2 == sp1 + 1 ||
	    memchr(sp2 + 1, ' ', llen - (size_t)(sp2 + 1 - head))) {
		snprintf(why, why_len, "a request line is METHOD TARGET HTTP/1.1");
		return -EINVAL;
	}
	if ((size_t)(eol - sp2 - 1) != 8 ||
	    (memcmp(sp2 + 1, "HTTP/1.1", 8) && memcmp(sp2 + 1, "HTTP/1.0", 8))) {
		snprintf(why, why_len, "only HTTP/1.0 and HTTP/1.1");
		return -EINVAL;
	}
	target = sp1 + 1;
	tlen = (size_t)(sp2 - target);
	if ((size_t)(sp1 - head) == 7 && !memcmp(head, "CONNECT", 7)) {
		req->kind = TS_PROXY_REQ_CONNECT;
		return parse_authority(target, tlen, true, 0, req, why, why_len);
	}
	if (tlen > 7 && !strncasecmp(target, "http://", 7)) {
		const char *auth = target + 7, *end = auth;

		while (end < target + tlen && *end != '/' && *end != '?' && *end != '#')
			end++;
		req->kind = TS_PROXY_REQ_ABSOLUTE;
		return parse_authority(auth, (size_t)(end - auth), false, 80, req, why, why_len);
	}
	snprintf(why, why_len, "not a proxy request: want CONNECT host:port or an absolute URL");
	return -EINVAL;
}

bool ts_proxy_is_tls(const unsigned char *buf, size_t len)
{
	return len >= 1 && buf[0] == 0x16;
}

struct rd {
	const unsigned char *p;
	size_t n;
};

static bool take(struct rd *r, size_t k, const unsigned char **out)
{
	if (r->n < k)
		return false;
	if (out)
		*out = r->p;
	r->p += k;
	r->n -= k;
	return true;
}

static bool u8(struct rd *r, unsigned *v)
{
	const unsigned char *p;

	if (!take(r, 1, &p))
		return false;
	*v = p[0];
	return true;
}

static bool u16(struct rd *r, unsigned *v)
{
	const unsigned char *p;

	if (!take(r, 2, &p))
		return false;
	*v = (unsigned)p[0] << 8 | p[1];
	return true;
}

/* a vector with a length prefix of w bytes, as a reader of its own */
static bool vec(struct rd *r, int w, struct rd *sub)
{
	unsigned len;

	if (!(w == 1 ? u8(r, &len) : u16(r, &len)))
		return false;
	sub->n = len;
	return take(r, len, &sub->p);
}

/* server_name (RFC 6066 3): a list holding at most one host_name */
static int parse_sni(struct rd ext, struct ts_tls_hello *out)
{
	struct rd list, name;
	unsigned type;

	if (!vec(&ext, 2, &list) || ext.n || list.n == 0)
		return -EINVAL;
	while (list.n) {
		if (!u8(&list, &type) || !vec(&list, 2, &name))
			return -EINVAL;
		if (type != 0)
			continue;
		if (out->has_sni || name.n == 0 || name.n >= sizeof(out->sni))
			return -EINVAL;
		memcpy(out->sni, name.p, name.n);
		out->sni[name.n] = '\0';
		out->sni_len = name.n;
		out->has_sni = true;
	}
	return 0;
}

static int parse_body(struct rd b, struct ts_tls_hello *out)
{
	struct rd sid, suites, comp, exts;
	unsigned version, seen_sni = 0;

	if (!u16(&b, &version) || (version >> 8) != 3 || !take(&b, 32, NULL) || !vec(&b, 1, &sid) ||
	    sid.n > 32 || !vec(&b, 2, &suites) || suites.n < 2 || suites.n % 2 ||
	    !vec(&b, 1, &comp) || comp.n < 1)
		return -EINVAL;
	if (b.n == 0)
		return 0; /* no extensions at all: no server name */
	if (!vec(&b, 2, &exts) || b.n)
		return -EINVAL;
	while (exts.n) {
		struct rd data;
		unsigned type;

		if (!u16(&exts, &type) || !vec(&exts, 2, &data))
			return -EINVAL;
		if (type == 0) {
			/* one extension of a type at most (RFC 8446 4.2) */
			if (seen_sni++ || parse_sni(data, out) < 0)
				return -EINVAL;
		} else if (type == 0xfe0d) {
			out->ech = true;
		}
	}
	return 0;
}

int ts_proxy_parse_hello(const unsigned char *buf, size_t len, struct ts_tls_hello *out)
{
	unsigned char msg[4 + TS_PROXY_HELLO_MAX];
	size_t have = 0, want = 0;
	struct rd in = { buf, len };

	memset(out, 0, sizeof(*out));
	/* gather the handshake message from as many records as it spans */
	for (;;) {
		struct rd frag;
		unsigned type, version;

		if (in.n < 5)
			return -EAGAIN;
		if (!u8(&in, &type) || !u16(&in, &version))
			return -EAGAIN;
		if (type != 0x16 || (version >> 8) != 3)
			return -EINVAL;
		{
			unsigned rlen;

			if (!u16(&in, &rlen))
				return -EAGAIN;
			if (rlen == 0 || rlen > 16384)
				return -EINVAL;
			if (in.n < rlen)
				return -EAGAIN;
			frag.n = rlen;
			take(&in, rlen, &frag.p);
		}
		if (have + frag.n > sizeof(msg))
			return -E2BIG;
		memcpy(msg + have, frag.p, frag.n);
		have += frag.n;
		if (have >= 4 && !want) {
			if (msg[0] != 1) /* client_hello */
				return -EINVAL;
			want = 4 + ((size_t)msg[1] << 16 | (size_t)msg[2] << 8 | msg[3]);
			if (want > sizeof(msg))
				return -E2BIG;
			if (want < 4 + 38)
				return -EINVAL;
		}
		if (want && have >= want) {
			/* a ClientHello ends its record (nothing may follow it before the
			 * server's answer) */
			if (have > want)
				return -EINVAL;
			return parse_body((struct rd){ msg + 4, want - 4 }, out);
		}
	}
}
