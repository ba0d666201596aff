/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What `tool`, `mcp` and `runs new` share: the agent configuration, the backend, the event
 * log and the approver chosen from their options, opened into one runner. */
#include <stdbool.h>

#include "agent.h"
#include "approve.h"
#include "backend.h"
#include "runlog.h"
#include "runner.h"

struct ts_agent_cli {
	/* options */
	const char *agent_file;		    /* --agent */
	const char *run;		    /* --run: "new" begins one */
	const char *sandbox;		    /* the sandbox id, or NULL */
	const char *approve_cmd;	    /* --approve-cmd */
	bool no_terminal;		    /* mcp: stdio is the protocol, never ask there */
	bool append_unkeyed;		    /* tool: one call per process, appended to the run */
	const struct ts_approver *approver; /* given by the caller (mcp), else chosen here */
	/* opened by ts_agent_cli_open */
	struct ts_agent agent;
	struct ts_backend *backend;
	struct ts_runlog *log;
	struct ts_approver own_approver;
	struct ts_runner *runner;
};

/* 0, or prints the error (prefixed "toren-sandbox CMD: ") and returns -errno. */
int ts_agent_cli_open(const char *cmd, struct ts_agent_cli *a);
void ts_agent_cli_close(struct ts_agent_cli *a);
