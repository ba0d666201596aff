/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET and PUT /v1/sandboxes/{id}/files (v1.h): whole files through ts_xfer, on the loop.
 * A download streams the sandbox's chunks to the client as it takes them; an upload is
 * pushed to the sandbox while its body still comes in, so that serve neither holds a
 * whole file nor stops its loop to send one.
 */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cleanup.h"
#include "http.h"
#include "loop.h"
#include "server.h"
#include "tokens.h"
#include "v1.h"

#define STEPS_PER_WAKE 64 /* chunks handled per loop wake-up */
/* bytes of a file per push: the local backend's largest; with 64 KiB pushes a write of
 * some 48 MiB and more stalled in the local backend (reported) */
#define PUSH_CHUNK (256U << 10)

/* --- download ------------------------------------------------------------------------ */

/* ?path= (required) and ?user=; replies 400 when path is missing. */
static bool file_args(struct ts_req *req, const char **path, const char **user)
{
	*path = ts_req_query(req, "path");
	*user = ts_req_query(req, "user");
	if (!*path || !**path || strlen(*path) > 4096) {
		ts_v1_reply_error(req, "invalid_argument", "`path` is required (1-4096 bytes)");
		return false;
	}
	if (*user && !**user)
		*user = NULL;
	return true;
}

struct get {
	struct ts_srv_sb *e; /* a reference: the handle stays while the stream runs */
	struct ts_stream *s;
	struct ts_xfer *x;
	struct ts_loop_fd *w;
	bool closed, paused, done;
	unsigned in_pump;
};

static void get_free(struct get *g)
{
	ts_loop_del_fd(g->w);
	ts_xfer_close(g->x);
	ts_srv_sb_unref(g->e);
	free(g);
}

static void get_on_close(void *userdata, bool client_gone)
{
	struct get *g = userdata;

	g->closed = true;
	if (!g->in_pump)
		get_free(g);
}

static void get_pump(void *userdata)
{
	struct get *g = userdata;
	struct ts_error err = { 0 };

	g->in_pump++;
	for (unsigned i = 0; i < STEPS_PER_WAKE && !g->closed && !g->done; i++) {
		const uint8_t *d;
		size_t len;
		int r;

		if (ts_stream_pending(g->s) > TS_HTTP_STREAM_HIGH) {
			g->paused = true;
			ts_loop_mod_fd(g->w, 0);
			break;
		}
		r = ts_xfer_step(g->x, &d, &len, &err);
		if (r == 0)
			break;
		if (r == 1 && ts_stream_write(g->s, d, len) == 0)
			continue;
		g->done = true;
		/* the status went out with the first byte: a failure can only cut the body
		 * short, which the client sees as a broken chunked transfer */
		if (r == 2)
			ts_stream_end(g->s);
		else
			ts_stream_abort(g->s);
	}
	if (!g->closed && !g->done && !g->paused)
		ts_loop_mod_fd(g->w, ts_xfer_events(g->x));
	if (!--g->in_pump && g->closed)
		get_free(g);
}

static void get_on_drain(void *userdata)
{
	struct get *g = userdata;

	if (g->paused) {
		g->paused = false;
		get_pump(g);
	}
}

static void get_on_fd(void *userdata, short revents)
{
	get_pump(userdata);
}

void ts_v1_file_get(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_error err = { 0 };
	struct ts_be_entry e = { 0 };
	const char *path, *user;
	const uint8_t *d = NULL;
	struct ts_srv_sb *entry = NULL;
	struct ts_sb *sb;
	struct get *g;
	size_t len = 0;
	int first;

	if (!ts_v1_authorized(srv, req, TS_SCOPE_FILES_READ) || !file_args(req, &path, &user) ||
	    !(sb = ts_v1_route_sandbox(srv, req, &entry)))
		return;
	/* what can be known before the status is: that the file is there and a file */
	if (ts_file_stat(sb, path, user, &e, &err) < 0) {
		ts_v1_reply_be_error(req, &err);
		return;
	}
	if (e.type == TS_BE_DIR) {
		ts_be_entry_clear(&e);
		ts_v1_reply_error(req, "invalid_argument", "`%.256s` is a directory", path);
		return;
	}
	ts_be_entry_clear(&e);
	g = calloc(1, sizeof(*g));
	if (!g) {
		ts_v1_reply_error(req, "internal", "out of memory");
		return;
	}
	g->e = ts_srv_sb_ref(entry);
	if (ts_xfer_read_start(sb, path, user, &g->x, &err) < 0) {
		ts_srv_sb_unref(g->e);
		free(g);
		ts_v1_reply_be_error(req, &err);
		return;
	}
	/* The sandbox's first answer decides the status (a file the user may not read is
	 * 403, not a 200 cut short): wait for it here, bounded like any backend request;
	 * the rest streams from the loop. */
	for (;;) {
		struct pollfd p = { .fd = ts_xfer_fd(g->x), .events = ts_xfer_events(g->x) };
		int pr;

		first = ts_xfer_step(g->x, &d, &len, &err);
		if (first != 0)
			break;
		pr = poll(&p, 1, TS_BE_REPLY_MS);
		if (pr == 0 || (pr < 0 && errno != EINTR)) {
			first = ts_err(&err, -ETIMEDOUT, "the sandbox did not answer in %d s",
				       TS_BE_REPLY_MS / 1000);
			break;
		}
	}
	if (first < 0) {
		get_free(g);
		ts_v1_reply_be_error(req, &err);
		return;
	}
	g->w = ts_loop_add_fd(srv->loop, ts_xfer_fd(g->x), ts_xfer_events(g->x), get_on_fd, g);
	if (!g->w) {
		get_free(g);
		ts_v1_reply_error(req, "internal", "cannot watch the transfer");
		return;
	}
	g->s = ts_req_stream(req, 200, "application/octet-stream", get_on_close, g, &err);
	if (!g->s) {
		get_free(g);
		ts_v1_reply_error(req, "internal", "%s", err.msg);
		return;
	}
	ts_stream_on_drain(g->s, get_on_drain);
	g->in_pump++;
	if (first == 1 && ts_stream_write(g->s, d, len) < 0) {
		g->done = true;
		ts_stream_abort(g->s);
	} else if (first == 2) {
		g->done = true;
		ts_stream_end(g->s);
	}
	if (!--g->in_pump && g->closed) {
		get_free(g);
		return;
	}
	if (!g->done)
		get_pump(g);
}

/* --- upload -------------------------------------------------------------------------- */

struct upload {
	struct ts_srv *srv;
	struct ts_srv_sb *e; /* a reference: the handle stays while the upload runs */
	struct ts_xfer *x;
	struct ts_loop_fd *w;
	char path[4097];
	uint8_t *buf; /* received, not yet pushed: buf[off..len) */
	size_t off, len, cap, total;
	bool all_in, finished, done;
	/* the first failure, replied by the handler once the body is in */
	const char *code;
	bool www_auth;
	struct ts_error err;
};

static void upload_free(void *userdata)
{
	struct upload *u = userdata;

	if (!u)
		return;
	ts_loop_del_fd(u->w);
	/* a write not finished is abandoned: the sandbox keeps the old file */
	ts_xfer_close(u->x);
	ts_srv_sb_unref(u->e);
	free(u->buf);
	free(u);
}

static int upload_fail(struct upload *u, const char *code)
{
	if (!u->code)
		u->code = code ? code : ts_v1_be_code(&u->err);
	ts_loop_del_fd(u->w);
	u->w = NULL;
	free(u->buf);
	u->buf = NULL;
	u->off = u->len = u->cap = 0;
	return -EIO;
}

/* Push what came in, finish once all did, and hear the sandbox; never blocks. */
static int upload_pump(struct upload *u)
{
	for (unsigned i = 0; i < STEPS_PER_WAKE && !u->code && !u->done; i++) {
		bool progress = false;
		const uint8_t *d;
		size_t l;
		int r;

		while (u->off < u->len) {
			size_t n = u->len - u->off > PUSH_CHUNK ? PUSH_CHUNK : u->len - u->off;

			r = ts_xfer_push(u->x, u->buf + u->off, n, &u->err);
			if (r == -EAGAIN) {
				ts_err_clear(&u->err);
				break;
			}
			if (r < 0)
				return upload_fail(u, NULL);
			u->off += n;
			progress = true;
		}
		if (u->off == u->len)
			u->off = u->len = 0;
		if (u->all_in && !u->len && !u->finished) {
			if (ts_xfer_finish(u->x, &u->err) < 0)
				return upload_fail(u, NULL);
			u->finished = true;
			progress = true;
		}
		r = ts_xfer_step(u->x, &d, &l, &u->err);
		if (r < 0)
			return upload_fail(u, NULL);
		if (r == 2)
			u->done = true;
		else if (!progress)
			break;
	}
	if (u->w && !u->code && !u->done)
		ts_loop_mod_fd(u->w, ts_xfer_events(u->x));
	return 0;
}

static void upload_on_fd(void *userdata, short revents)
{
	upload_pump(userdata);
}

static int upload_on_data(void *userdata, const uint8_t *p, size_t n)
{
	struct upload *u = userdata;

	if (u->code)
		return -EIO;
	if (n > TS_V1_FILE_MAX - u->total) {
		ts_err(&u->err, -EFBIG, "request body larger than %u bytes", TS_V1_FILE_MAX);
		return upload_fail(u, "payload_too_large");
	}
	u->total += n;
	if (u->len + n > u->cap) {
		size_t cap = u->cap ? u->cap : 256U << 10;
		uint8_t *nb;

		if (u->off) { /* what was pushed makes room first */
			memmove(u->buf, u->buf + u->off, u->len - u->off);
			u->len -= u->off;
			u->off = 0;
		}
		while (cap < u->len + n)
			cap *= 2;
		if (cap > u->cap) {
			nb = realloc(u->buf, cap);
			if (!nb) {
				ts_err(&u->err, -ENOMEM, "out of memory");
				return upload_fail(u, "internal");
			}
			u->buf = nb;
			u->cap = cap;
		}
	}
	memcpy(u->buf + u->len, p, n);
	u->len += n;
	return upload_pump(u);
}

/*
 * The headers are in: check the token and arguments, open the transfer, and take the
 * body as it comes. A failure is kept for the handler to answer once the body is
 * drained (the layer answers only then).
 */
int ts_v1_file_put_begin(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct upload *u = calloc(1, sizeof(*u));
	const char *path = ts_req_query(req, "path"), *user = ts_req_query(req, "user");
	const char *ms = ts_req_query(req, "mode");
	unsigned long long mode = 0;
	struct ts_srv_sb *e = NULL;
	int r;

	if (!u)
		return -ENOMEM;
	u->srv = srv;
	ts_req_set_userdata(req, u, upload_free);
	ts_req_on_data(req, upload_on_data, u);
	r = ts_v1_check_token(srv, req, TS_SCOPE_FILES_WRITE, &u->err);
	if (r < 0) {
		u->www_auth = r == -EACCES;
		return upload_fail(u, r == -EACCES  ? "unauthenticated"
				      : r == -EPERM ? "permission_denied"
						    : "internal");
	}
	if (!path || !*path || strlen(path) >= sizeof(u->path)) {
		ts_err(&u->err, -EINVAL, "`path` is required (1-4096 bytes)");
		return upload_fail(u, "invalid_argument");
	}
	snprintf(u->path, sizeof(u->path), "%s", path);
	if (user && !*user)
		user = NULL;
	if (ms) {
		char *end;

		errno = 0;
		mode = strtoull(ms, &end, 8);
		if (errno || end == ms || *end || mode > 07777) {
			ts_err(&u->err, -EINVAL, "`mode` is octal, at most 7777");
			return upload_fail(u, "invalid_argument");
		}
	}
	r = ts_srv_sandbox(srv, ts_req_param(req, 0), &e, &u->err);
	if (r < 0)
		return upload_fail(u, r == -ENOENT ? "not_found" : NULL);
	u->e = ts_srv_sb_ref(e);
	/* E2B's uploads create the parents; so do ours */
	{
		_cleanup_free_ char *dir = strdup(path);
		char *slash = dir ? strrchr(dir, '/') : NULL;
		bool made;

		if (slash && slash != dir) {
			*slash = '\0';
			if (ts_file_mkdir(e->sb, dir, user, &made, &u->err) < 0)
				return upload_fail(u, NULL);
		}
	}
	if (ts_xfer_write_start(e->sb, path, user, ms ? (int)mode : -1, &u->x, &u->err) < 0)
		return upload_fail(u, NULL);
	u->w = ts_loop_add_fd(srv->loop, ts_xfer_fd(u->x), ts_xfer_events(u->x), upload_on_fd, u);
	if (!u->w) {
		ts_err(&u->err, -ENOMEM, "cannot watch the transfer");
		return upload_fail(u, "internal");
	}
	return 0;
}

void ts_v1_file_put(void *ctx, struct ts_req *req)
{
	struct upload *u = ts_req_userdata(req);

	if (!u) {
		ts_v1_reply_error(req, "internal", "out of memory");
		return;
	}
	u->all_in = true;
	upload_pump(u);
	/* The last of it: what the sandbox has not taken yet (little, it took the rest while
	 * the body came) and its answer that the file is in place, bounded like any backend
	 * request, since the status depends on it. */
	while (!u->code && !u->done) {
		struct pollfd p = { .fd = ts_xfer_fd(u->x), .events = ts_xfer_events(u->x) };
		int pr = poll(&p, 1, TS_BE_REPLY_MS);

		if (pr == 0 || (pr < 0 && errno != EINTR)) {
			ts_err(&u->err, -ETIMEDOUT, "the sandbox did not answer in %d s",
			       TS_BE_REPLY_MS / 1000);
			upload_fail(u, "deadline_exceeded");
			break;
		}
		upload_pump(u);
	}
	if (u->code) {
		if (u->www_auth)
			ts_req_add_header(req, "WWW-Authenticate", "Bearer");
		ts_v1_reply_error(req, u->code, "%s", u->err.msg);
		return;
	}
	ts_req_reply_json(req, 200,
			  json_pack("{s:s,s:I}", "path", u->path, "size", (json_int_t)u->total));
}
