/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The agent runner: an agent's configuration, its sandbox (through the backend interface
 * only), its toolbox, its approver and, for a durable run, the event log.
 *
 * A call goes: match against the log (replay / divergence), gate (approval), record
 * `started`, execute on the toolbox, record `completed` (durably), return. When the
 * sandbox is gone, the run's next call rebuilds it around the same workspace (local) or
 * reconnects by id (e2b), and the event log says so.
 */
#include <jansson.h>
#include <stdbool.h>

#include "agent.h"
#include "approve.h"
#include "backend.h"
#include "runlog.h"
#include "toolbox.h"

struct ts_runner;

struct ts_runner_opts {
	struct ts_backend *backend; /* borrowed */
	const struct ts_agent *agent;
	/* A durable run: log (borrowed) and run_id (NULL: a new run, ts_runner_run_id says
	 * which). Without a log: calls are not recorded, sandbox_id is required. */
	struct ts_runlog *log;
	const char *run_id;
	const char *sandbox_id;		    /* a sandbox to use (a run records it) */
	const struct ts_approver *approver; /* NULL: a gated call fails, naming the ways */
	/* Calls without a key are numbered from the start of this connection (false) or
	 * appended after the run's last call (true: the CLI's one-call processes). */
	bool append_unkeyed;
};

int ts_runner_open(const struct ts_runner_opts *o, struct ts_runner **ret, struct ts_error *err);
void ts_runner_free(struct ts_runner *r);
static inline void ts_runner_freep(struct ts_runner **r)
{
	ts_runner_free(*r);
}
const char *ts_runner_run_id(const struct ts_runner *r); /* "" without a run */
/* The sandbox (connected or created on the first call that needs one): "" before. */
const char *ts_runner_sandbox_id(const struct ts_runner *r);
unsigned ts_runner_tools_version(const struct ts_runner *r);

/* The outcome of one call beyond the tool's own result. */
struct ts_call_info {
	uint64_t index;	  /* in the run (UINT64_MAX without a run) */
	bool replayed;	  /* the recorded result, not executed now */
	unsigned attempt; /* 1, or more when an interrupted call executed again */
};

/*
 * One tool call. key: the caller's call key, or NULL (by position). 0 with *res (a tool
 * error, a denial and a refused unknown tool included); -EILSEQ on divergence, -errno
 * when the log or the sandbox failed (err says which).
 */
int ts_runner_call(struct ts_runner *r, const char *key, const char *tool, json_t *args,
		   struct ts_tool_result *res, struct ts_call_info *info, struct ts_error *err);

/*
 * The runs' part of `reap`: stop (local; elsewhere: kill) the running sandboxes that the
 * runner made (label toren.agent) whose run is finished, and those older than
 * TS_RUNNER_ORPHAN_MS that belong to no run of the log. A live run's sandbox is never
 * touched, nor a sandbox the runner did not make; nothing is deleted (a stopped local
 * sandbox keeps its files, and the run's workspace is the run's). fn hears each action
 * (reason "run-finished" or "orphan"); *failed counts the stops that failed.
 */
#define TS_RUNNER_ORPHAN_MS (24LL * 3600 * 1000)
int ts_runner_reap(struct ts_backend *b, struct ts_runlog *l, bool dry_run, ts_reap_fn fn,
		   void *userdata, unsigned *failed, struct ts_error *err);
/* The same on the default log, when there is one (no runs.db: nothing to do). */
int ts_runner_reap_default(struct ts_backend *b, bool dry_run, ts_reap_fn fn, void *userdata,
			   unsigned *failed, struct ts_error *err);
