/* SPDX-License-Identifier: Apache-2.0 */
/* The `none` backend: every call fails, saying how to enable a backend. */
#include "backend-impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct none {
	char why[256];
};

static int refuse(const struct none *n, struct ts_error *err)
{
	return ts_err(err, -EOPNOTSUPP,
		      "no sandbox backend (%s): set TOREN_SANDBOX=local to run sandboxes on "
		      "this machine, or TOREN_SANDBOX=auto",
		      n->why);
}

static struct none *of(struct ts_backend *b)
{
	return b->impl;
}

static void none_free(struct ts_backend *b)
{
	free(b->impl);
}

static int none_create(struct ts_backend *b, const struct ts_sb_create_opts *o, struct ts_sb *sb,
		       struct ts_error *err)
{
	return refuse(of(b), err);
}

static int none_connect(struct ts_backend *b, const char *id, long long timeout_ms, bool start,
			struct ts_sb *sb, struct ts_error *err)
{
	return refuse(of(b), err);
}

static int none_list(struct ts_backend *b, const struct ts_sb_list_opts *o, struct ts_sb_info **ret,
		     size_t *n, char **next_token, struct ts_error *err)
{
	return refuse(of(b), err);
}

/* No sandbox handle can exist on this backend: the per-sandbox ops are never reached. */
static const struct ts_backend_ops none_ops = {
	.name = "none",
	.free = none_free,
	.sb_create = none_create,
	.sb_connect = none_connect,
	.sb_list = none_list,
};

int ts_backend_none_open(struct ts_backend *b, const char *why, struct ts_error *err)
{
	struct none *n = calloc(1, sizeof(*n));

	if (!n)
		return ts_err(err, -ENOMEM, "out of memory");
	snprintf(n->why, sizeof(n->why), "%s", why);
	b->ops = &none_ops;
	b->impl = n;
	return 0;
}
