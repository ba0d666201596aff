/* SPDX-License-Identifier: Apache-2.0 */
/*
 * envd's filesystem.Filesystem over Connect (envd-fs.h), every call on the backend
 * interface. Paths resolve as envd's do: relative to the user's home, `~` expanded. An
 * EntryInfo never omits its type (the SDK's list drops UNSPECIFIED entries) and a symlink
 * reports what it points to (envd stats with os.Stat), with its resolved target.
 */
#include "envd-fs.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cleanup.h"
#include "connect.h"
#include "envd.h"
#include "http.h"
#include "loop.h"
#include "server.h"
#include "util.h"

#define FS_LINK_HOPS 40 /* symlinks followed to a target (the kernel's MAXSYMLINKS) */
/* hops one listing may take in all: a directory of links into a loop of links would keep
 * serve's thread (every client's) for 40 questions per entry otherwise */
#define FS_LIST_HOPS 2048
#define FS_KEEPALIVE_S 90 /* envd's keepalive when Keepalive-Ping-Interval is absent */
#define FS_KEEPALIVE_MAX_S 3600
#define FS_DEPTH_MAX 16	      /* the local backend's deepest listing */
#define FS_WATCHERS_PER_SB 16 /* polling watchers: each holds a worker in the sandbox */
#define FS_WATCHERS_MAX 256
#define FS_WATCH_STREAMS_PER_SB 16 /* WatchDir streams: each holds a worker there too */
#define FS_WATCHER_EVENTS 1024	   /* events a polling watcher keeps until they are fetched */
#define FS_SWEEP_MS 5000	   /* how soon a gone sandbox's watchers are freed */
#define FS_USER_MAX 64

/* --- EntryInfo ------------------------------------------------------------------------ */

void ts_envd_fs_permissions(enum ts_be_file_type type, unsigned mode, char buf[11])
{
	static const char rwx[] = "rwxrwxrwx";

	/* Go: one letter per type bit, '-' when none; '?' for an irregular file */
	buf[0] = type == TS_BE_DIR	 ? 'd'
		 : type == TS_BE_SYMLINK ? 'L'
		 : type == TS_BE_FILE	 ? '-'
					 : '?';
	for (unsigned i = 0; i < 9; i++)
		buf[1 + i] = mode & (0400U >> i) ? rwx[i] : '-';
	buf[10] = '\0';
}

static const char *file_type_name(enum ts_be_file_type t)
{
	switch (t) {
	case TS_BE_FILE:
		return "FILE_TYPE_FILE";
	case TS_BE_DIR:
		return "FILE_TYPE_DIRECTORY";
	case TS_BE_SYMLINK:
		return "FILE_TYPE_SYMLINK";
	default:
		/* envd's getEntryType for a device, FIFO or socket */
		return "FILE_TYPE_UNSPECIFIED";
	}
}

/* The owner as the sandbox names it: its two users, else the number (envd's fallback
 * when the lookup fails). */
static void id_name(uint32_t id, char *buf, size_t size)
{
	if (id == 0)
		snprintf(buf, size, "root");
	else if (id == 1000)
		snprintf(buf, size, "user");
	else
		snprintf(buf, size, "%u", id);
}

json_t *ts_envd_fs_entry_json(const struct ts_be_entry *e)
{
	char perms[11], owner[16], group[16];
	json_t *j, *meta = NULL, *t;

	ts_envd_fs_permissions(e->type, e->mode, perms);
	id_name(e->uid, owner, sizeof(owner));
	id_name(e->gid, group, sizeof(group));
	t = ts_pj_time((long long)e->mtime_ms);
	j = json_pack("{s:o*, s:s, s:o*, s:o, s:i, s:s, s:s, s:s, s:o*}", "name",
		      ts_pj_text(e->name), "type", file_type_name(e->type), "path",
		      ts_pj_text(e->path), "size", ts_pj_int64((long long)e->size), "mode",
		      (int)(e->mode & 07777), "permissions", perms, "owner", owner, "group", group,
		      "modifiedTime", t);
	if (!j)
		return NULL;
	if (e->symlink_target &&
	    json_object_set_new(j, "symlinkTarget", ts_pj_text(e->symlink_target)) < 0)
		goto fail;
	for (size_t i = 0; e->metadata && e->metadata[i]; i++) {
		const char *eq = strchr(e->metadata[i], '=');
		json_t *v;

		if (!eq)
			continue;
		/* a value that is not UTF-8 cannot be a JSON string: left out */
		v = json_string(eq + 1);
		if (!v)
			continue;
		if (!meta && !(meta = json_object())) {
			json_decref(v);
			goto fail;
		}
		{
			_cleanup_free_ char *k =
				strndup(e->metadata[i], (size_t)(eq - e->metadata[i]));

			if (!k || json_object_set_new(meta, k, v) < 0)
				goto fail;
		}
	}
	/* protojson leaves an empty map out */
	if (meta && json_object_set_new(j, "metadata", meta) < 0) {
		meta = NULL;
		goto fail;
	}
	return j;
fail:
	json_decref(meta);
	json_decref(j);
	return NULL;
}

/* Lexically clean an absolute path in place (filepath.Clean): no ".", "..", "//". */
static void clean_path(char *p)
{
	char *out = p, *in = p;

	while (*in) {
		while (*in == '/')
			in++;
		if (!*in)
			break;
		char *end = strchrnul(in, '/');
		size_t n = (size_t)(end - in);

		if (n == 1 && in[0] == '.') {
			/* nothing */
		} else if (n == 2 && in[0] == '.' && in[1] == '.') {
			while (out > p && *--out != '/')
				;
		} else {
			*out++ = '/';
			memmove(out, in, n);
			out += n;
		}
		in = end;
	}
	if (out == p)
		*out++ = '/';
	*out = '\0';
}

int ts_envd_fs_follow(struct ts_sb *sb, const char *user, struct ts_be_entry *e, unsigned *budget)
{
	char cur[PATH_MAX], next[2 * PATH_MAX + 2] = "";
	_cleanup_free_ char *target = NULL;
	char *resolved;

	if (e->type != TS_BE_SYMLINK || !e->symlink_target || !e->path)
		return 0;
	target = strdup(e->symlink_target);
	if (!target)
		return -ENOMEM;
	snprintf(cur, sizeof(cur), "%s", e->path);
	for (unsigned hop = 0; hop < FS_LINK_HOPS; hop++) {
		struct ts_be_entry t = { 0 };
		struct ts_error ignore;
		char *slash = strrchr(cur, '/');

		if (target[0] == '/')
			snprintf(next, sizeof(next), "%s", target);
		else
			snprintf(next, sizeof(next), "%.*s/%s", slash ? (int)(slash - cur) : 0, cur,
				 target);
		clean_path(next);
		if (budget && !*budget)
			break; /* as if dangling */
		if (budget)
			(*budget)--;
		if (strlen(next) >= sizeof(cur) || ts_file_stat(sb, next, user, &t, &ignore) < 0)
			break; /* dangling: the link itself, its target as far as it goes */
		if (t.type != TS_BE_SYMLINK) {
			resolved = strdup(next);
			if (!resolved) {
				ts_be_entry_clear(&t);
				return -ENOMEM;
			}
			free(e->symlink_target);
			e->symlink_target = resolved;
			e->type = t.type;
			e->mode = t.mode;
			e->size = t.size;
			e->mtime_ms = t.mtime_ms;
			e->uid = t.uid;
			e->gid = t.gid;
			for (size_t i = 0; e->metadata && e->metadata[i]; i++)
				free(e->metadata[i]);
			free(e->metadata);
			e->metadata = TAKE_PTR(t.metadata);
			ts_be_entry_clear(&t);
			return 0;
		}
		free(target);
		target = TAKE_PTR(t.symlink_target);
		ts_be_entry_clear(&t);
		if (!target)
			break;
		snprintf(cur, sizeof(cur), "%s", next);
	}
	if (next[0]) {
		resolved = strdup(next);
		if (!resolved)
			return -ENOMEM;
		free(e->symlink_target);
		e->symlink_target = resolved;
	}
	return 0;
}

/* --- the calls ------------------------------------------------------------------------- */

struct call {
	struct ts_srv *srv;
	struct ts_req *req;
	struct ts_envd_target t;
	struct ts_sb *sb;
	const char *user; /* NULL: the backend's default */
	char ubuf[FS_USER_MAX];
	json_t *in; /* the request message (owned) */
	bool streaming;
};

static void call_end(struct call *c)
{
	json_decref(c->in);
	c->in = NULL;
}

static int call_error(struct call *c, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int call_error(struct call *c, const char *code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return c->streaming ? ts_connect_stream_error(c->req, code, "%s", msg)
			    : ts_connect_reply_error(c->req, code, "%s", msg);
}

static int call_be_error(struct call *c, const struct ts_error *err)
{
	if (!c->streaming)
		return ts_connect_reply_be_error(c->req, err);
	return ts_connect_stream_error(c->req, ts_connect_code_name(ts_be_code(err)), "%s",
				       err->msg);
}

/* The sandbox, user and message of a call; false when the error reply is sent. */
static bool call_begin(struct ts_srv *srv, struct ts_req *req, bool streaming, struct call *c)
{
	bool bad = false;

	memset(c, 0, sizeof(*c));
	c->srv = srv;
	c->req = req;
	c->streaming = streaming;
	if (ts_envd_target(srv, req, TS_ENVD_TOKEN, &c->t) < 0)
		return false;
	c->sb = c->t.e->sb;
	c->user = ts_envd_user(req, c->ubuf, sizeof(c->ubuf), &bad);
	if (bad) {
		/* connect-go's authn middleware: a header it cannot read */
		call_error(c, "unauthenticated", "invalid authorization header");
		return false;
	}
	c->in = ts_connect_request(req, streaming);
	return c->in != NULL;
}

/* A string field by either casing: "" when absent; false (reply sent) when not a string. */
static bool get_str(struct call *c, const char *camel, const char *snake, const char **ret)
{
	json_t *v = ts_pj_get(c->in, camel, snake);

	*ret = "";
	if (!v || json_is_null(v))
		return true;
	if (!json_is_string(v)) {
		call_error(c, "invalid_argument", "`%s` must be a string", camel);
		return false;
	}
	*ret = json_string_value(v);
	return true;
}

static bool get_bool(struct call *c, const char *camel, const char *snake, bool *ret)
{
	json_t *v = ts_pj_get(c->in, camel, snake);

	*ret = false;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_boolean(v)) {
		call_error(c, "invalid_argument", "`%s` must be a boolean", camel);
		return false;
	}
	*ret = json_is_true(v);
	return true;
}

/*
 * A path as envd resolves it, for the backend: "" and "~" are the user's home ("."),
 * "~/x" is "x" in it; anything else as given (relative: from the home). false (reply
 * sent) for one too long or holding a NUL.
 */
static bool get_path(struct call *c, const char *camel, const char *snake, char *buf, size_t size)
{
	const char *p;

	if (!get_str(c, camel, snake, &p))
		return false;
	if (!p[0] || !strcmp(p, "~"))
		p = ".";
	else if (!strncmp(p, "~/", 2))
		p = p[2] ? p + 2 : ".";
	if (strlen(p) >= size) {
		call_error(c, "invalid_argument", "path too long");
		return false;
	}
	snprintf(buf, size, "%s", p);
	return true;
}

/* Stat path and follow a symlink; -errno with err. */
static int stat_entry(struct ts_sb *sb, const char *path, const char *user, struct ts_be_entry *e,
		      struct ts_error *err)
{
	int r = ts_file_stat(sb, path, user, e, err);

	if (r == 0 && (r = ts_envd_fs_follow(sb, user, e, NULL)) < 0) {
		ts_be_entry_clear(e);
		return ts_err(err, r, "out of memory");
	}
	return r;
}

/* Reply {"entry": EntryInfo of path}. */
static void reply_entry(struct call *c, const char *path)
{
	struct ts_be_entry e = { 0 };
	struct ts_error err = { 0 };
	json_t *j;

	if (stat_entry(c->sb, path, c->user, &e, &err) < 0) {
		ts_connect_reply_be_error(c->req, &err);
		return;
	}
	j = ts_envd_fs_entry_json(&e);
	ts_be_entry_clear(&e);
	if (!j) {
		ts_connect_reply_error(c->req, "internal", "out of memory");
		return;
	}
	ts_connect_reply(c->req, json_pack("{s:o}", "entry", j));
}

static void fs_stat(void *ctx, struct ts_req *req)
{
	struct call c;
	char path[PATH_MAX];

	if (call_begin(ctx, req, false, &c) && get_path(&c, "path", "path", path, sizeof(path)))
		reply_entry(&c, path);
	call_end(&c);
}

/* A directory to list or watch, its symlinks followed: its absolute path in dir. false
 * (reply sent) when missing or not a directory. */
static bool open_dir(struct call *c, const char *path, char *dir, size_t size)
{
	struct ts_be_entry e = { 0 };
	struct ts_error err = { 0 };
	bool ok = false;

	if (stat_entry(c->sb, path, c->user, &e, &err) < 0)
		call_be_error(c, &err);
	else if (e.type == TS_BE_SYMLINK)
		call_error(c, "not_found", "path '%s' does not exist: a dangling symlink", path);
	else if (e.type != TS_BE_DIR)
		call_error(c, "invalid_argument", "path '%s' is not a directory", path);
	else if (strlen(e.symlink_target ? e.symlink_target : e.path) >= size)
		call_error(c, "invalid_argument", "path too long");
	else
		ok = true;
	if (ok)
		snprintf(dir, size, "%s", e.symlink_target ? e.symlink_target : e.path);
	ts_be_entry_clear(&e);
	return ok;
}

static void fs_list(void *ctx, struct ts_req *req)
{
	struct call c;
	char path[PATH_MAX], dir[PATH_MAX];
	struct ts_be_entry *v = NULL;
	struct ts_error err = { 0 };
	long long depth = 1;
	unsigned hops = FS_LIST_HOPS;
	size_t n = 0;
	json_t *out, *entries;
	json_t *d;

	if (!call_begin(ctx, req, false, &c) || !get_path(&c, "path", "path", path, sizeof(path)))
		goto out;
	d = ts_pj_get(c.in, "depth", "depth");
	if (d && !json_is_null(d) &&
	    (ts_pj_int(d, &depth) < 0 || depth < 0 || depth > UINT32_MAX)) {
		ts_connect_reply_error(req, "invalid_argument", "`depth` must be a uint32");
		goto out;
	}
	/* envd: depth 0 is 1; the backend goes at most 16 deep */
	if (depth == 0)
		depth = 1;
	if (depth > FS_DEPTH_MAX)
		depth = FS_DEPTH_MAX;
	if (!open_dir(&c, path, dir, sizeof(dir)))
		goto out;
	if (ts_file_list(c.sb, dir, (unsigned)depth, c.user, &v, &n, &err) < 0) {
		ts_connect_reply_be_error(req, &err);
		goto out;
	}
	out = json_object();
	entries = json_array();
	if (!out || !entries || json_object_set_new(out, "entries", entries) < 0) {
		json_decref(out);
		ts_be_entries_free(v, n);
		ts_connect_reply_error(req, "internal", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *j;

		if (ts_envd_fs_follow(c.sb, c.user, &v[i], &hops) < 0 ||
		    !(j = ts_envd_fs_entry_json(&v[i])) || json_array_append_new(entries, j) < 0) {
			json_decref(out);
			ts_be_entries_free(v, n);
			ts_connect_reply_error(req, "internal", "out of memory");
			goto out;
		}
	}
	ts_be_entries_free(v, n);
	ts_connect_reply(req, out);
out:
	call_end(&c);
}

static void fs_mkdir(void *ctx, struct ts_req *req)
{
	struct call c;
	char path[PATH_MAX];
	struct ts_error err = { 0 };
	bool created = false;

	if (!call_begin(ctx, req, false, &c) || !get_path(&c, "path", "path", path, sizeof(path)))
		goto out;
	if (ts_file_mkdir(c.sb, path, c.user, &created, &err) < 0)
		ts_connect_reply_be_error(req, &err);
	else if (!created)
		/* the SDK's makeDir: false */
		ts_connect_reply_error(req, "already_exists", "directory '%s' already exists",
				       path);
	else
		reply_entry(&c, path);
out:
	call_end(&c);
}

static void fs_move(void *ctx, struct ts_req *req)
{
	struct call c;
	char from[PATH_MAX], to[PATH_MAX];
	struct ts_be_entry e = { 0 };
	struct ts_error err = { 0 };

	if (!call_begin(ctx, req, false, &c) ||
	    !get_path(&c, "source", "source", from, sizeof(from)) ||
	    !get_path(&c, "destination", "destination", to, sizeof(to)))
		goto out;
	/* a missing source is not_found before anything is created for the destination */
	if (ts_file_stat(c.sb, from, c.user, &e, &err) < 0 ||
	    ts_file_rename(c.sb, from, to, c.user, &err) < 0)
		ts_connect_reply_be_error(req, &err);
	else
		reply_entry(&c, to);
	ts_be_entry_clear(&e);
out:
	call_end(&c);
}

static void fs_remove(void *ctx, struct ts_req *req)
{
	struct call c;
	char path[PATH_MAX];
	struct ts_error err = { 0 };

	if (!call_begin(ctx, req, false, &c) || !get_path(&c, "path", "path", path, sizeof(path)))
		goto out;
	if (ts_file_remove(c.sb, path, c.user, &err) < 0)
		ts_connect_reply_be_error(req, &err);
	else
		ts_connect_reply(req, json_object());
out:
	call_end(&c);
}

/* --- watch events ------------------------------------------------------------------------ */

static const char *event_type_name(enum ts_watch_op op)
{
	switch (op) {
	case TS_WATCH_CREATE:
		return "EVENT_TYPE_CREATE";
	case TS_WATCH_WRITE:
		return "EVENT_TYPE_WRITE";
	case TS_WATCH_REMOVE:
		return "EVENT_TYPE_REMOVE";
	case TS_WATCH_RENAME:
		return "EVENT_TYPE_RENAME";
	case TS_WATCH_CHMOD:
		return "EVENT_TYPE_CHMOD";
	}
	return "EVENT_TYPE_UNSPECIFIED";
}

/* What a watch needs after its request: the sandbox (referenced), where, as whom. */
struct watch_base {
	struct ts_srv *srv;
	struct ts_srv_sb *e;
	struct ts_watch *w;
	struct ts_loop_fd *fd;
	char dir[PATH_MAX]; /* absolute */
	char user[FS_USER_MAX];
	bool has_user, include_entry;
	bool tmp_renamed; /* a temporary file was just renamed: its target comes next */
};

/* Is the last component of name one of the backend's temporary files: the hidden
 * `.toren-tmp-*` of a write, or `#<inode>`, what inotify names an O_TMPFILE file? */
static bool temp_name(const char *name)
{
	const char *last = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;

	if (!strncmp(last, ".toren-tmp-", strlen(".toren-tmp-")))
		return true;
	if (last[0] != '#' || !last[1])
		return false;
	for (const char *c = last + 1; *c; c++)
		if (*c < '0' || *c > '9')
			return false;
	return true;
}

/*
 * The backend writes a file atomically (a temporary file renamed over it); envd writes
 * in place, and the SDK waits for the WRITE of the name it wrote. So the temporary file's
 * events are dropped and the rename's target is announced as envd would: CREATE, then
 * WRITE. The ops to send for ev go to out; their count is returned (0 to 2).
 */
static unsigned translate_event(struct watch_base *b, const struct ts_watch_event *ev,
				enum ts_watch_op out[2])
{
	if (temp_name(ev->name)) {
		b->tmp_renamed = ev->op == TS_WATCH_RENAME;
		return 0;
	}
	out[0] = ev->op;
	if (b->tmp_renamed && ev->op == TS_WATCH_CREATE) {
		b->tmp_renamed = false;
		out[1] = TS_WATCH_WRITE;
		return 2;
	}
	b->tmp_renamed = false;
	return 1;
}

/* A FilesystemEvent: {"name","type","entry"?}; the entry (with include_entry, only for
 * CREATE, WRITE and CHMOD, as envd) when it can still be found. */
static json_t *event_json(struct watch_base *b, const struct ts_watch_event *ev,
			  enum ts_watch_op op)
{
	json_t *j = json_pack("{s:s, s:s}", "name", ev->name, "type", event_type_name(op));

	if (j && b->include_entry &&
	    (op == TS_WATCH_CREATE || op == TS_WATCH_WRITE || op == TS_WATCH_CHMOD)) {
		char path[2 * PATH_MAX + 2];
		struct ts_be_entry e = { 0 };
		struct ts_error ignore;
		json_t *ej;

		snprintf(path, sizeof(path), "%s/%s", strcmp(b->dir, "/") ? b->dir : "", ev->name);
		if (strlen(path) < PATH_MAX && !b->e->gone &&
		    stat_entry(b->e->sb, path, b->has_user ? b->user : NULL, &e, &ignore) == 0) {
			ej = ts_envd_fs_entry_json(&e);
			if (ej)
				json_object_set_new(j, "entry", ej);
			ts_be_entry_clear(&e);
		}
	}
	return j;
}

/* Parse a watch request and start the backend's watch; false when the reply is sent. */
static bool watch_begin(struct call *c, struct watch_base *b)
{
	char path[PATH_MAX];
	bool recursive;
	struct ts_error err = { 0 };

	if (!get_path(c, "path", "path", path, sizeof(path)) ||
	    !get_bool(c, "recursive", "recursive", &recursive) ||
	    !get_bool(c, "includeEntry", "include_entry", &b->include_entry) ||
	    !open_dir(c, path, b->dir, sizeof(b->dir)))
		return false;
	b->srv = c->srv;
	b->has_user = c->user != NULL;
	if (c->user)
		snprintf(b->user, sizeof(b->user), "%s", c->user);
	if (ts_watch_start(c->sb, b->dir, recursive, c->user, &b->w, &err) < 0) {
		call_be_error(c, &err);
		return false;
	}
	b->e = ts_srv_sb_ref(c->t.e);
	return true;
}

static void watch_base_stop(struct watch_base *b)
{
	ts_loop_del_fd(b->fd);
	b->fd = NULL;
	ts_watch_close(b->w);
	b->w = NULL;
}

static void watch_base_free(struct watch_base *b)
{
	watch_base_stop(b);
	ts_srv_sb_unref(b->e);
	b->e = NULL;
}

/* --- WatchDir: a server stream ---------------------------------------------------------- */

struct dir_watch {
	struct watch_base b;
	struct ts_stream *s;
	struct ts_loop_timer *keepalive, *deadline;
	long long keepalive_ms;
	bool done; /* ended or aborted: only on_close is left */
};

static void dw_stop(struct dir_watch *d)
{
	d->done = true;
	watch_base_stop(&d->b);
	ts_loop_del_timer(d->keepalive);
	ts_loop_del_timer(d->deadline);
	d->keepalive = d->deadline = NULL;
}

/* The stream's end, or its set-up failing: d's count on its sandbox and d go. */
static void dw_free(struct dir_watch *d)
{
	dw_stop(d);
	d->b.e->dir_watches--;
	watch_base_free(&d->b);
	free(d);
}

static void dw_close(void *userdata, bool client_gone)
{
	dw_free(userdata);
}

/* Send one message; the keepalive counts silence from here. */
static int dw_send(struct dir_watch *d, json_t *j)
{
	int r = ts_connect_send(d->s, j);

	if (r == 0 && d->keepalive)
		ts_loop_timer_set(d->keepalive, ts_loop_now(d->b.srv->loop) + d->keepalive_ms);
	return r;
}

static void dw_keepalive(void *userdata)
{
	struct dir_watch *d = userdata;

	if (!d->done)
		dw_send(d, json_pack("{s:{}}", "keepalive"));
}

static void dw_deadline(void *userdata)
{
	struct dir_watch *d = userdata;
	struct ts_stream *s = d->s;

	/* connect-go's request deadline: an end-stream error, the SDK's TimeoutError */
	dw_stop(d);
	ts_connect_end(s, "deadline_exceeded", "the watch reached its deadline");
}

static void dw_readable(void *userdata, short revents);

static void dw_drained(void *userdata)
{
	struct dir_watch *d = userdata;

	if (d->done || !d->b.fd)
		return;
	ts_loop_mod_fd(d->b.fd, POLLIN);
	dw_readable(d, POLLIN); /* events the handle had read already */
}

static void dw_readable(void *userdata, short revents)
{
	struct dir_watch *d = userdata;
	struct ts_watch_event *ev = malloc(sizeof(*ev));
	struct ts_error err = { 0 };
	int r = ev ? 0 : ts_err(&err, -ENOMEM, "out of memory");

	while (r == 0 && !d->done) {
		enum ts_watch_op ops[2];
		unsigned k;

		r = ts_watch_step(d->b.w, ev, &err);
		if (r <= 0)
			break;
		k = translate_event(&d->b, ev, ops);
		r = 0;
		for (unsigned i = 0; i < k && r == 0; i++)
			r = dw_send(d, json_pack("{s:o}", "filesystem",
						 event_json(&d->b, ev, ops[i])));
		if (r < 0) {
			ts_err(&err, r, "the client's stream");
			break;
		}
		if (ts_stream_pending(d->s) > TS_HTTP_STREAM_HIGH) {
			/* a client that does not read: the sandbox's events wait in its socket */
			ts_loop_mod_fd(d->b.fd, 0);
			ts_stream_on_drain(d->s, dw_drained);
			break;
		}
	}
	free(ev);
	if (r >= 0 || d->done)
		return;
	struct ts_stream *s = d->s;

	dw_stop(d);
	/* the sandbox went away under the watch: drop the connection, so the SDK probes
	 * /health and reports it killed (a clean end would say something else) */
	if (ts_be_code(&err) == TS_BE_UNAVAILABLE)
		ts_stream_abort(s);
	else
		ts_connect_end(s, ts_connect_code_name(ts_be_code(&err)), "%s", err.msg);
}

static void fs_watch_dir(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct call c;
	struct dir_watch *d = NULL;
	struct ts_error err = { 0 };
	const char *ka;
	long long timeout;

	if (!call_begin(srv, req, true, &c))
		goto out;
	if (c.t.e->dir_watches >= FS_WATCH_STREAMS_PER_SB) {
		call_error(&c, "resource_exhausted",
			   "too many watchers: at most %d streaming ones per sandbox",
			   FS_WATCH_STREAMS_PER_SB);
		goto out;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		call_error(&c, "internal", "out of memory");
		goto out;
	}
	if (!watch_begin(&c, &d->b)) {
		free(d);
		goto out;
	}
	d->b.e->dir_watches++;
	ka = ts_req_header(req, "Keepalive-Ping-Interval");
	d->keepalive_ms = (ka ? atoll(ka) : FS_KEEPALIVE_S) * 1000;
	if (d->keepalive_ms <= 0 || d->keepalive_ms > FS_KEEPALIVE_MAX_S * 1000LL)
		d->keepalive_ms = FS_KEEPALIVE_S * 1000;
	timeout = ts_connect_timeout_ms(req);
	d->s = ts_connect_stream(req, dw_close, d, &err);
	if (!d->s) {
		dw_free(d);
		ts_connect_stream_error(req, "internal", "%s", err.msg);
		goto out;
	}
	/* from here on_close frees d. The start message at once: the SDK aborts a watch
	 * whose start does not come within its request timeout. */
	d->keepalive = ts_loop_add_timer(srv->loop, ts_loop_now(srv->loop) + d->keepalive_ms,
					 dw_keepalive, d);
	if (timeout > 0)
		d->deadline = ts_loop_add_timer(srv->loop, ts_loop_now(srv->loop) + timeout,
						dw_deadline, d);
	d->b.fd = ts_loop_add_fd(srv->loop, ts_watch_fd(d->b.w), POLLIN, dw_readable, d);
	if (!d->keepalive || (timeout > 0 && !d->deadline) || !d->b.fd) {
		struct ts_stream *s = d->s;

		dw_stop(d);
		ts_connect_end(s, "internal", "out of memory");
		goto out;
	}
	dw_send(d, json_pack("{s:{}}", "start"));
out:
	call_end(&c);
}

/* --- polling watchers ------------------------------------------------------------------- */

struct watcher {
	struct watch_base b;
	struct ts_envd_fs *fs;
	struct watcher *next;
	char id[40];
	json_t *events;		    /* FilesystemEvents not yet fetched */
	unsigned long long dropped; /* events lost to a full buffer since the last fetch */
	char failed[sizeof(((struct ts_error *)0)->msg)]; /* why the watch ended, "" while it runs */
};

struct ts_envd_fs {
	struct ts_srv *srv;
	struct watcher *list;
	size_t n;
	struct ts_loop_timer *sweep;
};

static void watcher_free(struct watcher *w)
{
	struct ts_envd_fs *fs = w->fs;

	for (struct watcher **p = &fs->list; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			fs->n--;
			break;
		}
	watch_base_free(&w->b);
	json_decref(w->events);
	free(w);
}

static void watcher_readable(void *userdata, short revents)
{
	struct watcher *w = userdata;
	struct ts_watch_event *ev = malloc(sizeof(*ev));
	struct ts_error err = { 0 };
	int r = ev ? 0 : ts_err(&err, -ENOMEM, "out of memory");

	while (r == 0) {
		enum ts_watch_op ops[2];
		unsigned k;

		r = ts_watch_step(w->b.w, ev, &err);
		if (r <= 0)
			break;
		r = 0;
		k = translate_event(&w->b, ev, ops);
		for (unsigned i = 0; i < k; i++) {
			json_t *j;

			if (json_array_size(w->events) >= FS_WATCHER_EVENTS) {
				w->dropped++;
				continue;
			}
			j = event_json(&w->b, ev, ops[i]);
			if (!j || json_array_append_new(w->events, j) < 0)
				w->dropped++;
		}
	}
	free(ev);
	if (r < 0) {
		snprintf(w->failed, sizeof(w->failed), "%s", err.msg[0] ? err.msg : "watch ended");
		watch_base_stop(&w->b);
	}
}

/* Free the watchers of sandboxes that are gone; the timer runs while there are any. */
static void fs_sweep(void *userdata)
{
	struct ts_envd_fs *fs = userdata;
	struct watcher *next;

	for (struct watcher *w = fs->list; w; w = next) {
		next = w->next;
		if (w->b.e->gone)
			watcher_free(w);
	}
	if (fs->n && fs->sweep)
		ts_loop_timer_set(fs->sweep, ts_loop_now(fs->srv->loop) + FS_SWEEP_MS);
}

static struct ts_envd_fs *fs_of(struct ts_srv *srv)
{
	if (!srv->fs) {
		srv->fs = calloc(1, sizeof(*srv->fs));
		if (srv->fs)
			srv->fs->srv = srv;
	}
	return srv->fs;
}

void ts_envd_fs_free(struct ts_srv *srv)
{
	struct ts_envd_fs *fs = srv->fs;

	if (!fs)
		return;
	while (fs->list)
		watcher_free(fs->list);
	ts_loop_del_timer(fs->sweep);
	free(fs);
	srv->fs = NULL;
}

static void make_id(char *buf, size_t size)
{
	uint8_t b[16] = { 0 };

	if (getrandom(b, sizeof(b), GRND_NONBLOCK) != sizeof(b))
		for (size_t i = 0; i < sizeof(b); i++)
			b[i] ^= (uint8_t)(ts_now_ms() >> (i % 8 * 8)) + (uint8_t)i * 151;
	b[6] = (b[6] & 0x0f) | 0x40; /* a version 4 UUID, as envd's watcher ids */
	b[8] = (b[8] & 0x3f) | 0x80;
	snprintf(buf, size, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
}

static void fs_create_watcher(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_envd_fs *fs;
	struct call c;
	struct watcher *w = NULL;
	size_t mine = 0;

	if (!call_begin(srv, req, false, &c))
		goto out;
	fs = fs_of(srv);
	if (!fs) {
		ts_connect_reply_error(req, "internal", "out of memory");
		goto out;
	}
	fs_sweep(fs);
	for (struct watcher *o = fs->list; o; o = o->next)
		mine += !strcmp(o->b.e->id, c.t.e->id);
	if (mine >= FS_WATCHERS_PER_SB || fs->n >= FS_WATCHERS_MAX) {
		ts_connect_reply_error(req, "resource_exhausted",
				       "too many watchers: at most %d per sandbox, %d in all",
				       FS_WATCHERS_PER_SB, FS_WATCHERS_MAX);
		goto out;
	}
	w = calloc(1, sizeof(*w));
	if (!w || !(w->events = json_array())) {
		free(w);
		ts_connect_reply_error(req, "internal", "out of memory");
		goto out;
	}
	if (!watch_begin(&c, &w->b)) {
		json_decref(w->events);
		free(w);
		goto out;
	}
	w->fs = fs;
	make_id(w->id, sizeof(w->id));
	w->b.fd = ts_loop_add_fd(srv->loop, ts_watch_fd(w->b.w), POLLIN, watcher_readable, w);
	if (!fs->sweep)
		fs->sweep = ts_loop_add_timer(srv->loop, ts_loop_now(srv->loop) + FS_SWEEP_MS,
					      fs_sweep, fs);
	w->next = fs->list;
	fs->list = w;
	fs->n++;
	if (!w->b.fd || !fs->sweep) {
		watcher_free(w);
		ts_connect_reply_error(req, "internal", "out of memory");
		goto out;
	}
	ts_loop_timer_set(fs->sweep, ts_loop_now(srv->loop) + FS_SWEEP_MS);
	ts_connect_reply(req, json_pack("{s:s}", "watcherId", w->id));
out:
	call_end(&c);
}

/* The watcher named by the request, of the request's sandbox; NULL when the reply is
 * sent. */
static struct watcher *find_watcher(struct call *c)
{
	const char *id;

	if (!get_str(c, "watcherId", "watcher_id", &id))
		return NULL;
	if (c->srv->fs)
		for (struct watcher *w = c->srv->fs->list; w; w = w->next)
			if (!strcmp(w->id, id) && !strcmp(w->b.e->id, c->t.e->id))
				return w;
	ts_connect_reply_error(c->req, "not_found", "watcher with id %s not found", id);
	return NULL;
}

static void fs_get_watcher_events(void *ctx, struct ts_req *req)
{
	struct call c;
	struct watcher *w;
	json_t *out;

	if (!call_begin(ctx, req, false, &c) || !(w = find_watcher(&c)))
		goto out;
	if (w->b.fd)
		watcher_readable(w, POLLIN); /* what arrived since the loop last looked */
	if (!json_array_size(w->events) && w->failed[0]) {
		/* ended (its sandbox stopped, ...) and nothing left to fetch: it goes */
		ts_connect_reply_error(req, "unavailable", "watcher %s ended: %s", w->id,
				       w->failed);
		watcher_free(w);
		goto out;
	}
	out = json_object();
	if (out && json_array_size(w->events))
		json_object_set_new(out, "events", w->events);
	else
		json_decref(w->events);
	/* not in envd's message (clients ignore unknown fields): how many events a full
	 * buffer lost since the last fetch */
	if (out && w->dropped)
		json_object_set_new(out, "droppedEvents", ts_pj_int64((long long)w->dropped));
	w->events = json_array();
	w->dropped = 0;
	if (!out)
		ts_connect_reply_error(req, "internal", "out of memory");
	else
		ts_connect_reply(req, out);
out:
	call_end(&c);
}

static void fs_remove_watcher(void *ctx, struct ts_req *req)
{
	struct call c;
	struct watcher *w;

	if (!call_begin(ctx, req, false, &c) || !(w = find_watcher(&c)))
		goto out;
	watcher_free(w);
	ts_connect_reply(req, json_object());
out:
	call_end(&c);
}

const struct ts_route ts_envd_fs_routes[] = {
	{ NULL, "/filesystem.Filesystem/Stat", fs_stat, NULL, 0 },
	{ NULL, "/filesystem.Filesystem/ListDir", fs_list, NULL, 0 },
	{ NULL, "/filesystem.Filesystem/MakeDir", fs_mkdir, NULL, 0 },
	{ NULL, "/filesystem.Filesystem/Move", fs_move, NULL, 0 },
	{ NULL, "/filesystem.Filesystem/Remove", fs_remove, NULL, 0 },
	{ NULL, "/filesystem.Filesystem/WatchDir", fs_watch_dir, NULL, 0 },
	{ NULL, "/filesystem.Filesystem/CreateWatcher", fs_create_watcher, NULL, 0 },
	{ NULL, "/filesystem.Filesystem/GetWatcherEvents", fs_get_watcher_events, NULL, 0 },
	{ NULL, "/filesystem.Filesystem/RemoveWatcher", fs_remove_watcher, NULL, 0 },
	{ 0 },
};
