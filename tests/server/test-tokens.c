/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Access tokens (src/server/tokens.c): the file format and its errors by line, SHA-256 of
 * the exact secret, the match found wherever it sits among many entries, scopes that
 * never imply each other (sandboxes:run above all), E2B keys mapped to a token, no file
 * = any key, and ts_tokens_add storing only the hash.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "tokens.h"

/* sha256("abc"), and a hash nobody has the secret of */
#define H_ABC "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define H_X "0000000000000000000000000000000000000000000000000000000000000001"

static struct ts_tokens *parse(const char *text, struct ts_error *err)
{
	struct ts_tokens *t = NULL;

	if (ts_tokens_parse(text, strlen(text), "tokens", &t, err) < 0)
		return NULL;
	return t;
}

/* The parse fails with -EINVAL and a message naming `tokens`:LINE and containing want. */
static void bad(const char *text, unsigned line, const char *want, const char *what)
{
	struct ts_error err = { 0 };
	struct ts_tokens *t = NULL;
	char where[32];
	int r = ts_tokens_parse(text, strlen(text), "tokens", &t, &err);

	snprintf(where, sizeof(where), "`tokens`:%u:", line);
	ok(r == -EINVAL && strstr(err.msg, where) && strstr(err.msg, want), "%s: %s", what,
	   err.msg);
	ts_tokens_free(t);
}

int main(void)
{
	struct ts_error err = { 0 };
	struct ts_tokens *t;
	const char *name;
	char line[512];
	int r;

	plan(0);

	/* no file: any key, even none */
	r = ts_tokens_load(NULL, &t, &err);
	ok(r == 0 && ts_tokens_empty(t), "no tokens file: empty");
	ok(ts_tokens_check(t, NULL, TS_SCOPE_SANDBOXES_RUN, &err) == 0 &&
		   ts_tokens_check(t, "whatever", TS_SCOPE_FILES_WRITE, &err) == 0,
	   "no tokens file: any key, also none, has every scope");
	ok(ts_tokens_check(t, "x", "sandboxes:write", &err) == -EINVAL,
	   "an unknown scope asked for is -EINVAL, also without tokens");
	ts_tokens_free(t);
	ok(ts_tokens_empty(NULL), "NULL is empty");

	/* SHA-256 of the exact secret */
	snprintf(line, sizeof(line), "# a comment\n\n  \t\nalice sha256:%s sandboxes:read\r\n",
		 H_ABC);
	t = parse(line, &err);
	ok(t && !ts_tokens_empty(t) && ts_tokens_count(t) == 1,
	   "comments, blank lines and CRLF are skipped: one token");
	r = ts_tokens_check_name(t, "abc", TS_SCOPE_SANDBOXES_READ, &name, &err);
	ok(r == 0 && !strcmp(name, "alice"), "the secret whose SHA-256 is stored matches (%d)", r);
	ok(ts_tokens_check(t, "abd", TS_SCOPE_SANDBOXES_READ, &err) == -EACCES,
	   "another secret is -EACCES");
	ok(ts_tokens_check(t, "abc ", TS_SCOPE_SANDBOXES_READ, &err) == -EACCES,
	   "the secret with a trailing space is -EACCES");
	ok(ts_tokens_check(t, "ab", TS_SCOPE_SANDBOXES_READ, &err) == -EACCES,
	   "a prefix of the secret is -EACCES");
	ok(ts_tokens_check(t, NULL, TS_SCOPE_SANDBOXES_READ, &err) == -EACCES &&
		   ts_tokens_check(t, "", TS_SCOPE_SANDBOXES_READ, &err) == -EACCES,
	   "no secret is -EACCES");
	ok(ts_tokens_check(t, H_ABC, TS_SCOPE_SANDBOXES_READ, &err) == -EACCES,
	   "the stored hash itself is not a secret that matches");
	ok(ts_tokens_check(t, "abc", TS_SCOPE_SANDBOXES_RUN, &err) == -EPERM &&
		   strstr(err.msg, "alice") && strstr(err.msg, "sandboxes:run") &&
		   !strstr(err.msg, "abc"),
	   "a missing scope is -EPERM naming token and scope, not the secret: %s", err.msg);
	ok(ts_tokens_check(t, "abc", NULL, &err) == 0, "scope NULL: any valid token");
	ok(ts_tokens_check(t, "abc", "sandboxes:*", &err) == -EINVAL,
	   "an unknown scope asked for is -EINVAL");
	ts_tokens_free(t);

	/* every combination of scopes: each is granted exactly when named; run is never
	 * implied by the others, alone or together */
	for (unsigned m = 1; m < 32; m++) {
		static const char *const names[] = { "sandboxes:read", "sandboxes:run",
						     "files:read", "files:write", "approvals" };
		char scopes[128] = "";
		bool good = true;

		for (unsigned b = 0; b < 5; b++)
			if (m & (1U << b)) {
				if (*scopes)
					strcat(scopes, ",");
				strcat(scopes, names[b]);
			}
		snprintf(line, sizeof(line), "t sha256:%s %s\n", H_ABC, scopes);
		t = parse(line, &err);
		if (!t) {
			ok(0, "scopes `%s` parse: %s", scopes, err.msg);
			continue;
		}
		for (unsigned b = 0; b < 5; b++) {
			r = ts_tokens_check(t, "abc", names[b], &err);
			if (r != ((m & (1U << b)) ? 0 : -EPERM))
				good = false;
		}
		ok(good, "scopes `%s`: exactly these granted", scopes);
		ts_tokens_free(t);
	}

	/* an E2B key maps to its token */
	snprintf(line, sizeof(line), "k sha256:%s files:write e2b-key-sha256:%s\n", H_X, H_ABC);
	t = parse(line, &err);
	r = t ? ts_tokens_check_name(t, "abc", TS_SCOPE_FILES_WRITE, &name, &err) : -1;
	ok(r == 0 && !strcmp(name, "k"), "the mapped E2B key authenticates as its token");
	ok(t && ts_tokens_check(t, "abc", TS_SCOPE_SANDBOXES_RUN, &err) == -EPERM,
	   "with that token's scopes only (files:write cannot run)");
	ts_tokens_free(t);

	/* the match wherever it is among many: every entry is compared, the one that matched
	 * is selected without stopping early, and later entries do not override it */
	{
		size_t cap = 64 * 200, n = 0;
		char *text = malloc(cap);
		bool good = true;

		for (unsigned i = 0; i < 50; i++)
			n += (size_t)snprintf(text + n, cap - n,
					      "t%u sha256:%064x sandboxes:read\n", i, i + 2);
		for (unsigned pos = 0; pos < 50; pos += 7) {
			/* put "abc" at position pos */
			char *copy = strdup(text), want[16];
			char needle[80];

			snprintf(needle, sizeof(needle), "sha256:%064x", pos + 2);
			memcpy(strstr(copy, needle) + 7, H_ABC, 64);
			snprintf(want, sizeof(want), "t%u", pos);
			t = parse(copy, &err);
			r = t ? ts_tokens_check_name(t, "abc", NULL, &name, &err) : -1;
			if (r != 0 || strcmp(name, want))
				good = false;
			if (t && ts_tokens_check(t, "abd", NULL, &err) != -EACCES)
				good = false;
			ts_tokens_free(t);
			free(copy);
		}
		ok(good, "among 50 tokens the matching one is found at every position");
		t = parse(text, &err);
		ok(t && ts_tokens_count(t) == 50 &&
			   ts_tokens_check(t, "abc", NULL, &err) == -EACCES,
		   "and none when no entry matches");
		ts_tokens_free(t);
		free(text);
	}

	/* an empty file is configured and refuses everything */
	t = parse("# nobody yet\n", &err);
	ok(t && !ts_tokens_empty(t) && ts_tokens_check(t, "abc", NULL, &err) == -EACCES &&
		   ts_tokens_check(t, NULL, NULL, &err) == -EACCES,
	   "a tokens file without tokens refuses every key");
	ts_tokens_free(t);

	/* errors name the line */
	bad("a sha256:" H_ABC " sandboxes:read\n\nb sha256:" H_ABC "zz sandboxes:read\n", 3, "hash",
	    "a malformed hash");
	bad("a sha256:" H_ABC " sandboxes:read,files:exec\n", 1, "`files:exec`",
	    "an unknown scope");
	bad("a sha256:" H_ABC " sandboxes:read,\n", 1, "unknown scope", "an empty scope");
	bad("a sha256:" H_ABC "\n", 1, "want", "no scopes");
	bad("\n\na sha256:" H_ABC " files:read x y\n", 3, "too many", "too many fields");
	bad("a sha256:" H_ABC " files:read nope\n", 1, "e2b-key-sha256", "a bad fourth field");
	bad("a/b sha256:" H_ABC " files:read\n", 1, "name", "a bad name");
	bad("a sha256:" H_ABC " files:read\nb sha256:" H_X " files:read\na sha256:" H_ABC
	    "0 files:read\n",
	    3, "hash", "a bad hash after two good lines");
	bad("a sha256:" H_ABC " files:read\nb sha256:" H_X " files:read\na sha256:" H_X
	    " files:read\n",
	    3, "named twice", "a name twice");
	bad("a sha256:" H_ABC " files:read\nb sha256:" H_ABC " files:read\n", 2,
	    "the secret of token `a`", "one secret twice");
	bad("a sha256:" H_X " files:read\nb sha256:" H_ABC " files:read e2b-key-sha256:" H_X "\n",
	    2, "the secret of token `a`", "an E2B key that is another token's secret");
	{
		char longl[2048];

		memset(longl, 'x', sizeof(longl) - 1);
		longl[sizeof(longl) - 1] = '\0';
		bad(longl, 1, "longer than", "a line past the bound");
	}
	{
		struct ts_error e = { 0 };

		t = NULL;
		r = ts_tokens_parse("a my-pasted-secret sandboxes:read\n", 34, "tokens", &t, &e);
		ok(r == -EINVAL && !strstr(e.msg, "my-pasted-secret"),
		   "a secret pasted as the hash is not quoted: %s", e.msg);
		ts_tokens_free(t);
		t = NULL;
		r = ts_tokens_parse("a sha256:" H_ABC " e2b_0123456789abcdef\n", 95, "tokens", &t,
				    &e);
		ok(r == -EINVAL && !strstr(e.msg, "e2b_0123456789abcdef"),
		   "nor one pasted as the scopes: %s", e.msg);
		ts_tokens_free(t);
	}

	/* Bearer */
	ok(!strcmp(ts_tokens_bearer("Bearer abc") ?: "-", "abc") &&
		   !strcmp(ts_tokens_bearer("bearer  abc") ?: "-", "abc") &&
		   !ts_tokens_bearer("Basic abc") && !ts_tokens_bearer(NULL),
	   "Bearer tokens are taken from their header, other schemes are not");

	/* ts_tokens_add: the secret once, only its hash stored, 0600, loads and checks */
	{
		char dir[] = "/tmp/test-tokens-XXXXXX", path[256], secret[TS_TOKEN_SECRET_LEN + 1];
		char secret2[TS_TOKEN_SECRET_LEN + 1], *text = NULL;
		struct stat st;
		bool hexok = true;
		FILE *f;
		size_t n = 0;

		if (!mkdtemp(dir)) {
			ok(0, "mkdtemp");
			return done();
		}
		snprintf(path, sizeof(path), "%s/tokens", dir);
		r = ts_tokens_add(path, "ci", "sandboxes:read,sandboxes:run", NULL, secret,
				  sizeof(secret), &err);
		ok(r == 0, "add a token to a new file: %s", r ? err.msg : "");
		for (size_t i = 4; i < TS_TOKEN_SECRET_LEN; i++)
			if (!strchr("0123456789abcdef", secret[i]))
				hexok = false;
		ok(r == 0 && strlen(secret) == TS_TOKEN_SECRET_LEN && !strncmp(secret, "e2b_", 4) &&
			   hexok,
		   "its secret is e2b_ and 64 hex digits");
		ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "the file is 0600");
		f = fopen(path, "r");
		if (f) {
			text = calloc(1, 4096);
			n = fread(text, 1, 4095, f);
			fclose(f);
		}
		ok(text && n > 0 && !strstr(text, secret) && !strstr(text, secret + 4) &&
			   strstr(text, "ci sha256:"),
		   "the file holds the hash, not the secret");
		r = ts_tokens_add(path, "deploy", "files:write",
				  "e2b_0000000000000000000000000000000000000000", secret2,
				  sizeof(secret2), &err);
		ok(r == 0, "add a second token mapping an E2B key");
		ok(ts_tokens_add(path, "ci", "files:read", NULL, secret2, sizeof(secret2), &err) ==
			   -EEXIST,
		   "a taken name is -EEXIST");
		ok(ts_tokens_add(path, "x", "files:read,root", NULL, secret2, sizeof(secret2),
				 &err) == -EINVAL,
		   "an unknown scope is -EINVAL");
		t = NULL;
		r = ts_tokens_load(path, &t, &err);
		ok(r == 0 && ts_tokens_count(t) == 2, "the file loads with both tokens");
		ok(t && ts_tokens_check_name(t, secret, TS_SCOPE_SANDBOXES_RUN, &name, &err) == 0 &&
			   !strcmp(name, "ci"),
		   "the first secret runs");
		ok(t && ts_tokens_check(t, secret2, TS_SCOPE_FILES_WRITE, &err) == 0 &&
			   ts_tokens_check(t, secret2, TS_SCOPE_SANDBOXES_RUN, &err) == -EPERM,
		   "the second writes files and cannot run");
		ok(t &&
			   ts_tokens_check_name(t, "e2b_0000000000000000000000000000000000000000",
						TS_SCOPE_FILES_WRITE, &name, &err) == 0 &&
			   !strcmp(name, "deploy"),
		   "the mapped E2B key is the second token");
		ts_tokens_free(t);
		chmod(path, 0602);
		t = NULL;
		ok(ts_tokens_load(path, &t, &err) == -EPERM && strstr(err.msg, "writable"),
		   "a world-writable tokens file is refused: %s", err.msg);
		ts_tokens_free(t);
		snprintf(line, sizeof(line), "%s/missing", dir);
		t = NULL;
		ok(ts_tokens_load(line, &t, &err) == -ENOENT, "a missing tokens file is -ENOENT");
		ok(ts_tokens_load(dir, &t, &err) == -EPERM, "a directory is -EPERM");
		unlink(path);
		rmdir(dir);
		free(text);
	}
	return done();
}
