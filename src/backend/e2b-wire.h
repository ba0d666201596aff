/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The pure parts of the e2b backend's wire (no I/O): Connect envelopes (encoding one,
 * reassembling a response's from arbitrary pieces), the list query's metadata encoding,
 * ProtoJSON values as Go's envd emits them (int64 as strings, enum names, base64 bytes,
 * RFC 3339 times, either field casing) and E2B's errors mapped onto errnos chosen so that
 * ts_be_code() gives back the class E2B meant (spec §6). Unit-tested in
 * tests/backend/test-e2b-wire.c.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define E2B_ENVELOPE_MAX (16U << 20) /* one response envelope: more is a broken stream */
#define E2B_BODY_MAX (4U << 20)	     /* one unary or REST answer */

#define E2B_FLAG_COMPRESSED 0x01
#define E2B_FLAG_END 0x02

/* One request envelope: flags 0, big-endian length, payload. *ret is malloc'd. */
int e2b_envelope_encode(const void *payload, size_t len, uint8_t **ret, size_t *ret_len,
			struct ts_error *err);

/* Reassembles envelopes from a response body that arrives in pieces of any size. */
struct e2b_envelopes {
	uint8_t *buf;
	size_t len, cap, off; /* bytes [off, len) not yet consumed */
};
/* Append bytes as they came. -ENOMEM. */
int e2b_envelopes_feed(struct e2b_envelopes *e, const void *data, size_t len);
/* The next whole envelope: 1 with *flags and the payload (valid until the next feed or
 * next call), 0 when incomplete, -EPROTO for a compressed or oversized one. */
int e2b_envelopes_next(struct e2b_envelopes *e, uint8_t *flags, const uint8_t **payload,
		       size_t *len, struct ts_error *err);
/* Bytes held that are not a whole envelope yet (a stream that ends with some is cut). */
size_t e2b_envelopes_pending(const struct e2b_envelopes *e);
void e2b_envelopes_clear(struct e2b_envelopes *e);

/* encodeURIComponent: everything but A-Z a-z 0-9 - _ . ! ~ * ' ( ) as %XX. */
char *e2b_uri_component(const char *s);
/* The list query's `metadata` value as the SDK sends it (spec §2): each key and value
 * URI-encoded, joined as form data (k=v&k=v), then URI-encoded as a whole. The caller
 * appends it after `metadata=`. NULL on ENOMEM. */
char *e2b_metadata_query(const char *const *keys, const char *const *values, size_t n);

/* Is envd's version (semver) older than major.minor.patch? "" (not reported): no. */
bool e2b_envd_older(const char *version, unsigned major, unsigned minor, unsigned patch);

/* base64: standard alphabet with padding out; decoding takes standard or URL-safe,
 * padded or not. *ret malloc'd (NUL-terminated for the encoder). -EINVAL, -ENOMEM. */
int e2b_base64_encode(const void *data, size_t len, char **ret);
int e2b_base64_decode(const char *s, uint8_t **ret, size_t *len);
/* The value of `Authorization: Basic base64("<user>:")` (envd's per-call user). */
int e2b_basic_user(const char *user, char *buf, size_t len);

/* ProtoJSON input: a member by lowerCamelCase or proto name. */
json_t *e2b_pj_get(json_t *obj, const char *camel, const char *snake);
/* An integer given as a number or a decimal string (Go's int64); missing (NULL) is 0.
 * -EINVAL for anything else. */
int e2b_pj_int(json_t *v, long long *ret);
/* A string member, or def when missing or not a string. */
const char *e2b_pj_str(json_t *obj, const char *camel, const char *snake, const char *def);
/* A bool member (missing: false). */
bool e2b_pj_bool(json_t *obj, const char *camel, const char *snake);
/* An enum given by name (with or without the prefix, e.g. "FILE_TYPE_FILE" or "FILE") or
 * number, looked up in names[] (index = value; NULL holes); -EINVAL when unknown. */
int e2b_pj_enum(json_t *v, const char *prefix, const char *const *names, size_t n, int *ret);
/* An RFC 3339 time ("2024-01-02T03:04:05.123456789Z", offsets allowed) in ms since the
 * epoch. -EINVAL when malformed. */
int e2b_time_parse(const char *s, long long *ret_ms);

/* Parse JSON text (bounded depth); NULL with err on failure. */
json_t *e2b_json_parse(const void *text, size_t len, struct ts_error *err);

/*
 * Errors. errnos are chosen so that ts_be_code() round-trips (backend.c): not_found
 * ENOENT, invalid_argument EINVAL, deadline_exceeded ETIMEDOUT, unauthenticated
 * EKEYREJECTED, permission_denied EACCES, resource_exhausted EAGAIN, already_exists
 * EEXIST, unavailable EHOSTDOWN, unimplemented EOPNOTSUPP, canceled ETIME, ...
 */
/* A Connect error code by name ("not_found"; also the names of ts_be_code_name). */
int e2b_connect_errno(const char *code);
/* A Connect error whose body is not Connect JSON: derived from the HTTP status as the JS
 * SDK does (404 unimplemented, 502/503/504 unavailable, ...). */
int e2b_connect_http_errno(long status);
/* An error of the control plane, /files or /health by HTTP status (or the JSON body's
 * integer code, which the SDK prefers). */
int e2b_rest_errno(long status);

/* A Go ProcessState string ("exit status 1", "signal: killed") as a signal number (0 when
 * it names none). */
int e2b_signal_from_status(const char *status);
