/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toren-sandbox runs ls|show|export|new|finish: the event log of durable agent runs,
 * auditable (runlog.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agentcli.h"
#include "cleanup.h"
#include "cli.h"
#include "commands.h"

static void usage(FILE *f)
{
	fputs("usage: toren-sandbox runs ls [--json]\n"
	      "       toren-sandbox runs show RUN\n"
	      "       toren-sandbox runs export RUN\n"
	      "       toren-sandbox runs new [--agent FILE] [--sandbox ID]\n"
	      "       toren-sandbox runs finish RUN\n"
	      "\n"
	      "  ls      every run, newest first (--json: one JSON array)\n"
	      "  show    one run with its calls and events, as JSON\n"
	      "  export  one run as JSON Lines: the run, then its calls and events in order\n"
	      "  new     begin a run (its sandbox is created unless --sandbox names one);\n"
	      "          prints its id\n"
	      "  finish  end a run: its calls are kept, new ones refused, and `reap` stops its\n"
	      "          sandbox\n",
	      f);
}

static json_t *parse_or_string(const char *text)
{
	json_t *j = text ? json_loads(text, 0, NULL) : NULL;
	return j ? j : (text ? json_string(text) : json_null());
}

static json_t *run_json(const struct ts_run_rec *r)
{
	return json_pack("{s:s, s:s, s:I, s:I, s:o, s:s, s:s, s:s, s:s, s:I}", "type", "run", "id",
			 r->id, "created_ms", (json_int_t)r->created_ms, "finished_ms",
			 (json_int_t)r->finished_ms, "agent", parse_or_string(r->agent_json),
			 "agent_path", r->agent_path, "backend", r->backend, "sandbox",
			 r->sandbox_id, "workspace", r->workspace, "calls", (json_int_t)r->n_calls);
}

static json_t *call_json(const struct ts_call_rec *c)
{
	return json_pack("{s:s, s:I, s:s, s:s, s:o, s:b, s:i, s:I, s:I, s:o}", "type", "call",
			 "index", (json_int_t)c->index, "key", c->key, "tool", c->tool, "args",
			 parse_or_string(c->args), "completed", c->completed, "attempts",
			 (int)c->attempts, "started_ms", (json_int_t)c->started_ms, "completed_ms",
			 (json_int_t)c->completed_ms, "result",
			 c->result ? parse_or_string(c->result) : json_null());
}

static json_t *event_json(const struct ts_run_event *e)
{
	json_t *call = e->call == UINT64_MAX ? json_null() : json_integer((json_int_t)e->call);
	return json_pack("{s:s, s:I, s:o, s:I, s:s, s:o}", "type", "event", "seq",
			 (json_int_t)e->seq, "call", call, "ms", (json_int_t)e->ms, "event",
			 e->type, "data", parse_or_string(e->data));
}

static void fmt_time(long long ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	if (ms <= 0 || !gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, len, "-");
}

static int cmd_ls(struct ts_runlog *l, bool as_json)
{
	struct ts_run_rec *v = NULL;
	size_t n = 0;
	struct ts_error err = { 0 };

	if (ts_runlog_run_list(l, &v, &n, &err) < 0) {
		ts_cli_error("runs ls", &err);
		return 1;
	}
	if (as_json) {
		json_t *a = json_array();
		for (size_t i = 0; a && i < n; i++)
			json_array_append_new(a, run_json(&v[i]));
		int r = a ? ts_cli_print_json(a, false) : -ENOMEM;
		json_decref(a);
		ts_run_recs_free(v, n);
		return r < 0;
	}
	printf("%-17s %-20s %-8s %-14s %6s  %s\n", "RUN", "CREATED", "STATE", "SANDBOX", "CALLS",
	       "AGENT");
	for (size_t i = 0; i < n; i++) {
		char created[32];
		json_t *agent = json_loads(v[i].agent_json ? v[i].agent_json : "", 0, NULL);
		const char *name = json_string_value(json_object_get(agent, "name"));
		fmt_time(v[i].created_ms, created, sizeof(created));
		printf("%-17s %-20s %-8s %-14s %6llu  %s\n", v[i].id, created,
		       v[i].finished_ms ? "finished" : "live",
		       v[i].sandbox_id[0] ? v[i].sandbox_id : "-", (unsigned long long)v[i].n_calls,
		       name ? name : "-");
		json_decref(agent);
	}
	ts_run_recs_free(v, n);
	return 0;
}

/* show (one JSON document) or export (JSON Lines in time order). */
static int cmd_show(struct ts_runlog *l, const char *id, bool lines)
{
	_cleanup_(ts_run_rec_clear) struct ts_run_rec run = { 0 };
	struct ts_call_rec *calls = NULL;
	struct ts_run_event *evs = NULL;
	size_t n_calls = 0, n_evs = 0;
	struct ts_error err = { 0 };
	int r = 1;

	if (ts_runlog_run_get(l, id, &run, &err) < 0 ||
	    ts_runlog_call_list(l, id, 0, &calls, &n_calls, &err) < 0 ||
	    ts_runlog_event_list(l, id, &evs, &n_evs, &err) < 0) {
		ts_cli_error(lines ? "runs export" : "runs show", &err);
		goto out;
	}
	if (!lines) {
		json_t *j = run_json(&run), *a = json_array(), *b = json_array();
		for (size_t i = 0; i < n_calls; i++)
			json_array_append_new(a, call_json(&calls[i]));
		for (size_t i = 0; i < n_evs; i++)
			json_array_append_new(b, event_json(&evs[i]));
		json_object_set_new(j, "call_records", a);
		json_object_set_new(j, "events", b);
		r = ts_cli_print_json(j, false) < 0;
		json_decref(j);
		goto out;
	}
	json_t *j = run_json(&run);
	r = ts_cli_print_json(j, true) < 0;
	json_decref(j);
	/* merged by time: a call at its start, an event when it happened (an approval comes
	 * between its call's start and its result) */
	for (size_t i = 0, k = 0; !r && (i < n_calls || k < n_evs);) {
		bool call = k >= n_evs || (i < n_calls && calls[i].started_ms <= evs[k].ms);
		j = call ? call_json(&calls[i++]) : event_json(&evs[k++]);
		r = ts_cli_print_json(j, true) < 0;
		json_decref(j);
	}
out:
	ts_call_recs_free(calls, n_calls);
	ts_run_events_free(evs, n_evs);
	return r;
}

static int cmd_new(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "agent", required_argument, NULL, 'a' },
		{ "sandbox", required_argument, NULL, 's' },
		{ 0 },
	};
	struct ts_agent_cli a = { .run = "new", .no_terminal = true };
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		if (c == 'a')
			a.agent_file = optarg;
		else if (c == 's')
			a.sandbox = optarg;
		else
			return usage(stderr), 2;
	}
	if (optind != argc)
		return usage(stderr), 2;
	if (ts_agent_cli_open("runs new", &a) < 0)
		return 1;
	printf("%s\n", ts_runner_run_id(a.runner));
	ts_agent_cli_close(&a);
	return 0;
}

int ts_subcmd_runs(int argc, char **argv)
{
	_cleanup_(ts_runlog_closep) struct ts_runlog *l = NULL;
	struct ts_error err = { 0 };

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	const char *sub = argv[1];
	if (!strcmp(sub, "new"))
		return cmd_new(argc - 1, argv + 1);
	bool ls = !strcmp(sub, "ls");
	if (!(ls && (argc == 2 || (argc == 3 && !strcmp(argv[2], "--json")))) &&
	    !(argc == 3 &&
	      (!strcmp(sub, "show") || !strcmp(sub, "export") || !strcmp(sub, "finish")))) {
		usage(stderr);
		return 2;
	}
	if (ts_runlog_open_default(&l, &err) < 0) {
		ts_cli_error("runs", &err);
		return 1;
	}
	if (ls)
		return cmd_ls(l, argc == 3);
	if (!strcmp(sub, "finish")) {
		if (ts_runlog_run_finish(l, argv[2], &err) < 0) {
			ts_cli_error("runs finish", &err);
			return 1;
		}
		return 0;
	}
	return cmd_show(l, argv[2], !strcmp(sub, "export"));
}
