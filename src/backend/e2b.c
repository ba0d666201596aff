/* SPDX-License-Identifier: Apache-2.0 */
/* The e2b backend: configuration as the SDK reads it, the ops table, the control plane. */
#include "e2b.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cleanup.h"
#include "util.h"

/* E2B's own domains are served through one proxy host (spec §1.2, rule 3). */
static const char *const proxied_domains[] = { "e2b.app", "e2b.dev", "e2b.pro", "e2b-staging.dev" };

static struct e2b *of(struct ts_backend *b)
{
	return b->impl;
}

static struct e2b_sb *sbi(struct ts_sb *sb)
{
	return sb->impl;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* Trailing slashes go: every path is appended with its own. */
static int set_url(char *buf, size_t len, const char *v, const char *what, struct ts_error *err)
{
	size_t n;

	if (strncmp(v, "http://", 7) && strncmp(v, "https://", 8))
		return ts_err(err, -EINVAL, "%s `%.200s`: want an http:// or https:// URL", what,
			      v);
	if ((size_t)snprintf(buf, len, "%s", v) >= len)
		return ts_err(err, -ENAMETOOLONG, "%s is longer than %zu bytes", what, len - 1);
	n = strlen(buf);
	while (n > 8 && buf[n - 1] == '/')
		buf[--n] = '\0';
	return 0;
}

static void e2b_free(struct ts_backend *b)
{
	struct e2b *e = of(b);

	if (!e)
		return;
	if (e->share)
		e->C->share_cleanup(e->share);
	free(e);
}

/* --- sandboxes --------------------------------------------------------------------- */

int e2b_envd_url(struct e2b *e, const char *id, const char *dom, char *buf, size_t len,
		 struct ts_error *err)
{
	bool proxied = false;

	if (e->sandbox_url[0])
		return set_url(buf, len, e->sandbox_url, "E2B_SANDBOX_URL", err);
	if (e->debug)
		return set_url(buf, len, "http://localhost:49983", "the debug envd URL", err);
	if (!dom || !*dom)
		dom = e->domain;
	for (size_t i = 0; i < ELEMENTSOF(proxied_domains); i++)
		proxied |= !strcmp(dom, proxied_domains[i]);
	/* the proxy finds the sandbox by the E2b-Sandbox-Id header envd calls carry */
	if ((size_t)(proxied ? snprintf(buf, len, "https://sandbox.%s", dom)
			     : snprintf(buf, len, "https://%d-%s.%s", E2B_ENVD_PORT, id, dom)) >=
	    len)
		return ts_err(err, -ENAMETOOLONG, "the envd URL of `%s` is too long", id);
	return 0;
}

/* Sandbox ids go into URL paths: anything but letters, digits, - and _ cannot be one. */
static bool id_ok(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n >= 64)
		return false;
	for (const char *p = id; *p; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
		    !(*p >= '0' && *p <= '9') && *p != '-' && *p != '_')
			return false;
	return true;
}

/* envd's version as the SDK checks it: semver, at least 0.1.0 (else TemplateError). */
static bool envd_version_ok(const char *v)
{
	unsigned major, minor, patch;

	if (!*v)
		return true; /* not reported (GET /sandboxes/{id} of an older API) */
	if (sscanf(v, "%u.%u.%u", &major, &minor, &patch) != 3)
		return false;
	return major > 0 || minor >= 1;
}

/* Fill the handle from a Sandbox or SandboxDetail object. */
static int fill_sb(struct e2b *e, json_t *j, const char *want_id, struct ts_sb *sb,
		   struct ts_error *err)
{
	struct e2b_sb *s = calloc(1, sizeof(*s));
	const char *id = e2b_pj_str(j, "sandboxID", NULL, want_id);
	const char *token = e2b_pj_str(j, "envdAccessToken", NULL, "");
	int r;

	if (!s)
		return ts_err(err, -ENOMEM, "out of memory");
	if (!id || !id_ok(id)) {
		free(s);
		return ts_err(err, -EPROTO, "E2B answered with no valid `sandboxID`");
	}
	s->t.e = e;
	snprintf(s->t.id, sizeof(s->t.id), "%s", id);
	if (strlen(token) >= sizeof(s->t.token)) {
		free(s);
		return ts_err(err, -EPROTO, "E2B's envdAccessToken is too long");
	}
	snprintf(s->t.token, sizeof(s->t.token), "%s", token);
	snprintf(s->envd_version, sizeof(s->envd_version), "%s",
		 e2b_pj_str(j, "envdVersion", NULL, ""));
	r = e2b_envd_url(e, id, e2b_pj_str(j, "domain", NULL, NULL), s->t.envd_url,
			 sizeof(s->t.envd_url), err);
	if (r < 0) {
		free(s);
		return r;
	}
	snprintf(sb->id, sizeof(sb->id), "%s", id);
	sb->impl = s;
	return 0;
}

/* An answer's body as JSON (a success has one). */
static json_t *body_json(const struct e2b_resp *resp, const char *what, struct ts_error *err)
{
	json_t *j = resp->len ? e2b_json_parse(resp->body, resp->len, err) : NULL;

	if (!j && !resp->len)
		ts_err(err, -EPROTO, "%s: an empty answer", what);
	return j;
}

static int e2b_remove(struct ts_sb *sb, unsigned flags, ts_be_warn_fn warn, void *userdata,
		      struct ts_error *err);
static void e2b_sb_close(struct ts_sb *sb);

static int kv_object(const struct ts_kv *kv, size_t n, json_t **ret, struct ts_error *err)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i < n; i++) {
		if (!kv[i].key || !*kv[i].key || !kv[i].value) {
			json_decref(o);
			return ts_err(err, -EINVAL, "a variable or label without a name or value");
		}
		if (json_object_set_new(o, kv[i].key, json_string(kv[i].value)) < 0) {
			json_decref(o);
			return ts_err(err, -EINVAL, "`%.64s` is not valid UTF-8", kv[i].key);
		}
	}
	if (!o)
		return ts_err(err, -ENOMEM, "out of memory");
	*ret = o;
	return 0;
}

/* E2B's timeouts are whole seconds, rounded up as the SDK does. */
static long long seconds(long long ms)
{
	return (ms + 999) / 1000;
}

static int e2b_create(struct ts_backend *b, const struct ts_sb_create_opts *o, struct ts_sb *sb,
		      struct ts_error *err)
{
	struct e2b *e = of(b);
	struct e2b_resp resp = { 0 };
	json_t *req, *envs = NULL, *meta = NULL, *j;
	int r;

	if (o->workspace || o->policy_file || o->owner_pid || o->memory_bytes || o->pids ||
	    o->cpus > 0 || (o->user && *o->user) || (o->name && *o->name))
		return ts_err(err, -EOPNOTSUPP,
			      "E2B sandboxes take no name, workspace, policy, user, owner or "
			      "resource limits: their template decides");
	if (o->timeout_ms == 0)
		return ts_err(err, -EINVAL, "E2B sandboxes always have a timeout: give one");
	if (o->timeout_ms > TS_SB_TIMEOUT_MAX_MS)
		return ts_err(err, -EINVAL, "timeout of %lld ms: at most %lld", o->timeout_ms,
			      TS_SB_TIMEOUT_MAX_MS);
	if ((r = kv_object(o->envs, o->n_envs, &envs, err)) < 0 ||
	    (r = kv_object(o->metadata, o->n_metadata, &meta, err)) < 0) {
		json_decref(envs);
		return r;
	}
	req = json_pack("{s:s, s:o, s:o}", "templateID",
			o->template_id && *o->template_id ? o->template_id : "base", "metadata",
			meta, "envVars", envs);
	if (!req)
		return ts_err(err, -EINVAL, "template `%.64s` is not valid UTF-8", o->template_id);
	if (o->timeout_ms > 0)
		json_object_set_new(req, "timeout", json_integer(seconds(o->timeout_ms)));
	r = e2b_api(e, "POST", "/v2/sandboxes", req, &resp, err);
	json_decref(req);
	if (r < 0)
		return r;
	if (resp.status != 200 && resp.status != 201) {
		r = e2b_resp_error(&resp, "create a sandbox", err);
		e2b_resp_clear(&resp);
		return r;
	}
	j = body_json(&resp, "create a sandbox", err);
	e2b_resp_clear(&resp);
	if (!j)
		return -EPROTO;
	r = fill_sb(e, j, NULL, sb, err);
	json_decref(j);
	if (r == 0 && !envd_version_ok(sbi(sb)->envd_version)) {
		/* the SDK kills a sandbox whose envd it cannot speak to, and says template */
		char version[32];

		snprintf(version, sizeof(version), "%s", sbi(sb)->envd_version);
		e2b_remove(sb, TS_SB_REMOVE_FORCE, NULL, NULL, err);
		e2b_sb_close(sb);
		return ts_err(err, -ENOPKG,
			      "template `%.64s` has envd %s: too old (want 0.1.0 or later); the "
			      "sandbox was killed",
			      o->template_id ? o->template_id : "base", version);
	}
	return r;
}

static int e2b_connect(struct ts_backend *b, const char *id, long long timeout_ms, bool start,
		       struct ts_sb *sb, struct ts_error *err)
{
	struct e2b *e = of(b);
	struct e2b_resp resp = { 0 };
	_cleanup_free_ char *path = NULL;
	json_t *req = NULL, *j;
	int r;

	if (!id_ok(id))
		return ts_err(err, -ENOENT, "no sandbox `%.80s`", id);
	if (start) {
		/* connect resumes a paused one; the timeout only ever extends (spec §2) */
		req = timeout_ms > 0
			      ? json_pack("{s:I}", "timeout", (json_int_t)seconds(timeout_ms))
			      : json_object();
		if (!req || asprintf(&path, "/v2/sandboxes/%s/connect", id) < 0) {
			json_decref(req);
			return ts_err(err, -ENOMEM, "out of memory");
		}
		r = e2b_api(e, "POST", path, req, &resp, err);
		json_decref(req);
	} else {
		if (asprintf(&path, "/sandboxes/%s", id) < 0)
			return ts_err(err, -ENOMEM, "out of memory");
		r = e2b_api(e, "GET", path, NULL, &resp, err);
	}
	if (r < 0)
		return r;
	if (resp.status != 200 && resp.status != 201) {
		r = e2b_resp_error(&resp, "sandbox", err);
		r = ts_err_prefix(err, r, "`%s`", id);
		e2b_resp_clear(&resp);
		return r;
	}
	j = body_json(&resp, "connect", err);
	e2b_resp_clear(&resp);
	if (!j)
		return -EPROTO;
	r = fill_sb(e, j, id, sb, err);
	json_decref(j);
	return r;
}

static int e2b_remove(struct ts_sb *sb, unsigned flags, ts_be_warn_fn warn, void *userdata,
		      struct ts_error *err)
{
	struct e2b_resp resp = { 0 };
	_cleanup_free_ char *path = NULL;
	int r;

	/* E2B's only removal is kill: a running sandbox needs FORCE, as locally */
	if (!(flags & TS_SB_REMOVE_FORCE))
		return ts_err(err, -EBUSY,
			      "sandbox `%s` runs: E2B removes a sandbox only by killing it (force)",
			      sb->id);
	if (asprintf(&path, "/sandboxes/%s", sb->id) < 0)
		return ts_err(err, -ENOMEM, "out of memory");
	r = e2b_api(sbi(sb)->t.e, "DELETE", path, NULL, &resp, err);
	if (r == 0 && resp.status != 204 && resp.status != 200)
		r = ts_err_prefix(err, e2b_resp_error(&resp, "kill", err), "sandbox `%s`", sb->id);
	e2b_resp_clear(&resp);
	return r;
}

static int push_meta(struct ts_sb_info *i, const char *k, const char *v)
{
	char **grown = realloc(i->metadata, (i->n_metadata + 2) * sizeof(char *));

	if (!grown)
		return -ENOMEM;
	i->metadata = grown;
	if (asprintf(&grown[i->n_metadata], "%s=%s", k, v) < 0)
		return -ENOMEM;
	grown[++i->n_metadata] = NULL;
	return 0;
}

static long long time_of(json_t *j, const char *name)
{
	long long ms = 0;
	const char *s = e2b_pj_str(j, name, NULL, NULL);

	return s && e2b_time_parse(s, &ms) == 0 ? ms : 0;
}

/* A SandboxDetail or ListedSandbox as ts_sb_info. */
static int info_from(json_t *j, struct ts_sb_info *i, struct ts_error *err)
{
	const char *state = e2b_pj_str(j, "state", NULL, "running");
	json_t *meta = json_object_get(j, "metadata");
	const char *k;
	json_t *v;

	memset(i, 0, sizeof(*i));
	snprintf(i->id, sizeof(i->id), "%s", e2b_pj_str(j, "sandboxID", NULL, ""));
	snprintf(i->name, sizeof(i->name), "%s", e2b_pj_str(j, "alias", NULL, ""));
	snprintf(i->template_id, sizeof(i->template_id), "%s",
		 e2b_pj_str(j, "templateID", NULL, ""));
	i->state = !strcmp(state, "paused") ? TS_SB_PAUSED : TS_SB_RUNNING;
	i->started_ms = i->created_ms = time_of(j, "startedAt");
	i->end_at_ms = time_of(j, "endAt");
	/* E2B counts its timeout from the last start, connect or setTimeout, not from use */
	i->timeout_absolute = true;
	if (i->end_at_ms && i->started_ms && i->end_at_ms > i->started_ms)
		i->timeout_ms = i->end_at_ms - i->started_ms;
	json_object_foreach(meta, k, v)
		if (json_is_string(v) && push_meta(i, k, json_string_value(v)) < 0) {
			ts_sb_info_clear(i);
			return ts_err(err, -ENOMEM, "out of memory");
		}
	/* the record as E2B gave it, less the envd token: details end up on terminals */
	json_object_del(j, "envdAccessToken");
	i->details = json_dumps(j, JSON_COMPACT);
	return 0;
}

static int e2b_info(struct ts_sb *sb, struct ts_sb_info *ret, struct ts_error *err)
{
	struct e2b_resp resp = { 0 };
	_cleanup_free_ char *path = NULL;
	json_t *j;
	int r;

	if (asprintf(&path, "/sandboxes/%s", sb->id) < 0)
		return ts_err(err, -ENOMEM, "out of memory");
	r = e2b_api(sbi(sb)->t.e, "GET", path, NULL, &resp, err);
	if (r < 0)
		return r;
	if (resp.status != 200) {
		r = ts_err_prefix(err, e2b_resp_error(&resp, "info", err), "sandbox `%s`", sb->id);
		e2b_resp_clear(&resp);
		return r;
	}
	j = body_json(&resp, "info", err);
	e2b_resp_clear(&resp);
	if (!j)
		return -EPROTO;
	r = info_from(j, ret, err);
	json_decref(j);
	return r;
}

#define E2B_LIST_MAX 10000 /* sandboxes of one page: more is not an answer we keep */

static int e2b_list(struct ts_backend *b, const struct ts_sb_list_opts *o, struct ts_sb_info **ret,
		    size_t *n, char **next_token, struct ts_error *err)
{
	struct e2b *e = of(b);
	struct e2b_resp resp = { 0 };
	_cleanup_free_ char *query = NULL, *meta = NULL, *token = NULL;
	_cleanup_free_ const char **keys = NULL, **values = NULL;
	bool all = !o->running && !o->stopped && !o->paused;
	struct ts_sb_info *v;
	json_t *j;
	size_t count;
	int r;

	/* E2B has running and paused sandboxes, never stopped ones */
	if (!all && !o->running && !o->paused)
		return 0;
	if (o->n_metadata) {
		keys = calloc(o->n_metadata, sizeof(*keys));
		values = calloc(o->n_metadata, sizeof(*values));
		if (!keys || !values)
			return ts_err(err, -ENOMEM, "out of memory");
		for (size_t i = 0; i < o->n_metadata; i++) {
			keys[i] = o->metadata[i].key;
			values[i] = o->metadata[i].value ? o->metadata[i].value : "";
		}
		if (!(meta = e2b_metadata_query(keys, values, o->n_metadata)))
			return ts_err(err, -ENOMEM, "out of memory");
	}
	if (o->next_token && !(token = e2b_uri_component(o->next_token)))
		return ts_err(err, -ENOMEM, "out of memory");
	if (asprintf(&query, "/v2/sandboxes?state=%s%s%s%s%.0u%s%s",
		     all || (o->running && o->paused) ? "running,paused"
		     : o->running		      ? "running"
						      : "paused",
		     meta ? "&metadata=" : "", meta ? meta : "", o->limit ? "&limit=" : "",
		     o->limit, token ? "&nextToken=" : "", token ? token : "") < 0)
		return ts_err(err, -ENOMEM, "out of memory");
	r = e2b_api(e, "GET", query, NULL, &resp, err);
	if (r < 0)
		return r;
	if (resp.status != 200) {
		r = e2b_resp_error(&resp, "list sandboxes", err);
		e2b_resp_clear(&resp);
		return r;
	}
	j = body_json(&resp, "list sandboxes", err);
	if (j && !json_is_array(j)) {
		json_decref(j);
		j = NULL;
		ts_err(err, -EPROTO, "list sandboxes: E2B answered with no array");
	}
	if (!j) {
		e2b_resp_clear(&resp);
		return -EPROTO;
	}
	count = json_array_size(j);
	if (count > E2B_LIST_MAX) {
		json_decref(j);
		e2b_resp_clear(&resp);
		return ts_err(err, -EPROTO, "list sandboxes: %zu in one page", count);
	}
	v = calloc(count ? count : 1, sizeof(*v));
	if (!v) {
		json_decref(j);
		e2b_resp_clear(&resp);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < count; i++)
		if ((r = info_from(json_array_get(j, i), &v[i], err)) < 0) {
			ts_sb_infos_free(v, i);
			json_decref(j);
			e2b_resp_clear(&resp);
			return r;
		}
	json_decref(j);
	if (resp.next_token[0] && !(*next_token = strdup(resp.next_token))) {
		ts_sb_infos_free(v, count);
		e2b_resp_clear(&resp);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	e2b_resp_clear(&resp);
	*ret = v;
	*n = count;
	return 0;
}

static int e2b_set_timeout(struct ts_sb *sb, long long ms, struct ts_error *err)
{
	struct e2b_resp resp = { 0 };
	_cleanup_free_ char *path = NULL;
	json_t *req;
	int r;

	if (ms == 0)
		return ts_err(err, -EINVAL, "E2B sandboxes always have a timeout: give one");
	req = json_pack("{s:I}", "timeout", (json_int_t)seconds(ms));
	if (!req || asprintf(&path, "/sandboxes/%s/timeout", sb->id) < 0) {
		json_decref(req);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	r = e2b_api(sbi(sb)->t.e, "POST", path, req, &resp, err);
	json_decref(req);
	if (r == 0 && resp.status != 204 && resp.status != 200)
		r = ts_err_prefix(err, e2b_resp_error(&resp, "set the timeout", err),
				  "sandbox `%s`", sb->id);
	e2b_resp_clear(&resp);
	return r;
}

static int e2b_pause(struct ts_sb *sb, struct ts_error *err)
{
	struct e2b_resp resp = { 0 };
	_cleanup_free_ char *path = NULL;
	json_t *req = json_object();
	int r;

	if (!req || asprintf(&path, "/sandboxes/%s/pause", sb->id) < 0) {
		json_decref(req);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	r = e2b_api(sbi(sb)->t.e, "POST", path, req, &resp, err);
	json_decref(req);
	if (r == 0 && resp.status == 409)
		/* the SDK's `false`: it is paused already */
		r = ts_err(err, -EALREADY, "sandbox `%s` is paused already", sb->id);
	else if (r == 0 && resp.status != 204 && resp.status != 200)
		r = ts_err_prefix(err, e2b_resp_error(&resp, "pause", err), "sandbox `%s`", sb->id);
	e2b_resp_clear(&resp);
	return r;
}

/* E2B resumes by connect: 201 when it was paused, 200 when it ran already. */
static int e2b_resume(struct ts_sb *sb, struct ts_error *err)
{
	struct e2b_resp resp = { 0 };
	_cleanup_free_ char *path = NULL;
	json_t *req = json_object();
	int r;

	if (!req || asprintf(&path, "/v2/sandboxes/%s/connect", sb->id) < 0) {
		json_decref(req);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	r = e2b_api(sbi(sb)->t.e, "POST", path, req, &resp, err);
	json_decref(req);
	if (r == 0 && resp.status == 200)
		r = ts_err(err, -EALREADY, "sandbox `%s` is not paused", sb->id);
	else if (r == 0 && resp.status != 201)
		r = ts_err_prefix(err, e2b_resp_error(&resp, "resume", err), "sandbox `%s`",
				  sb->id);
	e2b_resp_clear(&resp);
	return r;
}

static int e2b_start(struct ts_sb *sb, struct ts_error *err)
{
	return ts_err(err, -EOPNOTSUPP,
		      "E2B has no stopped sandboxes to start: connect resumes a paused one");
}

static int e2b_stop(struct ts_sb *sb, struct ts_error *err)
{
	return ts_err(err, -EOPNOTSUPP,
		      "E2B has no stop that keeps a sandbox: pause it, or kill it");
}

/*
 * May a process run as user? envd has no call that says; /files looks the user up before
 * anything else (401 "error looking up user" when it cannot be used), so a download of a
 * path nothing has asks without touching anything.
 */
static int e2b_check_user(struct ts_sb *sb, const char *user, struct ts_error *err)
{
	_cleanup_free_ char *u = NULL, *path = NULL;
	struct e2b_resp resp = { 0 };
	int r;

	if (!user || !*user)
		return 0;
	if (!(u = e2b_uri_component(user)) ||
	    asprintf(&path, "/files?path=%%2F.toren-sandbox-no-such-file&username=%s", u) < 0)
		return ts_err(err, -ENOMEM, "out of memory");
	r = e2b_envd_get(&sbi(sb)->t, path, &resp, err);
	if (r == 0 && resp.status == 401) {
		struct ts_error why = { 0 };

		e2b_resp_error(&resp, "envd", &why);
		r = ts_err(err, -EACCES, "user `%.64s` in sandbox `%s`: %s", user, sb->id, why.msg);
	} else if (r == 0 && resp.status != 404 && resp.status != 200 && resp.status != 400) {
		r = ts_err_prefix(err, e2b_resp_error(&resp, "envd", err), "user `%.64s`", user);
	}
	e2b_resp_clear(&resp);
	return r;
}

static void e2b_sb_close(struct ts_sb *sb)
{
	free(sb->impl);
	sb->impl = NULL;
}

static const struct ts_backend_ops e2b_ops = {
	.name = "e2b",
	.free = e2b_free,
	.sb_create = e2b_create,
	.sb_connect = e2b_connect,
	.sb_remove = e2b_remove,
	/* no .reap (E2B ends its sandboxes itself), no .cmd_log_read (it keeps no logs):
	 * backend.c answers both with -EOPNOTSUPP and says so */
	.sb_list = e2b_list,
	.sb_info = e2b_info,
	.sb_set_timeout = e2b_set_timeout,
	.sb_start = e2b_start,
	.sb_stop = e2b_stop,
	.sb_pause = e2b_pause,
	.sb_resume = e2b_resume,
	.sb_snapshot = e2b_snapshot,
	.snap_list = e2b_snap_list,
	.snap_delete = e2b_snap_delete,
	.sb_close = e2b_sb_close,
	.sb_check_user = e2b_check_user,
	.sb_is_running = e2b_is_running,
	.sb_metrics = e2b_metrics,
	.cmd_start = e2b_cmd_start,
	.cmd_connect = e2b_cmd_connect,
	.cmd_fd = e2b_cmd_fd,
	.cmd_events = e2b_cmd_events,
	.cmd_step = e2b_cmd_step,
	.cmd_close = e2b_cmd_close,
	.cmd_input = e2b_cmd_input,
	.cmd_signal_self = e2b_cmd_signal_self,
	.cmd_resize_self = e2b_cmd_resize_self,
	.cmd_input_pending = e2b_cmd_input_pending,
	.cmd_list = e2b_cmd_list,
	.cmd_signal = e2b_cmd_signal,
	.cmd_send_stdin = e2b_cmd_send_stdin,
	.cmd_resize = e2b_cmd_resize,
	.file_stat = e2b_file_stat,
	.file_list = e2b_file_list,
	.file_mkdir = e2b_file_mkdir,
	.file_remove = e2b_file_remove,
	.file_rename = e2b_file_rename,
	.file_write_many = e2b_file_write_many,
	.xfer_start = e2b_xfer_start,
	.xfer_fd = e2b_xfer_fd,
	.xfer_events = e2b_xfer_events,
	.xfer_step = e2b_xfer_step,
	.xfer_push = e2b_xfer_push,
	.xfer_close = e2b_xfer_close,
	.watch_start = e2b_watch_start,
	.watch_fd = e2b_watch_fd,
	.watch_step = e2b_watch_step,
	.watch_close = e2b_watch_close,
};

int ts_backend_e2b_open(struct ts_backend *b, struct ts_error *err)
{
	_cleanup_free_ struct e2b *e = calloc(1, sizeof(*e));
	const char *key = env("E2B_API_KEY"), *dom = env("E2B_DOMAIN"), *v;
	int r;

	if (!e)
		return ts_err(err, -ENOMEM, "out of memory");
	if (!key)
		return ts_err(err, -EKEYREJECTED,
			      "backend `e2b` needs an API key: set E2B_API_KEY (or choose "
			      "TOREN_SANDBOX=local)");
	if (strlen(key) >= sizeof(e->api_key) || strpbrk(key, "\r\n"))
		return ts_err(err, -EKEYREJECTED, "E2B_API_KEY is not a key E2B could have issued");
	snprintf(e->api_key, sizeof(e->api_key), "%s", key);
	if (strlen(dom ? dom : "") >= 200 || (dom && strpbrk(dom, "/:?#@ ")))
		return ts_err(err, -EINVAL, "E2B_DOMAIN `%.64s` is not a domain name", dom);
	snprintf(e->domain, sizeof(e->domain), "%s", dom ? dom : "e2b.app");
	v = env("E2B_DEBUG");
	e->debug = v && !strcasecmp(v, "true");
	if ((v = env("E2B_API_URL")))
		r = set_url(e->api_url, sizeof(e->api_url), v, "E2B_API_URL", err);
	else if (e->debug)
		r = set_url(e->api_url, sizeof(e->api_url), "http://localhost:3000", "API URL",
			    err);
	else
		r = snprintf(e->api_url, sizeof(e->api_url), "https://api.%s", e->domain) < 0
			    ? -EINVAL
			    : 0;
	if (r < 0)
		return r;
	if ((v = env("E2B_SANDBOX_URL")) &&
	    (r = set_url(e->sandbox_url, sizeof(e->sandbox_url), v, "E2B_SANDBOX_URL", err)) < 0)
		return r;
	e->C = ts_curl_load(err);
	if (!e->C)
		return -ENOPKG;
	e->share = e->C->share_init();
	if (!e->share)
		return ts_err(err, -ENOMEM, "out of memory");
	/* one pool of connections, DNS answers and TLS sessions for every call and stream
	 * (a backend belongs to one thread: no locks needed) */
	e->C->share_setopt(e->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
	e->C->share_setopt(e->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	e->C->share_setopt(e->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	b->ops = &e2b_ops;
	b->impl = TAKE_PTR(e);
	return 0;
}
