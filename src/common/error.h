/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdarg.h>

/*
 * The error every fallible function fills. Fixed size, no pointers: it works after
 * fork() and crosses a pipe or socket unchanged (the helper's child writes it to its
 * parent verbatim).
 */
struct ts_error {
	int code;      /* positive errno value, 0 when no error */
	char msg[512]; /* lowercase, no trailing period, names in backticks */
};

/*
 * Set err to (-r, formatted message) and return r, so that callers can write
 * `return ts_err(err, -errno, "open `%s`", p);`. r must be a negative errno value.
 * err may be NULL.
 *
 * These functions never return 0 or a positive value: an error must never read as
 * success to a caller that checks `r < 0`. Given r >= 0 (a caller's bug: a success code
 * passed on, or an errno without its minus), they return a negative errno all the same
 * and record its positive value in err->code: -r for r > 0, else -EIO (ts_err_prefix:
 * else the code already in err, if any). INT_MIN becomes -EIO too.
 */
int ts_err(struct ts_error *err, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* As ts_err, and appends ": strerror(-r)". */
int ts_err_errno(struct ts_error *err, int r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefix the message already in err with context: "context: old message". Returns r (a
 * negative errno, as for ts_err); err->code is set from r when it was 0. */
int ts_err_prefix(struct ts_error *err, int r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Reset err to "no error". */
void ts_err_clear(struct ts_error *err);
