/* SPDX-License-Identifier: Apache-2.0 */
#include "yamlwalk.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

static int too_big(const char *path, size_t max, struct ts_error *err)
{
	if (max >= 1024 * 1024 && max % (1024 * 1024) == 0)
		return ts_err(err, -EFBIG, "read `%s`: larger than the %zu MiB limit", path,
			      max / (1024 * 1024));
	return ts_err(err, -EFBIG, "read `%s`: larger than the %zu-byte limit", path, max);
}

int ts_yaml_read_file(const char *path, size_t max, char **ret, size_t *ret_len,
		      struct ts_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap;
	struct stat st;

	/* O_NONBLOCK: a FIFO in place of the file must not hang the caller. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return ts_err_errno(err, -errno, "open `%s`", path);
	if (fstat(fd, &st) < 0)
		return ts_err_errno(err, -errno, "stat `%s`", path);
	if (S_ISDIR(st.st_mode))
		return ts_err_errno(err, -EISDIR, "read `%s`", path);
	if (!S_ISREG(st.st_mode))
		return ts_err(err, -EINVAL, "read `%s`: not a regular file", path);
	if ((unsigned long long)st.st_size > max)
		return too_big(path, max, err);
	/* st_size may be 0 (procfs) or stale: read to EOF, bounded. */
	cap = (size_t)st.st_size + 1 < 4096 ? 4096 : (size_t)st.st_size + 1;
	buf = malloc(cap);
	if (!buf)
		return ts_err(err, -ENOMEM, "read `%s`: out of memory", path);
	for (;;) {
		ssize_t n;

		if (len + 1 >= cap) {
			char *nb;

			if (cap >= max + 2)
				return too_big(path, max, err);
			cap = cap * 2 > max + 2 ? max + 2 : cap * 2;
			nb = realloc(buf, cap);
			if (!nb)
				return ts_err(err, -ENOMEM, "read `%s`: out of memory", path);
			buf = nb;
		}
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return ts_err_errno(err, -errno, "read `%s`", path);
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > max)
		return too_big(path, max, err);
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

int ts_yaml_init(struct ts_yaml *y, const char *path, const char *buf, size_t len,
		 struct ts_error *err)
{
	memset(y, 0, sizeof(*y));
	y->path = path;
	y->buf = buf;
	y->len = len;
	y->err = err;
	if (!yaml_parser_initialize(&y->parser))
		return ts_yaml_nomem(y);
	y->have_parser = true;
	yaml_parser_set_input_string(&y->parser, (const unsigned char *)buf, len);
	return 0;
}

void ts_yaml_done(struct ts_yaml *y)
{
	if (y->have_ev)
		yaml_event_delete(&y->ev);
	if (y->have_parser)
		yaml_parser_delete(&y->parser);
	y->have_ev = y->have_parser = false;
}

const char *ts_yaml_show(char buf[static TS_YAML_SHOW_MAX + 4], const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len && i < TS_YAML_SHOW_MAX; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (i < len) {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

int ts_yaml_err(struct ts_yaml *y, const yaml_mark_t *m, int r, const char *fmt, ...)
{
	char msg[sizeof(y->err->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ts_err(y->err, r, "`%s`:%zu: %s", y->path, m->line + 1, msg);
	return r;
}

int ts_yaml_nomem(struct ts_yaml *y)
{
	return ts_err(y->err, -ENOMEM, "`%s`: out of memory", y->path);
}

static int syntax_error(struct ts_yaml *y)
{
	const yaml_parser_t *p = &y->parser;
	size_t line = p->problem_mark.line + 1;

	if (p->error == YAML_MEMORY_ERROR)
		return ts_yaml_nomem(y);
	/* The reader (encoding errors) reports a byte offset, not a mark. */
	if (p->error == YAML_READER_ERROR) {
		line = 1;
		for (size_t i = 0; i < p->problem_offset && i < y->len; i++)
			line += y->buf[i] == '\n';
	}
	return ts_err(y->err, -EINVAL, "`%s`:%zu: invalid yaml: %s%s%s", y->path, line,
		      p->problem ? p->problem : "syntax error", p->context ? " " : "",
		      p->context ? p->context : "");
}

int ts_yaml_next(struct ts_yaml *y)
{
	if (y->have_ev) {
		yaml_event_delete(&y->ev);
		y->have_ev = false;
	}
	if (!yaml_parser_parse(&y->parser, &y->ev))
		return syntax_error(y);
	y->have_ev = true;
	/* Refusing aliases keeps every value where its line number says it is, and rules
	 * out exponential expansion ("billion laughs"). */
	if (y->ev.type == YAML_ALIAS_EVENT)
		return ts_yaml_err(y, &y->ev.start_mark, -EINVAL, "aliases are not supported");
	/* an anchor is only ever there for an alias: refused alike, as the man pages say */
	if ((y->ev.type == YAML_SCALAR_EVENT && y->ev.data.scalar.anchor) ||
	    (y->ev.type == YAML_SEQUENCE_START_EVENT && y->ev.data.sequence_start.anchor) ||
	    (y->ev.type == YAML_MAPPING_START_EVENT && y->ev.data.mapping_start.anchor))
		return ts_yaml_err(y, &y->ev.start_mark, -EINVAL, "anchors are not supported");
	return 0;
}

const char *ts_yaml_kind(const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		return "a scalar";
	case YAML_SEQUENCE_START_EVENT:
		return "a sequence";
	case YAML_MAPPING_START_EVENT:
		return "a mapping";
	default:
		return "something else";
	}
}

bool ts_yaml_is_null(const yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;

	if (ev->type != YAML_SCALAR_EVENT || ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	return !strcmp(v, "") || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	       !strcmp(v, "NULL");
}

/*
 * A wrong type or a missing value is reported at the key's line: a block collection's own
 * mark is its first child's, and an empty value has none worth showing.
 */
int ts_yaml_scalar(struct ts_yaml *y, const char *key, const char **ret)
{
	const yaml_event_t *ev = &y->ev;

	if (ev->type != YAML_SCALAR_EVENT)
		return ts_yaml_err(y, &y->key_mark, -EINVAL, "expected a scalar for `%s`, got %s",
				   key, ts_yaml_kind(ev));
	if (ts_yaml_is_null(ev))
		return ts_yaml_err(y, &y->key_mark, -EINVAL, "missing value for `%s`", key);
	if (strlen((const char *)ev->data.scalar.value) != ev->data.scalar.length)
		return ts_yaml_err(y, &ev->start_mark, -EINVAL, "NUL byte in the value of `%s`",
				   key);
	*ret = (const char *)ev->data.scalar.value;
	return 0;
}

int ts_yaml_bool(struct ts_yaml *y, const char *key, bool *ret)
{
	char b[TS_YAML_SHOW_MAX + 4];
	const char *s = NULL;
	int r = ts_yaml_scalar(y, key, &s);

	if (r < 0)
		return r;
	if (y->ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return ts_yaml_err(y, &y->ev.start_mark, -EINVAL,
				   "quoted value for `%s`: expected true or false, unquoted", key);
	if (strcmp(s, "true") && strcmp(s, "false"))
		return ts_yaml_err(y, &y->ev.start_mark, -EINVAL,
				   "invalid value `%s` for `%s`: expected true or false",
				   ts_yaml_show(b, s, strlen(s)), key);
	*ret = !strcmp(s, "true");
	return 0;
}

int ts_yaml_key(struct ts_yaml *y, const char *const *keys, size_t n_keys, const char *ctx,
		unsigned *seen, size_t *ret)
{
	const yaml_event_t *ev = &y->ev;
	char b[TS_YAML_SHOW_MAX + 4];
	const char *k;
	size_t len;

	if (ev->type != YAML_SCALAR_EVENT)
		return ts_yaml_err(y, &ev->start_mark, -EINVAL,
				   "expected a scalar key%s%s%s, got %s", ctx ? " in `" : "",
				   ctx ? ctx : "", ctx ? "`" : "", ts_yaml_kind(ev));
	k = (const char *)ev->data.scalar.value;
	len = ev->data.scalar.length;
	for (size_t i = 0; i < n_keys && i < 32; i++) {
		if (len != strlen(keys[i]) || memcmp(k, keys[i], len))
			continue;
		if (*seen & (1U << i))
			return ts_yaml_err(y, &ev->start_mark, -EINVAL, "duplicate key `%s`%s%s%s",
					   keys[i], ctx ? " in `" : "", ctx ? ctx : "",
					   ctx ? "`" : "");
		*seen |= 1U << i;
		*ret = i;
		y->key_mark = ev->start_mark;
		return 0;
	}
	return ts_yaml_err(y, &ev->start_mark, -EINVAL, "unknown key `%s`%s%s%s",
			   ts_yaml_show(b, k, len), ctx ? " in `" : "", ctx ? ctx : "",
			   ctx ? "`" : "");
}

int ts_yaml_expect(struct ts_yaml *y, const char *key, yaml_event_type_t type, bool *empty)
{
	*empty = ts_yaml_is_null(&y->ev);
	if (*empty || y->ev.type == type)
		return 0;
	return ts_yaml_err(y, &y->key_mark, -EINVAL, "expected %s for `%s`, got %s",
			   type == YAML_MAPPING_START_EVENT ? "a mapping" : "a sequence", key,
			   ts_yaml_kind(&y->ev));
}

int ts_yaml_each(struct ts_yaml *y, const char *key, int (*item)(struct ts_yaml *y, void *userdata),
		 void *userdata)
{
	bool empty;
	int r;

	r = ts_yaml_expect(y, key, YAML_SEQUENCE_START_EVENT, &empty);
	if (r < 0 || empty)
		return r;
	for (;;) {
		r = ts_yaml_next(y);
		if (r < 0)
			return r;
		if (y->ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		y->key_mark = y->ev.start_mark;
		r = item(y, userdata);
		if (r < 0)
			return r;
	}
}

int ts_yaml_path(struct ts_yaml *y, const char *key, const char *s, char **ret)
{
	_cleanup_free_ char *cwd = NULL, *abs = NULL;
	const char *slash = strrchr(y->path, '/'), *dir = y->path;
	size_t dlen = slash ? (size_t)(slash - y->path) : 0;

	if (s[0] == '/') {
		abs = strdup(s);
	} else {
		if (y->path[0] != '/') {
			cwd = getcwd(NULL, 0);
			if (!cwd)
				return ts_err_errno(y->err, -errno, "`%s`: resolve `%s`", y->path,
						    key);
		}
		/* `./` leads nowhere: "./agent.yaml" and "agent.yaml" give the same paths */
		while (dlen >= 2 && dir[0] == '.' && dir[1] == '/') {
			size_t k = 2 + strspn(dir + 2, "/");

			k = k > dlen ? dlen : k;
			dir += k;
			dlen -= k;
		}
		if (dlen == 1 && dir[0] == '.')
			dlen = 0;
		while (s[0] == '.' && s[1] == '/')
			s += 2 + strspn(s + 2, "/");
		if (asprintf(&abs, "%s%s%.*s/%s", cwd ? cwd : "", cwd && dlen ? "/" : "", (int)dlen,
			     dir, s) < 0)
			abs = NULL;
	}
	if (!abs)
		return ts_yaml_nomem(y);
	if (strlen(abs) >= PATH_MAX)
		return ts_yaml_err(y, &y->ev.start_mark, -EINVAL,
				   "invalid value for `%s`: the path is longer than %d bytes", key,
				   PATH_MAX - 1);
	*ret = TAKE_PTR(abs);
	return 0;
}

int ts_yaml_document(struct ts_yaml *y, int (*top)(struct ts_yaml *y, void *userdata),
		     void *userdata)
{
	int r;

	r = ts_yaml_next(y); /* STREAM-START */
	if (r < 0)
		return r;
	r = ts_yaml_next(y);
	if (r < 0)
		return r;
	if (y->ev.type == YAML_STREAM_END_EVENT)
		return 0;    /* no document at all: only comments or nothing */
	r = ts_yaml_next(y); /* the root node after DOCUMENT-START */
	if (r < 0)
		return r;
	if (y->ev.type == YAML_MAPPING_START_EVENT)
		r = top(y, userdata);
	else if (!ts_yaml_is_null(&y->ev))
		r = ts_yaml_err(y, &y->ev.start_mark, -EINVAL,
				"expected a mapping at the top level, got %s",
				ts_yaml_kind(&y->ev));
	if (r < 0)
		return r;
	r = ts_yaml_next(y); /* DOCUMENT-END */
	if (r < 0)
		return r;
	r = ts_yaml_next(y);
	if (r < 0)
		return r;
	if (y->ev.type != YAML_STREAM_END_EVENT)
		return ts_yaml_err(y, &y->ev.start_mark, -EINVAL,
				   "only one yaml document is allowed");
	return 0;
}
