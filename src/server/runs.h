/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * serve's agent runner (the routes are v1-runs.c's): tool calls of durable runs and of
 * sandboxes without a run, executed off the loop, and the HTTP approval queue.
 *
 * The loop never waits on a tool call: a call can last minutes (bash) or wait for a human
 * (approval). Calls go to worker threads, at most TS_RUNS_THREADS, made when needed and
 * gone after TS_RUNS_IDLE_MS without work. A worker owns everything it calls: its own
 * backend handle and event log handle (both belong to one thread), and the runner of the
 * run it served last, kept open so that the next call of that run goes to it again. The
 * calls of one run (or of one sandbox without a run) form a queue executed in order, one
 * at a time: the runner's call positions and the log's keys depend on that order; calls of
 * different runs run in parallel. A worker hands a finished call back through an eventfd
 * watched by the loop, which then answers the deferred request (http.h's ts_req_defer).
 *
 * Approvals: a gated call's worker asks the queue (the struct ts_approver "http") and
 * waits, on a condition variable, for the loop to record a decision (POST
 * /v1/approvals/ID), at most TS_RUNS_APPROVAL_MS (then the call is denied, saying so), or
 * until serve stops (then the approver fails: the call is never approved by default, its
 * `started` record stays, and it executes again when the run repeats it).
 *
 * Stopping (ts_runs_free): pending approvals are cancelled, queued calls are dropped
 * (never started: the client gets 503 and may repeat them), running calls get
 * TS_RUNS_STOP_MS to finish and are abandoned after it: their workers are left to end on
 * their own (the log keeps such a call `started`, so it executes again on resume:
 * at-least-once).
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent.h"
#include "error.h"
#include "runlog.h"
#include "runner.h"
#include "toolbox.h"

struct ts_srv;
struct ts_runs;

#define TS_RUNS_THREADS 16		      /* worker threads at most */
#define TS_RUNS_QUEUE 64		      /* calls queued or running per run or sandbox */
#define TS_RUNS_JOBS 1024		      /* calls queued or running in all */
#define TS_RUNS_SLOTS 1024		      /* runs and sandboxes with a queue at once */
#define TS_RUNS_IDLE_MS 60000		      /* a worker without work ends after */
#define TS_RUNS_STOP_MS 5000		      /* running calls may finish at shutdown */
#define TS_RUNS_APPROVAL_MS (3600LL * 1000)   /* a pending approval is denied after */
#define TS_RUNS_DECIDED_KEEP 256	      /* decided approvals remembered (for 409) */
#define TS_RUNS_APPROVAL_ARGS_MAX (64U << 10) /* arguments shown with an approval */

enum ts_run_job_kind {
	TS_RUN_JOB_OPEN = 1, /* begin a run (its sandbox created or connected) */
	TS_RUN_JOB_CALL,     /* one tool call of a run, or of a sandbox without a run */
};

struct ts_run_job {
	/* in: set by the caller, owned by the job */
	enum ts_run_job_kind kind;
	char *run;	       /* CALL of a run: its id */
	char *sandbox;	       /* CALL without a run: the sandbox; OPEN: one to use, or NULL */
	struct ts_agent agent; /* OPEN: the configuration (taken by the worker) */
	char *tool, *key;      /* CALL: the tool, the call key (NULL: appended) */
	json_t *args;	       /* CALL: the arguments, a copy the worker alone touches */
	/* out: filled by the worker, read by done() */
	int r; /* 0, or -errno with err */
	struct ts_error err;
	struct ts_tool_result res;
	struct ts_call_info info;
	char run_id[TS_RUN_ID_LEN + 1]; /* OPEN: the new run */
	char sandbox_id[64];		/* OPEN: its sandbox */
	json_t *tools;			/* OPEN: the tool schemas */
	/*
	 * On the loop thread, once: the call is done (abandoned false: the out fields are
	 * set), or serve stops and it never ran or is abandoned (abandoned true: the out
	 * fields must not be read). The job is freed by runs.c after it.
	 */
	void (*done)(struct ts_run_job *j, bool abandoned);
	void *userdata;
	/* runs.c's */
	struct run_slot *slot;
	struct ts_run_job *next;
};

/* A job to fill (calloc'd; kind set), and its free (for one never submitted). */
struct ts_run_job *ts_run_job_new(enum ts_run_job_kind kind);
void ts_run_job_free(struct ts_run_job *j);

/* Start serve's agent runner on srv's loop (no thread until the first call). */
int ts_runs_new(struct ts_srv *srv, struct ts_runs **ret, struct ts_error *err);
/* Stop it (see above), calling done(j, true) for every call not done; on the loop thread. */
void ts_runs_free(struct ts_runs *rs);

/*
 * Queue job (ownership passes on success: done() is called later, never from inside
 * this call). -EAGAIN when the run's queue (TS_RUNS_QUEUE) or the whole (TS_RUNS_JOBS or
 * TS_RUNS_SLOTS) is full, -ESHUTDOWN when serve stops, -ENOMEM; err says which.
 */
int ts_runs_submit(struct ts_runs *rs, struct ts_run_job *job, struct ts_error *err);

/* The loop's own event log handle (opened on first use). */
int ts_runs_log(struct ts_runs *rs, struct ts_runlog **ret, struct ts_error *err);

/* The pending approvals, oldest first: [{id, run, call, tool, summary, args, created_ms}]
 * (new reference, NULL on ENOMEM). */
json_t *ts_runs_approvals(struct ts_runs *rs);
/* Decide approval id: 0; -ENOENT (no such approval), -EALREADY (decided, cancelled or
 * timed out already); err says which. reason may be NULL. */
int ts_runs_decide(struct ts_runs *rs, const char *id, bool allow, const char *reason,
		   struct ts_error *err);
