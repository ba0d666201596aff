/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the helper's command line, a trust boundary (in setuid mode the
 * caller is not trusted at all). The input is split at NUL bytes into argv. Checks beyond
 * "no crash, no leak": a refusal is a well-formed error, and an accepted line satisfies
 * what main.c relies on (a root mount first, absolute destinations without `..`, id maps
 * present, a program after `--`). A line of the tree modes (`--copy-tree`,
 * `--scan-protected`) goes to their own parser (src/helper/treeargs.c): an accepted one
 * maps id 0, and a scan is bounded and has basename patterns only.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helper.h"
#include "treeargs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 256
#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x)) {                                                                        \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #x);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void tree_args(int argc, char **argv)
{
	struct ts_helper_ctx ctx;
	struct ts_tree_args a;
	struct ts_error err = { 0 };
	int r = ts_treeargs_parse(argc, argv, &ctx, &a, &err);

	if (r < 0) {
		CHECK(err.code > 0);
		CHECK(memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
		CHECK(err.msg[0] != '\0');
		return;
	}
	CHECK(r == 0);
	CHECK(ctx.n_uid_map >= 1 && ctx.n_uid_map <= TS_HELPER_MAX_IDMAP);
	CHECK(ctx.n_gid_map >= 1 && ctx.n_gid_map <= TS_HELPER_MAX_IDMAP);
	CHECK(ts_helper_id_mapped(ctx.uid_map, ctx.n_uid_map, 0));
	CHECK(ts_helper_id_mapped(ctx.gid_map, ctx.n_gid_map, 0));
	CHECK((a.mode == TS_TREE_SCAN) == !strcmp(argv[1], "--scan-protected"));
	CHECK(a.n_patterns <= TS_TREE_MAX_PATTERNS);
	if (a.mode == TS_TREE_SCAN) {
		CHECK(a.max_entries > 0);
		CHECK(!a.copy.set_owner);
	}
	for (size_t i = 0; i < a.n_patterns; i++)
		CHECK(a.patterns[i][0] && !strchr(a.patterns[i], '/'));
	if (a.copy.set_owner)
		CHECK(a.mode == TS_TREE_COPY &&
		      ts_helper_id_mapped(ctx.uid_map, ctx.n_uid_map, a.copy.owner_uid));
}

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
	if (argc >= 2 &&
	    (!strcmp(argv[1], "--copy-tree") || !strcmp(argv[1], "--scan-protected"))) {
		tree_args(argc, argv);
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
