/* SPDX-License-Identifier: Apache-2.0 */
/*
 * edit_file: exact-string replacement (version 1 and 2), and edits that name lines by the
 * tags read_file shows (version 2): replace a tagged range, insert after a tagged line.
 * Every edit of a call is checked against the file's current content before anything
 * changes; they then apply together, in one atomic write, or not at all.
 *
 * Positions: every edit becomes one or more spans, byte ranges of the current content
 * (an insertion is an empty one) with their replacement, all found in the content as it
 * is, so that edits of one call never see each other's results and cannot depend on
 * their order. A file whose last line has no newline is worked on with one added, which
 * is taken off again at the end: line edits then need no special case for the last line,
 * and the file keeps its ending.
 *
 * Staleness: the toolbox remembers the content hash of each file as this run last read or
 * wrote it. When the file's hash differs now (bash, or anything else, changed it), an
 * old_string edit is refused: the agent's idea of the file is out of date, and the string
 * may now be somewhere it did not mean. Tag edits stay allowed: each tag is checked
 * against the line it names, so they apply only where the lines are as the agent saw
 * them; their result says that the file had changed.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "tools-internal.h"

#define EDITS_MAX 256	    /* edits in one call */
#define SPANS_MAX 100000    /* replacements in one call (replace_all included) */
#define SHOW_CONTEXT 2	    /* lines shown around a change */
#define SHOW_LINES_MAX 200  /* lines a result shows in all */
#define SHOW_REGION_MAX 40  /* lines shown of one changed region (its head and tail) */
#define SHOW_LINE_BYTES 500 /* bytes shown of one line */

enum edit_kind {
	EDIT_REPLACE,
	EDIT_RANGE,
	EDIT_INSERT
};

struct edit {
	enum edit_kind kind;
	const char *old, *new;
	size_t old_len, new_len;
	bool all;
	const char *start_ref, *end_ref; /* range: start, end; insert: after in start_ref */
	size_t start, end;		 /* lines (insert: after line start, 0 the top) */
	char start_tag[TS_TOOL_TAG_LEN + 1], end_tag[TS_TOOL_TAG_LEN + 1];
	size_t count; /* replace: occurrences */
};

struct span {
	size_t from, to; /* of the work buffer */
	const char *text;
	size_t len;
	bool add_nl; /* a line edit's text without its final newline */
	size_t edit;
	size_t nfrom, nto; /* where it landed in the new content */
};

/* The lines of a buffer: starts[i] is where line i + 1 begins, starts[n] its end. */
struct lines {
	uint32_t *starts;
	size_t n;
};

static void lines_free(struct lines *l)
{
	free(l->starts);
	l->starts = NULL;
}

static int lines_index(const char *s, size_t len, struct lines *l)
{
	size_t cap = 1024, n = 0;
	uint32_t *v = malloc(cap * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(s + i, '\n', len - i);

		if (n + 2 > cap) {
			uint32_t *g = reallocarray(v, cap * 2, sizeof(*v));
			if (!g) {
				free(v);
				return -ENOMEM;
			}
			v = g;
			cap *= 2;
		}
		v[n++] = (uint32_t)i;
		i = nl ? (size_t)(nl - s) + 1 : len;
	}
	v[n] = (uint32_t)len;
	l->starts = v;
	l->n = n;
	return 0;
}

/* Line k (1-based) without its newline. */
static const char *line_at(const char *s, const struct lines *l, size_t k, size_t *len)
{
	size_t a = l->starts[k - 1], b = l->starts[k];

	if (b > a && s[b - 1] == '\n')
		b--;
	*len = b - a;
	return s + a;
}

/* The line (1-based) that holds byte off, or the last one. */
static size_t line_of(const struct lines *l, size_t off)
{
	size_t lo = 0, hi = l->n;

	if (l->n == 0)
		return 0;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (l->starts[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo + 1;
}

static void print_lines(FILE *f, const char *s, const struct lines *l, size_t a, size_t b,
			bool tags)
{
	for (size_t k = a; k <= b && k <= l->n; k++) {
		size_t len;
		const char *p = line_at(s, l, k, &len);

		if (tags) {
			ts_linetag_print(f, k, p, len, SHOW_LINE_BYTES);
		} else {
			ts_text_print(f, p, len, SHOW_LINE_BYTES);
			fputc('\n', f);
		}
	}
}

/* --- arguments ----------------------------------------------------------------------- */

static int arg_fail(struct ts_tool_result *res, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int arg_fail(struct ts_tool_result *res, const char *where, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ts_tool_fail(res, "invalid_argument", "%s%s%s", where, where[0] ? ": " : "", msg);
	return 1;
}

static int get_str(json_t *o, const char *key, const char *where, bool required, const char **ret,
		   size_t *len, struct ts_tool_result *res)
{
	json_t *v = json_object_get(o, key);

	*ret = NULL;
	*len = 0;
	if (!v || json_is_null(v))
		return required ? arg_fail(res, where, "`%s` is required", key) : 0;
	if (!json_is_string(v))
		return arg_fail(res, where, "`%s` must be a string", key);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return arg_fail(res, where, "`%s` must not contain NUL characters", key);
	*ret = json_string_value(v);
	*len = json_string_length(v);
	return 0;
}

static int get_ref(json_t *o, const char *key, const char *where, bool required, const char **ref,
		   size_t *line, char *tag, struct ts_tool_result *res)
{
	size_t len;
	int r = get_str(o, key, where, required, ref, &len, res);

	if (r || !*ref)
		return r;
	if (ts_linetag_parse(*ref, line, tag) < 0)
		return arg_fail(res, where,
				"`%s` is `%.40s`, not a line reference: give `N:tag` as read_file "
				"shows it (`12:a3f`)",
				key, *ref);
	return 0;
}

static int parse_edit(json_t *o, size_t i, bool single, struct edit *e, struct ts_tool_result *res)
{
	static const char *const keys[] = { "old_string", "new_string", "replace_all",
					    "start",	  "end",	"after" };
	char where[32] = "";
	const char *k;
	json_t *v;
	int r;

	if (!single)
		snprintf(where, sizeof(where), "edits[%zu]", i);
	if (!json_is_object(o))
		return arg_fail(res, where,
				"an edit is an object: {old_string, new_string, replace_all}, "
				"{start, end, new_string} or {after, new_string}");
	json_object_foreach(o, k, v) {
		bool known = false;
		for (size_t j = 0; j < sizeof(keys) / sizeof(keys[0]); j++)
			known |= strcmp(k, keys[j]) == 0;
		if (!known)
			return arg_fail(
				res, where,
				"an edit has no `%s`; its keys are old_string, new_string, "
				"replace_all (a replacement), start, end, new_string (a range "
				"of lines) or after, new_string (an insertion)",
				k);
	}
	bool has_old = json_object_get(o, "old_string"), has_start = json_object_get(o, "start"),
	     has_after = json_object_get(o, "after");
	if (has_old + has_start + has_after != 1)
		return arg_fail(res, where,
				"an edit has exactly one of `old_string` (replace a string), "
				"`start` (replace tagged lines) or `after` (insert after a tagged "
				"line)");
	if ((r = get_str(o, "new_string", where, true, &e->new, &e->new_len, res)))
		return r;
	if (has_old) {
		json_t *all = json_object_get(o, "replace_all");

		e->kind = EDIT_REPLACE;
		if (json_object_get(o, "end"))
			return arg_fail(res, where, "`end` goes with `start`, not `old_string`");
		if ((r = get_str(o, "old_string", where, true, &e->old, &e->old_len, res)))
			return r;
		if (!e->old_len)
			return arg_fail(res, where,
					"`old_string` is empty; to add lines give `after` (version "
					"2), or include text around the place in old_string");
		if (all && !json_is_null(all) && !json_is_boolean(all))
			return arg_fail(res, where, "`replace_all` must be true or false");
		e->all = json_is_true(all);
		if (strcmp(e->old, e->new) == 0)
			return arg_fail(
				res, where,
				"`old_string` and `new_string` are the same: the edit would "
				"change nothing");
		return 0;
	}
	if (json_object_get(o, "replace_all"))
		return arg_fail(res, where, "`replace_all` goes with `old_string`");
	if (has_start) {
		e->kind = EDIT_RANGE;
		if ((r = get_ref(o, "start", where, true, &e->start_ref, &e->start, e->start_tag,
				 res)) ||
		    (r = get_ref(o, "end", where, false, &e->end_ref, &e->end, e->end_tag, res)))
			return r;
		if (e->start == 0 || (e->end_ref && e->end == 0))
			return arg_fail(res, where,
					"lines are numbered from 1; to insert at the top give "
					"`after: \"0:\"`");
		if (!e->end_ref) {
			e->end = e->start;
			memcpy(e->end_tag, e->start_tag, sizeof(e->end_tag));
		}
		if (e->end < e->start)
			return arg_fail(res, where, "`end` (line %zu) is before `start` (line %zu)",
					e->end, e->start);
		return 0;
	}
	e->kind = EDIT_INSERT;
	if (json_object_get(o, "end"))
		return arg_fail(res, where, "`end` goes with `start`, not `after`");
	if ((r = get_ref(o, "after", where, true, &e->start_ref, &e->start, e->start_tag, res)))
		return r;
	if (!e->new_len)
		return arg_fail(res, where, "`new_string` is empty: there is nothing to insert");
	return 0;
}

/* --- checks -------------------------------------------------------------------------- */

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	/* at one place an insertion goes before a replacement that starts there; two
	 * insertions keep the order they were given in */
	if ((x->to == x->from) != (y->to == y->from))
		return x->to == x->from ? -1 : 1;
	return x->edit < y->edit ? -1 : x->edit > y->edit;
}

static const char *kind_ref(const struct edit *e, char *buf, size_t len)
{
	switch (e->kind) {
	case EDIT_RANGE:
		if (e->end != e->start)
			snprintf(buf, len, "lines %zu-%zu", e->start, e->end);
		else
			snprintf(buf, len, "line %zu", e->start);
		break;
	case EDIT_INSERT:
		snprintf(buf, len, "the insertion after line %zu", e->start);
		break;
	default:
		snprintf(buf, len, "old_string");
	}
	return buf;
}

/* Mark lines a..b (clamped) to show. */
static void mark(bool *show, size_t n, size_t a, size_t b)
{
	if (n == 0)
		return;
	if (a < 1)
		a = 1;
	if (b > n)
		b = n;
	for (size_t k = a; k <= b; k++)
		show[k] = true;
}

/* Print the marked lines, "..." between runs. */
static void print_marked(FILE *f, const char *s, const struct lines *l, const bool *show)
{
	size_t prev = 0;

	for (size_t k = 1; k <= l->n; k++) {
		if (!show[k])
			continue;
		if (prev && k != prev + 1)
			fputs("...\n", f);
		print_lines(f, s, l, k, k, true);
		prev = k;
	}
}

/*
 * Do the tags of e match the current lines? Not: its problem into f, the lines to show
 * marked (f NULL: enough problems were told already).
 */
static bool tags_match(const struct edit *e, size_t i, bool single, const char *w,
		       const struct lines *l, FILE *f, bool *show)
{
	struct {
		const char *name, *ref;
		size_t line;
		const char *tag;
	} refs[2] = { { e->kind == EDIT_INSERT ? "after" : "start", e->start_ref, e->start,
			e->start_tag },
		      { "end", e->end_ref, e->end, e->end_tag } };
	bool good = true;

	for (int j = 0; j < 2; j++) {
		char cur[TS_TOOL_TAG_LEN + 1];
		size_t len;

		if (!refs[j].ref || (e->kind == EDIT_INSERT && refs[j].line == 0))
			continue;
		char who[32] = "";
		if (!single)
			snprintf(who, sizeof(who), "edits[%zu] ", i);
		if (refs[j].line > l->n) {
			if (f)
				fprintf(f,
					"- %s`%s` is `%s`: line %zu is past the end (the file has "
					"%zu line%s)\n",
					who, refs[j].name, refs[j].ref, refs[j].line, l->n,
					l->n == 1 ? "" : "s");
			if (f)
				mark(show, l->n, l->n > 2 ? l->n - 2 : 1, l->n);
			good = false;
			continue;
		}
		const char *p = line_at(w, l, refs[j].line, &len);
		ts_linetag(p, len, cur);
		if (strcmp(cur, refs[j].tag) != 0) {
			if (f)
				fprintf(f, "- %s`%s` is `%s`: line %zu is now tagged `%zu:%s`\n",
					who, refs[j].name, refs[j].ref, refs[j].line, refs[j].line,
					cur);
			if (f)
				mark(show, l->n,
				     refs[j].line > SHOW_CONTEXT ? refs[j].line - SHOW_CONTEXT : 1,
				     refs[j].line + SHOW_CONTEXT);
			good = false;
		}
	}
	return good;
}

/* --- apply --------------------------------------------------------------------------- */

int ts_edit_apply(unsigned version, const char *path, const char *content, size_t len, json_t *args,
		  bool stale, char **out, size_t *out_len, struct ts_tool_result *res)
{
	json_t *edits = json_object_get(args, "edits");
	_cleanup_free_ struct edit *ev = NULL;
	_cleanup_free_ struct span *sv = NULL;
	_cleanup_free_ char *w = NULL, *text = NULL, *nc = NULL;
	_cleanup_free_ bool *show = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	struct lines l = { 0 }, nl = { 0 };
	size_t n = 0, nspans = 0, text_len = 0, wlen;
	bool single = !edits || json_is_null(edits);
	int r = 1;

	*out = NULL;
	*out_len = 0;
	if (version < 2)
		stale = false; /* version 1 is exact replacement, as it always was */
	if (!single) {
		if (version < 2)
			return arg_fail(res, "",
					"`edits` needs tool-set version 2 (this agent has version "
					"%u): give old_string and new_string",
					version);
		if (json_object_get(args, "old_string") || json_object_get(args, "new_string") ||
		    json_object_get(args, "replace_all"))
			return arg_fail(res, "",
					"give either old_string/new_string/replace_all or `edits`, "
					"not both (an edit in `edits` can be a replacement)");
		if (!json_is_array(edits) || json_array_size(edits) == 0)
			return arg_fail(res, "", "`edits` must be a non-empty array of edits");
		if (json_array_size(edits) > EDITS_MAX)
			return arg_fail(res, "", "`edits` holds %zu edits; at most %d in one call",
					json_array_size(edits), EDITS_MAX);
		n = json_array_size(edits);
	} else {
		if (!json_object_get(args, "old_string"))
			return arg_fail(res, "",
					version >= 2 ? "give old_string and new_string, or `edits`"
						     : "the argument `old_string` is required");
		n = 1;
	}
	ev = calloc(n, sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (single) {
			json_t *o = json_pack("{s:O*, s:O*, s:O*}", "old_string",
					      json_object_get(args, "old_string"), "new_string",
					      json_object_get(args, "new_string"), "replace_all",
					      json_object_get(args, "replace_all"));
			if (!o)
				return -ENOMEM;
			/* "O*" leaves out what args lacks; the strings stay args's own, so
			 * they outlive o */
			r = parse_edit(o, 0, true, &ev[0], res);
			json_decref(o);
		} else {
			r = parse_edit(json_array_get(edits, i), i, false, &ev[i], res);
		}
		if (r)
			return r;
	}

	/* the work buffer: the content with its last line ended */
	bool virt_nl = len > 0 && content[len - 1] != '\n';
	wlen = len + virt_nl;
	w = malloc(wlen + 1);
	if (!w)
		return -ENOMEM;
	memcpy(w, content, len);
	if (virt_nl)
		w[len] = '\n';
	w[wlen] = '\0';
	if (lines_index(w, wlen, &l) < 0)
		return -ENOMEM;

	/* tags first: a mismatch shows the lines as they are, and nothing else matters
	 * until the agent has seen them */
	f = open_memstream(&text, &text_len);
	show = calloc(l.n + 2, sizeof(*show));
	if (!f || !show)
		goto oom;
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		if (ev[i].kind != EDIT_REPLACE)
			bad += !tags_match(&ev[i], i, single, w, &l, bad < 20 ? f : NULL, show);
	if (bad > 20)
		fprintf(f, "- and %zu more edits whose references do not match\n", bad - 20);
	if (bad) {
		fputs("the current lines:\n", f);
		print_marked(f, w, &l, show);
		if (fclose(f) != 0) {
			f = NULL;
			goto oom;
		}
		f = NULL;
		ts_tool_fail(res, "stale",
			     "edit_file `%s`: a line reference does not match the file's current "
			     "content, so nothing was changed (the file changed since it was "
			     "read, or a reference was mistyped):\n%s"
			     "retry with the references above, or read_file `%s` again",
			     path, text, path);
		r = 1;
		goto done;
	}
	fclose(f);
	f = NULL;
	free(text);
	text = NULL;

	bool any_replace = false;
	for (size_t i = 0; i < n; i++)
		any_replace |= ev[i].kind == EDIT_REPLACE;
	if (stale && any_replace) {
		ts_tool_fail(
			res, "stale",
			"edit_file `%s`: the file changed since this run last read or wrote it "
			"(bash or another program changed it), so an old_string edit might "
			"not do what you meant; nothing was changed: read_file `%s` again, "
			"then edit%s",
			path, path,
			version >= 2 ? " (edits by line tags apply when the tagged lines are "
				       "unchanged)"
				     : "");
		r = 1;
		goto done;
	}

	/* spans */
	size_t cap = n + 16;
	sv = calloc(cap, sizeof(*sv));
	if (!sv)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		struct edit *e = &ev[i];
		char where[32] = "";

		if (!single)
			snprintf(where, sizeof(where), "edits[%zu]: ", i);
		if (e->kind == EDIT_REPLACE) {
			size_t first_lines[10], nfirst = 0;

			e->count = 0;
			for (const char *p = content; (size_t)(p - content) + e->old_len <= len;) {
				const char *m =
					memmem(p, len - (size_t)(p - content), e->old, e->old_len);
				if (!m)
					break;
				if (nfirst < 10)
					first_lines[nfirst++] = line_of(&l, (size_t)(m - content));
				e->count++;
				if (e->all || e->count == 1) {
					if (nspans == SPANS_MAX) {
						ts_tool_fail(res, "too_large",
							     "edit_file `%s`: %smore than %d "
							     "replacements in one call; use bash "
							     "(sed) for a mass replacement",
							     path, where, SPANS_MAX);
						r = 1;
						goto done;
					}
					if (nspans == cap) {
						struct span *g =
							reallocarray(sv, cap * 2, sizeof(*sv));
						if (!g)
							goto oom;
						sv = g;
						cap *= 2;
					}
					sv[nspans++] = (struct span){
						.from = (size_t)(m - content),
						.to = (size_t)(m - content) + e->old_len,
						.text = e->new,
						.len = e->new_len,
						.edit = i,
					};
				}
				p = m + e->old_len;
			}
			if (e->count == 0) {
				ts_tool_fail(
					res, "not_found",
					"edit_file `%s`: %sold_string was not found in the file; "
					"it must match exactly, whitespace and indentation "
					"included: read_file `%s` and copy the text%s",
					path, where, path,
					version >= 2 ? " (without the `N:tag|` prefixes)" : "");
				r = 1;
				goto done;
			}
			if (e->count > 1 && !e->all) {
				char at[128] = "";
				size_t o = 0;
				for (size_t k = 0; k < nfirst && o < sizeof(at); k++)
					o += (size_t)snprintf(at + o, sizeof(at) - o, "%s%zu",
							      k ? ", " : "", first_lines[k]);
				ts_tool_fail(
					res, "ambiguous",
					"edit_file `%s`: %sold_string occurs %zu times (at lines "
					"%s%s); include more of the surrounding text to make it "
					"unique, or set replace_all to replace every one",
					path, where, e->count, at,
					e->count > nfirst ? ", ..." : "");
				r = 1;
				goto done;
			}
			continue;
		}
		if (nspans == cap) {
			struct span *g = reallocarray(sv, cap * 2, sizeof(*sv));
			if (!g)
				goto oom;
			sv = g;
			cap *= 2;
		}
		struct span *s = &sv[nspans++];
		*s = (struct span){ .text = e->new, .len = e->new_len, .edit = i };
		s->add_nl = e->new_len > 0 && e->new[e->new_len - 1] != '\n';
		if (e->kind == EDIT_RANGE) {
			s->from = l.starts[e->start - 1];
			s->to = l.starts[e->end];
		} else {
			s->from = s->to = l.starts[e->start];
		}
	}
	qsort(sv, nspans, sizeof(*sv), span_cmp);
	for (size_t k = 1; k < nspans; k++) {
		struct span *a = &sv[k - 1], *b = &sv[k];

		if (b->from < a->to) {
			char ra[48], rb[48];
			ts_tool_fail(
				res, "overlap",
				"edit_file `%s`: edits[%zu] (%s) and edits[%zu] (%s) overlap; "
				"nothing was changed: make them one edit, or edit in two calls",
				path, a->edit < b->edit ? a->edit : b->edit,
				kind_ref(&ev[a->edit < b->edit ? a->edit : b->edit], ra,
					 sizeof(ra)),
				a->edit < b->edit ? b->edit : a->edit,
				kind_ref(&ev[a->edit < b->edit ? b->edit : a->edit], rb,
					 sizeof(rb)));
			r = 1;
			goto done;
		}
	}

	/* the new content */
	size_t nlen = wlen;
	for (size_t k = 0; k < nspans; k++) {
		nlen -= sv[k].to - sv[k].from;
		nlen += sv[k].len + sv[k].add_nl;
		if (nlen > TS_TOOL_FILE_MAX + 1) {
			ts_tool_fail(res, "too_large",
				     "edit_file `%s`: the edited file would be larger than %u MiB",
				     path, TS_TOOL_FILE_MAX >> 20);
			r = 1;
			goto done;
		}
	}
	nc = malloc(nlen + 1);
	if (!nc)
		goto oom;
	{
		size_t at = 0, o = 0;
		for (size_t k = 0; k < nspans; k++) {
			memcpy(nc + o, w + at, sv[k].from - at);
			o += sv[k].from - at;
			sv[k].nfrom = o;
			memcpy(nc + o, sv[k].text, sv[k].len);
			o += sv[k].len;
			if (sv[k].add_nl)
				nc[o++] = '\n';
			sv[k].nto = o;
			at = sv[k].to;
		}
		memcpy(nc + o, w + at, wlen - at);
		o += wlen - at;
		if (virt_nl && o > 0 && nc[o - 1] == '\n')
			o--;
		nc[o] = '\0';
		nlen = o;
	}
	if (nlen > TS_TOOL_FILE_MAX) {
		ts_tool_fail(res, "too_large",
			     "edit_file `%s`: the edited file would be larger than %u MiB", path,
			     TS_TOOL_FILE_MAX >> 20);
		r = 1;
		goto done;
	}

	/* the result: what changed, and (version 2) the changed lines with their new tags */
	char hash[33];
	size_t replaced = 0, nlines;
	ts_content_hash(nc, nlen, hash);
	for (size_t i = 0; i < n; i++)
		replaced += ev[i].kind == EDIT_REPLACE ? (ev[i].all ? ev[i].count : 1) : 0;
	{
		/* lines as read_file counts them: the new content's own, without the
		 * work buffer's added newline */
		bool vn = nlen > 0 && nc[nlen - 1] != '\n';
		_cleanup_free_ char *nw = malloc(nlen + 2);
		if (!nw)
			goto oom;
		memcpy(nw, nc, nlen);
		if (vn)
			nw[nlen] = '\n';
		nw[nlen + vn] = '\0';
		if (lines_index(nw, nlen + vn, &nl) < 0)
			goto oom;
		nlines = nl.n;
		f = open_memstream(&text, &text_len);
		if (!f)
			goto oom;
		if (single)
			fprintf(f, "edited `%s`: replaced %zu occurrence%s", path, replaced,
				replaced == 1 ? "" : "s");
		else
			fprintf(f, "edited `%s`: %zu edit%s applied", path, n, n == 1 ? "" : "s");
		fprintf(f, "; it has %zu line%s now\n", nlines, nlines == 1 ? "" : "s");
		if (version >= 2 && stale)
			fprintf(f,
				"note: `%s` had changed since this run last read or wrote it "
				"(bash or another program changed it); the tagged lines still "
				"matched, so the edits applied to its current content\n",
				path);
		if (version >= 2 && nlines > 0) {
			json_t *changed = json_array();
			_cleanup_free_ bool *sh = calloc(nlines + 2, sizeof(*sh));
			size_t shown = 0;

			if (!sh || !changed) {
				json_decref(changed);
				goto oom;
			}
			for (size_t k = 0; k < nspans && (shown < SHOW_LINES_MAX || k < 100); k++) {
				size_t a = line_of(&nl, sv[k].nfrom),
				       b = sv[k].nto > sv[k].nfrom ? line_of(&nl, sv[k].nto - 1)
								   : a;
				if (a > nlines)
					a = nlines;
				if (b > nlines)
					b = nlines;
				if (k < 100)
					json_array_append_new(changed,
							      json_pack("{s:I, s:I}", "start",
									(json_int_t)a, "end",
									(json_int_t)b));
				if (shown >= SHOW_LINES_MAX)
					continue;
				size_t lo = a > SHOW_CONTEXT ? a - SHOW_CONTEXT : 1,
				       hi = b + SHOW_CONTEXT;
				if (hi - lo + 1 > SHOW_REGION_MAX) {
					mark(sh, nlines, lo, lo + SHOW_REGION_MAX / 2 - 1);
					mark(sh, nlines, hi - SHOW_REGION_MAX / 2 + 1, hi);
				} else {
					mark(sh, nlines, lo, hi);
				}
				shown += hi - lo + 1 < SHOW_REGION_MAX ? hi - lo + 1
								       : SHOW_REGION_MAX;
			}
			fputs("the changed lines, with their new tags:\n", f);
			print_marked(f, nw, &nl, sh);
			if (shown >= SHOW_LINES_MAX)
				fprintf(f, "[more changes not shown; read_file `%s` to see them]\n",
					path);
			json_t *data = json_pack("{s:s, s:I, s:I, s:I, s:I, s:s, s:b, s:o}", "path",
						 path, "edits", (json_int_t)n, "replaced",
						 (json_int_t)replaced, "lines", (json_int_t)nlines,
						 "bytes", (json_int_t)nlen, "hash", hash, "stale",
						 stale, "changed", changed);
			if (fclose(f) != 0 || !data) {
				f = NULL;
				json_decref(data);
				goto oom;
			}
			f = NULL;
			ts_tool_ok_text(res, data, TAKE_PTR(text));
		} else {
			json_t *data = json_pack("{s:s, s:I, s:I, s:I, s:I, s:s, s:b}", "path",
						 path, "edits", (json_int_t)n, "replaced",
						 (json_int_t)replaced, "lines", (json_int_t)nlines,
						 "bytes", (json_int_t)nlen, "hash", hash, "stale",
						 stale);
			if (fclose(f) != 0 || !data) {
				f = NULL;
				json_decref(data);
				goto oom;
			}
			f = NULL;
			ts_tool_ok_text(res, data, TAKE_PTR(text));
		}
	}
	*out = TAKE_PTR(nc);
	*out_len = nlen;
	r = 0;
done:
	lines_free(&l);
	lines_free(&nl);
	return r;
oom:
	lines_free(&l);
	lines_free(&nl);
	return -ENOMEM;
}

/* --- the tool ------------------------------------------------------------------------ */

static int edit_file(struct ts_toolbox *t, json_t *args, struct ts_tool_result *res,
		     struct ts_error *err)
{
	struct ts_error scratch = { 0 };
	const char *path;
	_cleanup_free_ char *abs = NULL, *rel = NULL, *out = NULL;
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len, out_len;
	char hash[33], seen[64];
	int r;

	if (!err)
		err = &scratch;
	if (ts_tool_arg_str(args, "path", true, &path, res))
		return 0;
	r = ts_ws_resolve(t, path, TS_WS_WRITE, &abs, &rel, res, err);
	if (r != 0)
		return r < 0 ? r : 0;
	r = ts_file_read(t->sb, abs, t->user, &buf, &len, TS_TOOL_FILE_MAX, err);
	if (r < 0) {
		bool missing = err->code == ENOENT;

		r = ts_ws_fail(t, r, "edit_file", rel, res, err);
		const char *code = json_string_value(json_object_get(res->data, "error"));
		if (r == 0 && missing && code && strcmp(code, "not_found") == 0)
			ts_tool_fail(res, "not_found",
				     "edit_file `%s`: the file does not exist; create it with "
				     "write_file",
				     rel);
		return r;
	}
	if (ts_text_binary(buf, len))
		return ts_tool_fail(res, "binary",
				    "`%s` is a binary file (NUL bytes, or not UTF-8 text); "
				    "edit_file edits text only: use bash for it",
				    rel);
	ts_content_hash(buf, len, hash);
	r = ts_toolbox_seen_get(t, rel, seen, sizeof(seen), err);
	if (r < 0 && r != -ENOENT)
		return r;
	bool stale = t->version >= 2 && r == 0 && strcmp(seen, hash) != 0;
	ts_err_clear(err);
	r = ts_edit_apply(t->version, rel, (const char *)buf, len, args, stale, &out, &out_len,
			  res);
	if (r < 0)
		return ts_err(err, r, "out of memory");
	if (r > 0)
		return 0;
	/* one write: every edit of the call, or (the write failing) none */
	r = ts_file_write(t->sb, abs, t->user, out, out_len, -1, err);
	if (r < 0)
		return ts_ws_fail(t, r, "edit_file", rel, res, err);
	ts_content_hash(out, out_len, hash);
	return ts_toolbox_seen_set(t, rel, hash, err);
}

const struct ts_tool_def ts_tool_edit_file = {
	.name = "edit_file",
	.since = 1,
	.writes = true,
	.description =
		"Change part of a text file of the workspace. Give old_string and new_string: "
		"old_string must occur exactly once in the file (whitespace included) unless "
		"replace_all is true; it is refused when it occurs 0 or several times (the error "
		"says how often). Version 2 also takes `edits`, a list applied together: each is "
		"{old_string, new_string, replace_all}, or {start, end, new_string} replacing "
		"the lines start..end (both included; end defaults to start) named by the "
		"`N:tag` references read_file shows, or {after, new_string} inserting lines "
		"after the line named (`after: \"0:\"` inserts at the top). new_string of a line "
		"edit is whole lines (a final newline is added when missing; \"\" deletes the "
		"range). All edits are checked against the file first and address it as it is "
		"before the call (line numbers do not shift between the edits of one call); "
		"when a tag does not match its line the call is refused, nothing is changed, and "
		"the error shows the current lines with their tags. Overlapping edits are "
		"refused. When the file changed since this run last read or wrote it (e.g. by "
		"bash), old_string edits are refused as stale (read_file again); tag edits apply "
		"if their lines are unchanged. The result shows the changed lines with their new "
		"tags, for further edits. The file keeps its permissions and its last newline "
		"(or its lack). Protected files and paths leading out of the workspace are "
		"refused.",
	.schema =
		"{\"type\":\"object\",\"properties\":{"
		"\"path\":{\"type\":\"string\",\"description\":\"The file, relative to the "
		"workspace\"},"
		"\"old_string\":{\"type\":\"string\",\"description\":\"The exact text to replace "
		"(without read_file's `N:tag|` prefixes)\"},"
		"\"new_string\":{\"type\":\"string\",\"description\":\"The text that replaces "
		"it\"},"
		"\"replace_all\":{\"type\":\"boolean\",\"description\":\"Replace every occurrence "
		"of old_string (default false: it must occur exactly once)\"},"
		"\"edits\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":256,\"description\":"
		"\"Tool-set version 2: several edits applied atomically, each addressing the file "
		"as it is before the call\",\"items\":{\"type\":\"object\",\"properties\":{"
		"\"old_string\":{\"type\":\"string\",\"description\":\"Replace this exact text "
		"(once, unless replace_all)\"},"
		"\"replace_all\":{\"type\":\"boolean\"},"
		"\"start\":{\"type\":\"string\",\"description\":\"`N:tag` of the first line to "
		"replace\"},"
		"\"end\":{\"type\":\"string\",\"description\":\"`N:tag` of the last line to "
		"replace (default: start)\"},"
		"\"after\":{\"type\":\"string\",\"description\":\"`N:tag` of the line to insert "
		"after; `0:` inserts at the top\"},"
		"\"new_string\":{\"type\":\"string\",\"description\":\"The replacement: text for "
		"old_string, whole lines for start/after (\\\"\\\" deletes the lines)\"}},"
		"\"required\":[\"new_string\"],\"additionalProperties\":false}}},"
		"\"required\":[\"path\"],\"additionalProperties\":false}",
	.fn = edit_file,
};
