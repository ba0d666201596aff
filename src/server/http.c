// SPDX-License-Identifier: Apache-2.0
/*
 * libmicrohttpd under serve's own loop. MHD runs in "external epoll" mode: its epoll fd
 * sits in our loop and MHD_run() is called when it is readable or MHD's own timeout is
 * due, so MHD never has a thread of its own and every callback runs on the loop's thread.
 *
 * A request's life: MHD calls access() first with the headers (we match the route and
 * make a struct ts_req), then with each piece of the body (kept, bounded, or handed to
 * the route's on_data), then once more with nothing: the handler runs and queues exactly
 * one reply. A streamed reply is a content-reader callback over the stream's queue: when
 * the queue is empty the connection is suspended (MHD polls nothing for it) and a write,
 * end or abort resumes it. A deferred reply suspends the connection in the handler; the
 * later whole reply is queued on the suspended connection (MHD allows that at any moment)
 * and resumes it. completed() ends every request, whatever happened: it runs the stream's
 * on_close or the deferral's on_gone and frees everything.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "http.h"
#include "loop.h"
#include "mhd-dl.h"
#include "util.h"

#define HTTP_MAX_PARAMS 4
#define HTTP_JSON_DEPTH 64
#define HTTP_STREAM_BLOCK (64U << 10)

struct ts_http_listener {
	const struct ts_mhd *M; /* libmicrohttpd (mhd-dl.h) */
	struct ts_loop *loop;
	struct MHD_Daemon *d;
	int fd; /* the listening socket (MHD closes it on stop) */
	struct ts_loop_fd *watch;
	struct ts_loop_timer *timer;
	const struct ts_route *const *tables;
	void (*not_found)(void *ctx, struct ts_req *req);
	void *ctx;
	char addr[160];
	char unix_path[108];
	bool local;
	bool resumed;		   /* a connection was resumed: MHD must run to pick it up */
	struct ts_stream *streams; /* open ones, to abort at shutdown */
	struct ts_req *deferred;   /* suspended awaiting their reply, to answer at shutdown */
};

struct hdr {
	char *name, *value;
};

struct ts_req {
	struct ts_http_listener *l;
	struct MHD_Connection *conn;
	const struct ts_route *route; /* NULL: not found */
	char method[16];
	char *path;
	char *params[HTTP_MAX_PARAMS];
	uint8_t *body;
	size_t len, cap, max;
	bool too_big, failed, replied;
	unsigned status;
	int (*on_data)(void *userdata, const uint8_t *p, size_t n);
	void *on_data_userdata;
	json_t *json;
	struct hdr *hdrs; /* response headers to add */
	size_t n_hdrs;
	void *userdata;
	void (*free_userdata)(void *);
	struct ts_stream *stream;
	char peer[64];
	bool deferred; /* suspended until its reply; in the listener's list */
	void (*on_gone)(void *userdata);
	void *gone_userdata;
	struct ts_req *dprev, *dnext;
};

struct ts_stream {
	struct ts_req *req;
	uint8_t *buf;
	size_t off, len, cap;
	bool ended, aborted, suspended, closed;
	bool hung_up;		/* the client closed its end while the stream was quiet */
	struct ts_loop_fd *hup; /* watches for that while suspended */
	void (*on_close)(void *userdata, bool client_gone);
	void (*on_drain)(void *userdata);
	void *userdata;
	struct ts_stream *prev, *next; /* in the listener's list */
};

/* --- routing ----------------------------------------------------------------------- */

/* Does path match pattern? Fills params (allocated) for each "*". */
static bool route_match(const char *pattern, const char *path, char **params)
{
	unsigned n = 0;

	while (*pattern && *path) {
		if (pattern[0] == '*' && pattern[1] == '*' && pattern[2] == '\0') {
			if (n < HTTP_MAX_PARAMS)
				params[n] = strdup(path);
			return n < HTTP_MAX_PARAMS && params[n];
		}
		if (*pattern == '*') {
			size_t seg = strcspn(path, "/");

			if (seg == 0 || n >= HTTP_MAX_PARAMS)
				goto no;
			params[n] = strndup(path, seg);
			if (!params[n++])
				goto no;
			pattern++;
			path += seg;
			continue;
		}
		if (*pattern != *path)
			goto no;
		pattern++;
		path++;
	}
	if (!strcmp(pattern, "/**") || !strcmp(pattern, "**")) {
		if (n >= HTTP_MAX_PARAMS || !(params[n] = strdup("")))
			goto no;
		return true;
	}
	if (*pattern == '\0' && *path == '\0')
		return true;
no:
	for (unsigned i = 0; i < HTTP_MAX_PARAMS; i++) {
		free(params[i]);
		params[i] = NULL;
	}
	return false;
}

static const struct ts_route *route_find(struct ts_http_listener *l, const char *method,
					 const char *path, char **params)
{
	for (const struct ts_route *const *t = l->tables; *t; t++)
		for (const struct ts_route *r = *t; r->pattern; r++)
			if ((!r->method || !strcmp(r->method, method)) &&
			    route_match(r->pattern, path, params))
				return r;
	return NULL;
}

/* --- requests ------------------------------------------------------------------------ */

static void defer_unlink(struct ts_req *r)
{
	if (!r->deferred)
		return;
	r->deferred = false;
	if (r->dprev)
		r->dprev->dnext = r->dnext;
	else
		r->l->deferred = r->dnext;
	if (r->dnext)
		r->dnext->dprev = r->dprev;
	r->dprev = r->dnext = NULL;
}

static void req_free(struct ts_req *r)
{
	if (!r)
		return;
	if (r->deferred) {
		defer_unlink(r);
		if (r->on_gone)
			r->on_gone(r->gone_userdata);
	}
	if (r->free_userdata)
		r->free_userdata(r->userdata);
	for (unsigned i = 0; i < HTTP_MAX_PARAMS; i++)
		free(r->params[i]);
	for (size_t i = 0; i < r->n_hdrs; i++) {
		free(r->hdrs[i].name);
		free(r->hdrs[i].value);
	}
	free(r->hdrs);
	if (r->json)
		json_decref(r->json);
	free(r->body);
	free(r->path);
	free(r);
}

const char *ts_req_method(const struct ts_req *r)
{
	return r->method;
}

const char *ts_req_path(const struct ts_req *r)
{
	return r->path;
}

const char *ts_req_param(const struct ts_req *r, unsigned i)
{
	return i < HTTP_MAX_PARAMS ? r->params[i] : NULL;
}

const char *ts_req_header(const struct ts_req *r, const char *name)
{
	return r->l->M->lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *ts_req_query(const struct ts_req *r, const char *name)
{
	return r->l->M->lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

struct hdr_walk {
	const char *prefix;
	void (*fn)(void *userdata, const char *name, const char *value);
	void *userdata;
};

static enum MHD_Result hdr_walk_one(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	struct hdr_walk *w = cls;

	if (!w->prefix || !strncasecmp(key, w->prefix, strlen(w->prefix)))
		w->fn(w->userdata, key, value ? value : "");
	return MHD_YES;
}

void ts_req_headers(const struct ts_req *r, const char *prefix,
		    void (*fn)(void *userdata, const char *name, const char *value), void *userdata)
{
	struct hdr_walk w = { prefix, fn, userdata };

	r->l->M->get_connection_values(r->conn, MHD_HEADER_KIND, hdr_walk_one, &w);
}

const uint8_t *ts_req_body(const struct ts_req *r, size_t *len)
{
	*len = r->len;
	return r->body ? r->body : (const uint8_t *)"";
}

bool ts_http_json_depth_ok(const uint8_t *p, size_t n, unsigned limit)
{
	return ts_json_depth_ok((const char *)p, n, limit);
}

json_t *ts_req_json(struct ts_req *r, struct ts_error *err)
{
	json_error_t jerr;
	size_t n = r->len;

	if (r->json)
		return r->json;
	while (n && strchr(" \t\r\n", r->body[n - 1]))
		n--;
	if (n == 0) {
		r->json = json_object();
		return r->json;
	}
	if (!ts_http_json_depth_ok(r->body, r->len, HTTP_JSON_DEPTH)) {
		ts_err(err, -EINVAL, "JSON nested deeper than %d levels", HTTP_JSON_DEPTH);
		return NULL;
	}
	r->json = json_loadb((const char *)r->body, r->len, JSON_REJECT_DUPLICATES, &jerr);
	if (!r->json)
		ts_err(err, -EINVAL, "malformed JSON at line %d column %d: %s", jerr.line,
		       jerr.column, jerr.text);
	return r->json;
}

const char *ts_req_peer(const struct ts_req *r)
{
	return r->peer;
}

void ts_req_on_data(struct ts_req *r, int (*on_data)(void *userdata, const uint8_t *p, size_t n),
		    void *userdata)
{
	r->on_data = on_data;
	r->on_data_userdata = userdata;
}

bool ts_req_failed(const struct ts_req *r)
{
	return r->failed || r->too_big;
}

void ts_req_set_userdata(struct ts_req *r, void *userdata, void (*free_fn)(void *))
{
	r->userdata = userdata;
	r->free_userdata = free_fn;
}

void *ts_req_userdata(const struct ts_req *r)
{
	return r->userdata;
}

const struct ts_mhd *ts_req_mhd(const struct ts_req *r)
{
	return r->l->M;
}

struct MHD_Connection *ts_req_mhd_connection(struct ts_req *r)
{
	return r->conn;
}

/* --- replies ------------------------------------------------------------------------- */

int ts_req_add_header(struct ts_req *r, const char *name, const char *value)
{
	struct hdr *v = realloc(r->hdrs, (r->n_hdrs + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	r->hdrs = v;
	v[r->n_hdrs].name = strdup(name);
	v[r->n_hdrs].value = strdup(value);
	if (!v[r->n_hdrs].name || !v[r->n_hdrs].value) {
		free(v[r->n_hdrs].name);
		free(v[r->n_hdrs].value);
		return -ENOMEM;
	}
	r->n_hdrs++;
	return 0;
}

static int queue(struct ts_req *r, unsigned status, const char *content_type,
		 struct MHD_Response *resp)
{
	enum MHD_Result ok;

	if (!resp)
		return -ENOMEM;
	if (content_type)
		r->l->M->add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	for (size_t i = 0; i < r->n_hdrs; i++)
		r->l->M->add_response_header(resp, r->hdrs[i].name, r->hdrs[i].value);
	ok = r->l->M->queue_response(r->conn, status, resp);
	r->l->M->destroy_response(resp);
	if (ok != MHD_YES)
		return -EIO;
	r->replied = true;
	r->status = status;
	if (r->deferred) {
		/* queued on the suspended connection: resuming it sends the reply (the idle
		 * hook runs MHD for it) */
		defer_unlink(r);
		r->l->M->resume_connection(r->conn);
		r->l->resumed = true;
	}
	return 0;
}

void ts_req_defer_forget(struct ts_req *r)
{
	if (r->deferred)
		r->on_gone = NULL;
}

int ts_req_defer(struct ts_req *r, void (*on_gone)(void *userdata), void *userdata)
{
	if (r->replied || r->deferred || r->stream)
		return -EALREADY;
	r->deferred = true;
	r->on_gone = on_gone;
	r->gone_userdata = userdata;
	r->dprev = NULL;
	r->dnext = r->l->deferred;
	if (r->dnext)
		r->dnext->dprev = r;
	r->l->deferred = r;
	r->l->M->suspend_connection(r->conn);
	return 0;
}

int ts_req_reply(struct ts_req *r, unsigned status, const char *content_type, const void *body,
		 size_t len)
{
	if (r->replied)
		return -EALREADY;
	return queue(r, status, content_type,
		     r->l->M->create_response_from_buffer(len, (void *)(body ? body : ""),
							  MHD_RESPMEM_MUST_COPY));
}

int ts_req_reply_take(struct ts_req *r, unsigned status, const char *content_type, void *body,
		      size_t len)
{
	struct MHD_Response *resp;

	if (r->replied) {
		free(body);
		return -EALREADY;
	}
	resp = r->l->M->create_response_from_buffer_with_free_callback(len, body, free);
	if (!resp)
		free(body);
	return queue(r, status, content_type, resp);
}

int ts_req_reply_json(struct ts_req *r, unsigned status, json_t *json)
{
	char *text;

	if (!json)
		return ts_req_reply(r, 500, "application/json",
				    "{\"code\":500,\"message\":\"out of memory\"}", 38);
	text = json_dumps(json, JSON_COMPACT);
	json_decref(json);
	if (!text)
		return -ENOMEM;
	return ts_req_reply_take(r, status, "application/json", text, strlen(text));
}

/* --- streams ------------------------------------------------------------------------- */

static void stream_wake(struct ts_stream *s)
{
	ts_loop_del_fd(s->hup);
	s->hup = NULL;
	/* in external polling MHD has no wake-up fd of its own: the idle hook runs it */
	if (s->suspended) {
		s->suspended = false;
		s->req->l->M->resume_connection(s->req->conn);
		s->req->l->resumed = true;
	}
}

/*
 * A suspended connection is polled by nobody: a client gone while its stream is quiet (a
 * process that prints nothing, a watch that sees nothing) would be found only at the next
 * write, a keepalive its client may have asked for a day later, and hold its connection
 * slot and its process handle until then. So while suspended, its socket is watched for the
 * client's end of the connection; a client that shuts down its sending half but still
 * reads is taken for gone too (no HTTP client of ours does so).
 */
static void stream_hup(void *userdata, short revents)
{
	struct ts_stream *s = userdata;

	s->hung_up = true;
	ts_stream_abort(s);
}

static void stream_watch_hup(struct ts_stream *s)
{
	const union MHD_ConnectionInfo *ci;

	if (s->hup)
		return;
	ci = s->req->l->M->get_connection_info(s->req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci)
		s->hup = ts_loop_add_fd(s->req->l->loop, ci->connect_fd, POLLRDHUP, stream_hup, s);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct ts_stream *s = cls;
	size_t n = s->len - s->off;
	bool was_high = n > TS_HTTP_STREAM_HIGH / 2;

	if (s->aborted)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	if (n == 0) {
		if (s->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		s->suspended = true;
		s->req->l->M->suspend_connection(s->req->conn);
		stream_watch_hup(s);
		return 0;
	}
	if (n > max)
		n = max;
	memcpy(buf, s->buf + s->off, n);
	s->off += n;
	if (s->off == s->len)
		s->off = s->len = 0;
	if (was_high && s->len - s->off <= TS_HTTP_STREAM_HIGH / 2 && s->on_drain)
		s->on_drain(s->userdata);
	return (ssize_t)n;
}

struct ts_stream *ts_req_stream(struct ts_req *r, unsigned status, const char *content_type,
				void (*on_close)(void *userdata, bool client_gone), void *userdata,
				struct ts_error *err)
{
	struct ts_stream *s;
	int rc;

	if (r->replied) {
		ts_err(err, -EALREADY, "request already answered");
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		ts_err(err, -ENOMEM, "stream");
		return NULL;
	}
	s->req = r;
	s->on_close = on_close;
	s->userdata = userdata;
	rc = queue(r, status, content_type,
		   r->l->M->create_response_from_callback(MHD_SIZE_UNKNOWN, HTTP_STREAM_BLOCK,
							  stream_read, s, NULL));
	if (rc < 0) {
		free(s);
		ts_err(err, rc, "queue the stream's response");
		return NULL;
	}
	r->stream = s;
	s->next = r->l->streams;
	if (s->next)
		s->next->prev = s;
	r->l->streams = s;
	return s;
}

int ts_stream_write(struct ts_stream *s, const void *data, size_t len)
{
	if (s->ended || s->aborted)
		return -EPIPE;
	if (s->len + len > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		uint8_t *b;

		if (s->off) {
			memmove(s->buf, s->buf + s->off, s->len - s->off);
			s->len -= s->off;
			s->off = 0;
		}
		while (cap < s->len + len)
			cap *= 2;
		if (cap != s->cap) {
			b = realloc(s->buf, cap);
			if (!b)
				return -ENOMEM;
			s->buf = b;
			s->cap = cap;
		}
	}
	memcpy(s->buf + s->len, data, len);
	s->len += len;
	stream_wake(s);
	return 0;
}

size_t ts_stream_pending(const struct ts_stream *s)
{
	return s->len - s->off;
}

void ts_stream_on_drain(struct ts_stream *s, void (*on_drain)(void *userdata))
{
	s->on_drain = on_drain;
}

void ts_stream_end(struct ts_stream *s)
{
	s->ended = true;
	stream_wake(s);
}

void ts_stream_abort(struct ts_stream *s)
{
	s->aborted = true;
	stream_wake(s);
}

static void stream_close(struct ts_stream *s, bool client_gone)
{
	struct ts_http_listener *l = s->req->l;

	if (s->prev)
		s->prev->next = s->next;
	else
		l->streams = s->next;
	if (s->next)
		s->next->prev = s->prev;
	ts_loop_del_fd(s->hup);
	s->hup = NULL;
	if (!s->closed && s->on_close) {
		s->closed = true;
		s->on_close(s->userdata, client_gone);
	}
	free(s->buf);
	free(s);
}

/* --- MHD callbacks --------------------------------------------------------------------- */

static void peer_name(const struct ts_mhd *M, struct MHD_Connection *c, char *buf, size_t size)
{
	const union MHD_ConnectionInfo *ci =
		M->get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	char host[INET6_ADDRSTRLEN] = "";
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	if (!sa || sa->sa_family == AF_UNIX) {
		snprintf(buf, size, "unix");
	} else if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(buf, size, "%s:%u", host, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(buf, size, "[%s]:%u", host, ntohs(in6->sin6_port));
	} else {
		snprintf(buf, size, "?");
	}
}

static void reply_plain_error(struct ts_req *r, unsigned status, const char *msg)
{
	char body[256];
	int n = snprintf(body, sizeof(body), "{\"code\":%u,\"message\":\"%s\"}", status, msg);

	ts_req_reply(r, status, "application/json", body, (size_t)n);
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *conn, const char *url,
				 const char *method, const char *version, const char *upload_data,
				 size_t *upload_data_size, void **con_cls)
{
	struct ts_http_listener *l = cls;
	struct ts_req *r = *con_cls;

	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		r->l = l;
		r->conn = conn;
		snprintf(r->method, sizeof(r->method), "%s", method);
		r->path = strdup(url);
		if (!r->path) {
			free(r);
			return MHD_NO;
		}
		peer_name(l->M, conn, r->peer, sizeof(r->peer));
		*con_cls = r;
		r->route = route_find(l, r->method, r->path, r->params);
		r->max = r->route && r->route->body_max ? r->route->body_max : TS_HTTP_BODY_MAX;
		if (r->route && r->route->begin && r->route->begin(l->ctx, r) < 0)
			r->failed = true;
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		if (r->too_big || r->failed || !r->route)
			return MHD_YES; /* drained: the reply comes at the end */
		if (r->on_data) {
			if (r->on_data(r->on_data_userdata, (const uint8_t *)upload_data, n) < 0)
				r->failed = true;
			return MHD_YES;
		}
		if (r->len + n > r->max) {
			r->too_big = true;
			free(r->body);
			r->body = NULL;
			r->len = r->cap = 0;
			return MHD_YES;
		}
		if (r->len + n + 1 > r->cap) {
			size_t cap = r->cap ? r->cap : 1024;
			uint8_t *b;

			while (cap < r->len + n + 1)
				cap *= 2;
			b = realloc(r->body, cap);
			if (!b)
				return MHD_NO;
			r->body = b;
			r->cap = cap;
		}
		memcpy(r->body + r->len, upload_data, n);
		r->len += n;
		r->body[r->len] = '\0';
		return MHD_YES;
	}
	if (r->replied)
		return MHD_YES;
	if (!r->route) {
		if (l->not_found)
			l->not_found(l->ctx, r);
		if (!r->replied)
			reply_plain_error(r, 404, "not found");
		return MHD_YES;
	}
	if (r->too_big) {
		char msg[96];

		snprintf(msg, sizeof(msg), "request body larger than %zu bytes", r->max);
		reply_plain_error(r, 413, msg);
		return MHD_YES;
	}
	if (r->deferred)
		return MHD_YES; /* resumed by its reply, which is queued already */
	r->route->handle(l->ctx, r);
	if (!r->replied && !r->deferred)
		reply_plain_error(r, 500, "the handler gave no reply");
	return MHD_YES;
}

static void completed_cb(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct ts_req *r = *con_cls;

	if (!r)
		return;
	if (r->stream) {
		bool gone = toe != MHD_REQUEST_TERMINATED_COMPLETED_OK &&
			    (!r->stream->aborted || r->stream->hung_up);

		stream_close(r->stream, gone);
		r->stream = NULL;
	}
	req_free(r);
	*con_cls = NULL;
}

/* --- listeners ------------------------------------------------------------------------- */

static void listener_run(void *userdata, short revents)
{
	struct ts_http_listener *l = userdata;

	l->M->run(l->d);
}

static void listener_timer(void *userdata)
{
	struct ts_http_listener *l = userdata;

	l->M->run(l->d);
}

/* After every loop iteration: MHD's own next deadline (idle connections, ...). */
static void listener_idle(void *userdata)
{
	struct ts_http_listener *l = userdata;
	MHD_UNSIGNED_LONG_LONG ms;

	if (!l->d)
		return;
	if (l->resumed) {
		l->resumed = false;
		l->M->run(l->d);
	}
	if (l->M->get_timeout(l->d, &ms) == MHD_YES)
		ts_loop_timer_set(l->timer, ts_loop_now(l->loop) + (long long)ms);
	else
		ts_loop_timer_set(l->timer, -1);
}

static bool addr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr) >>
			24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a =
			&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;

		if (IN6_IS_ADDR_LOOPBACK(a))
			return true;
		return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
	}
	return sa->sa_family == AF_UNIX;
}

static void describe(struct ts_http_listener *l)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char host[INET6_ADDRSTRLEN] = "?";

	if (getsockname(l->fd, (struct sockaddr *)&ss, &len) < 0)
		return;
	l->local = addr_is_loopback((struct sockaddr *)&ss);
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *in = (void *)&ss;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(l->addr, sizeof(l->addr), "%s:%u", host, ntohs(in->sin_port));
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (void *)&ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(l->addr, sizeof(l->addr), "[%s]:%u", host, ntohs(in6->sin6_port));
	} else if (ss.ss_family == AF_UNIX) {
		struct sockaddr_un *un = (void *)&ss;

		snprintf(l->addr, sizeof(l->addr), "unix:%s", un->sun_path);
	}
}

/* A listening socket for addr: "unix:/path", "[v6]:port", "host:port". */
static int open_socket(struct ts_http_listener *l, const char *addr, struct ts_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	const int one = 1;

	if (!strncmp(addr, "unix:", 5)) {
		struct sockaddr_un un = { .sun_family = AF_UNIX };
		const char *path = addr + 5;
		struct stat st;

		if (path[0] != '/' || strlen(path) >= sizeof(un.sun_path))
			return ts_err(err, -EINVAL,
				      "`%s`: a unix socket needs an absolute path "
				      "shorter than %zu bytes",
				      addr, sizeof(un.sun_path));
		strcpy(un.sun_path, path);
		/* a stale socket of an earlier serve goes; anything else stays and fails */
		if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
			unlink(path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return ts_err_errno(err, -errno, "socket");
		if (bind(fd, (struct sockaddr *)&un, sizeof(un)) < 0)
			return ts_err_errno(err, -errno, "bind `%s`", path);
		if (chmod(path, 0600) < 0)
			return ts_err_errno(err, -errno, "chmod `%s`", path);
		snprintf(l->unix_path, sizeof(l->unix_path), "%s", path);
	} else {
		char host[256];
		const char *colon = strrchr(addr, ':');
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
		struct addrinfo *ai = NULL;
		size_t hl;
		int rc;

		if (!colon || colon == addr || !colon[1])
			return ts_err(err, -EINVAL,
				      "`%s`: expected HOST:PORT, [IPv6]:PORT or "
				      "unix:PATH",
				      addr);
		hl = (size_t)(colon - addr);
		if (addr[0] == '[' && hl >= 2 && addr[hl - 1] == ']') {
			addr++;
			hl -= 2;
		}
		if (hl >= sizeof(host))
			return ts_err(err, -EINVAL, "`%s`: host name too long", addr);
		memcpy(host, addr, hl);
		host[hl] = '\0';
		rc = getaddrinfo(host, colon + 1, &hints, &ai);
		if (rc)
			return ts_err(err, -EINVAL, "`%s`: %s", addr, gai_strerror(rc));
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			freeaddrinfo(ai);
			return ts_err_errno(err, -errno, "socket");
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		rc = bind(fd, ai->ai_addr, ai->ai_addrlen);
		freeaddrinfo(ai);
		if (rc < 0)
			return ts_err_errno(err, -errno, "bind `%s`", addr);
	}
	if (listen(fd, 1024) < 0)
		return ts_err_errno(err, -errno, "listen on `%s`", addr);
	return TAKE_FD(fd);
}

int ts_http_listen(struct ts_loop *loop, const char *addr, int fd,
		   const struct ts_route *const *tables,
		   void (*not_found)(void *ctx, struct ts_req *req), void *ctx,
		   struct ts_http_listener **ret, struct ts_error *err)
{
	struct ts_http_listener *l = calloc(1, sizeof(*l));
	const union MHD_DaemonInfo *info;
	int r;

	if (!l)
		return ts_err(err, -ENOMEM, "listener");
	*l = (struct ts_http_listener){
		.loop = loop, .tables = tables, .not_found = not_found, .ctx = ctx, .fd = -1
	};
	l->M = ts_mhd_load(err);
	if (!l->M) {
		r = -ENOPKG;
		goto fail;
	}
	if (fd >= 0) {
		int fl = fcntl(fd, F_GETFL);

		if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
			r = ts_err_errno(err, -errno, "inherited socket %d", fd);
			goto fail;
		}
		l->fd = fd;
	} else {
		l->fd = open_socket(l, addr, err);
		if (l->fd < 0) {
			r = l->fd;
			goto fail;
		}
	}
	describe(l);
	l->d = l->M->start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL,
				  access_cb, l, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)l->fd,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)TS_HTTP_CONNECTIONS,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)TS_HTTP_IDLE_S,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)TS_HTTP_HEADER_MAX,
				  MHD_OPTION_NOTIFY_COMPLETED, completed_cb, l, MHD_OPTION_END);
	if (!l->d) {
		r = ts_err(err, -EIO, "start the HTTP server on `%s`", l->addr);
		goto fail;
	}
	info = l->M->get_daemon_info(l->d, MHD_DAEMON_INFO_EPOLL_FD);
	l->watch = info ? ts_loop_add_fd(loop, info->epoll_fd, POLLIN, listener_run, l) : NULL;
	l->timer = ts_loop_add_timer(loop, -1, listener_timer, l);
	if (!l->watch || !l->timer || ts_loop_on_idle(loop, listener_idle, l) < 0) {
		r = ts_err(err, -ENOMEM, "watch the HTTP server on `%s`", l->addr);
		goto fail;
	}
	*ret = l;
	return 0;
fail:
	ts_http_listener_free(l);
	return r;
}

void ts_http_listener_free(struct ts_http_listener *l)
{
	if (!l)
		return;
	/* MHD must not stop with suspended connections: end every stream first, and answer
	 * every deferred request (its owner hears on_gone first and lets go of it) */
	for (struct ts_stream *s = l->streams; s; s = s->next)
		ts_stream_abort(s);
	while (l->deferred) {
		struct ts_req *r = l->deferred;
		void (*gone)(void *) = r->on_gone;

		r->on_gone = NULL;
		if (gone)
			gone(r->gone_userdata);
		if (r->deferred)
			reply_plain_error(r, 503, "the server is shutting down");
		if (r->deferred) { /* no reply could be queued: resume it all the same, for
				    * MHD_stop_daemon to close it (never to run the handler again) */
			r->replied = true;
			defer_unlink(r);
			l->M->resume_connection(r->conn);
		}
	}
	ts_loop_del_fd(l->watch);
	ts_loop_del_timer(l->timer);
	if (l->d) {
		l->M->run(l->d);
		l->M->stop_daemon(l->d); /* closes the listening socket */
		l->fd = -1;
		l->d = NULL;
	}
	if (l->fd >= 0)
		close(l->fd);
	if (l->unix_path[0])
		unlink(l->unix_path);
	ts_loop_off_idle(l->loop, listener_idle, l);
	free(l);
}

const char *ts_http_listener_addr(const struct ts_http_listener *l)
{
	return l->addr;
}

bool ts_http_listener_local(const struct ts_http_listener *l)
{
	return l->local;
}
