/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A minimal TAP producer for `meson test` (protocol : 'tap'). Header-only:
 *
 *   plan(3);                        plan(0): the plan is printed by done() at the end
 *   ok(r == 0, "load `%s`", path);
 *   skip(1, "needs root");          or skip_case("needs root", "case %s", name)
 *   diag("got %d", r);
 *   return exit_status();           or done(), which also checks the plan
 *
 * stdout is line-buffered, so forked children that _exit() never repeat pending output.
 */

#include <stdarg.h>
#include <stdio.h>

static int tap_n;
static int tap_failed;
static int tap_planned;

static inline void plan(int n)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	tap_planned = n;
	if (n)
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

/* One skipped case with a description of its own. */
__attribute__((format(printf, 2, 3))) static inline void skip_case(const char *why, const char *fmt,
								   ...)
{
	va_list ap;

	printf("ok %d - ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" # SKIP %s\n", why);
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

/* As exit_status(), after printing a deferred plan (plan(0)) or checking a given one. */
static inline int done(void)
{
	if (!tap_planned) {
		printf("1..%d\n", tap_n);
	} else if (tap_planned != tap_n) {
		diag("planned %d tests, ran %d", tap_planned, tap_n);
		return 1;
	}
	fflush(stdout);
	return exit_status();
}
