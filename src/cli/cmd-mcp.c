/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toren-sandbox mcp [--agent FILE] [--sandbox ID] [--run R] [--approve-cmd CMD]: the agent
 * toolkit as a Model Context Protocol server on stdin and stdout (src/runner/mcp.c).
 * stdout is the protocol: everything this process says goes to stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agentcli.h"
#include "cleanup.h"
#include "cli.h"
#include "commands.h"
#include "config.h"
#include "mcp.h"

static void usage(FILE *f)
{
	fputs("usage: toren-sandbox mcp [OPTIONS]\n"
	      "\n"
	      "Serve the agent toolkit (bash, read_file, write_file, edit_file, find, grep,\n"
	      "bash_output, bash_stop, bash_list, send_file) to a Model Context Protocol client\n"
	      "over stdin and stdout (JSON-RPC, one message per line). stderr gets the rest.\n"
	      "\n"
	      "  --agent FILE        the agent's configuration (toren-sandbox.yaml(5));\n"
	      "                      default: `sandbox: true`\n"
	      "  --sandbox ID        the sandbox the tools act in\n"
	      "  --run R             record the calls in run R's event log (`new`: begin one;\n"
	      "                      its id is printed to stderr); recorded calls replay in order\n"
	      "  --approve-cmd CMD   decide gated calls with `sh -c CMD` (exit 0: allow) when the\n"
	      "                      client does not take elicitation requests\n"
	      "  -q, --quiet         print only errors to stderr\n"
	      "  -h, --help          show this help\n"
	      "\n"
	      "Without --sandbox and --run, the session has a run of its own: begun at the start,\n"
	      "finished at the end (`reap` then stops its sandbox; its workspace and log stay).\n"
	      "A gated call (bash under `approval: always`) asks the client (MCP\n"
	      "elicitation), else --approve-cmd, else it is denied.\n",
	      f);
}

static void mcp_log(void *userdata, const char *msg)
{
	const bool *quiet = userdata;

	if (!*quiet)
		fprintf(stderr, "toren-sandbox mcp: %s\n", msg);
}

/*
 * The protocol's fds, moved out of the way: fd 1 becomes stderr and fd 0 /dev/null, so
 * that nothing else this process or its children (the sandbox's helper and init) might
 * write reaches the client as protocol, and nothing reads the client's requests but the
 * server. 0, or -errno.
 */
static int take_stdio(int *in, int *out)
{
	_cleanup_close_ int null = -EBADF;

	*in = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
	if (*in < 0)
		return -errno;
	*out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (*out < 0)
		return -errno;
	null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0)
		return -errno;
	if (dup2(null, STDIN_FILENO) < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
		return -errno;
	return 0;
}

int ts_subcmd_mcp(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "agent", required_argument, NULL, 'a' },
		{ "sandbox", required_argument, NULL, 's' },
		{ "run", required_argument, NULL, 'r' },
		{ "approve-cmd", required_argument, NULL, 'A' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct ts_agent_cli a = { .no_terminal = true };
	_cleanup_(ts_mcp_freep) struct ts_mcp *m = NULL;
	_cleanup_close_ int in = -EBADF, out = -EBADF;
	struct ts_approver command = { 0 };
	struct ts_error err = { 0 };
	bool quiet = false;
	int c, r;

	while ((c = getopt_long(argc, argv, "+qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'a':
			a.agent_file = optarg;
			break;
		case 's':
			a.sandbox = optarg;
			break;
		case 'r':
			a.run = optarg;
			break;
		case 'A':
			a.approve_cmd = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "toren-sandbox mcp: unexpected argument `%s` (see --help)\n",
			argv[optind]);
		return 2;
	}
	if (a.approve_cmd && !a.approve_cmd[0]) {
		fputs("toren-sandbox mcp: --approve-cmd needs a command\n", stderr);
		return 2;
	}
	/* a run of this session alone: nothing can resume it (a client that starts us again
	 * begins another), so it is finished when the session ends and `reap` stops its
	 * sandbox; the run's workspace and log stay */
	bool own_run = !a.sandbox && !a.run;
	if (own_run)
		a.run = "new";
	if (isatty(STDOUT_FILENO) && !quiet)
		fputs("toren-sandbox mcp: stdout is a terminal, but this speaks MCP (JSON-RPC) to "
		      "a client that starts it\n",
		      stderr);

	r = take_stdio(&in, &out);
	if (r < 0) {
		fprintf(stderr, "toren-sandbox mcp: set up stdin and stdout: %s\n", strerror(-r));
		return 1;
	}
	if (a.approve_cmd)
		ts_approver_command(&command, a.approve_cmd);
	struct ts_mcp_opts o = {
		.in_fd = in,
		.out_fd = out,
		.version = TS_VERSION,
		.fallback = a.approve_cmd ? &command : NULL,
		.log = mcp_log,
		.userdata = &quiet,
	};
	r = ts_mcp_new(&o, &m, &err);
	if (r < 0) {
		ts_cli_error("mcp", &err);
		return 1;
	}
	a.approver = ts_mcp_approver(m);
	if (ts_agent_cli_open("mcp", &a) < 0)
		return 1;
	if (!quiet && ts_runner_run_id(a.runner)[0])
		fprintf(stderr, "toren-sandbox mcp: run %s\n", ts_runner_run_id(a.runner));
	r = ts_mcp_serve(m, a.runner, &err);
	if (own_run) {
		struct ts_error ferr = { 0 };
		if (ts_runlog_run_finish(a.log, ts_runner_run_id(a.runner), &ferr) < 0)
			ts_cli_error("mcp", &ferr);
		else if (!quiet)
			fprintf(stderr, "toren-sandbox mcp: run %s finished\n",
				ts_runner_run_id(a.runner));
	}
	ts_agent_cli_close(&a);
	if (r < 0) {
		ts_cli_error("mcp", &err);
		return 1;
	}
	return 0;
}
