/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for what the name proxy reads from a sandbox (src/proxy/parse.c):
 * the request head and the TLS ClientHello, plus the allow-list pattern parser
 * (src/common/hostpat.c) on the same bytes. Beyond "no crash": a head length is 0, -E2BIG
 * or within the input and ends with CRLFCRLF; a parsed request has a normalised host
 * that a pattern of itself matches and a port 1..65535; a ClientHello result is 0,
 * -EAGAIN, -EINVAL or -E2BIG, a parsed SNI fits its buffer, and one holding a NUL is
 * refused by the normaliser the proxy compares with.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostpat.h"
#include "parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x)) {                                                                        \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #x);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ts_proxy_req req;
	struct ts_tls_hello hello;
	struct ts_hostpat hp;
	char why[256], *text;
	long hl = ts_proxy_head_len((const char *)data, size);
	int r;

	CHECK(hl == 0 || hl == -E2BIG || (hl >= 4 && (size_t)hl <= size));
	if (hl > 0) {
		CHECK(!memcmp(data + hl - 4, "\r\n\r\n", 4));
		r = ts_proxy_parse_request((const char *)data, (size_t)hl, &req, why, sizeof(why));
		CHECK(r == 0 || r == -EINVAL);
		if (r == 0) {
			struct ts_hostpat self;
			char w2[256];

			CHECK(req.port >= 1 && req.port <= 65535);
			CHECK(strlen(req.host) <= TS_HOSTNAME_MAX);
			CHECK(ts_hostpat_parse(req.host, &self, w2, sizeof(w2)) == 0);
			/* a name allows 443 (and 80) */
			CHECK(ts_hostpat_match(&self, req.host, 443));
		} else {
			CHECK(why[0]);
		}
	}
	r = ts_proxy_parse_hello(data, size, &hello);
	CHECK(r == 0 || r == -EAGAIN || r == -EINVAL || r == -E2BIG);
	if (r == 0 && hello.has_sni) {
		char norm[TS_HOSTNAME_MAX + 1];

		CHECK(hello.sni_len > 0 && hello.sni_len < sizeof(hello.sni));
		/* the wire's name may hold a NUL: the proxy compares it normalised by its
		 * length, which refuses any byte a host name cannot have */
		if (memchr(hello.sni, '\0', hello.sni_len))
			CHECK(ts_hostname_normalize(hello.sni, hello.sni_len, norm) < 0);
	}
	(void)ts_proxy_is_tls(data, size);
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	r = ts_hostpat_parse(text, &hp, why, sizeof(why));
	CHECK(r == 0 || (r < 0 && why[0]));
	free(text);
	return 0;
}
