/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Globs and .gitignore rules for find and grep, matched in the runner against the paths
 * the sandbox listed.
 *
 * A glob is compiled into tokens and matched by dynamic programming over (token, offset):
 * O(tokens x length) whatever the pattern, so a pattern of many `*` and `**` cannot make
 * the runner backtrack exponentially over a long path.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "tools-internal.h"

enum tok_type {
	TOK_LIT,	 /* one byte */
	TOK_ANY,	 /* `?`: one byte but `/` */
	TOK_CLASS,	 /* `[...]`: one byte of a set, never `/` */
	TOK_STAR,	 /* `*`: any run without `/` */
	TOK_DSTAR,	 /* `**` at the end: anything */
	TOK_DSTAR_SLASH, /* `**` then `/`: nothing, or anything that ends with `/` */
};

struct tok {
	enum tok_type type;
	unsigned char c;
	uint8_t set[32]; /* TOK_CLASS: a bit per byte */
};

struct ts_glob {
	size_t n;
	struct tok t[];
};

static void set_bit(uint8_t *set, unsigned char c)
{
	set[c >> 3] |= (uint8_t)(1U << (c & 7));
}

static bool has_bit(const uint8_t *set, unsigned char c)
{
	return set[c >> 3] & (1U << (c & 7));
}

/* A `[...]` class at p (after `[`): its end, or NULL when it is not one (a literal `[`). */
static const char *parse_class(const char *p, struct tok *t)
{
	bool neg = false;
	const char *s = p;

	memset(t->set, 0, sizeof(t->set));
	if (*s == '!' || *s == '^') {
		neg = true;
		s++;
	}
	for (bool first = true; *s && (first || *s != ']'); first = false) {
		unsigned char lo = (unsigned char)*s, hi;

		if (lo == '\\' && s[1])
			lo = (unsigned char)*++s;
		s++;
		hi = lo;
		if (*s == '-' && s[1] && s[1] != ']') {
			s++;
			hi = (unsigned char)*s;
			if (hi == '\\' && s[1])
				hi = (unsigned char)*++s;
			s++;
		}
		for (unsigned c = lo; c <= hi; c++)
			set_bit(t->set, (unsigned char)c);
	}
	if (*s != ']')
		return NULL;
	if (neg)
		for (size_t i = 0; i < sizeof(t->set); i++)
			t->set[i] = (uint8_t)~t->set[i];
	t->set['/' >> 3] &= (uint8_t) ~(1U << ('/' & 7));
	t->type = TOK_CLASS;
	return s + 1;
}

int ts_glob_compile(const char *pat, size_t len, struct ts_glob **ret)
{
	_cleanup_free_ char *p = NULL;
	struct ts_glob *g;

	*ret = NULL;
	if (len > TS_GLOB_MAX)
		return -E2BIG;
	p = strndup(pat, len);
	if (!p)
		return -ENOMEM;
	g = calloc(1, sizeof(*g) + (len + 1) * sizeof(struct tok));
	if (!g)
		return -ENOMEM;
	for (const char *s = p; *s;) {
		struct tok *t = &g->t[g->n];
		bool at_start = s == p || s[-1] == '/';

		if (s[0] == '*' && s[1] == '*' && at_start && (s[2] == '/' || s[2] == '\0')) {
			if (s[2] == '/') {
				t->type = TOK_DSTAR_SLASH;
				s += 3;
			} else {
				t->type = TOK_DSTAR;
				s += 2;
			}
			/* two of them in a row are one */
			if (g->n && g->t[g->n - 1].type == t->type)
				continue;
		} else if (*s == '*') {
			while (*s == '*')
				s++;
			t->type = TOK_STAR;
		} else if (*s == '?') {
			t->type = TOK_ANY;
			s++;
		} else if (*s == '[' && parse_class(s + 1, t)) {
			s = parse_class(s + 1, t);
		} else {
			if (*s == '\\' && s[1])
				s++;
			t->type = TOK_LIT;
			t->c = (unsigned char)*s++;
		}
		g->n++;
	}
	*ret = g;
	return 0;
}

void ts_glob_free(struct ts_glob *g)
{
	free(g);
}

bool ts_glob_match(const struct ts_glob *g, const char *s, size_t len)
{
	/* cur[j]: the tokens so far match s[0..j) */
	_cleanup_free_ bool *cur = calloc(len + 1, sizeof(bool));
	_cleanup_free_ bool *next = calloc(len + 1, sizeof(bool));

	if (!cur || !next)
		return false;
	cur[0] = true;
	for (size_t k = 0; k < g->n; k++) {
		const struct tok *t = &g->t[k];
		bool any = false, seen = false;

		for (size_t j = 0; j <= len; j++) {
			unsigned char c = j ? (unsigned char)s[j - 1] : 0;
			bool v = false;

			switch (t->type) {
			case TOK_LIT:
				v = j && cur[j - 1] && c == t->c;
				break;
			case TOK_ANY:
				v = j && cur[j - 1] && c != '/';
				break;
			case TOK_CLASS:
				v = j && cur[j - 1] && has_bit(t->set, c);
				break;
			case TOK_STAR:
				v = cur[j] || (j && next[j - 1] && c != '/');
				break;
			case TOK_DSTAR:
				v = cur[j] || (j && next[j - 1]);
				break;
			case TOK_DSTAR_SLASH:
				/* seen: some cur[i] with i < j */
				v = cur[j] || (j && seen && c == '/');
				break;
			}
			seen = seen || cur[j];
			next[j] = v;
			any = any || v;
		}
		if (!any)
			return false;
		bool *tmp = cur;
		cur = next;
		next = tmp;
	}
	return cur[len];
}

/* --- .gitignore ---------------------------------------------------------------------- */

struct rule {
	char *base; /* the directory of its .gitignore, "" for the root */
	struct ts_glob *g;
	bool negate, dir_only, anchored;
};

struct ts_gitignore {
	struct rule *rules;
	size_t n, cap;
};

struct ts_gitignore *ts_gitignore_new(void)
{
	return calloc(1, sizeof(struct ts_gitignore));
}

void ts_gitignore_free(struct ts_gitignore *gi)
{
	if (!gi)
		return;
	for (size_t i = 0; i < gi->n; i++) {
		free(gi->rules[i].base);
		ts_glob_free(gi->rules[i].g);
	}
	free(gi->rules);
	free(gi);
}

size_t ts_gitignore_count(const struct ts_gitignore *gi)
{
	return gi->n;
}

/* One line (without its newline) as git reads it. 0, or -errno. */
static int add_line(struct ts_gitignore *gi, const char *base, const char *l, size_t len)
{
	struct rule r = { 0 };
	int ret;

	if (len && l[len - 1] == '\r')
		len--;
	/* trailing spaces go unless escaped with a backslash */
	while (len && l[len - 1] == ' ' && !(len >= 2 && l[len - 2] == '\\'))
		len--;
	if (!len || l[0] == '#')
		return 0;
	if (l[0] == '!') {
		r.negate = true;
		l++;
		len--;
	} else if (l[0] == '\\' && len >= 2 && (l[1] == '#' || l[1] == '!')) {
		l++;
		len--;
	}
	if (len && l[len - 1] == '/') {
		r.dir_only = true;
		len--;
	}
	if (!len)
		return 0;
	/* a slash at the start or in the middle anchors it to its .gitignore's directory */
	r.anchored = memchr(l, '/', len) != NULL;
	if (l[0] == '/') {
		l++;
		len--;
	}
	if (!len)
		return 0;
	if (gi->n == gi->cap) {
		size_t cap = gi->cap ? gi->cap * 2 : 16;
		struct rule *grown = realloc(gi->rules, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		gi->rules = grown;
		gi->cap = cap;
	}
	ret = ts_glob_compile(l, len, &r.g);
	if (ret == -E2BIG)
		return 0; /* a line longer than any path: it matches nothing */
	if (ret < 0)
		return ret;
	r.base = strdup(base);
	if (!r.base) {
		ts_glob_free(r.g);
		return -ENOMEM;
	}
	gi->rules[gi->n++] = r;
	return 0;
}

int ts_gitignore_add(struct ts_gitignore *gi, const char *base, const char *text, size_t len)
{
	size_t rules_before = gi->n;

	while (len) {
		const char *nl = memchr(text, '\n', len);
		size_t l = nl ? (size_t)(nl - text) : len;
		int r;

		if (gi->n - rules_before >= TS_GITIGNORE_RULES_MAX)
			return -E2BIG;
		r = add_line(gi, base, text, l);
		if (r < 0)
			return r;
		text += l + (nl ? 1 : 0);
		len -= l + (nl ? 1 : 0);
	}
	return 0;
}

/* The rules' verdict on path itself: 1 ignored, 0 re-included by a negation, -1 no rule. */
static int verdict(const struct ts_gitignore *gi, const char *path, size_t len, bool is_dir)
{
	const char *slash = memrchr(path, '/', len);
	const char *name = slash ? slash + 1 : path;
	size_t name_len = len - (size_t)(name - path);

	/* the last matching rule decides; deeper .gitignore files were added later */
	for (size_t i = gi->n; i-- > 0;) {
		const struct rule *r = &gi->rules[i];
		size_t bl = strlen(r->base);
		const char *rel = path;
		size_t rel_len = len;

		if (r->dir_only && !is_dir)
			continue;
		if (bl) {
			if (len <= bl || memcmp(path, r->base, bl) != 0 || path[bl] != '/')
				continue;
			rel = path + bl + 1;
			rel_len = len - bl - 1;
		}
		if (r->anchored ? ts_glob_match(r->g, rel, rel_len)
				: ts_glob_match(r->g, name, name_len))
			return r->negate ? 0 : 1;
	}
	return -1;
}

bool ts_gitignore_ignored(const struct ts_gitignore *gi, const char *path, bool is_dir, size_t skip)
{
	size_t len = strlen(path);

	if (!gi || !gi->n)
		return false;
	/* a file in an excluded directory stays excluded whatever a rule says of it (git
	 * does not look inside an excluded directory) */
	for (size_t i = skip ? skip + 1 : 0; i < len; i++)
		if (path[i] == '/' && i > skip && verdict(gi, path, i, true) == 1)
			return true;
	return verdict(gi, path, len, is_dir) == 1;
}
