/* SPDX-License-Identifier: Apache-2.0 */
#include "oci-ref.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define HUB "docker.io"
#define HUB_API "registry-1.docker.io"

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* A path component: lower-case alphanumerics separated by `.`, `_`, `__` or `-`s. */
static bool component_ok(const char *s, size_t n)
{
	if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_lower_alnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
			return false;
	return memmem(s, n, "..", 2) == NULL;
}

static bool tag_ok(const char *t)
{
	size_t n = strlen(t);

	if (n == 0 || n > 128)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = t[i];
		bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '_';

		if (!word && (i == 0 || (c != '.' && c != '-')))
			return false;
	}
	return true;
}

static bool digest_ok(const char *d)
{
	if (!ts_startswith(d, "sha256:") || strlen(d) != 71)
		return false;
	for (const char *p = d + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

/* host[:port]: letters, digits, `.`, `-`, or a bracketed IPv6 address, then a port. */
static bool registry_ok(const char *r)
{
	const char *port = NULL;

	if (r[0] == '[') {
		const char *end = strchr(r, ']');

		if (!end || end == r + 1)
			return false;
		for (const char *p = r + 1; p < end; p++)
			if (!strchr("0123456789abcdefABCDEF:.", *p))
				return false;
		if (end[1] == ':')
			port = end + 2;
		else if (end[1])
			return false;
	} else {
		const char *colon = strchr(r, ':');
		size_t n = colon ? (size_t)(colon - r) : strlen(r);

		/* DNS labels: none empty */
		if (n == 0 || r[0] == '.' || r[n - 1] == '.' || memmem(r, n, "..", 2))
			return false;
		for (size_t i = 0; i < n; i++) {
			char c = r[i];

			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			      (c >= '0' && c <= '9') || c == '.' || c == '-'))
				return false;
		}
		if (colon)
			port = colon + 1;
	}
	if (port) {
		size_t n = strlen(port);

		if (n == 0 || n > 5 || strspn(port, "0123456789") != n || atoi(port) < 1 ||
		    atoi(port) > 65535)
			return false;
	}
	return true;
}

bool ts_oci_host_loopback(const char *r)
{
	char host[256];
	struct in_addr a4;
	struct in6_addr a6;
	size_t n;

	if (r[0] == '[') {
		const char *end = strchr(r, ']');

		n = end ? (size_t)(end - r - 1) : 0;
		if (!n || n >= sizeof(host))
			return false;
		memcpy(host, r + 1, n);
		host[n] = '\0';
		return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
	}
	n = strcspn(r, ":");
	if (n >= sizeof(host))
		return false;
	memcpy(host, r, n);
	host[n] = '\0';
	/* an address, not a name that starts like one (127.evil.example) */
	return !strcmp(host, "localhost") ||
	       (inet_pton(AF_INET, host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127);
}

int ts_oci_ref_parse(const char *s, struct ts_oci_ref *ref, struct ts_error *err)
{
	char buf[600], *at, *slash, *colon, *rest;

	memset(ref, 0, sizeof(*ref));
	if (strlen(s) >= 512)
		return ts_err(err, -EINVAL, "image reference longer than 511 bytes");
	snprintf(buf, sizeof(buf), "%s", s);
	at = strchr(buf, '@');
	if (at) {
		*at = '\0';
		if (!digest_ok(at + 1))
			return ts_err(err, -EINVAL,
				      "image reference `%s`: the digest must be sha256: and 64 "
				      "lower-case hex digits",
				      s);
		snprintf(ref->digest, sizeof(ref->digest), "%s", at + 1);
	}
	rest = buf;
	slash = strchr(buf, '/');
	if (slash &&
	    (memchr(buf, '.', (size_t)(slash - buf)) || memchr(buf, ':', (size_t)(slash - buf)) ||
	     ((size_t)(slash - buf) == 9 && !strncmp(buf, "localhost", 9)) || buf[0] == '[')) {
		*slash = '\0';
		if (!registry_ok(buf))
			return ts_err(err, -EINVAL, "image reference `%s`: bad registry `%s`", s,
				      buf);
		snprintf(ref->registry, sizeof(ref->registry), "%s", buf);
		rest = slash + 1;
	} else {
		snprintf(ref->registry, sizeof(ref->registry), "%s", HUB);
	}
	slash = strrchr(rest, '/');
	colon = strrchr(slash ? slash : rest, ':');
	if (colon) {
		*colon = '\0';
		if (!tag_ok(colon + 1))
			return ts_err(err, -EINVAL,
				      "image reference `%s`: bad tag `%s` (letters, digits, `_`, "
				      "then also `.` and `-`, at most 128)",
				      s, colon + 1);
		snprintf(ref->tag, sizeof(ref->tag), "%s", colon + 1);
	} else if (!ref->digest[0]) {
		snprintf(ref->tag, sizeof(ref->tag), "latest");
	}
	if (!strcmp(ref->registry, HUB) || !strcmp(ref->registry, "index.docker.io")) {
		snprintf(ref->registry, sizeof(ref->registry), "%s", HUB);
		snprintf(ref->api_host, sizeof(ref->api_host), "%s", HUB_API);
		if (!strchr(rest, '/')) {
			if ((size_t)snprintf(ref->path, sizeof(ref->path), "library/%s", rest) >=
			    sizeof(ref->path))
				return ts_err(err, -EINVAL, "image reference `%s`: name too long",
					      s);
		}
	} else {
		snprintf(ref->api_host, sizeof(ref->api_host), "%s", ref->registry);
	}
	if (!ref->path[0]) {
		if (strlen(rest) >= sizeof(ref->path))
			return ts_err(err, -EINVAL, "image reference `%s`: name too long", s);
		snprintf(ref->path, sizeof(ref->path), "%s", rest);
	}
	if (!ref->path[0])
		return ts_err(err, -EINVAL, "image reference `%s`: no repository name", s);
	for (const char *p = ref->path; *p;) {
		size_t n = strcspn(p, "/");

		if (!component_ok(p, n))
			return ts_err(err, -EINVAL,
				      "image reference `%s`: bad name `%s` (lower-case letters, "
				      "digits and `._-` between components)",
				      s, ref->path);
		p += n;
		if (*p == '/' && *++p == '\0')
			return ts_err(err, -EINVAL, "image reference `%s`: ends with `/`", s);
	}
	ref->loopback = ts_oci_host_loopback(ref->registry);
	return 0;
}

bool ts_oci_ref_looks_remote(const char *s)
{
	return s[0] != '/' && s[0] != '.' && (strchr(s, ':') || strchr(s, '/') || strchr(s, '@'));
}

void ts_oci_ref_format(const struct ts_oci_ref *ref, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s%s%s%s%s", ref->registry, ref->path, ref->tag[0] ? ":" : "",
		 ref->tag, ref->digest[0] ? "@" : "", ref->digest);
}
