/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The event log of durable runs: one sqlite database of its own (runs.db in the state
 * root; WAL; never state.db) holding each run (its id, agent configuration, backend,
 * sandbox and workspace) and every tool call of it, written `started` before the call
 * executes and `completed` (with its result) after.
 *
 * Durability: the `completed` commit is synchronous=FULL (an fsync of the WAL) and returns
 * only once on disk; the `started` commit is synchronous=NORMAL (written into the WAL, no
 * fsync of its own): the completed commit's fsync covers it, a killed process loses
 * neither (the WAL is in the page cache), and a power loss can lose only a `started`
 * record whose call never completed, which then executes again on resume exactly as a
 * started-but-not-completed one does. One fsync per call.
 *
 * Matching on resume (ts_runlog_call_begin): a call is identified by its key: an explicit
 * key given by the caller ("k:" + KEY), or its position counted from the start of the
 * caller's connection ("p:" + N). A recorded completed call with the same tool and
 * arguments (canonical JSON: sorted keys, compact) is a replay: its recorded result is
 * returned without executing. A recorded call that never completed executes again (its
 * attempt count grows; the result says so). A recorded call under that key with other
 * arguments is a divergence (-EILSEQ) whose message names that call.
 *
 * One handle per thread; several processes may share the file (sqlite's locking).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct ts_runlog;

#define TS_RUN_ID_LEN 16 /* "r" + 15 lowercase hex characters */

/* Open (creating it 0600, and its schema) the log at path. */
int ts_runlog_open(const char *path, struct ts_runlog **ret, struct ts_error *err);
/* $state_root/runs.db */
int ts_runlog_open_default(struct ts_runlog **ret, struct ts_error *err);
void ts_runlog_close(struct ts_runlog *l);
static inline void ts_runlog_closep(struct ts_runlog **l)
{
	ts_runlog_close(*l);
}

struct ts_run_rec {
	char id[TS_RUN_ID_LEN + 1];
	long long created_ms, finished_ms; /* finished 0: live */
	char *agent_json;		   /* the agent configuration it was created with */
	char *agent_path;		   /* "" when none */
	char *backend;			   /* "local", "e2b" */
	char *sandbox_id;		   /* "" until it has one */
	char *workspace;		   /* local: the host directory; "" elsewhere */
	uint64_t n_calls;
};
void ts_run_rec_clear(struct ts_run_rec *r);

/* A new live run; id_out gets its id. */
int ts_runlog_run_new(struct ts_runlog *l, const char *agent_json, const char *agent_path,
		      const char *backend, const char *workspace, char id_out[TS_RUN_ID_LEN + 1],
		      struct ts_error *err);
/* -ENOENT: no such run. */
int ts_runlog_run_get(struct ts_runlog *l, const char *id, struct ts_run_rec *ret,
		      struct ts_error *err);
int ts_runlog_run_set_sandbox(struct ts_runlog *l, const char *id, const char *sandbox_id,
			      struct ts_error *err);
/* local: the run's own workspace directory, made once the run has its id. */
int ts_runlog_run_set_workspace(struct ts_runlog *l, const char *id, const char *workspace,
				struct ts_error *err);
int ts_runlog_run_finish(struct ts_runlog *l, const char *id, struct ts_error *err);
/* Every run, newest first. */
int ts_runlog_run_list(struct ts_runlog *l, struct ts_run_rec **ret, size_t *n,
		       struct ts_error *err);
void ts_run_recs_free(struct ts_run_rec *v, size_t n);

enum ts_call_kind {
	TS_CALL_NEW = 1, /* never seen: execute, then complete */
	TS_CALL_REPLAY,	 /* completed before: *result is the recorded result */
	TS_CALL_RETRY,	 /* started before, never completed: execute again */
};

struct ts_call_rec {
	uint64_t index; /* the call's index in the run (0, 1, ...) */
	char *key;	/* "k:KEY" or "p:N" */
	char *tool;
	char *args;	   /* canonical JSON */
	char *result;	   /* JSON, NULL until completed */
	unsigned attempts; /* executions started (1, or more after retries) */
	long long started_ms, completed_ms;
	bool completed;
};
void ts_call_rec_clear(struct ts_call_rec *c);

/*
 * Record call (tool, args: canonical JSON) of run under key (explicit: "k:..." ; by
 * position: "p:N"; NULL: append, key "p:" + its index) as started, unless a record says
 * otherwise: *kind and *rec (the record as it is now) tell. -EILSEQ (divergence: err names
 * the recorded call and how it differs), -ENOENT (no such run), -ESTALE (the run is
 * finished), -EINVAL (a malformed key, tool name or JSON), -E2BIG (arguments over 8 MiB, a
 * key over 512 bytes), -EEXIST (append: key "p:" + the next index was given to another call).
 */
int ts_runlog_call_begin(struct ts_runlog *l, const char *run, const char *key, const char *tool,
			 const char *args, enum ts_call_kind *kind, struct ts_call_rec *rec,
			 struct ts_error *err);
/* The result (JSON, at most 8 MiB) of call index of run, durably (fsync) before returning.
 * -ENOENT (no such call), -EALREADY (completed already: the recorded result stands). */
int ts_runlog_call_complete(struct ts_runlog *l, const char *run, uint64_t index,
			    const char *result, struct ts_error *err);

/* Every call of run in order (for `runs show|export` and GET /v1/runs/{run}/events). */
int ts_runlog_call_list(struct ts_runlog *l, const char *run, uint64_t from,
			struct ts_call_rec **ret, size_t *n, struct ts_error *err);
void ts_call_recs_free(struct ts_call_rec *v, size_t n);

/*
 * Other events of a run (an approval decision, a sandbox rebuilt): type and data (JSON),
 * with the index of the call they belong to (UINT64_MAX: none). synchronous=NORMAL: they
 * reach the disk with the next completed call.
 */
int ts_runlog_event(struct ts_runlog *l, const char *run, uint64_t call, const char *type,
		    const char *data, struct ts_error *err);

struct ts_run_event {
	uint64_t seq, call;
	long long ms;
	char *type, *data;
};
int ts_runlog_event_list(struct ts_runlog *l, const char *run, struct ts_run_event **ret, size_t *n,
			 struct ts_error *err);
void ts_run_events_free(struct ts_run_event *v, size_t n);

/* What the file tools remember between calls of a run: the content hash of each file as
 * the run last read or wrote it ("" / -ENOENT: never; set "": forget it). */
int ts_runlog_seen_get(struct ts_runlog *l, const char *run, const char *path, char *hash,
		       size_t len, struct ts_error *err);
int ts_runlog_seen_set(struct ts_runlog *l, const char *run, const char *path, const char *hash,
		       struct ts_error *err);
