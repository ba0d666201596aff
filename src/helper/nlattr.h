/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Netlink attributes on a libnl-3 message, nests kept as offsets into it: the few the
 * helper's netlink messages need (net.c, nft.c), with the lengths checked in one place.
 */
#include <linux/netlink.h>
#include <netlink/msg.h>
#include <stdint.h>
#include <string.h>

/* Append attribute type with len bytes of data. 0 or -1 (no room). */
static inline int ts_nla_put(struct nl_msg *m, int type, const void *data, size_t len)
{
	struct nlattr *a = nlmsg_reserve(m, NLA_HDRLEN + len, NLMSG_ALIGNTO);

	if (!a)
		return -1;
	a->nla_type = (uint16_t)type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	if (len)
		memcpy((unsigned char *)a + NLA_HDRLEN, data, len);
	return 0;
}

static inline int ts_nla_put_u8(struct nl_msg *m, int type, uint8_t v)
{
	return ts_nla_put(m, type, &v, 1);
}

static inline int ts_nla_put_u32(struct nl_msg *m, int type, uint32_t v)
{
	return ts_nla_put(m, type, &v, 4);
}

static inline int ts_nla_put_str(struct nl_msg *m, int type, const char *s)
{
	return ts_nla_put(m, type, s, strlen(s) + 1);
}

/* Open a nested attribute; returns its offset in the message, or -1. */
static inline long ts_nla_nest(struct nl_msg *m, int type)
{
	long off = (long)NLMSG_ALIGN(nlmsg_hdr(m)->nlmsg_len);

	if (ts_nla_put(m, type | NLA_F_NESTED, NULL, 0) < 0)
		return -1;
	return off;
}

/* Close the nest opened at off. */
static inline void ts_nla_nest_end(struct nl_msg *m, long off)
{
	struct nlmsghdr *h = nlmsg_hdr(m);
	struct nlattr *a = (struct nlattr *)((unsigned char *)h + off);

	a->nla_len = (uint16_t)(h->nlmsg_len - (uint32_t)off);
}

/*
 * The attribute of type (nest flags ignored) in the len bytes at head, or NULL: each
 * attribute's length checked against what is left. Our own walk rather than libnl's
 * nla_find, whose object file would link the static helper against getaddrinfo.
 */
static inline const struct nlattr *ts_nla_find(const void *head, long len, int type)
{
	const unsigned char *p = head;

	while (len >= (long)NLA_HDRLEN) {
		const struct nlattr *a = (const struct nlattr *)p;
		long step = NLA_ALIGN(a->nla_len);

		if (a->nla_len < NLA_HDRLEN || a->nla_len > len)
			return NULL;
		if ((a->nla_type & NLA_TYPE_MASK) == type)
			return a;
		p += step;
		len -= step;
	}
	return NULL;
}

/* The payload of a and its length. */
static inline const void *ts_nla_data(const struct nlattr *a)
{
	return (const unsigned char *)a + NLA_HDRLEN;
}

static inline long ts_nla_len(const struct nlattr *a)
{
	return (long)a->nla_len - NLA_HDRLEN;
}
