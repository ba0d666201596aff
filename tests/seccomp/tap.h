/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Minimal TAP producer: plan(n) (0: print the plan at the end), ok(), skip(), diag(),
 * done() returns the exit status. stdout is line-buffered so forked children that _exit()
 * never duplicate pending output.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static unsigned int tap_planned, tap_run, tap_failed;

static inline void plan(unsigned int n)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	tap_planned = n;
	if (n)
		printf("1..%u\n", n);
}

__attribute__((format(printf, 2, 3))) static inline bool ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	tap_run++;
	if (!cond)
		tap_failed++;
	printf("%sok %u - ", cond ? "" : "not ", tap_run);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return cond;
}

__attribute__((format(printf, 2, 3))) static inline void skip(const char *reason, const char *fmt,
							      ...)
{
	va_list ap;

	tap_run++;
	printf("ok %u - ", tap_run);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" # SKIP %s\n", reason);
	fflush(stdout);
}

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

static inline int done(void)
{
	if (!tap_planned)
		printf("1..%u\n", tap_run);
	else if (tap_planned != tap_run) {
		diag("planned %u tests, ran %u", tap_planned, tap_run);
		return 1;
	}
	fflush(stdout);
	return tap_failed ? 1 : 0;
}
