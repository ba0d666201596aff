/* SPDX-License-Identifier: Apache-2.0 */
#include "snapshots.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "backend.h"
#include "cleanup.h"
#include "control.h"
#include "loop.h"
#include "util.h"

#define SNAP_LIST_MAX 100

/* One snapshot, fork or restore on its thread; the loop owns it, listed in srv->snap_jobs. */
struct ts_snap_job {
	struct ts_snap_job *next;
	struct ts_srv *srv;
	struct ts_req *req;
	char backend[32];
	char sb_id[64];
	char name[64];
	bool has_name;
	/* fork: count sandboxes from the snapshot, then its record goes */
	bool fork;
	long long count, timeout_s;
	json_t *envs, *metadata; /* the source's create body's */
	struct ts_kv env_kv[64], meta_kv[64];
	size_t n_env, n_meta;
	/* restore (a create whose template is a snapshot): the create's options and body */
	bool restore;
	/* delete (DELETE /templates/{id}, sb_id the snapshot's id or name): a sweep of the
	 * snapshots' files may remove a large tree, and waits for the store's lock */
	bool del;
	struct ts_sb_create_opts o;
	struct ts_kv *o_envs, *o_meta;
	const char *allow[65];
	char *text;
	bool auto_pause;
	int efd;
	struct ts_loop_fd *watch;
	pthread_t thread;
	/* the thread's result: the snapshot, the sandboxes made on its backend handle */
	struct ts_backend *b;
	int r;
	struct ts_error err;
	struct ts_snap_info info;
	struct ts_sb *made[TS_SNAPSHOTS_FORK_MAX];
	int made_r[TS_SNAPSHOTS_FORK_MAX];
	struct ts_error made_err[TS_SNAPSHOTS_FORK_MAX];
	size_t n_made;
};

static void job_free(struct ts_snap_job *j)
{
	ts_loop_del_fd(j->watch);
	if (j->efd >= 0)
		close(j->efd);
	for (size_t i = 0; i < j->n_made; i++)
		ts_sb_close(j->made[i]);
	ts_backend_free(j->b);
	json_decref(j->envs);
	json_decref(j->metadata);
	free(j->o_envs);
	free(j->o_meta);
	free(j->text);
	for (struct ts_snap_job **p = &j->srv->snap_jobs; *p; p = &(*p)->next)
		if (*p == j) {
			*p = j->next;
			break;
		}
	j->srv->snapshots_running--;
	free(j);
}

/* The create options of one fork: the snapshot, the source's envs and metadata. */
static void fork_opts(struct ts_snap_job *j, struct ts_sb_create_opts *o)
{
	*o = (struct ts_sb_create_opts){ .timeout_absolute = true,
					 .with_root = true,
					 .sudo = true,
					 .template_id = j->info.id,
					 .envs = j->env_kv,
					 .n_envs = j->n_env,
					 .metadata = j->meta_kv,
					 .n_metadata = j->n_meta };
	o->timeout_ms = j->timeout_s < 0    ? TS_CONTROL_TIMEOUT_S * 1000LL
			: j->timeout_s == 0 ? 1
					    : j->timeout_s * 1000;
}

/*
 * A backend handle of its own (the loop's belongs to the loop's thread): the copy, and the
 * creates from the snapshot, which copy its workspace; the loop records what was made.
 */
static void *snap_main(void *arg)
{
	struct ts_snap_job *j = arg;
	struct ts_sb *sb = NULL;
	struct ts_snap_create_opts so = { .name = j->has_name ? j->name : NULL };
	uint64_t one = 1;

	j->r = ts_backend_open(j->backend, &j->b, &j->err);
	if (j->r >= 0 && j->del) {
		j->r = ts_backend_snapshot_delete(j->b, j->sb_id, &j->err);
	} else if (j->r >= 0 && !j->restore) {
		j->r = ts_sb_lookup(j->b, j->sb_id, &sb, &j->err);
		if (j->r >= 0)
			j->r = ts_sb_snapshot(sb, &so, &j->info, &j->err);
		ts_sb_close(sb);
	}
	for (long long i = 0; j->r >= 0 && (j->fork || j->restore) && i < j->count; i++) {
		struct ts_sb_create_opts o;

		if (j->fork)
			fork_opts(j, &o);
		else
			o = j->o;
		j->made_r[j->n_made] =
			ts_sb_create(j->b, &o, &j->made[j->n_made], &j->made_err[j->n_made]);
		j->n_made++;
	}
	if (j->fork && j->info.id[0]) {
		struct ts_error ignore;

		/* the fork's snapshot is internal: its record goes, its files stay while the
		 * forks use them (snapshot.h). Here, not on the loop: the delete waits for the
		 * snapshot store's lock, which another job's copy may hold for long. */
		ts_backend_snapshot_delete(j->b, j->info.id, &ignore);
	}
	(void)!write(j->efd, &one, sizeof(one));
	return NULL;
}

static void reply_err(struct ts_req *req, const struct ts_error *err)
{
	ts_srv_reply_error(req, ts_srv_http_status(ts_be_code(err)), "%s",
			   err->msg[0] ? err->msg : "backend error");
}

static json_t *snap_json(const struct ts_snap_info *i)
{
	json_t *names = json_array();

	for (size_t k = 0; k < i->n_names; k++)
		json_array_append_new(names, json_string(i->names[k]));
	return json_pack("{s:s, s:o}", "snapshotID", i->id, "names", names);
}

/* Record sandbox i of the job (its handle goes): 0 with *ret, or -errno with err. */
static int record(struct ts_snap_job *j, size_t i, const char *text, bool auto_pause, json_t **ret,
		  struct ts_error *err)
{
	struct ts_sb *sb = j->made[i];

	if (j->made_r[i] < 0) {
		*err = j->made_err[i];
		return j->made_r[i];
	}
	j->made[i] = NULL;
	return ts_control_record(j->srv, sb, false, j->fork ? j->info.id : j->o.template_id, text,
				 auto_pause, ret, err);
}

static unsigned err_status(int r, const struct ts_error *err)
{
	return r == -EPROTO ? 500 : ts_srv_http_status(ts_be_code(err));
}

/* The fork's sandboxes, recorded as POST /sandboxes records one. */
static json_t *fork_records(struct ts_snap_job *j)
{
	json_t *out = json_array();

	for (size_t i = 0; i < j->n_made; i++) {
		struct ts_error err = { 0 };
		json_t *body, *sbj = NULL;
		char *text;
		int r;

		body = json_pack("{s:s, s:I, s:O, s:O}", "templateID", j->info.id, "timeout",
				 (json_int_t)(j->timeout_s < 0 ? TS_CONTROL_TIMEOUT_S
							       : j->timeout_s),
				 "envVars", j->envs, "metadata", j->metadata);
		text = body ? json_dumps(body, JSON_COMPACT) : NULL;
		json_decref(body);
		r = text ? record(j, i, text, false, &sbj, &err)
			 : ts_err(&err, -ENOMEM, "out of memory");
		free(text);
		if (r < 0) {
			ts_sanitize_text(err.msg);
			json_array_append_new(out, json_pack("{s:{s:i, s:s}}", "error", "code",
							     (int)err_status(r, &err), "message",
							     err.msg));
		} else {
			json_array_append_new(out, json_pack("{s:o}", "sandbox", sbj));
		}
	}
	return out;
}

static void on_done(void *userdata, short revents)
{
	struct ts_snap_job *j = userdata;
	uint64_t v;

	(void)revents;
	(void)!read(j->efd, &v, sizeof(v));
	pthread_join(j->thread, NULL);
	if (!j->restore && !j->del) {
		/* the source was paused for the copy and is resumed: an entry refreshed
		 * meanwhile says otherwise (envd would answer 502) */
		struct ts_srv_sb *e;
		struct ts_error ignore;

		if (ts_srv_sandbox(j->srv, j->sb_id, &e, &ignore) == 0)
			ts_srv_refresh(j->srv, e, &ignore);
	}
	/* j goes below: the request must not name it */
	ts_req_defer_forget(j->req);
	if (j->del && (j->r == -ENOENT || j->r == -EOPNOTSUPP)) {
		char shown[80];

		snprintf(shown, sizeof(shown), "%s", j->sb_id);
		ts_sanitize_text(shown);
		ts_srv_reply_error(j->req, 404, "template `%s` not found", shown);
	} else if (j->r < 0) {
		reply_err(j->req, &j->err);
	} else if (j->del) {
		ts_req_reply(j->req, 204, NULL, NULL, 0);
	} else if (j->restore) {
		struct ts_error err = { 0 };
		json_t *out = NULL;
		int r = record(j, 0, j->text, j->auto_pause, &out, &err);

		if (r < 0)
			ts_srv_reply_error(j->req, err_status(r, &err), "%s",
					   err.msg[0] ? err.msg : "backend error");
		else
			ts_req_reply_json(j->req, 201, out);
	} else if (!j->fork) {
		ts_req_reply_json(j->req, 201, snap_json(&j->info));
	} else {
		/* the fork's internal snapshot was deleted by the job (snap_main) */
		ts_req_reply_json(j->req, 200, fork_records(j));
	}
	job_free(j);
}

/* serve stops with the copy running: waited for (it is bounded), then nothing is sent and
 * what it made goes. */
static void on_gone(void *userdata)
{
	struct ts_snap_job *j = userdata;

	pthread_join(j->thread, NULL);
	/* made but never recorded: they would run without a token */
	for (size_t i = 0; i < j->n_made; i++) {
		struct ts_error ignore;

		if (j->made[i])
			ts_sb_remove(j->made[i], TS_SB_REMOVE_FORCE | TS_SB_REMOVE_PURGE, NULL,
				     NULL, &ignore);
	}
	job_free(j);
}

static void start(struct ts_srv *srv, struct ts_req *req, struct ts_snap_job *j)
{
	j->srv = srv;
	j->req = req;
	j->next = srv->snap_jobs;
	srv->snap_jobs = j;
	srv->snapshots_running++;
	snprintf(j->backend, sizeof(j->backend), "%s", ts_backend_name(srv->be));
	j->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (j->efd < 0) {
		ts_srv_reply_error(req, 500, "eventfd: %s", strerror(errno));
		job_free(j);
		return;
	}
	j->watch = ts_loop_add_fd(srv->loop, j->efd, POLLIN, on_done, j);
	if (!j->watch) {
		ts_srv_reply_error(req, 500, "out of memory");
		job_free(j);
		return;
	}
	if (pthread_create(&j->thread, NULL, snap_main, j) != 0) {
		ts_srv_reply_error(req, 503, "cannot start the snapshot's thread");
		job_free(j);
		return;
	}
	/* the thread's end comes through the loop, never before this handler returns */
	if (ts_req_defer(req, on_gone, j) < 0) {
		pthread_join(j->thread, NULL);
		ts_srv_reply_error(req, 500, "cannot defer the request");
		job_free(j);
	}
}

/* The string members of obj as pairs (pointing into obj), at most 64. */
static void kv_of(json_t *obj, struct ts_kv *kv, size_t *n)
{
	const char *k;
	json_t *v;

	*n = 0;
	json_object_foreach(obj, k, v) {
		if (*n < 64 && json_is_string(v))
			kv[(*n)++] = (struct ts_kv){ k, json_string_value(v) };
	}
}

/* The source sandbox of a snapshot or fork, and a job for it; NULL when answered. */
static struct ts_snap_job *prepare(struct ts_srv *srv, struct ts_req *req)
{
	struct ts_srv_sb *e;
	struct ts_snap_job *j;

	if (ts_control_auth(srv, req) < 0 || !(e = ts_control_find(srv, req, ts_req_param(req, 0))))
		return NULL;
	if (srv->snapshots_running >= TS_SNAPSHOTS_RUNNING_MAX) {
		ts_srv_reply_error(req, 429, "%d snapshots are being taken already; try later",
				   TS_SNAPSHOTS_RUNNING_MAX);
		return NULL;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		ts_srv_reply_error(req, 500, "out of memory");
		return NULL;
	}
	j->efd = -1;
	snprintf(j->sb_id, sizeof(j->sb_id), "%s", e->id);
	if (e->has_meta && e->meta.create_body) {
		json_t *b = json_loads(e->meta.create_body, 0, NULL);

		j->envs = json_incref(json_object_get(b, "envVars"));
		j->metadata = json_incref(json_object_get(b, "metadata"));
		json_decref(b);
	}
	if (!json_is_object(j->envs)) {
		json_decref(j->envs);
		j->envs = json_object();
	}
	if (!json_is_object(j->metadata)) {
		json_decref(j->metadata);
		j->metadata = json_object();
	}
	kv_of(j->envs, j->env_kv, &j->n_env);
	kv_of(j->metadata, j->meta_kv, &j->n_meta);
	return j;
}

/* The body as an object (an empty one is {}); borrowed from the request. NULL with the 400
 * sent. */
static json_t *body(struct ts_req *req)
{
	struct ts_error err = { 0 };
	json_t *b = ts_req_json(req, &err);

	if (!json_is_object(b)) {
		ts_srv_reply_error(req, 400, "the body must be a JSON object%s%s",
				   err.msg[0] ? ": " : "", err.msg);
		return NULL;
	}
	return b;
}

void ts_snapshots_create(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	json_t *b = body(req), *name;
	struct ts_snap_job *j;

	if (!b)
		return;
	name = json_object_get(b, "name");
	if (name && !json_is_null(name) &&
	    (!json_is_string(name) || strlen(json_string_value(name)) >= 64)) {
		ts_srv_reply_error(req, 400, "`name` must be a string of at most 63 bytes");
		return;
	}
	j = prepare(srv, req);
	if (j && json_is_string(name) && *json_string_value(name)) {
		snprintf(j->name, sizeof(j->name), "%s", json_string_value(name));
		j->has_name = true;
	}
	if (j)
		start(srv, req, j);
}

void ts_snapshots_fork(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	json_t *b = body(req), *v;
	long long count = 1, timeout = -1;
	struct ts_snap_job *j;

	if (!b)
		return;
	v = json_object_get(b, "count");
	if (v && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > TS_SNAPSHOTS_FORK_MAX) {
			ts_srv_reply_error(req, 400, "`count` must be an integer from 1 to %d",
					   TS_SNAPSHOTS_FORK_MAX);
			return;
		}
		count = json_integer_value(v);
	}
	v = json_object_get(b, "timeout");
	if (v && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > 86400LL * 365) {
			ts_srv_reply_error(req, 400, "`timeout` must be a number of seconds >= 0");
			return;
		}
		timeout = json_integer_value(v);
	}
	j = prepare(srv, req);
	if (!j)
		return;
	j->fork = true;
	j->count = count;
	j->timeout_s = timeout;
	start(srv, req, j);
}

static int cmp_after(const struct ts_snap_info *i, long long ms, const char *id)
{
	if (i->created_ms != ms)
		return i->created_ms > ms ? 1 : -1;
	return strcmp(i->id, id);
}

void ts_snapshots_list(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	const char *sbid = ts_req_query(req, "sandboxID"), *name = ts_req_query(req, "name"),
		   *lim = ts_req_query(req, "limit"), *tok = ts_req_query(req, "nextToken");
	_cleanup_free_ struct ts_snap_info *v = NULL;
	struct ts_error err = { 0 };
	long long limit = SNAP_LIST_MAX, tok_ms = -1;
	char tok_id[64] = "", next[128];
	size_t n = 0, shown = 0, last = 0, i;
	json_t *out;

	if (ts_control_auth(srv, req) < 0)
		return;
	if (lim && *lim) {
		char *end;

		errno = 0;
		limit = strtoll(lim, &end, 10);
		if (errno || *end || limit < 1 || limit > SNAP_LIST_MAX) {
			ts_srv_reply_error(req, 400, "`limit` must be from 1 to %d", SNAP_LIST_MAX);
			return;
		}
	}
	if (tok && *tok) {
		int k = 0;

		if (sscanf(tok, "%lld:%63[0-9a-z-]%n", &tok_ms, tok_id, &k) != 2 || tok[k] ||
		    tok_ms < 0) {
			ts_srv_reply_error(req, 400, "bad `nextToken`");
			return;
		}
	}
	if (ts_backend_snapshots(srv->be, &v, &n, &err) < 0) {
		reply_err(req, &err);
		return;
	}
	out = json_array();
	for (i = 0; i < n; i++) {
		bool named = !name || !*name;

		if (sbid && *sbid && strcmp(v[i].source, sbid) != 0)
			continue;
		for (size_t k = 0; k < v[i].n_names && !named; k++)
			named = !strcmp(v[i].names[k], name);
		if (!named || (tok_ms >= 0 && cmp_after(&v[i], tok_ms, tok_id) <= 0))
			continue;
		if (shown == (size_t)limit) {
			/* one more matches: the next page starts after the last shown */
			snprintf(next, sizeof(next), "%lld:%s", v[last].created_ms, v[last].id);
			ts_req_add_header(req, "X-Next-Token", next);
			break;
		}
		json_array_append_new(out, snap_json(&v[i]));
		shown++;
		last = i;
	}
	ts_req_reply_json(req, 200, out);
}

void ts_snapshots_delete(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	const char *id = ts_req_param(req, 0);
	struct ts_snap_job *j;

	if (ts_control_auth(srv, req) < 0)
		return;
	if (strlen(id) >= sizeof(j->sb_id)) {
		ts_srv_reply_error(req, 404, "template not found");
		return;
	}
	if (srv->snapshots_running >= TS_SNAPSHOTS_RUNNING_MAX) {
		ts_srv_reply_error(req, 429, "%d snapshot jobs are running already; try later",
				   TS_SNAPSHOTS_RUNNING_MAX);
		return;
	}
	if (!(j = calloc(1, sizeof(*j)))) {
		ts_srv_reply_error(req, 500, "out of memory");
		return;
	}
	/* on its thread, as a copy is: the loop never waits for a sweep */
	j->efd = -EBADF;
	j->del = true;
	snprintf(j->sb_id, sizeof(j->sb_id), "%s", id);
	start(srv, req, j);
}

bool ts_snapshots_busy(const struct ts_srv *srv, const char *sb_id)
{
	for (const struct ts_snap_job *j = srv->snap_jobs; j; j = j->next)
		if (!j->restore && !j->del && !strcmp(j->sb_id, sb_id))
			return true;
	return false;
}

bool ts_snapshots_has(struct ts_srv *srv, const char *template_id)
{
	_cleanup_free_ struct ts_snap_info *v = NULL;
	struct ts_error ignore;
	size_t n = 0;

	if (ts_backend_snapshots(srv->be, &v, &n, &ignore) < 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(v[i].id, template_id))
			return true;
		for (size_t k = 0; k < v[i].n_names; k++)
			if (!strcmp(v[i].names[k], template_id))
				return true;
	}
	return false;
}

void ts_snapshots_restore(struct ts_srv *srv, struct ts_req *req, const struct ts_sb_create_opts *o,
			  struct ts_kv *envs, struct ts_kv *meta, char *text, bool auto_pause)
{
	struct ts_snap_job *j = NULL;
	size_t n = 0;

	if (srv->snapshots_running >= TS_SNAPSHOTS_RUNNING_MAX) {
		ts_srv_reply_error(req, 429, "%d snapshots are being copied already; try later",
				   TS_SNAPSHOTS_RUNNING_MAX);
		goto fail;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		ts_srv_reply_error(req, 500, "out of memory");
		goto fail;
	}
	j->efd = -1;
	j->restore = true;
	j->count = 1;
	j->o = *o;
	j->o_envs = envs;
	j->o_meta = meta;
	j->text = text;
	j->auto_pause = auto_pause;
	/* the names point into the request's body, which stays while it is deferred */
	for (; o->net_allow && o->net_allow[n] && n + 1 < ELEMENTSOF(j->allow); n++)
		j->allow[n] = o->net_allow[n];
	j->allow[n] = NULL;
	j->o.net_allow = n ? (char *const *)j->allow : NULL;
	start(srv, req, j);
	return;
fail:
	free(envs);
	free(meta);
	free(text);
}
