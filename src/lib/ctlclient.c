/* SPDX-License-Identifier: Apache-2.0 */
#include "ctlclient.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "launch.h"
#include "util.h"

void ts_ctl_client_free(struct ts_ctl_client *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	ts_ctl_conn_free(&c->rx);
	ts_ctl_outq_free(&c->q);
	free(c);
}

bool ts_ctl_client_idle(const struct ts_ctl_client *c)
{
	return c->q.bytes == 0 && c->rx.hdr_got == 0 && c->rx.body_got == 0 && c->rx.n_fds == 0;
}

uint32_t ts_ctl_client_id(struct ts_ctl_client *c)
{
	if (++c->next_id == 0)
		c->next_id = 1;
	return c->next_id;
}

int ts_ctl_client_send(struct ts_ctl_client *c, const struct ts_ctl_msg *m)
{
	int r = ts_ctl_outq_push(&c->q, m);

	if (r < 0)
		return r;
	r = ts_ctl_outq_flush(&c->q, c->fd);
	return r < 0 ? r : 0;
}

short ts_ctl_client_events(const struct ts_ctl_client *c)
{
	return (short)(POLLIN | (c->q.bytes ? POLLOUT : 0));
}

int ts_ctl_client_flush(struct ts_ctl_client *c)
{
	return ts_ctl_outq_flush(&c->q, c->fd);
}

int ts_ctl_client_read(struct ts_ctl_client *c, struct ts_ctl_msg *out)
{
	return ts_ctl_conn_read(&c->rx, c->fd, out);
}

int ts_ctl_client_wait(struct ts_ctl_client *c, struct ts_ctl_msg *out, int timeout_ms,
		       struct ts_error *err)
{
	long long deadline = timeout_ms < 0 ? -1 : (long long)ts_now_ms() + timeout_ms;

	for (;;) {
		struct pollfd p = { .fd = c->fd, .events = ts_ctl_client_events(c) };
		int r = ts_ctl_client_flush(c), wait = -1;

		if (r < 0)
			return ts_err_errno(err, r, "send to the sandbox");
		r = ts_ctl_client_read(c, out);
		if (r > 0)
			return 0;
		if (r < 0)
			return ts_err_errno(err, r, "the sandbox's answer");
		if (deadline >= 0) {
			long long left = deadline - (long long)ts_now_ms();

			if (left <= 0)
				return ts_err(err, -ETIMEDOUT,
					      "the sandbox did not answer in %d ms", timeout_ms);
			wait = (int)left;
		}
		if (poll(&p, 1, wait) < 0 && errno != EINTR)
			return ts_err_errno(err, -errno, "poll");
	}
}

int ts_ctl_client_remote_error(const struct ts_ctl_msg *m, struct ts_error *err)
{
	uint64_t code = EIO;
	char msg[400] = "";

	ts_ctl_get_u64(m, TS_T_CODE, &code);
	ts_ctl_get_str(m, TS_T_MSG, msg, sizeof(msg));
	ts_sanitize_text(msg);
	if (code == 0 || code > 4095)
		code = EIO;
	return ts_err(err, -(int)code, "%s", msg[0] ? msg : "error from the sandbox");
}

int ts_ctl_client_call(struct ts_ctl_client *c, struct ts_ctl_msg *m, uint16_t reply_type,
		       struct ts_ctl_msg *reply, struct ts_error *err)
{
	int r;

	m->id = ts_ctl_client_id(c);
	r = ts_ctl_client_send(c, m);
	if (r < 0)
		return ts_err_errno(err, r, "send to the sandbox");
	for (;;) {
		r = ts_ctl_client_wait(c, reply, TS_CTL_REPLY_MS, err);
		if (r < 0)
			return r;
		if (reply->id == m->id)
			break;
		ts_ctl_msg_free(reply); /* an earlier request's late answer */
	}
	if (reply->type == TS_CTL_ERROR) {
		r = ts_ctl_client_remote_error(reply, err);
		ts_ctl_msg_free(reply);
		return r;
	}
	if (reply->type != reply_type) {
		ts_ctl_msg_free(reply);
		return ts_err(err, -EPROTO, "unexpected answer (type %u) from the sandbox",
			      (unsigned)reply->type);
	}
	return 0;
}

int ts_ctl_client_connect(const char *dir, const char *label, int hello_ms,
			  struct ts_ctl_client **ret, struct ts_error *err)
{
	_cleanup_(ts_ctl_client_freep) struct ts_ctl_client *c = calloc(1, sizeof(*c));
	_cleanup_close_ int runfd = -EBADF;
	_cleanup_(ts_ctl_msg_freep) struct ts_ctl_msg m = { 0 }, reply = { 0 };
	struct sockaddr_un sa;
	char run[4200];
	int r;

	if (!c)
		return ts_err(err, -ENOMEM, "out of memory");
	c->fd = -1;
	snprintf(run, sizeof(run), "%s/run", dir);
	runfd = open(run, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (runfd < 0)
		return ts_err_errno(err, -errno, "sandbox `%s`: open `%s`", label, run);
	if (ts_unix_addr(&sa, run, runfd, "control.sock") < 0)
		return ts_err(err, -ENAMETOOLONG, "control socket path too long");
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return ts_err_errno(err, -errno, "socket");
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return ts_err_errno(err, -errno, "sandbox `%s` is not answering", label);
	fcntl(c->fd, F_SETFL, O_NONBLOCK);
	ts_ctl_conn_init(&c->rx);
	ts_ctl_msg_init(&m, TS_CTL_HELLO, ts_ctl_client_id(c));
	/* every version from the oldest init still about to ours (ctl.h, HELLO) */
	r = ts_ctl_put_u64(&m, TS_T_VERSION, TS_CTL_VERSION_MIN);
	if (r == 0)
		r = ts_ctl_put_u64(&m, TS_T_VERSION_MAX, TS_CTL_VERSION);
	if (r == 0)
		r = ts_ctl_client_send(c, &m);
	if (r < 0)
		return ts_err_errno(err, r, "sandbox `%s`: hello", label);
	r = ts_ctl_client_wait(c, &reply, hello_ms, err);
	if (r < 0)
		return ts_err_prefix(err, r, "sandbox `%s`: hello", label);
	if (reply.type == TS_CTL_ERROR) {
		char msg[400];

		ts_ctl_client_remote_error(&reply, err);
		snprintf(msg, sizeof(msg), "%.399s", err->msg);
		return ts_err(err, -EPROTO,
			      "sandbox `%s` was started by another version of toren-sandbox (%s): "
			      "`toren-sandbox restart %s` starts it again with this one (its "
			      "processes end, its files stay)",
			      label, msg, label);
	}
	if (reply.type != TS_CTL_HELLO || ts_ctl_get_u64(&reply, TS_T_VERSION, &c->version) < 0 ||
	    c->version < TS_CTL_VERSION_MIN || c->version > TS_CTL_VERSION)
		return ts_err(err, -EPROTO,
			      "sandbox `%s` speaks control protocol %llu, this toren-sandbox %d: "
			      "another version started it; `toren-sandbox restart %s` starts it "
			      "again with this one (its processes end, its files stay)",
			      label, (unsigned long long)c->version, TS_CTL_VERSION, label);
	ts_ctl_get_u64(&reply, TS_T_PID, &c->init_pid);
	ts_ctl_get_u64(&reply, TS_T_IDLE_MS, &c->idle_ms);
	ts_ctl_get_u64(&reply, TS_T_ATTACHED, &c->attached);
	{
		uint64_t paused = 0;

		ts_ctl_get_u64(&reply, TS_T_PAUSED, &paused);
		c->paused = paused != 0;
	}
	*ret = TAKE_PTR(c);
	return 0;
}
