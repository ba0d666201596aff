/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for what the e2b backend parses of a server's answers (the server is
 * E2B's cloud or anything claiming to be it: untrusted). The first byte sets the piece
 * size the body arrives in (as curl's write callback hands it over); the rest is a
 * response body of Connect envelopes. Every whole envelope's JSON is walked with the
 * ProtoJSON readers the backend uses (ints as strings, enums, base64 bytes, RFC 3339
 * times). Checks: no crash, no leak, an envelope never claims bytes past what was fed,
 * the reassembler holds what it was given and nothing more, decoded base64 is at most
 * 3/4 of its text.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b-wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x)) {                                                                        \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #x);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static const char *const names[] = { "UNSPECIFIED", "FILE", "DIRECTORY", "SYMLINK" };

static void walk(json_t *j, int depth)
{
	const char *k;
	json_t *v;
	size_t i;

	if (depth > 8)
		return;
	if (json_is_string(j)) {
		const char *s = json_string_value(j);
		uint8_t *d = NULL;
		size_t n = 0;
		long long ms, iv;
		int e;

		if (e2b_base64_decode(s, &d, &n) == 0)
			CHECK(n <= strlen(s) / 4 * 3 + 2);
		free(d);
		e2b_time_parse(s, &ms);
		e2b_pj_int(j, &iv);
		e2b_pj_enum(j, "FILE_TYPE_", names, 4, &e);
		e2b_signal_from_status(s);
		e2b_connect_errno(s);
	}
	json_object_foreach(j, k, v) {
		e2b_pj_str(j, k, k, NULL);
		e2b_pj_bool(j, k, NULL);
		walk(e2b_pj_get(j, k, NULL), depth + 1);
	}
	json_array_foreach(j, i, v)
		walk(v, depth + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct e2b_envelopes e = { 0 };
	struct ts_error err = { 0 };
	size_t piece, fed = 0, taken = 0;

	if (size < 1)
		return 0;
	piece = (size_t)data[0] % 64 + 1;
	data++;
	size--;
	while (fed < size) {
		size_t l = size - fed < piece ? size - fed : piece;
		const uint8_t *p;
		size_t pl;
		uint8_t flags;
		int r;

		CHECK(e2b_envelopes_feed(&e, data + fed, l) == 0);
		fed += l;
		while ((r = e2b_envelopes_next(&e, &flags, &p, &pl, &err)) == 1) {
			json_t *j;

			taken += 5 + pl;
			CHECK(taken <= fed);
			CHECK(p >= e.buf && p + pl <= e.buf + e.len);
			j = e2b_json_parse(pl ? (const char *)p : "{}", pl ? pl : 2, &err);
			walk(j, 0);
			json_decref(j);
		}
		CHECK(e2b_envelopes_pending(&e) == fed - taken || r < 0);
		if (r < 0)
			break;
	}
	e2b_envelopes_clear(&e);
	return 0;
}
