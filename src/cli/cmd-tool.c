/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toren-sandbox tool [--agent FILE] [--run R [--call KEY]] [--approve-cmd CMD] ID TOOL JSON:
 * one tool call from a shell; the result as one JSON object on stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentcli.h"
#include "cleanup.h"
#include "cli.h"
#include "commands.h"

#define ARGS_MAX (8U << 20) /* the JSON arguments of one call */
#define ARGS_DEPTH 32

static void usage(FILE *f)
{
	fputs("usage: toren-sandbox tool [OPTIONS] ID TOOL JSON\n"
	      "\n"
	      "Call one agent tool (bash, read_file, write_file, edit_file, find, grep,\n"
	      "bash_output, bash_stop, bash_list, send_file) in sandbox ID with the JSON object\n"
	      "of its arguments (`-` reads them from stdin). Prints the result as one JSON\n"
	      "object {\"is_error\", \"text\", \"data\"}; exits 0, 1 on a tool error, 2 when\n"
	      "the call could not be made. ID may be `-` with --run: the run's sandbox.\n"
	      "\n"
	      "  --agent FILE        the agent's configuration (toren-sandbox.yaml(5));\n"
	      "                      default: `sandbox: true`\n"
	      "  --run R             record the call in run R's event log (`new`: begin one;\n"
	      "                      its id is printed to stderr); a recorded call replays\n"
	      "  --call KEY          the call's key in the run (else it is appended)\n"
	      "  --approve-cmd CMD   decide gated calls with `sh -c CMD` (exit 0: allow)\n"
	      "  -h, --help          show this help\n"
	      "\n"
	      "Without --approve-cmd a gated call (bash under `approval: always`) asks at the\n"
	      "terminal, and fails without one.\n",
	      f);
}

static json_t *read_args(const char *text, struct ts_error *err)
{
	_cleanup_free_ char *buf = NULL;
	json_error_t jerr;

	if (strcmp(text, "-") == 0) {
		size_t len = 0, cap = 0;
		for (;;) {
			if (len == cap) {
				cap = cap ? cap * 2 : 65536;
				if (cap > ARGS_MAX + 1)
					cap = ARGS_MAX + 1;
				char *n = realloc(buf, cap + 1);
				if (!n) {
					ts_err(err, -ENOMEM, "out of memory");
					return NULL;
				}
				buf = n;
			}
			size_t got = fread(buf + len, 1, cap - len, stdin);
			len += got;
			if (len > ARGS_MAX) {
				ts_err(err, -E2BIG, "the arguments are larger than %u bytes",
				       ARGS_MAX);
				return NULL;
			}
			if (got == 0)
				break;
		}
		buf[len] = '\0';
		text = buf;
	} else if (strlen(text) > ARGS_MAX) {
		ts_err(err, -E2BIG, "the arguments are larger than %u bytes", ARGS_MAX);
		return NULL;
	}
	json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (!j) {
		ts_err(err, -EINVAL, "the arguments are not JSON: %s (at character %d)", jerr.text,
		       jerr.position);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		ts_err(err, -EINVAL,
		       "the arguments must be a JSON object, like '{\"command\": \"ls\"}'");
		return NULL;
	}
	return j;
}

int ts_subcmd_tool(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "agent", required_argument, NULL, 'a' },
		{ "run", required_argument, NULL, 'r' },
		{ "call", required_argument, NULL, 'k' },
		{ "approve-cmd", required_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct ts_agent_cli a = { .append_unkeyed = true };
	const char *key = NULL;
	struct ts_error err = { 0 };
	int c;

	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'a':
			a.agent_file = optarg;
			break;
		case 'r':
			a.run = optarg;
			break;
		case 'k':
			key = optarg;
			break;
		case 'A':
			a.approve_cmd = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 3 || (key && !a.run)) {
		usage(stderr);
		return 2;
	}
	const char *id = argv[optind], *tool = argv[optind + 1];
	if (strcmp(id, "-") == 0) {
		if (!a.run || strcmp(a.run, "new") == 0) {
			fputs("toren-sandbox tool: ID `-` names the sandbox of an existing --run\n",
			      stderr);
			return 2;
		}
	} else {
		a.sandbox = id;
	}
	_cleanup_(json_decrefp) json_t *args = read_args(argv[optind + 2], &err);
	if (!args) {
		ts_cli_error("tool", &err);
		return 2;
	}
	if (ts_agent_cli_open("tool", &a) < 0)
		return 2;
	if (a.run && strcmp(a.run, "new") == 0)
		fprintf(stderr, "run %s\n", ts_runner_run_id(a.runner));

	struct ts_tool_result res = { 0 };
	struct ts_call_info info;
	int r = ts_runner_call(a.runner, key, tool, args, &res, &info, &err);
	int status = 2;
	if (r < 0) {
		ts_cli_error("tool", &err);
	} else {
		json_t *j = ts_tool_result_to_json(&res);
		if (j && a.run)
			json_object_set_new(j, "call",
					    json_pack("{s:I, s:b, s:i}", "index",
						      (json_int_t)info.index, "replayed",
						      info.replayed, "attempt", (int)info.attempt));
		status = j && ts_cli_print_json(j, true) == 0 ? (res.is_error ? 1 : 0) : 2;
		json_decref(j);
	}
	ts_tool_result_clear(&res);
	ts_agent_cli_close(&a);
	return status;
}
