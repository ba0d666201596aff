/* SPDX-License-Identifier: Apache-2.0 */
/* The agent commands' common opening: configuration, backend, log, approver, runner. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent-text.h"
#include "agentcli.h"
#include "cli.h"

int ts_agent_cli_open(const char *cmd, struct ts_agent_cli *a)
{
	struct ts_error err = { 0 };
	int r;

	/* a run resumed without --agent goes on with the configuration it was begun with */
	bool resume = a->run && strcmp(a->run, "new") != 0;
	if (a->run && (r = ts_runlog_open_default(&a->log, &err)) < 0)
		goto fail;
	if (a->agent_file) {
		r = ts_agent_load(a->agent_file, &a->agent, &err);
	} else if (resume) {
		struct ts_run_rec rec = { 0 };
		r = ts_runlog_run_get(a->log, a->run, &rec, &err);
		if (r == 0)
			r = ts_agent_from_record(rec.agent_json, &a->agent, &err);
		ts_run_rec_clear(&rec);
	} else {
		r = ts_agent_default(&a->agent, &err);
	}
	if (r < 0)
		goto fail;
	/* --backend and TOREN_SANDBOX win over the agent's own choice */
	if (a->agent.backend && !getenv("TOREN_SANDBOX"))
		r = ts_backend_open(a->agent.backend, &a->backend, &err);
	else
		r = ts_backend_open(NULL, &a->backend, &err);
	if (r < 0)
		goto fail;
	if (!a->approver) {
		if (a->approve_cmd) {
			ts_approver_command(&a->own_approver, a->approve_cmd);
			a->approver = &a->own_approver;
		} else if (!a->no_terminal && isatty(STDIN_FILENO) &&
			   ts_approver_terminal(&a->own_approver, &err) == 0) {
			a->approver = &a->own_approver;
		}
		ts_err_clear(&err);
	}
	struct ts_runner_opts o = {
		.backend = a->backend,
		.agent = &a->agent,
		.log = a->log,
		.run_id = a->run && strcmp(a->run, "new") != 0 ? a->run : NULL,
		.sandbox_id = a->sandbox,
		.approver = a->approver,
		.append_unkeyed = a->append_unkeyed,
	};
	if ((r = ts_runner_open(&o, &a->runner, &err)) < 0)
		goto fail;
	return 0;
fail:
	ts_cli_error(cmd, &err);
	ts_agent_cli_close(a);
	return r;
}

void ts_agent_cli_close(struct ts_agent_cli *a)
{
	ts_runner_free(a->runner);
	a->runner = NULL;
	ts_runlog_close(a->log);
	a->log = NULL;
	ts_backend_free(a->backend);
	a->backend = NULL;
	ts_agent_free(&a->agent);
}
