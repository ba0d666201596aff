/* SPDX-License-Identifier: Apache-2.0 */
#include "error.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* r as the negative errno an error returns (see error.h): never 0 or positive. */
static int err_r(int r, int fallback)
{
	if (r < 0 && r != INT_MIN)
		return r;
	if (r > 0)
		return -r;
	return fallback;
}

static void __attribute__((format(printf, 3, 0)))
ts_err_vset(struct ts_error *err, int r, const char *fmt, va_list ap)
{
	err->code = -r;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

int ts_err(struct ts_error *err, int r, const char *fmt, ...)
{
	va_list ap;

	r = err_r(r, -EIO);
	if (!err)
		return r;
	va_start(ap, fmt);
	ts_err_vset(err, r, fmt, ap);
	va_end(ap);
	return r;
}

int ts_err_errno(struct ts_error *err, int r, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	r = err_r(r, -EIO);
	if (!err)
		return r;
	va_start(ap, fmt);
	ts_err_vset(err, r, fmt, ap);
	va_end(ap);
	n = strlen(err->msg);
	snprintf(err->msg + n, sizeof(err->msg) - n, ": %s", strerror(-r));
	return r;
}

int ts_err_prefix(struct ts_error *err, int r, const char *fmt, ...)
{
	char old[sizeof(err->msg)];
	va_list ap;
	size_t n;

	if (!err)
		return err_r(r, -EIO);
	r = err_r(r, err->code > 0 ? -err->code : -EIO);
	memcpy(old, err->msg, sizeof(old));
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	n = strlen(err->msg);
	snprintf(err->msg + n, sizeof(err->msg) - n, ": %s", old);
	if (!err->code)
		err->code = -r;
	return r;
}

void ts_err_clear(struct ts_error *err)
{
	if (!err)
		return;
	err->code = 0;
	err->msg[0] = '\0';
}
