/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>

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
 * tables are wrong"). These rules see those packets. IPv6 never leaves.
 *
 * Programmed over NETLINK_NETFILTER as one nf_tables batch (libnl-3 core builds the
 * messages), while the child still has CAP_NET_ADMIN. 0 or -errno.
 */
int ts_nft_egress(int ifindex, const struct ts_net_rule *rules, size_t n_rules,
		  struct ts_error *err);
