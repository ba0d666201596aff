/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * /v1 REST of `serve` (its routes are ts_v1_routes in server.h): sandboxes, commands with
 * a JSON result or an application/x-ndjson event stream, whole files, processes. Every
 * route but the OpenAPI document checks an access token (tokens.h) for its scope. Errors
 * are one shape, {"error":{"code":"not_found","message":"..."}}, with the HTTP status of
 * the code (v1.c's table).
 */
#include <stddef.h>

#define TS_V1_FILE_MAX (64U << 20)	/* an uploaded file (PUT .../files) */
#define TS_V1_OUTPUT_DEFAULT (1U << 20) /* a JSON command result keeps this much per stream */
#define TS_V1_OUTPUT_MAX (16U << 20)	/* ... at most, when asked (max_output_bytes) */
#define TS_V1_ARGV_MAX 4096		/* arguments of a command */
#define TS_V1_ENVS_MAX 1024		/* envs of a command or sandbox, metadata pairs */
#define TS_V1_STRING_MAX (64U << 10)	/* one argument, env value, path, ... */
#define TS_V1_TOOL_BODY_MAX (17U << 20) /* a tool call (write_file's content: 16 MiB) */

/* The OpenAPI 3.1 document of /v1 (src/server/openapi-v1.json, embedded at build time). */
extern const char ts_v1_openapi_json[];
extern const size_t ts_v1_openapi_json_len;

/* --- shared by v1.c and v1-cmd.c ------------------------------------------------------ */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "error.h"
#include "http.h"
#include "server.h"

/* The command route (v1-cmd.c) and the file routes (v1-files.c). */
void ts_v1_commands(void *ctx, struct ts_req *req);
void ts_v1_file_get(void *ctx, struct ts_req *req);
int ts_v1_file_put_begin(void *ctx, struct ts_req *req);
void ts_v1_file_put(void *ctx, struct ts_req *req);
/* The agent runner's routes (v1-runs.c). */
void ts_v1_run_new(void *ctx, struct ts_req *req);
void ts_v1_run_tool(void *ctx, struct ts_req *req);
void ts_v1_run_events(void *ctx, struct ts_req *req);
void ts_v1_sandbox_tool(void *ctx, struct ts_req *req);
void ts_v1_approvals(void *ctx, struct ts_req *req);
void ts_v1_approval_decide(void *ctx, struct ts_req *req);
int ts_v1_tools_begin(void *ctx, struct ts_req *req);

/* Take the request's body (route.begin), at most max bytes (past it ts_v1_authorized
 * answers 413). */
int ts_v1_body_begin(struct ts_req *req, size_t max);

/* {"error":{"code":code,"message":msg}} */
json_t *ts_v1_error_json(const char *code, const char *msg);
/* Reply that error with the status of code (400 invalid_argument, ...). */
void ts_v1_reply_error(struct ts_req *req, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The /v1 code of a backend failure, and the reply of one. */
const char *ts_v1_be_code(const struct ts_error *err);
void ts_v1_reply_be_error(struct ts_req *req, const struct ts_error *err);
/* Does req carry a token with scope? 0, -EACCES (401), -EPERM (403); the reply of one. */
int ts_v1_check_token(struct ts_srv *srv, struct ts_req *req, const char *scope,
		      struct ts_error *err);
void ts_v1_reply_token_error(struct ts_req *req, int r, const struct ts_error *err);
/* May req go on: its body within bounds (else 413), a token with scope (Bearer, else
 * X-API-KEY; else 401/403)? Replies itself when not. */
bool ts_v1_authorized(struct ts_srv *srv, struct ts_req *req, const char *scope);
/* The body as a JSON object (borrowed); replies 400 and returns NULL when it is not. */
json_t *ts_v1_body_object(struct ts_req *req);
/* Members of a body, absent or null leaving *ret as it is (NULL for strings); false after
 * replying 400 for a bad one. kvs: an object of strings (env: keys are variable names),
 * borrowed from o, *ret freed by the caller. */
bool ts_v1_get_string(struct ts_req *req, json_t *o, const char *key, const char **ret);
bool ts_v1_get_int(struct ts_req *req, json_t *o, const char *key, long long min, long long max,
		   long long *ret);
bool ts_v1_get_bool(struct ts_req *req, json_t *o, const char *key, bool *ret);
bool ts_v1_get_kvs(struct ts_req *req, json_t *o, const char *key, bool env, struct ts_kv **ret,
		   size_t *n);
/* The sandbox of the route's first "*" (srv's cached handle, never closed by the caller;
 * *entry, when not NULL, its cache entry for a stream to ts_srv_sb_ref); replies 404 when
 * none. */
struct ts_sb *ts_v1_route_sandbox(struct ts_srv *srv, struct ts_req *req, struct ts_srv_sb **entry);
/* The request's body (taken by /v1's own route.begin, bounded), "" when none. */
const uint8_t *ts_v1_body(struct ts_req *req, size_t *len);
/* Standard base64 out; in: -EINVAL when not base64, -ENOMEM. */
json_t *ts_v1_base64_json(const uint8_t *p, size_t n);
int ts_v1_base64_decode(const char *s, size_t len, uint8_t **ret, size_t *n);
/* Bytes at the end of p[0..n) that begin a UTF-8 sequence not yet complete (0-3). */
size_t ts_v1_utf8_incomplete_tail(const uint8_t *p, size_t n);
/* p as a JSON string when text and valid UTF-8, else base64; *enc "utf-8" or "base64". */
json_t *ts_v1_data_json(const uint8_t *p, size_t n, bool text, const char **enc);
