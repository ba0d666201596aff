/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the helper's command line, a trust boundary (in setuid mode the
 * caller is not trusted at all). The input is split at NUL bytes into argv. Checks beyond
 * "no crash, no leak": a refusal is a well-formed error, and an accepted line satisfies
 * what main.c relies on (a root mount first, absolute destinations without `..`, id maps
 * present, a program after `--`).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helper.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 256
#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x)) {                                                                        \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #x);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *argv[MAX_ARGS + 2];
	struct ts_helper_ctx ctx;
	struct ts_error err = { 0 };
	int argc = 1, r;

	if (size > 65536)
		return 0;
	buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	argv[0] = "toren-sandbox-helper";
	for (size_t i = 0; i <= size && argc < MAX_ARGS;) {
		argv[argc++] = buf + i;
		i += strlen(buf + i) + 1;
	}
	argv[argc] = NULL;
	/* --help and --version print and exit(0): not a parser path worth a process exit */
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "--version")) {
			free(buf);
			return 0;
		}
	r = ts_helper_parse_args(&ctx, argc, argv, &err);
	if (r < 0) {
		CHECK(err.code > 0);
		CHECK(memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
		CHECK(err.msg[0] != '\0');
	} else {
		CHECK(r == 0);
		CHECK(ctx.n_ops > 0 && !strcmp(ctx.ops[0].dest, "/"));
		for (size_t i = 0; i < ctx.n_ops; i++) {
			CHECK(ctx.ops[i].dest[0] == '/');
			CHECK(!strstr(ctx.ops[i].dest, "/../") &&
			      strcmp(ctx.ops[i].dest + strlen(ctx.ops[i].dest) -
					     (strlen(ctx.ops[i].dest) >= 3 ? 3 : 0),
				     "/.."));
			CHECK(ctx.ops[i].n_lowers <= TS_HELPER_MAX_LOWERS);
		}
		CHECK(ctx.n_uid_map >= 1 && ctx.n_uid_map <= TS_HELPER_MAX_IDMAP);
		CHECK(ctx.n_gid_map >= 1 && ctx.n_gid_map <= TS_HELPER_MAX_IDMAP);
		for (size_t i = 0; i < ctx.n_uid_map; i++)
			CHECK(ctx.uid_map[i].count > 0);
		CHECK(ctx.argv && ctx.argv[0]);
		CHECK(ctx.n_rlimits <= TS_HELPER_MAX_RLIMITS);
		for (size_t i = 0; i < ctx.n_env; i++)
			CHECK(strchr(ctx.envp[i], '='));
	}
	ts_helper_ctx_free(&ctx);
	free(buf);
	return 0;
}
