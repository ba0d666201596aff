/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A stand-in for the few http.h functions connect.c calls, for unit tests that link
 * connect.c without libmicrohttpd: a request is headers and a body set by the test, and
 * its reply (status, headers, body) or stream (bytes written, ended or aborted) is kept
 * for the test to compare byte for byte.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"

#define FAKE_HEADERS 16

struct ts_stream {
	uint8_t *data;
	size_t len;
	bool ended, aborted;
	void (*on_close)(void *, bool);
	void *userdata;
};

struct ts_req {
	const char *method;
	const char *names[FAKE_HEADERS], *values[FAKE_HEADERS];
	unsigned n_headers;
	const uint8_t *body;
	size_t body_len;

	/* the reply */
	unsigned replies; /* must end as exactly 1 */
	unsigned status;
	char content_type[128];
	uint8_t *reply;
	size_t reply_len;
	char reply_headers[1024]; /* "Name: value\n"... */
	struct ts_stream stream;
	bool streaming;
};

/* A POST with a content type and a body (copied by reference: keep it alive). */
void fake_req_init(struct ts_req *r, const char *content_type, const void *body, size_t len);
void fake_req_header(struct ts_req *r, const char *name, const char *value);
/* Free what the reply holds and make r reusable. */
void fake_req_clear(struct ts_req *r);
