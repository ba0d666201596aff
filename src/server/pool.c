// SPDX-License-Identifier: Apache-2.0
/*
 * serve's warm pool (pool.h): the refill thread, the hand-out on the loop, the orphans of
 * a dead serve, GET /v1/pool.
 */
#include "pool.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "http.h"
#include "oci-ref.h"
#include "oci-store.h"
#include "policy.h"
#include "procinfo.h"
#include "sandbox.h"
#include "server.h"
#include "tokens.h"
#include "util.h"
#include "v1.h"

#define POOL_ID_MAX 64
#define POOL_LIST_PAGES 64 /* pages of the orphan search (each up to the backend's page) */

struct pool_tpl {
	char name[256]; /* the template; "" for a /v1 create without an image (host image) */
	bool v1;	/* built as /v1 creates (no root, no sudo), else as E2B's */
	unsigned target;
	bool starting; /* the thread is starting one (mu) */
	size_t n_ready;
	char ready[TS_POOL_PER_TEMPLATE_MAX][POOL_ID_MAX]; /* oldest first (mu) */
	unsigned failures;				   /* in a row (mu) */
	long long retry_at;				   /* monotonic ms (mu) */
	char last_error[512];				   /* (mu) */
};

struct ts_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a member taken, or stopping */
	pthread_t thread;
	bool have_thread, stopping;
	char backend[32];
	ts_be_note_fn warn;
	void *userdata;
	char owner[64]; /* "pid:start" of this serve, TS_POOL_OWNER_LABEL's value */
	size_t n_tpl;
	struct pool_tpl tpl[TS_POOL_TOTAL_MAX];
	unsigned long long claimed, started, orphans; /* (mu) */
	long long last_claim;			      /* monotonic ms (mu) */
};

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static const char *label_of(const struct ts_sb_info *i, const char *key)
{
	size_t n = strlen(key);

	for (size_t k = 0; k < i->n_metadata; k++)
		if (!strncmp(i->metadata[k], key, n) && i->metadata[k][n] == '=')
			return i->metadata[k] + n + 1;
	return NULL;
}

bool ts_pool_member(const struct ts_sb_info *i)
{
	return label_of(i, TS_POOL_LABEL) != NULL;
}

const char *ts_pool_reserved(const struct ts_kv *kv, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (kv[i].key &&
		    (!strcmp(kv[i].key, TS_POOL_LABEL) || !strcmp(kv[i].key, TS_POOL_OWNER_LABEL)))
			return kv[i].key;
	return NULL;
}

/* Is the serve named by a TS_POOL_OWNER_LABEL value still running? */
static bool owner_alive(const char *owner)
{
	unsigned long long pid, start;
	const char *colon = owner ? strchr(owner, ':') : NULL;
	char buf[32];

	if (!colon || (size_t)(colon - owner) >= sizeof(buf))
		return false;
	snprintf(buf, sizeof(buf), "%.*s", (int)(colon - owner), owner);
	if (ts_parse_ull(buf, &pid) < 0 || pid == 0 || pid > 4194304 ||
	    ts_parse_ull(colon + 1, &start) < 0)
		return false;
	return start != 0 && ts_proc_alive((pid_t)pid, start);
}

/* --- parsing ----------------------------------------------------------------------------- */

static int parse_spec(const char *spec, const char *root, char *tpl, size_t len, bool *v1,
		      unsigned *n, struct ts_error *err)
{
	const char *body = !strncmp(spec, "v1:", 3) ? spec + 3 : spec;
	const char *eq = strrchr(body, '=');
	const char *num = eq ? eq + 1 : body;
	unsigned long long v;

	*v1 = body != spec;
	if (eq && (eq == body || (size_t)(eq - body) >= len))
		return ts_err(err, -EINVAL, "`--pool %.80s`: want [v1:]N or [v1:]TEMPLATE=N", spec);
	/* E2B's default template is `base`; a /v1 create without `image` has the host image */
	snprintf(tpl, len, "%.*s", eq ? (int)(eq - body) : 4, eq ? body : *v1 ? "" : "base");
	if (ts_parse_ull(num, &v) < 0 || v > TS_POOL_PER_TEMPLATE_MAX)
		return ts_err(err, -EINVAL, "`--pool %.80s`: N is 0 to %d per template", spec,
			      TS_POOL_PER_TEMPLATE_MAX);
	/* never pulled for the pool: a template must be in the store when serve starts */
	if (*tpl && strcmp(tpl, "base") != 0 && (!ts_oci_name_valid(tpl) || !ts_oci_has(root, tpl)))
		return ts_err(err, -ENOENT,
			      "`--pool %.80s`: no image `%.80s` in the store: `base` or a name "
			      "of `toren-sandbox image ls`",
			      spec, tpl);
	*n = (unsigned)v;
	return 0;
}

static int parse_specs(struct ts_pool *p, const char *const *specs, const char *root,
		       struct ts_error *err)
{
	unsigned total = 0;

	for (size_t i = 0; specs && specs[i]; i++) {
		char tpl[256];
		unsigned n = 0;
		bool v1;
		size_t k;
		int r = parse_spec(specs[i], root, tpl, sizeof(tpl), &v1, &n, err);

		if (r < 0)
			return r;
		for (k = 0; k < p->n_tpl && (strcmp(p->tpl[k].name, tpl) || p->tpl[k].v1 != v1);
		     k++)
			;
		if (k == p->n_tpl) {
			if (p->n_tpl == ELEMENTSOF(p->tpl))
				return ts_err(err, -EINVAL, "at most %d templates in `--pool`",
					      TS_POOL_TOTAL_MAX);
			snprintf(p->tpl[p->n_tpl].name, sizeof(p->tpl[0].name), "%s", tpl);
			p->tpl[p->n_tpl++].v1 = v1;
		}
		p->tpl[k].target = n;
	}
	for (size_t k = 0; k < p->n_tpl; k++)
		total += p->tpl[k].target;
	if (total > TS_POOL_TOTAL_MAX)
		return ts_err(err, -EINVAL, "`--pool`: %u sandboxes in all; at most %d", total,
			      TS_POOL_TOTAL_MAX);
	return 0;
}

/* --- the refill thread ------------------------------------------------------------------- */

static void note(struct ts_pool *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct ts_pool *p, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	if (!p->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->warn(p->userdata, false, msg);
}

/* The members of serves that are gone (their owner label names a dead process): removed. */
static void remove_orphans(struct ts_pool *p, struct ts_backend *be)
{
	struct ts_sb_list_opts o = { 0 };
	char *token = NULL;
	unsigned pages = 0;

	do {
		struct ts_sb_info *v = NULL;
		struct ts_error err = { 0 };
		char *next = NULL;
		size_t n = 0;

		o.next_token = token;
		if (ts_sb_list(be, &o, &v, &n, &next, &err) < 0) {
			note(p, "pool: cannot list sandboxes to find orphaned pool members: %s",
			     err.msg);
			break;
		}
		free(token);
		token = next;
		for (size_t i = 0; i < n; i++) {
			struct ts_error kerr = { 0 };

			if (!ts_pool_member(&v[i]) ||
			    owner_alive(label_of(&v[i], TS_POOL_OWNER_LABEL)))
				continue;
			if (ts_sb_kill(be, v[i].id, &kerr) < 0 && kerr.code != ENOENT) {
				note(p, "pool: cannot remove orphaned pool member `%s`: %s",
				     v[i].id, kerr.msg);
				continue;
			}
			pthread_mutex_lock(&p->mu);
			p->orphans++;
			pthread_mutex_unlock(&p->mu);
		}
		ts_sb_infos_free(v, n);
	} while (token && ++pages < POOL_LIST_PAGES);
	free(token);
}

/* The template most in need of a member now (mu held), or NULL; *wait_ms: until a retry. */
static struct pool_tpl *next_to_fill(struct ts_pool *p, long long now, long long *wait_ms)
{
	struct pool_tpl *best = NULL;

	*wait_ms = -1;
	for (size_t k = 0; k < p->n_tpl; k++) {
		struct pool_tpl *t = &p->tpl[k];

		if (t->n_ready >= t->target)
			continue;
		long long at = t->retry_at;

		/* a start takes the CPUs for tens of ms: while members are left, it waits
		 * until the creates pause, off the requests it would slow down */
		if (t->n_ready > 0 && p->last_claim + TS_POOL_REFILL_DELAY_MS > at)
			at = p->last_claim + TS_POOL_REFILL_DELAY_MS;
		if (at > now) {
			if (*wait_ms < 0 || at - now < *wait_ms)
				*wait_ms = at - now;
			continue;
		}
		if (!best || t->n_ready < best->n_ready)
			best = t;
	}
	return best;
}

/*
 * The first command of a new sandbox is slower than the next ones (init's first control
 * connection, the overlay's first lookups of bash, /etc/profile and id): the SDK's first
 * commands.run is a login bash, so one runs at fill time. It writes nothing (a login
 * shell without a terminal keeps no history), it is not logged (no `log`), and it has
 * ended before the member is ready; a failure (an image without bash) is ignored.
 */
static void warm(struct ts_sb *sb)
{
	char *argv[] = { "/bin/bash", "-l", "-c", "true", NULL };
	struct ts_cmd_opts co = { .argv = argv, .timeout_ms = TS_POOL_WARM_MS };
	struct ts_run_result res = { 0 };
	struct ts_error err = { 0 };

	if (ts_be_run(sb, &co, NULL, NULL, false, 0, &res, &err) == 0)
		ts_run_result_clear(&res);
}

static int start_member(struct ts_pool *p, struct ts_backend *be, const char *tpl, bool v1,
			char *id, size_t len, struct ts_error *err)
{
	char label[300];
	const struct ts_kv labels[] = { { TS_POOL_LABEL, label },
					{ TS_POOL_OWNER_LABEL, p->owner } };
	/* what control.c's E2B create (or v1.c's) asks, less what a hand-out sets: no timeout
	 * while pooled (a member never expires), its labels replaced when handed out */
	struct ts_sb_create_opts o = { .template_id = *tpl ? tpl : NULL,
				       .timeout_ms = 0,
				       .timeout_absolute = true,
				       .with_root = !v1,
				       .sudo = !v1,
				       /* serve owns it until the hand-out: a serve killed with
					* -9 leaves members that `reap` stops (the next serve
					* removes them) */
				       .owner_pid = getpid(),
				       .metadata = labels,
				       .n_metadata = ELEMENTSOF(labels) };
	struct ts_sb *sb = NULL;
	int r;

	snprintf(label, sizeof(label), "%s%s", v1 ? "v1:" : "", tpl);
	r = ts_sb_create(be, &o, &sb, err);
	if (r < 0)
		return r;
	warm(sb);
	snprintf(id, len, "%s", ts_sb_id(sb));
	ts_sb_close(sb);
	return 0;
}

static void *pool_main(void *arg)
{
	struct ts_pool *p = arg;
	_cleanup_(ts_backend_freep) struct ts_backend *be = NULL;
	struct ts_error err = { 0 };

	/* a backend handle of its own: a store handle belongs to one thread */
	if (ts_backend_open(p->backend, &be, &err) < 0) {
		note(p, "pool: cannot open the backend; creates start their sandboxes: %s",
		     err.msg);
		return NULL;
	}
	ts_backend_on_warning(be, p->warn, p->userdata);
	remove_orphans(p, be);
	pthread_mutex_lock(&p->mu);
	while (!p->stopping) {
		long long wait_ms;
		struct pool_tpl *t = next_to_fill(p, mono_ms(), &wait_ms);
		char id[POOL_ID_MAX], tpl[256];
		bool v1;
		int r;

		if (!t) {
			if (wait_ms < 0) {
				pthread_cond_wait(&p->cv, &p->mu);
			} else {
				struct timespec ts;

				clock_gettime(CLOCK_REALTIME, &ts);
				ts.tv_sec += wait_ms / 1000;
				ts.tv_nsec += (wait_ms % 1000) * 1000000;
				if (ts.tv_nsec >= 1000000000) {
					ts.tv_sec++;
					ts.tv_nsec -= 1000000000;
				}
				pthread_cond_timedwait(&p->cv, &p->mu, &ts);
			}
			continue;
		}
		t->starting = true;
		snprintf(tpl, sizeof(tpl), "%s", t->name);
		v1 = t->v1;
		pthread_mutex_unlock(&p->mu);
		err = (struct ts_error){ 0 };
		r = start_member(p, be, tpl, v1, id, sizeof(id), &err);
		pthread_mutex_lock(&p->mu);
		t->starting = false;
		if (r < 0) {
			unsigned shift = t->failures < 5 ? t->failures : 5;
			long long backoff = 1000LL << shift;

			/* a template that cannot start (no subordinate ids, a broken image) must
			 * not spin: its next try waits 1, 2, 4 ... 30 s */
			t->failures++;
			t->retry_at =
				mono_ms() +
				(backoff < TS_POOL_RETRY_MAX_MS ? backoff : TS_POOL_RETRY_MAX_MS);
			snprintf(t->last_error, sizeof(t->last_error), "%s", err.msg);
			if (t->failures == 1)
				note(p, "pool: starting a `%s` sandbox failed (retrying): %s", tpl,
				     err.msg);
			continue;
		}
		t->failures = 0;
		t->last_error[0] = '\0';
		p->started++;
		/* also when stopping: ts_pool_free removes every ready member */
		snprintf(t->ready[t->n_ready++], POOL_ID_MAX, "%s", id);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int ts_pool_new(const char *const *specs, const char *backend, const char *root, ts_be_note_fn warn,
		void *userdata, struct ts_pool **ret, struct ts_error *err)
{
	_cleanup_free_ struct ts_pool *p = calloc(1, sizeof(*p));
	int rc, r;

	if (!p)
		return ts_err(err, -ENOMEM, "out of memory");
	r = parse_specs(p, specs, root, err);
	if (r < 0)
		return r;
	snprintf(p->backend, sizeof(p->backend), "%s", backend);
	p->warn = warn;
	p->userdata = userdata;
	snprintf(p->owner, sizeof(p->owner), "%d:%llu", (int)getpid(),
		 ts_proc_start_time(getpid()));
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	/* the thread inherits serve's signal mask: SIGINT and SIGTERM stay with its signalfd */
	rc = pthread_create(&p->thread, NULL, pool_main, p);
	if (rc) {
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		return ts_err(err, -rc, "start the pool's thread: %s", strerror(rc));
	}
	p->have_thread = true;
	*ret = TAKE_PTR(p);
	return 0;
}

void ts_pool_free(struct ts_pool *p, struct ts_backend *be)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (p->have_thread)
		pthread_join(p->thread, NULL);
	for (size_t k = 0; k < p->n_tpl; k++)
		for (size_t i = 0; i < p->tpl[k].n_ready; i++) {
			struct ts_error err = { 0 };

			if (ts_sb_kill(be, p->tpl[k].ready[i], &err) < 0 && err.code != ENOENT)
				note(p, "pool: cannot remove pool member `%s`: %s",
				     p->tpl[k].ready[i], err.msg);
		}
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* --- the hand-out (on the loop) ------------------------------------------------------------ */

/*
 * Can a started member take these options, and which kind (*v1: /v1's build, no root and
 * no sudo; else E2B's, both)? envs can: the hand-out gives them to init (SETENV), if each
 * has a value (a bare NAME copies the host's at a start) and a name a start would take
 * (else the create's own start says what is wrong). A network is set up when the helper
 * starts the sandbox (its namespace's interface, routes, nf_tables rules, the proxy): a
 * member has none, and nothing adds one to a running sandbox, so those start their own.
 */
static bool poolable(const struct ts_sb_create_opts *o, bool *v1)
{
	for (size_t i = 0; i < o->n_envs; i++)
		if (!o->envs[i].key || !o->envs[i].value ||
		    !ts_policy_env_name_valid(o->envs[i].key, strlen(o->envs[i].key)))
			return false;
	/* a label a hand-out would refuse must not cost a member: the create's own start
	 * answers it */
	for (size_t i = 0; i < o->n_metadata; i++) {
		char kv[1024], why[128];

		if (snprintf(kv, sizeof(kv), "%s=%s", o->metadata[i].key ?: "",
			     o->metadata[i].value ?: "") >= (int)sizeof(kv) ||
		    !ts_label_valid(kv, why, sizeof(why)))
			return false;
	}
	*v1 = !o->with_root && !o->sudo;
	return !o->name && !o->workspace && !o->policy_file && !o->user &&
	       o->with_root == o->sudo && !o->protected_patterns && !o->memory_bytes && !o->pids &&
	       o->cpus == 0 && o->owner_pid == 0 && !o->network && !o->net_allow;
}

/* Take the oldest ready member of tpl of that kind (mu taken here). */
static bool take(struct ts_pool *p, const char *tpl, bool v1, char *id, size_t len)
{
	bool got = false;

	pthread_mutex_lock(&p->mu);
	for (size_t k = 0; k < p->n_tpl; k++) {
		struct pool_tpl *t = &p->tpl[k];

		if (strcmp(t->name, tpl) || t->v1 != v1 || t->n_ready == 0)
			continue;
		snprintf(id, len, "%s", t->ready[0]);
		memmove(t->ready[0], t->ready[1], (t->n_ready - 1) * sizeof(t->ready[0]));
		t->n_ready--;
		p->claimed++;
		p->last_claim = mono_ms();
		got = true;
		pthread_cond_signal(&p->cv);
		break;
	}
	pthread_mutex_unlock(&p->mu);
	return got;
}

int ts_pool_claim(struct ts_pool *p, struct ts_backend *be, const struct ts_sb_create_opts *o,
		  struct ts_sb **ret)
{
	const char *tpl = o->template_id && *o->template_id ? o->template_id : NULL;
	char id[POOL_ID_MAX];
	bool v1 = false;

	if (!p || !poolable(o, &v1))
		return -ENOENT;
	/* E2B's create always names a template (`base` by default); /v1's without an image
	 * has the host image, the pool's "" */
	if (!tpl)
		tpl = v1 ? "" : "base";
	/* a member that cannot be handed out (its record gone, the store busy) is dropped and
	 * the next one tried; at most as many as the pool can hold */
	for (unsigned tries = 0;
	     tries < TS_POOL_PER_TEMPLATE_MAX && take(p, tpl, v1, id, sizeof(id)); tries++) {
		struct ts_error err = { 0 };
		struct ts_sb *sb = NULL;

		int r = ts_sb_lookup(be, id, &sb, &err);

		if (r == 0 && (r = ts_sb_reissue(sb, o, &err)) == 0) {
			*ret = sb;
			return 0;
		}
		ts_sanitize_text(err.msg);
		note(p, "pool: cannot hand out pool member `%s` (removed): %s", id, err.msg);
		ts_sb_close(sb);
		ts_sb_kill(be, id, &err);
		/* the create's own fault would be every member's: the create answers it */
		if (r == -EINVAL)
			break;
	}
	return -ENOENT;
}

bool ts_pool_holds(struct ts_pool *p, const char *ref)
{
	size_t len = ref ? strlen(ref) : 0;
	bool found = false;

	if (!p || !len)
		return false;
	pthread_mutex_lock(&p->mu);
	for (size_t k = 0; k < p->n_tpl && !found; k++)
		for (size_t i = 0; i < p->tpl[k].n_ready && !found; i++)
			found = !strncmp(p->tpl[k].ready[i], ref, len);
	pthread_mutex_unlock(&p->mu);
	return found;
}

/* --- GET /v1/pool ------------------------------------------------------------------------ */

void ts_pool_status(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_pool *p = srv->pool;
	json_t *arr = json_array(), *j;

	if (!ts_v1_authorized(srv, req, TS_SCOPE_SANDBOXES_READ)) {
		json_decref(arr);
		return;
	}
	if (p)
		pthread_mutex_lock(&p->mu);
	for (size_t k = 0; p && arr && k < p->n_tpl; k++) {
		const struct pool_tpl *t = &p->tpl[k];

		json_array_append_new(arr, json_pack("{s:s?, s:s, s:i, s:i, s:b, s:s?}", "template",
						     t->name[0] ? t->name : NULL, "api",
						     t->v1 ? "v1" : "e2b", "target", (int)t->target,
						     "ready", (int)t->n_ready, "starting",
						     t->starting, "last_error",
						     t->last_error[0] ? t->last_error : NULL));
	}
	j = json_pack("{s:o?, s:I, s:I, s:I}", "templates", arr, "claimed",
		      (json_int_t)(p ? p->claimed : 0), "started", (json_int_t)(p ? p->started : 0),
		      "orphans_removed", (json_int_t)(p ? p->orphans : 0));
	if (p)
		pthread_mutex_unlock(&p->mu);
	if (!j) {
		ts_v1_reply_error(req, "internal", "out of memory");
		return;
	}
	ts_req_reply_json(req, 200, j);
}
