/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent toolkit's steps: each C_TOOL is one call through the runner (without a run:
 * no event log) on the sandbox of its slot, as an agent of `sandbox: true` whose calls
 * need no approval; the slot keeps its runner for the scenario, as an agent does. The
 * runner calls only backend.h, so the same step list shows the tools behave the same on
 * every backend.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "runner.h"

struct conf_agent {
	struct ts_agent agent;
	struct ts_runner *runner;
	unsigned version;
};

void conf_tool_reset(struct conf *c, int slot)
{
	struct conf_agent *a = c->agent[slot];

	if (!a)
		return;
	ts_runner_free(a->runner);
	ts_agent_free(&a->agent);
	free(a);
	c->agent[slot] = NULL;
}

/* The slot's agent of tool-set version v (a new one when the version changes). */
static struct conf_agent *agent_of(struct conf *c, int slot, unsigned v)
{
	struct conf_agent *a = c->agent[slot];
	struct ts_error err = { 0 };

	if (a && a->version == v)
		return a;
	conf_tool_reset(c, slot);
	if (!(a = calloc(1, sizeof(*a)))) {
		conf_fail(c, "out of memory");
		return NULL;
	}
	c->agent[slot] = a;
	if (ts_agent_default(&a->agent, &err) < 0) {
		conf_fail(c, "the default agent: %s", err.msg);
		return NULL;
	}
	a->agent.approve_bash = TS_APPROVAL_NEVER;
	a->agent.tools = a->version = v;
	struct ts_runner_opts o = { .backend = c->r->b,
				    .agent = &a->agent,
				    .sandbox_id = c->id[slot] };
	if (ts_runner_open(&o, &a->runner, &err) < 0) {
		conf_fail(c, "the runner on slot %d: %s", slot, err.msg);
		return NULL;
	}
	return a;
}

int conf_tool_step(struct conf *c, const struct conf_step *st)
{
	const struct conf_expect *e = &st->expect;
	struct ts_tool_result res = { 0 };
	struct ts_call_info info;
	struct ts_error err = { 0 };
	char args_text[65536], want[4096];
	json_error_t jerr;
	json_t *args = NULL;
	struct conf_agent *a;
	int r;

	if (conf_need_sb(c, st->sb) < 0)
		return -1;
	if (!(a = agent_of(c, st->sb, st->limit ? st->limit : TS_TOOLS_VERSION_MAX)))
		return -1;
	if (!conf_expand(c, st->text ? st->text : "{}", args_text, sizeof(args_text)) ||
	    !(args = json_loads(args_text, 0, &jerr)))
		return conf_fail(c, "the step's arguments are not JSON: %s", jerr.text);
	r = ts_runner_call(a->runner, NULL, st->tool, args, &res, &info, &err);
	json_decref(args);
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
	return r < 0 ? -1 : 0;
}
