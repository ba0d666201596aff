/* SPDX-License-Identifier: Apache-2.0 */
/* The e2b backend's snapshots: E2B's REST API, the wire serve answers (snapshots.h). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "e2b-wire.h"
#include "e2b.h"

#define E2B_SNAP_PAGES_MAX 100 /* pages of GET /snapshots read for one listing */

static int snap_from_json(json_t *j, struct ts_snap_info *i, struct ts_error *err)
{
	json_t *names = json_object_get(j, "names"), *v;
	const char *id = json_string_value(json_object_get(j, "snapshotID"));
	size_t k;

	memset(i, 0, sizeof(*i));
	if (!id || strlen(id) >= sizeof(i->id))
		return ts_err(err, -EPROTO, "snapshot: no snapshotID in the answer");
	snprintf(i->id, sizeof(i->id), "%s", id);
	json_array_foreach(names, k, v) {
		if (json_is_string(v) && i->n_names < TS_SNAP_INFO_NAMES)
			snprintf(i->names[i->n_names++], sizeof(i->names[0]), "%s",
				 json_string_value(v));
	}
	return 0;
}

int e2b_snapshot(struct ts_sb *sb, const struct ts_snap_create_opts *o, struct ts_snap_info *ret,
		 struct ts_error *err)
{
	struct e2b_sb *s = sb->impl;
	struct e2b_resp resp = { 0 };
	_cleanup_free_ char *path = NULL;
	json_t *req = o && o->name ? json_pack("{s:s}", "name", o->name) : json_object(), *j;
	int r;

	if (!req || asprintf(&path, "/sandboxes/%s/snapshots", sb->id) < 0) {
		json_decref(req);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	r = e2b_api(s->t.e, "POST", path, req, &resp, err);
	json_decref(req);
	if (r == 0 && resp.status != 200 && resp.status != 201)
		r = ts_err_prefix(err, e2b_resp_error(&resp, "snapshot", err), "sandbox `%s`",
				  sb->id);
	if (r == 0) {
		j = resp.len ? e2b_json_parse(resp.body, resp.len, err) : NULL;
		r = j ? snap_from_json(j, ret, err) : ts_err(err, -EPROTO, "snapshot: no answer");
		json_decref(j);
		snprintf(ret->source, sizeof(ret->source), "%s", sb->id);
	}
	e2b_resp_clear(&resp);
	return r;
}

int e2b_snap_list(struct ts_backend *b, struct ts_snap_info **ret, size_t *n, struct ts_error *err)
{
	struct e2b *e = b->impl;
	struct ts_snap_info *v = NULL;
	size_t len = 0, cap = 0;
	char token[512] = "";
	int r = 0;

	for (int page = 0; page < E2B_SNAP_PAGES_MAX && r == 0; page++) {
		struct e2b_resp resp = { 0 };
		_cleanup_free_ char *path = NULL, *tok = NULL;
		json_t *arr, *item;
		size_t k;

		if (token[0] && !(tok = e2b_uri_component(token)))
			r = ts_err(err, -ENOMEM, "out of memory");
		if (r == 0 && asprintf(&path, "/snapshots?limit=100%s%s", tok ? "&nextToken=" : "",
				       tok ? tok : "") < 0)
			r = ts_err(err, -ENOMEM, "out of memory");
		if (r == 0)
			r = e2b_api(e, "GET", path, NULL, &resp, err);
		if (r == 0 && resp.status != 200)
			r = e2b_resp_error(&resp, "list snapshots", err);
		arr = r == 0 && resp.len ? e2b_json_parse(resp.body, resp.len, err) : NULL;
		if (r == 0 && !json_is_array(arr))
			r = ts_err(err, -EPROTO, "list snapshots: the answer is not an array");
		json_array_foreach(arr, k, item) {
			if (r < 0)
				break;
			if (len == cap) {
				struct ts_snap_info *nv;

				cap = cap ? cap * 2 : 16;
				nv = realloc(v, cap * sizeof(*v));
				if (!nv) {
					r = ts_err(err, -ENOMEM, "out of memory");
					break;
				}
				v = nv;
			}
			if (snap_from_json(item, &v[len], err) == 0)
				len++;
		}
		json_decref(arr);
		snprintf(token, sizeof(token), "%s", resp.next_token);
		e2b_resp_clear(&resp);
		if (!token[0])
			break;
	}
	if (r < 0) {
		free(v);
		return r;
	}
	*ret = v ? v : calloc(1, sizeof(*v));
	*n = len;
	return *ret ? 0 : ts_err(err, -ENOMEM, "out of memory");
}

int e2b_snap_delete(struct ts_backend *b, const char *ref, struct ts_error *err)
{
	struct e2b *e = b->impl;
	struct e2b_resp resp = { 0 };
	_cleanup_free_ char *path = NULL, *id = e2b_uri_component(ref);
	int r;

	if (!id || asprintf(&path, "/templates/%s", id) < 0)
		return ts_err(err, -ENOMEM, "out of memory");
	r = e2b_api(e, "DELETE", path, NULL, &resp, err);
	if (r == 0 && resp.status == 404)
		r = ts_err(err, -ENOENT, "no snapshot `%.80s`", ref);
	else if (r == 0 && resp.status != 204 && resp.status != 200)
		r = e2b_resp_error(&resp, "delete snapshot", err);
	e2b_resp_clear(&resp);
	return r;
}
