/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Connect protocol (connectrpc.com), JSON codec only, as E2B's SDKs speak it to envd:
 *   unary:            application/json request; 200 + JSON, or an error status +
 *                     {"code":"not_found","message":...}
 *   server-streaming: application/connect+json; the request is one envelope
 *                     (flags 0x00, u32 big-endian length, JSON), the response a
 *                     sequence of 0x00 envelopes ended by exactly one 0x02 end-stream
 *                     envelope ({} or {"error":{...}}).
 * ProtoJSON helpers: lowerCamelCase out, both casings in, int64 as strings, bytes as
 * base64, Timestamps as RFC 3339.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "error.h"
#include "http.h"

#define TS_CONNECT_ENVELOPE_MAX (4U << 20) /* one request envelope */

/* Connect's codes by name ("not_found") and their HTTP status for unary errors. */
const char *ts_connect_code_name(enum ts_be_code code);
unsigned ts_connect_http_status(const char *code_name);

/* A Connect call's request: unary (body JSON) or streaming (one envelope), a JSON object
 * the caller owns (json_decref). Checks as connect-go does: POST only (else 405), the
 * content type (application/json, application/connect+json, each also with
 * "; charset=utf-8"; else 415 with Accept-Post), Connect-Protocol-Version "1" when sent,
 * no compression (unimplemented), a well-formed Connect-Timeout-Ms, then the envelope
 * (resource_exhausted over TS_CONNECT_ENVELOPE_MAX; invalid_argument for a compressed
 * flag, a short or long body, non-JSON). On failure the unary/stream error reply is
 * already sent and NULL is returned. */
json_t *ts_connect_request(struct ts_req *req, bool streaming);

/* Unary replies. json is stolen. */
int ts_connect_reply(struct ts_req *req, json_t *json);
int ts_connect_reply_error(struct ts_req *req, const char *code_name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The error of a backend failure (ts_be_code of err, its message). */
int ts_connect_reply_be_error(struct ts_req *req, const struct ts_error *err);

/* Streaming: open the response (200, application/connect+json). */
struct ts_stream *ts_connect_stream(struct ts_req *req, void (*on_close)(void *, bool),
				    void *userdata, struct ts_error *err);
/* Write one message envelope (json stolen). */
int ts_connect_send(struct ts_stream *s, json_t *json);
/* The end-stream envelope ({} when code_name is NULL; fmt may then be NULL), then end the
 * stream. When it cannot be queued the stream is aborted instead. */
int ts_connect_end(struct ts_stream *s, const char *code_name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A stream that must fail before its first message: 200 + a lone end-stream envelope. */
int ts_connect_stream_error(struct ts_req *req, const char *code_name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The Connect-Timeout-Ms header in ms (0: none; -1 malformed; "0" gives 1: a deadline
 * already due, as connect-go reads it). */
long long ts_connect_timeout_ms(struct ts_req *req);

/* ProtoJSON: a member by either casing ("exitCode" / "exit_code"). */
json_t *ts_pj_get(json_t *obj, const char *camel, const char *snake);
/* base64 (standard, padded) of bytes; decoding also accepts URL-safe and unpadded. */
json_t *ts_pj_bytes(const void *p, size_t n);
/* A JSON string of s (NULL for NULL), every byte that is not part of valid UTF-8 replaced
 * by U+FFFD, as Go's encoding/json writes it: a file name or a path from the client or the
 * sandbox may be any bytes, and jansson refuses a string that is not UTF-8. */
json_t *ts_pj_text(const char *s);
int ts_pj_bytes_decode(json_t *v, uint8_t **ret, size_t *n);
/* int64 as Go emits it: a string. */
json_t *ts_pj_int64(long long v);
/* Decode an integer given as number or string. -EINVAL otherwise. */
int ts_pj_int(json_t *v, long long *ret);
/* RFC 3339 UTC from ms since the epoch, as protojson writes a Timestamp: "Z", and no or
 * 3 fractional digits ("2024-01-02T03:04:05.123Z"); NULL outside years 1..9999. */
json_t *ts_pj_time(long long ms);
