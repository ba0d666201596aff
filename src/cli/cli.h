/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the subcommands share: finding a sandbox by reference, printing errors. */
#include <stdbool.h>

#include "error.h"
#include "store.h"

/* Print "toren-sandbox CMD: MSG" to stderr. */
void ts_cli_error(const char *cmd, const struct ts_error *err);

/* Is a `--label KEY=VALUE` well formed (ts_label_valid)? If not, say why on stderr. */
bool ts_cli_label_ok(const char *cmd, const char *kv);

/* Open the store and resolve ref (id, name or id prefix). On failure prints the error and
 * returns -errno; on success the caller owns *st (ts_store_close) and rec
 * (ts_sandbox_rec_free). */
int ts_cli_lookup(const char *cmd, const char *ref, struct ts_store **st,
		  struct ts_sandbox_rec *rec);

/*
 * `toren-sandbox CMD ID...`: print usage for --help or no argument, then apply fn to every
 * sandbox named (looked up, then its record saved by fn as it sees fit). Returns the exit
 * status: 0, 1 when any failed, 2 on usage errors.
 */
int ts_cli_each(int argc, char **argv, const char *cmd,
		int (*fn)(struct ts_store *st, struct ts_sandbox_rec *rec, struct ts_error *err));

/* Open the backend (TOREN_SANDBOX, or --backend); on failure print it and return -errno. */
struct ts_backend;
int ts_cli_backend(const char *cmd, struct ts_backend **ret);

/* Parse a signal: a number 1..64, or a name with or without SIG. 0 or -EINVAL. */
int ts_cli_parse_signal(const char *s, int *ret);
