/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct ts_net_rule;

/*
 * The firewall's second half, in the sandbox's own network namespace: a netfilter table
 * (`inet toren`, chain `egress` on the output hook) that decides, for every packet that
 * leaves through the egress interface ifindex, the same as the routes (rules, most
 * specific first: net.h) and keeps the DNS forwarder to port 53.
 *
 * Routes alone are not a firewall: a socket bound to the interface (SO_BINDTODEVICE,
 * unprivileged since Linux 5.7; IP_UNICAST_IF; an IP_PKTINFO control message) makes the
 * kernel treat a destination whose route is prohibited as on-link and send the packet
 * out of that interface anyway (ip_route_output_key_hash_rcu, "Apparently, routing
 * tables are wrong"). These rules see those packets. Without ipv6 no IPv6 packet leaves;
 * with it the IPv6 rules decide and the kernel's neighbour solicitations and
 * advertisements pass (the gateway's address is resolved through them).
 *
 * A second chain (`count`, after the first on the same hook, so it sees only what was let
 * out) counts each TCP connection's first packet (SYN without ACK) per family in the
 * named counters TS_NFT_COUNTER_CONN4 and _CONN6.
 *
 * Programmed over NETLINK_NETFILTER as one nf_tables batch (libnl-3 core builds the
 * messages), while the child still has CAP_NET_ADMIN. 0 or -errno.
 */
int ts_nft_egress(int ifindex, bool ipv6, const struct ts_net_rule *rules, size_t n_rules,
		  struct ts_error *err);

#define TS_NFT_COUNTER_CONN4 "connections_ipv4"
#define TS_NFT_COUNTER_CONN6 "connections_ipv6"

/*
 * Read the named counter name (packets) of the egress table in this network namespace
 * (the caller has joined the sandbox's). 0, -ENOENT when the table or counter is not there
 * (no egress), or -errno.
 */
int ts_nft_read_counter(const char *name, uint64_t *packets, struct ts_error *err);
