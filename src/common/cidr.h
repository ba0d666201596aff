/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Address prefixes of the network policy (`network: {allow, deny}`, the helper's
 * --net-allow and --net-deny): parsed and printed the same way by the policy, the host
 * library and the helper.
 */
#include <stdbool.h>
#include <stddef.h>

/* An IPv4 or IPv6 prefix; the bits past len are zero. */
struct ts_cidr {
	int family; /* AF_INET or AF_INET6 */
	unsigned char addr[16];
	unsigned char len; /* prefix length: 0..32 or 0..128 */
};

/* Longest text of a prefix, with its NUL. */
#define TS_CIDR_STRLEN 48

/*
 * Parse ADDR or ADDR/LEN (IPv4 dotted quad or IPv6); a bare address is one host (/32,
 * /128). Host bits past LEN must be zero (`10.1.2.3/8` is refused: it says something else
 * than it does). 0, or -EINVAL when s is not a prefix (a host name, a glob).
 */
int ts_cidr_parse(const char *s, struct ts_cidr *ret);

/* Whether s looks like a host name or a name pattern rather than an address: letters other
 * than IPv6's hex digits, or a `*`. For the message that names are not supported yet. */
bool ts_cidr_looks_like_name(const char *s);

/* Print c as ADDR/LEN into buf (TS_CIDR_STRLEN bytes). Returns buf. */
char *ts_cidr_format(const struct ts_cidr *c, char *buf, size_t len);

/* Whether a falls inside prefix p (same family). */
bool ts_cidr_contains(const struct ts_cidr *p, const unsigned char *a, int family);

/*
 * The sandbox's side of an egress link (both pasta and slirp4netns are given this
 * scheme, slirp4netns's own: its network 169.254.1.0/24): the sandbox's address, the
 * gateway the egress program answers for, and its DNS forwarder, the one address of a
 * blocked range that stays reachable (port 53 only: the helper's netfilter rules).
 * Link-local on purpose: on the host these addresses lead nowhere either.
 */
#define TS_NET_IFNAME "eth0"
#define TS_NET_ADDR "169.254.1.100"
#define TS_NET_GATEWAY "169.254.1.2"
#define TS_NET_DNS "169.254.1.3"
#define TS_NET_CIDR "169.254.1.0/24"
#define TS_NET_MTU 65520
/*
 * IPv6, where the host and the egress program offer it (pasta only): the sandbox's
 * address (a unique local address of ours, itself inside the blocked fc00::/7: nothing
 * but the sandbox answers for it) and the gateway the program answers for. DNS stays on
 * the one IPv4 forwarder above (AAAA answers come through it too).
 */
#define TS_NET_ADDR6 "fd00:7473:6278::100"
#define TS_NET_GATEWAY6 "fe80::1"

/*
 * Whether this network namespace (read from /proc/net/ipv6_route) has a usable IPv6
 * default route, not through `lo` and not a reject route: what pasta needs to carry
 * IPv6 (it disables IPv6 without one). For the helper (whether a sandbox gets IPv6) and
 * `doctor` (saying so).
 */
bool ts_cidr_host_has_ipv6_route(void);
