/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for serve's Connect codec (src/server/connect.c), the first thing an
 * envd request body meets. The first input byte picks the call (bit 0: streaming or
 * unary; bit 1: also Connect-Timeout-Ms from the next 11 bytes), the rest is the body,
 * handed over through tests/server/fake-http.c. Checks: a request either parses into a
 * JSON object with no reply sent, or gets exactly one reply: a unary one is a JSON
 * {"code","message"} with the Connect status of its code (or 405/415 without a body), a
 * streaming one is 200 and exactly one end-stream envelope whose length is right and
 * whose payload is {"error":{"code","message"}}. Then base64: whatever decodes,
 * re-encoded and decoded again, gives the same bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect.h"
#include "fake-http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x)) {                                                                        \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #x);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* connect.c's one call into the backend library, which this harness does not link
 * (ts_connect_reply_be_error is not reached from a request). */
enum ts_be_code ts_be_code(const struct ts_error *err)
{
	return err && err->code ? TS_BE_INTERNAL : TS_BE_OK;
}

static void check_error_object(json_t *e, unsigned *status)
{
	json_t *code = json_object_get(e, "code"), *msg = json_object_get(e, "message");

	CHECK(json_is_object(e) && json_object_size(e) == 2);
	CHECK(json_is_string(code) && json_is_string(msg));
	*status = ts_connect_http_status(json_string_value(code));
}

static void check_request(const uint8_t *data, size_t size)
{
	bool streaming = size && (data[0] & 1);
	char timeout[12] = "";
	struct ts_req r;
	json_t *v, *j;
	unsigned status = 0;

	if (size && (data[0] & 2) && size >= 12) {
		memcpy(timeout, data + 1, 11);
		timeout[11] = '\0';
		data += 11;
		size -= 11;
	}
	if (size) {
		data++;
		size--;
	}
	fake_req_init(&r, streaming ? "application/connect+json" : "application/json", data, size);
	if (timeout[0])
		fake_req_header(&r, "Connect-Timeout-Ms", timeout);
	v = ts_connect_request(&r, streaming);
	if (v) {
		CHECK(json_is_object(v) && r.replies == 0);
		json_decref(v);
		fake_req_clear(&r);
		return;
	}
	CHECK(r.replies == 1 && !r.streaming);
	if (!streaming) {
		if (r.status == 405 || r.status == 415) {
			CHECK(r.reply_len == 0);
		} else {
			CHECK(!strcmp(r.content_type, "application/json"));
			j = json_loadb((const char *)r.reply, r.reply_len, 0, NULL);
			check_error_object(j, &status);
			CHECK(status == r.status);
			json_decref(j);
		}
	} else {
		CHECK(r.status == 200 && !strcmp(r.content_type, "application/connect+json"));
		CHECK(r.reply_len >= 5 && r.reply[0] == 0x02);
		CHECK(((size_t)r.reply[1] << 24 | (size_t)r.reply[2] << 16 |
		       (size_t)r.reply[3] << 8 | r.reply[4]) == r.reply_len - 5);
		j = json_loadb((const char *)r.reply + 5, r.reply_len - 5, 0, NULL);
		CHECK(json_is_object(j) && json_object_size(j) == 1);
		check_error_object(json_object_get(j, "error"), &status);
		json_decref(j);
	}
	fake_req_clear(&r);
}

static void check_base64(const uint8_t *data, size_t size)
{
	json_t *s = json_stringn_nocheck((const char *)data, size), *again;
	uint8_t *out = NULL, *back = NULL;
	size_t n = 0, m = 0;

	if (!s)
		return;
	if (ts_pj_bytes_decode(s, &out, &n) == 0) {
		CHECK(n <= size / 4 * 3 + 2);
		again = ts_pj_bytes(out, n);
		CHECK(again && json_string_length(again) == (n + 2) / 3 * 4);
		CHECK(ts_pj_bytes_decode(again, &back, &m) == 0 && m == n &&
		      (n == 0 || !memcmp(out, back, n)));
		json_decref(again);
	}
	free(out);
	free(back);
	json_decref(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_request(data, size);
	check_base64(data, size);
	return 0;
}
