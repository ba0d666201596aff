/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The HTTP layer of `serve`: libmicrohttpd driven from our own epoll loop (loop.h), one
 * thread, no blocking on a client. A listener has a route table; a route's handler gets a
 * request whose body is already in (bounded, TS_HTTP_BODY_MAX unless the route says
 * otherwise) or, for a route with `begin`, streams it in. A handler answers exactly once:
 * a whole reply (ts_req_reply*), a stream (ts_req_stream) it feeds from loop callbacks
 * until it ends or aborts it, or later (ts_req_defer, then a whole reply from a loop
 * callback). This is the only file set that includes <microhttpd.h>,
 * except the multipart upload of /files, which uses MHD's post processor
 * (ts_req_mhd_connection, with the library's table from ts_req_mhd).
 */
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct ts_loop;
struct ts_req;
struct ts_stream;
struct MHD_Connection;

#define TS_HTTP_BODY_MAX (1U << 20)    /* a JSON or Connect request body */
#define TS_HTTP_STREAM_HIGH (1U << 20) /* a stream buffers at most this much for its client */
#define TS_HTTP_HEADER_MAX (64U << 10) /* request line and headers, per connection */
#define TS_HTTP_CONNECTIONS 4096       /* per listener */
#define TS_HTTP_IDLE_S 300	       /* an idle keep-alive connection is closed after */

/*
 * A route: method ("GET", ...; NULL: any, the handler checks) and a path pattern where
 * "*" matches one non-empty segment ("/sandboxes/ * /timeout" without the spaces) and a
 * trailing "**" the rest (possibly empty). Matched segments are ts_req_param(req, i).
 */
struct ts_route {
	const char *method;
	const char *pattern;
	/* the whole body is in (up to body_max; over it the layer answers 413 itself) */
	void (*handle)(void *ctx, struct ts_req *req);
	/* optional, for a streamed body: called once the headers are in; then on_data for
	 * every piece and handle at the end (with ts_req_body empty) */
	int (*begin)(void *ctx, struct ts_req *req);
	size_t body_max; /* 0: TS_HTTP_BODY_MAX */
};

struct ts_http_listener;

/*
 * Listen on addr ("127.0.0.1:3000", "[::1]:3000", "unix:/path"), or on an inherited
 * socket fd (fd >= 0, addr then only names it), routing to the route tables of tables
 * (NULL-terminated; each table ended by a zero entry; first match wins; they and ctx
 * outlive the listener). Unknown paths get not_found(ctx, req).
 */
int ts_http_listen(struct ts_loop *loop, const char *addr, int fd,
		   const struct ts_route *const *tables,
		   void (*not_found)(void *ctx, struct ts_req *req), void *ctx,
		   struct ts_http_listener **ret, struct ts_error *err);
/* Stop accepting; streams in flight are aborted (their on_close runs). */
void ts_http_listener_free(struct ts_http_listener *l);
/* Where it listens, "127.0.0.1:3000" (the real port when 0 was asked). */
const char *ts_http_listener_addr(const struct ts_http_listener *l);
/* True when it listens only on loopback or a unix socket. */
bool ts_http_listener_local(const struct ts_http_listener *l);

/* --- the request --------------------------------------------------------------------- */

const char *ts_req_method(const struct ts_req *r);
const char *ts_req_path(const struct ts_req *r);	      /* decoded, without the query */
const char *ts_req_param(const struct ts_req *r, unsigned i); /* a "*" of the pattern */
/* A header (case-insensitive) or query argument (decoded once), NULL when absent. */
const char *ts_req_header(const struct ts_req *r, const char *name);
const char *ts_req_query(const struct ts_req *r, const char *name);
/* Call fn for every header (prefix NULL) or those whose name starts with prefix
 * (case-insensitive). */
void ts_req_headers(const struct ts_req *r, const char *prefix,
		    void (*fn)(void *userdata, const char *name, const char *value),
		    void *userdata);
const uint8_t *ts_req_body(const struct ts_req *r, size_t *len);
/* The body parsed as one JSON value (depth and size bounded); NULL and err when not JSON.
 * An empty body is {}. Borrowed: freed with the request. */
json_t *ts_req_json(struct ts_req *r, struct ts_error *err);
/* Is JSON text nested at most limit levels deep (strings skipped)? A cheap check before
 * parsing: jansson's own bound is far deeper. */
bool ts_http_json_depth_ok(const uint8_t *p, size_t n, unsigned limit);
/* The peer's address, "127.0.0.1:54321" or "unix". */
const char *ts_req_peer(const struct ts_req *r);
/* For a streamed body (route.begin): on_data for each piece (return < 0 to fail the
 * request: the handler is then called with ts_req_failed() true). */
void ts_req_on_data(struct ts_req *r, int (*on_data)(void *userdata, const uint8_t *p, size_t n),
		    void *userdata);
bool ts_req_failed(const struct ts_req *r);
/* The request's own slot for the handler (freed by free_fn when the request ends). */
void ts_req_set_userdata(struct ts_req *r, void *userdata, void (*free_fn)(void *));
void *ts_req_userdata(const struct ts_req *r);
struct MHD_Connection *ts_req_mhd_connection(struct ts_req *r);
struct ts_mhd;
const struct ts_mhd *ts_req_mhd(const struct ts_req *r);

/* --- whole replies (exactly one per request) ------------------------------------------- */

/* Add a response header to the reply that follows. */
int ts_req_add_header(struct ts_req *r, const char *name, const char *value);
/* body (may be NULL: no body, Content-Length 0) is copied. */
int ts_req_reply(struct ts_req *r, unsigned status, const char *content_type, const void *body,
		 size_t len);
/* Takes ownership of body (freed with free()). */
int ts_req_reply_take(struct ts_req *r, unsigned status, const char *content_type, void *body,
		      size_t len);
/* json is stolen (json_decref'd); application/json. */
int ts_req_reply_json(struct ts_req *r, unsigned status, json_t *json);

/*
 * Answer later: called by the handler instead of replying, it suspends the connection
 * (MHD neither reads nor times it out meanwhile) until a whole reply (ts_req_reply*) made
 * from a loop callback resumes it; the request and its body stay valid until then. A
 * client that leaves meanwhile is noticed only when that reply is sent. When the request
 * ends without that reply (the listener is freed: serve stops), on_gone(userdata) runs
 * once, the layer answers 503 itself, and the caller must not touch the request again.
 * -EALREADY when the request is answered or deferred already.
 */
int ts_req_defer(struct ts_req *r, void (*on_gone)(void *userdata), void *userdata);
/* The deferral's owner lets go of it: on_gone will not run (call it while the request is
 * still deferred, before freeing what on_gone's userdata points at). */
void ts_req_defer_forget(struct ts_req *r);

/* --- streamed replies ------------------------------------------------------------------ */

/*
 * Answer with status and content type and a chunked body the caller feeds. The headers go
 * out at once. on_close runs exactly once, when the stream is done or the client went
 * (client_gone true) — the handler frees its state there and never touches s again.
 */
struct ts_stream *ts_req_stream(struct ts_req *r, unsigned status, const char *content_type,
				void (*on_close)(void *userdata, bool client_gone), void *userdata,
				struct ts_error *err);
/* Queue bytes (copied) and flush them to the client as soon as it takes them. */
int ts_stream_write(struct ts_stream *s, const void *data, size_t len);
/* Bytes queued and not yet taken by the client: above TS_HTTP_STREAM_HIGH stop producing
 * and wait for on_drain. */
size_t ts_stream_pending(const struct ts_stream *s);
void ts_stream_on_drain(struct ts_stream *s, void (*on_drain)(void *userdata));
/* End cleanly once the queue is out (the terminating chunk), then on_close. */
void ts_stream_end(struct ts_stream *s);
/* Drop the connection now, without the terminating chunk, then on_close. */
void ts_stream_abort(struct ts_stream *s);
