/* SPDX-License-Identifier: Apache-2.0 */
/*
 * serve's HTTP layer (src/server/http.c, loop.c) against raw sockets: routing and
 * parameters, chunked request bodies, the body bound, keep-alive, JSON depth, streamed
 * replies (flushed at once, ended with the terminating chunk, or dropped without it), the
 * client going away mid-stream, and many connections at once. The server runs in a forked
 * child; the parent is the client.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "http.h"
#include "loop.h"
#include "tap.h"

struct test_srv {
	struct ts_loop *loop;
	unsigned gone; /* streams whose client went away */
	struct ts_stream *ticking;
	struct ts_loop_timer *tick;
	int ticks;
	bool abort_at_end;
};

static void echo(void *ctx, struct ts_req *r)
{
	size_t n;
	const uint8_t *b = ts_req_body(r, &n);

	ts_req_add_header(r, "X-Param", ts_req_param(r, 0) ? ts_req_param(r, 0) : "-");
	ts_req_reply(r, 200, "application/octet-stream", b, n);
}

static void json_route(void *ctx, struct ts_req *r)
{
	struct ts_error err = { 0 };
	json_t *j = ts_req_json(r, &err);

	if (!j) {
		ts_req_reply(r, 400, "text/plain", err.msg, strlen(err.msg));
		return;
	}
	ts_req_reply_json(r, 200, json_pack("{s:b}", "object", json_is_object(j)));
}

static void gone_count(void *ctx, struct ts_req *r)
{
	struct test_srv *t = ctx;

	ts_req_reply_json(r, 200, json_pack("{s:i}", "gone", (int)t->gone));
}

static void on_close(void *userdata, bool client_gone)
{
	struct test_srv *t = userdata;

	if (client_gone)
		t->gone++;
	t->ticking = NULL;
	ts_loop_del_timer(t->tick);
	t->tick = NULL;
}

static void tick(void *userdata)
{
	struct test_srv *t = userdata;
	char line[32];
	int n;

	if (!t->ticking)
		return;
	if (t->ticks == 3) {
		if (t->abort_at_end)
			ts_stream_abort(t->ticking);
		else
			ts_stream_end(t->ticking);
		return;
	}
	n = snprintf(line, sizeof(line), "tick %d\n", t->ticks++);
	ts_stream_write(t->ticking, line, (size_t)n);
	ts_loop_timer_set(t->tick, ts_loop_now(t->loop) + 50);
}

/* /stream/end, /stream/abort: three lines 50 ms apart, then end or drop; /stream/hold:
 * one line, then nothing (the client leaves). */
static void stream_route(void *ctx, struct ts_req *r)
{
	struct test_srv *t = ctx;
	struct ts_error err = { 0 };
	const char *how = ts_req_param(r, 0);

	t->ticking = ts_req_stream(r, 200, "text/plain", on_close, t, &err);
	if (!t->ticking)
		return;
	t->ticks = 0;
	t->abort_at_end = !strcmp(how, "abort");
	if (!strcmp(how, "hold")) {
		ts_stream_write(t->ticking, "held\n", 5);
		return;
	}
	t->tick = ts_loop_add_timer(t->loop, ts_loop_now(t->loop), tick, t);
}

/* /defer/MS: the reply comes MS ms later, from a timer (ts_req_defer). */
struct deferred {
	struct test_srv *t;
	struct ts_req *req;
	struct ts_loop_timer *timer;
	int ms;
};

static void deferred_gone(void *userdata)
{
	struct deferred *d = userdata;

	d->req = NULL;
}

static void deferred_fire(void *userdata)
{
	struct deferred *d = userdata;

	if (d->req) {
		char body[64];
		int n = snprintf(body, sizeof(body), "late %d", d->ms);

		ts_req_reply(d->req, 200, "text/plain", body, (size_t)n);
	}
	ts_loop_del_timer(d->timer);
	free(d);
}

static void defer_route(void *ctx, struct ts_req *r)
{
	struct test_srv *t = ctx;
	struct deferred *d = calloc(1, sizeof(*d));

	if (!d) {
		ts_req_reply(r, 500, "text/plain", "oom", 3);
		return;
	}
	d->t = t;
	d->req = r;
	d->ms = atoi(ts_req_param(r, 0));
	d->timer = ts_loop_add_timer(t->loop, ts_loop_now(t->loop) + d->ms, deferred_fire, d);
	if (ts_req_defer(r, deferred_gone, d) < 0 || ts_req_defer(r, deferred_gone, d) != -EALREADY)
		ts_req_reply(r, 500, "text/plain", "defer", 5);
}

/* /quit: the loop ends, and the listener is freed with whatever is still deferred. */
static void quit_route(void *ctx, struct ts_req *r)
{
	struct test_srv *t = ctx;

	ts_req_reply(r, 200, "text/plain", "bye", 3);
	ts_loop_quit(t->loop);
}

static const struct ts_route routes[] = {
	{ "POST", "/echo/*", echo, NULL, 64 },	       { "POST", "/echo-big", echo, NULL, 0 },
	{ "POST", "/json", json_route, NULL, 0 },      { "GET", "/gone", gone_count, NULL, 0 },
	{ "GET", "/stream/*", stream_route, NULL, 0 }, { "GET", "/defer/*", defer_route, NULL, 0 },
	{ "GET", "/quit", quit_route, NULL, 0 },       { 0 },
};

static int serve_child(int port_pipe)
{
	const struct ts_route *const tables[] = { routes, NULL };
	struct test_srv t = { 0 };
	struct ts_http_listener *l;
	struct ts_error err = { 0 };
	const char *addr;

	if (ts_loop_new(&t.loop, &err) < 0 ||
	    ts_http_listen(t.loop, "127.0.0.1:0", -1, tables, NULL, &t, &l, &err) < 0) {
		fprintf(stderr, "listen: %s\n", err.msg);
		return 1;
	}
	addr = ts_http_listener_addr(l);
	if (write(port_pipe, addr, strlen(addr) + 1) < 0)
		return 1;
	close(port_pipe);
	ts_loop_run(t.loop, &err);
	/* a deferred request still waiting: answered 503 here, its owner told (on_gone) */
	ts_http_listener_free(l);
	ts_loop_free(t.loop);
	return 0;
}

static int port;

static int dial(void)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&in, sizeof(in)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void send_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);

		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* Read one response (headers + body by Content-Length or chunked) into buf. Returns the
 * status, sets *body to its start; *clean says a chunked body ended with its 0 chunk. */
static int read_response(int fd, char *buf, size_t size, char **body, size_t *body_len, bool *clean)
{
	size_t len = 0;
	char *end = NULL;
	int status = -1;

	*clean = false;
	while (!end) {
		ssize_t n = read(fd, buf + len, size - 1 - len);

		if (n <= 0)
			return -1;
		len += (size_t)n;
		buf[len] = '\0';
		end = strstr(buf, "\r\n\r\n");
	}
	sscanf(buf, "HTTP/1.1 %d", &status);
	*body = end + 4;
	if (strcasestr(buf, "Transfer-Encoding: chunked")) {
		/* de-chunk in place until the 0 chunk or EOF */
		char *out = *body, *p = *body;

		for (;;) {
			char *nl;
			size_t chunk;

			while (!(nl = strstr(p, "\r\n"))) {
				ssize_t n = read(fd, buf + len, size - 1 - len);

				if (n <= 0) {
					*body_len = (size_t)(out - *body);
					return status;
				}
				len += (size_t)n;
				buf[len] = '\0';
			}
			chunk = strtoul(p, NULL, 16);
			while ((size_t)(buf + len - (nl + 2)) < chunk + 2) {
				ssize_t n = read(fd, buf + len, size - 1 - len);

				if (n <= 0) {
					*body_len = (size_t)(out - *body);
					return status;
				}
				len += (size_t)n;
				buf[len] = '\0';
			}
			if (chunk == 0) {
				*clean = true;
				break;
			}
			memmove(out, nl + 2, chunk);
			out += chunk;
			p = nl + 2 + chunk + 2;
			/* keep what follows contiguous after out */
			memmove(out, p, (size_t)(buf + len - p) + 1);
			len = (size_t)(out - buf) + strlen(out);
			p = out;
		}
		*body_len = (size_t)(out - *body);
		return status;
	}
	{
		const char *cl = strcasestr(buf, "Content-Length:");
		size_t want = cl ? strtoul(cl + 15, NULL, 10) : 0;

		while ((size_t)(buf + len - *body) < want) {
			ssize_t n = read(fd, buf + len, size - 1 - len);

			if (n <= 0)
				break;
			len += (size_t)n;
			buf[len] = '\0';
		}
		*body_len = want;
	}
	return status;
}

static void send_str(int fd, const char *s)
{
	send_all(fd, s, strlen(s));
}

static int request(int fd, const char *req, char *buf, size_t size, char **body, size_t *n)
{
	bool clean;

	send_all(fd, req, strlen(req));
	return read_response(fd, buf, size, body, n, &clean);
}

int main(void)
{
	static char buf[1 << 20];
	int pp[2], fd, status;
	char addr[64] = "", *body;
	size_t n;
	bool clean;
	pid_t child;

	if (getenv("TEST_HTTP_SERVE")) /* by hand: just the server, its address on stdout */
		return serve_child(STDOUT_FILENO);
	plan(0);
	signal(SIGPIPE, SIG_IGN);
	if (pipe(pp) < 0)
		return 1;
	child = fork();
	if (child == 0) {
		close(pp[0]);
		_exit(serve_child(pp[1]));
	}
	close(pp[1]);
	if (read(pp[0], addr, sizeof(addr) - 1) <= 0 || !strchr(addr, ':')) {
		ok(0, "the server listens");
		return exit_status();
	}
	port = atoi(strrchr(addr, ':') + 1);
	ok(port > 0, "listens on a chosen port (%s)", addr);

	fd = dial();
	status = request(fd, "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof(buf), &body, &n);
	ok(status == 404 && strstr(body, "\"code\":404"), "unknown path: 404 JSON (%d)", status);
	status = request(fd,
			 "POST /echo/abc HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
			 "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
			 buf, sizeof(buf), &body, &n);
	ok(status == 200 && n == 11 && !memcmp(body, "hello world", 11),
	   "chunked body reassembled, same connection kept alive (%d, %zu)", status, n);
	ok(strstr(buf, "X-Param: abc") != NULL, "a * segment of the pattern is a parameter");
	status = request(
		fd,
		"POST /echo/abc HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
		"0123456789012345678901234567890123456789012345678901234567890123456789012345"
		"678901234567890123456789",
		buf, sizeof(buf), &body, &n);
	ok(status == 413 && strstr(body, "larger than 64"), "over the route's bound: 413 (%d)",
	   status);
	close(fd);

	fd = dial();
	status = request(fd,
			 "POST /json HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n{\"a\":", buf,
			 sizeof(buf), &body, &n);
	ok(status == 400 && strstr(body, "malformed JSON"), "malformed JSON is an error (%d)",
	   status);
	{
		char deep[600], req[800];
		int k;

		for (k = 0; k < 100; k++)
			deep[k] = '[';
		for (; k < 200; k++)
			deep[k] = ']';
		deep[k] = '\0';
		snprintf(req, sizeof(req),
			 "POST /json HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n%s",
			 strlen(deep), deep);
		status = request(fd, req, buf, sizeof(buf), &body, &n);
		ok(status == 400 && strstr(body, "deeper"), "JSON nested 100 deep refused (%d)",
		   status);
	}
	status = request(fd, "POST /json HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", buf,
			 sizeof(buf), &body, &n);
	ok(status == 200 && strstr(body, "\"object\":true"), "an empty body is {} (%d)", status);
	close(fd);

	fd = dial();
	send_str(fd, "GET /stream/end HTTP/1.1\r\nHost: x\r\n\r\n");
	status = read_response(fd, buf, sizeof(buf), &body, &n, &clean);
	ok(status == 200 && n == 21 && !memcmp(body, "tick 0\ntick 1\ntick 2\n", 21) && clean,
	   "a stream: every piece in order, then the terminating chunk (%d, %zu)", status, n);
	status = request(fd, "GET /gone HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof(buf), &body, &n);
	ok(status == 200, "the connection is reused after a stream (%d)", status);
	close(fd);

	fd = dial();
	send_str(fd, "GET /stream/abort HTTP/1.1\r\nHost: x\r\n\r\n");
	status = read_response(fd, buf, sizeof(buf), &body, &n, &clean);
	ok(status == 200 && n == 21 && !clean,
	   "an aborted stream ends without the terminating chunk (%zu bytes, clean %d)", n, clean);
	close(fd);

	fd = dial();
	send_str(fd, "GET /stream/hold HTTP/1.1\r\nHost: x\r\n\r\n");
	{
		size_t got = 0;
		ssize_t k;

		/* the headers and the piece may come in separate segments */
		while (!memmem(buf, got, "held", 4) &&
		       (k = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
			got += (size_t)k;
		ok(memmem(buf, got, "held", 4) != NULL,
		   "a stream's first piece is flushed before it ends");
	}
	close(fd);
	/* the server notices when it next writes: the held stream is suspended, so the
	 * client going away shows up only at shutdown; a ticking one notices at once */
	fd = dial();
	send_str(fd, "GET /stream/end HTTP/1.1\r\nHost: x\r\n\r\n");
	usleep(20000);
	close(fd);
	usleep(300000);
	fd = dial();
	status = request(fd, "GET /gone HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof(buf), &body, &n);
	ok(status == 200 && strstr(body, "\"gone\":") && !strstr(body, "\"gone\":0"),
	   "a client leaving mid-stream closes the stream as gone (%.*s)", (int)n, body);
	close(fd);

	/* a deferred reply: other requests are answered meanwhile, then it comes on its
	 * connection, which stays usable */
	fd = dial();
	send_str(fd, "GET /defer/400 HTTP/1.1\r\nHost: x\r\n\r\n");
	{
		int fd2 = dial();
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		status = request(fd2, "GET /gone HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof(buf),
				 &body, &n);
		ok(status == 200 && poll(&pfd, 1, 0) == 0,
		   "while a reply is deferred another request is answered (%d)", status);
		close(fd2);
	}
	status = read_response(fd, buf, sizeof(buf), &body, &n, &clean);
	ok(status == 200 && n == 8 && !memcmp(body, "late 400", 8),
	   "the deferred reply comes when given (%d, %.*s)", status, (int)n, body);
	status = request(fd, "GET /defer/10 HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof(buf), &body,
			 &n);
	ok(status == 200 && n == 7 && !memcmp(body, "late 10", 7),
	   "the connection is reused after a deferred reply (%d)", status);
	close(fd);
	/* a client that leaves before its deferred reply: the reply goes nowhere, the server
	 * goes on */
	fd = dial();
	send_str(fd, "GET /defer/200 HTTP/1.1\r\nHost: x\r\n\r\n");
	usleep(20000);
	close(fd);
	usleep(400000);
	fd = dial();
	status = request(fd, "GET /defer/1 HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof(buf), &body,
			 &n);
	ok(status == 200 && n == 6, "after a client left mid-deferral the server answers (%d)",
	   status);
	close(fd);

	{
		enum {
			N = 300
		};
		static int fds[N];
		int answered = 0;

		for (int i = 0; i < N; i++) {
			fds[i] = dial();
			send_str(fds[i],
				 "POST /echo/x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok");
		}
		for (int i = 0; i < N; i++) {
			bool c;

			if (fds[i] >= 0 &&
			    read_response(fds[i], buf, sizeof(buf), &body, &n, &c) == 200 && n == 2)
				answered++;
			close(fds[i]);
		}
		ok(answered == N, "%d connections at once, all answered (%d)", N, answered);
	}

	/* the server stops with a reply deferred: the client gets 503, the server exits
	 * cleanly (the deferral's owner let go of the request, nothing used after free) */
	fd = dial();
	send_str(fd, "GET /defer/100000 HTTP/1.1\r\nHost: x\r\n\r\n");
	usleep(100000);
	{
		int fd2 = dial();

		status = request(fd2, "GET /quit HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof(buf),
				 &body, &n);
		close(fd2);
	}
	{
		int st = read_response(fd, buf, sizeof(buf), &body, &n, &clean);
		int ws = -1;

		waitpid(child, &ws, 0);
		ok(status == 200 && st == 503 && strstr(body, "shutting down"),
		   "a reply still deferred when the listener goes is answered 503 (%d)", st);
		ok(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "and the server exits cleanly (%d)", ws);
	}
	close(fd);
	return exit_status();
}
