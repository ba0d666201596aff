/* SPDX-License-Identifier: Apache-2.0 */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <stdlib.h>
#include <string.h>

#include "nft.h"
#include "nlattr.h"
#include "cleanup.h"
#include "util.h"

/* The built-in blocks (ts_cidr_blocked_v4, ts_cidr_always_v4) are in cidr.c: the name
 * proxy decides by the same table. */

/*
 * With IPv6 egress (ctx->net.ipv6): everything outside global unicast 2000::/3 (::/3 holds
 * ::1, the unspecified address, v4-mapped ::ffff:0:0/96, the discard prefix, local-use
 * NAT64 64:ff9b:1::/48; 8000::/1 holds fc00::/7, fe80::/10, fec0::/10 and ff00::/8), and
 * inside it what RFC 6890's registry does not call globally reachable or what leads back
 * into IPv4 networks: the IETF protocol block 2001::/23 (Teredo, benchmarking, ORCHID)
 * and 6to4 2002::/16 (deprecated by RFC 7526; its relays reach the IPv4 address it
 * embeds, private ones too). 2001:db8::/32 (documentation) stays routable: the tests'
 * public hosts. NAT64's well-known prefix 64:ff9b::/96 is routable, but decides as the
 * IPv4 address it embeds (mirror_nat64): a private one is blocked, a deny holds. The
 * table is cidr.c's ts_cidr_blocked_v6.
 */
#define NAT64 "64:ff9b::/96"

/* Route priorities (RTA_PRIORITY): for one prefix the lowest wins, so a deny beats an
 * allow of the same prefix, and an allow beats a built-in block of the same prefix. */
enum {
	PRIO_DENY = 1,
	PRIO_ALLOW = 2,
	PRIO_BLOCK = 3
};

/* libnl-3 core only (no libnl-route): one RTM_NEWLINK with IFF_UP for `lo`. */
int ts_net_loopback_up(struct ts_error *err)
{
	struct ifinfomsg ifi = {
		.ifi_family = AF_UNSPEC,
		.ifi_flags = IFF_UP,
		.ifi_change = IFF_UP,
	};
	struct nl_sock *sk;
	struct nl_msg *msg = NULL;
	int r;

	ifi.ifi_index = (int)if_nametoindex("lo");
	if (ifi.ifi_index == 0)
		return ts_err_errno(err, -errno, "find interface `lo`");
	sk = nl_socket_alloc();
	if (!sk)
		return ts_err(err, -ENOMEM, "allocate netlink socket");
	r = nl_connect(sk, NETLINK_ROUTE);
	if (r < 0) {
		r = ts_err(err, -EIO, "connect rtnetlink: %s", nl_geterror(r));
		goto out;
	}
	msg = nlmsg_alloc_simple(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK);
	if (!msg || nlmsg_append(msg, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0) {
		r = ts_err(err, -ENOMEM, "build netlink message");
		goto out;
	}
	r = nl_send_auto(sk, msg);
	if (r >= 0)
		r = nl_wait_for_ack(sk);
	if (r < 0)
		r = ts_err(err, -EIO, "bring `lo` up: %s", nl_geterror(r));
	else
		r = 0;
out:
	nlmsg_free(msg);
	nl_socket_free(sk);
	return r;
}

int ts_net_proxy_listen(struct ts_error *err)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(TS_NET_PROXY_PORT) };
	int fd;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return ts_err_errno(err, -errno, "proxy socket");
	/* no SO_REUSEADDR/SO_REUSEPORT: nothing inside may bind the same port beside it */
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 128) < 0) {
		int r = -errno;

		close(fd);
		return ts_err_errno(err, r, "proxy socket on 127.0.0.1:%d", TS_NET_PROXY_PORT);
	}
	return fd;
}

static int cidr_const(const char *s, struct ts_cidr *c)
{
	return ts_cidr_parse(s, c);
}

static int rule_cmp(const void *a, const void *b)
{
	const struct ts_net_rule *x = a, *y = b;

	if (x->cidr.len != y->cidr.len)
		return x->cidr.len > y->cidr.len ? -1 : 1;
	if (x->dns_only != y->dns_only)
		return x->dns_only ? -1 : 1;
	if (x->strong != y->strong)
		return x->strong ? -1 : 1;
	/* an allow beats the built-in block of the same prefix */
	if (x->accept != y->accept)
		return x->accept ? -1 : 1;
	return 0;
}

/* The prefix of NAT64's well-known prefix that embeds the IPv4 prefix v4 (RFC 6052). */
static struct ts_cidr nat64_of(const struct ts_cidr *v4)
{
	struct ts_cidr c;

	cidr_const(NAT64, &c);
	memcpy(c.addr + 12, v4->addr, 4);
	c.len = (unsigned char)(96 + v4->len);
	return c;
}

int ts_net_rules(const struct ts_helper_ctx *ctx, struct ts_net_rule *rules, size_t *n)
{
	const struct ts_net_plan *np = &ctx->net;
	size_t room = *n, k = 0, n4;
	struct ts_cidr c;

#define ADD(cidr_, accept_, dns_, strong_)                                                         \
	do {                                                                                       \
		if (k >= room)                                                                     \
			return -E2BIG;                                                             \
		rules[k++] = (struct ts_net_rule){ .cidr = (cidr_),                                \
						   .accept = (accept_),                            \
						   .dns_only = (dns_),                             \
						   .strong = (strong_) };                          \
	} while (0)
	/* the DNS forwarder: port 53 only; every other port of it is blocked below */
	if (cidr_const(TS_NET_DNS, &c) == 0) {
		ADD(c, true, true, true);
		ADD(c, false, false, true);
	}
	for (size_t i = 0; i < TS_CIDR_N_ALWAYS_V4; i++)
		if (cidr_const(ts_cidr_always_v4[i], &c) == 0)
			ADD(c, false, false, true);
	for (size_t i = 0; i < np->n_host; i++)
		if (np->host[i].family == AF_INET || np->ipv6)
			ADD(np->host[i], false, false, true);
	/* slirp4netns advertises its fd00::/64 as on-link (router advertisements nothing
	 * here can turn off: /proc/sys is read-only), which would route fd00::2 (its host)
	 * and fd00::3 past fc00::/7's block: prohibited as a prefix of its own, with a
	 * lower metric than the kernel gives the advertised route */
	if (np->mode == TS_NET_SLIRP && np->ipv6 && cidr_const(TS_NET_SLIRP_NET6, &c) == 0)
		ADD(c, false, false, true);
	for (size_t i = 0; i < np->n_deny; i++)
		if (np->deny[i].family == AF_INET || np->ipv6)
			ADD(np->deny[i], false, false, true);
	for (size_t i = 0; i < np->n_allow; i++)
		if (np->allow[i].family == AF_INET || np->ipv6)
			ADD(np->allow[i], true, false, false);
	for (size_t i = 0; i < TS_CIDR_N_BLOCKED_V4; i++)
		if (cidr_const(ts_cidr_blocked_v4[i], &c) == 0)
			ADD(c, false, false, false);
	if (np->ipv6) {
		for (size_t i = 0; i < TS_CIDR_N_BLOCKED_V6; i++)
			if (cidr_const(ts_cidr_blocked_v6[i], &c) == 0)
				ADD(c, false, false, false);
		if (cidr_const(NAT64, &c) == 0)
			ADD(c, true, false, false);
		/* a NAT64 gateway on the host's network would carry 64:ff9b::10.0.0.1 to
		 * 10.0.0.1: every IPv4 decision holds for the address embedded (the DNS
		 * forwarder's port rule has no meaning there: the /16 block covers it) */
		n4 = k;
		for (size_t i = 0; i < n4; i++)
			if (rules[i].cidr.family == AF_INET && !rules[i].dns_only)
				ADD(nat64_of(&rules[i].cidr), rules[i].accept, false,
				    rules[i].strong);
	}
#undef ADD
	/* stable enough: equal entries are interchangeable */
	qsort(rules, k, sizeof(*rules), rule_cmp);
	*n = k;
	return 0;
}

static int send_ack(struct nl_sock *sk, struct nl_msg *msg)
{
	int r = nl_send_auto(sk, msg);

	if (r >= 0)
		r = nl_wait_for_ack(sk);
	nlmsg_free(msg);
	return r < 0 ? r : 0;
}

/* RTM_NEWROUTE in the main table: type RTN_UNICAST through the gateway (onlink: the
 * sandbox's address is a /32, so no subnet holds the gateway) or RTN_PROHIBIT, which
 * fails a connect at once with EACCES. */
static int add_route(struct nl_sock *sk, const struct ts_cidr *dst, unsigned char type,
		     uint32_t prio, const void *gw, int oif)
{
	struct rtmsg rtm = {
		.rtm_family = (unsigned char)dst->family,
		.rtm_dst_len = dst->len,
		.rtm_table = RT_TABLE_MAIN,
		.rtm_protocol = RTPROT_STATIC,
		.rtm_scope = RT_SCOPE_UNIVERSE,
		.rtm_type = type,
	};
	struct nl_msg *msg;
	size_t alen = dst->family == AF_INET ? 4 : 16;
	uint32_t oif32 = (uint32_t)oif;
	int r;

	/* IPv6's gateway is link-local: on-link by definition */
	if (type == RTN_UNICAST && dst->family == AF_INET)
		rtm.rtm_flags = RTNH_F_ONLINK;
	msg = nlmsg_alloc_simple(RTM_NEWROUTE,
				 NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
	if (!msg)
		return -NLE_NOMEM;
	r = nlmsg_append(msg, &rtm, sizeof(rtm), NLMSG_ALIGNTO);
	if (r == 0 && dst->len)
		r = ts_nla_put(msg, RTA_DST, dst->addr, alen);
	if (r == 0)
		r = ts_nla_put_u32(msg, RTA_PRIORITY, prio);
	if (r == 0 && type == RTN_UNICAST) {
		r = ts_nla_put(msg, RTA_GATEWAY, gw, alen);
		if (r == 0)
			r = ts_nla_put_u32(msg, RTA_OIF, oif32);
	}
	if (r < 0) {
		nlmsg_free(msg);
		return r;
	}
	r = send_ack(sk, msg);
	/* the same prefix given twice (a deny list naming a host address) */
	return r == -NLE_EXIST ? 0 : r;
}

/*
 * The link the egress program made: no IPv6 address generation (so no link-local address
 * and no fe80::/64 route on it: the sandbox's IPv6, where there is any, is the one
 * address given below), the MTU, up.
 */
static int link_setup(struct nl_sock *sk, int ifindex)
{
	struct ifinfomsg ifi = {
		.ifi_family = AF_UNSPEC,
		.ifi_index = ifindex,
	};
	long spec, in6;
	struct nl_msg *msg;
	int r;

	msg = nlmsg_alloc_simple(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK);
	if (!msg)
		return -NLE_NOMEM;
	r = nlmsg_append(msg, &ifi, sizeof(ifi), NLMSG_ALIGNTO);
	spec = r == 0 ? ts_nla_nest(msg, IFLA_AF_SPEC) : -1;
	in6 = spec >= 0 ? ts_nla_nest(msg, AF_INET6) : -1;
	if (in6 < 0 || ts_nla_put_u8(msg, IFLA_INET6_ADDR_GEN_MODE, IN6_ADDR_GEN_MODE_NONE) < 0) {
		nlmsg_free(msg);
		return -NLE_NOMEM;
	}
	ts_nla_nest_end(msg, in6);
	ts_nla_nest_end(msg, spec);
	r = send_ack(sk, msg);
	if (r < 0)
		return r;
	ifi.ifi_flags = IFF_UP;
	ifi.ifi_change = IFF_UP;
	msg = nlmsg_alloc_simple(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK);
	if (!msg || nlmsg_append(msg, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
	    ts_nla_put_u32(msg, IFLA_MTU, TS_NET_MTU) < 0) {
		nlmsg_free(msg);
		return -NLE_NOMEM;
	}
	return send_ack(sk, msg);
}

static int add_address(struct nl_sock *sk, int ifindex, int family, const void *a)
{
	struct ifaddrmsg ifa = {
		.ifa_family = (unsigned char)family,
		.ifa_prefixlen = family == AF_INET ? 32 : 128,
		.ifa_scope = RT_SCOPE_UNIVERSE,
		.ifa_index = (unsigned)ifindex,
	};
	size_t alen = family == AF_INET ? 4 : 16;
	struct nl_msg *msg =
		nlmsg_alloc_simple(RTM_NEWADDR, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE);

	if (!msg || nlmsg_append(msg, &ifa, sizeof(ifa), NLMSG_ALIGNTO) < 0 ||
	    ts_nla_put(msg, IFA_LOCAL, a, alen) < 0 || ts_nla_put(msg, IFA_ADDRESS, a, alen) < 0 ||
	    /* no duplicate address detection: the link has one other end, the program, and
	     * a tentative address could not be used for the first second */
	    (family == AF_INET6 && ts_nla_put_u32(msg, IFA_FLAGS, IFA_F_NODAD) < 0)) {
		nlmsg_free(msg);
		return -NLE_NOMEM;
	}
	return send_ack(sk, msg);
}

int ts_net_egress_setup(const struct ts_helper_ctx *ctx, struct ts_error *err)
{
	struct ts_net_rule rules[TS_NET_MAX_RULES];
	size_t n_rules = ELEMENTSOF(rules);
	struct in_addr addr, gw;
	struct in6_addr addr6, gw6;
	struct ts_cidr any4 = { .family = AF_INET }, any6 = { .family = AF_INET6 }, dns;
	struct nl_sock *sk = NULL;
	const char *what = "";
	bool slirp = ctx->net.mode == TS_NET_SLIRP;
	int ifindex, r;

	/* the proxy's mode has `lo` only: its socket is made by ts_net_proxy_listen */
	if (ctx->net.mode == TS_NET_NONE || ctx->net.mode == TS_NET_PROXY)
		return 0;
	if (inet_pton(AF_INET, TS_NET_ADDR, &addr) != 1 ||
	    inet_pton(AF_INET, TS_NET_GATEWAY, &gw) != 1 ||
	    inet_pton(AF_INET6, slirp ? TS_NET_ADDR6_SLIRP : TS_NET_ADDR6, &addr6) != 1 ||
	    inet_pton(AF_INET6, slirp ? TS_NET_GATEWAY6_SLIRP : TS_NET_GATEWAY6, &gw6) != 1)
		return ts_err(err, -EINVAL, "bad built-in address");
	if (ts_cidr_parse(TS_NET_DNS, &dns) < 0)
		return ts_err(err, -EINVAL, "bad built-in address");
	ifindex = (int)if_nametoindex(TS_NET_IFNAME);
	if (ifindex == 0)
		return ts_err_errno(err, -errno, "find interface `%s` (made by `%s`)",
				    TS_NET_IFNAME, ctx->net.program);
	r = ts_net_rules(ctx, rules, &n_rules);
	if (r < 0)
		return ts_err(err, r, "too many network rules");
	sk = nl_socket_alloc();
	if (!sk)
		return ts_err(err, -ENOMEM, "allocate netlink socket");
	r = nl_connect(sk, NETLINK_ROUTE);
	if (r < 0) {
		what = "connect rtnetlink";
		goto out;
	}
	what = "set up `" TS_NET_IFNAME "`";
	if ((r = link_setup(sk, ifindex)) < 0)
		goto out;
	what = "add address " TS_NET_ADDR "/32";
	if ((r = add_address(sk, ifindex, AF_INET, &addr)) < 0)
		goto out;
	what = "add the default route";
	if ((r = add_route(sk, &any4, RTN_UNICAST, 0, &gw, ifindex)) < 0)
		goto out;
	if (ctx->net.ipv6) {
		what = slirp ? "add address " TS_NET_ADDR6_SLIRP "/128"
			     : "add address " TS_NET_ADDR6 "/128";
		if ((r = add_address(sk, ifindex, AF_INET6, &addr6)) < 0)
			goto out;
		what = "add the IPv6 default route";
		if ((r = add_route(sk, &any6, RTN_UNICAST, 0, &gw6, ifindex)) < 0)
			goto out;
	} else {
		/* No IPv6 egress: every IPv6 destination but the sandbox's own (the local
		 * table, looked up first) fails with EACCES. */
		what = "prohibit IPv6";
		if ((r = add_route(sk, &any6, RTN_PROHIBIT, PRIO_BLOCK, NULL, 0)) < 0)
			goto out;
	}
	/* the DNS forwarder's address: routable (the netfilter rules keep it to port 53) */
	what = "route the DNS forwarder " TS_NET_DNS;
	if ((r = add_route(sk, &dns, RTN_UNICAST, PRIO_DENY, &gw, ifindex)) < 0)
		goto out;
	for (size_t i = 0; i < n_rules; i++) {
		static char buf[TS_CIDR_STRLEN];
		const struct ts_net_rule *ru = &rules[i];

		if (!memcmp(&ru->cidr, &dns, sizeof(dns)))
			continue;
		what = ts_cidr_format(&ru->cidr, buf, sizeof(buf));
		r = add_route(sk, &ru->cidr, ru->accept ? RTN_UNICAST : RTN_PROHIBIT,
			      ru->strong   ? PRIO_DENY
			      : ru->accept ? PRIO_ALLOW
					   : PRIO_BLOCK,
			      ru->cidr.family == AF_INET ? (const void *)&gw : (const void *)&gw6,
			      ifindex);
		if (r < 0)
			goto out;
	}
	nl_socket_free(sk);
	sk = NULL;
	return ts_nft_egress(ifindex, ctx->net.ipv6, rules, n_rules, err);
out:
	nl_socket_free(sk);
	return ts_err(err, -EIO, "network egress: %s: %s", what, nl_geterror(r));
}
