/* SPDX-License-Identifier: Apache-2.0 */
/* The local backend: sandboxes (the ops table; processes and files have files of their own). */
#include "local.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "oci-ref.h"
#include "oci-store.h"
#include "sandbox.h"
#include "sbstatus.h"
#include "util.h"

#define TS_LOCAL_STOP_GRACE_MS 2000

int ts_local_store(struct local *l, struct ts_store **ret, struct ts_error *err)
{
	int r = 0;

	if (!l->st)
		r = ts_store_open(&l->st, l->paths.root, err);
	*ret = l->st;
	return r;
}

int ts_local_uid(const char *user, long *ret, struct ts_error *err)
{
	if (!user || !*user)
		*ret = -1;
	else if (!strcmp(user, "root"))
		*ret = 0;
	else if (!strcmp(user, "user"))
		*ret = 1000;
	else
		return ts_err(err, -EINVAL, "unknown user `%.64s`: want `user` or `root`", user);
	return 0;
}

int ts_local_connect(struct ts_sb *sb, struct ts_ctl_client **ret, struct ts_error *err)
{
	struct local_sb *s = sb->impl;

	if (!ts_sandbox_running(&s->rec))
		return ts_err(err, -ENOTCONN, "sandbox `%s` is stopped", s->rec.id);
	return ts_ctl_client_connect(s->rec.dir, s->rec.id, TS_CTL_REPLY_MS, ret, err);
}

int ts_local_proc_conn(struct ts_sb *sb, struct ts_ctl_client **ret, bool *reused,
		       struct ts_error *err)
{
	struct local_sb *s = sb->impl;

	for (size_t i = 0; i < TS_LOCAL_SPARES; i++) {
		struct local_spare *sp = &s->l->spares[i];

		if (sp->c && !strcmp(sp->id, s->rec.id)) {
			*ret = TAKE_PTR(sp->c);
			*reused = true;
			return 0;
		}
	}
	*reused = false;
	return ts_local_connect(sb, ret, err);
}

void ts_local_proc_conn_done(struct local *l, const char *id, struct ts_ctl_client *c, bool idle)
{
	struct local_spare *free_slot = NULL;

	if (!c)
		return;
	if (idle && ts_ctl_client_idle(c))
		for (size_t i = 0; i < TS_LOCAL_SPARES; i++) {
			struct local_spare *sp = &l->spares[i];

			if (sp->c && !strcmp(sp->id, id)) {
				free_slot = NULL; /* one spare per sandbox */
				break;
			}
			if (!sp->c && !free_slot)
				free_slot = sp;
		}
	if (!free_slot) {
		ts_ctl_client_free(c);
		return;
	}
	snprintf(free_slot->id, sizeof(free_slot->id), "%s", id);
	free_slot->c = c;
}

void ts_local_forget(struct local *l, const char *id)
{
	for (size_t i = 0; i < TS_LOCAL_SPARES; i++)
		if (l->spares[i].c && !strcmp(l->spares[i].id, id)) {
			ts_ctl_client_free(l->spares[i].c);
			l->spares[i].c = NULL;
		}
}

bool ts_local_conn_gone(int r)
{
	return r == -EPIPE || r == -ECONNRESET || r == -ENOTCONN;
}

static const char *local_warning(struct ts_backend *b)
{
	struct local *l = b->impl;

	return l->st ? ts_store_warning(l->st) : "";
}

static void local_free(struct ts_backend *b)
{
	struct local *l = b->impl;

	if (l) {
		for (size_t i = 0; i < TS_LOCAL_SPARES; i++)
			ts_ctl_client_free(l->spares[i].c);
		ts_store_close(l->st);
	}
	free(l);
}

/* --- sandboxes --------------------------------------------------------------------- */

static int kv_strv(const struct ts_kv *kv, size_t n, bool name_only_ok, char ***ret,
		   struct ts_error *err)
{
	char **v = calloc(n + 1, sizeof(char *));

	if (!v)
		return ts_err(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		int r = kv[i].value || !name_only_ok ? asprintf(&v[i], "%s=%s", kv[i].key,
								kv[i].value ? kv[i].value : "")
						     : ((v[i] = strdup(kv[i].key)) ? 0 : -1);

		if (r < 0) {
			for (size_t k = 0; k < i; k++)
				free(v[k]);
			free(v);
			return ts_err(err, -ENOMEM, "out of memory");
		}
	}
	*ret = v;
	return 0;
}

static void strv_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

static void strv_freep(char ***v)
{
	strv_free(*v);
}

static void fill_id(struct ts_sb *sb, struct local_sb *s)
{
	snprintf(sb->id, sizeof(sb->id), "%s", s->rec.id);
}

/* A start tells its warnings where the backend's go. */
static struct ts_run_hooks start_hooks(const struct ts_backend *b)
{
	return (struct ts_run_hooks){ .userdata = b->warn_userdata, .warn = b->warn };
}

static int local_create(struct ts_backend *b, const struct ts_sb_create_opts *o, struct ts_sb *sb,
			struct ts_error *err)
{
	struct local *l = b->impl;
	struct ts_run_hooks hooks = start_hooks(b);
	struct ts_create_opts co = { .name = o->name,
				     .workspace = o->workspace,
				     .policy_file = o->policy_file,
				     .ttl_ms = o->timeout_ms,
				     .ttl_absolute = o->timeout_absolute,
				     .owner_pid = o->owner_pid,
				     .memory_bytes = o->memory_bytes,
				     .pids = o->pids,
				     .cpus = o->cpus,
				     .hooks = &hooks };
	_cleanup_free_ struct local_sb *s = calloc(1, sizeof(*s));
	char **env = NULL, **labels = NULL;
	long uid;
	int r;

	if (!s)
		return ts_err(err, -ENOMEM, "out of memory");
	r = ts_local_uid(o->user, &uid, err);
	if (r < 0)
		return r;
	co.as_root = uid == 0;
	co.with_root = o->with_root;
	co.sudo = o->sudo;
	co.protected_patterns = (char **)o->protected_patterns;
	co.network = o->network;
	co.net_allow = (char **)o->net_allow;
	/* No template: the host image (the fast default). "base": the store's image `base`
	 * when there is one (`image build base`: node, python, git), else the host image. Else
	 * an image directory, named by its absolute path, or an image of the local store
	 * (`image pull`, `image import`), or a snapshot. Any other name is a template this
	 * backend does not have (E2B: 404) */
	if (o->template_id && *o->template_id && ts_local_is_snapshot(l, o->template_id)) {
		/* a snapshot's id or name (a name never shadows `base` or a store image) */
		co.snapshot = o->template_id;
	} else if (o->template_id && !strcmp(o->template_id, "base")) {
		if (ts_oci_has(l->paths.root, "base"))
			co.image = "base";
	} else if (o->template_id && *o->template_id) {
		/* a registry reference the store lacks: pulled here (the CLI and serve pull
		 * before, with a progress bar or off their loop; the runner's workers here) */
		if (o->template_id[0] != '/' && !ts_oci_has(l->paths.root, o->template_id) &&
		    ts_oci_ref_looks_remote(o->template_id)) {
			struct ts_oci_pull_opts po = { 0 };
			char digest[80];

			r = ts_oci_pull(l->paths.root, o->template_id, NULL, &po, digest,
					sizeof(digest), err);
			if (r < 0)
				return r;
		}
		if (o->template_id[0] != '/' && !ts_oci_has(l->paths.root, o->template_id))
			return ts_err(err, -ENOENT,
				      "no template `%.128s`: the local backend has `base`, image "
				      "directories by absolute path and the images of `image ls`",
				      o->template_id);
		co.image = o->template_id;
	}
	if ((r = kv_strv(o->envs, o->n_envs, true, &env, err)) < 0 ||
	    (r = kv_strv(o->metadata, o->n_metadata, false, &labels, err)) < 0) {
		strv_free(env);
		return r;
	}
	co.env = env;
	co.labels = labels;
	r = ts_sandbox_create(&co, &s->rec, err);
	strv_free(env);
	strv_free(labels);
	if (r < 0)
		return r;
	s->l = l;
	sb->impl = TAKE_PTR(s);
	fill_id(sb, sb->impl);
	return 0;
}

/* The deadline as E2B counts it: when the timeout expires, 0 when none. */
static long long end_at(const struct ts_sandbox_rec *rec, long long now)
{
	long long since;

	if (rec->ttl_ms <= 0)
		return 0;
	if (rec->ttl_absolute)
		return rec->created_ms + rec->ttl_ms;
	since = rec->last_activity_ms > rec->started_ms ? rec->last_activity_ms : rec->started_ms;
	return since + rec->ttl_ms;
}

/* Make the deadline now + ms. */
static void set_deadline(struct ts_sandbox_rec *rec, long long ms, long long now)
{
	if (ms <= 0) {
		rec->ttl_ms = 0;
		return;
	}
	if (rec->ttl_absolute) {
		rec->ttl_ms = now - rec->created_ms + ms;
	} else {
		rec->ttl_ms = ms;
		rec->last_activity_ms = now;
	}
}

static int local_connect(struct ts_backend *b, const char *id, long long timeout_ms, bool start,
			 struct ts_sb *sb, struct ts_error *err)
{
	struct local *l = b->impl;
	struct ts_run_hooks hooks = start_hooks(b);
	_cleanup_free_ struct local_sb *s = calloc(1, sizeof(*s));
	struct ts_store *st;
	int r;

	if (!s)
		return ts_err(err, -ENOMEM, "out of memory");
	/* a malformed reference names no sandbox (E2B: 404), and the message says why */
	if (!ts_store_ref_valid(id)) {
		char shown[65];

		snprintf(shown, sizeof(shown), "%s", id);
		ts_sanitize_text(shown);
		return ts_err(err, -ENOENT,
			      "bad sandbox reference `%s`: want an id, an id prefix or a name "
			      "(1-64 of [A-Za-z0-9_.-])",
			      shown);
	}
	r = ts_local_store(l, &st, err);
	if (r < 0)
		return r;
	r = ts_store_get(st, id, &s->rec, err);
	if (r < 0)
		return r;
	s->l = l;
	if (start && (r = ts_sandbox_start(st, &s->rec, &hooks, err)) < 0) {
		ts_sandbox_rec_free(&s->rec);
		return r;
	}
	if (timeout_ms >= 0) {
		long long now = ts_realtime_ms(), cur = end_at(&s->rec, now);

		/* connect only ever extends the deadline (E2B's connect) */
		if (cur && now + timeout_ms > cur) {
			set_deadline(&s->rec, timeout_ms, now);
			r = ts_store_update(st, &s->rec, err);
			if (r < 0) {
				ts_sandbox_rec_free(&s->rec);
				return r;
			}
		}
	}
	sb->impl = TAKE_PTR(s);
	fill_id(sb, sb->impl);
	return 0;
}

static int local_remove(struct ts_sb *sb, unsigned flags, ts_be_warn_fn warn, void *userdata,
			struct ts_error *err)
{
	struct local_sb *s = sb->impl;
	struct ts_store *st;
	int r = ts_local_store(s->l, &st, err);

	if (r < 0)
		return r;
	ts_local_forget(s->l, s->rec.id);
	if (!(flags & TS_SB_REMOVE_FORCE) && ts_sandbox_running(&s->rec))
		return ts_err(err, -EBUSY, "sandbox `%s` is running: stop it first", s->rec.id);
	/* also when it looks stopped: stop ends an init that runs unrecorded */
	r = ts_sandbox_stop(st, &s->rec, TS_LOCAL_STOP_GRACE_MS, err);
	if (r == 0)
		r = ts_sandbox_remove(st, &s->l->paths, &s->rec, flags & TS_SB_REMOVE_PURGE, warn,
				      userdata, err);
	return r;
}

/* known: the probe already made (NULL: probe now, asking init when query is set) */
static void info_from_rec(struct ts_sandbox_rec *rec, bool query, const struct ts_sb_live *known,
			  const char *helper, struct ts_sb_info *i)
{
	json_t *labels = json_loads(rec->labels ? rec->labels : "{}", 0, NULL), *spec, *j;
	long long now = ts_realtime_ms();
	struct ts_sb_live live;
	const char *key;
	json_t *val;

	memset(i, 0, sizeof(*i));
	snprintf(i->id, sizeof(i->id), "%s", rec->id);
	snprintf(i->name, sizeof(i->name), "%s", rec->name);
	spec = json_loads(rec->spec ? rec->spec : "{}", 0, NULL);
	snprintf(i->template_id, sizeof(i->template_id), "%s",
		 json_string_value(json_object_get(spec, "image")) ?: "base");
	json_decref(spec);
	if (known)
		live = *known;
	else
		ts_sb_probe(rec, query, &live);
	i->state = !live.running ? TS_SB_STOPPED : live.paused ? TS_SB_PAUSED : TS_SB_RUNNING;
	i->created_ms = rec->created_ms;
	i->started_ms = rec->started_ms;
	i->last_activity_ms = rec->last_activity_ms;
	i->timeout_ms = rec->ttl_ms;
	i->timeout_absolute = rec->ttl_absolute;
	i->init_pid = live.running ? rec->init_pid : 0;
	i->idle_ms = live.running ? (uint64_t)ts_sb_idle_ms(rec, &live, now) : 0;
	i->attached = live.attached;
	i->end_at_ms = live.running ? ts_sb_expires_ms(rec, &live, now) : end_at(rec, now);
	i->workspace = strdup(rec->workspace);
	j = ts_sb_rec_json(rec, &live, now);
	/* one sandbox's details only: the counters cost a run of the helper */
	if (helper && live.running)
		ts_sb_net_counters(helper, rec->init_pid, rec->init_start,
				   json_object_get(j, "network"));
	i->details = j ? json_dumps(j, JSON_PRESERVE_ORDER | JSON_COMPACT) : NULL;
	json_decref(j);
	i->metadata = calloc(json_object_size(labels) + 1, sizeof(char *));
	json_object_foreach(labels, key, val)
		if (i->metadata && json_is_string(val) &&
		    asprintf(&i->metadata[i->n_metadata], "%s=%s", key, json_string_value(val)) >=
			    0)
			i->n_metadata++;
	json_decref(labels);
}

static bool labels_match(const char *labels, const struct ts_kv *m, size_t n)
{
	const char *keys[64], *values[64];

	if (n > 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		keys[i] = m[i].key;
		values[i] = m[i].value;
	}
	return ts_sb_labels_match(labels, keys, values, n);
}

static int newest_first(const void *a, const void *b)
{
	const struct ts_sandbox_rec *x = a, *y = b;

	if (x->created_ms != y->created_ms)
		return x->created_ms < y->created_ms ? 1 : -1;
	return strcmp(y->id, x->id);
}

static int local_list(struct ts_backend *b, const struct ts_sb_list_opts *o,
		      struct ts_sb_info **ret, size_t *n, char **next_token, struct ts_error *err)
{
	struct local *l = b->impl;
	struct ts_sandbox_rec *recs = NULL;
	struct ts_store *st;
	long long after_ms = -1;
	char after_id[16] = "";
	size_t count = 0, total = 0;
	struct ts_sb_info *out;
	bool any_state = !o->running && !o->stopped && !o->paused;
	int r;

	if (o->next_token && *o->next_token &&
	    sscanf(o->next_token, "%lld:%15[0-9a-f]", &after_ms, after_id) != 2)
		return ts_err(err, -EINVAL, "bad page token");
	r = ts_local_store(l, &st, err);
	if (r < 0)
		return r;
	r = ts_store_list(st, &recs, &total, err);
	if (r < 0)
		return r;
	if (total > 1) /* recs is NULL when there are none: qsort must not see it */
		qsort(recs, total, sizeof(*recs), newest_first);
	out = calloc(total + 1, sizeof(*out));
	if (!out) {
		ts_sandbox_recs_free(recs, total);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < total; i++) {
		struct ts_sandbox_rec *rec = &recs[i];
		struct ts_sb_live live;
		enum ts_sb_state state;

		if (after_ms >= 0 &&
		    (rec->created_ms > after_ms ||
		     (rec->created_ms == after_ms && strcmp(rec->id, after_id) >= 0)))
			continue; /* on an earlier page */
		if (!labels_match(rec->labels, o->metadata, o->n_metadata))
			continue;
		/* running and paused differ only in what init says: ask it when that matters */
		ts_sb_probe(rec, o->live || (!any_state && (o->running || o->paused)), &live);
		state = !live.running ? TS_SB_STOPPED : live.paused ? TS_SB_PAUSED : TS_SB_RUNNING;
		if (!any_state && !(state == TS_SB_RUNNING  ? o->running
				    : state == TS_SB_PAUSED ? o->paused
							    : o->stopped))
			continue;
		if (o->limit && count == o->limit) {
			/* more after this page: the token is where it ends */
			if (asprintf(next_token, "%lld:%s", out[count - 1].created_ms,
				     out[count - 1].id) < 0)
				*next_token = NULL;
			break;
		}
		info_from_rec(rec, o->live, &live, NULL, &out[count++]);
	}
	ts_sandbox_recs_free(recs, total);
	*ret = out;
	*n = count;
	return 0;
}

static int local_info(struct ts_sb *sb, struct ts_sb_info *ret, struct ts_error *err)
{
	struct local_sb *s = sb->impl;

	info_from_rec(&s->rec, true, NULL, s->l->paths.helper, ret);
	return 0;
}

static int local_set_timeout(struct ts_sb *sb, long long ms, struct ts_error *err)
{
	struct local_sb *s = sb->impl;
	struct ts_store *st;
	int r = ts_local_store(s->l, &st, err);

	if (r < 0)
		return r;
	set_deadline(&s->rec, ms, ts_realtime_ms());
	return ts_store_update(st, &s->rec, err);
}

/*
 * SETENV (ctl.h, v4) to the sandbox's init: the create's envs become sandbox-wide as they
 * would have been from its start. The connection stays as the sandbox's spare, for the
 * create's first command.
 */
static int send_env(struct ts_sb *sb, char *const *env, struct ts_error *err)
{
	struct local_sb *s = sb->impl;
	_cleanup_(ts_ctl_msg_freep) struct ts_ctl_msg m = { 0 }, reply = { 0 };
	struct ts_ctl_client *c = NULL;
	bool reused;
	int r = ts_local_proc_conn(sb, &c, &reused, err);

	if (r < 0)
		return r;
	if (c->version < 4) {
		ts_ctl_client_free(c);
		return ts_err(err, -EOPNOTSUPP,
			      "sandbox `%s`: its init speaks control protocol %llu, without SETENV",
			      s->rec.id, (unsigned long long)c->version);
	}
	ts_ctl_msg_init(&m, TS_CTL_SETENV, 0);
	for (char *const *e = env; r == 0 && *e; e++)
		r = ts_ctl_put_str(&m, TS_T_ENV, *e);
	if (r < 0) {
		ts_ctl_client_free(c);
		return ts_err(err, r, "sandbox `%s`: the envs do not fit one message", s->rec.id);
	}
	r = ts_ctl_client_call(c, &m, TS_CTL_OK, &reply, err);
	if (r < 0) {
		ts_ctl_client_free(c);
		return ts_err_prefix(err, r, "sandbox `%s`: set its envs", s->rec.id);
	}
	ts_local_proc_conn_done(s->l, s->rec.id, c, true);
	return 0;
}

static int local_reissue(struct ts_sb *sb, const struct ts_sb_create_opts *o, struct ts_error *err)
{
	struct local_sb *s = sb->impl;
	_cleanup_free_ char *text = NULL;
	struct ts_store *st;
	long long now = ts_realtime_ms();
	json_t *obj;
	int r = ts_local_store(s->l, &st, err);

	if (r < 0)
		return r;
	/* a member whose init died while it waited is no sandbox to hand out */
	if (!ts_sandbox_running(&s->rec))
		return ts_err(err, -ESRCH, "sandbox `%s` does not run", s->rec.id);
	obj = json_object();
	for (size_t i = 0; obj && i < o->n_metadata; i++) {
		_cleanup_free_ char *kv = NULL;
		char why[128];

		if (asprintf(&kv, "%s=%s", o->metadata[i].key ?: "", o->metadata[i].value ?: "") <
		    0) {
			kv = NULL;
			json_decref(obj);
			return ts_err(err, -ENOMEM, "out of memory");
		}
		if (!ts_label_valid(kv, why, sizeof(why))) {
			json_decref(obj);
			return ts_err(err, -EINVAL, "bad label `%.200s`: %s", kv, why);
		}
		json_object_set_new(obj, o->metadata[i].key,
				    json_string(o->metadata[i].value ?: ""));
	}
	text = obj ? json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(obj);
	if (!text)
		return ts_err(err, -ENOMEM, "out of memory");
	if (o->n_envs) {
		_cleanup_(strv_freep) char **env = NULL;

		/* a NAME without a value copies the host's at a start: never the pool's */
		for (size_t i = 0; i < o->n_envs; i++)
			if (!o->envs[i].value)
				return ts_err(err, -EINVAL, "env `%.80s` has no value",
					      o->envs[i].key ?: "");
		/* checked and recorded first, so that a restart keeps them (the record is
		 * stored only after init took them: a crash between leaves a pool member,
		 * which the next serve removes) */
		if ((r = kv_strv(o->envs, o->n_envs, false, &env, err)) < 0 ||
		    (r = ts_sandbox_spec_add_env(&s->rec, env, err)) < 0 ||
		    (r = send_env(sb, env, err)) < 0)
			return r;
	}
	free(s->rec.labels);
	s->rec.labels = TAKE_PTR(text);
	/* the pool's owner (serve) lets go: the caller's sandbox lives by its timeout */
	s->rec.owner_pid = 0;
	s->rec.owner_start = 0;
	/* the client sees the hand-out as the creation: its clock and deadline start now */
	s->rec.created_ms = s->rec.started_ms = s->rec.last_activity_ms = now;
	s->rec.ttl_absolute = o->timeout_absolute;
	if (o->timeout_ms < 0)
		s->rec.ttl_ms = TS_DEFAULT_TTL_MS; /* as ts_sandbox_create */
	else
		set_deadline(&s->rec, o->timeout_ms, now);
	return ts_store_update(st, &s->rec, err);
}

static int local_start(struct ts_sb *sb, struct ts_error *err)
{
	struct local_sb *s = sb->impl;
	struct ts_run_hooks hooks = start_hooks(sb->b);
	struct ts_store *st;
	int r = ts_local_store(s->l, &st, err);

	ts_local_forget(s->l, s->rec.id);
	return r < 0 ? r : ts_sandbox_start(st, &s->rec, &hooks, err);
}

static int local_stop(struct ts_sb *sb, struct ts_error *err)
{
	struct local_sb *s = sb->impl;
	struct ts_store *st;
	int r = ts_local_store(s->l, &st, err);

	ts_local_forget(s->l, s->rec.id);
	return r < 0 ? r : ts_sandbox_stop(st, &s->rec, TS_LOCAL_STOP_GRACE_MS, err);
}

static int local_pause_resume(struct ts_sb *sb, bool pause, struct ts_error *err)
{
	struct local_sb *s = sb->impl;
	_cleanup_(ts_ctl_client_freep) struct ts_ctl_client *c = NULL;
	_cleanup_(ts_ctl_msg_freep) struct ts_ctl_msg m = { 0 }, reply = { 0 };
	int r = ts_local_connect(sb, &c, err);

	if (r < 0)
		return r;
	ts_ctl_msg_init(&m, pause ? TS_CTL_PAUSE : TS_CTL_RESUME, 0);
	r = ts_ctl_client_call(c, &m, TS_CTL_OK, &reply, err);
	if (r < 0)
		return ts_err_prefix(err, r, "%s sandbox `%s`", pause ? "pause" : "resume",
				     s->rec.id);
	return 0;
}

static int local_pause(struct ts_sb *sb, struct ts_error *err)
{
	return local_pause_resume(sb, true, err);
}

static int local_resume(struct ts_sb *sb, struct ts_error *err)
{
	return local_pause_resume(sb, false, err);
}

static int local_check_user(struct ts_sb *sb, const char *user, struct ts_error *err)
{
	struct local_sb *s = sb->impl;
	long uid;
	int r = ts_local_uid(user, &uid, err);

	if (r < 0 || uid != 0)
		return r;
	return ts_sandbox_check_root(&s->rec, err);
}

static int local_log_read(struct ts_sb *sb, uint64_t proc, uint64_t offset, void *buf, size_t len,
			  size_t *got, struct ts_error *err)
{
	struct local_sb *s = sb->impl;
	_cleanup_close_ int dirfd = -EBADF, fd = -EBADF;
	char path[4200], name[32];
	struct stat st;
	ssize_t n;

	/* init wrote these through its own fd; never follow a link a sandbox could plant */
	snprintf(path, sizeof(path), "%s/logs", s->rec.dir);
	snprintf(name, sizeof(name), "%llu.log", (unsigned long long)proc);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd >= 0)
		fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return ts_err(err, -ENOENT,
			      "no log for process %llu in `%s` (only background processes, "
			      "started with exec -d, have one)",
			      (unsigned long long)proc, s->rec.id);
	n = pread(fd, buf, len, (off_t)offset);
	if (n < 0)
		return ts_err_errno(err, -errno, "read the log of process %llu",
				    (unsigned long long)proc);
	*got = (size_t)n;
	return 0;
}

static void local_sb_close(struct ts_sb *sb)
{
	struct local_sb *s = sb->impl;

	if (!s)
		return;
	ts_sandbox_rec_free(&s->rec);
	free(s);
}

const struct ts_backend_ops ts_local_ops = {
	.name = "local",
	.free = local_free,
	.sb_create = local_create,
	.sb_connect = local_connect,
	.warning = local_warning,
	.sb_remove = local_remove,
	.reap = ts_local_reap,
	.sb_list = local_list,
	.sb_info = local_info,
	.sb_set_timeout = local_set_timeout,
	.sb_reissue = local_reissue,
	.sb_start = local_start,
	.sb_stop = local_stop,
	.sb_pause = local_pause,
	.sb_resume = local_resume,
	.sb_close = local_sb_close,
	.sb_check_user = local_check_user,
	.sb_is_running = ts_local_is_running,
	.sb_metrics = ts_local_metrics,
	.sb_snapshot = ts_local_snapshot,
	.snap_list = ts_local_snap_list,
	.snap_delete = ts_local_snap_delete,
	.cmd_log_read = local_log_read,
	.cmd_start = ts_local_cmd_start,
	.cmd_connect = ts_local_cmd_connect,
	.cmd_fd = ts_local_cmd_fd,
	.cmd_events = ts_local_cmd_events,
	.cmd_step = ts_local_cmd_step,
	.cmd_close = ts_local_cmd_close,
	.cmd_input = ts_local_cmd_input,
	.cmd_signal_self = ts_local_cmd_signal_self,
	.cmd_resize_self = ts_local_cmd_resize_self,
	.cmd_input_pending = ts_local_cmd_input_pending,
	.cmd_list = ts_local_cmd_list,
	.cmd_signal = ts_local_cmd_signal,
	.cmd_send_stdin = ts_local_cmd_send_stdin,
	.cmd_resize = ts_local_cmd_resize,
	.file_stat = ts_local_file_stat,
	.file_list = ts_local_file_list,
	.file_mkdir = ts_local_file_mkdir,
	.file_remove = ts_local_file_remove,
	.file_rename = ts_local_file_rename,
	.file_set_metadata = ts_local_file_set_metadata,
	.xfer_start = ts_local_xfer_start,
	.xfer_fd = ts_local_xfer_fd,
	.xfer_events = ts_local_xfer_events,
	.xfer_step = ts_local_xfer_step,
	.xfer_push = ts_local_xfer_push,
	.xfer_close = ts_local_xfer_close,
	.watch_start = ts_local_watch_start,
	.watch_fd = ts_local_watch_fd,
	.watch_step = ts_local_watch_step,
	.watch_close = ts_local_watch_close,
};

int ts_backend_local_open(struct ts_backend *b, struct ts_error *err)
{
	struct local *l = calloc(1, sizeof(*l));
	int r;

	if (!l)
		return ts_err(err, -ENOMEM, "out of memory");
	r = ts_paths_init(&l->paths, err);
	if (r < 0) {
		free(l);
		return r;
	}
	b->ops = &ts_local_ops;
	b->impl = l;
	return 0;
}
