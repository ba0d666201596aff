// SPDX-License-Identifier: Apache-2.0
/*
 * envd's common checks (envd.h): one port for every sandbox, so each request names its
 * sandbox (E2b-Sandbox-Id) and proves it may use it (X-Access-Token, or a URL signature
 * for /files). What E2B's proxy answers for a sandbox that is not there (502 JSON) is
 * answered here, before any module runs.
 */
#include <errno.h>
#include <nettle/base64.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect.h"
#include "envd.h"
#include "tokens.h"
#include "util.h"

/* Equal strings, in time that depends only on their lengths. */
static bool same_secret(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	unsigned char diff = n != m;

	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)a[i] ^ (unsigned char)(i < m ? b[i] : 0);
	return diff == 0;
}

/* The refusal: sent now, or kept for the caller (f) to send once it may. */
static int refuse(struct ts_req *req, struct ts_envd_refusal *f, unsigned status, json_t *body)
{
	if (f) {
		f->status = status;
		f->body = body;
	} else {
		ts_req_reply_json(req, status, body);
	}
	return status == 502 ? -ENOENT : -EACCES;
}

static int reply_gone(struct ts_req *req, struct ts_envd_refusal *f, const char *id)
{
	return refuse(req, f, 502,
		      json_pack("{s:o, s:s, s:i}", "sandboxId", ts_pj_text(id), "message",
				"The sandbox was not found", "code", 502));
}

static int reply_unauthorized(struct ts_req *req, struct ts_envd_refusal *f, const char *msg)
{
	/* a Connect error body and E2B's {code,message}: the status says unauthenticated
	 * to both SDKs, the string code too */
	return refuse(req, f, 401,
		      json_pack("{s:s, s:s}", "code", "unauthenticated", "message", msg));
}

/* /files answers in E2B's REST shape, {"code":401,"message"} (envd's auth.go). */
static int reply_files_unauthorized(struct ts_req *req, struct ts_envd_refusal *f, const char *msg)
{
	return refuse(req, f, 401, json_pack("{s:i, s:s}", "code", 401, "message", msg));
}

int ts_envd_signature(const char *path, const char *op, const char *user, const char *token,
		      long long expiry, char *buf, size_t size)
{
	struct sha256_ctx ctx;
	uint8_t digest[SHA256_DIGEST_SIZE];
	char b64[BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE) + 1];
	char exp[32] = "";
	size_t n;

	if (expiry > 0)
		snprintf(exp, sizeof(exp), ":%lld", expiry);
	sha256_init(&ctx);
	sha256_update(&ctx, strlen(path), (const uint8_t *)path);
	sha256_update(&ctx, 1, (const uint8_t *)":");
	sha256_update(&ctx, strlen(op), (const uint8_t *)op);
	sha256_update(&ctx, 1, (const uint8_t *)":");
	sha256_update(&ctx, strlen(user), (const uint8_t *)user);
	sha256_update(&ctx, 1, (const uint8_t *)":");
	sha256_update(&ctx, strlen(token), (const uint8_t *)token);
	sha256_update(&ctx, strlen(exp), (const uint8_t *)exp);
	sha256_digest(&ctx, sizeof(digest), digest);
	base64_encode_raw(b64, sizeof(digest), digest);
	n = BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE);
	while (n && b64[n - 1] == '=')
		n--;
	b64[n] = '\0';
	if ((size_t)snprintf(buf, size, "v1_%s", b64) >= size)
		return -ENAMETOOLONG;
	return 0;
}

/* The sandbox whose token signs this /files URL, or NULL. */
static const char *route_by_signature(struct ts_srv *srv, struct ts_req *req, char *id, size_t size)
{
	const char *sig = ts_req_query(req, "signature");
	const char *path = ts_req_query(req, "path") ?: "";
	const char *user = ts_req_query(req, "username") ?: "";
	const char *exp = ts_req_query(req, "signature_expiration");
	const char *op = strcmp(ts_req_method(req), "GET") ? "write" : "read";
	long long expiry = exp ? strtoll(exp, NULL, 10) : 0;
	struct ts_meta_sb *v = NULL;
	size_t n = 0, running_untokened = 0;
	struct ts_error ignore;
	bool found = false;

	if (ts_meta_list(srv->meta, &v, &n, &ignore) < 0)
		return NULL;
	for (size_t i = 0; i < n && !found; i++) {
		char want[128];

		if (!v[i].envd_token[0]) {
			running_untokened++;
			continue;
		}
		if (sig &&
		    ts_envd_signature(path, op, user, v[i].envd_token, expiry, want,
				      sizeof(want)) == 0 &&
		    same_secret(sig, want)) {
			snprintf(id, size, "%s", v[i].id);
			found = true;
		}
	}
	/* unsigned: only when exactly one sandbox could be meant */
	if (!found && !sig && running_untokened == 1)
		for (size_t i = 0; i < n && !found; i++)
			if (!v[i].envd_token[0]) {
				snprintf(id, size, "%s", v[i].id);
				found = true;
			}
	ts_meta_sbs_free(v, n);
	return found ? id : NULL;
}

int ts_envd_target(struct ts_srv *srv, struct ts_req *req, enum ts_envd_auth auth,
		   struct ts_envd_target *ret)
{
	return ts_envd_target_deferred(srv, req, auth, ret, NULL);
}

int ts_envd_target_deferred(struct ts_srv *srv, struct ts_req *req, enum ts_envd_auth auth,
			    struct ts_envd_target *ret, struct ts_envd_refusal *f)
{
	const char *id = ts_req_header(req, "E2b-Sandbox-Id");
	const char *given = ts_req_header(req, "X-Access-Token");
	char routed[64];
	struct ts_error err;
	struct ts_srv_sb *e;

	memset(ret, 0, sizeof(*ret));
	if (f)
		memset(f, 0, sizeof(*f));
	if (!id && auth == TS_ENVD_SIGNATURE) {
		id = route_by_signature(srv, req, routed, sizeof(routed));
		/* On E2B such a URL names its sandbox by host, and envd there finds the
		 * signature wrong or missing: clients compare these bodies exactly. */
		if (!id)
			return reply_files_unauthorized(
				req, f,
				ts_req_query(req, "signature")
					? "invalid signature"
					: "missing signature query parameter");
	}
	if (!id)
		return reply_gone(req, f, "");
	if (ts_srv_sandbox(srv, id, &e, &err) < 0 || !ts_srv_serving(srv, e))
		return reply_gone(req, f, id);
	ret->e = e;
	/* A sandbox serve has no record of (made through /v1, the CLI or the runs queue)
	 * has no envd token. With tokens configured its envd would take anyone: it is closed
	 * then (its own API is /v1, with scopes); open only in local development, where any
	 * key is taken anyway. /health, which needs no token anywhere, still answers. */
	if (!e->has_meta && auth != TS_ENVD_NO_TOKEN && !ts_tokens_empty(srv->tokens)) {
		static const char no_token[] = "this sandbox was not created through the E2B "
					       "API and has no envd access token: use /v1";

		return auth == TS_ENVD_SIGNATURE ? reply_files_unauthorized(req, f, no_token)
						 : reply_unauthorized(req, f, no_token);
	}
	ret->token = e->has_meta ? e->meta.envd_token : "";
	if (!ret->token[0])
		return 0;
	if (given) {
		if (!same_secret(given, ret->token))
			return auth == TS_ENVD_SIGNATURE
				       ? reply_files_unauthorized(req, f,
								  "access token present in header "
								  "but does not match")
				       : reply_unauthorized(req, f,
							    "access token present in header but "
							    "does not match");
		ret->token_ok = true;
		return 0;
	}
	if (auth == TS_ENVD_TOKEN)
		return reply_unauthorized(req, f, "missing access token");
	return 0;
}

const char *ts_envd_user(struct ts_req *req, char *buf, size_t size, bool *bad)
{
	const char *h = ts_req_header(req, "Authorization");
	struct base64_decode_ctx ctx;
	uint8_t out[128];
	size_t n = sizeof(out), len;
	char *colon;

	*bad = false;
	if (!h)
		return NULL;
	if (strncasecmp(h, "Basic ", 6))
		goto bad;
	h += 6;
	len = strlen(h);
	if (len == 0 || BASE64_DECODE_LENGTH(len) > sizeof(out))
		goto bad;
	base64_decode_init(&ctx);
	if (!base64_decode_update(&ctx, &n, out, len, h) || !base64_decode_final(&ctx))
		goto bad;
	colon = memchr(out, ':', n);
	if (!colon)
		goto bad;
	len = (size_t)(colon - (char *)out);
	if (len == 0 || len >= size)
		goto bad;
	for (size_t i = 0; i < len; i++)
		if (!(out[i] >= 'a' && out[i] <= 'z') && !(out[i] >= '0' && out[i] <= '9') &&
		    out[i] != '_' && out[i] != '-')
			goto bad;
	memcpy(buf, out, len);
	buf[len] = '\0';
	return buf;
bad:
	*bad = true;
	return NULL;
}
