/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the subcommands share: finding a sandbox by reference, printing errors. */
#include <stdbool.h>

#include "error.h"
#include "store.h"

/* Print "toren-sandbox CMD: MSG" to stderr. */
void ts_cli_error(const char *cmd, const struct ts_error *err);

/* Open the store and resolve ref (id, name or id prefix). On failure prints the error and
 * returns -errno; on success the caller owns *st (ts_store_close) and rec
 * (ts_sandbox_rec_free). */
int ts_cli_lookup(const char *cmd, const char *ref, struct ts_store **st,
		  struct ts_sandbox_rec *rec);

/* Parse a signal: a number 1..64, or a name with or without SIG. 0 or -EINVAL. */
int ts_cli_parse_signal(const char *s, int *ret);
