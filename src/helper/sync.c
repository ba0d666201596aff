/* SPDX-License-Identifier: Apache-2.0 */
#include "sync.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "helper-proto.h"
#include "util.h"

int ts_sync_send_ready(int fd)
{
	return ts_write_all(fd, "r", 1);
}

int ts_sync_wait_ready(int fd, struct ts_error *err)
{
	union {
		char c;
		struct ts_error e;
	} m;
	ssize_t n;

	do
		n = read(fd, &m, sizeof(m));
	while (n < 0 && errno == EINTR);
	if (n == 1 && m.c == 'r')
		return 0;
	if (n == (ssize_t)sizeof(m.e)) {
		m.e.msg[sizeof(m.e.msg) - 1] = '\0';
		*err = m.e;
		if (err->code <= 0)
			err->code = EIO;
		return -err->code;
	}
	if (n < 0)
		return ts_err_errno(err, -errno, "wait for the sandbox to start");
	return ts_err(err, -EIO, "the sandbox died before setup (%zd bytes)", n);
}

int ts_sync_send_go(int fd, char c)
{
	return ts_write_all(fd, &c, 1);
}

int ts_sync_wait_go(int fd)
{
	char c;
	ssize_t n;

	do
		n = read(fd, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0 || c != 'g')
		return -ECANCELED;
	return 0;
}

int ts_sync_send_fd(int fd, int pass)
{
	char c = 'l';
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;

	memset(&u, 0, sizeof(u));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &pass, sizeof(int));
	if (sendmsg(fd, &msg, MSG_NOSIGNAL) < 0)
		return -errno;
	return 0;
}

int ts_sync_recv_fd(int fd, struct ts_error *err)
{
	union {
		char c;
		struct ts_error e;
	} m;
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	int got = -1;
	ssize_t n;

	do
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return ts_err_errno(err, -errno, "wait for the proxy's socket");
	cm = CMSG_FIRSTHDR(&msg);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
	    cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&got, CMSG_DATA(cm), sizeof(int));
	if (n == 1 && m.c == 'l' && got >= 0 && !(msg.msg_flags & MSG_CTRUNC))
		return got;
	if (got >= 0)
		close(got);
	if (n == (ssize_t)sizeof(m.e)) {
		m.e.msg[sizeof(m.e.msg) - 1] = '\0';
		*err = m.e;
		if (err->code <= 0)
			err->code = EIO;
		return -err->code;
	}
	return ts_err(err, -EIO, "the sandbox died before it made the proxy's socket");
}

void ts_sync_send_error(int fd, const struct ts_error *err)
{
	(void)!write(fd, err, sizeof(*err));
}

int ts_sync_wait_child(int fd, struct ts_error *err)
{
	struct ts_error child;
	ssize_t n;

	do
		n = read(fd, &child, sizeof(child));
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return 0;
	if (n < 0)
		return ts_err_errno(err, -errno, "read setup status of the sandbox");
	if ((size_t)n != sizeof(child))
		return ts_err(err, -EIO, "short setup status from the sandbox (%zd bytes)", n);
	child.msg[sizeof(child.msg) - 1] = '\0';
	*err = child;
	if (err->code <= 0)
		err->code = EIO;
	return -err->code;
}

int ts_sync_report(int sync_fd, int status, pid_t pid, int pidfd, const struct ts_error *err)
{
	struct ts_helper_report rep = {
		.version = TS_HELPER_PROTO_VERSION,
		.status = status,
		.pid = pid,
	};
	struct iovec iov = { .iov_base = &rep, .iov_len = sizeof(rep) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (err)
		rep.err = *err;
	if (pidfd >= 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pidfd, sizeof(int));
	}
	if (sendmsg(sync_fd, &msg, MSG_NOSIGNAL) < 0)
		return -errno;
	return 0;
}
