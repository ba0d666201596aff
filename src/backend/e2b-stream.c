/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One streaming transfer of the e2b backend in event-loop form. curl's multi interface
 * tells us (CURLMOPT_SOCKETFUNCTION, CURLMOPT_TIMERFUNCTION) which sockets it waits on
 * and when its timer is due; both go into an epoll fd that is the handle's one pollable
 * fd, the timer as a timerfd. A step reads what is ready with epoll_wait(0) and hands it
 * to curl_multi_socket_action, so it never blocks. (curl_multi_fdset and curl_multi_poll
 * give no fd a caller could poll.)
 */
#include "e2b.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "cleanup.h"

/* Receive no more until the consumer takes some: bounds memory, pushes back on the sandbox. */
#define E2B_RX_HIGH (1U << 20)
#define E2B_UP_CHUNK (64U << 10) /* an upload queues at most this much past what curl took */

static void arm(int fd, long long ms)
{
	struct itimerspec its = { 0 };

	if (ms == 0)
		its.it_value.tv_nsec = 1; /* now: 0 would disarm */
	else if (ms > 0) {
		its.it_value.tv_sec = ms / 1000;
		its.it_value.tv_nsec = (ms % 1000) * 1000000;
	}
	timerfd_settime(fd, 0, &its, NULL);
}

static void drain(int fd)
{
	uint64_t v;

	while (read(fd, &v, sizeof(v)) > 0)
		;
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct e2b_stream *s = userp;
	struct epoll_event ev = { .data.fd = fd };

	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, fd, NULL);
		s->C->multi_assign(s->multi, fd, NULL);
		return 0;
	}
	ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
	if (socketp) {
		/* closed and reopened under the same number, epoll dropped it: add it again */
		if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 && errno == ENOENT)
			epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev);
	} else if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) == 0 || errno == EEXIST) {
		if (errno == EEXIST)
			epoll_ctl(s->epfd, EPOLL_CTL_MOD, fd, &ev);
		s->C->multi_assign(s->multi, fd, s);
	}
	return 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
	arm(((struct e2b_stream *)userp)->tfd, timeout_ms);
	return 0;
}

static void guard_touch(struct e2b_stream *s)
{
	if (s->guard_ms > 0)
		arm(s->gfd, s->guard_ms);
}

/* Is a whole envelope (or, raw, any byte) already buffered? */
static bool whole(const struct e2b_stream *s)
{
	size_t have = e2b_envelopes_pending(&s->in);
	const uint8_t *h = s->in.buf + s->in.off;

	if (s->raw)
		return have > 0;
	return have >= 5 && have - 5 >= ((uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 |
					 (uint32_t)h[3] << 8 | h[4]);
}

static size_t on_data(char *p, size_t size, size_t n, void *userdata)
{
	struct e2b_stream *s = userdata;
	size_t len = size * n;

	if (!s->status)
		ts_curl_getinfo(s->C, s->easy, CURLINFO_RESPONSE_CODE, &s->status);
	if (s->status != 200 && e2b_envelopes_pending(&s->in) + len > E2B_BODY_MAX)
		return 0; /* an error body has no business being this large */
	if (e2b_envelopes_pending(&s->in) >= E2B_RX_HIGH && whole(s)) {
		s->rx_paused = true;
		return CURL_WRITEFUNC_PAUSE;
	}
	if (e2b_envelopes_feed(&s->in, p, len) < 0)
		return 0;
	s->fresh = true;
	guard_touch(s);
	return len;
}

static size_t on_read(char *p, size_t size, size_t n, void *userdata)
{
	struct e2b_stream *s = userdata;
	size_t want = size * n, have = s->up_len - s->up_off;

	if (have == 0) {
		if (!s->up_streaming || s->up_finished)
			return 0; /* the end of the body */
		s->up_paused = true;
		return CURL_READFUNC_PAUSE;
	}
	if (want > have)
		want = have;
	memcpy(p, s->up + s->up_off, want);
	s->up_off += want;
	if (s->up_streaming && s->up_off == s->up_len)
		s->up_off = s->up_len = 0;
	guard_touch(s);
	return want;
}

static int push_header(const struct ts_curl *C, struct curl_slist **h, const char *line)
{
	struct curl_slist *n = C->slist_append(*h, line);

	if (!n)
		return -ENOMEM;
	*h = n;
	return 0;
}

static int add_fd(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* A stream with its fds, a multi and an easy handle for url, not started yet: the
 * response's options set, the request's left to the caller. hdrs is taken. */
static int stream_new(struct e2b *e, const char *url, struct curl_slist *hdrs, bool raw,
		      long long guard_ms, struct e2b_stream **ret, struct ts_error *err)
{
	struct e2b_stream *s = calloc(1, sizeof(*s));

	if (!s) {
		e->C->slist_free_all(hdrs);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	s->C = e->C;
	s->hdrs = hdrs;
	s->epfd = s->tfd = s->wfd = s->gfd = -EBADF;
	s->raw = raw;
	s->guard_ms = guard_ms;
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	s->gfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	s->wfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->epfd < 0 || s->tfd < 0 || s->gfd < 0 || s->wfd < 0 || add_fd(s->epfd, s->tfd) < 0 ||
	    add_fd(s->epfd, s->gfd) < 0 || add_fd(s->epfd, s->wfd) < 0) {
		int r = ts_err_errno(err, -errno, "epoll for a stream");

		e2b_stream_free(s);
		return r;
	}
	s->multi = s->C->multi_init();
	s->easy = e2b_easy_new(e, url, s->errbuf);
	if (!s->multi || !s->easy) {
		e2b_stream_free(s);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	s->C->multi_setopt(s->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	s->C->multi_setopt(s->multi, CURLMOPT_SOCKETDATA, s);
	s->C->multi_setopt(s->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	s->C->multi_setopt(s->multi, CURLMOPT_TIMERDATA, s);
	ts_curl_setopt(s->C, s->easy, CURLOPT_HTTPHEADER, hdrs);
	ts_curl_setopt(s->C, s->easy, CURLOPT_WRITEFUNCTION, on_data);
	ts_curl_setopt(s->C, s->easy, CURLOPT_WRITEDATA, s);
	*ret = s;
	return 0;
}

/* Hand the stream to its multi: the transfer begins on the first drive. */
static int stream_start(struct e2b_stream *s, struct e2b_stream **ret, struct ts_error *err)
{
	if (s->C->multi_add_handle(s->multi, s->easy) != CURLM_OK) {
		e2b_stream_free(s);
		return ts_err(err, -ENOMEM, "curl_multi_add_handle failed");
	}
	guard_touch(s);
	*ret = s;
	return 0;
}

int e2b_stream_open(struct e2b *e, const char *url, bool get, struct curl_slist *hdrs,
		    const void *body, size_t len, bool streaming, bool raw, long long guard_ms,
		    struct e2b_stream **ret, struct ts_error *err)
{
	struct e2b_stream *s;
	int r = stream_new(e, url, hdrs, raw, guard_ms, &s, err);

	if (r < 0)
		return r;
	s->up_streaming = streaming;
	if (body && len) {
		s->up = malloc(len);
		if (!s->up) {
			e2b_stream_free(s);
			return ts_err(err, -ENOMEM, "out of memory");
		}
		memcpy(s->up, body, len);
		s->up_len = len;
	}
	if (get) {
		ts_curl_setopt(s->C, s->easy, CURLOPT_HTTPGET, 1L);
	} else {
		ts_curl_setopt(s->C, s->easy, CURLOPT_POST, 1L);
		ts_curl_setopt(s->C, s->easy, CURLOPT_READFUNCTION, on_read);
		ts_curl_setopt(s->C, s->easy, CURLOPT_READDATA, s);
		/* a known body goes with Content-Length (Connect wants it), a pushed one
		 * chunked */
		ts_curl_setopt(s->C, s->easy, CURLOPT_POSTFIELDSIZE_LARGE,
			       streaming ? (curl_off_t)-1 : (curl_off_t)len);
	}
	return stream_start(s, ret, err);
}

/* A form part's bytes read in place from memory the caller keeps (curl_mime_data would
 * copy them). */
struct mem_part {
	const uint8_t *p;
	size_t len, off;
};

static size_t mem_read(char *buf, size_t size, size_t n, void *arg)
{
	struct mem_part *m = arg;
	size_t want = size * n;

	if (want > m->len - m->off)
		want = m->len - m->off;
	memcpy(buf, m->p + m->off, want);
	m->off += want;
	return want;
}

static int mem_seek(void *arg, curl_off_t offset, int origin)
{
	struct mem_part *m = arg;

	if (origin != SEEK_SET || offset < 0 || (size_t)offset > m->len)
		return CURL_SEEKFUNC_FAIL;
	m->off = (size_t)offset;
	return CURL_SEEKFUNC_OK;
}

static int add_part(struct e2b_stream *s, const struct e2b_form_part *fp)
{
	curl_mimepart *part = s->C->mime_addpart(s->form);
	struct mem_part *m;

	if (!part || s->C->mime_name(part, "file") != CURLE_OK ||
	    s->C->mime_filename(part, fp->filename) != CURLE_OK ||
	    s->C->mime_type(part, "application/octet-stream") != CURLE_OK)
		return -ENOMEM;
	if (fp->pushed)
		/* of a size nobody knows yet: curl sends the body chunked */
		return s->C->mime_data_cb(part, -1, on_read, NULL, NULL, s) == CURLE_OK ? 0
											: -ENOMEM;
	if (!(m = calloc(1, sizeof(*m))))
		return -ENOMEM;
	m->p = fp->data;
	m->len = fp->len;
	if (s->C->mime_data_cb(part, (curl_off_t)fp->len, mem_read, mem_seek, free, m) !=
	    CURLE_OK) {
		free(m);
		return -ENOMEM;
	}
	return 0;
}

int e2b_stream_open_form(struct e2b *e, const char *url, struct curl_slist *hdrs,
			 const struct e2b_form_part *parts, size_t n, long long guard_ms,
			 struct e2b_stream **ret, struct ts_error *err)
{
	struct e2b_stream *s;
	int r = stream_new(e, url, hdrs, true, guard_ms, &s, err);

	if (r < 0)
		return r;
	s->up_streaming = n && parts[n - 1].pushed;
	s->form = s->C->mime_init(s->easy);
	for (size_t i = 0; s->form && i < n; i++) {
		if (parts[i].pushed && i + 1 < n) {
			e2b_stream_free(s);
			return ts_err(err, -EINVAL, "only a form's last part can be pushed");
		}
		if (add_part(s, &parts[i]) < 0) {
			e2b_stream_free(s);
			return ts_err(err, -ENOMEM, "out of memory for a form's part");
		}
	}
	if (!s->form) {
		e2b_stream_free(s);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	/* curl writes the framing and the boundary, in Content-Type too */
	ts_curl_setopt(s->C, s->easy, CURLOPT_MIMEPOST, s->form);
	return stream_start(s, ret, err);
}

int e2b_stream_drive(struct e2b_stream *s, struct ts_error *err)
{
	struct epoll_event evs[16];
	int running, n, left;
	bool was_done = s->done;
	CURLMsg *m;

	s->fresh = false;
	e2b_stream_consumed(s); /* unpausing may hand over what curl held back */
	n = epoll_wait(s->epfd, evs, (int)ELEMENTSOF(evs), 0);
	if (n < 0 && errno != EINTR)
		return ts_err_errno(err, -errno, "epoll_wait");
	for (int i = 0; i < n; i++) {
		int fd = evs[i].data.fd, mask = 0;

		if (fd == s->wfd) {
			drain(fd);
			continue;
		}
		if (fd == s->gfd) {
			drain(fd);
			if (!s->done)
				s->guard_fired = true;
			continue;
		}
		if (fd == s->tfd) {
			drain(fd);
			s->C->multi_socket_action(s->multi, CURL_SOCKET_TIMEOUT, 0, &running);
			continue;
		}
		if (evs[i].events & EPOLLIN)
			mask |= CURL_CSELECT_IN;
		if (evs[i].events & EPOLLOUT)
			mask |= CURL_CSELECT_OUT;
		if (evs[i].events & (EPOLLERR | EPOLLHUP))
			mask |= CURL_CSELECT_ERR;
		s->C->multi_socket_action(s->multi, fd, mask, &running);
	}
	while ((m = s->C->multi_info_read(s->multi, &left)))
		if (m->msg == CURLMSG_DONE && m->easy_handle == s->easy) {
			s->done = true;
			s->result = m->data.result;
			if (!s->status)
				ts_curl_getinfo(s->C, s->easy, CURLINFO_RESPONSE_CODE, &s->status);
			arm(s->gfd, -1);
		}
	/* The bytes just read are off the socket and the transfer's end leaves it unwatched:
	 * when that was the stream's last (the end, the end-stream envelope and the final
	 * chunk in one read) nothing else would ever make the fd readable again, and a
	 * caller that polls before its next step would wait forever. */
	if (s->fresh || (s->done && !was_done))
		e2b_stream_wake(s);
	if (s->guard_fired && !s->done)
		return ts_err(err, -ETIMEDOUT, "the sandbox did not answer in %d s",
			      TS_BE_REPLY_MS / 1000);
	return 0;
}

int e2b_stream_wait(struct e2b_stream *s, int ms, struct ts_error *err)
{
	struct pollfd p = { .fd = s->epfd, .events = POLLIN };

	if (poll(&p, 1, ms) < 0 && errno != EINTR)
		return ts_err_errno(err, -errno, "poll");
	return e2b_stream_drive(s, err);
}

void e2b_stream_wake(struct e2b_stream *s)
{
	uint64_t one = 1;

	if (write(s->wfd, &one, sizeof(one)) < 0) {
		/* the counter is already non-zero: readable all the same */
	}
}

void e2b_stream_consumed(struct e2b_stream *s)
{
	if (s->rx_paused && e2b_envelopes_pending(&s->in) < E2B_RX_HIGH / 2) {
		s->rx_paused = false;
		s->C->easy_pause(s->easy, CURLPAUSE_CONT);
	}
}

void e2b_stream_guard_off(struct e2b_stream *s)
{
	s->guard_ms = 0;
	arm(s->gfd, -1);
}

int e2b_stream_push(struct e2b_stream *s, const void *data, size_t len, bool finish,
		    struct ts_error *err)
{
	if (s->up_finished)
		return ts_err(err, -EINVAL, "the upload is already finished");
	if (len) {
		uint8_t *grown;

		if (s->up_len - s->up_off >= E2B_UP_CHUNK)
			return ts_err(err, -EAGAIN, "a chunk is waiting to be sent");
		if (s->up_off) {
			memmove(s->up, s->up + s->up_off, s->up_len - s->up_off);
			s->up_len -= s->up_off;
			s->up_off = 0;
		}
		grown = realloc(s->up, s->up_len + len);
		if (!grown)
			return ts_err(err, -ENOMEM, "out of memory");
		s->up = grown;
		memcpy(s->up + s->up_len, data, len);
		s->up_len += len;
	}
	if (finish)
		s->up_finished = true;
	if (s->up_paused) {
		s->up_paused = false;
		s->C->easy_pause(s->easy, CURLPAUSE_CONT);
	}
	e2b_stream_wake(s);
	return 0;
}

size_t e2b_stream_queued(const struct e2b_stream *s)
{
	return s->up_len - s->up_off;
}

void e2b_stream_free(struct e2b_stream *s)
{
	if (!s)
		return;
	if (s->multi && s->easy)
		s->C->multi_remove_handle(s->multi, s->easy);
	if (s->easy)
		s->C->easy_cleanup(s->easy);
	if (s->multi)
		s->C->multi_cleanup(s->multi);
	if (s->form) /* after the easy handle that read it */
		s->C->mime_free(s->form);
	s->C->slist_free_all(s->hdrs);
	e2b_envelopes_clear(&s->in);
	free(s->up);
	ts_closep(&s->epfd);
	ts_closep(&s->tfd);
	ts_closep(&s->gfd);
	ts_closep(&s->wfd);
	free(s);
}

int e2b_stream_rpc(const struct e2b_target *t, const char *path, json_t *req, const char *user,
		   long long timeout_ms, struct e2b_stream **ret, struct ts_error *err)
{
	_cleanup_free_ char *text = json_dumps(req, JSON_COMPACT), *url = NULL;
	_cleanup_free_ uint8_t *env = NULL;
	struct curl_slist *h = NULL;
	char line[64];
	size_t len;
	int r;

	json_decref(req);
	if (!text || asprintf(&url, "%s/%s", t->envd_url, path) < 0)
		return ts_err(err, -ENOMEM, "out of memory");
	r = e2b_envelope_encode(text, strlen(text), &env, &len, err);
	if (r < 0)
		return r;
	snprintf(line, sizeof(line), "Connect-Timeout-Ms: %lld", timeout_ms);
	/* the SDK's keepalive interval (s): envd pings before a proxy cuts an idle stream */
	if (e2b_envd_headers(t, user, &h) < 0 ||
	    push_header(t->e->C, &h, "Content-Type: application/connect+json") < 0 ||
	    push_header(t->e->C, &h, "Connect-Protocol-Version: 1") < 0 ||
	    push_header(t->e->C, &h, "Keepalive-Ping-Interval: 50") < 0 ||
	    (timeout_ms > 0 && push_header(t->e->C, &h, line) < 0)) {
		t->e->C->slist_free_all(h);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	return e2b_stream_open(t->e, url, false, h, env, len, false, false, TS_BE_REPLY_MS, ret,
			       err);
}
