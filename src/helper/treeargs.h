/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The command line of the helper's tree modes (copytree.h): `--copy-tree [--remove]` and
 * `--scan-protected`, both run as root of a user namespace mapped like a sandbox. Its
 * own file so that the argument fuzzer (tests/fuzz/fuzz-helper-args.c) reaches it
 * without the namespace code.
 */
#include <stdint.h>

#include "../lib/treecopy.h"
#include "helper.h"

/* Patterns a --scan-protected line may carry: a policy's list, with room to spare. */
#define TS_TREE_MAX_PATTERNS 1024

enum ts_tree_mode {
	TS_TREE_COPY,	/* --copy-tree: copy fd 3 into fd 4 */
	TS_TREE_REMOVE, /* --copy-tree --remove: empty fd 3 */
	TS_TREE_SCAN,	/* --scan-protected: protected paths of fd 3, written to fd 4 */
};

struct ts_tree_args {
	enum ts_tree_mode mode;
	struct ts_treecopy copy; /* TS_TREE_COPY, TS_TREE_REMOVE */
	/* TS_TREE_SCAN: fnmatch(3) patterns of basenames (pointers into argv), the walk's
	 * bound and TS_PROTECT_* flags (--aliases) */
	char *patterns[TS_TREE_MAX_PATTERNS];
	size_t n_patterns;
	uint64_t max_entries;
	unsigned scan_flags;
};

/*
 * Parse argv (argv[1] is `--copy-tree` or `--scan-protected`) into ctx's id maps and a.
 * Refuses options of the other mode, maps without an id 0 inside (the worker becomes
 * it), an --owner the maps do not map, and patterns that are empty, hold a `/` or are
 * longer than NAME_MAX. 0 or -EINVAL, -E2BIG with err set.
 */
int ts_treeargs_parse(int argc, char **argv, struct ts_helper_ctx *ctx, struct ts_tree_args *a,
		      struct ts_error *err);
