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
 * than IPv6's hex digits, or a `*`. For the message about a malformed name. */
bool ts_cidr_looks_like_name(const char *s);

/* Print c as ADDR/LEN into buf (TS_CIDR_STRLEN bytes). Returns buf. */
char *ts_cidr_format(const struct ts_cidr *c, char *buf, size_t len);

/* Whether a falls inside prefix p (same family). */
bool ts_cidr_contains(const struct ts_cidr *p, const unsigned char *a, int family);

/*
 * Never reachable through egress, whatever the policy allows: private, loopback,
 * link-local, CGNAT, multicast and reserved IPv4 space (RFC 6890). The documentation
 * ranges (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24) exist on no real network and stay
 * reachable: tests use them as public hosts. The firewall (the helper's net.c) and the
 * name proxy (src/proxy) both decide by this one table.
 */
#define TS_CIDR_N_BLOCKED_V4 12
extern const char *const ts_cidr_blocked_v4[TS_CIDR_N_BLOCKED_V4];
/* Blocked above any allow rule of the same length: cloud metadata services. */
#define TS_CIDR_N_ALWAYS_V4 1
extern const char *const ts_cidr_always_v4[TS_CIDR_N_ALWAYS_V4];
/* The same for IPv6: everything outside global unicast 2000::/3 (::/3 holds ::1, the
 * unspecified address, v4-mapped, NAT64 and the discard prefix; 8000::/1 holds
 * unique-local, link-local, site-local and multicast), and inside it the IETF protocol
 * block 2001::/23 (Teredo, ORCHID) and 6to4 2002::/16 (it leads to the IPv4 address it
 * embeds). 2001:db8::/32 and 3fff::/20, the documentation ranges, stay reachable. The
 * firewall routes NAT64's 64:ff9b::/96 as the IPv4 address inside (net.c); the proxy
 * refuses it. */
#define TS_CIDR_N_BLOCKED_V6 5
extern const char *const ts_cidr_blocked_v6[TS_CIDR_N_BLOCKED_V6];

/* Whether the address (4 or 16 bytes of family) lies in a range of the tables above. */
bool ts_cidr_blocked(int family, const unsigned char *addr);

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
 * IPv6, where the host and the egress program offer it (pasta): the sandbox's
 * address (a unique local address of ours, itself inside the blocked fc00::/7: nothing
 * but the sandbox answers for it) and the gateway the program answers for. DNS stays on
 * the one IPv4 forwarder above (AAAA answers come through it too).
 */
#define TS_NET_ADDR6 "fd00:7473:6278::100"
#define TS_NET_GATEWAY6 "fe80::1"
/*
 * slirp4netns (1.2.0) has a fixed IPv6 network, fd00::/64 with its host at fd00::2 (the
 * host's loopback unless --disable-host-loopback, which covers IPv6 too) and DNS at
 * fd00::3, and routes from its link-local fe80::2: an address of that prefix, alone
 * (/128: no on-link route of ours; the one its router advertisements add is outdone by a
 * prohibit route for the prefix, net.c).
 */
#define TS_NET_ADDR6_SLIRP "fd00::100"
#define TS_NET_SLIRP_NET6 "fd00::/64"
#define TS_NET_GATEWAY6_SLIRP "fe80::2"

/*
 * Whether this network namespace (read from /proc/net/ipv6_route) has a usable IPv6
 * default route, not through `lo` and not a reject route: what pasta needs to carry
 * IPv6 (it disables IPv6 without one). For the helper (whether a sandbox gets IPv6) and
 * `doctor` (saying so).
 */
bool ts_cidr_host_has_ipv6_route(void);

/* Name-based egress: the proxy's address inside the sandbox (its own `lo`). */
#define TS_NET_PROXY_PORT 3128
#define TS_NET_PROXY_URL "http://127.0.0.1:3128"
