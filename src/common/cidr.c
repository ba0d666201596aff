/* SPDX-License-Identifier: Apache-2.0 */
#include "cidr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int ts_cidr_parse(const char *s, struct ts_cidr *ret)
{
	char buf[TS_CIDR_STRLEN];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s), max, bytes;
	struct ts_cidr c = { 0 };
	unsigned long len;
	char *end;

	if (alen == 0 || alen >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	if (inet_pton(AF_INET, buf, c.addr) == 1) {
		c.family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, buf, c.addr) == 1) {
		c.family = AF_INET6;
		max = 128;
	} else {
		return -EINVAL;
	}
	len = max;
	if (slash) {
		if (slash[1] < '0' || slash[1] > '9' || (slash[1] == '0' && slash[2]))
			return -EINVAL;
		errno = 0;
		len = strtoul(slash + 1, &end, 10);
		if (errno || *end || len > max)
			return -EINVAL;
	}
	c.len = (unsigned char)len;
	/* host bits must be clear */
	bytes = max / 8;
	for (size_t i = 0; i < bytes; i++) {
		unsigned keep = len >= (i + 1) * 8 ? 8 : len > i * 8 ? (unsigned)(len - i * 8) : 0;
		unsigned char mask = (unsigned char)(keep ? 0xff << (8 - keep) : 0);

		if (c.addr[i] & (unsigned char)~mask)
			return -EINVAL;
	}
	*ret = c;
	return 0;
}

bool ts_cidr_looks_like_name(const char *s)
{
	for (const char *p = s; *p; p++) {
		if (*p == '*')
			return true;
		if ((*p >= 'g' && *p <= 'z') || (*p >= 'G' && *p <= 'Z') || *p == '-' || *p == '_')
			return true;
	}
	/* a dotted name made of hex-looking labels ("cafe.be") */
	return strchr(s, '.') && !strchr(s, ':') && strspn(s, "0123456789./") != strlen(s);
}

char *ts_cidr_format(const struct ts_cidr *c, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	inet_ntop(c->family, c->addr, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a, c->len);
	return buf;
}

bool ts_cidr_contains(const struct ts_cidr *p, const unsigned char *a, int family)
{
	unsigned full = p->len / 8, rest = p->len % 8;

	if (p->family != family)
		return false;
	if (memcmp(p->addr, a, full) != 0)
		return false;
	if (rest) {
		unsigned char mask = (unsigned char)(0xff << (8 - rest));

		if ((p->addr[full] & mask) != (a[full] & mask))
			return false;
	}
	return true;
}

bool ts_cidr_host_has_ipv6_route(void)
{
	/* dest dest_len src src_len gateway metric refcnt use flags dev */
	char dst[33], src[33], gw[33], dev[32], line[256];
	unsigned dlen, slen, metric, ref, use, flags;
	FILE *f = fopen("/proc/net/ipv6_route", "re");
	bool found = false;
	int lines = 0;

	if (!f)
		return false;
	/* bounded: a host with a huge table has a default route in its first lines, or
	 * counts as one without */
	while (!found && lines++ < 100000 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%32s %x %32s %x %32s %x %x %x %x %31s", dst, &dlen, src, &slen,
			   gw, &metric, &ref, &use, &flags, dev) != 10)
			continue;
		/* RTF_UP 0x1, RTF_REJECT 0x200 */
		found = dlen == 0 && strspn(dst, "0") == 32 && (flags & 0x1) && !(flags & 0x200) &&
			strcmp(dev, "lo") != 0;
	}
	fclose(f);
	return found;
}

const char *const ts_cidr_blocked_v4[TS_CIDR_N_BLOCKED_V4] = {
	"0.0.0.0/8",	  "10.0.0.0/8",	   "100.64.0.0/10", "127.0.0.0/8",
	"169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",  "192.88.99.0/24",
	"192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4",   "240.0.0.0/4",
};

const char *const ts_cidr_always_v4[TS_CIDR_N_ALWAYS_V4] = { "169.254.169.254/32" };

const char *const ts_cidr_blocked_v6[TS_CIDR_N_BLOCKED_V6] = {
	"::/3", "4000::/2", "8000::/1", "2001::/23", "2002::/16",
};

bool ts_cidr_blocked(int family, const unsigned char *addr)
{
	const char *const *t = family == AF_INET ? ts_cidr_blocked_v4 : ts_cidr_blocked_v6;
	size_t n = family == AF_INET ? TS_CIDR_N_BLOCKED_V4 : TS_CIDR_N_BLOCKED_V6;
	struct ts_cidr c;

	if (family != AF_INET && family != AF_INET6)
		return true;
	for (size_t i = 0; i < n; i++)
		if (ts_cidr_parse(t[i], &c) == 0 && ts_cidr_contains(&c, addr, family))
			return true;
	if (family == AF_INET)
		for (size_t i = 0; i < TS_CIDR_N_ALWAYS_V4; i++)
			if (ts_cidr_parse(ts_cidr_always_v4[i], &c) == 0 &&
			    ts_cidr_contains(&c, addr, family))
				return true;
	return false;
}
