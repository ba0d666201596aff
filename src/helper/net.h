/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include "error.h"
#include "helper.h"

/*
 * Bring the loopback interface of the (new, empty) network namespace up. Nothing else is
 * configured: no other interface, no route, so nothing leaves the sandbox.
 */
int ts_net_loopback_up(struct ts_error *err);

/*
 * With egress (ctx->net.mode): configure the interface the egress program made
 * (TS_NET_IFNAME: no generated IPv6 addresses, up, TS_NET_ADDR/32, a default route through
 * TS_NET_GATEWAY; with ctx->net.ipv6 also TS_NET_ADDR6/128 and an IPv6 default route
 * through TS_NET_GATEWAY6) and the firewall — the routing table: prohibit routes for every
 * private, loopback, link-local, CGNAT, multicast and reserved range of IPv4 (and of IPv6
 * with ctx->net.ipv6, else IPv6 prohibited as a whole), the host's own addresses,
 * 169.254.169.254 and the policy's deny list, routable ones for the allow list and the
 * DNS forwarder — and the same decisions as netfilter rules (nft.h) for what routes
 * cannot stop. Runs in the child while it still has CAP_NET_ADMIN in the sandbox's user
 * namespace; nothing inside has it later. 0 or -errno.
 */
int ts_net_egress_setup(const struct ts_helper_ctx *ctx, struct ts_error *err);

/*
 * Name-based egress (ctx->net.mode TS_NET_PROXY): a TCP socket listening on
 * 127.0.0.1:TS_NET_PROXY_PORT of the sandbox's network namespace (a socket stays in the
 * namespace it was made in), for the proxy outside. Called in the child after `lo` is up;
 * the fd (close-on-exec) or -errno.
 */
int ts_net_proxy_listen(struct ts_error *err);

/* One entry of the firewall, most specific first (net.c builds it, nft.c mirrors it). */
struct ts_net_rule {
	struct ts_cidr cidr;
	bool accept;   /* routable; false: prohibited */
	bool dns_only; /* accept only UDP and TCP to port 53 (the DNS forwarder) */
	bool strong;   /* a deny, a host address, the metadata address: beats an allow of the
			* same prefix */
};

/* Room for every rule ts_net_rules can make: the built-in ones, the host's addresses, the
 * policy's, and with IPv6 each IPv4 one again inside NAT64's prefix. */
#define TS_NET_MAX_RULES                                                                           \
	(2 * (3 + 16 + 2 * TS_HELPER_MAX_HOST_ADDRS + 2 * TS_HELPER_MAX_NET_RULES) + 16)

/* The whole rule list for ctx (IPv4, and IPv6 with ctx->net.ipv6: its built-in blocks,
 * NAT64's prefix deciding as the IPv4 address it embeds), sorted as nft.c needs it:
 * longest prefix first, at equal length the DNS port rule, then strong entries, then
 * allows, then prohibitions. Pure: no system call. *n on entry is the room in rules.
 * 0 or -E2BIG. */
int ts_net_rules(const struct ts_helper_ctx *ctx, struct ts_net_rule *rules, size_t *n);
