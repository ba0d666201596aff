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
 * (TS_NET_IFNAME: no IPv6 addresses, up, TS_NET_ADDR/32, a default route through
 * TS_NET_GATEWAY) and the firewall — the routing table: prohibit routes for every
 * private, loopback, link-local, CGNAT, multicast and reserved IPv4 range, the host's own
 * addresses, 169.254.169.254 and the policy's deny list, routable ones for the allow list
 * and the DNS forwarder; IPv6 prohibited as a whole — and the same decisions as netfilter
 * rules (nft.h) for what routes cannot stop. Runs in the child while it still has
 * CAP_NET_ADMIN in the sandbox's user namespace; nothing inside has it later. 0 or -errno.
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

/* The whole IPv4 rule list for ctx, sorted as nft.c needs it: longest prefix first,
 * at equal length the DNS port rule, then strong entries, then prohibitions. *n on entry is the room in rules. 0 or -E2BIG. */
int ts_net_rules(const struct ts_helper_ctx *ctx, struct ts_net_rule *rules, size_t *n);
