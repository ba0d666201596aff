/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent toolkit's steps: each C_TOOL is one call through the runner (without a run:
 * no event log) on the sandbox of its slot, as an agent of `sandbox: true` whose calls
 * need no approval. The runner calls only backend.h, so the same step list shows the
 * tools behave the same on every backend.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "runner.h"

int conf_tool_step(struct conf *c, const struct conf_step *st)
{
	const struct conf_expect *e = &st->expect;
	struct ts_agent agent = { 0 };
	struct ts_runner *run = NULL;
	struct ts_tool_result res = { 0 };
	struct ts_call_info info;
	struct ts_error err = { 0 };
	char args_text[65536], want[4096];
	json_error_t jerr;
	json_t *args = NULL;
	int r;

	if (conf_need_sb(c, st->sb) < 0)
		return -1;
	if (!conf_expand(c, st->text ? st->text : "{}", args_text, sizeof(args_text)) ||
	    !(args = json_loads(args_text, 0, &jerr)))
		return conf_fail(c, "the step's arguments are not JSON: %s", jerr.text);
	if ((r = ts_agent_default(&agent, &err)) < 0) {
		json_decref(args);
		return conf_fail(c, "the default agent: %s", err.msg);
	}
	agent.approve_bash = TS_APPROVAL_NEVER;
	if (st->limit)
		agent.tools = st->limit;
	struct ts_runner_opts o = { .backend = c->r->b,
				    .agent = &agent,
				    .sandbox_id = c->id[st->sb] };
	r = ts_runner_open(&o, &run, &err);
	if (r == 0)
		r = ts_runner_call(run, NULL, st->tool, args, &res, &info, &err);
	if ((r = conf_check_code(c, r, &err, e)) != 0)
		goto out;
	const char *code = json_string_value(json_object_get(res.data, "error"));
	if (e->tool_error && (!res.is_error || !code || strcmp(code, e->tool_error) != 0))
		r = conf_fail(c, "%s: want the tool error %s, got %s (%.300s)", st->tool,
			      e->tool_error, res.is_error ? (code ? code : "?") : "success",
			      res.text);
	else if (!e->tool_error && res.is_error)
		r = conf_fail(c, "%s: a tool error %s (%.300s)", st->tool, code ? code : "?",
			      res.text);
	else if (e->out && strcmp(res.text, conf_expand(c, e->out, want, sizeof(want))) != 0)
		r = conf_fail(c, "%s: text `%.300s`, want `%s`", st->tool, res.text, want);
	else if (e->out_has && !strstr(res.text, conf_expand(c, e->out_has, want, sizeof(want))))
		r = conf_fail(c, "%s: text `%.400s` lacks `%s`", st->tool, res.text, want);
	else if (e->out_lacks && strstr(res.text, conf_expand(c, e->out_lacks, want, sizeof(want))))
		r = conf_fail(c, "%s: text `%.400s` has `%s`", st->tool, res.text, want);
	else
		r = 0;
out:
	ts_tool_result_clear(&res);
	ts_runner_free(run);
	ts_agent_free(&agent);
	json_decref(args);
	return r < 0 ? -1 : 0;
}
