/* SPDX-License-Identifier: Apache-2.0 */
/* find's and grep's globs and .gitignore rules (src/runner/gitignore.c), and the text
 * helpers of tool-bash.c, without a sandbox. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "tools-internal.h"

static int glob(const char *pat, const char *s)
{
	struct ts_glob *g = NULL;
	int r = ts_glob_compile(pat, strlen(pat), &g);

	if (r < 0)
		return r;
	r = ts_glob_match(g, s, strlen(s));
	ts_glob_free(g);
	return r;
}

static const struct {
	const char *pat, *s;
	int want;
} globs[] = {
	{ "*.c", "a.c", 1 },
	{ "*.c", "a/b.c", 0 },
	{ "*.c", ".c", 1 },
	{ "src/**/*.c", "src/a.c", 1 },
	{ "src/**/*.c", "src/x/y/a.c", 1 },
	{ "src/**/*.c", "srcx/a.c", 0 },
	{ "src/**/*.c", "src/a.h", 0 },
	{ "**/test_*", "test_a", 1 },
	{ "**/test_*", "a/b/test_x", 1 },
	{ "**/test_*", "a/btest_x", 0 },
	{ "**/test_*", "a/test_x/y", 0 },
	{ "a/**", "a/b", 1 },
	{ "a/**", "a/b/c", 1 },
	{ "a/**", "a", 0 },
	{ "**", "x/y/z", 1 },
	{ "a/**/**/b", "a/b", 1 },
	{ "a/**/b", "a/x/y/b", 1 },
	{ "a/**/b", "a/xb", 0 },
	{ "[abc]?.txt", "b1.txt", 1 },
	{ "[abc]?.txt", "d1.txt", 0 },
	{ "[!a]*", "b", 1 },
	{ "[!a]*", "a", 0 },
	{ "[a-c]x", "bx", 1 },
	{ "[a-c]x", "dx", 0 },
	{ "[]]", "]", 1 },
	{ "a[/]b", "a/b", 0 },
	{ "[x", "[x", 1 },
	{ "\\*", "*", 1 },
	{ "\\*", "x", 0 },
	{ "a**b", "axxb", 1 },
	{ "a**b", "ax/b", 0 },
	{ "?", "/", 0 },
	{ "a?c", "abc", 1 },
	{ "", "", 1 },
	{ "x", "", 0 },
	{ "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b",
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	  0 },
	{ "**/**/**/**/**/**/**/**/x", "a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/y", 0 },
};

static const struct {
	const char *path;
	bool dir;
	size_t skip;
	bool want;
} cases[] = {
	{ "a.log", false, 0, true },
	{ "x/y/a.log", false, 0, true },
	{ "keep.log", false, 0, false },
	{ "x/keep.log", false, 0, false },
	{ "build", true, 0, true },
	{ "build", false, 0, false }, /* `build/`: directories only */
	{ "x/build", true, 0, true },
	{ "build/a.c", false, 0, true },  /* in an ignored directory */
	{ "build/a.c", false, 5, false }, /* ... that was asked for by name */
	{ "build/b/x.log", false, 5, true },
	{ "top.txt", false, 0, true },
	{ "x/top.txt", false, 0, false }, /* `/top.txt` is anchored */
	{ "#hash", false, 0, true },
	{ "# comment", false, 0, false },
	{ "foo", false, 0, true },	  /* trailing spaces go */
	{ "bar", false, 0, true },	  /* CRLF */
	{ "sub/a.log", false, 0, false }, /* sub/.gitignore re-includes it */
	{ "sub/deep/a.log", false, 0, false },
	{ "sub/only-here", false, 0, true },
	{ "only-here", false, 0, false },
	{ "sub/x/only-here", false, 0, false },
	{ "doc/a/b.tmp", false, 0, true },
	{ "doc/b.tmp", false, 0, true },
	{ "x/doc/a/b.tmp", false, 0, false },
	{ "out/keep", false, 0, true }, /* a parent excluded: no re-inclusion */
	{ "out", true, 0, true },
	{ "src/main.c", false, 0, false },
	{ "sub2/z.c", false, 0, false },
	{ "sub2/z.o", false, 0, true }, /* sub2/.gitignore: `*.o` */
	{ "z.o", false, 0, false },
};

int main(void)
{
	plan(0);
	for (size_t i = 0; i < sizeof(globs) / sizeof(globs[0]); i++)
		ok(glob(globs[i].pat, globs[i].s) == globs[i].want, "glob `%s` %s `%s`",
		   globs[i].pat, globs[i].want ? "matches" : "does not match", globs[i].s);
	char big[TS_GLOB_MAX + 2];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ok(glob(big, "a") == -E2BIG, "a glob longer than TS_GLOB_MAX is refused");

	struct ts_gitignore *gi = ts_gitignore_new();
	const char *root = "*.log\nbuild/\n/top.txt\n!keep.log\n# comment\n\\#hash\nfoo  \nbar\r\n"
			   "doc/**/*.tmp\nout/\n!out/keep\n\n";
	const char *sub = "!*.log\n/only-here\n";
	ok(gi && ts_gitignore_add(gi, "", root, strlen(root)) == 0, "the root's .gitignore");
	ok(ts_gitignore_add(gi, "sub", sub, strlen(sub)) == 0, "sub/.gitignore");
	ok(ts_gitignore_add(gi, "sub2", "*.o", 3) == 0, "sub2/.gitignore without a newline");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ok(ts_gitignore_ignored(gi, cases[i].path, cases[i].dir, cases[i].skip) ==
			   cases[i].want,
		   "%s%s is %s (skip %zu)", cases[i].path, cases[i].dir ? "/" : "",
		   cases[i].want ? "ignored" : "not ignored", cases[i].skip);
	ts_gitignore_free(gi);
	ok(!ts_gitignore_ignored(NULL, "a.log", false, 0), "no rules: nothing is ignored");

	size_t bad = 0;
	char *s = ts_tool_utf8("a\xff"
			       "b\0c",
			       5, &bad);
	ok(s &&
		   strcmp(s, "a\xef\xbf\xbd"
			     "b\xef\xbf\xbd"
			     "c") == 0 &&
		   bad == 2,
	   "bad bytes and NUL become U+FFFD (%zu)", bad);
	free(s);
	s = ts_tool_utf8("\xc0\xaf\xed\xa0\x80\xe2\x82\xac", 8, &bad);
	ok(s && bad == 5 && strstr(s, "\xe2\x82\xac"),
	   "overlong and surrogate forms are not UTF-8");
	free(s);
	ok(ts_tool_utf8_prefix("ab\xc3", 3) == 2, "a cut two-byte sequence is left out");
	ok(ts_tool_utf8_prefix("ab\xc3\xa9", 4) == 4, "a whole one stays");
	ok(ts_tool_utf8_prefix("\xe2\x82", 2) == 0, "a cut three-byte sequence is left out");
	ok(ts_tool_utf8_prefix("ab\xff", 3) == 3, "a bad byte is not a cut sequence");
	return done();
}
