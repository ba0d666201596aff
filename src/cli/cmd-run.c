/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox run [OPTIONS] [--] CMD [ARG...] */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "commands.h"
#include "launch.h"
#include "paths.h"
#include "policy.h"
#include "strv.h"
#include "util.h"

static void usage(FILE *f)
{
	fputs("usage: toren-sandbox run [OPTIONS] [--] CMD [ARG...]\n"
	      "\n"
	      "  -t, --tty              give CMD a pty when stdin is a terminal\n"
	      "      --timeout SECONDS  kill the whole sandbox after this long (exit 124)\n"
	      "      --workspace DIR    bind DIR at /home/user (default: a fresh directory)\n"
	      "      --keep             keep the fresh workspace and upper dir afterwards\n"
	      "      --image DIR|NAME   a root file system directory or an imported image\n"
	      "                         (default: the host image)\n"
	      "  -e, --env NAME[=VALUE] let NAME in (host value, or VALUE); repeatable\n"
	      "      --memory SIZE      memory limit (cgroup, else RLIMIT_AS)\n"
	      "      --pids N           process limit (cgroup, else RLIMIT_NPROC)\n"
	      "      --cpus N           CPU limit (cgroup only)\n"
	      "      --policy FILE      sandbox policy (YAML, see toren-sandbox-policy(5))\n"
	      "      --user NAME        `user` (default) or `root` (needs subordinate ids)\n"
	      "      --dry-run          print the helper command line and exit\n"
	      "      --network          egress to the internet, never to private ranges\n"
	      "      --net-allow ENTRY  allow an address prefix (with --network's rules) or a\n"
	      "                         host name or *.suffix (only those, through a proxy);\n"
	      "                         repeatable, implies --network\n"
	      "  -v, --verbose          say what is being done\n"
	      "  -h, --help             show this help\n",
	      f);
}

/* A usage error: the message, and exit status 2. */
static int __attribute__((format(printf, 1, 2))) bad(const char *fmt, ...)
{
	va_list ap;

	fputs("toren-sandbox run: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 2;
}

/* What `run` shows of a run, and the terminal it puts in raw mode for a pty. */
struct run_ui {
	bool verbose;
	bool raw; /* saved holds the modes to restore */
	struct termios saved;
};

static void on_warn(void *userdata, bool verbose_only, const char *msg)
{
	struct run_ui *ui = userdata;

	ts_cli_warn(ui->verbose, verbose_only, msg);
}

static void on_prepared(void *userdata, const struct ts_run_info *info)
{
	struct run_ui *ui = userdata;

	if (ui->verbose)
		fprintf(stderr,
			"toren-sandbox: sandbox %s in `%s` (ids: %s; user is host uid %lu)\n",
			info->id, info->dir, info->ids_mode, info->user_uid);
}

/* --dry-run: one line for sh, the filter redirected from its file. */
static void on_dry_run(void *userdata, char *const *argv, int seccomp_fd, const char *seccomp_path)
{
	char q[8192];

	(void)userdata;
	fputs("env -i", stdout);
	for (char *const *a = argv; *a; a++) {
		if (ts_shell_quote(*a, q, sizeof(q)) < 0)
			snprintf(q, sizeof(q), "'<too long>'");
		printf(" %s", q);
	}
	ts_shell_quote(seccomp_path, q, sizeof(q));
	printf(" %d<%s\n", seccomp_fd, q);
}

/* With a pty, init copies between it and our terminal: every byte goes through as typed. */
static void on_terminal(void *userdata, bool raw)
{
	struct run_ui *ui = userdata;

	if (raw && tcgetattr(STDIN_FILENO, &ui->saved) == 0) {
		struct termios rawt = ui->saved;

		cfmakeraw(&rawt);
		ui->raw = tcsetattr(STDIN_FILENO, TCSANOW, &rawt) == 0;
	} else if (!raw && ui->raw) {
		tcsetattr(STDIN_FILENO, TCSANOW, &ui->saved);
		ui->raw = false;
	}
}

static void on_timed_out(void *userdata, unsigned long long timeout_ms)
{
	(void)userdata;
	fprintf(stderr, "toren-sandbox: timed out after %.3gs; killing the sandbox\n",
		(double)timeout_ms / 1000.0);
}

int ts_subcmd_run(int argc, char **argv)
{
	enum {
		O_TIMEOUT = 256,
		O_WORKSPACE,
		O_KEEP,
		O_IMAGE,
		O_MEMORY,
		O_PIDS,
		O_CPUS,
		O_POLICY,
		O_USER,
		O_DRY_RUN,
		O_NETWORK,
		O_NET_ALLOW
	};
	static const struct option longopts[] = {
		{ "tty", no_argument, NULL, 't' },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "workspace", required_argument, NULL, O_WORKSPACE },
		{ "keep", no_argument, NULL, O_KEEP },
		{ "image", required_argument, NULL, O_IMAGE },
		{ "env", required_argument, NULL, 'e' },
		{ "memory", required_argument, NULL, O_MEMORY },
		{ "pids", required_argument, NULL, O_PIDS },
		{ "cpus", required_argument, NULL, O_CPUS },
		{ "policy", required_argument, NULL, O_POLICY },
		{ "user", required_argument, NULL, O_USER },
		{ "dry-run", no_argument, NULL, O_DRY_RUN },
		{ "network", no_argument, NULL, O_NETWORK },
		{ "net-allow", required_argument, NULL, O_NET_ALLOW },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct run_ui ui = { 0 };
	const struct ts_run_hooks hooks = { .userdata = &ui,
					    .warn = on_warn,
					    .prepared = on_prepared,
					    .dry_run = on_dry_run,
					    .terminal = on_terminal,
					    .timed_out = on_timed_out };
	struct ts_run_opts o = { .hooks = &hooks };
	_cleanup_(ts_policy_freep) struct ts_policy pol = { 0 }, cli = { 0 };
	struct ts_paths paths;
	struct ts_error err = { 0 };
	char defpol[4200];
	unsigned long long v;
	const char *policy_file = NULL;
	int c, status = 0, r;

	optind = 1;
	/* '+': stop at the first non-option, so CMD's own options stay CMD's. */
	while ((c = getopt_long(argc, argv, "+te:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			o.tty = true;
			break;
		case O_TIMEOUT:
			r = ts_parse_duration_ms(optarg, &v);
			if (r < 0 || v == 0)
				return bad("bad --timeout `%s`: %swant seconds > 0 (at most %llu)",
					   optarg, ts_policy_too_large(r), TS_DURATION_MAX_S);
			cli.timeout_ms = v;
			break;
		case O_WORKSPACE:
			o.workspace = optarg;
			break;
		case O_KEEP:
			o.keep = true;
			break;
		case O_IMAGE:
			o.image = optarg;
			break;
		case 'e':
			if (ts_policy_add_env(&cli, optarg, &err) < 0)
				return bad("%s", err.msg);
			break;
		case O_MEMORY:
			if ((r = ts_policy_parse_memory(optarg, &cli.memory_bytes)) < 0)
				return bad("bad --memory `%s`: %swant %s", optarg,
					   ts_policy_too_large(r), TS_POLICY_WANT_MEMORY);
			break;
		case O_PIDS:
			if ((r = ts_policy_parse_pids(optarg, &cli.pids)) < 0)
				return bad("bad --pids `%s`: %swant %s", optarg,
					   ts_policy_too_large(r), TS_POLICY_WANT_PIDS);
			break;
		case O_CPUS:
			if ((r = ts_policy_parse_cpus(optarg, &cli.cpus)) < 0)
				return bad("bad --cpus `%s`: %swant %s", optarg,
					   ts_policy_too_large(r), TS_POLICY_WANT_CPUS);
			break;
		case O_POLICY:
			policy_file = optarg;
			break;
		case O_USER:
			if (!strcmp(optarg, "root"))
				o.as_root = true;
			else if (strcmp(optarg, "user") != 0)
				return bad("bad --user `%s`: want `user` or `root`", optarg);
			break;
		case O_DRY_RUN:
			o.dry_run = true;
			break;
		case O_NETWORK:
			cli.network = true;
			break;
		case O_NET_ALLOW: {
			char why[200];

			/* checked now, applied after the policy files (a second pass below) */
			if (ts_policy_add_net_allow(&cli, optarg, why, sizeof(why)) < 0)
				return bad("bad --net-allow `%s`: %s", optarg, why);
			break;
		}
		case 'v':
			ui.verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	o.argv = argv + optind;

	/* Policy: the default file, then --policy, then the flags. */
	r = ts_paths_init(&paths, &err);
	if (r < 0)
		goto fail;
	snprintf(defpol, sizeof(defpol), "%s/default.yaml", paths.policy_dir);
	if (access(defpol, F_OK) == 0 && (r = ts_policy_load(&pol, defpol, &err)) < 0)
		goto fail;
	if (policy_file && (r = ts_policy_load(&pol, policy_file, &err)) < 0)
		goto fail;
	if (cli.timeout_ms)
		pol.timeout_ms = cli.timeout_ms;
	if (cli.memory_bytes)
		pol.memory_bytes = cli.memory_bytes;
	if (cli.pids)
		pol.pids = cli.pids;
	if (cli.cpus > 0)
		pol.cpus = cli.cpus;
	if (cli.network)
		pol.network = true;
	if (pol.n_net_allow + cli.n_net_allow > TS_POLICY_MAX_NET_RULES ||
	    pol.n_net_names + cli.n_net_names > TS_POLICY_MAX_NET_RULES) {
		r = ts_err(&err, -E2BIG, "too many `network.allow` entries (at most %d of each)",
			   TS_POLICY_MAX_NET_RULES);
		goto fail;
	}
	memcpy(pol.net_allow + pol.n_net_allow, cli.net_allow,
	       cli.n_net_allow * sizeof(cli.net_allow[0]));
	pol.n_net_allow += cli.n_net_allow;
	memcpy(pol.net_names + pol.n_net_names, cli.net_names,
	       cli.n_net_names * sizeof(cli.net_names[0]));
	pol.n_net_names += cli.n_net_names;
	for (size_t i = 0; i < cli.n_env; i++)
		if ((r = ts_policy_add_env(&pol, cli.env[i], &err)) < 0)
			goto fail;
	o.policy = &pol;
	o.paths = &paths;
	if (ts_cli_image_ensure(paths.root, o.image, "run") < 0)
		return TS_EXIT_SETUP;

	r = ts_run(&o, &status, &err);
	if (r < 0)
		goto fail;
	return status;
fail:
	fprintf(stderr, "toren-sandbox: %s\n", err.msg);
	return TS_EXIT_SETUP;
}
