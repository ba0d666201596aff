/* SPDX-License-Identifier: Apache-2.0 */
/*
 * find and grep: GNU find and GNU grep run inside the sandbox (argv, never a shell line),
 * their output filtered here by the pattern and the .gitignore files, and cut at
 * TS_TOOL_LIST_MAX results or TS_TOOL_TEXT_MAX bytes, saying so. A search far past the cut
 * is killed: its count is then a lower bound.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "tools-internal.h"
#include "util.h"

#define SEARCH_TIMEOUT_MS 120000
#define FAR_PAST (10 * TS_TOOL_LIST_MAX) /* matches counted past the cut before the kill */
#define RECORD_MAX 8192			 /* one path of find's output */
#define GITIGNORE_MAX (1U << 20)	 /* bytes of one .gitignore read */
#define GITIGNORE_FILES_MAX 200		 /* .gitignore files read per search */
#define GREP_LINE_MAX (1U << 20)	 /* a line kept whole for its tag */
#define GREP_SHOW_MAX 512		 /* bytes of a matching line shown */
#define STDERR_MAX 2048

static void glob_freep(struct ts_glob **g)
{
	ts_glob_free(*g);
}

static void gitignore_freep(struct ts_gitignore **g)
{
	ts_gitignore_free(*g);
}

/* a/b + c: "a/b/c"; "" + c: "c" */
static char *join(const char *a, const char *b)
{
	char *s = NULL;

	if (asprintf(&s, "%s%s%s", a, a[0] && b[0] ? "/" : "", b) < 0)
		return NULL;
	return s;
}

static void append_bounded(char *buf, size_t max, size_t *len, const uint8_t *d, size_t n)
{
	if (n > max - 1 - *len)
		n = max - 1 - *len;
	memcpy(buf + *len, d, n);
	*len += n;
	buf[*len] = '\0';
}

/* NUL-separated records of a command's stdout (find -printf '...\0'), its stderr kept
 * (bounded) for messages. A record longer than RECORD_MAX is left out. */
struct nul_records {
	char rec[RECORD_MAX];
	size_t rec_len;
	bool rec_over;
	char errout[STDERR_MAX];
	size_t err_len;
};

/* Feed one piece of output; each whole record goes to fn (false: stop, returned). */
static bool nul_records_feed(struct nul_records *r, enum ts_cmd_event_type stream,
			     const uint8_t *data, size_t len,
			     bool (*fn)(void *userdata, char *rec, size_t len), void *userdata)
{
	if (stream == TS_CMD_EV_STDERR) {
		append_bounded(r->errout, sizeof(r->errout), &r->err_len, data, len);
		return true;
	}
	for (size_t i = 0; i < len; i++) {
		if (data[i] != '\0') {
			if (r->rec_len < sizeof(r->rec) - 1)
				r->rec[r->rec_len++] = (char)data[i];
			else
				r->rec_over = true; /* longer than any path: left out */
			continue;
		}
		r->rec[r->rec_len] = '\0';
		bool go = r->rec_over || fn(userdata, r->rec, r->rec_len);
		r->rec_len = 0;
		r->rec_over = false;
		if (!go)
			return false;
	}
	return true;
}

/* --- .gitignore files ---------------------------------------------------------------- */

struct names {
	char **v;
	size_t n;
	struct nul_records out;
};

static bool names_record(void *userdata, char *rec, size_t len)
{
	struct names *s = userdata;
	char **grown = realloc(s->v, (s->n + 1) * sizeof(char *));

	if (!grown || !(grown[s->n] = strdup(rec))) {
		if (grown)
			s->v = grown;
		return false;
	}
	s->v = grown;
	s->n++;
	return s->n < GITIGNORE_FILES_MAX;
}

static bool names_add(void *userdata, enum ts_cmd_event_type stream, const uint8_t *data,
		      size_t len)
{
	struct names *s = userdata;

	return nul_records_feed(&s->out, stream, data, len, names_record, s);
}

static size_t depth(const char *p)
{
	size_t d = 0;

	for (; *p; p++)
		d += *p == '/';
	return d;
}

static int by_depth(const void *a, const void *b)
{
	size_t x = depth(*(char *const *)a), y = depth(*(char *const *)b);

	return x < y ? -1 : x > y ? 1 : strcmp(*(char *const *)a, *(char *const *)b);
}

/* Read root_abs/dir/.gitignore into gi (base dir). A file that cannot be read is left out. */
static int read_one(struct ts_toolbox *t, struct ts_gitignore *gi, const char *root_abs,
		    const char *dir, size_t *n_read, struct ts_error *err)
{
	_cleanup_free_ char *rel = join(dir, ".gitignore");
	_cleanup_free_ char *path = rel ? join(root_abs, rel) : NULL;
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len = 0;
	struct ts_error e = { 0 };
	int r;

	if (!path)
		return ts_err(err, -ENOMEM, "out of memory");
	r = ts_file_read(t->sb, path, t->user, &buf, &len, GITIGNORE_MAX, &e);
	if (r == -ENOMEM) {
		*err = e;
		return r;
	}
	if (r < 0)
		return 0; /* missing, unreadable, too large: as git, no rules from it */
	r = ts_gitignore_add(gi, dir, (const char *)buf, len);
	if (r == -ENOMEM)
		return ts_err(err, r, "out of memory");
	(*n_read)++;
	return 0;
}

/*
 * The .gitignore rules that apply below rel (abs in the sandbox): the workspace root's
 * and those of the directories down to rel, then every .gitignore below it (found by a
 * find that skips .git), parents first.
 */
static int load_ignores(struct ts_toolbox *t, const char *abs, const char *rel,
			struct ts_gitignore **ret, struct ts_error *err)
{
	_cleanup_(gitignore_freep) struct ts_gitignore *gi = ts_gitignore_new();
	_cleanup_free_ char *root_abs = strdup(abs);
	struct names found = { 0 };
	struct ts_run_result rr;
	size_t n_read = 0;
	int r;

	if (!gi || !root_abs)
		return ts_err(err, -ENOMEM, "out of memory");
	/* abs is root_abs + "/" + rel */
	if (rel[0]) {
		size_t al = strlen(root_abs), rl = strlen(rel);
		if (al > rl && strcmp(root_abs + al - rl, rel) == 0 && root_abs[al - rl - 1] == '/')
			root_abs[al - rl - 1] = '\0';
	}
	/* the directories above rel, root first */
	if (rel[0]) {
		r = read_one(t, gi, root_abs, "", &n_read, err);
		for (size_t i = 0; rel[i] && r >= 0; i++) {
			if (rel[i] != '/')
				continue;
			_cleanup_free_ char *dir = strndup(rel, i);
			r = dir ? read_one(t, gi, root_abs, dir, &n_read, err)
				: ts_err(err, -ENOMEM, "out of memory");
		}
		if (r < 0)
			return r;
	}
	/* every .gitignore below rel (rel's own included) */
	char *argv[] = { "find",       (char *)abs, "-name", ".git",	"-prune", "-o", "-name",
			 ".gitignore", "-type",	    "f",     "-printf", "%P\\0",  NULL };
	r = ts_tool_exec(t, argv, "/", SEARCH_TIMEOUT_MS, false, names_add, &found, &rr, NULL, err);
	if (r < 0) {
		for (size_t i = 0; i < found.n; i++)
			free(found.v[i]);
		free(found.v);
		return ts_err_prefix(err, r, "look for .gitignore files");
	}
	if (found.n)
		qsort(found.v, found.n, sizeof(char *), by_depth);
	for (size_t i = 0; i < found.n && r >= 0; i++) {
		char *slash = strrchr(found.v[i], '/');
		if (slash)
			*slash = '\0';
		_cleanup_free_ char *base = join(rel, slash ? found.v[i] : "");
		if (!base) {
			r = ts_err(err, -ENOMEM, "out of memory");
			break;
		}
		/* one in an ignored directory has no say (git never reads it) */
		if (!base[0] || !ts_gitignore_ignored(gi, base, true, strlen(rel)))
			r = read_one(t, gi, root_abs, base, &n_read, err);
	}
	for (size_t i = 0; i < found.n; i++)
		free(found.v[i]);
	free(found.v);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(gi);
	return 0;
}

/* --- the search's own command ------------------------------------------------------ */

/*
 * The search command is started before the .gitignore files are looked for, so that its
 * walk and theirs run at once: its output waits in the sandbox (back-pressure) until the
 * rules are loaded and search_wait reads it. search_wait is ts_tool_exec's loop.
 */
static int search_start(struct ts_toolbox *t, char **argv, struct ts_cmd **ret,
			unsigned long long *deadline, struct ts_error *err)
{
	struct ts_cmd_opts o = {
		.argv = argv,
		.cwd = "/",
		.user = t->user,
		.timeout_ms = SEARCH_TIMEOUT_MS,
	};

	*deadline = ts_now_ms() + SEARCH_TIMEOUT_MS + TS_TOOL_EXEC_GRACE_MS;
	return ts_cmd_start(t->sb, &o, ret, NULL, NULL, err);
}

/* A search left before its end (the rules could not be loaded, a failure): killed. */
static void search_abandonp(struct ts_cmd **c)
{
	if (!*c)
		return;
	ts_cmd_signal_self(*c, SIGKILL, NULL);
	ts_cmd_close(*c);
}

/* --- results ------------------------------------------------------------------------- */

struct results {
	FILE *text;
	char *buf;
	size_t buf_len;
	json_t *items;
	size_t shown, total, bytes;
	bool cut_bytes;
};

static int results_open(struct results *r)
{
	*r = (struct results){ 0 };
	r->text = open_memstream(&r->buf, &r->buf_len);
	r->items = json_array();
	return r->text && r->items ? 0 : -ENOMEM;
}

static void results_close(struct results *r)
{
	if (r->text)
		fclose(r->text);
	free(r->buf);
	json_decref(r->items);
	*r = (struct results){ 0 };
}

/* Room for one more line of n bytes? */
static bool results_room(struct results *r, size_t n)
{
	if (r->shown >= TS_TOOL_LIST_MAX)
		return false;
	if (r->bytes + n > TS_TOOL_TEXT_MAX - 1024) {
		r->cut_bytes = true;
		return false;
	}
	return true;
}

/* --- find ---------------------------------------------------------------------------- */

struct find_state {
	struct ts_gitignore *gi; /* NULL: none */
	struct ts_glob *g;
	bool by_name; /* the pattern has no `/`: it matches a name */
	const char *rel;
	size_t rel_len;
	struct nul_records out;
	char skip[RECORD_MAX]; /* an ignored directory being passed (its path below rel) */
	size_t skip_len;
	char **paths; /* the matches kept: "d path" */
	size_t n_paths, total;
	bool oom;
};

static void find_record(struct find_state *s, char *rec, size_t len)
{
	if (len < 3 || rec[1] != ' ')
		return;
	char type = rec[0];
	char *p = rec + 2;
	size_t pl = len - 2;
	bool is_dir = type == 'd';

	if (s->skip_len) {
		if (pl > s->skip_len && memcmp(p, s->skip, s->skip_len) == 0 &&
		    p[s->skip_len] == '/')
			return;
		s->skip_len = 0;
	}
	if (s->gi) {
		_cleanup_free_ char *ws = join(s->rel, p);
		if (!ws) {
			s->oom = true;
			return;
		}
		/* find lists a directory before what it holds: its parents were decided */
		char *slash = strrchr(ws, '/');
		if (ts_gitignore_ignored(s->gi, ws, is_dir, slash ? (size_t)(slash - ws) : 0)) {
			if (is_dir) {
				memcpy(s->skip, p, pl + 1);
				s->skip_len = pl;
			}
			return;
		}
	}
	const char *name = strrchr(p, '/');
	name = name ? name + 1 : p;
	if (s->by_name ? !ts_glob_match(s->g, name, strlen(name)) : !ts_glob_match(s->g, p, pl))
		return;
	s->total++;
	/* kept past the cut, so that what is shown is the first of them in order */
	if (s->n_paths >= FAR_PAST)
		return;
	char **grown = realloc(s->paths, (s->n_paths + 1) * sizeof(char *));
	if (!grown) {
		s->oom = true;
		return;
	}
	s->paths = grown;
	if (asprintf(&s->paths[s->n_paths], "%c %s", type, p) < 0) {
		s->oom = true;
		return;
	}
	s->n_paths++;
}

static bool find_one(void *userdata, char *rec, size_t len)
{
	struct find_state *s = userdata;

	find_record(s, rec, len);
	return !s->oom && s->total < FAR_PAST;
}

static bool find_add(void *userdata, enum ts_cmd_event_type stream, const uint8_t *data, size_t len)
{
	struct find_state *s = userdata;

	return nul_records_feed(&s->out, stream, data, len, find_one, s) && !s->oom &&
	       s->total < FAR_PAST;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(*(char *const *)a + 2, *(char *const *)b + 2);
}

/* The pattern as matched: a leading `./` or `/` means the search's directory. */
static const char *pattern_body(const char *p)
{
	while (p[0] == '.' && p[1] == '/')
		p += 2;
	while (p[0] == '/')
		p++;
	return p;
}

/* What find and grep search must be there: a missing one is not_found, not "no matches".
 * 0 when it is a directory (*is_dir) or another file; 1 with res filled; -errno. */
static int search_root(struct ts_toolbox *t, const char *abs, const char *rel, bool *is_dir,
		       struct ts_tool_result *res, struct ts_error *err)
{
	_cleanup_(ts_be_entry_clear) struct ts_be_entry e = { 0 };
	int r = ts_file_stat(t->sb, abs, t->user, &e, err);

	if (r < 0) {
		r = ts_ws_fail(t, r, "search", rel[0] ? rel : ".", res, err);
		return r < 0 ? r : 1;
	}
	*is_dir = e.type == TS_BE_DIR;
	return 0;
}

static int tool_find(struct ts_toolbox *t, json_t *args, struct ts_tool_result *res,
		     struct ts_error *err)
{
	const char *pattern, *path;
	_cleanup_free_ char *abs = NULL, *rel = NULL;
	_cleanup_(glob_freep) struct ts_glob *g = NULL;
	_cleanup_(gitignore_freep) struct ts_gitignore *gi = NULL;
	struct ts_run_result rr;
	struct results out;
	bool stopped = false;
	int r;

	if (ts_tool_arg_str(args, "pattern", true, &pattern, res) ||
	    ts_tool_arg_str(args, "path", false, &path, res))
		return 0;
	const char *body = pattern_body(pattern);
	if (!body[0])
		return ts_tool_fail(res, "invalid_argument",
				    "the pattern is empty: `**` finds everything, `*.c` C files "
				    "at any depth, `src/**/*.c` those below src");
	r = ts_glob_compile(body, strlen(body), &g);
	if (r == -E2BIG)
		return ts_tool_fail(res, "invalid_argument", "the pattern is longer than %u bytes",
				    TS_GLOB_MAX);
	if (r < 0)
		return ts_err(err, r, "out of memory");
	r = ts_ws_resolve(t, path ? path : "", TS_WS_DIR, &abs, &rel, res, err);
	if (r)
		return r < 0 ? r : 0;
	bool is_dir = false;
	if ((r = search_root(t, abs, rel, &is_dir, res, err)))
		return r < 0 ? r : 0;
	if (!is_dir)
		return ts_tool_fail(res, "not_a_directory",
				    "find searches a directory; `%s` is a file (read it with "
				    "read_file)",
				    rel);
	char *argv[] = { "find",   abs,	 "-mindepth", "1",	  "-name", ".git",
			 "-prune", "-o", "-printf",   "%y %P\\0", NULL };
	_cleanup_(search_abandonp) struct ts_cmd *c = NULL;
	unsigned long long deadline;
	r = search_start(t, argv, &c, &deadline, err);
	if (r < 0)
		return ts_err_prefix(err, r, "find");
	r = load_ignores(t, abs, rel, &gi, err);
	if (r < 0)
		return r;
	struct find_state *s = calloc(1, sizeof(*s));
	if (!s)
		return ts_err(err, -ENOMEM, "out of memory");
	s->gi = ts_gitignore_count(gi) ? gi : NULL;
	s->g = g;
	s->by_name = !strchr(body, '/');
	s->rel = rel;
	s->rel_len = strlen(rel);
	if (results_open(&out) < 0) {
		results_close(&out);
		free(s);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	r = ts_tool_wait(c, "find", deadline, find_add, s, &rr, &stopped, err);
	if (r == 0)
		ts_cmd_close(TAKE_PTR(c)); /* ended */
	if (r == 0 && s->oom)
		r = ts_err(err, -ENOMEM, "out of memory");
	if (r < 0)
		goto done;
	/* find's failure without a single entry: not GNU find, or the directory is gone */
	if (!stopped && rr.exit_code != 0 && s->total == 0 && s->out.err_len &&
	    !strstr(s->out.errout, "Permission denied")) {
		ts_tool_fail(res, "internal",
			     "find failed in the sandbox (GNU findutils is needed): %.512s",
			     s->out.errout);
		goto done;
	}
	if (s->n_paths)
		qsort(s->paths, s->n_paths, sizeof(char *), by_path);
	for (size_t i = 0; i < s->n_paths; i++) {
		_cleanup_free_ char *ws = join(rel, s->paths[i] + 2);
		_cleanup_free_ char *line = NULL;
		bool dir = s->paths[i][0] == 'd';
		if (!ws)
			break;
		line = ts_tool_utf8(ws, strlen(ws), NULL);
		if (!line)
			break;
		if (!results_room(&out, strlen(line) + 2))
			break;
		fprintf(out.text, "%s%s\n", line, dir ? "/" : "");
		json_array_append_new(out.items, json_string(line));
		out.shown++;
		out.bytes += strlen(line) + 2;
	}
	bool exact = !stopped;
	if (out.shown < s->total)
		fprintf(out.text,
			"[cut: %zu of %s%zu matches shown (%s); narrow `path` or `pattern` for the "
			"rest]\n",
			out.shown, exact ? "" : "at least ", s->total,
			out.cut_bytes ? "the result's byte limit" : "the result limit");
	else if (!s->total)
		fprintf(out.text, "no matches for `%s` in `%s`%s\n", pattern, rel[0] ? rel : ".",
			gi && ts_gitignore_count(gi) ? " (gitignored paths are left out)" : "");
	if (s->out.err_len && strstr(s->out.errout, "Permission denied"))
		fprintf(out.text, "[some directories could not be read]\n");
	fclose(out.text);
	out.text = NULL;
	json_t *data = json_pack("{s:O, s:I, s:b, s:b, s:I}", "paths", out.items, "count",
				 (json_int_t)s->total, "count_exact", exact, "truncated",
				 out.shown < s->total, "shown", (json_int_t)out.shown);
	ts_tool_ok_text(res, data, TAKE_PTR(out.buf));
done:
	results_close(&out);
	for (size_t i = 0; i < s->n_paths; i++)
		free(s->paths[i]);
	free(s->paths);
	free(s);
	return r < 0 ? ts_err_prefix(err, r, "find") : 0;
}

/* --- grep ---------------------------------------------------------------------------- */

enum grep_part {
	G_PATH,
	G_NUM,
	G_TEXT
};

struct grep_state {
	struct ts_gitignore *gi;
	struct ts_glob *g; /* a glob with `/`, matched here (one without: --include) */
	const char *abs, *rel;
	size_t abs_len;
	struct results *out;
	enum grep_part part;
	char path[RECORD_MAX];
	size_t path_len;
	bool path_over;
	unsigned long long num;
	uint8_t *line; /* GREP_LINE_MAX */
	size_t line_len, line_total;
	/* the verdict on the last file, which its next lines share */
	char last[RECORD_MAX];
	bool last_ok;
	size_t files;
	bool oom;
	char errout[STDERR_MAX];
	size_t err_len;
};

/* The file's path relative to the workspace, or NULL (out of memory). */
static char *grep_ws_path(struct grep_state *s, const char *p)
{
	if (strcmp(p, s->abs) == 0)
		return strdup(s->rel);
	if (strncmp(p, s->abs, s->abs_len) == 0 && p[s->abs_len] == '/')
		return join(s->rel, p + s->abs_len + 1);
	return strdup(p);
}

static void grep_match(struct grep_state *s)
{
	_cleanup_free_ char *ws = NULL;

	if (strcmp(s->path, s->last) != 0) {
		snprintf(s->last, sizeof(s->last), "%s", s->path);
		ws = grep_ws_path(s, s->path);
		if (!ws) {
			s->oom = true;
			return;
		}
		/* a file named as the path is searched whatever .gitignore and glob say */
		bool named = strcmp(s->path, s->abs) == 0;
		s->last_ok = named || !s->gi ||
			     !ts_gitignore_ignored(s->gi, ws, false, strlen(s->rel));
		if (s->last_ok && s->g && !named) {
			const char *below = ws + strlen(s->rel) + (s->rel[0] ? 1 : 0);
			s->last_ok = ts_glob_match(s->g, below, strlen(below));
		}
		if (s->last_ok)
			s->files++;
	}
	if (!s->last_ok)
		return;
	s->out->total++;
	if (!results_room(s->out, GREP_SHOW_MAX + strlen(s->path) + 64))
		return;
	if (!ws && !(ws = grep_ws_path(s, s->path))) {
		s->oom = true;
		return;
	}
	char tag[TS_TOOL_TAG_LEN + 1];
	bool whole = s->line_total == s->line_len;
	if (whole)
		ts_linetag((const char *)s->line, s->line_len, tag);
	else
		snprintf(tag, sizeof(tag), "%.*s", TS_TOOL_TAG_LEN, "????????");
	size_t shown = s->line_len > GREP_SHOW_MAX ? ts_tool_utf8_prefix(s->line, GREP_SHOW_MAX)
						   : s->line_len;
	_cleanup_free_ char *text = ts_tool_utf8(s->line, shown, NULL);
	_cleanup_free_ char *wsu = ts_tool_utf8(ws, strlen(ws), NULL);
	if (!text || !wsu) {
		s->oom = true;
		return;
	}
	char more[80] = "";
	if (shown < s->line_total)
		snprintf(more, sizeof(more), " [... %zu more bytes of this line]",
			 s->line_total - shown);
	int n = fprintf(s->out->text, "%s:%llu:%s|%s%s\n", wsu, s->num, tag, text, more);
	json_array_append_new(s->out->items, json_pack("{s:s, s:I, s:s, s:s, s:b}", "path", wsu,
						       "line", (json_int_t)s->num, "tag", tag,
						       "text", text, "cut", shown < s->line_total));
	s->out->shown++;
	s->out->bytes += n > 0 ? (size_t)n : 0;
}

static bool grep_add(void *userdata, enum ts_cmd_event_type stream, const uint8_t *data, size_t len)
{
	struct grep_state *s = userdata;

	if (stream == TS_CMD_EV_STDERR) {
		append_bounded(s->errout, sizeof(s->errout), &s->err_len, data, len);
		return true;
	}
	/* records: PATH \0 NUMBER : TEXT \n */
	for (size_t i = 0; i < len; i++) {
		uint8_t c = data[i];

		switch (s->part) {
		case G_PATH:
			if (c == '\0') {
				s->path[s->path_len] = '\0';
				s->part = G_NUM;
				s->num = 0;
			} else if (s->path_len < sizeof(s->path) - 1) {
				s->path[s->path_len++] = (char)c;
			} else {
				s->path_over = true;
			}
			break;
		case G_NUM:
			if (c >= '0' && c <= '9' && s->num < 1ULL << 40) {
				s->num = s->num * 10 + (c - '0');
			} else {
				s->part = G_TEXT;
				s->line_len = s->line_total = 0;
			}
			break;
		case G_TEXT:
			if (c != '\n') {
				if (s->line_len < GREP_LINE_MAX)
					s->line[s->line_len++] = c;
				s->line_total++;
				break;
			}
			if (!s->path_over)
				grep_match(s);
			s->part = G_PATH;
			s->path_len = 0;
			s->path_over = false;
			break;
		}
	}
	return !s->oom && s->out->total < FAR_PAST;
}

/* Only "cannot read this file" lines in grep's stderr (not a bad expression)? */
static bool only_unreadable(const char *e)
{
	for (const char *l = e; *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		_cleanup_free_ char *line = strndup(l, n);

		if (line && n && !strstr(line, "Permission denied") &&
		    !strstr(line, "No such file or directory") &&
		    !strstr(line, "Input/output error"))
			return false;
		l += n + (nl ? 1 : 0);
	}
	return true;
}

static int tool_grep(struct ts_toolbox *t, json_t *args, struct ts_tool_result *res,
		     struct ts_error *err)
{
	const char *pattern, *path, *glob;
	_cleanup_free_ char *abs = NULL, *rel = NULL, *include = NULL;
	_cleanup_(glob_freep) struct ts_glob *g = NULL;
	_cleanup_(gitignore_freep) struct ts_gitignore *gi = NULL;
	struct ts_run_result rr;
	struct results out;
	bool stopped = false;
	int r;

	if (ts_tool_arg_str(args, "pattern", true, &pattern, res) ||
	    ts_tool_arg_str(args, "path", false, &path, res) ||
	    ts_tool_arg_str(args, "glob", false, &glob, res))
		return 0;
	if (!pattern[0])
		return ts_tool_fail(res, "invalid_argument",
				    "the pattern is empty: give a regular expression (ERE, as "
				    "`grep -E`)");
	if (strlen(pattern) > 64 * 1024)
		return ts_tool_fail(res, "invalid_argument", "the pattern is longer than 64 KiB");
	if (glob) {
		const char *body = pattern_body(glob);
		if (!body[0])
			return ts_tool_fail(res, "invalid_argument",
					    "the glob is empty: leave it out to search every file");
		if (strchr(body, '/')) {
			r = ts_glob_compile(body, strlen(body), &g);
			if (r == -E2BIG)
				return ts_tool_fail(res, "invalid_argument",
						    "the glob is longer than %u bytes",
						    TS_GLOB_MAX);
			if (r < 0)
				return ts_err(err, r, "out of memory");
		} else if (asprintf(&include, "--include=%s", body) < 0) {
			return ts_err(err, -ENOMEM, "out of memory");
		}
	}
	/* "" is the workspace (a directory); a path given may also name one file */
	r = ts_ws_resolve(t, path ? path : "", path && path[0] ? 0 : TS_WS_DIR, &abs, &rel, res,
			  err);
	if (r)
		return r < 0 ? r : 0;
	bool is_dir = false;
	if ((r = search_root(t, abs, rel, &is_dir, res, err)))
		return r < 0 ? r : 0;
	char *argv[16];
	size_t k = 0;
	argv[k++] = "grep";
	argv[k++] = "-rnIH";
	argv[k++] = "-E";
	argv[k++] = "--null";
	argv[k++] = "--color=never";
	argv[k++] = "--exclude-dir=.git";
	if (include)
		argv[k++] = include;
	argv[k++] = "-e";
	argv[k++] = (char *)pattern;
	argv[k++] = "--";
	argv[k++] = abs;
	argv[k] = NULL;
	_cleanup_(search_abandonp) struct ts_cmd *c = NULL;
	unsigned long long deadline;
	r = search_start(t, argv, &c, &deadline, err);
	if (r < 0)
		return ts_err_prefix(err, r, "grep");
	r = load_ignores(t, abs, rel, &gi, err);
	if (r < 0)
		return r;
	if (results_open(&out) < 0) {
		results_close(&out);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	struct grep_state *s = calloc(1, sizeof(*s));
	uint8_t *line = malloc(GREP_LINE_MAX);
	if (!s || !line) {
		free(s);
		free(line);
		results_close(&out);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	s->line = line;
	s->gi = ts_gitignore_count(gi) ? gi : NULL;
	s->g = g;
	s->abs = abs;
	s->abs_len = strlen(abs);
	s->rel = rel;
	s->out = &out;
	r = ts_tool_wait(c, "grep", deadline, grep_add, s, &rr, &stopped, err);
	if (r == 0)
		ts_cmd_close(TAKE_PTR(c)); /* ended */
	if (r == 0 && s->oom)
		r = ts_err(err, -ENOMEM, "out of memory");
	if (r < 0)
		goto out;
	while (s->err_len && s->errout[s->err_len - 1] == '\n')
		s->errout[--s->err_len] = '\0';
	if (!stopped && rr.exit_code == 2 && out.total == 0 && !only_unreadable(s->errout)) {
		ts_tool_fail(res, "invalid_argument",
			     "grep refused the search (the pattern is an extended regular "
			     "expression, as `grep -E`): %.512s",
			     s->err_len ? s->errout : "no message");
		goto out;
	}
	if (!stopped && rr.exit_code != 0 && rr.exit_code != 1 && rr.exit_code != 2) {
		ts_tool_fail(res, "internal", "grep ended with status %d in the sandbox: %.512s",
			     rr.exit_code, s->errout);
		goto out;
	}
	bool exact = !stopped;
	if (out.shown < out.total)
		fprintf(out.text,
			"[cut: %zu of %s%zu matching lines shown (%s); narrow `path`, `glob` or "
			"`pattern` for the rest]\n",
			out.shown, exact ? "" : "at least ", out.total,
			out.cut_bytes ? "the result's byte limit" : "the result limit");
	else if (!out.total)
		fprintf(out.text, "no matches for `%s` in `%s`\n", pattern, rel[0] ? rel : ".");
	if (rr.exit_code == 2 && s->err_len)
		fprintf(out.text, "[some files could not be read]\n");
	fclose(out.text);
	out.text = NULL;
	json_t *data = json_pack("{s:O, s:I, s:b, s:b, s:I, s:I}", "matches", out.items, "count",
				 (json_int_t)out.total, "count_exact", exact, "truncated",
				 out.shown < out.total, "shown", (json_int_t)out.shown, "files",
				 (json_int_t)s->files);
	ts_tool_ok_text(res, data, TAKE_PTR(out.buf));
out:
	results_close(&out);
	free(s->line);
	free(s);
	return r < 0 ? ts_err_prefix(err, r, "grep") : 0;
}

/* --- definitions --------------------------------------------------------------------- */

const struct ts_tool_def ts_tool_find = {
	.name = "find",
	.since = 2,
	.writes = false,
	.description =
		"Find files and directories by glob below `path` (workspace-relative, default the "
		"workspace). A pattern without `/` matches names at any depth (`*.py`, "
		"`Makefile`); one with `/` matches the path relative to `path`: `*` and `?` stay "
		"within a directory, `**` spans any number of them (`src/**/*.c`, `**/test_*`), "
		"`[abc]` classes. Paths ignored by .gitignore files (the workspace's and nested "
		"ones, with `!` negation) and `.git` are left out. Results are workspace-relative, "
		"sorted, directories end with `/`; at most 1000, and the result says when it was "
		"cut and how many matched.",
	.schema = "{\"type\":\"object\",\"properties\":{"
		  "\"pattern\":{\"type\":\"string\",\"description\":\"a glob: `*.c`, "
		  "`src/**/*.test.js`\"},"
		  "\"path\":{\"type\":\"string\",\"description\":\"the directory to search "
		  "(workspace-relative; default the workspace)\"}},"
		  "\"required\":[\"pattern\"],\"additionalProperties\":false}",
	.fn = tool_find,
};

const struct ts_tool_def ts_tool_grep = {
	.name = "grep",
	.since = 2,
	.writes = false,
	.description =
		"Search file contents with an extended regular expression (POSIX ERE, as `grep "
		"-E`: `foo|bar`, `^def [a-z_]+\\(`, no `\\d`: use `[0-9]`), recursively below "
		"`path` (a directory or one file; default the workspace). Binary files, `.git` "
		"and paths ignored by .gitignore files are skipped. `glob` limits the files: "
		"without `/` it matches their names (`*.py`), with `/` their path below `path` "
		"(`src/**/*.ts`). Each match is `path:LINE:TAG|text`, TAG being the line's tag as "
		"read_file shows it (edit_file can anchor on it); long lines are cut after 512 "
		"bytes with a marker. At most 1000 matches; the result says when it was cut and "
		"how many matched.",
	.schema = "{\"type\":\"object\",\"properties\":{"
		  "\"pattern\":{\"type\":\"string\",\"description\":\"an extended regular "
		  "expression (grep -E)\"},"
		  "\"path\":{\"type\":\"string\",\"description\":\"a directory or file to search "
		  "(workspace-relative; default the workspace)\"},"
		  "\"glob\":{\"type\":\"string\",\"description\":\"only files matching this glob "
		  "(`*.py`, `src/**/*.ts`)\"}},"
		  "\"required\":[\"pattern\"],\"additionalProperties\":false}",
	.fn = tool_grep,
};
