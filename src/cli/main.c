/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox: the command line. A thin client of the host library. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "config.h"
#include "util.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "run", ts_subcmd_run, "run a command in a new sandbox" },
	{ "doctor", ts_subcmd_doctor, "check what the host gives the runtime, with fixes" },
	{ "create", ts_subcmd_create, "create and start a durable sandbox; prints its id" },
	{ "start", ts_subcmd_start, "start stopped sandboxes around their workspace" },
	{ "stop", ts_subcmd_stop, "stop sandboxes (every process ends; files stay)" },
	{ "restart", ts_subcmd_restart, "stop, then start" },
	{ "exec", ts_subcmd_exec, "run a command in a sandbox (-it for a terminal, -d detached)" },
	{ "ps", ts_subcmd_ps, "processes started through the runtime" },
	{ "logs", ts_subcmd_logs, "output of a background process (-f to follow)" },
	{ "kill", ts_subcmd_kill, "signal a process's whole process group" },
	{ "ls", ts_subcmd_ls, "list sandboxes (--json, --label k=v)" },
	{ "inspect", ts_subcmd_inspect, "one sandbox as JSON: state, times, timeout, spec, paths" },
	{ "rm", ts_subcmd_rm, "remove sandboxes (-f stops them, --purge deletes the workspace)" },
	{ "reap", ts_subcmd_reap, "stop sandboxes idle past their timeout or whose owner died" },
	{ "cp", ts_subcmd_cp, "copy files between the host and a sandbox (ID:PATH)" },
	{ "attach", ts_subcmd_attach, "follow a running process's output again (Ctrl-C detaches)" },
	{ "timeout", ts_subcmd_timeout, "set a sandbox's timeout: it expires SECONDS from now" },
	{ "serve", ts_subcmd_serve, "serve E2B's API and /v1 REST over local sandboxes" },
	{ "tool", ts_subcmd_tool, "one agent tool call (bash, read_file, edit_file...) as JSON" },
	{ "mcp", ts_subcmd_mcp, "serve the agent toolkit to an MCP client over stdio" },
	{ "image", ts_subcmd_image, "local images: import (oci:DIR, docker-archive:FILE), ls, rm" },
	{ "snapshot", ts_subcmd_snapshot,
	  "copy a sandbox's file system (ls, rm); create --image SNAP" },
	{ "runs", ts_subcmd_runs, "durable agent runs: ls, show, export (JSON Lines)" },
};

static void usage(FILE *f)
{
	fputs("usage: toren-sandbox [--help] [--version] [--backend NAME] COMMAND [ARGS...]\n\n"
	      "  --backend NAME  local (default), none, e2b or auto (also TOREN_SANDBOX)\n\n"
	      "commands:\n",
	      f);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fputs("\nsee toren-sandbox(1); `toren-sandbox COMMAND --help` for options\n", f);
}

int main(int argc, char **argv)
{
	/* we wait for the children we start, and hand the sandbox defaults, not whatever
	 * our caller ignored or blocked */
	ts_signals_reset();
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("toren-sandbox %s\n", TS_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "--backend")) {
		if (argc < 4) {
			usage(stderr);
			return 2;
		}
		/* the durable commands open the backend this names (backend.h) */
		setenv("TOREN_SANDBOX", argv[2], 1);
		argv[2] = argv[0];
		argc -= 2;
		argv += 2;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name)) {
			/* getopt's own messages start with argv[0]: "toren-sandbox cp: ..." */
			char prog[64];

			snprintf(prog, sizeof(prog), "toren-sandbox %s", commands[i].name);
			argv[1] = prog;
			return commands[i].fn(argc - 1, argv + 1);
		}
	fprintf(stderr, "toren-sandbox: unknown command `%s` (see --help)\n", argv[1]);
	return 2;
}
