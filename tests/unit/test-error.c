/* SPDX-License-Identifier: Apache-2.0 */
/*
 * struct ts_error and its setters (src/common/error.h): an error never reads as success.
 * Given r >= 0 (a caller's bug), ts_err, ts_err_errno and ts_err_prefix still return a
 * negative errno and record it, with or without an err to fill.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "error.h"
#include "tap.h"

int main(void)
{
	struct ts_error err = { 0 };
	int r;

	plan(0);

	/* controls: a negative errno passes through unchanged */
	r = ts_err(&err, -ENOENT, "open `%s`", "x");
	ok(r == -ENOENT && err.code == ENOENT && !strcmp(err.msg, "open `x`"),
	   "ts_err: -ENOENT returned and recorded (%d, %d, %s)", r, err.code, err.msg);
	r = ts_err_errno(&err, -EACCES, "open `%s`", "x");
	ok(r == -EACCES && err.code == EACCES && strstr(err.msg, strerror(EACCES)),
	   "ts_err_errno: -EACCES returned, strerror appended (%s)", err.msg);
	r = ts_err_prefix(&err, -EACCES, "sandbox `%s`", "a");
	ok(r == -EACCES && err.code == EACCES && !strncmp(err.msg, "sandbox `a`: open `x`", 21),
	   "ts_err_prefix: -EACCES returned, context prefixed (%s)", err.msg);

	/* r == 0: -EIO, never 0 */
	ts_err_clear(&err);
	r = ts_err(&err, 0, "something failed");
	ok(r == -EIO && err.code == EIO, "ts_err(0) returns -EIO and records EIO (%d, %d)", r,
	   err.code);
	ts_err_clear(&err);
	r = ts_err_errno(&err, 0, "read `%s`", "y");
	ok(r == -EIO && err.code == EIO && strstr(err.msg, strerror(EIO)),
	   "ts_err_errno(0) returns -EIO, says why (%s)", err.msg);
	ts_err_clear(&err);
	r = ts_err_prefix(&err, 0, "context");
	ok(r == -EIO && err.code == EIO, "ts_err_prefix(0) on an empty err returns -EIO (%d, %d)",
	   r, err.code);
	ts_err(&err, -ENOSPC, "write");
	r = ts_err_prefix(&err, 0, "context");
	ok(r == -ENOSPC && err.code == ENOSPC && !strcmp(err.msg, "context: write"),
	   "ts_err_prefix(0) returns the code err already holds (%d, %s)", r, err.msg);

	/* r > 0: an errno without its minus */
	r = ts_err(&err, EPERM, "positive");
	ok(r == -EPERM && err.code == EPERM, "ts_err(EPERM) returns -EPERM (%d, %d)", r, err.code);
	r = ts_err_errno(&err, ENOENT, "positive");
	ok(r == -ENOENT && err.code == ENOENT && strstr(err.msg, strerror(ENOENT)),
	   "ts_err_errno(ENOENT) returns -ENOENT (%s)", err.msg);
	r = ts_err_prefix(&err, EBUSY, "context");
	ok(r == -EBUSY, "ts_err_prefix(EBUSY) returns -EBUSY (%d)", r);

	/* INT_MIN has no positive errno */
	r = ts_err(&err, INT_MIN, "min");
	ok(r == -EIO && err.code == EIO, "ts_err(INT_MIN) returns -EIO (%d, %d)", r, err.code);

	/* without an err to fill, the same return values */
	ok(ts_err(NULL, 0, "x") == -EIO, "ts_err(NULL, 0) returns -EIO");
	ok(ts_err_errno(NULL, 0, "x") == -EIO, "ts_err_errno(NULL, 0) returns -EIO");
	ok(ts_err_prefix(NULL, 0, "x") == -EIO, "ts_err_prefix(NULL, 0) returns -EIO");
	ok(ts_err(NULL, EINVAL, "x") == -EINVAL, "ts_err(NULL, EINVAL) returns -EINVAL");
	ok(ts_err(NULL, -ENOMEM, "x") == -ENOMEM, "ts_err(NULL, -ENOMEM) returns -ENOMEM");
	return done();
}
