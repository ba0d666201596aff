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

#include "agent.h"
#include "approve.h"
#include "backend.h"
#include "cleanup.h"
#include "cli.h"
#include "commands.h"
#include "config.h"
#include "mcp.h"
#include "runlog.h"
#include "runner.h"

static void usage(FILE *f)
{
	fputs("usage: toren-sandbox mcp [--agent FILE] [--sandbox ID] [--run R] [--approve-cmd CMD]\n"
	      "\n"
	      "Serve the agent toolkit (bash, read_file, write_file, edit_file, ...) to a Model\n"
	      "Context Protocol client over stdin and stdout (newline-delimited JSON-RPC).\n"
	      "  --agent FILE       the agent's configuration (toren-sandbox.yaml(5));\n"
	      "                     default: `sandbox: true` and nothing else\n"
	      "  --sandbox ID       use this sandbox (an id, a name or an id prefix)\n"
	      "  --run R            resume the durable run R (its calls replay in order)\n"
	      "  --approve-cmd CMD  approve gated calls with `sh -c CMD` when the client has\n"
	      "                     no elicitation (exit 0 approves, 1 denies)\n"
	      "  -q, --quiet        say nothing on stderr but errors\n"
	      "  -h, --help         show this help\n"
	      "Without --sandbox and --run, a new run creates its sandbox on the first call.\n",
	      f);
}

struct log_ctx {
	bool quiet;
};

static void mcp_log(void *userdata, const char *msg)
{
	const struct log_ctx *c = userdata;

	if (!c->quiet)
		fprintf(stderr, "toren-sandbox mcp: %s\n", msg);
}

static void backend_warn(void *userdata, bool verbose_only, const char *msg)
{
	(void)userdata;
	ts_cli_warn(false, verbose_only, msg);
}

/*
 * The protocol's fds, moved out of the way: fd 1 becomes stderr and fd 0 /dev/null, so
 * that nothing else this process or its children (the sandbox's helper and init) may
 * write reaches the client as protocol. 0, or -errno.
 */
static int take_stdio(int *in, int *out)
{
	int null;

	*in = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
	if (*in < 0)
		return -errno;
	*out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (*out < 0)
		return -errno;
	null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0)
		return -errno;
	if (dup2(null, STDIN_FILENO) < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
		close(null);
		return -errno;
	}
	close(null);
	return 0;
}

int ts_subcmd_mcp(int argc, char **argv)
{
	enum {
		O_AGENT = 256,
		O_SANDBOX,
		O_RUN,
		O_APPROVE_CMD
	};
	static const struct option longopts[] = {
		{ "agent", required_argument, NULL, O_AGENT },
		{ "sandbox", required_argument, NULL, O_SANDBOX },
		{ "run", required_argument, NULL, O_RUN },
		{ "approve-cmd", required_argument, NULL, O_APPROVE_CMD },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *agent_path = NULL, *sandbox = NULL, *run = NULL, *approve_cmd = NULL;
	_cleanup_(ts_agent_freep) struct ts_agent agent = { 0 };
	_cleanup_(ts_backend_freep) struct ts_backend *b = NULL;
	_cleanup_(ts_runlog_closep) struct ts_runlog *log = NULL;
	_cleanup_(ts_mcp_freep) struct ts_mcp *m = NULL;
	_cleanup_close_ int in = -EBADF, out = -EBADF;
	struct ts_approver command = { 0 };
	struct log_ctx lc = { .quiet = false };
	struct ts_error err = { 0 };
	char sandbox_id[128] = "";
	struct ts_mcp_opts o;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
		switch (c) {
		case O_AGENT:
			agent_path = optarg;
			break;
		case O_SANDBOX:
			sandbox = optarg;
			break;
		case O_RUN:
			run = optarg;
			break;
		case O_APPROVE_CMD:
			approve_cmd = optarg;
			break;
		case 'q':
			lc.quiet = true;
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
	if (approve_cmd && !approve_cmd[0]) {
		fputs("toren-sandbox mcp: --approve-cmd needs a command\n", stderr);
		return 2;
	}
	if (isatty(STDOUT_FILENO))
		fputs("toren-sandbox mcp: stdout is a terminal; this speaks MCP (JSON-RPC) to a "
		      "client that starts it\n",
		      stderr);

	r = agent_path ? ts_agent_load(agent_path, &agent, &err) : ts_agent_default(&agent, &err);
	if (r < 0) {
		ts_cli_error("mcp", &err);
		return 1;
	}
	if (!agent.sandbox) {
		fprintf(stderr,
			"toren-sandbox mcp: `%s` says `sandbox: false`: the toolkit runs in "
			"a sandbox only\n",
			agent_path ? agent_path : "the agent");
		return 1;
	}
	r = ts_backend_open(agent.backend, &b, &err);
	if (r < 0) {
		ts_cli_error("mcp", &err);
		return 1;
	}
	ts_backend_on_warning(b, backend_warn, NULL);
	if (sandbox) {
		_cleanup_(ts_sb_closep) struct ts_sb *sb = NULL;

		r = ts_sb_lookup(b, sandbox, &sb, &err);
		if (r < 0) {
			ts_cli_error("mcp", &err);
			return 1;
		}
		snprintf(sandbox_id, sizeof(sandbox_id), "%s", ts_sb_id(sb));
	}
	/* a run is durable: with --run, or when the runner makes the sandbox itself */
	if (run || !sandbox) {
		r = ts_runlog_open_default(&log, &err);
		if (r < 0) {
			ts_cli_error("mcp", &err);
			return 1;
		}
	}
	if (approve_cmd)
		ts_approver_command(&command, approve_cmd);

	r = take_stdio(&in, &out);
	if (r < 0) {
		fprintf(stderr, "toren-sandbox mcp: set up stdin and stdout: %s\n", strerror(-r));
		return 1;
	}
	o = (struct ts_mcp_opts){
		.in_fd = in,
		.out_fd = out,
		.version = TS_VERSION,
		.runner = {
			.backend = b,
			.agent = &agent,
			.log = log,
			.run_id = run,
			.sandbox_id = sandbox_id[0] ? sandbox_id : NULL,
			.approver = approve_cmd ? &command : NULL,
		},
		.log = mcp_log,
		.userdata = &lc,
	};
	r = ts_mcp_new(&o, &m, &err);
	if (r < 0) {
		ts_cli_error("mcp", &err);
		return 1;
	}
	if (ts_runner_run_id(ts_mcp_runner(m))[0] && !lc.quiet)
		fprintf(stderr, "toren-sandbox mcp: run %s (resume it with --run %s)\n",
			ts_runner_run_id(ts_mcp_runner(m)), ts_runner_run_id(ts_mcp_runner(m)));
	r = ts_mcp_serve(m, &err);
	if (r < 0) {
		ts_cli_error("mcp", &err);
		return 1;
	}
	return 0;
}
