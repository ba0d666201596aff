/* SPDX-License-Identifier: Apache-2.0 */
/* The egress firewall's rule list (src/helper/net.c ts_net_rules), decided the way the
 * nf_tables chain does: the first rule whose prefix holds the address, else accept. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "helper.h"
#include "net.h"
#include "tap.h"

static struct ts_net_rule rules[TS_NET_MAX_RULES];
static size_t n_rules;

static void cidr(const char *s, struct ts_cidr *c)
{
	if (ts_cidr_parse(s, c) < 0)
		abort();
}

/* "accept", "reject" or "dns" (accepted on port 53 only) */
static const char *decide(const char *addr)
{
	unsigned char a[16];
	int fam = strchr(addr, ':') ? AF_INET6 : AF_INET;

	if (inet_pton(fam, addr, a) != 1)
		abort();
	for (size_t i = 0; i < n_rules; i++)
		if (ts_cidr_contains(&rules[i].cidr, a, fam))
			return rules[i].dns_only ? "dns" : rules[i].accept ? "accept" : "reject";
	return "accept";
}

static bool has_family(int fam)
{
	for (size_t i = 0; i < n_rules; i++)
		if (rules[i].cidr.family == fam)
			return true;
	return false;
}

static void build(struct ts_helper_ctx *ctx)
{
	n_rules = TS_NET_MAX_RULES;
	ok(ts_net_rules(ctx, rules, &n_rules) == 0, "rules for ipv6=%d built (%zu)", ctx->net.ipv6,
	   n_rules);
}

static void is(const char *addr, const char *want)
{
	const char *got = decide(addr);

	ok(!strcmp(got, want), "%s: %s (want %s)", addr, got, want);
}

int main(void)
{
	struct ts_helper_ctx *ctx = calloc(1, sizeof(*ctx));
	struct ts_net_plan *np = &ctx->net;
	bool sorted = true;
	size_t room;

	plan(46);
	np->mode = TS_NET_PASTA;
	cidr("198.51.100.1", &np->host[np->n_host++]);
	cidr("2001:db8:1::1", &np->host[np->n_host++]);
	cidr("fd00:99::1", &np->host[np->n_host++]);
	cidr("10.99.0.0/24", &np->allow[np->n_allow++]);
	cidr("fd00:99::/64", &np->allow[np->n_allow++]);
	cidr("203.0.113.10", &np->deny[np->n_deny++]);
	cidr("2001:db8:2::10", &np->deny[np->n_deny++]);

	/* without IPv6: IPv4 only (net.c prohibits ::/0 and nft.c rejects all IPv6) */
	build(ctx);
	ok(!has_family(AF_INET6), "no IPv6 rule without IPv6 egress");
	is("10.1.2.3", "reject");
	is("10.99.0.10", "accept");
	is("203.0.113.10", "reject");
	is("198.51.100.10", "accept");
	is("198.51.100.1", "reject");
	is("169.254.169.254", "reject");
	is("169.254.1.3", "dns");

	np->ipv6 = true;
	build(ctx);
	for (size_t i = 1; i < n_rules; i++)
		sorted = sorted && rules[i - 1].cidr.len >= rules[i].cidr.len;
	ok(sorted, "longest prefix first");
	/* public and documentation ranges routable */
	is("2001:db8::1", "accept");
	is("2001:db8:1::10", "accept");
	is("2606:4700::1111", "accept");
	/* private, loopback, link-local, multicast, reserved */
	is("::1", "reject");
	is("::", "reject");
	is("fd00::1", "reject");
	is("fc00::1", "reject");
	is("fe80::1", "reject");
	is("fec0::1", "reject");
	is("ff02::1", "reject");
	is("::ffff:10.0.0.1", "reject");
	is("::ffff:198.51.100.10", "reject");
	is("100::1", "reject");
	is("2001::1", "reject");	   /* Teredo */
	is("2002:a63:a::1", "reject");	   /* 6to4 of 10.99.0.10 */
	is("2002:c633:640a::1", "reject"); /* 6to4 of a public one: deprecated, blocked */
	is("64:ff9b:1::1", "reject");	   /* local-use NAT64 */
	is("4000::1", "reject");
	/* NAT64 decides as the IPv4 address it embeds */
	is("64:ff9b::c633:640a", "accept"); /* 198.51.100.10 */
	is("64:ff9b::a01:203", "reject");   /* 10.1.2.3 */
	is("64:ff9b::a63:a", "accept");	    /* 10.99.0.10, allowed */
	is("64:ff9b::cb00:710a", "reject"); /* 203.0.113.10, denied */
	is("64:ff9b::c633:6401", "reject"); /* the host's 198.51.100.1 */
	is("64:ff9b::a9fe:a9fe", "reject"); /* 169.254.169.254 */
	/* the policy's and the host's IPv6 entries */
	is("fd00:99::10", "accept");
	is("fd00:99::1", "reject");
	is("2001:db8:1::1", "reject");
	is("2001:db8:2::10", "reject");
	is("2001:db8:2::11", "accept");

	/* slirp4netns: its fd00::/64 as a strong prohibit of its own (a /64 allow loses) */
	ok(!n_rules || strcmp(decide("fd00::2"), "reject") == 0,
	   "pasta: fd00::2 blocked by fc00::/7");
	np->mode = TS_NET_SLIRP;
	cidr("fd00::/64", &np->allow[np->n_allow++]);
	build(ctx);
	{
		bool found = false;

		for (size_t i = 0; i < n_rules; i++)
			found = found || (rules[i].cidr.len == 64 && !rules[i].accept &&
					  rules[i].strong && !strcmp(decide("fd00::3"), "reject"));
		ok(found, "slirp4netns: a strong prohibit for its fd00::/64");
	}
	is("fd00::2", "reject");
	is("2001:db8:1::10", "accept");
	np->mode = TS_NET_PASTA;

	room = 3;
	ok(ts_net_rules(ctx, rules, &room) == -E2BIG, "too little room: -E2BIG");
	free(ctx);
	return done();
}
