/* SPDX-License-Identifier: Apache-2.0 */
/*
 * envd's plain-HTTP endpoints: GET /files (download), POST /files (upload: multipart or
 * octet-stream), GET /health. Uploads stream into the sandbox as they arrive, through
 * the backend's transfers; a multipart body is split by libmicrohttpd's post processor.
 * Auth is envd's validateSigning: a matching X-Access-Token header (checked by
 * ts_envd_target), else a v1 URL signature over the raw `path` query. Errors are E2B's
 * {"code": status, "message"} bodies, their messages as envd words them where clients
 * compare them.
 */
#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "cleanup.h"
#include "connect.h"
#include "envd-fs.h"
#include "envd.h"
#include "http.h"
#include "loop.h"
#include "mhd-dl.h"
#include "server.h"
#include "util.h"

#define FILES_UPLOAD_MAX (8ULL << 30) /* bytes of one upload (after gunzip) */
#define FILES_WHOLE_MAX (16U << 20)   /* a download up to this is one reply, longer streams */
#define FILES_PIECE (64U << 10)	      /* bytes handed to a transfer at a time */
#define FILES_META_MAX 64	      /* X-Metadata-* headers (the backend's bound) */
#define FILES_META_KEY_MAX 246	      /* 255 minus "user.e2b." */
#define FILES_META_VALUE_MAX 4096
#define FILES_PARTS_MAX 1024	    /* files of one multipart upload */
#define FILES_PP_BUFFER (64U << 10) /* the post processor's buffer */
#define FILES_USER_MAX 64

/* --- the checks every /files request makes ------------------------------------------- */

struct upload;
static int up_fail(struct upload *u, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Refuse a request: at once (a download), or, for an upload (u), once its body is in.
 * A reply queued while a client still sends makes libmicrohttpd close the connection
 * after it, and a client still writing then sees a reset instead of the answer.
 */
static void deny(struct ts_req *req, struct upload *u, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void deny(struct ts_req *req, struct upload *u, unsigned status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (u)
		up_fail(u, status, "%s", msg);
	else
		ts_srv_reply_error(req, status, "%s", msg);
}

static bool same_secret(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	unsigned char diff = n != m;

	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)a[i] ^ (unsigned char)(i < m ? b[i] : 0);
	return diff == 0;
}

/*
 * envd's validateSigning for op ("read", "write"): nothing to check without a token; a
 * header token (already compared by ts_envd_target); else the signature of the raw path
 * and username queries, then its expiry. false when the 401 is sent.
 */
static bool signature_ok(struct ts_req *req, const struct ts_envd_target *t, const char *op,
			 struct upload *u)
{
	const char *sig = ts_req_query(req, "signature");
	const char *exp = ts_req_query(req, "signature_expiration");
	char want[128], *end = NULL;
	long long expiry = 0;

	if (!t->token || !t->token[0] || t->token_ok)
		return true;
	if (!sig) {
		deny(req, u, 401, "missing signature query parameter");
		return false;
	}
	if (exp) {
		errno = 0;
		expiry = strtoll(exp, &end, 10);
		if (!exp[0] || *end || errno) {
			deny(req, u, 400, "invalid format for parameter signature_expiration");
			return false;
		}
	}
	if (ts_envd_signature(ts_req_query(req, "path") ?: "", op,
			      ts_req_query(req, "username") ?: "", t->token, expiry, want,
			      sizeof(want)) < 0 ||
	    !same_secret(sig, want)) {
		deny(req, u, 401, "invalid signature");
		return false;
	}
	if (exp && expiry < ts_realtime_ms() / 1000) {
		deny(req, u, 401, "signature is already expired");
		return false;
	}
	return true;
}

/* The `username` query (NULL: the default user), checked against the sandbox. false
 * when the 401 is sent. */
static bool user_ok(struct ts_req *req, struct ts_sb *sb, char *buf, size_t size, const char **ret,
		    struct upload *up)
{
	const char *u = ts_req_query(req, "username");
	struct ts_error err = { 0 };
	size_t n;

	*ret = NULL;
	if (!u)
		return true;
	n = strlen(u);
	for (size_t i = 0; i < n; i++)
		if (!(u[i] >= 'a' && u[i] <= 'z') && !(u[i] >= '0' && u[i] <= '9') && u[i] != '_' &&
		    u[i] != '-')
			n = 0;
	if (n == 0 || n >= size || ts_sb_check_user(sb, u, &err) < 0) {
		deny(req, up, 401, "error looking up user '%.64s': %s", u,
		     err.msg[0] ? err.msg : "unknown user");
		return false;
	}
	snprintf(buf, size, "%s", u);
	*ret = buf;
	return true;
}

/* The backend path of a /files path: "" and "~" the home, "~/x" x in it. */
static const char *backend_path(const char *p)
{
	if (!p || !p[0] || !strcmp(p, "~"))
		return ".";
	if (!strncmp(p, "~/", 2))
		return p[2] ? p + 2 : ".";
	return p;
}

/* The absolute path the sandbox gives p, as the file worker resolves it (lexically). */
static void absolute_path(const char *p, const char *user, char *buf, size_t size)
{
	const char *home = user && !strcmp(user, "root") ? "/root" : "/home/user";
	char *out = buf, *in;
	_cleanup_free_ char *joined = NULL;

	p = backend_path(p);
	if (asprintf(&joined, "%s/%s", p[0] == '/' ? "" : home, p) < 0) {
		snprintf(buf, size, "%s", p);
		return;
	}
	/* ".", "..", "//" as filepath.Clean */
	in = joined;
	*out = '\0';
	while (*in) {
		char *end;
		size_t n, len = (size_t)(out - buf);

		while (*in == '/')
			in++;
		if (!*in)
			break;
		end = strchrnul(in, '/');
		n = (size_t)(end - in);
		if (n == 2 && in[0] == '.' && in[1] == '.') {
			while (out > buf && *--out != '/')
				;
			*out = '\0';
		} else if (!(n == 1 && in[0] == '.') && len + n + 2 <= size) {
			*out++ = '/';
			memcpy(out, in, n);
			out += n;
			*out = '\0';
		}
		in = end;
	}
	if (out == buf)
		snprintf(buf, size, "/");
}

/* The status of a backend error on /files. */
static unsigned files_status(const struct ts_error *err)
{
	int code = err->code < 0 ? -err->code : err->code;

	if (code == EISDIR || code == ENOTDIR)
		return 400;
	return ts_srv_http_status(ts_be_code(err));
}

/* Which encoding a download may use: 1 gzip, 0 identity, -1 none acceptable (406). */
static int pick_encoding(const char *h)
{
	double gzip = -1, identity = -1, star = -1;
	_cleanup_free_ char *copy = h ? strdup(h) : NULL;
	char *save = NULL;

	if (!copy)
		return 0;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *semi = strchr(tok, ';'), *q;
		double v = 1;

		if (semi) {
			*semi = '\0';
			q = strstr(semi + 1, "q=");
			if (q)
				v = strtod(q + 2, NULL);
		}
		while (*tok == ' ' || *tok == '\t')
			tok++;
		for (char *e = tok + strlen(tok); e > tok && (e[-1] == ' ' || e[-1] == '\t');)
			*--e = '\0';
		if (!strcasecmp(tok, "gzip") || !strcasecmp(tok, "x-gzip"))
			gzip = v;
		else if (!strcasecmp(tok, "identity"))
			identity = v;
		else if (!strcmp(tok, "*"))
			star = v;
	}
	if (gzip < 0)
		gzip = star;
	if (gzip > 0)
		return 1;
	if (identity < 0)
		identity = star >= 0 ? star : 1;
	return identity > 0 ? 0 : -1;
}

/* gzip of len bytes at p (a whole reply). NULL when out of memory. */
static uint8_t *gzip_buf(const uint8_t *p, size_t len, size_t *out_len)
{
	z_stream z = { 0 };
	uLong bound;
	uint8_t *out;

	if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return NULL;
	bound = deflateBound(&z, (uLong)len);
	out = malloc(bound);
	if (!out) {
		deflateEnd(&z);
		return NULL;
	}
	z.next_in = (Bytef *)(uintptr_t)p;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)bound;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&z);
		free(out);
		return NULL;
	}
	*out_len = z.total_out;
	deflateEnd(&z);
	return out;
}

/* --- GET /files ------------------------------------------------------------------------ */

/* A download longer than FILES_WHOLE_MAX: the transfer's pieces, gzipped or not, as the
 * client takes them. */
struct download {
	struct ts_srv *srv;
	struct ts_srv_sb *e;
	struct ts_xfer *x;
	struct ts_loop_fd *fd;
	struct ts_stream *s;
	z_stream z;
	bool gzip, z_init, done;
};

static void dl_stop(struct download *d)
{
	d->done = true;
	ts_loop_del_fd(d->fd);
	d->fd = NULL;
	ts_xfer_close(d->x);
	d->x = NULL;
}

static void dl_close(void *userdata, bool client_gone)
{
	struct download *d = userdata;

	dl_stop(d);
	if (d->z_init)
		deflateEnd(&d->z);
	ts_srv_sb_unref(d->e);
	free(d);
}

/* Write len bytes (deflated when gzip; finish: the gzip trailer too). */
static int dl_write(struct download *d, const uint8_t *p, size_t len, bool finish)
{
	uint8_t out[FILES_PIECE];
	int zr;

	if (!d->gzip)
		return len ? ts_stream_write(d->s, p, len) : 0;
	d->z.next_in = (Bytef *)(uintptr_t)p;
	d->z.avail_in = (uInt)len;
	do {
		int r;

		d->z.next_out = out;
		d->z.avail_out = sizeof(out);
		zr = deflate(&d->z, finish ? Z_FINISH : Z_NO_FLUSH);
		if (zr == Z_STREAM_ERROR)
			return -EIO;
		if (sizeof(out) - d->z.avail_out &&
		    (r = ts_stream_write(d->s, out, sizeof(out) - d->z.avail_out)) < 0)
			return r;
	} while (d->z.avail_out == 0 || (finish && zr != Z_STREAM_END));
	return 0;
}

static void dl_readable(void *userdata, short revents);

static void dl_drained(void *userdata)
{
	struct download *d = userdata;

	if (!d->done && d->fd) {
		ts_loop_mod_fd(d->fd, ts_xfer_events(d->x));
		dl_readable(d, POLLIN);
	}
}

static void dl_readable(void *userdata, short revents)
{
	struct download *d = userdata;
	struct ts_stream *s = d->s;
	struct ts_error err = { 0 };
	int r = 0;

	while (!d->done) {
		const uint8_t *p;
		size_t len;

		r = ts_xfer_step(d->x, &p, &len, &err);
		if (r == 0) {
			ts_loop_mod_fd(d->fd, ts_xfer_events(d->x));
			return;
		}
		if (r < 0)
			break;
		if (r == 2) {
			r = dl_write(d, NULL, 0, true);
			dl_stop(d);
			if (r < 0)
				ts_stream_abort(s);
			else
				ts_stream_end(s);
			return;
		}
		r = dl_write(d, p, len, false);
		if (r < 0)
			break;
		if (ts_stream_pending(s) > TS_HTTP_STREAM_HIGH) {
			ts_loop_mod_fd(d->fd, 0);
			ts_stream_on_drain(s, dl_drained);
			return;
		}
	}
	if (d->done)
		return;
	/* the headers are out: all a client can be told is that the body is cut short */
	dl_stop(d);
	ts_stream_abort(s);
}

static void download_stream(struct ts_srv *srv, struct ts_req *req, struct ts_srv_sb *e,
			    const char *path, const char *user, bool gzip)
{
	struct download *d = calloc(1, sizeof(*d));
	struct ts_error err = { 0 };

	if (!d) {
		ts_srv_reply_error(req, 500, "out of memory");
		return;
	}
	d->srv = srv;
	d->gzip = gzip;
	if (gzip) {
		if (deflateInit2(&d->z, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8,
				 Z_DEFAULT_STRATEGY) != Z_OK) {
			free(d);
			ts_srv_reply_error(req, 500, "out of memory");
			return;
		}
		d->z_init = true;
	}
	if (ts_xfer_read_start(e->sb, path, user, &d->x, &err) < 0) {
		if (d->z_init)
			deflateEnd(&d->z);
		free(d);
		ts_srv_reply_error(req, files_status(&err), "%s", err.msg);
		return;
	}
	d->e = ts_srv_sb_ref(e);
	if (gzip)
		ts_req_add_header(req, "Content-Encoding", "gzip");
	d->s = ts_req_stream(req, 200, "application/octet-stream", dl_close, d, &err);
	if (!d->s) {
		dl_close(d, false);
		ts_srv_reply_error(req, 500, "%s", err.msg);
		return;
	}
	d->fd = ts_loop_add_fd(srv->loop, ts_xfer_fd(d->x), ts_xfer_events(d->x), dl_readable, d);
	if (!d->fd) {
		struct ts_stream *s = d->s;

		dl_stop(d);
		ts_stream_abort(s);
	}
}

static void files_get(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_envd_target t;
	struct ts_be_entry e = { 0 };
	struct ts_error err = { 0 };
	char ubuf[FILES_USER_MAX];
	const char *user, *given = ts_req_query(req, "path") ?: "", *path = backend_path(given);
	uint8_t *data = NULL, *z;
	size_t len = 0, zlen = 0;
	int enc;

	if (ts_envd_target(srv, req, TS_ENVD_SIGNATURE, &t) < 0 ||
	    !signature_ok(req, &t, "read", NULL) ||
	    !user_ok(req, t.e->sb, ubuf, sizeof(ubuf), &user, NULL))
		return;
	if (ts_file_stat(t.e->sb, path, user, &e, &err) < 0 ||
	    ts_envd_fs_follow(t.e->sb, user, &e, NULL) < 0) {
		if (ts_be_code(&err) == TS_BE_NOT_FOUND)
			ts_srv_reply_error(req, 404, "path '%s' does not exist", given);
		else
			ts_srv_reply_error(req, files_status(&err), "%s",
					   err.msg[0] ? err.msg : "out of memory");
		ts_be_entry_clear(&e);
		return;
	}
	if (e.type != TS_BE_FILE) {
		ts_srv_reply_error(req, 400,
				   e.type == TS_BE_DIR	     ? "path '%s' is a directory"
				   : e.type == TS_BE_SYMLINK ? "path '%s' does not exist"
							     : "path '%s' is not a regular file",
				   given);
		ts_be_entry_clear(&e);
		return;
	}
	enc = pick_encoding(ts_req_header(req, "Accept-Encoding"));
	if (enc < 0) {
		ts_srv_reply_error(req, 406,
				   "no acceptable encoding: identity and gzip are served");
		ts_be_entry_clear(&e);
		return;
	}
	/* the SDK reads an empty file by its Content-Length: 0, never by its body */
	if (e.size == 0)
		enc = 0;
	if (e.size > FILES_WHOLE_MAX) {
		ts_be_entry_clear(&e);
		download_stream(srv, req, t.e, path, user, enc == 1);
		return;
	}
	ts_be_entry_clear(&e);
	/* one reply with its Content-Length; a file grown since the stat still fits twice */
	if (ts_file_read(t.e->sb, path, user, &data, &len, 2 * FILES_WHOLE_MAX, &err) < 0) {
		ts_srv_reply_error(req,
				   ts_be_code(&err) == TS_BE_NOT_FOUND ? 404 : files_status(&err),
				   "%s", err.msg);
		return;
	}
	if (enc == 1 && len > 0) {
		z = gzip_buf(data, len, &zlen);
		free(data);
		if (!z) {
			ts_srv_reply_error(req, 500, "out of memory");
			return;
		}
		ts_req_add_header(req, "Content-Encoding", "gzip");
		ts_req_reply_take(req, 200, "application/octet-stream", z, zlen);
		return;
	}
	ts_req_reply_take(req, 200, "application/octet-stream", data, len);
}

/* --- POST /files --------------------------------------------------------------------------- */

struct upload {
	const struct ts_mhd *M; /* libmicrohttpd (mhd-dl.h), for the post processor */
	struct ts_srv *srv;
	struct ts_req *req;
	struct ts_srv_sb *e; /* referenced while the body comes */
	char ubuf[FILES_USER_MAX];
	const char *user;
	const char *qpath;	      /* the `path` query, or NULL */
	struct MHD_PostProcessor *pp; /* multipart */
	bool octet, gzip;
	z_stream z;
	bool z_init, z_end;
	struct ts_xfer *x;			/* the file being written */
	char cur[PATH_MAX];			/* its path for the backend */
	char cur_abs[PATH_MAX];			/* and as the sandbox sees it */
	bool skipping;				/* a part not named `file` */
	bool in_part;				/* a part began */
	uint64_t part_got;			/* bytes of it so far */
	char part_key[64], part_name[PATH_MAX]; /* its name and filename */
	char **seen;				/* absolute paths of this request */
	size_t n_seen;
	struct ts_kv meta[FILES_META_MAX];
	size_t n_meta;
	json_t *results;
	unsigned long long total;
	unsigned status; /* the first failure: its reply */
	char msg[512];
	struct ts_envd_refusal refusal; /* ts_envd_target's, sent at the end */
};

static int up_fail(struct upload *u, unsigned status, const char *fmt, ...)
{
	va_list ap;

	if (!u->status) {
		u->status = status;
		va_start(ap, fmt);
		vsnprintf(u->msg, sizeof(u->msg), fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int up_fail_be(struct upload *u, const struct ts_error *err)
{
	return up_fail(u, files_status(err), "%s", err->msg);
}

static void up_free(void *userdata)
{
	struct upload *u = userdata;

	if (u->pp)
		u->M->destroy_post_processor(u->pp);
	/* a write not finished is abandoned: the sandbox keeps the old file */
	ts_xfer_close(u->x);
	if (u->z_init)
		inflateEnd(&u->z);
	for (size_t i = 0; i < u->n_seen; i++)
		free(u->seen[i]);
	free(u->seen);
	for (size_t i = 0; i < u->n_meta; i++) {
		free((char *)u->meta[i].key);
		free((char *)u->meta[i].value);
	}
	json_decref(u->results);
	json_decref(u->refusal.body);
	ts_srv_sb_unref(u->e);
	free(u);
}

/* Step the transfer until it can take more (or, finishing, is done), bounded by the
 * sandbox's reply time. */
static int up_wait(struct upload *u, bool finishing)
{
	long long deadline = ts_now_ms() + TS_BE_REPLY_MS;
	struct ts_error err = { 0 };

	for (;;) {
		const uint8_t *d;
		size_t l;
		int r = ts_xfer_step(u->x, &d, &l, &err);
		struct pollfd p = { .fd = ts_xfer_fd(u->x), .events = ts_xfer_events(u->x) };
		long long left = deadline - ts_now_ms();

		if (r < 0)
			return up_fail_be(u, &err);
		if (r == 2)
			return finishing ? 0 : up_fail(u, 500, "the sandbox ended the write early");
		/* all it had is sent: room for more */
		if (!finishing && !(p.events & POLLOUT))
			return 0;
		if (left <= 0)
			return up_fail(u, 504, "the sandbox did not take the file in %d s",
				       TS_BE_REPLY_MS / 1000);
		if (poll(&p, 1, (int)(left > 1000 ? 1000 : left)) < 0 && errno != EINTR)
			return up_fail(u, 500, "poll: %s", strerror(errno));
		if (!finishing && (p.revents & POLLOUT))
			return 0;
	}
}

/* Hand data to the current transfer; when it has enough queued, step it first. */
static int up_feed(struct upload *u, const uint8_t *p, size_t n)
{
	struct ts_error err = { 0 };

	u->total += n;
	if (u->total > FILES_UPLOAD_MAX)
		return up_fail(u, 413, "upload larger than %llu bytes", FILES_UPLOAD_MAX);
	while (n) {
		size_t k = n < FILES_PIECE ? n : FILES_PIECE;
		int r = ts_xfer_push(u->x, p, k, &err);

		if (r == -EAGAIN) {
			ts_err_clear(&err);
			if (up_wait(u, false) < 0)
				return -EIO;
			continue;
		}
		if (r < 0)
			return up_fail_be(u, &err);
		p += k;
		n -= k;
	}
	return 0;
}

static int up_start(struct upload *u, const char *given)
{
	struct ts_error err = { 0 };
	const char *path = backend_path(given);
	char *abs;

	if (strlen(path) >= sizeof(u->cur))
		return up_fail(u, 400, "path too long");
	absolute_path(given, u->user, u->cur_abs, sizeof(u->cur_abs));
	for (size_t i = 0; i < u->n_seen; i++)
		if (!strcmp(u->seen[i], u->cur_abs))
			return up_fail(u, 400, "path '%s' is given more than once", u->cur_abs);
	if (u->n_seen == FILES_PARTS_MAX)
		return up_fail(u, 400, "more than %d files in one upload", FILES_PARTS_MAX);
	abs = strdup(u->cur_abs);
	if (!abs)
		return up_fail(u, 500, "out of memory");
	u->seen[u->n_seen++] = abs;
	snprintf(u->cur, sizeof(u->cur), "%s", path);
	/* mode -1: a new file 0644 (0666 minus envd's umask), an existing one keeps its own */
	if (ts_xfer_write_start(u->e->sb, path, u->user, -1, &u->x, &err) < 0)
		return up_fail_be(u, &err);
	return 0;
}

/* The current file is complete: commit it, set its metadata, add it to the reply. */
static int up_end(struct upload *u)
{
	struct ts_error err = { 0 };
	const char *slash = strrchr(u->cur_abs, '/');
	json_t *j, *meta = NULL;
	int r;

	if (ts_xfer_finish(u->x, &err) < 0)
		return up_fail_be(u, &err);
	r = up_wait(u, true);
	ts_xfer_close(u->x);
	u->x = NULL;
	if (r < 0)
		return r;
	/* the new file is a new inode: without metadata headers it has none (envd clears) */
	if (u->n_meta &&
	    ts_file_set_metadata(u->e->sb, u->cur, u->user, u->meta, u->n_meta, &err) < 0)
		return up_fail_be(u, &err);
	if (u->n_meta) {
		meta = json_object();
		for (size_t i = 0; meta && i < u->n_meta; i++)
			json_object_set_new(meta, u->meta[i].key, json_string(u->meta[i].value));
	}
	j = json_pack("{s:o, s:o, s:s, s:o*}", "path", ts_pj_text(u->cur_abs), "name",
		      ts_pj_text(slash && slash[1] ? slash + 1 : u->cur_abs), "type", "file",
		      "metadata", meta);
	if (!j || json_array_append_new(u->results, j) < 0)
		return up_fail(u, 500, "out of memory");
	return 0;
}

static enum MHD_Result up_part(void *cls, enum MHD_ValueKind kind, const char *key,
			       const char *filename, const char *content_type,
			       const char *transfer_encoding, const char *data, uint64_t off,
			       size_t size)
{
	struct upload *u = cls;

	if (u->status)
		return MHD_NO;
	/* offset 0 is a new part, except that a part whose data has not come yet is
	 * announced with size 0 and then again at offset 0 with its first bytes: the same
	 * name and filename with nothing received is that part going on */
	if (off == 0 && u->in_part && u->part_got == 0 && !strcmp(u->part_key, key ? key : "") &&
	    !strcmp(u->part_name, filename ? filename : ""))
		off = 1;
	if (off == 0) {
		u->in_part = true;
		u->part_got = 0;
		snprintf(u->part_key, sizeof(u->part_key), "%s", key ? key : "");
		snprintf(u->part_name, sizeof(u->part_name), "%s", filename ? filename : "");
		if (u->x && up_end(u) < 0)
			return MHD_NO;
		/* envd: only parts named `file`; with a `path` query their filenames do not
		 * count, without it each filename is the file's whole path, kept */
		u->skipping = !key || strcmp(key, "file") != 0;
		if (u->skipping)
			return MHD_YES;
		if (!u->qpath && (!filename || !filename[0])) {
			up_fail(u, 400, "a `file` part without a filename needs the `path` query");
			return MHD_NO;
		}
		if (up_start(u, u->qpath ? u->qpath : filename) < 0)
			return MHD_NO;
	}
	u->part_got += size;
	if (u->skipping || !size)
		return MHD_YES;
	return up_feed(u, (const uint8_t *)data, size) < 0 ? MHD_NO : MHD_YES;
}

/* An octet-stream piece, gunzipped when it came gzipped. */
static int up_octet(struct upload *u, const uint8_t *p, size_t n)
{
	uint8_t out[FILES_PIECE];

	if (!u->gzip)
		return up_feed(u, p, n);
	u->z.next_in = (Bytef *)(uintptr_t)p;
	u->z.avail_in = (uInt)n;
	while (u->z.avail_in && !u->z_end) {
		int zr;

		u->z.next_out = out;
		u->z.avail_out = sizeof(out);
		zr = inflate(&u->z, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END)
			return up_fail(u, 400, "the gzip body is malformed");
		if (sizeof(out) - u->z.avail_out &&
		    up_feed(u, out, sizeof(out) - u->z.avail_out) < 0)
			return -EIO;
		u->z_end = zr == Z_STREAM_END;
	}
	if (u->z.avail_in)
		return up_fail(u, 400, "data after the end of the gzip body");
	return 0;
}

static int up_data(void *userdata, const uint8_t *p, size_t n)
{
	struct upload *u = userdata;

	if (u->status)
		return -EINVAL;
	if (u->octet)
		return up_octet(u, p, n);
	if (u->M->post_process(u->pp, (const char *)p, n) != MHD_YES)
		return up_fail(u, 400, "malformed multipart body");
	return 0;
}

static void up_meta_header(void *userdata, const char *name, const char *value)
{
	struct upload *u = userdata;
	const char *key = name + strlen("X-Metadata-");
	size_t klen = strlen(key), vlen = strlen(value);
	char *k, *v;

	if (u->status)
		return;
	if (!klen || klen > FILES_META_KEY_MAX || vlen > FILES_META_VALUE_MAX) {
		up_fail(u, 400, "metadata key `%.64s`: keys of 1 to %d, values up to %d bytes", key,
			FILES_META_KEY_MAX, FILES_META_VALUE_MAX);
		return;
	}
	for (size_t i = 0; i < vlen; i++)
		if (value[i] < 0x20 || value[i] > 0x7e) {
			up_fail(u, 400, "metadata value for key `%.64s` must be printable ASCII",
				key);
			return;
		}
	if (u->n_meta == FILES_META_MAX) {
		up_fail(u, 400, "more than %d metadata headers", FILES_META_MAX);
		return;
	}
	k = strdup(key);
	v = strdup(value);
	if (!k || !v) {
		free(k);
		free(v);
		up_fail(u, 500, "out of memory");
		return;
	}
	/* envd lowercases the keys (HTTP header names are case-insensitive) */
	for (char *c = k; *c; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c - 'A' + 'a');
	for (size_t i = 0; i < u->n_meta; i++)
		if (!strcmp(u->meta[i].key, k)) {
			free(k);
			free(v);
			up_fail(u, 400, "metadata key `%.64s` given twice", key);
			return;
		}
	u->meta[u->n_meta].key = k;
	u->meta[u->n_meta].value = v;
	u->n_meta++;
}

/* Everything known before the body: who, where, how it is encoded. A refusal is
 * recorded and answered by files_post once the body is drained (returning < 0: the
 * layer drops the body), except what ts_envd_target answers itself and an upload
 * declaring more than the bound, answered at once rather than read. */
static int files_post_begin(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_envd_target t;
	const char *ct = ts_req_header(req, "Content-Type") ?: "";
	const char *ce = ts_req_header(req, "Content-Encoding");
	const char *cl = ts_req_header(req, "Content-Length");
	struct upload *u;

	if (cl && strtoull(cl, NULL, 10) > FILES_UPLOAD_MAX) {
		ts_srv_reply_error(req, 413, "upload larger than %llu bytes", FILES_UPLOAD_MAX);
		return -EFBIG;
	}
	u = calloc(1, sizeof(*u));
	if (u)
		u->seen = calloc(FILES_PARTS_MAX, sizeof(*u->seen));
	if (u)
		u->results = json_array();
	if (!u || !u->seen || !u->results) {
		if (u) {
			free(u->seen);
			json_decref(u->results);
		}
		free(u);
		ts_srv_reply_error(req, 500, "out of memory");
		return -ENOMEM;
	}
	u->M = ts_req_mhd(req);
	u->srv = srv;
	u->req = req;
	ts_req_set_userdata(req, u, up_free);
	if (ts_envd_target_deferred(srv, req, TS_ENVD_SIGNATURE, &t, &u->refusal) < 0) {
		u->status = u->refusal.status ? u->refusal.status : 500;
		return -EACCES;
	}
	u->e = ts_srv_sb_ref(t.e);
	if (!signature_ok(req, &t, "write", u) ||
	    !user_ok(req, t.e->sb, u->ubuf, sizeof(u->ubuf), &u->user, u))
		return -EACCES;
	u->qpath = ts_req_query(req, "path");
	ts_req_headers(req, "X-Metadata-", up_meta_header, u);
	if (u->status)
		return -EINVAL;
	if (!strncasecmp(ct, "multipart/form-data", strlen("multipart/form-data"))) {
		u->pp = u->M->create_post_processor(ts_req_mhd_connection(req), FILES_PP_BUFFER,
						    up_part, u);
		if (!u->pp)
			return up_fail(u, 400, "malformed multipart content type");
	} else if (!strncasecmp(ct, "application/octet-stream",
				strlen("application/octet-stream"))) {
		if (!u->qpath)
			return up_fail(u, 400, "an octet-stream upload needs the `path` query");
		if (ce && !strcasecmp(ce, "gzip")) {
			if (inflateInit2(&u->z, 16 + MAX_WBITS) != Z_OK)
				return up_fail(u, 500, "out of memory");
			u->gzip = u->z_init = true;
		} else if (ce && strcasecmp(ce, "identity")) {
			return up_fail(u, 400, "unsupported content encoding `%.64s`", ce);
		}
		u->octet = true;
		if (up_start(u, u->qpath) < 0)
			return -EINVAL;
	} else {
		return up_fail(u, 400, "unsupported content type `%.128s`", ct);
	}
	ts_req_on_data(req, up_data, u);
	return 0;
}

static void files_post(void *ctx, struct ts_req *req)
{
	struct upload *u = ts_req_userdata(req);

	if (!u) {
		ts_srv_reply_error(req, 500, "the upload was not started");
		return;
	}
	/* the post processor hands over the last part's tail when it is destroyed */
	if (u->pp) {
		if (u->M->destroy_post_processor(u->pp) != MHD_YES && !u->status)
			up_fail(u, 400, "malformed multipart body");
		u->pp = NULL;
	}
	if (!u->status && u->octet && u->gzip && !u->z_end)
		up_fail(u, 400, "the gzip body is cut short");
	if (!u->status && u->x)
		up_end(u);
	if (!u->status && ts_req_failed(req))
		up_fail(u, 400, "the upload failed");
	if (u->refusal.body) {
		ts_req_reply_json(req, u->refusal.status, u->refusal.body);
		u->refusal.body = NULL;
		return;
	}
	if (u->status) {
		ts_srv_reply_error(req, u->status, "%s", u->msg);
		return;
	}
	ts_req_reply_json(req, 200, json_incref(u->results));
}

/* --- GET /health ----------------------------------------------------------------------- */

static void health(void *ctx, struct ts_req *req)
{
	struct ts_envd_target t;

	/* a sandbox that is not serving (paused, stopped, past its deadline) is answered 502
	 * by ts_envd_target: the SDK's isRunning() false */
	if (ts_envd_target(ctx, req, TS_ENVD_NO_TOKEN, &t) < 0)
		return;
	ts_req_reply(req, 204, NULL, NULL, 0);
}

const struct ts_route ts_envd_files_routes[] = {
	{ "GET", "/files", files_get, NULL, 0 },
	{ "POST", "/files", files_post, files_post_begin, FILES_UPLOAD_MAX },
	{ "GET", "/health", health, NULL, 0 },
	{ 0 },
};
