/* SPDX-License-Identifier: Apache-2.0 */
/* Access tokens: the tokens file, hashed secrets, scopes (tokens.h). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "tokens.h"
#include "util.h"

#define HASH_LEN SHA256_DIGEST_SIZE

enum {
	SCOPE_SANDBOXES_READ = 1U << 0,
	SCOPE_SANDBOXES_RUN = 1U << 1,
	SCOPE_FILES_READ = 1U << 2,
	SCOPE_FILES_WRITE = 1U << 3,
	SCOPE_APPROVALS = 1U << 4,
};

/* Each scope is its own bit and no bit is set by another's name: nothing is implied. */
static const struct {
	const char *name;
	unsigned bit;
} scopes[] = {
	{ TS_SCOPE_SANDBOXES_READ, SCOPE_SANDBOXES_READ },
	{ TS_SCOPE_SANDBOXES_RUN, SCOPE_SANDBOXES_RUN },
	{ TS_SCOPE_FILES_READ, SCOPE_FILES_READ },
	{ TS_SCOPE_FILES_WRITE, SCOPE_FILES_WRITE },
	{ TS_SCOPE_APPROVALS, SCOPE_APPROVALS },
};

struct ts_token {
	char name[TS_TOKEN_NAME_MAX + 1];
	uint8_t hash[HASH_LEN];
	uint8_t e2b_hash[HASH_LEN];
	bool has_e2b;
	unsigned scopes;
};

struct ts_tokens {
	bool configured; /* a tokens file was given */
	struct ts_token *v;
	size_t n;
};

static unsigned scope_bit(const char *s, size_t len)
{
	for (size_t i = 0; i < ELEMENTSOF(scopes); i++)
		if (strlen(scopes[i].name) == len && !memcmp(scopes[i].name, s, len))
			return scopes[i].bit;
	return 0;
}

bool ts_tokens_scope_valid(const char *s)
{
	return s && scope_bit(s, strlen(s)) != 0;
}

static bool name_valid(const char *s, size_t len)
{
	if (len == 0 || len > TS_TOKEN_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "PREFIX<64 hex>" into out; false when it is not that. */
static bool parse_hash(const char *s, size_t len, const char *prefix, uint8_t out[HASH_LEN])
{
	size_t pl = strlen(prefix);

	if (len != pl + 2 * HASH_LEN || memcmp(s, prefix, pl))
		return false;
	s += pl;
	for (size_t i = 0; i < HASH_LEN; i++) {
		int hi = hex_value(s[2 * i]), lo = hex_value(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

static void hex_encode(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

static void hash_secret(const char *s, size_t len, uint8_t out[HASH_LEN])
{
	struct sha256_ctx h;

	sha256_init(&h);
	sha256_update(&h, len, (const uint8_t *)s);
	sha256_digest(&h, HASH_LEN, out);
}

/* Parse "a,b,c" into scope bits; the bad one's name into bad (bounded). */
static int parse_scopes(const char *s, size_t len, unsigned *ret, char *bad, size_t bad_size)
{
	unsigned bits = 0;
	size_t i = 0;

	if (len == 0) {
		snprintf(bad, bad_size, "%s", "");
		return -EINVAL;
	}
	while (i <= len) {
		size_t j = i;
		unsigned b;

		while (j < len && s[j] != ',')
			j++;
		b = scope_bit(s + i, j - i);
		if (!b) {
			/* quoted only when it looks like a scope: a secret pasted into the
			 * wrong field must not reach a log */
			bool quote = j - i <= 32;

			for (size_t k = i; k < j && quote; k++)
				quote = (s[k] >= 'a' && s[k] <= 'z') || s[k] == ':' || s[k] == '_';
			snprintf(bad, bad_size, "%.*s", quote ? (int)(j - i) : 0, s + i);
			return -EINVAL;
		}
		bits |= b;
		i = j + 1;
	}
	*ret = bits;
	return 0;
}

static int parse_line(const char *line, size_t len, const char *origin, unsigned lineno,
		      struct ts_token *tok, struct ts_error *err)
{
	const char *field[4];
	size_t flen[4], nf = 0;
	char bad[80];

	for (size_t i = 0; i < len;) {
		size_t j;

		while (i < len && (line[i] == ' ' || line[i] == '\t'))
			i++;
		if (i == len)
			break;
		for (j = i; j < len && line[j] != ' ' && line[j] != '\t'; j++)
			;
		if (nf == ELEMENTSOF(field))
			return ts_err(err, -EINVAL, "`%s`:%u: too many fields", origin, lineno);
		field[nf] = line + i;
		flen[nf++] = j - i;
		i = j;
	}
	if (nf < 3 || nf > 4)
		return ts_err(err, -EINVAL,
			      "`%s`:%u: want `NAME sha256:HEX SCOPE[,SCOPE...] "
			      "[e2b-key-sha256:HEX]`",
			      origin, lineno);
	if (!name_valid(field[0], flen[0]))
		return ts_err(err, -EINVAL, "`%s`:%u: a token name is 1-%d of `A-Za-z0-9._-`",
			      origin, lineno, TS_TOKEN_NAME_MAX);
	memcpy(tok->name, field[0], flen[0]);
	tok->name[flen[0]] = '\0';
	/* the hash is never quoted back: a secret pasted here by mistake stays out of logs */
	if (!parse_hash(field[1], flen[1], "sha256:", tok->hash))
		return ts_err(err, -EINVAL,
			      "`%s`:%u: token `%s`: the hash is not `sha256:` and 64 hex digits",
			      origin, lineno, tok->name);
	if (parse_scopes(field[2], flen[2], &tok->scopes, bad, sizeof(bad)) < 0)
		return ts_err(err, -EINVAL,
			      "`%s`:%u: token `%s`: unknown scope `%s` (sandboxes:read, "
			      "sandboxes:run, files:read, files:write, approvals)",
			      origin, lineno, tok->name, bad);
	tok->has_e2b = nf == 4;
	if (tok->has_e2b && !parse_hash(field[3], flen[3], "e2b-key-sha256:", tok->e2b_hash))
		return ts_err(err, -EINVAL,
			      "`%s`:%u: token `%s`: the fourth field is not `e2b-key-sha256:` and "
			      "64 hex digits",
			      origin, lineno, tok->name);
	return 0;
}

int ts_tokens_parse(const char *text, size_t len, const char *origin, struct ts_tokens **ret,
		    struct ts_error *err)
{
	_cleanup_(ts_tokens_freep) struct ts_tokens *t = calloc(1, sizeof(*t));
	size_t cap = 0;
	unsigned lineno = 0;

	if (!t)
		return ts_err(err, -ENOMEM, "out of memory");
	t->configured = true;
	if (len > TS_TOKENS_FILE_MAX)
		return ts_err(err, -EFBIG, "`%s`: larger than %u bytes", origin,
			      TS_TOKENS_FILE_MAX);
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - text) : len, l = end - i;
		const char *line = text + i;
		struct ts_token tok = { 0 };
		int r;

		lineno++;
		i = end + 1;
		if (l && line[l - 1] == '\r')
			l--;
		if (l > TS_TOKENS_LINE_MAX)
			return ts_err(err, -EINVAL, "`%s`:%u: longer than %u bytes", origin, lineno,
				      TS_TOKENS_LINE_MAX);
		if (memchr(line, '\0', l))
			return ts_err(err, -EINVAL, "`%s`:%u: a NUL byte", origin, lineno);
		size_t k = 0;
		while (k < l && (line[k] == ' ' || line[k] == '\t'))
			k++;
		if (k == l || line[k] == '#')
			continue;
		r = parse_line(line, l, origin, lineno, &tok, err);
		if (r < 0)
			return r;
		for (size_t j = 0; j < t->n; j++) {
			if (!strcmp(t->v[j].name, tok.name))
				return ts_err(err, -EINVAL, "`%s`:%u: token `%s` is named twice",
					      origin, lineno, tok.name);
			/* two tokens with one secret: the check could not say which one it is */
			if (!memcmp(t->v[j].hash, tok.hash, HASH_LEN) ||
			    (tok.has_e2b && !memcmp(t->v[j].hash, tok.e2b_hash, HASH_LEN)) ||
			    (t->v[j].has_e2b && !memcmp(t->v[j].e2b_hash, tok.hash, HASH_LEN)) ||
			    (t->v[j].has_e2b && tok.has_e2b &&
			     !memcmp(t->v[j].e2b_hash, tok.e2b_hash, HASH_LEN)))
				return ts_err(err, -EINVAL,
					      "`%s`:%u: token `%s` has the secret of token `%s`",
					      origin, lineno, tok.name, t->v[j].name);
		}
		if (tok.has_e2b && !memcmp(tok.hash, tok.e2b_hash, HASH_LEN))
			return ts_err(err, -EINVAL,
				      "`%s`:%u: token `%s`: its E2B key is its own secret", origin,
				      lineno, tok.name);
		if (t->n == TS_TOKENS_MAX)
			return ts_err(err, -EINVAL, "`%s`:%u: more than %d tokens", origin, lineno,
				      TS_TOKENS_MAX);
		if (t->n == cap) {
			size_t ncap = cap ? 2 * cap : 8;
			struct ts_token *nv = reallocarray(t->v, ncap, sizeof(*nv));

			if (!nv)
				return ts_err(err, -ENOMEM, "out of memory");
			t->v = nv;
			cap = ncap;
		}
		t->v[t->n++] = tok;
	}
	*ret = TAKE_PTR(t);
	return 0;
}

/* The file's text; -ENOENT passes through unprefixed for ts_tokens_add. */
static int read_file(const char *path, char **ret, size_t *len, struct ts_error *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t got = 0;

	if (fd < 0)
		return ts_err_errno(err, -errno, "open tokens file `%s`", path);
	if (fstat(fd, &st) < 0)
		return ts_err_errno(err, -errno, "stat tokens file `%s`", path);
	if (!S_ISREG(st.st_mode))
		return ts_err(err, -EPERM, "tokens file `%s` is not a regular file", path);
	/* whoever may write the file may grant themselves any scope */
	if (st.st_mode & S_IWOTH)
		return ts_err(err, -EPERM, "tokens file `%s` is writable by others (chmod o-w)",
			      path);
	if (st.st_size > TS_TOKENS_FILE_MAX)
		return ts_err(err, -EFBIG, "tokens file `%s` is larger than %u bytes", path,
			      TS_TOKENS_FILE_MAX);
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return ts_err(err, -ENOMEM, "out of memory");
	while (got <= (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size + 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return ts_err_errno(err, -errno, "read tokens file `%s`", path);
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (got > (size_t)st.st_size)
		return ts_err(err, -EFBIG, "tokens file `%s` grew while read", path);
	buf[got] = '\0';
	*ret = TAKE_PTR(buf);
	*len = got;
	return 0;
}

int ts_tokens_load(const char *path, struct ts_tokens **ret, struct ts_error *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r;

	if (!path) {
		*ret = calloc(1, sizeof(**ret));
		return *ret ? 0 : ts_err(err, -ENOMEM, "out of memory");
	}
	r = read_file(path, &text, &len, err);
	if (r < 0)
		return r;
	return ts_tokens_parse(text, len, path, ret, err);
}

void ts_tokens_free(struct ts_tokens *t)
{
	if (!t)
		return;
	/* the hashes are not secrets, but nothing of a credential outlives its use */
	if (t->v)
		explicit_bzero(t->v, t->n * sizeof(*t->v));
	free(t->v);
	free(t);
}

bool ts_tokens_empty(const struct ts_tokens *t)
{
	return !t || !t->configured;
}

size_t ts_tokens_count(const struct ts_tokens *t)
{
	return t ? t->n : 0;
}

int ts_tokens_check_name(const struct ts_tokens *t, const char *secret, const char *scope,
			 const char **name, struct ts_error *err)
{
	uint8_t h[HASH_LEN];
	size_t found = SIZE_MAX, len;
	unsigned want = 0;

	if (scope) {
		want = scope_bit(scope, strlen(scope));
		if (!want)
			return ts_err(err, -EINVAL, "unknown scope `%s`", scope);
	}
	if (name)
		*name = "";
	if (ts_tokens_empty(t))
		return 0;
	if (!secret || !*secret)
		return ts_err(err, -EACCES, "an access token is required");
	len = strlen(secret);
	if (len > TS_TOKEN_SECRET_MAX)
		return ts_err(err, -EACCES, "unknown access token");
	hash_secret(secret, len, h);
	/* Every entry is compared, and which one matched is selected without a branch, so
	 * the time taken says nothing of where (or whether) the secret is in the file. */
	for (size_t i = 0; i < t->n; i++) {
		const struct ts_token *k = &t->v[i];
		size_t m = (size_t)memeql_sec(h, k->hash, HASH_LEN) |
			   ((size_t)memeql_sec(h, k->e2b_hash, HASH_LEN) & (size_t)k->has_e2b);
		size_t mask = (size_t)0 - m;

		found = (found & ~mask) | (i & mask);
	}
	explicit_bzero(h, sizeof(h));
	if (found == SIZE_MAX)
		return ts_err(err, -EACCES, "unknown access token");
	if (name)
		*name = t->v[found].name;
	if (want && !(t->v[found].scopes & want))
		return ts_err(err, -EPERM, "token `%s` lacks the scope `%s`", t->v[found].name,
			      scope);
	return 0;
}

int ts_tokens_check(struct ts_tokens *t, const char *bearer_or_key, const char *scope,
		    struct ts_error *err)
{
	return ts_tokens_check_name(t, bearer_or_key, scope, NULL, err);
}

const char *ts_tokens_bearer(const char *authorization)
{
	if (!authorization || strncasecmp(authorization, "Bearer ", 7))
		return NULL;
	authorization += 7;
	while (*authorization == ' ')
		authorization++;
	return authorization;
}

int ts_tokens_add(const char *path, const char *name, const char *scopes_s, const char *e2b_key,
		  char *secret, size_t secret_size, struct ts_error *err)
{
	_cleanup_(ts_tokens_freep) struct ts_tokens *t = NULL;
	_cleanup_free_ char *text = NULL, *dir = NULL, *out = NULL;
	_cleanup_close_ int fd = -EBADF;
	char tmp[PATH_MAX], hex[2 * HASH_LEN + 1], e2b_hex[2 * HASH_LEN + 1], bad[80];
	uint8_t raw[32], h[HASH_LEN];
	unsigned bits;
	size_t len = 0;
	int r, n;

	if (secret_size < TS_TOKEN_SECRET_LEN + 1)
		return ts_err(err, -EINVAL, "the secret buffer is too small");
	if (!name_valid(name, strlen(name)))
		return ts_err(err, -EINVAL, "a token name is 1-%d of `A-Za-z0-9._-`",
			      TS_TOKEN_NAME_MAX);
	if (parse_scopes(scopes_s, strlen(scopes_s), &bits, bad, sizeof(bad)) < 0)
		return ts_err(err, -EINVAL,
			      "unknown scope `%s` (sandboxes:read, sandboxes:run, files:read, "
			      "files:write)",
			      bad);
	if (e2b_key && (!*e2b_key || strlen(e2b_key) > TS_TOKEN_SECRET_MAX))
		return ts_err(err, -EINVAL, "an E2B API key is 1-%d bytes", TS_TOKEN_SECRET_MAX);

	r = read_file(path, &text, &len, err);
	if (r == -ENOENT) {
		ts_err_clear(err);
		len = 0;
	} else if (r < 0)
		return r;
	r = ts_tokens_parse(text ? text : "", len, path, &t, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].name, name))
			return ts_err(err, -EEXIST, "token `%s` exists in `%s`", name, path);

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return ts_err_errno(err, -errno, "getrandom");
	memcpy(secret, "e2b_", 4);
	hex_encode(raw, sizeof(raw), secret + 4);
	explicit_bzero(raw, sizeof(raw));
	hash_secret(secret, strlen(secret), h);
	hex_encode(h, HASH_LEN, hex);
	e2b_hex[0] = '\0';
	if (e2b_key) {
		uint8_t eh[HASH_LEN];

		hash_secret(e2b_key, strlen(e2b_key), eh);
		hex_encode(eh, HASH_LEN, e2b_hex);
		for (size_t i = 0; i < t->n; i++)
			if (!memcmp(t->v[i].hash, eh, HASH_LEN) ||
			    (t->v[i].has_e2b && !memcmp(t->v[i].e2b_hash, eh, HASH_LEN)))
				return ts_err(err, -EEXIST,
					      "that E2B API key already belongs to token `%s`",
					      t->v[i].name);
	}

	n = asprintf(&out, "%.*s%s%s sha256:%s %s%s%s\n", (int)len, text ? text : "",
		     len && text[len - 1] != '\n' ? "\n" : "", name, hex, scopes_s,
		     e2b_key ? " e2b-key-sha256:" : "", e2b_hex);
	if (n < 0) {
		out = NULL;
		return ts_err(err, -ENOMEM, "out of memory");
	}
	/* what we write must load: check it as serve will read it */
	ts_tokens_free(TAKE_PTR(t));
	r = ts_tokens_parse(out, (size_t)n, path, &t, err);
	if (r < 0)
		return r;

	dir = strdup(path);
	if (!dir)
		return ts_err(err, -ENOMEM, "out of memory");
	if (snprintf(tmp, sizeof(tmp), "%s/.tokens.XXXXXX", dirname(dir)) >= (int)sizeof(tmp))
		return ts_err(err, -ENAMETOOLONG, "tokens file path `%s` is too long", path);
	/* a new file in the same directory, renamed over the old one: serve never reads a
	 * half-written file, and mkstemp makes it 0600 */
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return ts_err_errno(err, -errno, "create a file beside `%s`", path);
	r = ts_write_all(fd, out, (size_t)n);
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	if (r >= 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		int saved = r;

		unlink(tmp);
		return ts_err_errno(err, saved, "write tokens file `%s`", path);
	}
	return 0;
}
