/* SPDX-License-Identifier: Apache-2.0 */
/* The conformance engine: files, transfers and watches (engine.h). */
#include "engine.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --- files -------------------------------------------------------------------------- */

/* Wait until x may go on. */
static int xfer_wait(struct conf *c, struct ts_xfer *x)
{
	struct pollfd p = { .fd = ts_xfer_fd(x), .events = ts_xfer_events(x) };

	if (poll(&p, 1, CONF_WAIT_MS) == 0)
		return conf_fail(c, "a transfer stalled for %d ms", CONF_WAIT_MS);
	return 0;
}

/* A write through a transfer, in small pieces (queue full: step first). */
static int xfer_write(struct conf *c, struct ts_sb *sb, const char *path, const char *user,
		      int mode, const uint8_t *data, size_t len, struct ts_error *err)
{
	struct ts_xfer *x = NULL;
	size_t off = 0;
	bool finished = false;
	int r = ts_xfer_write_start(sb, path, user, mode, &x, err);

	while (r >= 0) {
		const uint8_t *d;
		size_t l, piece = len - off > 1000 ? 1000 : len - off;

		if (off < len) {
			r = ts_xfer_push(x, data + off, piece, err);
			if (r == 0) {
				off += piece;
				continue;
			}
			if (r != -EAGAIN)
				break;
		} else if (!finished) {
			r = ts_xfer_finish(x, err);
			if (r < 0)
				break;
			finished = true;
		}
		r = ts_xfer_step(x, &d, &l, err);
		if (r == 2) {
			r = finished ? 0 : conf_fail(c, "a write done before it was finished");
			break;
		}
		if (r == 0 && xfer_wait(c, x) < 0)
			r = -ETIMEDOUT;
	}
	ts_xfer_close(x);
	return r;
}

static int xfer_read(struct conf *c, struct ts_sb *sb, const char *path, const char *user,
		     uint8_t **ret, size_t *len, struct ts_error *err)
{
	struct ts_xfer *x = NULL;
	uint8_t *buf = NULL;
	size_t n = 0;
	int r = ts_xfer_read_start(sb, path, user, &x, err);

	while (r >= 0) {
		const uint8_t *d;
		size_t l;

		r = ts_xfer_step(x, &d, &l, err);
		if (r == 2) {
			r = 0;
			break;
		}
		if (r == 1) {
			uint8_t *grown = realloc(buf, n + l + 1);

			if (!grown) {
				r = ts_err(err, -ENOMEM, "out of memory");
				break;
			}
			buf = grown;
			memcpy(buf + n, d, l);
			n += l;
		} else if (r == 0 && xfer_wait(c, x) < 0) {
			r = ts_err(err, -ETIMEDOUT, "stalled");
		}
	}
	ts_xfer_close(x);
	if (r < 0) {
		free(buf);
		return r;
	}
	*ret = buf ? buf : calloc(1, 1);
	*len = n;
	return 0;
}

static int do_write(struct conf *c, const struct conf_step *st)
{
	struct ts_error err = { 0 };
	char path[4096];
	size_t len;
	uint8_t *data = conf_gen(c, st->data, st->size, st->text, &len);
	int mode = st->mode ? st->mode : -1, r;

	if (!data)
		return conf_fail(c, "out of memory");
	if (conf_need_sb(c, st->sb) < 0) {
		free(data);
		return -1;
	}
	conf_expand(c, st->path, path, sizeof(path));
	if (st->stream_io)
		r = xfer_write(c, c->sb[st->sb], path, st->user, mode, data, len, &err);
	else
		r = ts_file_write(c->sb[st->sb], path, st->user, data, len, mode, &err);
	free(data);
	if (r < 0 && c->why[0])
		return -1;
	r = conf_check_code(c, r, &err, &st->expect);
	return r < 0 ? r : 0;
}

static int do_write_many(struct conf *c, const struct conf_step *st)
{
	struct ts_error err = { 0 };
	char path[4096], path2[4096], text[4096];
	struct ts_file_data f[2];
	size_t len, done = 99;
	uint8_t *data = conf_gen(c, st->data, st->size, st->text, &len);
	int r;

	if (!data)
		return conf_fail(c, "out of memory");
	if (conf_need_sb(c, st->sb) < 0) {
		free(data);
		return -1;
	}
	conf_expand(c, st->text, text, sizeof(text));
	f[0] = (struct ts_file_data){ .path = conf_expand(c, st->path, path, sizeof(path)),
				      .data = text,
				      .len = strlen(text),
				      .mode = -1 };
	f[1] = (struct ts_file_data){ .path = conf_expand(c, st->path2, path2, sizeof(path2)),
				      .data = data,
				      .len = len,
				      .mode = -1 };
	r = ts_file_write_many(c->sb[st->sb], f, 2, st->user, &done, &err);
	free(data);
	if ((r = conf_check_code(c, r, &err, &st->expect)) != 0)
		return r < 0 ? r : 0;
	if (done != 2)
		return conf_fail(c, "%zu files written, want 2", done);
	return 0;
}

static int do_read(struct conf *c, const struct conf_step *st)
{
	struct ts_error err = { 0 };
	uint8_t *data = NULL;
	char path[4096];
	size_t len = 0;
	int r;

	if (conf_need_sb(c, st->sb) < 0)
		return -1;
	conf_expand(c, st->path, path, sizeof(path));
	if (st->stream_io)
		r = xfer_read(c, c->sb[st->sb], path, st->user, &data, &len, &err);
	else
		r = ts_file_read(c->sb[st->sb], path, st->user, &data, &len, CONF_FILE_MAX, &err);
	if ((r = conf_check_code(c, r, &err, &st->expect)) != 0) {
		free(data);
		return r < 0 ? r : 0;
	}
	r = conf_check_content(c,
			       &(struct conf_expect){ .data = st->expect.data ?: D_TEXT,
						      .size = st->expect.size,
						      .out = st->expect.out },
			       data, len, path);
	free(data);
	return r;
}

static int do_xfer_abandon(struct conf *c, const struct conf_step *st)
{
	struct ts_error err = { 0 };
	struct ts_xfer *x = NULL;
	char path[4096];
	int r;

	if (conf_need_sb(c, st->sb) < 0)
		return -1;
	conf_expand(c, st->path, path, sizeof(path));
	r = ts_xfer_write_start(c->sb[st->sb], path, st->user, -1, &x, &err);
	if (r == 0)
		r = ts_xfer_push(x, "half a file", 11, &err);
	/* the queued piece reaches the sandbox; the END never does */
	for (int i = 0; r == 0 && i < 10; i++) {
		const uint8_t *d;
		size_t l;

		r = ts_xfer_step(x, &d, &l, &err);
		if (r == 0)
			usleep(10000);
	}
	ts_xfer_close(x);
	r = conf_check_code(c, r, &err, &st->expect);
	return r < 0 ? r : 0;
}

static int do_stat(struct conf *c, const struct conf_step *st)
{
	const struct conf_expect *e = &st->expect;
	struct ts_be_entry en;
	struct ts_error err = { 0 };
	char path[4096];
	const char *base;
	int r;

	if (conf_need_sb(c, st->sb) < 0)
		return -1;
	conf_expand(c, st->path, path, sizeof(path));
	r = ts_file_stat(c->sb[st->sb], path, st->user, &en, &err);
	if ((r = conf_check_code(c, r, &err, e)) != 0) {
		ts_be_entry_clear(&en);
		return r < 0 ? r : 0;
	}
	base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (!en.path || en.path[0] != '/')
		r = conf_fail(c, "path `%s` is not absolute", en.path ? en.path : "(none)");
	else if (path[0] == '/' && strcmp(en.path, path) != 0)
		r = conf_fail(c, "path `%s`, want `%s`", en.path, path);
	else if (!en.name || strcmp(en.name, base) != 0)
		r = conf_fail(c, "name `%s`, want `%s`", en.name ? en.name : "(none)", base);
	else if (e->type && en.type != e->type)
		r = conf_fail(c, "type %d, want %d", (int)en.type, (int)e->type);
	else if (e->type == TS_BE_FILE && en.size != e->size)
		r = conf_fail(c, "size %llu, want %zu", (unsigned long long)en.size, e->size);
	else if (e->mode && en.mode != e->mode)
		r = conf_fail(c, "mode %04o, want %04o", en.mode, e->mode);
	ts_be_entry_clear(&en);
	return r;
}

static int do_exists(struct conf *c, const struct conf_step *st)
{
	struct ts_error err = { 0 };
	char path[4096];
	bool yes = !st->expect.yes;
	int r;

	if (conf_need_sb(c, st->sb) < 0)
		return -1;
	conf_expand(c, st->path, path, sizeof(path));
	r = ts_file_exists(c->sb[st->sb], path, st->user, &yes, &err);
	if ((r = conf_check_code(c, r, &err, &st->expect)) != 0)
		return r < 0 ? r : 0;
	return yes == st->expect.yes ? 0 : conf_fail(c, "exists %d, want %d", yes, st->expect.yes);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int do_list(struct conf *c, const struct conf_step *st)
{
	struct ts_be_entry *v = NULL;
	struct ts_error err = { 0 };
	char path[4096], **got = NULL;
	const char *const *want = st->expect.names;
	size_t n = 0, n_want = 0, plen;
	int r;

	if (conf_need_sb(c, st->sb) < 0)
		return -1;
	conf_expand(c, st->path, path, sizeof(path));
	plen = strlen(path);
	r = ts_file_list(c->sb[st->sb], path, st->depth, st->user, &v, &n, &err);
	if ((r = conf_check_code(c, r, &err, &st->expect)) != 0)
		return r < 0 ? r : 0;
	got = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; got && r == 0 && i < n; i++) {
		const char *rel = v[i].path, *last;

		if (!rel || strncmp(rel, path, plen) != 0 || rel[plen] != '/')
			r = conf_fail(c, "entry `%s` is not below `%s`", rel ? rel : "(none)",
				      path);
		else if (rel += plen + 1, last = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel,
			 !v[i].name || strcmp(v[i].name, last) != 0)
			r = conf_fail(c, "entry `%s` named `%s`", v[i].path,
				      v[i].name ? v[i].name : "");
		else if (asprintf(&got[i], "%s%s", rel, v[i].type == TS_BE_DIR ? "/" : "") < 0)
			r = conf_fail(c, "out of memory");
	}
	while (want && want[n_want])
		n_want++;
	if (r == 0 && got) {
		qsort(got, n, sizeof(char *), cmp_str);
		for (size_t i = 0; r == 0 && i < n_want; i++)
			if (!bsearch(&want[i], got, n, sizeof(char *), cmp_str))
				r = conf_fail(c, "`%s` not listed (%zu entries, first `%s`)",
					      want[i], n, n ? got[0] : "");
		for (size_t i = 0; r == 0 && i < n; i++) {
			bool found = false;

			for (size_t k = 0; k < n_want; k++)
				found |= !strcmp(got[i], want[k]);
			if (!found)
				r = conf_fail(c, "`%s` listed, not expected at depth %u", got[i],
					      st->depth);
			else if (i > 0 && !strcmp(got[i], got[i - 1]))
				r = conf_fail(c, "`%s` listed twice", got[i]);
		}
	}
	for (size_t i = 0; got && i < n; i++)
		free(got[i]);
	free(got);
	ts_be_entries_free(v, n);
	return r;
}

static int do_file_op(struct conf *c, const struct conf_step *st)
{
	struct ts_error err = { 0 };
	char path[4096], path2[4096];
	bool created = !st->expect.yes;
	int r;

	if (conf_need_sb(c, st->sb) < 0)
		return -1;
	conf_expand(c, st->path, path, sizeof(path));
	conf_expand(c, st->path2 ? st->path2 : "", path2, sizeof(path2));
	switch (st->op) {
	case C_MKDIR:
		r = st->mode ? ts_file_mkdir_mode(c->sb[st->sb], path, st->user, (unsigned)st->mode,
						  &created, &err)
			     : ts_file_mkdir(c->sb[st->sb], path, st->user, &created, &err);
		break;
	case C_REMOVE:
		r = ts_file_remove(c->sb[st->sb], path, st->user, &err);
		break;
	default:
		r = ts_file_rename(c->sb[st->sb], path, path2, st->user, &err);
		break;
	}
	if ((r = conf_check_code(c, r, &err, &st->expect)) != 0)
		return r < 0 ? r : 0;
	if (st->op == C_MKDIR && created != st->expect.yes)
		return conf_fail(c, "created %d, want %d", created, st->expect.yes);
	return 0;
}

static int do_watch(struct conf *c, const struct conf_step *st)
{
	struct ts_error err = { 0 };
	struct ts_watch *w = NULL;
	char path[4096];
	int r;

	if (conf_need_sb(c, st->sb) < 0)
		return -1;
	conf_expand(c, st->path, path, sizeof(path));
	r = ts_watch_start(c->sb[st->sb], path, st->recursive, st->user, &w, &err);
	if ((r = conf_check_code(c, r, &err, &st->expect)) != 0)
		return r < 0 ? r : 0;
	ts_watch_close(c->w[st->h]);
	c->w[st->h] = w;
	return 0;
}

static int do_watch_expect(struct conf *c, const struct conf_step *st)
{
	const struct conf_expect *e = &st->expect;
	long long deadline = conf_mono_ms() + (st->ms ? st->ms : CONF_WATCH_MS);
	struct ts_watch *w = c->w[st->h];
	char seen[1024] = "";

	if (!w)
		return conf_fail(c, "no watch in slot %d", st->h);
	for (;;) {
		struct ts_watch_event ev;
		struct ts_error err = { 0 };
		struct pollfd p = { .fd = ts_watch_fd(w), .events = POLLIN };
		long long left;
		int r = ts_watch_step(w, &ev, &err);

		if (r < 0 && e->code != TS_BE_OK)
			return conf_check_code(c, r, &err, e) < 0 ? -1 : 0;
		if (r < 0)
			return conf_fail(c, "watch: %s (%s)", err.msg,
					 ts_be_code_name(ts_be_code(&err)));
		if (r > 0) {
			size_t l = strlen(seen);

			if (ev.op == e->watch_op && !strcmp(ev.name, e->name))
				return 0;
			snprintf(seen + l, sizeof(seen) - l, " %d:%.200s", (int)ev.op, ev.name);
			continue;
		}
		left = deadline - conf_mono_ms();
		if (left <= 0)
			return conf_fail(c, "no event %d `%s` (saw:%s)", (int)e->watch_op, e->name,
					 seen);
		poll(&p, 1, (int)left);
	}
}

int conf_files_step(struct conf *c, const struct conf_step *st)
{
	switch (st->op) {
	case C_WRITE:
		return do_write(c, st);
	case C_WRITE_MANY:
		return do_write_many(c, st);
	case C_READ:
		return do_read(c, st);
	case C_XFER_ABANDON:
		return do_xfer_abandon(c, st);
	case C_STAT:
		return do_stat(c, st);
	case C_EXISTS:
		return do_exists(c, st);
	case C_LIST:
		return do_list(c, st);
	case C_WATCH:
		return do_watch(c, st);
	case C_WATCH_EXPECT:
		return do_watch_expect(c, st);
	case C_WATCH_CLOSE:
		ts_watch_close(c->w[st->h]);
		c->w[st->h] = NULL;
		return 0;
	default:
		return do_file_op(c, st);
	}
}
