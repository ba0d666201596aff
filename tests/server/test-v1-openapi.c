/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OpenAPI document served at /v1/openapi.json (the bytes compiled into serve) against
 * the route table ts_v1_routes: every route is a path+method of the document and every
 * path+method of the document is a route, both directions, once each; the document is
 * OpenAPI 3.1 and every local $ref in it resolves.
 */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "server.h"
#include "tap.h"
#include "v1.h"

static const char *const methods[] = { "get",	"put",	"post",	   "delete",
				       "patch", "head", "options", "trace" };

/* "/v1/sandboxes/{id}/files" -> "/v1/sandboxes/ * /files" (http.h's pattern, no spaces) */
static void to_pattern(const char *path, char *buf, size_t size)
{
	size_t n = 0;

	for (const char *p = path; *p && n + 2 < size; p++) {
		if (*p == '{') {
			const char *e = strchr(p, '}');

			buf[n++] = '*';
			p = e ? e : p + strlen(p) - 1;
			continue;
		}
		buf[n++] = *p;
	}
	buf[n] = '\0';
}

static int route_count(const char *method, const char *pattern)
{
	int n = 0;

	for (const struct ts_route *r = ts_v1_routes; r->pattern; r++)
		if (r->method && !strcasecmp(r->method, method) && !strcmp(r->pattern, pattern))
			n++;
	return n;
}

/* Resolve "#/a/b" in doc (JSON pointer, ~0 ~1 escapes). */
static json_t *resolve(json_t *doc, const char *ref)
{
	char seg[256];
	json_t *cur = doc;

	if (strncmp(ref, "#/", 2))
		return NULL;
	ref += 2;
	while (cur && *ref) {
		size_t n = 0;

		while (*ref && *ref != '/' && n + 1 < sizeof(seg)) {
			if (ref[0] == '~' && ref[1] == '1') {
				seg[n++] = '/';
				ref += 2;
			} else if (ref[0] == '~' && ref[1] == '0') {
				seg[n++] = '~';
				ref += 2;
			} else
				seg[n++] = *ref++;
		}
		seg[n] = '\0';
		if (*ref == '/')
			ref++;
		cur = json_object_get(cur, seg);
	}
	return cur;
}

static void check_refs(json_t *doc, json_t *v, unsigned *n, unsigned *bad)
{
	const char *k;
	json_t *c;
	size_t i;

	if (json_is_object(v)) {
		json_object_foreach(v, k, c) {
			if (!strcmp(k, "$ref") && json_is_string(c)) {
				(*n)++;
				if (!resolve(doc, json_string_value(c))) {
					(*bad)++;
					diag("unresolved $ref `%s`", json_string_value(c));
				}
			} else
				check_refs(doc, c, n, bad);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, c)
			check_refs(doc, c, n, bad);
	}
}

int main(void)
{
	json_error_t jerr;
	json_t *doc = json_loadb(ts_v1_openapi_json, ts_v1_openapi_json_len, 0, &jerr), *paths,
	       *item;
	const char *path;
	unsigned routes = 0, ops = 0, refs = 0, bad_refs = 0;

	plan(0);
	if (!ok(doc != NULL, "the embedded document is JSON (%s)", doc ? "" : jerr.text))
		return done();
	ok(json_is_string(json_object_get(doc, "openapi")) &&
		   !strncmp(json_string_value(json_object_get(doc, "openapi")), "3.1.", 4),
	   "it is OpenAPI 3.1");
	ok(strlen(ts_v1_openapi_json) == ts_v1_openapi_json_len, "its length is the array's");
	paths = json_object_get(doc, "paths");
	ok(json_is_object(paths) && json_object_size(paths) > 0, "it has paths");

	/* routes -> document */
	for (const struct ts_route *r = ts_v1_routes; r->pattern; r++) {
		char lower[16], pat[512];
		bool found = false;
		size_t i;

		if (!r->method) /* the /v1 fallback (404/405 in /v1's shape): not an operation */
			continue;
		routes++;
		for (i = 0; r->method[i] && i + 1 < sizeof(lower); i++)
			lower[i] = (char)tolower((unsigned char)r->method[i]);
		lower[i] = '\0';
		json_object_foreach(paths, path, item) {
			to_pattern(path, pat, sizeof(pat));
			if (!strcmp(pat, r->pattern) && json_object_get(item, lower))
				found = true;
		}
		ok(found, "route %s %s is in the document", r->method, r->pattern);
		ok(route_count(r->method, r->pattern) == 1, "route %s %s is in the table once",
		   r->method, r->pattern);
	}

	/* document -> routes */
	json_object_foreach(paths, path, item) {
		char pat[512];

		to_pattern(path, pat, sizeof(pat));
		for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
			json_t *op = json_object_get(item, methods[m]);

			if (!op)
				continue;
			ops++;
			ok(route_count(methods[m], pat) == 1, "operation %s %s is a route",
			   methods[m], path);
			ok(json_is_object(json_object_get(op, "responses")) &&
				   json_is_string(json_object_get(op, "operationId")),
			   "operation %s %s has an operationId and responses", methods[m], path);
		}
	}
	ok(routes == ops && routes > 0, "as many routes as operations (%u, %u)", routes, ops);

	check_refs(doc, doc, &refs, &bad_refs);
	ok(refs > 0 && bad_refs == 0, "every $ref resolves (%u of %u bad)", bad_refs, refs);

	/* the last entry takes every other /v1 path, so that nothing under /v1 answers in
	 * another API's error shape */
	{
		const struct ts_route *last = NULL;

		for (const struct ts_route *r = ts_v1_routes; r->pattern; r++)
			last = r;
		ok(last && !last->method && !strcmp(last->pattern, "/v1/**"),
		   "the table ends with the /v1 fallback");
	}
	json_decref(doc);
	return done();
}
