/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A connection to a durable sandbox's init (control protocol, ctl.h), as a handle: the
 * socket (non-blocking), what init said in its HELLO, request ids, a receive state and a
 * send queue, so that a caller never blocks on init (an event loop polls
 * ts_ctl_client_events and calls ts_ctl_client_flush / ts_ctl_client_read) or blocks
 * with a deadline (ts_ctl_client_wait, ts_ctl_client_call).
 *
 * Everything init sends is untrusted (init runs inside the sandbox): ts_ctl_conn bounds
 * sizes and fd counts, ts_ctl_client_remote_error bounds codes and sanitises messages.
 */
#include <stdbool.h>
#include <stdint.h>

#include "ctl.h"
#include "error.h"

struct ts_ctl_client {
	int fd;
	uint32_t next_id;
	/* from init's HELLO */
	uint64_t version, init_pid, idle_ms, attached;
	bool paused; /* PAUSE: its processes are stopped */
	struct ts_ctl_conn rx;
	struct ts_ctl_outq q;
};

/* How long init may take to answer one request (not a command's run time). */
#define TS_CTL_REPLY_MS 30000

/*
 * Connect to the control socket in dir/run/control.sock and say HELLO (answered within
 * hello_ms). label names the sandbox in messages. 0 with *ret, or -errno with err
 * (-EPROTO with how to restart it when init speaks another version).
 */
int ts_ctl_client_connect(const char *dir, const char *label, int hello_ms,
			  struct ts_ctl_client **ret, struct ts_error *err);

void ts_ctl_client_free(struct ts_ctl_client *c);
static inline void ts_ctl_client_freep(struct ts_ctl_client **c)
{
	ts_ctl_client_free(*c);
}

/* Nothing queued to send and no message half received: the connection may serve another
 * request from here. */
bool ts_ctl_client_idle(const struct ts_ctl_client *c);

/* A fresh request id (never 0). */
uint32_t ts_ctl_client_id(struct ts_ctl_client *c);

/* Queue m and write what the socket takes now. 0, or -errno (the peer is gone). */
int ts_ctl_client_send(struct ts_ctl_client *c, const struct ts_ctl_msg *m);

/* POLLIN, and POLLOUT while bytes wait to be sent. */
short ts_ctl_client_events(const struct ts_ctl_client *c);

/* Write queued bytes: 0 all sent, 1 some left, -errno. */
int ts_ctl_client_flush(struct ts_ctl_client *c);

/* Read once: 1 with a whole message in *out (the caller owns it), 0 for more, -errno. */
int ts_ctl_client_read(struct ts_ctl_client *c, struct ts_ctl_msg *out);

/* Flush and read until one whole message arrived, up to timeout_ms (-1: none). */
int ts_ctl_client_wait(struct ts_ctl_client *c, struct ts_ctl_msg *out, int timeout_ms,
		       struct ts_error *err);

/*
 * Send m (its id set here) and wait for the reply with that id (others are dropped: a
 * connection used this way has one request out at a time). An ERROR reply becomes
 * -errno with err (ts_ctl_client_remote_error); reply_type is what a success must be.
 * 0 with *reply (free it), or -errno.
 */
int ts_ctl_client_call(struct ts_ctl_client *c, struct ts_ctl_msg *m, uint16_t reply_type,
		       struct ts_ctl_msg *reply, struct ts_error *err);

/* An ERROR message from init as -errno with err: the code bounded to 1..4095, the message
 * sanitised for a terminal. */
int ts_ctl_client_remote_error(const struct ts_ctl_msg *m, struct ts_error *err);
