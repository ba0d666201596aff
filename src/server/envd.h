/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What every envd route shares: finding the sandbox a request is for (E2b-Sandbox-Id,
 * checked against its access token), the user it runs as (Basic auth "user:"), and the
 * replies E2B's proxy gives for a sandbox that is not there.
 */
#include <jansson.h>
#include <stdbool.h>

#include "backend.h"
#include "http.h"
#include "server.h"

/* How the sandbox of a request is found. */
enum ts_envd_auth {
	TS_ENVD_TOKEN,	   /* RPC: X-Access-Token must match when the sandbox has one */
	TS_ENVD_NO_TOKEN,  /* /health: no token needed */
	TS_ENVD_SIGNATURE, /* /files: the header token, or a URL signature (the caller checks) */
};

struct ts_envd_target {
	struct ts_srv_sb *e; /* serve's entry: e->sb is the handle (never closed by callers) */
	const char *token;   /* its envd access token, "" when none */
	bool token_ok;	     /* X-Access-Token was given and matched */
};

/*
 * The sandbox req is for. On failure the reply is already sent (502 JSON
 * {"sandboxId","message":"The sandbox was not found","code":502} for an unknown,
 * paused or expired sandbox, 401 for a wrong token) and it returns < 0. With
 * TS_ENVD_SIGNATURE a request without E2b-Sandbox-Id is matched by its signature query
 * against every known sandbox's token (then the single running sandbox without a token).
 */
int ts_envd_target(struct ts_srv *srv, struct ts_req *req, enum ts_envd_auth auth,
		   struct ts_envd_target *ret);

/* A refusal kept for later: its status and JSON body (the caller's: ts_req_reply_json
 * steals it). */
struct ts_envd_refusal {
	unsigned status;
	json_t *body;
};
/*
 * ts_envd_target that does not answer: a refusal goes to *f for the caller to send when
 * it may. An upload's is sent once its body is in, since a reply queued while the client
 * still sends has libmicrohttpd close the connection and the client see a reset.
 */
int ts_envd_target_deferred(struct ts_srv *srv, struct ts_req *req, enum ts_envd_auth auth,
			    struct ts_envd_target *ret, struct ts_envd_refusal *f);

/*
 * The user of an RPC: Basic auth "NAME:" (NULL when absent: the backend's default).
 * *bad is set (and NULL returned) for a malformed header. buf holds the name.
 */
const char *ts_envd_user(struct ts_req *req, char *buf, size_t size, bool *bad);

/* envd's file-signature: "v1_" base64-nopad(sha256("path:op:user:token[:exp]")). */
int ts_envd_signature(const char *path, const char *op, const char *user, const char *token,
		      long long expiry, char *buf, size_t size);
