/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the tokens file parser (src/server/tokens.c). Beyond "no crash, no
 * leak": an error is -EINVAL or -EFBIG with a message naming the origin and leaves no
 * object; a success holds at most TS_TOKENS_MAX tokens, is configured (not empty), and
 * answers a check of any secret with 0, -EACCES or -EPERM only.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokens.h"

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
	static const char *const scopes[] = { NULL, TS_SCOPE_SANDBOXES_READ, TS_SCOPE_SANDBOXES_RUN,
					      TS_SCOPE_FILES_READ, TS_SCOPE_FILES_WRITE };
	struct ts_error err = { 0 };
	struct ts_tokens *t = NULL;
	char secret[80];
	int r = ts_tokens_parse((const char *)data, size, "fuzz", &t, &err);

	if (r < 0) {
		CHECK(r == -EINVAL || r == -EFBIG || r == -ENOMEM);
		CHECK(!t);
		CHECK(err.code == -r && strstr(err.msg, "`fuzz`"));
		return 0;
	}
	CHECK(t && !ts_tokens_empty(t) && ts_tokens_count(t) <= TS_TOKENS_MAX);
	/* the input's first line as a secret, and a fixed one */
	snprintf(secret, sizeof(secret), "%.*s", (int)strcspn((const char *)data, "\n"),
		 (const char *)data);
	for (size_t i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
		const char *name = NULL;

		r = ts_tokens_check_name(t, secret, scopes[i], &name, &err);
		CHECK(r == 0 || r == -EACCES || r == -EPERM);
		CHECK(r != 0 || (name && *name));
		r = ts_tokens_check(t, "abc", scopes[i], &err);
		CHECK(r == 0 || r == -EACCES || r == -EPERM);
	}
	ts_tokens_free(t);
	return 0;
}
