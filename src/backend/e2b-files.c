/* SPDX-License-Identifier: Apache-2.0 */
/* The e2b backend's files: filesystem.Filesystem (unary and WatchDir) and envd's /files. */
#include "e2b.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cleanup.h"
#include "util.h"

#define E2B_ENTRIES_MAX (1U << 20)
#define E2B_XFER_PIECE (64U << 10) /* what one read step hands over at most */

/* --- unary calls ------------------------------------------------------------------- */

static int fs_call(struct ts_sb *sb, const char *method, json_t *req, const char *user,
		   json_t **ret, struct ts_error *err)
{
	char path[64];
	json_t *ans = NULL;
	int r;

	if (!req)
		return ts_err(err, -EINVAL, "a path that is not valid UTF-8");
	snprintf(path, sizeof(path), "filesystem.Filesystem/%s", method);
	r = e2b_envd_unary(e2b_target_of(sb), path, req, user, &ans, err);
	json_decref(req);
	if (ret)
		*ret = ans;
	else
		json_decref(ans);
	return r;
}

static const char *const file_types[] = { "UNSPECIFIED", "FILE", "DIRECTORY", "SYMLINK" };

static uint32_t owner_id(const char *s)
{
	if (!s || !strcmp(s, "root"))
		return 0;
	if (!strcmp(s, "user"))
		return 1000; /* E2B templates' user (spec §8) */
	return (uint32_t)strtoul(s, NULL, 10);
}

static int entry_from(json_t *j, struct ts_be_entry *e, struct ts_error *err)
{
	const char *name = e2b_pj_str(j, "name", NULL, NULL),
		   *path = e2b_pj_str(j, "path", NULL, NULL);
	const char *target = e2b_pj_str(j, "symlinkTarget", "symlink_target", NULL);
	const char *mtime = e2b_pj_str(j, "modifiedTime", "modified_time", NULL);
	long long size = 0, mode = 0, ms = 0;
	int type = 0;

	memset(e, 0, sizeof(*e));
	if (!name || !path || e2b_pj_int(e2b_pj_get(j, "size", NULL), &size) < 0 || size < 0 ||
	    e2b_pj_int(e2b_pj_get(j, "mode", NULL), &mode) < 0 ||
	    e2b_pj_enum(e2b_pj_get(j, "type", NULL), "FILE_TYPE_", file_types,
			ELEMENTSOF(file_types), &type) < 0)
		return ts_err(err, -EPROTO, "a bad entry from envd");
	e->type = type == 1   ? TS_BE_FILE
		  : type == 2 ? TS_BE_DIR
		  : type == 3 ? TS_BE_SYMLINK
			      : TS_BE_OTHER;
	e->mode = (unsigned)mode & 07777;
	e->size = (uint64_t)size;
	if (mtime && e2b_time_parse(mtime, &ms) == 0 && ms > 0)
		e->mtime_ms = (uint64_t)ms;
	e->uid = owner_id(e2b_pj_str(j, "owner", NULL, NULL));
	e->gid = owner_id(e2b_pj_str(j, "group", NULL, NULL));
	e->name = strdup(name);
	e->path = strdup(path);
	if (target)
		e->symlink_target = strdup(target);
	if (!e->name || !e->path || (target && !e->symlink_target)) {
		ts_be_entry_clear(e);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	return 0;
}

int e2b_file_stat(struct ts_sb *sb, const char *path, const char *user, struct ts_be_entry *ret,
		  struct ts_error *err)
{
	json_t *ans = NULL;
	int r = fs_call(sb, "Stat", json_pack("{s:s}", "path", path), user, &ans, err);

	if (r == 0)
		r = entry_from(json_object_get(ans, "entry"), ret, err);
	json_decref(ans);
	return r < 0 ? ts_err_prefix(err, r, "`%.200s`", path) : 0;
}

int e2b_file_list(struct ts_sb *sb, const char *path, unsigned depth, const char *user,
		  struct ts_be_entry **ret, size_t *n, struct ts_error *err)
{
	json_t *ans = NULL, *entries;
	struct ts_be_entry *v;
	size_t count;
	int r = fs_call(sb, "ListDir",
			json_pack("{s:s,s:I}", "path", path, "depth", (json_int_t)depth), user,
			&ans, err);

	if (r < 0)
		return ts_err_prefix(err, r, "`%.200s`", path);
	entries = json_object_get(ans, "entries");
	count = json_array_size(entries);
	if (count > E2B_ENTRIES_MAX) {
		json_decref(ans);
		return ts_err(err, -EPROTO, "`%.200s`: %zu entries", path, count);
	}
	v = calloc(count ? count : 1, sizeof(*v));
	if (!v) {
		json_decref(ans);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < count; i++)
		if ((r = entry_from(json_array_get(entries, i), &v[i], err)) < 0) {
			ts_be_entries_free(v, i);
			json_decref(ans);
			return r;
		}
	json_decref(ans);
	*ret = v;
	*n = count;
	return 0;
}

int e2b_file_mkdir(struct ts_sb *sb, const char *path, const char *user, unsigned mode,
		   bool *created, struct ts_error *err)
{
	/* envd makes directories 0755 and takes no mode */
	int r = fs_call(sb, "MakeDir", json_pack("{s:s}", "path", path), user, NULL, err);

	*created = r == 0;
	if (r == -EEXIST) {
		ts_err_clear(err);
		return 0;
	}
	return r < 0 ? ts_err_prefix(err, r, "`%.200s`", path) : 0;
}

int e2b_file_remove(struct ts_sb *sb, const char *path, const char *user, struct ts_error *err)
{
	int r = fs_call(sb, "Remove", json_pack("{s:s}", "path", path), user, NULL, err);

	return r < 0 ? ts_err_prefix(err, r, "`%.200s`", path) : 0;
}

int e2b_file_rename(struct ts_sb *sb, const char *from, const char *to, const char *user,
		    struct ts_error *err)
{
	int r = fs_call(sb, "Move", json_pack("{s:s,s:s}", "source", from, "destination", to), user,
			NULL, err);

	return r < 0 ? ts_err_prefix(err, r, "`%.200s` to `%.200s`", from, to) : 0;
}

/* --- /files ------------------------------------------------------------------------ */

struct e2b_xfer {
	struct e2b_stream *st;
	bool write;
	char path[256]; /* for messages */
};

/*
 * How an upload goes (spec §5, POST /files). The SDK sends a stream (a ReadableStream)
 * as octet-stream, one POST per file with the path in the query, which envd takes from
 * 0.5.7 on ("octet-stream | useOctetStream:true, a ReadableStream, or gzip:true (needs
 * envd >=0.5.7)"; delta §6: only octet-stream *without* `path` is a 400): a transfer is
 * such a stream, of a length nobody knows before it ends. An older envd gets what the
 * SDK sends it for a Blob, multipart/form-data, streamed all the same.
 */
#define E2B_OCTET_STREAM_ENVD 0, 5, 7

/* A filename a form's part can carry as it is: curl would escape these, and envd read
 * them another way. */
static bool form_name_ok(const char *name)
{
	return !strpbrk(name, "\"\\\r\n");
}

static struct e2b_xfer *ex(const struct ts_xfer *x)
{
	return x->impl;
}

int e2b_xfer_start(struct ts_sb *sb, const char *path, const char *user, bool write, int mode,
		   struct ts_xfer *x, struct ts_error *err)
{
	const struct e2b_target *t = e2b_target_of(sb);
	_cleanup_free_ char *p = e2b_uri_component(path), *u = NULL, *url = NULL;
	struct e2b_xfer *m;
	struct curl_slist *h = NULL, *h2 = NULL;
	bool form;
	int r;

	/* /files takes the user as a query parameter, not Basic auth (spec §5); it has no
	 * mode: envd makes files 0666 minus umask */
	if (!p || (user && *user && !(u = e2b_uri_component(user))) ||
	    asprintf(&url, "%s/files?path=%s%s%s", t->envd_url, p, u ? "&username=" : "",
		     u ? u : "") < 0)
		return ts_err(err, -ENOMEM, "out of memory");
	if (!(m = calloc(1, sizeof(*m))))
		return ts_err(err, -ENOMEM, "out of memory");
	form = write &&
	       e2b_envd_older(((struct e2b_sb *)sb->impl)->envd_version, E2B_OCTET_STREAM_ENVD);
	if (e2b_envd_headers(t, NULL, &h) < 0 ||
	    (write && !form &&
	     !(h2 = t->e->C->slist_append(h, "Content-Type: application/octet-stream")))) {
		t->e->C->slist_free_all(h);
		free(m);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	if (h2)
		h = h2;
	m->write = write;
	snprintf(m->path, sizeof(m->path), "%s", path);
	if (form) {
		/* with the `path` query envd ignores the filename (delta §6): one that
		 * cannot go as it is goes as `file` */
		struct e2b_form_part part = { .filename = form_name_ok(path) ? path : "file",
					      .pushed = true };

		r = e2b_stream_open_form(t->e, url, h, &part, 1, TS_BE_REPLY_MS, &m->st, err);
	} else {
		r = e2b_stream_open(t->e, url, !write, h, NULL, 0, write, true, TS_BE_REPLY_MS,
				    &m->st, err);
	}
	if (r < 0) {
		free(m);
		return ts_err_prefix(err, r, "`%.200s`", path);
	}
	x->impl = m;
	return 0;
}

int e2b_xfer_fd(const struct ts_xfer *x)
{
	return ex(x)->st->epfd;
}

short e2b_xfer_events(const struct ts_xfer *x)
{
	return POLLIN;
}

/* A finished transfer that did not succeed. */
static int xfer_failed(struct e2b_xfer *m, struct ts_error *err)
{
	struct e2b_stream *s = m->st;
	struct e2b_resp resp = { .status = s->status };
	int r;

	if (s->result != CURLE_OK && !s->status)
		r = e2b_curl_error(s->C, s->result, s->errbuf, "the transfer", err);
	else if (s->result != CURLE_OK && s->status == 200)
		r = e2b_curl_error(s->C, s->result, s->errbuf, "the transfer was cut", err);
	else {
		resp.body = (char *)s->in.buf + s->in.off;
		resp.len = e2b_envelopes_pending(&s->in);
		/* e2b_resp_error reads a NUL-terminated body: give it a copy */
		resp.body = strndup(resp.body ? resp.body : "", resp.len);
		r = e2b_resp_error(&resp, "envd /files", err);
		free(resp.body);
	}
	return ts_err_prefix(err, r, "`%.200s`", m->path);
}

int e2b_xfer_step(struct ts_xfer *x, const uint8_t **data, size_t *len, struct ts_error *err)
{
	struct e2b_xfer *m = ex(x);
	struct e2b_stream *s = m->st;
	int r;

	for (int round = 0; round < 2; round++) {
		size_t have = e2b_envelopes_pending(&s->in);

		if (!m->write && s->status == 200 && have) {
			if (have > E2B_XFER_PIECE)
				have = E2B_XFER_PIECE;
			*data = s->in.buf + s->in.off;
			*len = have;
			s->in.off += have;
			e2b_stream_wake(s);
			return 1;
		}
		if (s->done) {
			if (s->result == CURLE_OK && s->status == 200)
				return 2;
			return xfer_failed(m, err);
		}
		if (round == 0 && (r = e2b_stream_drive(s, err)) < 0)
			return ts_err_prefix(err, r, "`%.200s`", m->path);
	}
	return 0;
}

int e2b_xfer_push(struct ts_xfer *x, const void *data, size_t len, bool finish,
		  struct ts_error *err)
{
	struct e2b_xfer *m = ex(x);

	if (!m->write)
		return ts_err(err, -EINVAL, "a read takes no data");
	if (m->st->done)
		return 0; /* it failed already: step says how */
	return e2b_stream_push(m->st, data, len, finish, err);
}

void e2b_xfer_close(struct ts_xfer *x)
{
	struct e2b_xfer *m = ex(x);

	/* an unfinished upload is cut mid-body: envd writes nothing (its writes are
	 * atomic) */
	if (m)
		e2b_stream_free(m->st);
	free(m);
	x->impl = NULL;
}

/* --- files.write of several files ---------------------------------------------------- */

/* The answer of a write of n files: 200 with one entry each. */
static int many_answer(struct e2b_xfer *m, size_t n, struct ts_error *err)
{
	struct e2b_stream *s = m->st;
	json_t *j;
	int r = 0;

	if (s->result != CURLE_OK || s->status != 200)
		return xfer_failed(m, err);
	j = json_loadb((const char *)s->in.buf + s->in.off, e2b_envelopes_pending(&s->in), 0, NULL);
	if (!json_is_array(j) || json_array_size(j) != n)
		r = ts_err(err, -EPROTO, "envd /files: an answer of %zu entries for %zu files",
			   json_array_size(j), n);
	json_decref(j);
	return r;
}

int e2b_file_write_many(struct ts_sb *sb, const struct ts_file_data *files, size_t n,
			const char *user, size_t *done, struct ts_error *err)
{
	const struct e2b_target *t = e2b_target_of(sb);
	_cleanup_free_ char *u = NULL, *url = NULL;
	_cleanup_free_ struct e2b_form_part *parts = NULL;
	struct e2b_xfer m = { .write = true };
	struct curl_slist *h = NULL;
	int r;

	/* a path no filename can carry goes in a query, one POST each (as the SDK's
	 * octet-stream writes) */
	for (size_t i = 0; i < n; i++)
		if (!form_name_ok(files[i].path)) {
			size_t k = 0;

			for (r = 0; k < n && r == 0; k++)
				if ((r = ts_file_write(sb, files[k].path, user, files[k].data,
						       files[k].len, files[k].mode, err)) < 0)
					break;
			if (done)
				*done = k;
			return r;
		}
	/* the SDK's files.write([...]): no `path` query, the user in `username` (spec §5) */
	if ((user && *user && !(u = e2b_uri_component(user))) ||
	    asprintf(&url, "%s/files%s%s", t->envd_url, u ? "?username=" : "", u ? u : "") < 0 ||
	    !(parts = calloc(n, sizeof(*parts))))
		return ts_err(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		parts[i] = (struct e2b_form_part){ .filename = files[i].path,
						   .data = files[i].data,
						   .len = files[i].len };
	if (e2b_envd_headers(t, NULL, &h) < 0) {
		t->e->C->slist_free_all(h);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	snprintf(m.path, sizeof(m.path), "%s%s", files[0].path, n > 1 ? " and the rest" : "");
	r = e2b_stream_open_form(t->e, url, h, parts, n, TS_BE_REPLY_MS, &m.st, err);
	while (r == 0 && !m.st->done)
		r = e2b_stream_wait(m.st, 1000, err);
	if (r == 0)
		r = many_answer(&m, n, err);
	else
		r = ts_err_prefix(err, r, "`%.200s`", m.path);
	e2b_stream_free(m.st);
	if (done)
		*done = r == 0 ? n : 0;
	return r;
}

/* --- WatchDir ---------------------------------------------------------------------- */

struct e2b_watch {
	struct e2b_stream *st;
	bool started, finished;
};

static const char *const event_types[] = { "UNSPECIFIED", "CREATE", "WRITE",
					   "REMOVE",	  "RENAME", "CHMOD" };

static int watch_gone(struct e2b_watch *m, struct ts_error *err)
{
	struct e2b_stream *s = m->st;

	if (s->result != CURLE_OK)
		return e2b_curl_error(s->C, s->result, s->errbuf, "the watch", err);
	if (s->status != 200)
		return e2b_connect_error(s->status, (const char *)s->in.buf + s->in.off,
					 e2b_envelopes_pending(&s->in), "the watch", err);
	return ts_err(err, m->finished ? -EPIPE : -EIO,
		      m->finished ? "the watch has ended"
				  : "the watch ended without its EndStreamResponse");
}

/* 1 with an event, 2 for the start, 0 nothing whole buffered, -errno. */
static int watch_next(struct e2b_watch *m, struct ts_watch_event *ev, struct ts_error *err)
{
	for (;;) {
		const uint8_t *payload;
		size_t len;
		uint8_t flags;
		json_t *j, *v;
		int r, op = 0;

		if (m->finished)
			return ts_err(err, -EPIPE, "the watch has ended");
		if (m->st->status && m->st->status != 200)
			return m->st->done ? watch_gone(m, err) : 0;
		r = e2b_envelopes_next(&m->st->in, &flags, &payload, &len, err);
		if (r <= 0)
			return r;
		j = e2b_json_parse(len ? (const char *)payload : "{}", len ? len : 2, err);
		if (!j)
			return -EPROTO;
		if (flags & E2B_FLAG_END) {
			json_t *error = json_object_get(j, "error");

			m->finished = true;
			r = error ? ts_err(err,
					   e2b_connect_errno(e2b_pj_str(error, "code", NULL, NULL)),
					   "watch: %.300s",
					   e2b_pj_str(error, "message", NULL, "no message"))
				  : ts_err(err, -EPIPE, "the watch has ended");
			json_decref(j);
			return r;
		}
		if (e2b_pj_get(j, "start", NULL)) {
			m->started = true;
			json_decref(j);
			return 2;
		}
		if (!m->started) {
			json_decref(j);
			return ts_err(err, -EPROTO, "the watch did not begin with start");
		}
		v = e2b_pj_get(j, "filesystem", NULL);
		if (!v) {
			json_decref(j); /* keepalive */
			continue;
		}
		if (e2b_pj_enum(e2b_pj_get(v, "type", NULL), "EVENT_TYPE_", event_types,
				ELEMENTSOF(event_types), &op) < 0 ||
		    op < TS_WATCH_CREATE || op > TS_WATCH_CHMOD) {
			json_decref(j); /* a kind newer than us: the SDK drops it too */
			continue;
		}
		memset(ev, 0, sizeof(*ev));
		ev->op = (enum ts_watch_op)op;
		snprintf(ev->name, sizeof(ev->name), "%s", e2b_pj_str(v, "name", NULL, ""));
		json_decref(j);
		return 1;
	}
}

int e2b_watch_start(struct ts_sb *sb, const char *path, bool recursive, const char *user,
		    struct ts_watch *w, struct ts_error *err)
{
	struct e2b_watch *m = calloc(1, sizeof(*m));
	json_t *req = json_pack("{s:s}", "path", path);
	long long deadline = (long long)ts_now_ms() + TS_BE_REPLY_MS;
	int r;

	if (!m || !req) {
		free(m);
		json_decref(req);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	if (recursive)
		json_object_set_new(req, "recursive", json_true());
	r = e2b_stream_rpc(e2b_target_of(sb), "filesystem.Filesystem/WatchDir", req, user, 0,
			   &m->st, err);
	while (r == 0) {
		struct ts_watch_event ev;

		r = watch_next(m, &ev, err);
		if (r == 2) {
			r = 0;
			break;
		}
		if (r == 1)
			r = ts_err(err, -EPROTO, "the watch did not begin with start");
		else if (r == 0 && m->st->done)
			r = watch_gone(m, err);
		else if (r == 0 && (long long)ts_now_ms() > deadline)
			r = ts_err(err, -ETIMEDOUT, "the sandbox did not start the watch in %d s",
				   TS_BE_REPLY_MS / 1000);
		else if (r == 0)
			r = e2b_stream_wait(m->st, 1000, err);
	}
	if (r < 0) {
		e2b_stream_free(m->st);
		free(m);
		return ts_err_prefix(err, r, "watch `%.200s`", path);
	}
	e2b_stream_guard_off(m->st);
	e2b_stream_wake(m->st);
	w->impl = m;
	return 0;
}

int e2b_watch_fd(const struct ts_watch *w)
{
	return ((struct e2b_watch *)w->impl)->st->epfd;
}

int e2b_watch_step(struct ts_watch *w, struct ts_watch_event *ev, struct ts_error *err)
{
	struct e2b_watch *m = w->impl;

	for (int round = 0; round < 2; round++) {
		int r = watch_next(m, ev, err);

		if (r == 1) {
			e2b_stream_wake(m->st);
			return 1;
		}
		if (r < 0)
			return r;
		if (m->st->done)
			return watch_gone(m, err);
		if (round == 0 && (r = e2b_stream_drive(m->st, err)) < 0)
			return r;
	}
	return 0;
}

void e2b_watch_close(struct ts_watch *w)
{
	struct e2b_watch *m = w->impl;

	if (m)
		e2b_stream_free(m->st);
	free(m);
	w->impl = NULL;
}
