/* SPDX-License-Identifier: Apache-2.0 */
/* The local backend's snapshots: snapshot.h's, and whether a template names one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "local.h"
#include "snapshot.h"

static void to_info(const struct ts_snapshot *s, struct ts_snap_info *i)
{
	memset(i, 0, sizeof(*i));
	snprintf(i->id, sizeof(i->id), "%s", s->id);
	snprintf(i->source, sizeof(i->source), "%s", s->source);
	for (size_t k = 0; k < s->n_names && k < TS_SNAP_INFO_NAMES; k++)
		snprintf(i->names[i->n_names++], sizeof(i->names[0]), "%s", s->names[k]);
	i->created_ms = s->created_ms;
	i->size = s->size;
}

int ts_local_snapshot(struct ts_sb *sb, const struct ts_snap_create_opts *o,
		      struct ts_snap_info *ret, struct ts_error *err)
{
	struct local_sb *s = sb->impl;
	struct ts_snapshot_opts so = { .name = o ? o->name : NULL,
				       .max_bytes = o ? o->max_bytes : 0 };
	struct ts_snapshot snap;
	struct ts_store *st;
	int r = ts_local_store(s->l, &st, err);

	if (r < 0)
		return r;
	/* the pause and resume go over connections of their own */
	ts_local_forget(s->l, s->rec.id);
	r = ts_snapshot_create(st, &s->l->paths, &s->rec, &so, &snap, err);
	if (r < 0)
		return r;
	to_info(&snap, ret);
	ts_snapshot_free(&snap);
	return 0;
}

int ts_local_snap_list(struct ts_backend *b, struct ts_snap_info **ret, size_t *n,
		       struct ts_error *err)
{
	struct local *l = b->impl;
	struct ts_snapshot *v = NULL;
	struct ts_store *st;
	size_t len = 0;
	int r = ts_local_store(l, &st, err);

	if (r < 0 || (r = ts_snapshot_list(st, &v, &len, err)) < 0)
		return r;
	*ret = calloc(len ? len : 1, sizeof(**ret));
	if (!*ret) {
		ts_snapshots_free(v, len);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < len; i++)
		to_info(&v[i], &(*ret)[i]);
	*n = len;
	ts_snapshots_free(v, len);
	return 0;
}

int ts_local_snap_delete(struct ts_backend *b, const char *ref, struct ts_error *err)
{
	struct local *l = b->impl;
	struct ts_store *st;
	int r = ts_local_store(l, &st, err);

	return r < 0 ? r : ts_snapshot_delete(st, &l->paths, ref, err);
}

bool ts_local_is_snapshot(struct local *l, const char *ref)
{
	struct ts_snapshot s;
	struct ts_store *st;
	struct ts_error ignore;
	bool found;

	if (ts_local_store(l, &st, &ignore) < 0)
		return false;
	found = ts_snapshot_get(st, ref, &s, &ignore) == 0;
	ts_snapshot_free(&s);
	return found;
}
