/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Host names and name patterns of a name-based allow-list (`network: {allow: [NAME...]}`,
 * the helper's --net-allow-host, the proxy's --allow): parsed, printed and matched the
 * same way by the policy, the host library, the helper and the proxy.
 *
 *   api.github.com        that name, ports 80 and 443
 *   *.example.com         any name ending in `.example.com` (not example.com itself)
 *   api.example.com:8443  that name, that port only
 *
 * A name is LDH labels (letters, digits, hyphens; 1..63 bytes, no hyphen first or last),
 * at most 253 bytes, its last label not all digits (so that no name reads as an address);
 * compared without case and without one trailing dot, in a pattern as on the wire
 * (`api.github.com.` and `api.github.com` are one entry).
 */
#include <stdbool.h>
#include <stddef.h>

#define TS_HOSTNAME_MAX 253
/* Longest text of a pattern, with its NUL: "*." + name + ":65535" */
#define TS_HOSTPAT_STRLEN (2 + TS_HOSTNAME_MAX + 6 + 1)

struct ts_hostpat {
	char name[TS_HOSTNAME_MAX + 1]; /* lowercase, no trailing dot; a wildcard's suffix */
	bool wildcard;			/* "*.name": a name with one or more labels before */
	unsigned short port;		/* 0: ports 80 and 443 */
};

/*
 * Parse a pattern (above). 0, or -EINVAL with why saying what is wrong (a message
 * without the entry itself).
 */
int ts_hostpat_parse(const char *s, struct ts_hostpat *ret, char *why, size_t why_len);

/* Print p as it would be given (lowercase) into buf (TS_HOSTPAT_STRLEN bytes). Returns buf. */
char *ts_hostpat_format(const struct ts_hostpat *p, char *buf, size_t len);

/*
 * Normalise a host name from the wire (a CONNECT target, a TLS server name): len bytes of
 * s, a trailing dot dropped, lowercased into out (TS_HOSTNAME_MAX + 1 bytes). 0, or
 * -EINVAL when it is not an LDH name (an address literal, `_`, an empty label, too long).
 */
int ts_hostname_normalize(const char *s, size_t len, char *out);

/* Whether the normalised name and port are allowed by p. */
bool ts_hostpat_match(const struct ts_hostpat *p, const char *name, unsigned port);

/* Whether any of the n patterns allows name:port; *name_ok is set when one allows the name
 * on some port (so that a refusal can say which of the two was wrong). */
bool ts_hostpat_match_any(const struct ts_hostpat *pats, size_t n, const char *name, unsigned port,
			  bool *name_ok);
