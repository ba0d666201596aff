/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Approvers: who decides whether a gated tool call (bash under `approval: always`, a file
 * write under `approval: {write: always}`) runs. The runner asks, records the decision in
 * the event log, and turns a denial into a tool error.
 *
 *   terminal  a prompt on the controlling terminal (/dev/tty)
 *   command   --approve-cmd CMD: `sh -c CMD` with the call in its environment
 *             (TOREN_TOOL, TOREN_RUN, TOREN_CALL, TOREN_SUMMARY) and its arguments
 *             (JSON) on stdin; exit 0 approves, 1 denies (the first line of its output
 *             is the reason), anything else is an error
 *   http      serve's queue (GET /v1/approvals, POST /v1/approvals/{id})
 *   mcp       MCP elicitation, when the client declared it
 */
#include <stdbool.h>
#include <stdint.h>

#include "error.h"

struct ts_approval_req {
	const char *run; /* "" without a run */
	uint64_t call;
	const char *tool;
	const char *args;    /* JSON */
	const char *summary; /* one line: the command, or the path written */
};

struct ts_approver {
	const char *name; /* "terminal", "command", "http", "mcp" */
	/* 0 with *allow and maybe *reason (malloc'd); -errno when no decision was had (err). */
	int (*ask)(void *userdata, const struct ts_approval_req *q, bool *allow, char **reason,
		   struct ts_error *err);
	void *userdata;
};

/* A prompt on /dev/tty; -ENXIO when the process has no terminal. */
int ts_approver_terminal(struct ts_approver *ret, struct ts_error *err);
/* The --approve-cmd hook (cmd is borrowed and must outlive the approver). */
void ts_approver_command(struct ts_approver *ret, const char *cmd);
