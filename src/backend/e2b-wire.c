/* SPDX-License-Identifier: Apache-2.0 */
/* The e2b backend's wire without I/O: envelopes, query encoding, ProtoJSON, error codes. */
#include "e2b-wire.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gowire.h"

#include "cleanup.h"
#include "util.h"

/* --- envelopes --------------------------------------------------------------------- */

int e2b_envelope_encode(const void *payload, size_t len, uint8_t **ret, size_t *ret_len,
			struct ts_error *err)
{
	uint8_t *b;

	if (len > E2B_ENVELOPE_MAX)
		return ts_err(err, -E2BIG, "request of %zu bytes: at most %u", len,
			      E2B_ENVELOPE_MAX);
	b = malloc(len + 5);
	if (!b)
		return ts_err(err, -ENOMEM, "out of memory");
	b[0] = 0;
	b[1] = (uint8_t)(len >> 24);
	b[2] = (uint8_t)(len >> 16);
	b[3] = (uint8_t)(len >> 8);
	b[4] = (uint8_t)len;
	if (len)
		memcpy(b + 5, payload, len);
	*ret = b;
	*ret_len = len + 5;
	return 0;
}

int e2b_envelopes_feed(struct e2b_envelopes *e, const void *data, size_t len)
{
	if (!len)
		return 0;
	/* what was consumed goes first: the buffer holds at most one envelope and a piece */
	if (e->off > 0 && e->off == e->len) {
		e->off = e->len = 0;
	} else if (e->off > 0 && e->len + len > e->cap) {
		memmove(e->buf, e->buf + e->off, e->len - e->off);
		e->len -= e->off;
		e->off = 0;
	}
	if (e->len + len > e->cap) {
		size_t cap = e->cap ? e->cap : 4096;
		uint8_t *grown;

		while (cap < e->len + len)
			cap *= 2;
		grown = realloc(e->buf, cap);
		if (!grown)
			return -ENOMEM;
		e->buf = grown;
		e->cap = cap;
	}
	memcpy(e->buf + e->len, data, len);
	e->len += len;
	return 0;
}

int e2b_envelopes_next(struct e2b_envelopes *e, uint8_t *flags, const uint8_t **payload,
		       size_t *len, struct ts_error *err)
{
	const uint8_t *h = e->buf + e->off;
	size_t have = e->len - e->off;
	uint32_t n;

	if (have < 5)
		return 0;
	n = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 | h[4];
	if (h[0] & E2B_FLAG_COMPRESSED)
		return ts_err(err, -EPROTO, "the sandbox sent a compressed envelope");
	if (h[0] & ~(E2B_FLAG_COMPRESSED | E2B_FLAG_END))
		return ts_err(err, -EPROTO, "envelope with unknown flags 0x%02x", h[0]);
	if (n > E2B_ENVELOPE_MAX)
		return ts_err(err, -EPROTO, "envelope of %u bytes: at most %u", n,
			      E2B_ENVELOPE_MAX);
	if (have - 5 < n)
		return 0;
	*flags = h[0];
	*payload = h + 5;
	*len = n;
	e->off += 5 + (size_t)n;
	return 1;
}

size_t e2b_envelopes_pending(const struct e2b_envelopes *e)
{
	return e->len - e->off;
}

void e2b_envelopes_clear(struct e2b_envelopes *e)
{
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

/* --- query encoding ---------------------------------------------------------------- */

static const char hexdigits[] = "0123456789ABCDEF";

/* Percent-encode every byte but the ones keep() allows. */
static char *pct(const char *s, bool (*keep)(unsigned char))
{
	size_t n = strlen(s);
	char *out = malloc(n * 3 + 1), *o = out;

	if (!out)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (keep(*p)) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hexdigits[*p >> 4];
			*o++ = hexdigits[*p & 15];
		}
	}
	*o = '\0';
	return out;
}

static bool uri_keep(unsigned char c)
{
	return isalnum(c) || strchr("-_.!~*'()", c);
}

/* URLSearchParams's serializer keeps fewer: ! ~ ' ( ) are encoded (space, never present
 * after encodeURIComponent, would be `+`). */
static bool form_keep(unsigned char c)
{
	return isalnum(c) || strchr("-_.*", c);
}

char *e2b_uri_component(const char *s)
{
	return pct(s, uri_keep);
}

bool e2b_envd_older(const char *version, unsigned major, unsigned minor, unsigned patch)
{
	unsigned a, b, c;

	if (!version || sscanf(version, "%u.%u.%u", &a, &b, &c) != 3)
		return false;
	if (a != major)
		return a < major;
	if (b != minor)
		return b < minor;
	return c < patch;
}

char *e2b_metadata_query(const char *const *keys, const char *const *values, size_t n)
{
	char *form = strdup(""), *out;

	if (!form)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *k1 = e2b_uri_component(keys[i]);
		_cleanup_free_ char *v1 = e2b_uri_component(values[i]);
		_cleanup_free_ char *k2 = k1 ? pct(k1, form_keep) : NULL;
		_cleanup_free_ char *v2 = v1 ? pct(v1, form_keep) : NULL;
		char *joined;

		if (!k2 || !v2 || asprintf(&joined, "%s%s%s=%s", form, i ? "&" : "", k2, v2) < 0) {
			free(form);
			return NULL;
		}
		free(form);
		form = joined;
	}
	out = e2b_uri_component(form);
	free(form);
	return out;
}

/* --- base64 (gowire.c) ------------------------------------------------------------ */

int e2b_base64_encode(const void *data, size_t len, char **ret)
{
	*ret = ts_base64_encode(data, len, NULL);
	return *ret ? 0 : -ENOMEM;
}

int e2b_base64_decode(const char *s, uint8_t **ret, size_t *len)
{
	return ts_base64_decode(s, strlen(s), ret, len);
}

int e2b_basic_user(const char *user, char *buf, size_t len)
{
	_cleanup_free_ char *cred = NULL, *enc = NULL;
	int r;

	if (asprintf(&cred, "%s:", user) < 0)
		return -ENOMEM;
	r = e2b_base64_encode(cred, strlen(cred), &enc);
	if (r < 0)
		return r;
	if ((size_t)snprintf(buf, len, "Authorization: Basic %s", enc) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* --- ProtoJSON --------------------------------------------------------------------- */

json_t *e2b_pj_get(json_t *obj, const char *camel, const char *snake)
{
	json_t *v;

	if (!json_is_object(obj))
		return NULL;
	v = json_object_get(obj, camel);
	if (!v && snake)
		v = json_object_get(obj, snake);
	return json_is_null(v) ? NULL : v;
}

int e2b_pj_int(json_t *v, long long *ret)
{
	const char *s;
	char *end;

	*ret = 0;
	if (!v)
		return 0;
	if (json_is_integer(v)) {
		*ret = json_integer_value(v);
		return 0;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);

		if (d != (double)(long long)d)
			return -EINVAL;
		*ret = (long long)d;
		return 0;
	}
	if (!json_is_string(v))
		return -EINVAL;
	s = json_string_value(v);
	errno = 0;
	*ret = strtoll(s, &end, 10);
	if (!*s || *end || errno)
		return -EINVAL;
	return 0;
}

const char *e2b_pj_str(json_t *obj, const char *camel, const char *snake, const char *def)
{
	json_t *v = e2b_pj_get(obj, camel, snake);

	return json_is_string(v) ? json_string_value(v) : def;
}

bool e2b_pj_bool(json_t *obj, const char *camel, const char *snake)
{
	return json_is_true(e2b_pj_get(obj, camel, snake));
}

int e2b_pj_enum(json_t *v, const char *prefix, const char *const *names, size_t n, int *ret)
{
	long long num;

	*ret = 0;
	if (!v)
		return 0;
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		size_t pl = strlen(prefix);

		if (!strncmp(s, prefix, pl))
			s += pl;
		for (size_t i = 0; i < n; i++)
			if (names[i] && !strcmp(names[i], s)) {
				*ret = (int)i;
				return 0;
			}
		return -EINVAL;
	}
	if (e2b_pj_int(v, &num) < 0 || num < 0 || num > 1 << 20)
		return -EINVAL;
	*ret = (int)num;
	return 0;
}

static bool digits(const char *s, size_t n, int *ret)
{
	int v = 0;

	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*ret = v;
	return true;
}

int e2b_time_parse(const char *s, long long *ret_ms)
{
	int Y, M, D, h, m, sec, ms = 0, off = 0;
	struct tm tm = { 0 };
	const char *p;
	time_t t;

	if (strlen(s) < 20 || !digits(s, 4, &Y) || s[4] != '-' || !digits(s + 5, 2, &M) ||
	    s[7] != '-' || !digits(s + 8, 2, &D) || (s[10] != 'T' && s[10] != 't') ||
	    !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &m) || s[16] != ':' ||
	    !digits(s + 17, 2, &sec))
		return -EINVAL;
	if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
		return -EINVAL;
	p = s + 19;
	if (*p == '.') {
		int nd = 0;

		for (p++; isdigit((unsigned char)*p); p++, nd++)
			if (nd < 3)
				ms = ms * 10 + (*p - '0');
		if (nd == 0)
			return -EINVAL;
		for (; nd < 3; nd++)
			ms *= 10;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int oh, om;

		if (!digits(p + 1, 2, &oh) || p[3] != ':' || !digits(p + 4, 2, &om))
			return -EINVAL;
		off = (oh * 60 + om) * 60 * (*p == '-' ? -1 : 1);
		p += 6;
	} else {
		return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	tm.tm_year = Y - 1900;
	tm.tm_mon = M - 1;
	tm.tm_mday = D;
	tm.tm_hour = h;
	tm.tm_min = m;
	tm.tm_sec = sec;
	t = timegm(&tm);
	*ret_ms = ((long long)t - off) * 1000 + ms;
	return 0;
}

json_t *e2b_json_parse(const void *text, size_t len, struct ts_error *err)
{
	json_error_t je;
	/* callers bound the text (E2B_BODY_MAX, E2B_ENVELOPE_MAX); jansson bounds nesting */
	json_t *j = json_loadb(text, len, 0, &je);

	if (!j) {
		ts_err(err, -EPROTO, "bad JSON from E2B: %s", je.text);
		return NULL;
	}
	return j;
}

/* --- errors ------------------------------------------------------------------------ */

struct code_errno {
	const char *name;
	int err;
};

static const struct code_errno connect_codes[] = {
	{ "canceled", ETIME },
	{ "unknown", EIO },
	{ "invalid_argument", EINVAL },
	{ "deadline_exceeded", ETIMEDOUT },
	{ "not_found", ENOENT },
	{ "already_exists", EEXIST },
	{ "permission_denied", EACCES },
	{ "resource_exhausted", EAGAIN },
	{ "failed_precondition", EIO },
	{ "aborted", EIO },
	{ "out_of_range", EINVAL },
	{ "unimplemented", EOPNOTSUPP },
	{ "internal", EIO },
	{ "unavailable", EHOSTDOWN },
	{ "data_loss", EIO },
	{ "unauthenticated", EKEYREJECTED },
	/* ts_be_code_name's own names, should a server speak them */
	{ "not_enough_space", ENOSPC },
	{ "template", ENOPKG },
	{ "command_exit", ECHILD },
};

int e2b_connect_errno(const char *code)
{
	for (size_t i = 0; code && i < ELEMENTSOF(connect_codes); i++)
		if (!strcmp(connect_codes[i].name, code))
			return -connect_codes[i].err;
	return -EIO;
}

int e2b_connect_http_errno(long status)
{
	switch (status) {
	case 401:
		return -EKEYREJECTED;
	case 403:
		return -EACCES;
	case 404:
		return -EOPNOTSUPP; /* connect-web: a missing route is unimplemented */
	case 429:
	case 502:
	case 503:
	case 504:
		return -EHOSTDOWN;
	default:
		return -EIO;
	}
}

int e2b_rest_errno(long status)
{
	switch (status) {
	case 400:
	case 422:
		return -EINVAL;
	case 401:
		return -EKEYREJECTED;
	case 403:
		return -EACCES;
	case 404:
		return -ENOENT;
	case 409:
		return -EEXIST;
	case 413:
		return -E2BIG;
	case 429:
		return -EAGAIN;
	case 502:
		return -EHOSTDOWN; /* the proxy: no such sandbox running (TimeoutError) */
	case 503:
		return -ECONNREFUSED; /* ServiceBusyError */
	case 504:
		return -ETIMEDOUT;
	case 507:
		return -ENOSPC;
	default:
		return -EIO;
	}
}

int e2b_signal_from_status(const char *status)
{
	return ts_go_signal_parse(status);
}
