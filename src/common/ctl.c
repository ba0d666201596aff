/* SPDX-License-Identifier: Apache-2.0 */
#include "ctl.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TS_TLV_HDR 6

void ts_ctl_msg_init(struct ts_ctl_msg *m, uint16_t type, uint32_t id)
{
	m->type = type;
	m->flags = 0;
	m->id = id;
	m->len = 0;
	m->n_fds = 0;
}

void ts_ctl_msg_free(struct ts_ctl_msg *m)
{
	for (size_t i = 0; i < m->n_fds; i++)
		if (m->fds[i] >= 0)
			close(m->fds[i]);
	m->n_fds = 0;
	free(m->data);
	m->data = NULL;
	m->len = m->cap = 0;
}

static int reserve(struct ts_ctl_msg *m, size_t extra)
{
	size_t need = m->len + extra, cap;
	uint8_t *d;

	if (need > TS_CTL_MAX_PAYLOAD || need < m->len)
		return -E2BIG;
	if (need <= m->cap)
		return 0;
	cap = m->cap ? m->cap : 256;
	while (cap < need)
		cap *= 2;
	if (cap > TS_CTL_MAX_PAYLOAD)
		cap = TS_CTL_MAX_PAYLOAD;
	d = realloc(m->data, cap);
	if (!d)
		return -ENOMEM;
	m->data = d;
	m->cap = cap;
	return 0;
}

int ts_ctl_put(struct ts_ctl_msg *m, uint16_t tag, const void *v, size_t len)
{
	uint32_t l = (uint32_t)len;
	int r;

	if (len > TS_CTL_MAX_PAYLOAD)
		return -E2BIG;
	r = reserve(m, TS_TLV_HDR + len);
	if (r < 0)
		return r;
	memcpy(m->data + m->len, &tag, 2);
	memcpy(m->data + m->len + 2, &l, 4);
	if (len)
		memcpy(m->data + m->len + TS_TLV_HDR, v, len);
	m->len += TS_TLV_HDR + len;
	return 0;
}

int ts_ctl_put_str(struct ts_ctl_msg *m, uint16_t tag, const char *s)
{
	return ts_ctl_put(m, tag, s, strlen(s));
}

int ts_ctl_put_u64(struct ts_ctl_msg *m, uint16_t tag, uint64_t v)
{
	return ts_ctl_put(m, tag, &v, sizeof(v));
}

int ts_ctl_next(const struct ts_ctl_msg *m, size_t *pos, uint16_t *tag, const uint8_t **v,
		uint32_t *len)
{
	uint32_t l;

	if (*pos == m->len)
		return 0;
	if (*pos > m->len || m->len - *pos < TS_TLV_HDR)
		return -EBADMSG;
	memcpy(tag, m->data + *pos, 2);
	memcpy(&l, m->data + *pos + 2, 4);
	if (l > m->len - *pos - TS_TLV_HDR)
		return -EBADMSG;
	*v = m->data + *pos + TS_TLV_HDR;
	*len = l;
	*pos += TS_TLV_HDR + l;
	return 1;
}

static int find(const struct ts_ctl_msg *m, uint16_t want, const uint8_t **v, uint32_t *len)
{
	size_t pos = 0;
	uint16_t tag;
	int r;

	while ((r = ts_ctl_next(m, &pos, &tag, v, len)) > 0)
		if (tag == want)
			return 0;
	return r < 0 ? r : -ENOENT;
}

int ts_ctl_get_u64(const struct ts_ctl_msg *m, uint16_t tag, uint64_t *ret)
{
	const uint8_t *v;
	uint32_t len;
	int r = find(m, tag, &v, &len);

	if (r < 0)
		return r;
	if (len != sizeof(*ret))
		return -EBADMSG;
	memcpy(ret, v, sizeof(*ret));
	return 0;
}

int ts_ctl_get_str(const struct ts_ctl_msg *m, uint16_t tag, char *buf, size_t len)
{
	const uint8_t *v;
	uint32_t l;
	int r = find(m, tag, &v, &l);

	if (r < 0)
		return r;
	if ((size_t)l >= len)
		return -ENAMETOOLONG;
	if (memchr(v, '\0', l))
		return -EBADMSG;
	memcpy(buf, v, l);
	buf[l] = '\0';
	return 0;
}

int ts_ctl_send(int fd, const struct ts_ctl_msg *m, const int *fds, size_t n_fds)
{
	uint8_t hdr[TS_CTL_HDR_LEN];
	uint32_t len = (uint32_t)m->len;
	struct iovec iov[2] = { { .iov_base = hdr, .iov_len = sizeof(hdr) },
				{ .iov_base = m->data, .iov_len = m->len } };
	union {
		char buf[CMSG_SPACE(sizeof(int) * TS_CTL_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = m->len ? 2 : 1 };
	size_t total = sizeof(hdr) + m->len, sent = 0;

	if (n_fds > TS_CTL_MAX_FDS || m->len > TS_CTL_MAX_PAYLOAD)
		return -E2BIG;
	memcpy(hdr, &len, 4);
	memcpy(hdr + 4, &m->type, 2);
	memcpy(hdr + 6, &m->flags, 2);
	memcpy(hdr + 8, &m->id, 4);
	if (n_fds) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
	}
	while (sent < total) {
		ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				/* our non-blocking socket is full: wait for room */
				struct pollfd p = { .fd = fd, .events = POLLOUT };

				poll(&p, 1, 1000);
				continue;
			}
			return -errno;
		}
		sent += (size_t)n;
		msg.msg_control = NULL;
		msg.msg_controllen = 0;
		/* advance the iovecs past what went out */
		while (n > 0 && msg.msg_iovlen > 0) {
			if ((size_t)n >= msg.msg_iov[0].iov_len) {
				n -= (ssize_t)msg.msg_iov[0].iov_len;
				msg.msg_iov++;
				msg.msg_iovlen--;
			} else {
				msg.msg_iov[0].iov_base = (char *)msg.msg_iov[0].iov_base + n;
				msg.msg_iov[0].iov_len -= (size_t)n;
				n = 0;
			}
		}
	}
	return 0;
}

void ts_ctl_conn_init(struct ts_ctl_conn *c)
{
	memset(c, 0, sizeof(*c));
}

static void close_fds(int *fds, size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	*n = 0;
}

void ts_ctl_conn_free(struct ts_ctl_conn *c)
{
	close_fds(c->fds, &c->n_fds);
	ts_ctl_msg_free(&c->cur);
	c->hdr_got = c->body_got = 0;
}

/* Take fds from a control message; more than we accept are closed at once (RT-05). */
static void take_fds(struct ts_ctl_conn *c, struct msghdr *msg)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		size_t n;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (c->n_fds < TS_CTL_MAX_FDS)
				c->fds[c->n_fds++] = fd;
			else
				close(fd);
		}
	}
}

int ts_ctl_conn_read(struct ts_ctl_conn *c, int fd, struct ts_ctl_msg *out)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 16)];
		struct cmsghdr align;
	} u;
	struct iovec iov;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

again:
	if (c->hdr_got < TS_CTL_HDR_LEN) {
		iov.iov_base = c->hdr + c->hdr_got;
		iov.iov_len = TS_CTL_HDR_LEN - c->hdr_got;
	} else {
		iov.iov_base = c->cur.data + c->body_got;
		iov.iov_len = c->cur.len - c->body_got;
	}
	msg.msg_control = u.buf;
	msg.msg_controllen = sizeof(u.buf);
	n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	take_fds(c, &msg);
	if (msg.msg_flags & MSG_CTRUNC)
		return -EBADMSG;
	if (n == 0)
		return -ECONNRESET;
	if (c->hdr_got < TS_CTL_HDR_LEN) {
		uint32_t len;

		c->hdr_got += (size_t)n;
		if (c->hdr_got < TS_CTL_HDR_LEN)
			return 0;
		memcpy(&len, c->hdr, 4);
		if (len > TS_CTL_MAX_PAYLOAD)
			return -E2BIG;
		ts_ctl_msg_init(&c->cur, 0, 0);
		memcpy(&c->cur.type, c->hdr + 4, 2);
		memcpy(&c->cur.flags, c->hdr + 6, 2);
		memcpy(&c->cur.id, c->hdr + 8, 4);
		if (c->cur.type == 0 || c->cur.type >= TS_CTL_TYPE_MAX)
			return -EBADMSG;
		if (reserve(&c->cur, len) < 0)
			return -ENOMEM;
		c->cur.len = len;
		c->body_got = 0;
		/* the body is most often there already: read it now rather than after
		 * another poll (one wake-up and two system calls fewer per message) */
		if (len > 0)
			goto again;
	} else {
		c->body_got += (size_t)n;
	}
	if (c->body_got < c->cur.len)
		return 0;
	/* complete: hand over the message and the fds that came with it */
	*out = c->cur;
	memcpy(out->fds, c->fds, sizeof(int) * c->n_fds);
	out->n_fds = c->n_fds;
	c->n_fds = 0;
	memset(&c->cur, 0, sizeof(c->cur));
	c->hdr_got = c->body_got = 0;
	return 1;
}

int ts_ctl_recv_timeout(int fd, struct ts_ctl_msg *out, int timeout_ms)
{
	struct ts_ctl_conn c;
	long long deadline = timeout_ms < 0 ? -1 : (long long)ts_now_ms() + timeout_ms;
	int r;

	ts_ctl_conn_init(&c);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int wait = -1;

		r = ts_ctl_conn_read(&c, fd, out);
		if (r != 0)
			break;
		if (deadline >= 0) {
			long long left = deadline - (long long)ts_now_ms();

			if (left <= 0) {
				r = -ETIMEDOUT;
				break;
			}
			wait = (int)left;
		}
		if (poll(&p, 1, wait) < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
	}
	ts_ctl_conn_free(&c);
	return r;
}

int ts_ctl_recv(int fd, struct ts_ctl_msg *out)
{
	return ts_ctl_recv_timeout(fd, out, -1);
}

int ts_ctl_send_error(int fd, uint32_t id, int code, const char *fmt, ...)
{
	struct ts_ctl_msg m = { 0 };
	char buf[512];
	va_list ap;
	int r;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ts_ctl_msg_init(&m, TS_CTL_ERROR, id);
	r = ts_ctl_put_u64(&m, TS_T_CODE, (uint64_t)(code < 0 ? -code : code));
	if (r == 0)
		r = ts_ctl_put_str(&m, TS_T_MSG, buf);
	if (r == 0)
		r = ts_ctl_send(fd, &m, NULL, 0);
	ts_ctl_msg_free(&m);
	return r;
}

int ts_ctl_send_simple(int fd, uint16_t type, uint32_t id)
{
	struct ts_ctl_msg m = { 0 };

	ts_ctl_msg_init(&m, type, id);
	return ts_ctl_send(fd, &m, NULL, 0);
}

struct ts_ctl_chunk {
	struct ts_ctl_chunk *next;
	size_t len;
	uint8_t data[];
};

int ts_ctl_outq_push(struct ts_ctl_outq *q, const struct ts_ctl_msg *m)
{
	struct ts_ctl_chunk *c;
	uint32_t len = (uint32_t)m->len;

	if (m->len > TS_CTL_MAX_PAYLOAD)
		return -E2BIG;
	c = malloc(sizeof(*c) + TS_CTL_HDR_LEN + m->len);
	if (!c)
		return -ENOMEM;
	c->next = NULL;
	c->len = TS_CTL_HDR_LEN + m->len;
	memcpy(c->data, &len, 4);
	memcpy(c->data + 4, &m->type, 2);
	memcpy(c->data + 6, &m->flags, 2);
	memcpy(c->data + 8, &m->id, 4);
	if (m->len)
		memcpy(c->data + TS_CTL_HDR_LEN, m->data, m->len);
	if (q->tail)
		q->tail->next = c;
	else
		q->head = c;
	q->tail = c;
	q->bytes += c->len;
	return 0;
}

int ts_ctl_outq_flush(struct ts_ctl_outq *q, int fd)
{
	while (q->head) {
		struct ts_ctl_chunk *c = q->head;
		ssize_t n = send(fd, c->data + q->head_off, c->len - q->head_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 1 : -errno;
		}
		q->head_off += (size_t)n;
		q->bytes -= (size_t)n;
		if (q->head_off < c->len)
			return 1;
		q->head = c->next;
		if (!q->head)
			q->tail = NULL;
		q->head_off = 0;
		free(c);
	}
	return 0;
}

void ts_ctl_outq_free(struct ts_ctl_outq *q)
{
	while (q->head) {
		struct ts_ctl_chunk *c = q->head;

		q->head = c->next;
		free(c);
	}
	q->tail = NULL;
	q->bytes = q->head_off = 0;
}
