/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Access tokens of `serve`: who may call the control plane and /v1, with which scopes.
 *
 * The tokens file is text, one token a line; `#` starts a comment line, blank lines are
 * skipped:
 *
 *   NAME sha256:<64 hex> SCOPE[,SCOPE...] [e2b-key-sha256:<64 hex>]
 *
 * NAME is 1-64 of [A-Za-z0-9._-], unique. The hash is SHA-256 of the secret as the
 * client sends it; the secret itself is never stored, compared or logged (a secret made
 * by ts_tokens_add has 256 random bits, so an unsalted hash is as strong as any KDF).
 * SCOPE is one of sandboxes:read, sandboxes:run, files:read, files:write, approvals; no
 * scope implies another (running code always needs sandboxes:run by name; deciding an
 * agent's gated calls needs approvals, which an agent's own sandboxes:run token lacks). The optional
 * e2b-key-sha256 field maps an E2B API key (X-API-KEY) to the token: either secret then
 * authenticates as NAME.
 *
 * No tokens file: every key is accepted (local development; serve then listens on
 * loopback only). A tokens file with no token line refuses every key.
 */
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

struct ts_tokens;

#define TS_TOKENS_FILE_MAX (1U << 20) /* bytes of a tokens file */
#define TS_TOKENS_MAX 4096	      /* tokens in one file */
#define TS_TOKENS_LINE_MAX 1024	      /* bytes of one line */
#define TS_TOKEN_NAME_MAX 64
#define TS_TOKEN_SECRET_MAX 512 /* a longer presented secret is refused unhashed */
/* The secret ts_tokens_add makes: "e2b_" and 64 hex digits, so that the E2B SDKs that check
 * a key's format (^e2b_[0-9a-f]+$) accept it as E2B_API_KEY too. */
#define TS_TOKEN_SECRET_LEN (4 + 64)

/* The scopes, by name in the file and to ts_tokens_check. */
#define TS_SCOPE_SANDBOXES_READ "sandboxes:read"
#define TS_SCOPE_SANDBOXES_RUN "sandboxes:run"
#define TS_SCOPE_FILES_READ "files:read"
#define TS_SCOPE_FILES_WRITE "files:write"
#define TS_SCOPE_APPROVALS "approvals"

/*
 * Load the tokens file at path (NULL: no file, an empty set that accepts any key).
 * -ENOENT when it is missing, -EPERM when it is not a regular file or others may write
 * it, -EFBIG past TS_TOKENS_FILE_MAX, -EINVAL with `path:LINE: what` for a bad line
 * (the secret hashes are never quoted).
 */
int ts_tokens_load(const char *path, struct ts_tokens **ret, struct ts_error *err);
/* Parse a tokens file's text (origin names it in messages). As ts_tokens_load. */
int ts_tokens_parse(const char *text, size_t len, const char *origin, struct ts_tokens **ret,
		    struct ts_error *err);
void ts_tokens_free(struct ts_tokens *t);
static inline void ts_tokens_freep(struct ts_tokens **t)
{
	ts_tokens_free(*t);
}

/* True when no tokens file is configured (t NULL included): any key is accepted. */
bool ts_tokens_empty(const struct ts_tokens *t);
/* Tokens in the file. */
size_t ts_tokens_count(const struct ts_tokens *t);

/*
 * May the caller presenting secret (a Bearer token or an E2B API key; NULL or "" when
 * none was sent) do what needs scope (one of TS_SCOPE_*; NULL: any valid token)? 0 when
 * it may, and *name (may be NULL) points at the token's name ("" with no tokens file);
 * -EACCES (HTTP 401) for a missing or unknown secret; -EPERM (403) when the token lacks
 * scope; -EINVAL for an unknown scope name (a caller's bug). Every configured hash is
 * compared, in constant time, whatever matched; messages never contain the secret.
 */
int ts_tokens_check_name(const struct ts_tokens *t, const char *secret, const char *scope,
			 const char **name, struct ts_error *err);
int ts_tokens_check(struct ts_tokens *t, const char *bearer_or_key, const char *scope,
		    struct ts_error *err);

/* The token of an Authorization header value "Bearer <token>" (scheme case-insensitive),
 * or NULL when the header is NULL or of another scheme. */
const char *ts_tokens_bearer(const char *authorization);

/* True when s is a scope name. */
bool ts_tokens_scope_valid(const char *s);

/*
 * Make a token NAME with scopes (comma-separated) and append it to the tokens file at
 * path (created 0600 when missing; rewritten atomically), optionally mapping the E2B API
 * key e2b_key (NULL: none) to it. The new secret (TS_TOKEN_SECRET_LEN characters and a
 * NUL) goes into secret, for the caller to show once: only its hash is stored. -EEXIST
 * when NAME is taken, -EINVAL for a bad name or scope, or as ts_tokens_load.
 */
int ts_tokens_add(const char *path, const char *name, const char *scopes, const char *e2b_key,
		  char *secret, size_t secret_size, struct ts_error *err);
