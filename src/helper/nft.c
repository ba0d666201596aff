/* SPDX-License-Identifier: Apache-2.0 */
#include "nft.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <netinet/in.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cleanup.h"
#include "net.h"
#include "nlattr.h"

#define TABLE "toren"
#define CHAIN "egress"
/* after CHAIN on the same hook: sees only what CHAIN accepted */
#define COUNT_CHAIN "count"
/* a regular chain: how an IPv6 destination is refused (verdict_reset) */
#define REFUSE6_CHAIN "refuse6"
/* the batch: 2 + 2 messages around the rules; each rule is well under 1 KiB */
#define MAX_BATCH (256 * 1024)

struct batch {
	unsigned char *buf;
	size_t len;
	uint32_t seq;
	unsigned n_acks; /* messages that asked for an ack */
	bool failed;
};

static struct nl_msg *nft_msg(struct batch *b, int type, int flags, int family)
{
	struct nfgenmsg g = { .nfgen_family = (unsigned char)family, .version = NFNETLINK_V0 };
	struct nl_msg *msg = nlmsg_alloc_simple((uint16_t)type, NLM_F_REQUEST | flags);

	if (type == NFNL_MSG_BATCH_BEGIN || type == NFNL_MSG_BATCH_END)
		g.res_id = htons(NFNL_SUBSYS_NFTABLES);
	if (!msg || nlmsg_append(msg, &g, sizeof(g), NLMSG_ALIGNTO) < 0) {
		nlmsg_free(msg);
		b->failed = true;
		return NULL;
	}
	nlmsg_hdr(msg)->nlmsg_seq = ++b->seq;
	return msg;
}

/* Append a finished message to the batch buffer. */
static void batch_add(struct batch *b, struct nl_msg *msg)
{
	struct nlmsghdr *h;

	if (!msg) {
		b->failed = true;
		return;
	}
	h = nlmsg_hdr(msg);
	if (b->len + NLMSG_ALIGN(h->nlmsg_len) > MAX_BATCH) {
		b->failed = true;
	} else {
		memcpy(b->buf + b->len, h, h->nlmsg_len);
		b->len += NLMSG_ALIGN(h->nlmsg_len);
		b->n_acks += (h->nlmsg_flags & NLM_F_ACK) != 0;
	}
	nlmsg_free(msg);
}

static int put_be32(struct nl_msg *m, int type, uint32_t v)
{
	return ts_nla_put_u32(m, type, htonl(v));
}

/* NFTA_x { NFTA_DATA_VALUE bytes } */
static int put_data(struct nl_msg *m, int type, const void *data, int len)
{
	long n = ts_nla_nest(m, type);

	if (n < 0 || ts_nla_put(m, NFTA_DATA_VALUE, data, (size_t)len) < 0)
		return -ENOMEM;
	ts_nla_nest_end(m, n);
	return 0;
}

/* One NFTA_LIST_ELEM { NFTA_EXPR_NAME, NFTA_EXPR_DATA { ... } }: open it, the caller
 * fills the data, expr_end closes both. */
static long expr_begin(struct nl_msg *m, const char *name, long *data)
{
	long elem = ts_nla_nest(m, NFTA_LIST_ELEM);

	if (elem < 0 || ts_nla_put_str(m, NFTA_EXPR_NAME, name) < 0)
		return -1;
	*data = ts_nla_nest(m, NFTA_EXPR_DATA);
	return *data >= 0 ? elem : -1;
}

static int expr_end(struct nl_msg *m, long elem, long data, int r)
{
	if (r < 0 || elem < 0)
		return -ENOMEM;
	ts_nla_nest_end(m, data);
	ts_nla_nest_end(m, elem);
	return 0;
}

static int meta_load(struct nl_msg *m, uint32_t key)
{
	long d = -1, e = expr_begin(m, "meta", &d);
	int r = e >= 0 ? 0 : -ENOMEM;

	if (r == 0)
		r = put_be32(m, NFTA_META_KEY, key);
	if (r == 0)
		r = put_be32(m, NFTA_META_DREG, NFT_REG_1);
	return expr_end(m, e, d, r);
}

static int cmp_eq(struct nl_msg *m, const void *data, int len)
{
	long d = -1, e = expr_begin(m, "cmp", &d);
	int r = e >= 0 ? 0 : -ENOMEM;

	if (r == 0)
		r = put_be32(m, NFTA_CMP_SREG, NFT_REG_1);
	if (r == 0)
		r = put_be32(m, NFTA_CMP_OP, NFT_CMP_EQ);
	if (r == 0)
		r = put_data(m, NFTA_CMP_DATA, data, len);
	return expr_end(m, e, d, r);
}

static int payload_load(struct nl_msg *m, uint32_t base, uint32_t off, uint32_t len)
{
	long d = -1, e = expr_begin(m, "payload", &d);
	int r = e >= 0 ? 0 : -ENOMEM;

	if (r == 0)
		r = put_be32(m, NFTA_PAYLOAD_DREG, NFT_REG_1);
	if (r == 0)
		r = put_be32(m, NFTA_PAYLOAD_BASE, base);
	if (r == 0)
		r = put_be32(m, NFTA_PAYLOAD_OFFSET, off);
	if (r == 0)
		r = put_be32(m, NFTA_PAYLOAD_LEN, len);
	return expr_end(m, e, d, r);
}

static int mask(struct nl_msg *m, const unsigned char *bits, int len)
{
	static const unsigned char zero[16];
	long d = -1, e = expr_begin(m, "bitwise", &d);
	int r = e >= 0 ? 0 : -ENOMEM;

	if (r == 0)
		r = put_be32(m, NFTA_BITWISE_SREG, NFT_REG_1);
	if (r == 0)
		r = put_be32(m, NFTA_BITWISE_DREG, NFT_REG_1);
	if (r == 0)
		r = put_be32(m, NFTA_BITWISE_LEN, (uint32_t)len);
	if (r == 0)
		r = put_data(m, NFTA_BITWISE_MASK, bits, len);
	if (r == 0)
		r = put_data(m, NFTA_BITWISE_XOR, zero, len);
	return expr_end(m, e, d, r);
}

static int verdict(struct nl_msg *m, bool accept)
{
	long d = -1, e;
	int r;

	if (!accept) {
		/* an ICMP "administratively prohibited" back to the sender: a connect fails
		 * at once (EHOSTUNREACH), it does not wait for a timeout */
		e = expr_begin(m, "reject", &d);
		r = e >= 0 ? put_be32(m, NFTA_REJECT_TYPE, NFT_REJECT_ICMPX_UNREACH) : -ENOMEM;
		if (r == 0)
			r = ts_nla_put_u8(m, NFTA_REJECT_ICMP_CODE,
					  NFT_REJECT_ICMPX_ADMIN_PROHIBITED);
		return expr_end(m, e, d, r);
	}
	e = expr_begin(m, "immediate", &d);
	r = e >= 0 ? put_be32(m, NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT) : -ENOMEM;
	if (r == 0) {
		long data = ts_nla_nest(m, NFTA_IMMEDIATE_DATA);
		long v = data >= 0 ? ts_nla_nest(m, NFTA_DATA_VERDICT) : -1;

		if (v < 0 || put_be32(m, NFTA_VERDICT_CODE, NF_ACCEPT) < 0) {
			r = -ENOMEM;
		} else {
			ts_nla_nest_end(m, v);
			ts_nla_nest_end(m, data);
		}
	}
	return expr_end(m, e, d, r);
}

/*
 * A TCP reset back to the sender. For IPv6 the ICMPv6 error of verdict() does not reach a
 * socket bound to the interface (SO_BINDTODEVICE): the kernel generates it on `lo` and
 * looks the socket up by the device it arrived on. A reset is a packet to our own
 * address, delivered as coming in on the interface that address is on: such a connect
 * fails at once (ECONNREFUSED) instead of timing out.
 */
static int verdict_reset(struct nl_msg *m)
{
	long d = -1, e = expr_begin(m, "reject", &d);
	int r = e >= 0 ? put_be32(m, NFTA_REJECT_TYPE, NFT_REJECT_TCP_RST) : -ENOMEM;

	return expr_end(m, e, d, r);
}

/* Go on in chain (a regular chain of TABLE), as a subroutine. */
static int verdict_jump(struct nl_msg *m, const char *chain)
{
	long d = -1, e = expr_begin(m, "immediate", &d);
	int r = e >= 0 ? put_be32(m, NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT) : -ENOMEM;

	if (r == 0) {
		long data = ts_nla_nest(m, NFTA_IMMEDIATE_DATA);
		long v = data >= 0 ? ts_nla_nest(m, NFTA_DATA_VERDICT) : -1;

		if (v < 0 || put_be32(m, NFTA_VERDICT_CODE, (uint32_t)NFT_JUMP) < 0 ||
		    ts_nla_put_str(m, NFTA_VERDICT_CHAIN, chain) < 0) {
			r = -ENOMEM;
		} else {
			ts_nla_nest_end(m, v);
			ts_nla_nest_end(m, data);
		}
	}
	return expr_end(m, e, d, r);
}

static int objref_counter(struct nl_msg *m, const char *name)
{
	long d = -1, e = expr_begin(m, "objref", &d);
	int r = e >= 0 ? 0 : -ENOMEM;

	if (r == 0)
		r = put_be32(m, NFTA_OBJREF_IMM_TYPE, NFT_OBJECT_COUNTER);
	if (r == 0)
		r = ts_nla_put_str(m, NFTA_OBJREF_IMM_NAME, name);
	return expr_end(m, e, d, r);
}

enum match {
	MATCH_NONE,
	MATCH_PORT,	/* l4proto and destination port */
	MATCH_TCP_SYN,	/* TCP with SYN and without ACK: a connection's first packet */
	MATCH_ICMP6_ND, /* ICMPv6 of type `port` (neighbour solicitation, advertisement) */
	MATCH_TCP,	/* TCP; refused with a reset */
};

/*
 * One rule of chain: out of ifindex, of family nfproto; with c, to that prefix; then the
 * match; then accept, reject or (with counter) count in that named counter.
 */
static void add_rule_v(struct batch *b, const char *chain, int ifindex, uint8_t nfproto,
		       const struct ts_cidr *c, enum match match, uint8_t l4proto, uint16_t port,
		       bool accept, const char *counter, const char *jump)
{
	struct nl_msg *m = nft_msg(b, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWRULE,
				   NLM_F_CREATE | NLM_F_APPEND | NLM_F_ACK, NFPROTO_INET);
	uint32_t oif = (uint32_t)ifindex;
	long list;
	int r;

	if (!m)
		return;
	r = ts_nla_put_str(m, NFTA_RULE_TABLE, TABLE);
	if (r == 0)
		r = ts_nla_put_str(m, NFTA_RULE_CHAIN, chain);
	list = r == 0 ? ts_nla_nest(m, NFTA_RULE_EXPRESSIONS) : -1;
	r = list >= 0 ? 0 : -ENOMEM;
	if (r == 0)
		r = meta_load(m, NFT_META_OIF);
	if (r == 0)
		r = cmp_eq(m, &oif, sizeof(oif));
	if (r == 0)
		r = meta_load(m, NFT_META_NFPROTO);
	if (r == 0)
		r = cmp_eq(m, &nfproto, 1);
	if (r == 0 && c && c->len) {
		/* the destination address: IPv4 header offset 16, IPv6 header offset 24 */
		int alen = c->family == AF_INET ? 4 : 16;
		unsigned char bits[16] = { 0 };

		for (unsigned i = 0; i < c->len; i++)
			bits[i / 8] |= (unsigned char)(0x80 >> (i % 8));
		r = payload_load(m, NFT_PAYLOAD_NETWORK_HEADER, c->family == AF_INET ? 16 : 24,
				 (uint32_t)alen);
		if (r == 0 && c->len < alen * 8)
			r = mask(m, bits, alen);
		if (r == 0)
			r = cmp_eq(m, c->addr, alen);
	}
	if (r == 0 && match != MATCH_NONE) {
		r = meta_load(m, NFT_META_L4PROTO);
		if (r == 0)
			r = cmp_eq(m, &l4proto, 1);
	}
	if (r == 0 && match == MATCH_PORT) {
		uint16_t be_port = htons(port);

		r = payload_load(m, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2);
		if (r == 0)
			r = cmp_eq(m, &be_port, 2);
	} else if (r == 0 && match == MATCH_TCP_SYN) {
		static const unsigned char syn_ack = 0x12, syn = 0x02;

		r = payload_load(m, NFT_PAYLOAD_TRANSPORT_HEADER, 13, 1); /* TCP flags */
		if (r == 0)
			r = mask(m, &syn_ack, 1);
		if (r == 0)
			r = cmp_eq(m, &syn, 1);
	} else if (r == 0 && match == MATCH_ICMP6_ND) {
		uint8_t type = (uint8_t)port;

		r = payload_load(m, NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1);
		if (r == 0)
			r = cmp_eq(m, &type, 1);
	}
	if (r == 0)
		r = counter			    ? objref_counter(m, counter)
		    : jump			    ? verdict_jump(m, jump)
		    : match == MATCH_TCP && !accept ? verdict_reset(m)
						    : verdict(m, accept);
	if (r < 0) {
		nlmsg_free(m);
		b->failed = true;
		return;
	}
	ts_nla_nest_end(m, list);
	batch_add(b, m);
}

static void add_rule_in(struct batch *b, const char *chain, int ifindex, uint8_t nfproto,
			const struct ts_cidr *c, enum match match, uint8_t l4proto, uint16_t port,
			bool accept, const char *counter)
{
	add_rule_v(b, chain, ifindex, nfproto, c, match, l4proto, port, accept, counter, NULL);
}

/* A rule of CHAIN for prefix c: accept, reject, or with jump go on in that chain. */
static void add_rule_jump(struct batch *b, int ifindex, uint8_t nfproto, const struct ts_cidr *c,
			  bool accept, const char *jump)
{
	add_rule_v(b, CHAIN, ifindex, nfproto, c, MATCH_NONE, 0, 0, accept, NULL, jump);
}

static void add_rule(struct batch *b, int ifindex, uint8_t nfproto, const struct ts_cidr *c,
		     uint8_t l4proto, uint16_t port, bool accept)
{
	add_rule_in(b, CHAIN, ifindex, nfproto, c, l4proto ? MATCH_PORT : MATCH_NONE, l4proto, port,
		    accept, NULL);
}

/* A base chain of TABLE on the output hook, accepting what no rule decides. */
static void add_chain(struct batch *b, const char *name, int prio)
{
	struct nl_msg *m = nft_msg(b, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWCHAIN,
				   NLM_F_CREATE | NLM_F_ACK, NFPROTO_INET);
	long hook;

	if (!m)
		return;
	if (ts_nla_put_str(m, NFTA_CHAIN_TABLE, TABLE) < 0 ||
	    ts_nla_put_str(m, NFTA_CHAIN_NAME, name) < 0 ||
	    ts_nla_put_str(m, NFTA_CHAIN_TYPE, "filter") < 0 ||
	    put_be32(m, NFTA_CHAIN_POLICY, NF_ACCEPT) < 0 ||
	    (hook = ts_nla_nest(m, NFTA_CHAIN_HOOK)) < 0 ||
	    put_be32(m, NFTA_HOOK_HOOKNUM, NF_INET_LOCAL_OUT) < 0 ||
	    put_be32(m, NFTA_HOOK_PRIORITY, (uint32_t)prio) < 0)
		b->failed = true;
	else
		ts_nla_nest_end(m, hook);
	batch_add(b, m);
}

/* A regular chain of TABLE (no hook): reached only by a jump. */
static void add_regular_chain(struct batch *b, const char *name)
{
	struct nl_msg *m = nft_msg(b, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWCHAIN,
				   NLM_F_CREATE | NLM_F_ACK, NFPROTO_INET);

	if (m && (ts_nla_put_str(m, NFTA_CHAIN_TABLE, TABLE) < 0 ||
		  ts_nla_put_str(m, NFTA_CHAIN_NAME, name) < 0))
		b->failed = true;
	batch_add(b, m);
}

/* A named counter of TABLE, starting at zero. */
static void add_counter(struct batch *b, const char *name)
{
	struct nl_msg *m = nft_msg(b, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWOBJ,
				   NLM_F_CREATE | NLM_F_ACK, NFPROTO_INET);
	uint64_t zero = 0;
	long data;

	if (!m)
		return;
	if (ts_nla_put_str(m, NFTA_OBJ_TABLE, TABLE) < 0 ||
	    ts_nla_put_str(m, NFTA_OBJ_NAME, name) < 0 ||
	    put_be32(m, NFTA_OBJ_TYPE, NFT_OBJECT_COUNTER) < 0 ||
	    (data = ts_nla_nest(m, NFTA_OBJ_DATA)) < 0 ||
	    ts_nla_put(m, NFTA_COUNTER_PACKETS, &zero, 8) < 0 ||
	    ts_nla_put(m, NFTA_COUNTER_BYTES, &zero, 8) < 0)
		b->failed = true;
	else
		ts_nla_nest_end(m, data);
	batch_add(b, m);
}

/* Read acks until every message that asked for one has answered; the first error wins. */
static int read_acks(int fd, unsigned want)
{
	_cleanup_free_ unsigned char *buf = malloc(65536);
	int first = 0;

	if (!buf)
		return -ENOMEM;
	while (want > 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 5000) <= 0)
			return -ETIMEDOUT;
		n = recv(fd, buf, 65536, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type != NLMSG_ERROR)
				continue;
			if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct nlmsgerr))) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				if (e->error < 0 && first == 0)
					first = e->error;
			}
			/* an error ends the batch: nothing else will answer */
			if (first < 0)
				return first;
			want--;
		}
	}
	return first;
}

int ts_nft_egress(int ifindex, bool ipv6, const struct ts_net_rule *rules, size_t n_rules,
		  struct ts_error *err)
{
	_cleanup_free_ unsigned char *buf = malloc(MAX_BATCH);
	struct batch b = { .buf = buf };
	struct nl_sock *sk = NULL;
	struct nl_msg *m;
	int r;

	if (!buf)
		return ts_err(err, -ENOMEM, "netfilter batch");
	batch_add(&b, nft_msg(&b, NFNL_MSG_BATCH_BEGIN, 0, AF_UNSPEC));
	m = nft_msg(&b, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWTABLE, NLM_F_CREATE | NLM_F_ACK,
		    NFPROTO_INET);
	if (m && ts_nla_put_str(m, NFTA_TABLE_NAME, TABLE) < 0)
		b.failed = true;
	batch_add(&b, m);
	add_chain(&b, CHAIN, 0);
	add_chain(&b, COUNT_CHAIN, 10);
	add_counter(&b, TS_NFT_COUNTER_CONN4);
	add_counter(&b, TS_NFT_COUNTER_CONN6);
	if (ipv6) {
		/* The kernel's own neighbour discovery for the gateway goes to multicast
		 * (ff02::1:ff00:1), a blocked range. Only the kernel sends these: crafting
		 * ICMPv6 of these types takes a raw socket (CAP_NET_RAW), which nothing
		 * inside has; ping sockets send echo requests only. */
		add_rule_in(&b, CHAIN, ifindex, NFPROTO_IPV6, NULL, MATCH_ICMP6_ND, IPPROTO_ICMPV6,
			    135, true, NULL);
		add_rule_in(&b, CHAIN, ifindex, NFPROTO_IPV6, NULL, MATCH_ICMP6_ND, IPPROTO_ICMPV6,
			    136, true, NULL);
		/* what the IPv6 prefix rules refuse: TCP with a reset, the rest with the
		 * ICMPv6 error */
		add_regular_chain(&b, REFUSE6_CHAIN);
		add_rule_in(&b, REFUSE6_CHAIN, ifindex, NFPROTO_IPV6, NULL, MATCH_TCP, IPPROTO_TCP,
			    0, false, NULL);
		add_rule_in(&b, REFUSE6_CHAIN, ifindex, NFPROTO_IPV6, NULL, MATCH_NONE, 0, 0, false,
			    NULL);
	} else {
		/* IPv6 does not leave at all */
		add_rule(&b, ifindex, NFPROTO_IPV6, NULL, 0, 0, false);
	}
	for (size_t i = 0; i < n_rules; i++) {
		uint8_t fam = rules[i].cidr.family == AF_INET ? NFPROTO_IPV4 : NFPROTO_IPV6;

		if (fam == NFPROTO_IPV6 && !ipv6)
			continue;
		if (rules[i].dns_only) {
			add_rule(&b, ifindex, fam, &rules[i].cidr, IPPROTO_UDP, 53, true);
			add_rule(&b, ifindex, fam, &rules[i].cidr, IPPROTO_TCP, 53, true);
		} else {
			/* IPv6: refused in REFUSE6_CHAIN (TCP with a reset) */
			add_rule_jump(&b, ifindex, fam, &rules[i].cidr, rules[i].accept,
				      fam == NFPROTO_IPV6 && !rules[i].accept ? REFUSE6_CHAIN
									      : NULL);
		}
	}
	/* connection accounting: the first packet of each TCP connection that the rules
	 * let out (inspect reads these through the helper's --net-counters) */
	add_rule_in(&b, COUNT_CHAIN, ifindex, NFPROTO_IPV4, NULL, MATCH_TCP_SYN, IPPROTO_TCP, 0,
		    true, TS_NFT_COUNTER_CONN4);
	add_rule_in(&b, COUNT_CHAIN, ifindex, NFPROTO_IPV6, NULL, MATCH_TCP_SYN, IPPROTO_TCP, 0,
		    true, TS_NFT_COUNTER_CONN6);
	batch_add(&b, nft_msg(&b, NFNL_MSG_BATCH_END, 0, AF_UNSPEC));
	if (b.failed)
		return ts_err(err, -ENOMEM, "build the netfilter rules");
	sk = nl_socket_alloc();
	if (!sk)
		return ts_err(err, -ENOMEM, "allocate netlink socket");
	r = nl_connect(sk, NETLINK_NETFILTER);
	if (r < 0) {
		nl_socket_free(sk);
		return ts_err(err, -EIO, "connect nfnetlink: %s", nl_geterror(r));
	}
	if (send(nl_socket_get_fd(sk), b.buf, b.len, 0) != (ssize_t)b.len)
		r = -errno;
	else
		r = read_acks(nl_socket_get_fd(sk), b.n_acks);
	nl_socket_free(sk);
	if (r < 0)
		return ts_err_errno(err, r,
				    "network egress: load the netfilter rules (the kernel needs "
				    "nf_tables with the inet family and reject)");
	return 0;
}

int ts_nft_read_counter(const char *name, uint64_t *packets, struct ts_error *err)
{
	_cleanup_free_ unsigned char *buf = malloc(65536);
	struct batch b = { 0 };
	struct nl_sock *sk;
	struct nl_msg *m;
	ssize_t n;
	int r;

	if (!buf)
		return ts_err(err, -ENOMEM, "netfilter reply");
	m = nft_msg(&b, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETOBJ, NLM_F_ACK, NFPROTO_INET);
	if (!m || ts_nla_put_str(m, NFTA_OBJ_TABLE, TABLE) < 0 ||
	    ts_nla_put_str(m, NFTA_OBJ_NAME, name) < 0 ||
	    put_be32(m, NFTA_OBJ_TYPE, NFT_OBJECT_COUNTER) < 0) {
		nlmsg_free(m);
		return ts_err(err, -ENOMEM, "build the netfilter query");
	}
	sk = nl_socket_alloc();
	if (!sk) {
		nlmsg_free(m);
		return ts_err(err, -ENOMEM, "allocate netlink socket");
	}
	r = nl_connect(sk, NETLINK_NETFILTER);
	if (r < 0) {
		nlmsg_free(m);
		nl_socket_free(sk);
		return ts_err(err, -EIO, "connect nfnetlink: %s", nl_geterror(r));
	}
	r = -EIO;
	if (send(nl_socket_get_fd(sk), nlmsg_hdr(m), nlmsg_hdr(m)->nlmsg_len, 0) < 0) {
		r = -errno;
		goto out;
	}
	/* the object (NFT_MSG_NEWOBJ), then the ack; or one error */
	for (int rounds = 0; rounds < 4; rounds++) {
		struct pollfd p = { .fd = nl_socket_get_fd(sk), .events = POLLIN };

		if (poll(&p, 1, 5000) <= 0) {
			r = -ETIMEDOUT;
			goto out;
		}
		n = recv(p.fd, buf, 65536, 0);
		if (n <= 0) {
			r = n < 0 ? -errno : -EIO;
			goto out;
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_ERROR &&
			    h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct nlmsgerr))) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				if (e->error < 0) {
					r = e->error;
					goto out;
				}
				if (r == 0)
					goto out; /* the ack after the object */
			} else if (h->nlmsg_type ==
				   ((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWOBJ)) {
				const struct nlattr *a = nlmsg_attrdata(h, sizeof(struct nfgenmsg));
				int len = nlmsg_attrlen(h, sizeof(struct nfgenmsg));
				const struct nlattr *data = ts_nla_find(a, len, NFTA_OBJ_DATA), *pk;
				uint64_t v;

				pk = data ? ts_nla_find(ts_nla_data(data), ts_nla_len(data),
							NFTA_COUNTER_PACKETS)
					  : NULL;
				if (!pk || ts_nla_len(pk) != 8) {
					r = -EPROTO;
					goto out;
				}
				memcpy(&v, ts_nla_data(pk), 8);
				*packets = be64toh(v);
				r = 0;
			}
		}
	}
out:
	nlmsg_free(m);
	nl_socket_free(sk);
	if (r == -ENOENT)
		return ts_err(err, r, "no egress counter `%s` in this network namespace", name);
	if (r < 0)
		return ts_err_errno(err, r, "read the netfilter counter `%s`", name);
	return 0;
}
