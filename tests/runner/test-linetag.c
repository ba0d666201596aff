/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Line tags, content hashes, the text checks, protected patterns, the lexical part of
 * workspace paths, and edit_file's edits applied to content without a sandbox
 * (ts_edit_apply): tags, staleness, atomicity, overlaps, the file's ending.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "tools-internal.h"

static char *tag_of(const char *line, char out[TS_TOOL_TAG_LEN + 1])
{
	ts_linetag(line, strlen(line), out);
	return out;
}

/* "N:tag" of line n of text (1-based). */
static const char *ref(const char *text, size_t n, char *buf, size_t len)
{
	const char *p = text;
	for (size_t k = 1; k < n && p; k++) {
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	if (!p)
		return "?";
	size_t l = strcspn(p, "\n");
	char tag[TS_TOOL_TAG_LEN + 1];
	ts_linetag(p, l, tag);
	snprintf(buf, len, "%zu:%s", n, tag);
	return buf;
}

struct out {
	int r;
	char *content;
	size_t len;
	struct ts_tool_result res;
};

static void out_clear(struct out *o)
{
	free(o->content);
	ts_tool_result_clear(&o->res);
	memset(o, 0, sizeof(*o));
}

static const char *code_of(const struct out *o)
{
	const char *c = json_string_value(json_object_get(o->res.data, "error"));
	return c ? c : "";
}

static struct out apply(unsigned version, const char *content, bool stale, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static struct out apply(unsigned version, const char *content, bool stale, const char *fmt, ...)
{
	struct out o = { 0 };
	char *js = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&js, fmt, ap) < 0)
		abort();
	va_end(ap);
	json_error_t jerr;
	json_t *args = json_loads(js, 0, &jerr);
	if (!args) {
		diag("bad test JSON %s: %s", js, jerr.text);
		abort();
	}
	o.r = ts_edit_apply(version, "f.txt", content, strlen(content), args, stale, &o.content,
			    &o.len, &o.res);
	json_decref(args);
	free(js);
	return o;
}

static void test_tags(void)
{
	char a[4], b[4];

	tag_of("hello", a);
	ok(strlen(a) == 3 && strspn(a, "0123456789abcdef") == 3, "a tag is 3 lowercase hex (%s)",
	   a);
	ok(strcmp(tag_of("hello", b), a) == 0, "a tag is deterministic");
	ok(strcmp(tag_of("hellp", b), a) != 0, "one changed byte changes the tag");

	/* spread: 1000 different lines use most of the 4096 tags, and a one-bit change of
	 * a line changes its tag almost always */
	static bool seen[4096];
	size_t distinct = 0, changed = 0;
	for (int i = 0; i < 1000; i++) {
		char line[64], t1[4], t2[4];
		snprintf(line, sizeof(line), "    int x%d = %d;", i, i * 7);
		tag_of(line, t1);
		unsigned v = (unsigned)strtoul(t1, NULL, 16);
		distinct += !seen[v];
		seen[v] = true;
		line[4] ^= 1;
		tag_of(line, t2);
		changed += strcmp(t1, t2) != 0;
	}
	ok(distinct > 800, "1000 lines get %zu distinct tags (> 800)", distinct);
	ok(changed >= 990, "a one-bit change changes the tag in %zu of 1000 lines", changed);

	char h[33];
	ts_content_hash("abc", 3, h);
	ok(strcmp(h, "ba7816bf8f01cfea414140de5dae2223") == 0,
	   "content hash: sha256 cut to 128 bits "
	   "(%s)",
	   h);
	ts_content_hash("", 0, h);
	ok(strcmp(h, "e3b0c44298fc1c149afbf4c8996fb924") == 0, "content hash of nothing");

	size_t n = 99;
	char t[4];
	ok(ts_linetag_parse("12:a3f", &n, t) == 0 && n == 12 && !strcmp(t, "a3f"), "parse 12:a3f");
	ok(ts_linetag_parse("7:A3F|int x;", &n, t) == 0 && n == 7 && !strcmp(t, "a3f"),
	   "parse a reference copied with its text, upper case");
	ok(ts_linetag_parse("0:", &n, t) == 0 && n == 0 && !t[0], "parse 0: (the top)");
	ok(ts_linetag_parse("12:a3", &n, t) < 0, "a short tag is refused");
	ok(ts_linetag_parse("12:a3fe", &n, t) < 0, "a long tag is refused");
	ok(ts_linetag_parse("12:a3g", &n, t) < 0, "a tag that is not hex is refused");
	ok(ts_linetag_parse("12", &n, t) < 0 && ts_linetag_parse(":abc", &n, t) < 0 &&
		   ts_linetag_parse("-1:abc", &n, t) < 0 && ts_linetag_parse("", &n, t) < 0,
	   "references without a number or a colon are refused");
	ok(ts_linetag_parse("99999999999999999999999:abc", &n, t) == -ERANGE,
	   "a line number that overflows is refused");
}

static void test_text(void)
{
	ok(!ts_text_binary("hello\n", 6), "text is not binary");
	const char *u8 = "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\n";
	ok(!ts_text_binary(u8, strlen(u8)), "UTF-8 is text");
	ok(ts_text_binary("a\0b", 3), "a NUL byte is binary");
	ok(ts_text_binary("caf\xe9\n", 5), "Latin-1 is binary");
	ok(ts_text_binary("\xc0\xaf", 2), "an overlong form is binary");
	ok(ts_text_binary("\xed\xa0\x80", 3), "a surrogate is binary");

	static char big[TS_TOOL_SNIFF + 64];
	memset(big, 'a', sizeof(big));
	memcpy(big + TS_TOOL_SNIFF - 1, "\xe2\x82\xac", 3); /* across the window's end */
	ok(!ts_text_binary(big, sizeof(big)), "a character across the sniffed part's end is text");
	big[TS_TOOL_SNIFF + 10] = (char)0xff;
	ok(!ts_text_binary(big, sizeof(big)), "a bad byte past the sniffed part is not binary");
	big[TS_TOOL_SNIFF + 20] = '\0';
	ok(ts_text_binary(big, sizeof(big)), "a NUL byte anywhere is binary");

	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	size_t bad = ts_text_print(f,
				   "ab\xff"
				   "cd",
				   5, 100);
	fclose(f);
	ok(bad == 1 && strcmp(s, "ab\xef\xbf\xbd"
				 "cd") == 0,
	   "a bad byte is shown as U+FFFD");
	free(s);
	f = open_memstream(&s, &len);
	ts_text_print(f, "\xe2\x82\xac\xe2\x82\xac", 6, 4);
	fclose(f);
	ok(strncmp(s, "\xe2\x82\xac [... line cut: 3 of 6 bytes shown]", 100) == 0,
	   "a long line is cut at a character, with a marker (%s)", s);
	free(s);
	f = open_memstream(&s, &len);
	ts_linetag_print(f, 12, "int x;", 6, 100);
	fclose(f);
	char t[4], want[64];
	snprintf(want, sizeof(want), "12:%s|int x;\n", tag_of("int x;", t));
	ok(strcmp(s, want) == 0, "a tagged line is N:tag|text");
	free(s);
}

static void test_paths(void)
{
	char *pats[] = { ".env", ".env.*", "*.pem", "credentials", "id_rsa" };
	struct ts_toolbox_opts o = { .version = 2,
				     .protected_patterns = pats,
				     .n_protected = sizeof(pats) / sizeof(pats[0]) };
	struct ts_toolbox *t = NULL;
	struct ts_error err = { 0 };

	ok(ts_toolbox_new(&o, &t, &err) == 0, "a toolbox without a sandbox");
	ok(ts_ws_protected(t, ".env") && ts_ws_protected(t, "a/b/.env") &&
		   ts_ws_protected(t, "app/.env.local") && ts_ws_protected(t, "k/server.pem") &&
		   ts_ws_protected(t, "k/.hidden.pem"),
	   "protected at any depth, a leading dot included");
	ok(ts_ws_protected(t, "credentials/notes.txt") && ts_ws_protected(t, "x/id_rsa/y"),
	   "a protected directory protects what is below it");
	ok(!ts_ws_protected(t, "src/main.c") && !ts_ws_protected(t, ".envrc") &&
		   !ts_ws_protected(t, "env") && !ts_ws_protected(t, "id_rsa.pub") &&
		   !ts_ws_protected(t, ""),
	   "other paths are not protected");

	/* what is decided before the sandbox is asked (the rest: tests/live/tools-files.py) */
	struct {
		const char *path;
		unsigned flags;
		const char *code; /* NULL: resolved */
		const char *rel;
	} cases[] = {
		{ "", 0, "invalid_argument", NULL },
		{ "", TS_WS_DIR, NULL, "" },
		{ ".", TS_WS_DIR, NULL, "" },
		{ "/home/user", TS_WS_DIR, NULL, "" },
		{ "/home/user/", TS_WS_DIR, NULL, "" },
		{ "/home/user", 0, "is_directory", NULL },
		{ "/etc/passwd", 0, "escape", NULL },
		{ "/home/userx/a", 0, "escape", NULL },
		{ "/home", TS_WS_DIR, "escape", NULL },
		{ "../x", 0, "escape", NULL },
		{ "./../x", 0, "escape", NULL },
		{ "/home/user/../user/x", 0, "escape", NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ts_tool_result res = { 0 };
		char *abs = NULL, *rel = NULL;
		int r = ts_ws_resolve(t, cases[i].path, cases[i].flags, &abs, &rel, &res, &err);
		const char *code = json_string_value(json_object_get(res.data, "error"));

		if (cases[i].code)
			ok(r == 1 && code && !strcmp(code, cases[i].code) && !abs, "path `%s`: %s",
			   cases[i].path, cases[i].code);
		else
			ok(r == 0 && rel && !strcmp(rel, cases[i].rel) && abs &&
				   !strcmp(abs, "/home/user"),
			   "path `%s` is the workspace", cases[i].path);
		free(abs);
		free(rel);
		ts_tool_result_clear(&res);
	}
	ts_toolbox_free(t);
}

static void test_replace(void)
{
	struct out o;

	o = apply(1, "a\nb\nc\n", false, "{\"old_string\":\"b\",\"new_string\":\"B\"}");
	ok(o.r == 0 && !o.res.is_error && !strcmp(o.content, "a\nB\nc\n"),
	   "v1: a unique old_string is replaced");
	ok(strstr(o.res.text, "replaced 1 occurrence") && !strstr(o.res.text, "|"),
	   "v1: the result says so, without tags");
	out_clear(&o);

	o = apply(1, "x = 1\nx = 1\n", false, "{\"old_string\":\"x = 1\",\"new_string\":\"y\"}");
	ok(o.r == 1 && !strcmp(code_of(&o), "ambiguous") && strstr(o.res.text, "occurs 2 times") &&
		   strstr(o.res.text, "lines 1, 2") && !o.content,
	   "an old_string found twice: ambiguous, how often and where");
	out_clear(&o);

	o = apply(1, "x = 1\nx = 1\n", false,
		  "{\"old_string\":\"x = 1\",\"new_string\":\"y\",\"replace_all\":true}");
	ok(o.r == 0 && !strcmp(o.content, "y\ny\n") && strstr(o.res.text, "replaced 2"),
	   "replace_all replaces every occurrence");
	out_clear(&o);

	o = apply(1, "abc\n", false, "{\"old_string\":\"zzz\",\"new_string\":\"y\"}");
	ok(o.r == 1 && !strcmp(code_of(&o), "not_found") && strstr(o.res.text, "not found"),
	   "an old_string not there: not_found");
	out_clear(&o);

	o = apply(1, "abc\n", false, "{\"old_string\":\"\",\"new_string\":\"y\"}");
	ok(o.r == 1 && !strcmp(code_of(&o), "invalid_argument"), "an empty old_string is refused");
	out_clear(&o);

	o = apply(1, "abc\n", false, "{\"old_string\":\"abc\",\"new_string\":\"abc\"}");
	ok(o.r == 1 && !strcmp(code_of(&o), "invalid_argument"), "a change to nothing is refused");
	out_clear(&o);

	o = apply(1, "abc\n", false, "{\"new_string\":\"y\"}");
	ok(o.r == 1 && strstr(o.res.text, "old_string"), "old_string is required");
	out_clear(&o);

	o = apply(1, "abc\n", false, "{\"old_string\":\"abc\"}");
	ok(o.r == 1 && strstr(o.res.text, "new_string` is required"), "new_string is required");
	out_clear(&o);

	o = apply(1, "abc\n", false,
		  "{\"old_string\":\"abc\",\"new_string\":\"y\","
		  "\"replace_all\":\"yes\"}");
	ok(o.r == 1 && strstr(o.res.text, "true or false"), "replace_all must be a boolean");
	out_clear(&o);

	o = apply(1, "abc\n", false, "{\"edits\":[{\"old_string\":\"abc\",\"new_string\":\"y\"}]}");
	ok(o.r == 1 && strstr(o.res.text, "version 2"), "v1: edits are refused, naming version 2");
	out_clear(&o);

	o = apply(1, "abc\n", true, "{\"old_string\":\"abc\",\"new_string\":\"y\"}");
	ok(o.r == 0 && !strcmp(o.content, "y\n"), "v1: no staleness check");
	out_clear(&o);

	o = apply(2, "abc\n", true, "{\"old_string\":\"abc\",\"new_string\":\"y\"}");
	ok(o.r == 1 && !strcmp(code_of(&o), "stale") && strstr(o.res.text, "read_file") &&
		   !o.content,
	   "v2: an old_string edit of a file changed since read: stale, read again");
	out_clear(&o);

	o = apply(2, "a\nb\n", false, "{\"old_string\":\"b\",\"new_string\":\"B\\nC\"}");
	char r1[32], r2[32];
	ok(o.r == 0 && !strcmp(o.content, "a\nB\nC\n") &&
		   strstr(o.res.text, ref(o.content, 2, r1, sizeof(r1))) &&
		   strstr(o.res.text, ref(o.content, 3, r2, sizeof(r2))),
	   "v2: the result shows the changed lines with their new tags");
	ok(json_integer_value(json_object_get(o.res.data, "lines")) == 3, "and the line count");
	out_clear(&o);
}

static void test_lines(void)
{
	const char *c = "one\ntwo\nthree\nfour\nfive\n";
	char s1[32], s2[32], s3[32];
	struct out o;

	o = apply(2, c, false,
		  "{\"edits\":[{\"start\":\"%s\",\"end\":\"%s\",\"new_string\":\"X\"}]}",
		  ref(c, 2, s1, sizeof(s1)), ref(c, 3, s2, sizeof(s2)));
	ok(o.r == 0 && !strcmp(o.content, "one\nX\nfour\nfive\n"),
	   "a tagged range is replaced (a newline added)");
	out_clear(&o);

	o = apply(2, c, false, "{\"edits\":[{\"start\":\"%s\",\"new_string\":\"\"}]}",
		  ref(c, 5, s1, sizeof(s1)));
	ok(o.r == 0 && !strcmp(o.content, "one\ntwo\nthree\nfour\n"),
	   "\"\" deletes a line; end defaults to start");
	out_clear(&o);

	o = apply(2, c, false, "{\"edits\":[{\"after\":\"0:\",\"new_string\":\"zero\\n\"}]}");
	ok(o.r == 0 && !strcmp(o.content, "zero\none\ntwo\nthree\nfour\nfive\n"),
	   "after 0: inserts at the top");
	out_clear(&o);

	o = apply(2, c, false, "{\"edits\":[{\"after\":\"%s\",\"new_string\":\"six\"}]}",
		  ref(c, 5, s1, sizeof(s1)));
	ok(o.r == 0 && !strcmp(o.content, "one\ntwo\nthree\nfour\nfive\nsix\n"),
	   "an insertion after the last line");
	out_clear(&o);

	const char *nonl = "a\nb";
	o = apply(2, nonl, false, "{\"edits\":[{\"after\":\"%s\",\"new_string\":\"c\"}]}",
		  ref(nonl, 2, s1, sizeof(s1)));
	ok(o.r == 0 && !strcmp(o.content, "a\nb\nc"),
	   "a file without a final newline keeps that ending (insertion)");
	out_clear(&o);
	o = apply(2, nonl, false, "{\"edits\":[{\"start\":\"%s\",\"new_string\":\"B\\n\"}]}",
		  ref(nonl, 2, s1, sizeof(s1)));
	ok(o.r == 0 && !strcmp(o.content, "a\nB"), "and keeps it when its last line is replaced");
	out_clear(&o);
	o = apply(2, nonl, false, "{\"old_string\":\"b\",\"new_string\":\"b\\n\"}");
	ok(o.r == 0 && !strcmp(o.content, "a\nb\n"), "an old_string edit may add the newline");
	out_clear(&o);
	o = apply(2, nonl, false, "{\"old_string\":\"b\\n\",\"new_string\":\"x\"}");
	ok(o.r == 1 && !strcmp(code_of(&o), "not_found"),
	   "the newline added for the work is never matched");
	out_clear(&o);

	o = apply(2, "", false, "{\"edits\":[{\"after\":\"0:\",\"new_string\":\"first\"}]}");
	ok(o.r == 0 && !strcmp(o.content, "first\n"), "an insertion into an empty file");
	out_clear(&o);

	/* several edits address the file as it was: numbers do not shift */
	o = apply(2, c, false,
		  "{\"edits\":[{\"start\":\"%s\",\"new_string\":\"TWO\\nTWO-B\"},"
		  "{\"start\":\"%s\",\"new_string\":\"FOUR\"},"
		  "{\"after\":\"%s\",\"new_string\":\"one-b\"},"
		  "{\"old_string\":\"five\",\"new_string\":\"FIVE\"}]}",
		  ref(c, 2, s1, sizeof(s1)), ref(c, 4, s2, sizeof(s2)), ref(c, 1, s3, sizeof(s3)));
	ok(o.r == 0 && !strcmp(o.content, "one\none-b\nTWO\nTWO-B\nthree\nFOUR\nFIVE\n"),
	   "four edits of one call, by the original numbers");
	ok(json_integer_value(json_object_get(o.res.data, "edits")) == 4 &&
		   json_array_size(json_object_get(o.res.data, "changed")) == 4,
	   "the result lists the four changes");
	out_clear(&o);

	/* a wrong tag: refused, with the current lines */
	o = apply(2, c, false,
		  "{\"edits\":[{\"start\":\"%s\",\"new_string\":\"X\"},"
		  "{\"start\":\"3:000\",\"new_string\":\"Y\"}]}",
		  ref(c, 1, s1, sizeof(s1)));
	if (!strcmp(ref(c, 3, s2, sizeof(s2)), "3:000"))
		diag("line 3's tag is 000 by chance: the next case cannot fail");
	ok(o.r == 1 && !strcmp(code_of(&o), "stale") && !o.content,
	   "one mismatched tag refuses the whole call (atomic)");
	ok(strstr(o.res.text, "edits[1]") && strstr(o.res.text, ref(c, 3, s2, sizeof(s2))) &&
		   strstr(o.res.text, "|three"),
	   "the error names the edit and shows the current line with its tag");
	out_clear(&o);

	o = apply(2, c, false, "{\"edits\":[{\"start\":\"9:abc\",\"new_string\":\"X\"}]}");
	ok(o.r == 1 && !strcmp(code_of(&o), "stale") && strstr(o.res.text, "past the end") &&
		   strstr(o.res.text, "|five"),
	   "a line past the end: refused, the last lines shown");
	out_clear(&o);

	o = apply(2, c, false,
		  "{\"edits\":[{\"start\":\"%s\",\"end\":\"3:fff\",\"new_string\":\"X\"}]}",
		  ref(c, 2, s1, sizeof(s1)));
	ok(o.r == 1 &&
		   (!strcmp(ref(c, 3, s2, sizeof(s2)), "3:fff") || !strcmp(code_of(&o), "stale")),
	   "the end's tag is checked too");
	out_clear(&o);

	o = apply(2, c, false,
		  "{\"edits\":[{\"start\":\"%s\",\"end\":\"%s\",\"new_string\":\"X\"},"
		  "{\"start\":\"%s\",\"new_string\":\"Y\"}]}",
		  ref(c, 2, s1, sizeof(s1)), ref(c, 4, s2, sizeof(s2)), ref(c, 3, s3, sizeof(s3)));
	ok(o.r == 1 && !strcmp(code_of(&o), "overlap") && strstr(o.res.text, "edits[0]") &&
		   strstr(o.res.text, "edits[1]") && !o.content,
	   "overlapping edits are refused");
	out_clear(&o);

	o = apply(2, c, false,
		  "{\"edits\":[{\"start\":\"%s\",\"new_string\":\"X\"},"
		  "{\"old_string\":\"wo\",\"new_string\":\"Y\"}]}",
		  ref(c, 2, s1, sizeof(s1)));
	ok(o.r == 1 && !strcmp(code_of(&o), "overlap"),
	   "a line edit and an old_string edit overlap");
	out_clear(&o);

	o = apply(2, c, false,
		  "{\"edits\":[{\"start\":\"%s\",\"new_string\":\"X\"},"
		  "{\"after\":\"%s\",\"new_string\":\"Y\"}]}",
		  ref(c, 2, s1, sizeof(s1)), ref(c, 2, s2, sizeof(s2)));
	ok(o.r == 0 && !strcmp(o.content, "one\nX\nY\nthree\nfour\nfive\n"),
	   "replacing a line and inserting after it do not overlap");
	out_clear(&o);

	o = apply(2, c, false,
		  "{\"edits\":[{\"start\":\"%s\",\"end\":\"%s\",\"new_string\":\"X\"},"
		  "{\"after\":\"%s\",\"new_string\":\"Y\"}]}",
		  ref(c, 2, s1, sizeof(s1)), ref(c, 3, s2, sizeof(s2)), ref(c, 2, s3, sizeof(s3)));
	ok(o.r == 1 && !strcmp(code_of(&o), "overlap"),
	   "an insertion inside a replaced range is refused");
	out_clear(&o);

	/* staleness and tags */
	o = apply(2, c, true, "{\"edits\":[{\"start\":\"%s\",\"new_string\":\"X\"}]}",
		  ref(c, 2, s1, sizeof(s1)));
	ok(o.r == 0 && !strcmp(o.content, "one\nX\nthree\nfour\nfive\n") &&
		   strstr(o.res.text, "had changed") &&
		   json_is_true(json_object_get(o.res.data, "stale")),
	   "a stale file: tag edits whose lines match apply, with a warning");
	out_clear(&o);
	o = apply(2, c, true,
		  "{\"edits\":[{\"start\":\"%s\",\"new_string\":\"X\"},"
		  "{\"old_string\":\"five\",\"new_string\":\"5\"}]}",
		  ref(c, 2, s1, sizeof(s1)));
	ok(o.r == 1 && !strcmp(code_of(&o), "stale") && !o.content,
	   "a stale file: a call with an old_string edit is refused whole");
	out_clear(&o);

	/* arguments */
	const char *bad[] = {
		"{\"edits\":[]}",
		"{\"edits\":{}}",
		"{\"edits\":[1]}",
		"{\"edits\":[{\"new_string\":\"x\"}]}",
		"{\"edits\":[{\"start\":\"1:abc\"}]}",
		"{\"edits\":[{\"start\":\"1:abc\",\"after\":\"1:abc\",\"new_string\":\"x\"}]}",
		"{\"edits\":[{\"start\":\"abc\",\"new_string\":\"x\"}]}",
		"{\"edits\":[{\"start\":\"0:\",\"new_string\":\"x\"}]}",
		"{\"edits\":[{\"start\":\"3:abc\",\"end\":\"2:abc\",\"new_string\":\"x\"}]}",
		"{\"edits\":[{\"after\":\"1:abc\",\"new_string\":\"\"}]}",
		"{\"edits\":[{\"after\":\"1:abc\",\"end\":\"2:abc\",\"new_string\":\"x\"}]}",
		"{\"edits\":[{\"start\":\"1:abc\",\"replace_all\":true,\"new_string\":\"x\"}]}",
		"{\"edits\":[{\"start\":\"1:abc\",\"line\":3,\"new_string\":\"x\"}]}",
		"{\"edits\":[{\"start\":1,\"new_string\":\"x\"}]}",
		"{\"old_string\":\"a\",\"new_string\":\"b\",\"edits\":[{\"old_string\":\"a\","
		"\"new_string\":\"b\"}]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o = apply(2, c, false, "%s", bad[i]);
		if (!ok(o.r == 1 && !strcmp(code_of(&o), "invalid_argument") && !o.content,
			"invalid: %s", bad[i]))
			diag("got %d: %s", o.r, o.res.text ? o.res.text : "");
		out_clear(&o);
	}

	/* a 10k-line file: an edit near the end, the result within bounds */
	size_t big_len = 0;
	char *big = NULL;
	FILE *f = open_memstream(&big, &big_len);
	for (int i = 1; i <= 10000; i++)
		fprintf(f, "line %d\n", i);
	fclose(f);
	o = apply(2, big, false, "{\"edits\":[{\"start\":\"%s\",\"new_string\":\"changed\"}]}",
		  ref(big, 9999, s1, sizeof(s1)));
	ok(o.r == 0 && strstr(o.content, "line 9998\nchanged\nline 10000\n") &&
		   o.len == big_len - strlen("line 9999") + strlen("changed"),
	   "a 10k-line file: line 9999 replaced");
	ok(strstr(o.res.text, "9997:") && strstr(o.res.text, "10000:") &&
		   !strstr(o.res.text, "9996:"),
	   "two lines of context around the change");
	out_clear(&o);
	o = apply(2, big, false,
		  "{\"old_string\":\"line\",\"new_string\":\"L\",\"replace_all\":true}");
	ok(o.r == 0 && json_integer_value(json_object_get(o.res.data, "replaced")) == 10000 &&
		   strlen(o.res.text) < TS_TOOL_TEXT_MAX,
	   "replace_all of 10000 occurrences, the result bounded (%zu bytes)",
	   o.res.text ? strlen(o.res.text) : 0);
	out_clear(&o);
	free(big);
}

int main(void)
{
	plan(0);
	test_tags();
	test_text();
	test_paths();
	test_replace();
	test_lines();
	return done();
}
