/* SPDX-License-Identifier: Apache-2.0 */
#include "hostpat.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool ldh(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-';
}

/* Check and lowercase the name s[0..len) into out; why names the fault. */
static int name_check(const char *s, size_t len, char *out, char *why, size_t why_len)
{
	size_t label = 0, last = 0;
	bool digits = true;

	if (len && s[len - 1] == '.')
		len--;
	if (len == 0) {
		snprintf(why, why_len, "an empty name");
		return -EINVAL;
	}
	if (len > TS_HOSTNAME_MAX) {
		snprintf(why, why_len, "a name is at most %d bytes", TS_HOSTNAME_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i <= len; i++) {
		char c = i < len ? s[i] : '.';

		if (c == '.') {
			if (label == 0) {
				snprintf(why, why_len, "an empty label");
				return -EINVAL;
			}
			if (label > 63) {
				snprintf(why, why_len, "a label is at most 63 bytes");
				return -EINVAL;
			}
			if (s[i - 1] == '-' || s[i - label] == '-') {
				snprintf(why, why_len, "a label neither starts nor ends with `-`");
				return -EINVAL;
			}
			last = i - label;
			label = 0;
			continue;
		}
		if (!ldh(c)) {
			snprintf(why, why_len,
				 "a name has letters, digits, `-` and `.` only (IDNs in punycode)");
			return -EINVAL;
		}
		label++;
	}
	for (size_t i = last; i < len; i++)
		digits &= s[i] >= '0' && s[i] <= '9';
	if (digits) {
		snprintf(why, why_len, "the last label of a name is not all digits");
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++)
		out[i] = lower(s[i]);
	out[len] = '\0';
	return 0;
}

int ts_hostpat_parse(const char *s, struct ts_hostpat *ret, char *why, size_t why_len)
{
	struct ts_hostpat p = { 0 };
	const char *colon = strrchr(s, ':');
	size_t len = colon ? (size_t)(colon - s) : strlen(s);

	if (colon) {
		unsigned long port = 0;
		const char *d = colon + 1;

		if (!*d || strlen(d) > 5 || d[0] == '0') {
			snprintf(why, why_len, "a port is a number from 1 to 65535");
			return -EINVAL;
		}
		for (; *d; d++) {
			if (*d < '0' || *d > '9') {
				snprintf(why, why_len, "a port is a number from 1 to 65535");
				return -EINVAL;
			}
			port = port * 10 + (unsigned long)(*d - '0');
		}
		if (port < 1 || port > 65535) {
			snprintf(why, why_len, "a port is a number from 1 to 65535");
			return -EINVAL;
		}
		p.port = (unsigned short)port;
	}
	if (len >= 2 && s[0] == '*' && s[1] == '.') {
		p.wildcard = true;
		s += 2;
		len -= 2;
	}
	if (memchr(s, '*', len)) {
		snprintf(why, why_len, "`*` only as the whole first label, like *.example.com");
		return -EINVAL;
	}
	/* name_check drops one trailing dot: `name.` and `name` are one entry, as on the
	 * wire (the proxy resolves every name as absolute) */
	if (name_check(s, len, p.name, why, why_len) < 0)
		return -EINVAL;
	*ret = p;
	return 0;
}

char *ts_hostpat_format(const struct ts_hostpat *p, char *buf, size_t len)
{
	if (p->port)
		snprintf(buf, len, "%s%s:%u", p->wildcard ? "*." : "", p->name, p->port);
	else
		snprintf(buf, len, "%s%s", p->wildcard ? "*." : "", p->name);
	return buf;
}

int ts_hostname_normalize(const char *s, size_t len, char *out)
{
	char why[8];

	return name_check(s, len, out, why, sizeof(why));
}

static bool name_match(const struct ts_hostpat *p, const char *name)
{
	size_t n = strlen(name), m = strlen(p->name);

	if (!p->wildcard)
		return !strcmp(name, p->name);
	/* at least one label before the suffix, and the suffix starts at a label */
	return n > m + 1 && name[n - m - 1] == '.' && !strcmp(name + n - m, p->name);
}

bool ts_hostpat_match(const struct ts_hostpat *p, const char *name, unsigned port)
{
	if (!name_match(p, name))
		return false;
	return p->port ? port == p->port : port == 80 || port == 443;
}

bool ts_hostpat_match_any(const struct ts_hostpat *pats, size_t n, const char *name, unsigned port,
			  bool *name_ok)
{
	*name_ok = false;
	for (size_t i = 0; i < n; i++) {
		if (!name_match(&pats[i], name))
			continue;
		*name_ok = true;
		if (ts_hostpat_match(&pats[i], name, port))
			return true;
	}
	return false;
}
