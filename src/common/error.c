/* SPDX-License-Identifier: Apache-2.0 */
#include "error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void __attribute__((format(printf, 3, 0)))
ts_err_vset(struct ts_error *err, int r, const char *fmt, va_list ap)
{
	err->code = r < 0 ? -r : r;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

int ts_err(struct ts_error *err, int r, const char *fmt, ...)
{
	va_list ap;

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

	if (!err)
		return r;
	va_start(ap, fmt);
	ts_err_vset(err, r, fmt, ap);
	va_end(ap);
	n = strlen(err->msg);
	snprintf(err->msg + n, sizeof(err->msg) - n, ": %s", strerror(r < 0 ? -r : r));
	return r;
}

int ts_err_prefix(struct ts_error *err, int r, const char *fmt, ...)
{
	char old[sizeof(err->msg)];
	va_list ap;
	size_t n;

	if (!err)
		return r;
	memcpy(old, err->msg, sizeof(old));
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	n = strlen(err->msg);
	snprintf(err->msg + n, sizeof(err->msg) - n, ": %s", old);
	if (!err->code && r < 0)
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
