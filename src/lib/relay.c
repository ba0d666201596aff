/* SPDX-License-Identifier: Apache-2.0 */
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* After the command's exit: at most this much more per stream, so that a process that
 * outlived it and keeps writing cannot hold the caller. */
#define TS_RELAY_DRAIN_MAX (1U << 20)

static void chan_close(struct ts_relay_chan *c)
{
	if (c->own >= 0)
		close(c->own);
	c->own = c->from = c->to = -1;
	c->eof = true;
	c->len = c->off = 0;
	free(c->buf);
	c->buf = NULL;
}

void ts_relay_init(struct ts_relay *r)
{
	memset(r, 0, sizeof(*r));
	for (int n = 0; n < 3; n++) {
		r->ch[n] = (struct ts_relay_chan){
			.from = -1, .to = -1, .own = -1, .eof = true, .pfd_index = -1
		};
		r->sandbox_fds[n] = n;
	}
}

int ts_relay_setup(struct ts_relay *r, unsigned wanted, struct ts_error *err)
{
	ts_relay_init(r);
	for (int n = 0; n < 3; n++) {
		struct ts_relay_chan *c = &r->ch[n];
		int p[2];

		if (!(wanted & (1U << n)) || !isatty(n))
			continue;
		c->buf = malloc(TS_RELAY_BUF);
		if (!c->buf || pipe2(p, O_CLOEXEC) < 0) {
			int e = c->buf ? -errno : -ENOMEM;

			ts_relay_close(r);
			return ts_err_errno(err, e, "pipe for terminal fd %d", n);
		}
		c->eof = false;
		c->input = n == 0;
		/* our end is ours alone: non-blocking, so no read or write of it ever waits */
		if (c->input) {
			c->from = 0;
			c->to = c->own = p[1];
			r->sandbox_fds[n] = p[0];
		} else {
			c->from = c->own = p[0];
			c->to = n;
			r->sandbox_fds[n] = p[1];
		}
		fcntl(c->own, F_SETFL, O_NONBLOCK);
	}
	return 0;
}

bool ts_relay_active(const struct ts_relay *r)
{
	for (int n = 0; n < 3; n++)
		if (r->ch[n].own >= 0)
			return true;
	return false;
}

void ts_relay_handed_over(struct ts_relay *r)
{
	for (int n = 0; n < 3; n++) {
		if (r->sandbox_fds[n] != n && r->sandbox_fds[n] >= 0)
			close(r->sandbox_fds[n]);
		r->sandbox_fds[n] = -1;
	}
}

size_t ts_relay_pollfds(struct ts_relay *r, struct pollfd *pfd)
{
	size_t k = 0;

	for (int n = 0; n < 3; n++) {
		struct ts_relay_chan *c = &r->ch[n];

		c->pfd_index = -1;
		if (c->own < 0)
			continue;
		if (c->len > 0)
			pfd[k] = (struct pollfd){ .fd = c->to, .events = POLLOUT };
		else if (!c->eof && !c->paused)
			pfd[k] = (struct pollfd){ .fd = c->from, .events = POLLIN };
		else
			continue;
		c->pfd_index = (int)k++;
	}
	return k;
}

/* Read what is there into the buffer. */
static void fill(struct ts_relay_chan *c)
{
	ssize_t n = read(c->from, c->buf, TS_RELAY_BUF);

	if (n > 0) {
		c->off = 0;
		c->len = (size_t)n;
	} else if (n == 0) {
		c->eof = true;
	} else if (errno == EIO && c->input) {
		/* a background job reading its terminal (SIGTTIN ignored): wait for SIGCONT */
		c->paused = true;
	} else if (errno != EAGAIN && errno != EINTR) {
		c->eof = true;
	}
}

/* Write what is pending; a reader that went away ends the stream. */
static void flush(struct ts_relay_chan *c)
{
	ssize_t n = write(c->to, c->buf + c->off, c->len);

	if (n > 0) {
		c->off += (size_t)n;
		c->len -= (size_t)n;
	} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
		/* the terminal went away (output), or the command closed its stdin (input):
		 * the command sees EPIPE from now on, as in a pipeline */
		c->len = 0;
		c->eof = true;
		close(c->own);
		c->own = -1;
	}
}

void ts_relay_step(struct ts_relay *r, const struct pollfd *pfd)
{
	for (int n = 0; n < 3; n++) {
		struct ts_relay_chan *c = &r->ch[n];
		short ev;

		if (c->pfd_index < 0 || c->own < 0)
			continue;
		ev = pfd[c->pfd_index].revents;
		if (!ev)
			continue;
		if (c->len > 0)
			flush(c);
		else
			fill(c);
		/* the caller's stdin is done: the command reads end-of-file */
		if (c->input && c->eof && c->len == 0 && c->own >= 0)
			chan_close(c);
	}
}

void ts_relay_resume(struct ts_relay *r)
{
	for (int n = 0; n < 3; n++)
		r->ch[n].paused = false;
}

void ts_relay_finish(struct ts_relay *r)
{
	for (int n = 1; n < 3; n++) {
		struct ts_relay_chan *c = &r->ch[n];
		size_t moved = 0;

		if (c->own < 0)
			continue;
		if (c->len > 0)
			ts_write_all(c->to, c->buf + c->off, c->len);
		c->len = 0;
		while (moved < TS_RELAY_DRAIN_MAX) {
			ssize_t k = read(c->own, c->buf, TS_RELAY_BUF);

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0 || ts_write_all(c->to, c->buf, (size_t)k) < 0)
				break;
			moved += (size_t)k;
		}
	}
	ts_relay_close(r);
}

void ts_relay_close(struct ts_relay *r)
{
	ts_relay_handed_over(r);
	for (int n = 0; n < 3; n++)
		chan_close(&r->ch[n]);
}
