// SPDX-License-Identifier: Apache-2.0
/*
 * serve's agent runner off the loop (runs.h): the worker threads, the per-run queues, the
 * hand-back of finished calls to the loop, and the HTTP approval queue.
 *
 * One mutex guards everything shared (queues, slots, workers' flags, approvals); it is
 * never held across a backend call, a tool call or the log. Threads are detached and the
 * state is reference counted (the loop's reference and one per thread), so that a worker
 * abandoned at shutdown can still finish and let go of it safely.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "agent-text.h"
#include "cleanup.h"
#include "loop.h"
#include "runs.h"
#include "server.h"
#include "util.h"

struct worker;

/* A run (or a sandbox without a run) with its queue of calls. */
struct run_slot {
	char id[80]; /* the run's id or the sandbox's; "" while its run is being opened */
	bool is_run; /* false: a sandbox without a run */
	bool busy;   /* a worker executes its calls now */
	bool ready;  /* in the ready list: calls waiting and no worker on it */
	bool listed; /* in rs->slots (evicted ones are not) */
	struct ts_run_job *head, *tail; /* the head is the one running when busy */
	unsigned n_jobs;
	struct worker *home; /* the worker holding its runner open, or NULL */
	long long used_ms;
	struct run_slot *next, *rnext;
};

struct worker {
	struct ts_runs *rs;
	bool busy;
	bool stale;		 /* its runner's slot was evicted: free the runner */
	struct run_slot *cached; /* the slot its runner belongs to (home == this) */
	struct ts_agent agent;	 /* the runner's configuration */
	struct ts_runner *runner;
	struct ts_backend *be;
	struct ts_runlog *log;
};

enum approval_state {
	APPROVAL_PENDING,
	APPROVAL_DECIDED,
	APPROVAL_CANCELLED,
	APPROVAL_EXPIRED
};

struct approval {
	char id[24];
	char *run, *tool, *summary, *args; /* args NULL: longer than shown */
	uint64_t call;
	long long created_ms;
	enum approval_state state;
	bool waiting; /* its worker has not read the decision yet: keep it */
	bool allow;
	char *reason;
	struct approval *next;
};

struct ts_runs {
	/* the loop's */
	struct ts_srv *srv;
	struct ts_loop_fd *watch;
	struct ts_runlog *loop_log;
	/* shared, under mu */
	pthread_mutex_t mu;
	pthread_cond_t work_cv, exit_cv, approval_cv;
	unsigned refs;
	int efd;
	char backend[64];
	bool stopping;
	unsigned n_threads, n_starting, n_idle, n_ready, n_jobs, n_slots, n_decided;
	struct run_slot *slots;
	struct run_slot *ready_head;
	struct ts_run_job *done_head, *done_tail;
	struct approval *approvals; /* in the order they were asked */
	struct ts_approver approver;
};

/* --- jobs ---------------------------------------------------------------------------- */

struct ts_run_job *ts_run_job_new(enum ts_run_job_kind kind)
{
	struct ts_run_job *j = calloc(1, sizeof(*j));

	if (j)
		j->kind = kind;
	return j;
}

void ts_run_job_free(struct ts_run_job *j)
{
	if (!j)
		return;
	free(j->run);
	free(j->sandbox);
	ts_agent_free(&j->agent);
	free(j->tool);
	free(j->key);
	json_decref(j->args);
	ts_tool_result_clear(&j->res);
	json_decref(j->tools);
	free(j);
}

/* --- slots (under mu) ------------------------------------------------------------------ */

static void slot_maybe_free(struct ts_runs *rs, struct run_slot *s)
{
	if (s && !s->listed && !s->home && !s->busy && !s->n_jobs && !s->ready)
		free(s);
}

static void ready_add(struct ts_runs *rs, struct run_slot *s)
{
	struct run_slot **p = &rs->ready_head;

	if (s->ready || s->busy)
		return;
	while (*p)
		p = &(*p)->rnext;
	s->rnext = NULL;
	*p = s;
	s->ready = true;
	rs->n_ready++;
}

static void ready_remove(struct ts_runs *rs, struct run_slot *s)
{
	for (struct run_slot **p = &rs->ready_head; *p; p = &(*p)->rnext)
		if (*p == s) {
			*p = s->rnext;
			s->rnext = NULL;
			s->ready = false;
			rs->n_ready--;
			return;
		}
}

static void slot_unlist(struct ts_runs *rs, struct run_slot *s)
{
	for (struct run_slot **p = &rs->slots; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			s->next = NULL;
			s->listed = false;
			rs->n_slots--;
			break;
		}
	if (s->home) {
		/* the worker holding its runner frees it when it next wakes */
		s->home->cached = NULL;
		s->home->stale = true;
		s->home = NULL;
	}
	slot_maybe_free(rs, s);
}

/* The slot of run (is_run) or sandbox id, made (evicting the least recently used idle one
 * when TS_RUNS_SLOTS are taken) when there is none; NULL when every slot is busy. */
static struct run_slot *slot_get(struct ts_runs *rs, const char *id, bool is_run)
{
	struct run_slot *s, *lru = NULL;

	for (s = rs->slots; s; s = s->next) {
		if (id[0] && s->is_run == is_run && !strcmp(s->id, id))
			return s;
		if (!s->busy && !s->n_jobs && !s->ready && (!lru || s->used_ms < lru->used_ms))
			lru = s;
	}
	if (rs->n_slots >= TS_RUNS_SLOTS) {
		if (!lru)
			return NULL;
		slot_unlist(rs, lru);
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->is_run = is_run;
	s->listed = true;
	s->used_ms = (long long)ts_now_ms();
	s->next = rs->slots;
	rs->slots = s;
	rs->n_slots++;
	return s;
}

/* --- the state's lifetime ----------------------------------------------------------------- */

static void approval_free(struct approval *a)
{
	free(a->run);
	free(a->tool);
	free(a->summary);
	free(a->args);
	free(a->reason);
	free(a);
}

static void runs_destroy(struct ts_runs *rs)
{
	while (rs->slots) {
		struct run_slot *s = rs->slots;

		rs->slots = s->next;
		while (s->head) {
			struct ts_run_job *j = s->head;

			s->head = j->next;
			ts_run_job_free(j);
		}
		free(s);
	}
	while (rs->done_head) {
		struct ts_run_job *j = rs->done_head;

		rs->done_head = j->next;
		ts_run_job_free(j);
	}
	while (rs->approvals) {
		struct approval *a = rs->approvals;

		rs->approvals = a->next;
		approval_free(a);
	}
	if (rs->efd >= 0)
		close(rs->efd);
	pthread_cond_destroy(&rs->work_cv);
	pthread_cond_destroy(&rs->exit_cv);
	pthread_cond_destroy(&rs->approval_cv);
	pthread_mutex_destroy(&rs->mu);
	free(rs);
}

/* Drop a reference (mu held on entry, released here); the last one frees. */
static void runs_unref_unlock(struct ts_runs *rs)
{
	bool last = --rs->refs == 0;

	pthread_mutex_unlock(&rs->mu);
	if (last)
		runs_destroy(rs);
}

static void deadline_in(struct timespec *ts, long long ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += (time_t)(ms / 1000);
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* --- the approval queue (on workers) ---------------------------------------------------- */

static char *strdup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

/* Forget the oldest decided approvals past TS_RUNS_DECIDED_KEEP (mu held). */
static void approvals_prune(struct ts_runs *rs)
{
	for (struct approval **p = &rs->approvals; *p && rs->n_decided > TS_RUNS_DECIDED_KEEP;) {
		struct approval *a = *p;

		if (a->state == APPROVAL_PENDING || a->waiting) {
			p = &a->next;
			continue;
		}
		*p = a->next;
		rs->n_decided--;
		approval_free(a);
	}
}

static int http_ask(void *userdata, const struct ts_approval_req *q, bool *allow, char **reason,
		    struct ts_error *err)
{
	struct ts_runs *rs = userdata;
	struct approval *a = calloc(1, sizeof(*a)), **p;
	uint8_t rnd[8];
	struct timespec deadline;
	int r = 0;

	if (!a)
		return ts_err(err, -ENOMEM, "out of memory");
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		free(a);
		return ts_err_errno(err, -errno, "getrandom");
	}
	snprintf(a->id, sizeof(a->id), "ap_%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1],
		 rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	a->run = strdup_or_empty(q->run);
	a->tool = strdup_or_empty(q->tool);
	a->summary = strdup_or_empty(q->summary);
	bool show_args = q->args && strlen(q->args) <= TS_RUNS_APPROVAL_ARGS_MAX;
	a->args = show_args ? strdup(q->args) : NULL;
	a->call = q->call;
	a->created_ms = ts_realtime_ms();
	a->waiting = true;
	if (!a->run || !a->tool || !a->summary || (show_args && !a->args)) {
		approval_free(a);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	deadline_in(&deadline, TS_RUNS_APPROVAL_MS);
	pthread_mutex_lock(&rs->mu);
	if (rs->stopping) {
		pthread_mutex_unlock(&rs->mu);
		approval_free(a);
		return ts_err(err, -ECANCELED,
			      "serve is stopping: nobody can approve the call now");
	}
	for (p = &rs->approvals; *p; p = &(*p)->next)
		;
	*p = a;
	while (a->state == APPROVAL_PENDING) {
		int rc = pthread_cond_timedwait(&rs->approval_cv, &rs->mu, &deadline);

		if (rc == ETIMEDOUT && a->state == APPROVAL_PENDING) {
			a->state = APPROVAL_EXPIRED;
			rs->n_decided++;
		}
	}
	a->waiting = false;
	if (a->state == APPROVAL_CANCELLED) {
		r = ts_err(err, -ECANCELED,
			   "serve stopped while approval %s was pending: the call was not run; it "
			   "runs (and asks) again when the run repeats it",
			   a->id);
	} else if (a->state == APPROVAL_EXPIRED) {
		*allow = false;
		*reason = NULL;
		if (asprintf(reason, "no decision on approval %s within %lld s", a->id,
			     TS_RUNS_APPROVAL_MS / 1000) < 0)
			*reason = NULL;
	} else {
		*allow = a->allow;
		*reason = a->reason ? strdup(a->reason) : NULL;
	}
	approvals_prune(rs);
	pthread_mutex_unlock(&rs->mu);
	return r;
}

/* --- the approval queue (on the loop) ----------------------------------------------------- */

json_t *ts_runs_approvals(struct ts_runs *rs)
{
	json_t *arr = json_array();

	if (!arr)
		return NULL;
	pthread_mutex_lock(&rs->mu);
	for (struct approval *a = rs->approvals; a; a = a->next) {
		json_t *args = NULL, *o;

		if (a->state != APPROVAL_PENDING)
			continue;
		if (a->args)
			args = json_loads(a->args, 0, NULL);
		o = json_pack(
			"{s:s, s:o, s:o, s:s, s:s, s:o, s:b, s:I}", "id", a->id, "run",
			a->run[0] ? json_string(a->run) : json_null(), "call",
			a->call == UINT64_MAX ? json_null() : json_integer((json_int_t)a->call),
			"tool", a->tool, "summary", a->summary, "args", args ? args : json_null(),
			"args_truncated", !a->args, "created_ms", (json_int_t)a->created_ms);
		if (!o || json_array_append_new(arr, o) < 0) {
			json_decref(arr);
			arr = NULL;
			break;
		}
	}
	pthread_mutex_unlock(&rs->mu);
	return arr;
}

int ts_runs_decide(struct ts_runs *rs, const char *id, bool allow, const char *reason,
		   struct ts_error *err)
{
	static const char *const state_names[] = { "pending", "decided", "cancelled", "timed out" };
	_cleanup_free_ char *why = reason ? strdup(reason) : NULL;
	struct approval *a;
	int r = 0;

	if (reason && !why)
		return ts_err(err, -ENOMEM, "out of memory");
	pthread_mutex_lock(&rs->mu);
	for (a = rs->approvals; a && strcmp(a->id, id); a = a->next)
		;
	if (!a) {
		r = ts_err(err, -ENOENT,
			   "no approval `%.40s`: GET /v1/approvals lists the pending ones", id);
	} else if (a->state != APPROVAL_PENDING) {
		r = ts_err(err, -EALREADY, "approval %s is %s already%s", a->id,
			   state_names[a->state],
			   a->state == APPROVAL_DECIDED ? (a->allow ? " (approved)" : " (denied)")
							: "");
	} else {
		a->state = APPROVAL_DECIDED;
		a->allow = allow;
		a->reason = TAKE_PTR(why);
		rs->n_decided++;
		pthread_cond_broadcast(&rs->approval_cv);
	}
	pthread_mutex_unlock(&rs->mu);
	return r;
}

/* --- workers ----------------------------------------------------------------------------- */

static void worker_drop_runner(struct worker *w)
{
	ts_runner_free(w->runner);
	w->runner = NULL;
	ts_agent_free(&w->agent);
}

/* The runner of slot s, for a call: the run's recorded configuration, or the default. */
static int worker_open(struct worker *w, struct run_slot *s, const char *id, struct ts_error *err)
{
	struct ts_runs *rs = w->rs;
	struct ts_runner_opts o = {
		.backend = w->be,
		.agent = &w->agent,
		.approver = &rs->approver,
		.append_unkeyed = true,
	};
	int r;

	if (s->is_run) {
		_cleanup_(ts_run_rec_clear) struct ts_run_rec rec = { 0 };

		if ((r = ts_runlog_run_get(w->log, id, &rec, err)) < 0)
			return r;
		r = ts_agent_from_record(rec.agent_json, &w->agent, err);
		if (r < 0)
			return ts_err_prefix(err, r, "run %s", id);
		o.log = w->log;
		o.run_id = id;
	} else {
		if ((r = ts_agent_default(&w->agent, err)) < 0)
			return r;
		o.sandbox_id = id;
	}
	r = ts_runner_open(&o, &w->runner, err);
	if (r < 0)
		ts_agent_free(&w->agent);
	return r;
}

static void run_job(struct worker *w, struct run_slot *s, struct ts_run_job *j)
{
	struct ts_runs *rs = w->rs;
	int r = 0;

	if (!w->be && (r = ts_backend_open(rs->backend, &w->be, &j->err)) < 0)
		goto out;
	if (!w->log && (j->kind == TS_RUN_JOB_OPEN || s->is_run) &&
	    (r = ts_runlog_open_default(&w->log, &j->err)) < 0)
		goto out;
	if (j->kind == TS_RUN_JOB_OPEN) {
		struct ts_runner_opts o = {
			.backend = w->be,
			.agent = &w->agent,
			.log = w->log,
			.sandbox_id = j->sandbox,
			.approver = &rs->approver,
			.append_unkeyed = true,
		};

		worker_drop_runner(w);
		w->agent = j->agent;
		j->agent = (struct ts_agent){ 0 };
		r = ts_runner_open(&o, &w->runner, &j->err);
		if (r < 0) {
			ts_agent_free(&w->agent);
			goto out;
		}
		snprintf(j->run_id, sizeof(j->run_id), "%s", ts_runner_run_id(w->runner));
		snprintf(j->sandbox_id, sizeof(j->sandbox_id), "%s",
			 ts_runner_sandbox_id(w->runner));
		j->tools = ts_toolbox_schemas(ts_runner_tools_version(w->runner));
		pthread_mutex_lock(&rs->mu);
		snprintf(s->id, sizeof(s->id), "%s", j->run_id);
		pthread_mutex_unlock(&rs->mu);
		goto out;
	}
	if (!w->runner && (r = worker_open(w, s, s->is_run ? j->run : j->sandbox, &j->err)) < 0)
		goto out;
	r = ts_runner_call(w->runner, j->key, j->tool, j->args, &j->res, &j->info, &j->err);
	/* a divergence leaves the runner as good as it was; after any other failure (the log,
	 * the sandbox, a finished run) the next call opens it afresh */
	if (r < 0 && r != -EILSEQ)
		worker_drop_runner(w);
out:
	j->r = r;
}

/* A slot w may take: its own (its runner is open), or one no idle worker holds open. */
static struct run_slot *pick(struct ts_runs *rs, struct worker *w)
{
	for (struct run_slot *s = rs->ready_head; s; s = s->rnext)
		if (s->home == w)
			return s;
	for (struct run_slot *s = rs->ready_head; s; s = s->rnext)
		if (!s->home)
			return s;
	return NULL;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct ts_runs *rs = w->rs;
	struct run_slot *s;

	pthread_mutex_lock(&rs->mu);
	rs->n_starting--;
	for (;;) {
		if (w->stale) {
			w->stale = false;
			pthread_mutex_unlock(&rs->mu);
			worker_drop_runner(w);
			pthread_mutex_lock(&rs->mu);
			continue;
		}
		s = rs->stopping ? NULL : pick(rs, w);
		if (!s && !rs->stopping) {
			struct timespec deadline;
			int rc = 0;

			deadline_in(&deadline, TS_RUNS_IDLE_MS);
			rs->n_idle++;
			while (!rs->stopping && !w->stale && !(s = pick(rs, w)) && rc != ETIMEDOUT)
				rc = pthread_cond_timedwait(&rs->work_cv, &rs->mu, &deadline);
			rs->n_idle--;
			if (w->stale && !s)
				continue;
		}
		if (!s)
			break;
		ready_remove(rs, s);
		s->busy = true;
		w->busy = true;
		if (w->cached != s) {
			struct run_slot *old = w->cached;

			/* the runner open is another slot's: let go of that one */
			if (old) {
				old->home = NULL;
				slot_maybe_free(rs, old);
				if (old->ready)
					pthread_cond_broadcast(&rs->work_cv);
			}
			w->cached = s;
			s->home = w;
			pthread_mutex_unlock(&rs->mu);
			worker_drop_runner(w);
			pthread_mutex_lock(&rs->mu);
		}
		struct ts_run_job *j;
		while (!rs->stopping && (j = s->head)) {
			pthread_mutex_unlock(&rs->mu);
			run_job(w, s, j);
			pthread_mutex_lock(&rs->mu);
			s->head = j->next;
			if (!s->head)
				s->tail = NULL;
			j->next = NULL;
			s->n_jobs--;
			rs->n_jobs--;
			if (rs->done_tail)
				rs->done_tail->next = j;
			else
				rs->done_head = j;
			rs->done_tail = j;
			uint64_t one = 1;
			/* the loop reads the counter back to 0; a full counter needs no more */
			(void)!write(rs->efd, &one, sizeof(one));
		}
		s->busy = false;
		w->busy = false;
		s->used_ms = (long long)ts_now_ms();
		if (s->head && !rs->stopping)
			ready_add(rs, s);
		/* an OPEN that failed leaves a slot that names no run: nothing to keep open */
		if (!s->id[0] && s->listed && !s->n_jobs) {
			slot_unlist(rs, s); /* w->cached is cleared with it */
			w->stale = false;
			pthread_mutex_unlock(&rs->mu);
			worker_drop_runner(w);
			pthread_mutex_lock(&rs->mu);
		}
	}
	if (w->cached) {
		struct run_slot *c = w->cached;

		w->cached = NULL;
		c->home = NULL;
		slot_maybe_free(rs, c);
	}
	pthread_mutex_unlock(&rs->mu);
	worker_drop_runner(w);
	ts_runlog_close(w->log);
	ts_backend_free(w->be);
	free(w);
	pthread_mutex_lock(&rs->mu);
	rs->n_threads--;
	pthread_cond_broadcast(&rs->exit_cv);
	pthread_cond_broadcast(&rs->work_cv); /* slots it held open are anyone's now */
	runs_unref_unlock(rs);
	return NULL;
}

/* One more worker (mu held). */
static int spawn(struct ts_runs *rs)
{
	struct worker *w = calloc(1, sizeof(*w));
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	if (!w)
		return -ENOMEM;
	w->rs = rs;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, worker_main, w);
	pthread_attr_destroy(&attr);
	if (rc) {
		free(w);
		return -rc;
	}
	rs->n_threads++;
	rs->n_starting++;
	rs->refs++;
	return 0;
}

/* --- the loop's side ----------------------------------------------------------------------- */

static void on_done(void *userdata, short revents)
{
	struct ts_runs *rs = userdata;
	struct ts_run_job *list;
	uint64_t v;

	(void)!read(rs->efd, &v, sizeof(v));
	pthread_mutex_lock(&rs->mu);
	list = rs->done_head;
	rs->done_head = rs->done_tail = NULL;
	pthread_mutex_unlock(&rs->mu);
	while (list) {
		struct ts_run_job *j = list;

		list = j->next;
		j->next = NULL;
		if (j->done)
			j->done(j, false);
		ts_run_job_free(j);
	}
}

int ts_runs_new(struct ts_srv *srv, struct ts_runs **ret, struct ts_error *err)
{
	struct ts_runs *rs = calloc(1, sizeof(*rs));
	pthread_condattr_t ca;

	if (!rs)
		return ts_err(err, -ENOMEM, "out of memory");
	rs->srv = srv;
	rs->refs = 1;
	snprintf(rs->backend, sizeof(rs->backend), "%s",
		 srv->opts->backend ? srv->opts->backend : "local");
	rs->approver = (struct ts_approver){ .name = "http", .ask = http_ask, .userdata = rs };
	pthread_mutex_init(&rs->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rs->work_cv, &ca);
	pthread_cond_init(&rs->exit_cv, &ca);
	pthread_cond_init(&rs->approval_cv, &ca);
	pthread_condattr_destroy(&ca);
	rs->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (rs->efd < 0) {
		int r = ts_err_errno(err, -errno, "eventfd");

		runs_destroy(rs);
		return r;
	}
	rs->watch = ts_loop_add_fd(srv->loop, rs->efd, POLLIN, on_done, rs);
	if (!rs->watch) {
		runs_destroy(rs);
		return ts_err(err, -ENOMEM, "watch the agent runner's eventfd");
	}
	*ret = rs;
	return 0;
}

int ts_runs_submit(struct ts_runs *rs, struct ts_run_job *j, struct ts_error *err)
{
	const char *id = j->kind == TS_RUN_JOB_CALL ? (j->run ? j->run : j->sandbox) : "";
	struct run_slot *s;
	int r = 0;

	pthread_mutex_lock(&rs->mu);
	if (rs->stopping) {
		r = ts_err(err, -ESHUTDOWN, "serve is stopping");
		goto out;
	}
	if (rs->n_jobs >= TS_RUNS_JOBS) {
		r = ts_err(err, -EAGAIN,
			   "%u tool calls are queued or running in serve, its most: repeat the "
			   "call later",
			   TS_RUNS_JOBS);
		goto out;
	}
	s = slot_get(rs, id ? id : "", j->kind == TS_RUN_JOB_OPEN || j->run);
	if (!s) {
		r = ts_err(err, -EAGAIN,
			   "%u runs and sandboxes have calls queued or running, serve's most: "
			   "repeat the call later",
			   TS_RUNS_SLOTS);
		goto out;
	}
	if (s->n_jobs >= TS_RUNS_QUEUE) {
		r = ts_err(err, -EAGAIN,
			   "%u calls of %s `%s` are queued or running, the most one run may have: "
			   "repeat the call once one is answered",
			   TS_RUNS_QUEUE, s->is_run ? "run" : "sandbox", s->id);
		goto out;
	}
	j->slot = s;
	j->next = NULL;
	if (s->tail)
		s->tail->next = j;
	else
		s->head = j;
	s->tail = j;
	s->n_jobs++;
	rs->n_jobs++;
	s->used_ms = (long long)ts_now_ms();
	ready_add(rs, s);
	/* a worker for every ready slot the idle ones (and those starting) cannot take */
	if (rs->n_ready > rs->n_idle + rs->n_starting && rs->n_threads < TS_RUNS_THREADS &&
	    spawn(rs) < 0 && rs->n_threads == 0) {
		/* none could be made and none is there: the call would never run */
		struct ts_run_job **p = &s->head;

		while (*p != j)
			p = &(*p)->next;
		*p = NULL;
		s->tail = NULL;
		for (struct ts_run_job *q = s->head; q; q = q->next)
			s->tail = q;
		s->n_jobs--;
		rs->n_jobs--;
		if (!s->head)
			ready_remove(rs, s);
		r = ts_err(err, -EAGAIN,
			   "serve cannot start a worker thread: repeat the call later");
		goto out;
	}
	pthread_cond_broadcast(&rs->work_cv);
out:
	pthread_mutex_unlock(&rs->mu);
	return r;
}

int ts_runs_log(struct ts_runs *rs, struct ts_runlog **ret, struct ts_error *err)
{
	int r = 0;

	if (!rs->loop_log)
		r = ts_runlog_open_default(&rs->loop_log, err);
	*ret = rs->loop_log;
	return r;
}

void ts_runs_free(struct ts_runs *rs)
{
	struct ts_run_job *dropped = NULL, *done, *running[TS_RUNS_THREADS];
	struct timespec deadline;
	size_t n_running = 0;

	if (!rs)
		return;
	ts_loop_del_fd(rs->watch);
	rs->watch = NULL;
	pthread_mutex_lock(&rs->mu);
	rs->stopping = true;
	for (struct approval *a = rs->approvals; a; a = a->next)
		if (a->state == APPROVAL_PENDING) {
			a->state = APPROVAL_CANCELLED;
			rs->n_decided++;
		}
	pthread_cond_broadcast(&rs->approval_cv);
	pthread_cond_broadcast(&rs->work_cv);
	/* calls not started are dropped: never recorded, the client may repeat them */
	for (struct run_slot *s = rs->slots; s; s = s->next) {
		struct ts_run_job *keep = s->busy ? s->head : NULL;
		struct ts_run_job *from = keep ? keep->next : s->head;

		while (from) {
			struct ts_run_job *j = from;

			from = j->next;
			j->next = dropped;
			dropped = j;
			s->n_jobs--;
			rs->n_jobs--;
		}
		if (keep)
			keep->next = NULL;
		s->head = s->tail = keep;
		ready_remove(rs, s);
	}
	pthread_mutex_unlock(&rs->mu);
	while (dropped) {
		struct ts_run_job *j = dropped;

		dropped = j->next;
		if (j->done)
			j->done(j, true);
		ts_run_job_free(j);
	}

	/* running calls may finish within the bound */
	deadline_in(&deadline, TS_RUNS_STOP_MS);
	pthread_mutex_lock(&rs->mu);
	while (rs->n_threads > 0 &&
	       pthread_cond_timedwait(&rs->exit_cv, &rs->mu, &deadline) != ETIMEDOUT)
		;
	done = rs->done_head;
	rs->done_head = rs->done_tail = NULL;
	for (struct run_slot *s = rs->slots; s; s = s->next) {
		if (s->busy && s->head && n_running < ELEMENTSOF(running)) {
			running[n_running++] = s->head;
			continue;
		}
		/* a head its worker saw only after serve began to stop never ran */
		while (!s->busy && s->head) {
			struct ts_run_job *j = s->head;

			s->head = j->next;
			j->next = dropped;
			dropped = j;
			s->n_jobs--;
			rs->n_jobs--;
		}
		if (!s->head)
			s->tail = NULL;
	}
	pthread_mutex_unlock(&rs->mu);
	while (done) {
		struct ts_run_job *j = done;

		done = j->next;
		if (j->done)
			j->done(j, false);
		ts_run_job_free(j);
	}
	while (dropped) {
		struct ts_run_job *j = dropped;

		dropped = j->next;
		if (j->done)
			j->done(j, true);
		ts_run_job_free(j);
	}
	/* abandoned: answered now; their workers still own them and end on their own */
	for (size_t i = 0; i < n_running; i++)
		if (running[i]->done)
			running[i]->done(running[i], true);
	ts_runlog_close(rs->loop_log);
	rs->loop_log = NULL;
	pthread_mutex_lock(&rs->mu);
	runs_unref_unlock(rs);
}
