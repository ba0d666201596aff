/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A minimal TAP producer for `meson test` (protocol : 'tap'). Header-only:
 *
 *   plan(3);
 *   ok(r == 0, "load `%s`", path);
 *   skip(1, "needs root");
 *   diag("got %d", r);
 *   return exit_status();
 */

#include <stdarg.h>
#include <stdio.h>

static int tap_n;
static int tap_failed;

static inline void plan(int n)
{
	printf("1..%d\n", n);
	fflush(stdout);
}

__attribute__((format(printf, 2, 3))) static inline int ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		tap_failed++;
	return cond;
}

static inline void skip(int n, const char *why)
{
	while (n-- > 0)
		printf("ok %d # SKIP %s\n", ++tap_n, why);
	fflush(stdout);
}

/* A comment line: shown by `meson test -v`, ignored by the TAP parser. */
__attribute__((format(printf, 1, 2))) static inline void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* main()'s return value: 0 when every test passed, 1 otherwise. */
static inline int exit_status(void)
{
	return tap_failed != 0;
}
