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

/* The OpenAPI 3.1 document of /v1 (src/server/openapi-v1.json, embedded at build time). */
extern const char ts_v1_openapi_json[];
extern const size_t ts_v1_openapi_json_len;
