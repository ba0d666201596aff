/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The local backend's files: a file connection to the sandbox's init is served by a
 * worker of its own inside the sandbox (runtime/files.c). Requests (stat, list, mkdir,
 * remove, rename) are one connection each, through src/lib/fileclient.c; transfers and watches
 * are streams driven without blocking: their replies are read and checked here, as
 * untrusted input, as fileclient.c checks them.
 */
#include "local.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fileclient.h"
#include "util.h"

#define TS_XFER_QUEUE_MAX (2U * TS_CTL_CHUNK) /* bytes a write may queue before step */
/* The file worker's deepest LIST and WATCH (runtime/files-internal.h): a recursive watch
 * asks for this much, a deeper list is cut to it. */
#define TS_LOCAL_DEPTH_MAX 16

int ts_local_file_conn(struct ts_sb *sb, const char *user, struct ts_ctl_client **ret,
		       struct ts_error *err)
{
	_cleanup_(ts_ctl_client_freep) struct ts_ctl_client *c = NULL;
	long uid;
	int r = ts_local_uid(user, &uid, err);

	if (r < 0)
		return r;
	r = ts_local_connect(sb, &c, err);
	if (r < 0)
		return r;
	if (uid >= 0 && (r = ts_files_as_user(c->fd, (unsigned)uid, err)) < 0)
		return r;
	*ret = TAKE_PTR(c);
	return 0;
}

/* The absolute path inside, as init resolves a relative one (from the user's home). */
static void absolute(const char *path, const char *user, char *out, size_t len)
{
	const char *home = user && !strcmp(user, "root") ? "/root" : "/home/user";

	if (path[0] == '/')
		snprintf(out, len, "%s", path);
	else if (!path[0] || !strcmp(path, "."))
		snprintf(out, len, "%s", home);
	else
		snprintf(out, len, "%s/%s", home, path);
}

static int to_entry(const struct ts_file_info *fi, const char *abs_path, const char *name,
		    struct ts_be_entry *e)
{
	static const enum ts_be_file_type types[] = { [TS_FILE_TYPE_FILE] = TS_BE_FILE,
						      [TS_FILE_TYPE_DIR] = TS_BE_DIR,
						      [TS_FILE_TYPE_SYMLINK] = TS_BE_SYMLINK,
						      [TS_FILE_TYPE_OTHER] = TS_BE_OTHER };
	char copy[PATH_MAX];

	memset(e, 0, sizeof(*e));
	snprintf(copy, sizeof(copy), "%s", abs_path);
	e->path = strdup(abs_path);
	e->name = strdup(name ? name : basename(copy));
	e->type = (size_t)fi->type < sizeof(types) / sizeof(types[0]) ? types[fi->type]
								      : TS_BE_OTHER;
	e->mode = fi->mode & 0777;
	e->size = fi->size;
	e->mtime_ms = fi->mtime_ms;
	e->uid = fi->uid;
	e->gid = fi->gid;
	if (fi->type == TS_FILE_TYPE_SYMLINK)
		e->symlink_target = strdup(fi->target);
	if (!e->path || !e->name || (fi->type == TS_FILE_TYPE_SYMLINK && !e->symlink_target)) {
		ts_be_entry_clear(e);
		return -ENOMEM;
	}
	if (fi->metadata && fi->metadata[0]) {
		size_t n = 0;

		while (fi->metadata[n])
			n++;
		e->metadata = calloc(n + 1, sizeof(*e->metadata));
		for (size_t i = 0; e->metadata && i < n; i++)
			if (!(e->metadata[i] = strdup(fi->metadata[i]))) {
				ts_be_entry_clear(e);
				return -ENOMEM;
			}
		if (!e->metadata) {
			ts_be_entry_clear(e);
			return -ENOMEM;
		}
	}
	return 0;
}

int ts_local_file_stat(struct ts_sb *sb, const char *path, const char *user,
		       struct ts_be_entry *ret, struct ts_error *err)
{
	_cleanup_(ts_ctl_client_freep) struct ts_ctl_client *c = NULL;
	_cleanup_free_ struct ts_file_info *fi = calloc(1, sizeof(*fi));
	int r = fi ? ts_local_file_conn(sb, user, &c, err) : ts_err(err, -ENOMEM, "out of memory");

	if (r == 0)
		r = ts_files_stat_ex(c->fd, path, TS_FILES_XATTRS, fi, err);
	if (r == 0 && (r = to_entry(fi, fi->path, NULL, ret)) < 0)
		ts_err(err, r, "out of memory");
	if (fi)
		ts_file_info_clear(fi);
	return r;
}

struct collect {
	const char *base;
	struct ts_be_entry *v;
	size_t n, cap;
};

/* Is rel, an entry's path as the sandbox sent it, plain names joined by "/" (never empty,
 * "." or "..")? Its last name in *last. */
static bool relative_ok(const char *rel, const char **last)
{
	char copy[PATH_MAX], *save = NULL;
	bool any = false;

	if (strlen(rel) >= sizeof(copy))
		return false;
	snprintf(copy, sizeof(copy), "%s", rel);
	if (copy[0] == '/' || (copy[0] && copy[strlen(copy) - 1] == '/') || strstr(copy, "//"))
		return false;
	for (char *n = strtok_r(copy, "/", &save); n; n = strtok_r(NULL, "/", &save)) {
		if (!ts_files_name_ok(n))
			return false;
		any = true;
	}
	*last = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
	return any;
}

static int collect(const struct ts_file_info *fi, void *userdata, struct ts_error *err)
{
	struct collect *c = userdata;
	char abs_path[PATH_MAX * 2];
	const char *last;

	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct ts_be_entry *v = reallocarray(c->v, cap, sizeof(*v));

		if (!v)
			return ts_err(err, -ENOMEM, "out of memory");
		c->v = v;
		c->cap = cap;
	}
	snprintf(abs_path, sizeof(abs_path), "%s/%s", !strcmp(c->base, "/") ? "" : c->base,
		 fi->path);
	/* The name is the last component (E2B's EntryInfo.name), the path says where. init
	 * is untrusted: an entry whose path is not plain names keeps that path as its name,
	 * as the sandbox sent it, for callers to refuse (cp skips it, FA-12). */
	if (!relative_ok(fi->path, &last))
		last = fi->path;
	if (to_entry(fi, abs_path, last, &c->v[c->n]) < 0)
		return ts_err(err, -ENOMEM, "out of memory");
	c->n++;
	return 0;
}

int ts_local_file_list(struct ts_sb *sb, const char *path, unsigned depth, const char *user,
		       struct ts_be_entry **ret, size_t *n, struct ts_error *err)
{
	_cleanup_(ts_ctl_client_freep) struct ts_ctl_client *c = NULL;
	char base[PATH_MAX];
	struct collect col = { .base = base };
	int r;

	absolute(path, user, base, sizeof(base));
	r = ts_local_file_conn(sb, user, &c, err);
	if (r == 0)
		r = ts_files_list_ex(c->fd, path,
				     depth > TS_LOCAL_DEPTH_MAX ? TS_LOCAL_DEPTH_MAX : depth,
				     TS_FILES_XATTRS, collect, &col, err);
	if (r < 0) {
		ts_be_entries_free(col.v, col.n);
		return r;
	}
	*ret = col.v;
	*n = col.n;
	return 0;
}

int ts_local_file_mkdir(struct ts_sb *sb, const char *path, const char *user, unsigned mode,
			bool *created, struct ts_error *err)
{
	_cleanup_(ts_ctl_client_freep) struct ts_ctl_client *c = NULL;
	_cleanup_free_ struct ts_file_info *fi = malloc(sizeof(*fi));
	int r = fi ? ts_local_file_conn(sb, user, &c, err) : ts_err(err, -ENOMEM, "out of memory");

	if (r < 0)
		return r;
	/* E2B's makeDir: an existing directory is "false" (already_exists), anything else
	 * there invalid_argument */
	r = ts_files_stat(c->fd, path, fi, err);
	if (r == 0 && fi->type != TS_FILE_TYPE_SYMLINK) {
		*created = false;
		return fi->type == TS_FILE_TYPE_DIR
			       ? 0
			       : ts_err(err, -ENOTDIR, "`%s` exists and is not a directory", path);
	}
	if (r < 0 && r != -ENOENT)
		return r;
	/* a symlink counts as what it points to (envd stats with os.Stat): mkdir -p,
	 * resolved inside the sandbox's root, is done when it names a directory */
	bool link = r == 0;
	ts_err_clear(err);
	ts_ctl_client_free(c);
	c = NULL;
	r = ts_local_file_conn(sb, user, &c, err);
	if (r == 0)
		r = ts_files_mkdir(c->fd, path, mode, err);
	*created = r == 0 && !link;
	return r;
}

int ts_local_file_remove(struct ts_sb *sb, const char *path, const char *user, struct ts_error *err)
{
	_cleanup_(ts_ctl_client_freep) struct ts_ctl_client *c = NULL;
	int r = ts_local_file_conn(sb, user, &c, err);

	if (r == 0)
		r = ts_files_remove(c->fd, path, err);
	if (r == -ENOENT) { /* rm -rf: nothing there is done already */
		ts_err_clear(err);
		r = 0;
	}
	return r;
}

int ts_local_file_set_metadata(struct ts_sb *sb, const char *path, const char *user,
			       const struct ts_kv *kv, size_t n, struct ts_error *err)
{
	_cleanup_(ts_ctl_client_freep) struct ts_ctl_client *c = NULL;
	char *v[TS_FILE_XATTRS_MAX];
	size_t made = 0;
	int r = 0;

	if (n > TS_FILE_XATTRS_MAX)
		return ts_err(err, -E2BIG, "metadata of `%s`: more than %d keys", path,
			      TS_FILE_XATTRS_MAX);
	for (; made < n && r == 0; made++) {
		if (!kv[made].key[0] || strchr(kv[made].key, '='))
			r = ts_err(err, -EINVAL,
				   "metadata of `%s`: a key cannot be empty or hold `=`", path);
		else if (asprintf(&v[made], "%s=%s", kv[made].key, kv[made].value) < 0)
			r = ts_err(err, -ENOMEM, "out of memory");
		if (r < 0)
			break;
	}
	if (r == 0)
		r = ts_local_file_conn(sb, user, &c, err);
	if (r == 0)
		r = ts_files_set_xattrs(c->fd, path, v, n, err);
	for (size_t i = 0; i < made; i++)
		free(v[i]);
	return r;
}

int ts_local_file_rename(struct ts_sb *sb, const char *from, const char *to, const char *user,
			 struct ts_error *err)
{
	_cleanup_(ts_ctl_client_freep) struct ts_ctl_client *c = NULL;
	char parent[PATH_MAX];
	char *slash;
	bool made;
	int r;

	/* the destination's parents first, as E2B's Move */
	absolute(to, user, parent, sizeof(parent));
	slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		r = ts_local_file_mkdir(sb, parent, user, 0755, &made, err);
		if (r < 0)
			return r;
	}
	r = ts_local_file_conn(sb, user, &c, err);
	if (r == 0)
		r = ts_files_rename(c->fd, from, to, err);
	return r;
}

/* --- transfers ---------------------------------------------------------------------- */

struct local_xfer {
	struct ts_ctl_client *c;
	char path[PATH_MAX];
	uint64_t off;	       /* read: next offset expected; write: bytes sent */
	bool done, finished;   /* done: the whole file; finished (write): END sent */
	bool refused;	       /* write: the last push was refused (-EAGAIN) */
	struct ts_ctl_msg cur; /* read: the message data points into */
};

static struct local_xfer *lx(const struct ts_xfer *x)
{
	return x->impl;
}

int ts_local_xfer_start(struct ts_sb *sb, const char *path, const char *user, bool write, int mode,
			struct ts_xfer *x, struct ts_error *err)
{
	struct ts_ctl_client *c = NULL;
	int r;

	if (strlen(path) >= PATH_MAX)
		return ts_err(err, -ENAMETOOLONG, "path too long");
	r = ts_local_file_conn(sb, user, &c, err);
	if (r < 0)
		return r;
	return ts_local_xfer_open(c, path, write, mode, x, err);
}

int ts_local_xfer_open(struct ts_ctl_client *c, const char *path, bool write, int mode,
		       struct ts_xfer *x, struct ts_error *err)
{
	_cleanup_free_ struct local_xfer *l = calloc(1, sizeof(*l));
	struct ts_ctl_msg m = { 0 };
	int r;

	if (!l || strlen(path) >= sizeof(l->path)) {
		ts_ctl_client_free(c);
		return l ? ts_err(err, -ENAMETOOLONG, "path too long")
			 : ts_err(err, -ENOMEM, "out of memory");
	}
	snprintf(l->path, sizeof(l->path), "%s", path);
	l->c = c;
	ts_ctl_msg_init(&m, TS_CTL_FILE, write ? TS_FILE_WRITE : TS_FILE_READ);
	r = ts_ctl_put_u64(&m, TS_T_OP, write ? TS_FILE_WRITE : TS_FILE_READ);
	if (r == 0)
		r = ts_ctl_put_str(&m, TS_T_PATH, path);
	if (r == 0 && write && mode >= 0)
		r = ts_ctl_put_u64(&m, TS_T_MODE, (uint64_t)mode & 0777);
	if (r == 0 && !write)
		r = ts_ctl_put_u64(&m, TS_T_OFFSET, 0) | ts_ctl_put_u64(&m, TS_T_LENGTH, 0);
	if (r == 0)
		r = ts_ctl_client_send(l->c, &m);
	ts_ctl_msg_free(&m);
	if (r < 0) {
		ts_ctl_client_free(l->c);
		return ts_err_errno(err, r, "%s `%s`", write ? "write" : "read", path);
	}
	x->impl = TAKE_PTR(l);
	return 0;
}

int ts_local_xfer_fd(const struct ts_xfer *x)
{
	return lx(x)->c->fd;
}

/*
 * POLLIN for the sandbox's answer, POLLOUT while bytes wait to be sent, and POLLOUT after
 * a refused push until one is taken: a step may send the whole queue (the worker reads as
 * fast as it comes), and then nothing else would wake a caller that waits to push the
 * rest, since the worker answers only after END. The socket is writable then: the wait
 * ends at once and the push goes.
 */
short ts_local_xfer_events(const struct ts_xfer *x)
{
	const struct local_xfer *l = lx(x);

	return (short)(ts_ctl_client_events(l->c) | (l->refused ? POLLOUT : 0));
}

/* The first DATA field. */
static int data_of(const struct ts_ctl_msg *m, const uint8_t **v, uint32_t *len)
{
	size_t pos = 0;
	uint16_t tag;

	while (ts_ctl_next(m, &pos, &tag, v, len) > 0)
		if (tag == TS_T_DATA)
			return 0;
	return -EBADMSG;
}

int ts_local_xfer_step(struct ts_xfer *x, const uint8_t **data, size_t *len, struct ts_error *err)
{
	struct local_xfer *l = lx(x);
	struct ts_ctl_msg m = { 0 };
	int r;

	ts_ctl_msg_free(&l->cur);
	if (l->done)
		return 2;
	r = ts_ctl_client_flush(l->c);
	if (r < 0)
		return ts_err_errno(err, r, "`%s`: the sandbox's connection", l->path);
	r = ts_ctl_client_read(l->c, &m);
	if (r == 0)
		return 0;
	if (r < 0)
		return ts_err_errno(err, r, "`%s`: the sandbox's answer", l->path);
	if (m.type == TS_CTL_ERROR) {
		r = ts_ctl_client_remote_error(&m, err);
		ts_ctl_msg_free(&m);
		return r;
	}
	if (x->write) {
		/* one reply: OK once the file is in place, after END */
		r = m.type == TS_CTL_OK && l->finished
			    ? 2
			    : ts_err(err, -EPROTO, "`%s`: a bad reply from the sandbox", l->path);
		ts_ctl_msg_free(&m);
		l->done = r == 2;
		return r;
	}
	if (m.type == TS_CTL_END) {
		ts_ctl_msg_free(&m);
		l->done = true;
		return 2;
	}
	{
		const uint8_t *v;
		uint32_t vlen;
		uint64_t off;

		if (m.type != TS_CTL_FILE_DATA || data_of(&m, &v, &vlen) < 0 ||
		    vlen > TS_CTL_CHUNK || ts_ctl_get_u64(&m, TS_T_OFFSET, &off) < 0 ||
		    off != l->off) {
			ts_ctl_msg_free(&m);
			return ts_err(err, -EPROTO, "`%s`: file data out of order", l->path);
		}
		l->off += vlen;
		*data = v;
		*len = vlen;
		l->cur = m;
		return 1;
	}
}

int ts_local_xfer_push(struct ts_xfer *x, const void *data, size_t len, bool finish,
		       struct ts_error *err)
{
	struct local_xfer *l = lx(x);
	struct ts_ctl_msg m = { 0 };
	int r;

	if (!x->write || l->finished)
		return ts_err(err, -EINVAL, "not a write in progress");
	l->refused = !finish && l->c->q.bytes > TS_XFER_QUEUE_MAX;
	if (l->refused)
		return -EAGAIN;
	if (finish) {
		ts_ctl_msg_init(&m, TS_CTL_END, TS_FILE_WRITE);
		l->finished = true;
	} else {
		if (len > TS_CTL_CHUNK)
			return ts_err(err, -E2BIG, "at most %u bytes at a time", TS_CTL_CHUNK);
		ts_ctl_msg_init(&m, TS_CTL_FILE_DATA, TS_FILE_WRITE);
		r = ts_ctl_put(&m, TS_T_DATA, data, len);
		if (r == 0)
			r = ts_ctl_put_u64(&m, TS_T_OFFSET, l->off);
		if (r < 0) {
			ts_ctl_msg_free(&m);
			return ts_err(err, r, "write `%s`", l->path);
		}
		l->off += len;
	}
	r = ts_ctl_client_send(l->c, &m);
	ts_ctl_msg_free(&m);
	return r < 0 ? ts_err_errno(err, r, "write `%s`", l->path) : 0;
}

void ts_local_xfer_close(struct ts_xfer *x)
{
	struct local_xfer *l = lx(x);

	if (!l)
		return;
	ts_ctl_msg_free(&l->cur);
	/* a write not finished is abandoned: the sandbox keeps the old file */
	ts_ctl_client_free(l->c);
	free(l);
}

/* --- watches ------------------------------------------------------------------------ */

struct local_watch {
	struct ts_ctl_client *c;
};

int ts_local_watch_start(struct ts_sb *sb, const char *path, bool recursive, const char *user,
			 struct ts_watch *w, struct ts_error *err)
{
	_cleanup_free_ struct local_watch *l = calloc(1, sizeof(*l));
	struct ts_ctl_msg m = { 0 }, reply = { 0 };
	int r;

	if (!l)
		return ts_err(err, -ENOMEM, "out of memory");
	r = ts_local_file_conn(sb, user, &l->c, err);
	if (r < 0)
		return r;
	ts_ctl_msg_init(&m, TS_CTL_FILE, TS_FILE_WATCH);
	r = ts_ctl_put_u64(&m, TS_T_OP, TS_FILE_WATCH);
	if (r == 0)
		r = ts_ctl_put_str(&m, TS_T_PATH, path);
	if (r == 0)
		r = ts_ctl_put_u64(&m, TS_T_DEPTH, recursive ? TS_LOCAL_DEPTH_MAX : 1);
	if (r == 0)
		r = ts_ctl_client_send(l->c, &m);
	ts_ctl_msg_free(&m);
	/* the watch is in place once the worker says OK */
	if (r == 0)
		r = ts_ctl_client_wait(l->c, &reply, TS_CTL_REPLY_MS, err);
	else
		ts_err_errno(err, r, "watch `%s`", path);
	if (r == 0 && reply.type == TS_CTL_ERROR)
		r = ts_ctl_client_remote_error(&reply, err);
	else if (r == 0 && reply.type != TS_CTL_OK)
		r = ts_err(err, -EPROTO, "watch `%s`: a bad reply from the sandbox", path);
	ts_ctl_msg_free(&reply);
	if (r < 0) {
		ts_ctl_client_free(l->c);
		return r;
	}
	w->impl = TAKE_PTR(l);
	return 0;
}

int ts_local_watch_fd(const struct ts_watch *w)
{
	return ((struct local_watch *)w->impl)->c->fd;
}

int ts_local_watch_step(struct ts_watch *w, struct ts_watch_event *ev, struct ts_error *err)
{
	static const struct {
		const char *name;
		enum ts_watch_op op;
	} ops[] = { { "create", TS_WATCH_CREATE },
		    { "write", TS_WATCH_WRITE },
		    { "remove", TS_WATCH_REMOVE },
		    { "rename", TS_WATCH_RENAME },
		    { "chmod", TS_WATCH_CHMOD } };
	struct local_watch *l = w->impl;
	_cleanup_(ts_ctl_msg_freep) struct ts_ctl_msg m = { 0 };
	char what[16];
	int r = ts_ctl_client_read(l->c, &m);

	if (r <= 0)
		return r == 0 ? 0 : ts_err_errno(err, r, "watch: the sandbox's connection");
	if (m.type == TS_CTL_ERROR)
		return ts_ctl_client_remote_error(&m, err);
	r = m.type == TS_CTL_FILE_EVENT &&
			    ts_ctl_get_str(&m, TS_T_PATH, ev->name, sizeof(ev->name)) == 0 &&
			    ts_ctl_get_str(&m, TS_T_EVENT, what, sizeof(what)) == 0
		    ? 1
		    : ts_err(err, -EPROTO, "watch: a bad event from the sandbox");
	if (r < 0)
		return r;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(what, ops[i].name)) {
			ev->op = ops[i].op;
			return 1;
		}
	return ts_err(err, -EPROTO, "watch: an unknown event `%s`", what);
}

void ts_local_watch_close(struct ts_watch *w)
{
	struct local_watch *l = w->impl;

	if (!l)
		return;
	ts_ctl_client_free(l->c);
	free(l);
}
