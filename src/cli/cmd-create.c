/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox create [OPTIONS]: a durable sandbox; prints its id on the last line. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "cleanup.h"
#include "cli.h"
#include "paths.h"
#include "commands.h"
#include "policy.h"
#include "store.h"
#include "util.h"

#define MAX_LIST 256

static void usage(FILE *f)
{
	fputs("usage: toren-sandbox create [OPTIONS]\n"
	      "\n"
	      "      --name NAME        a unique name, usable wherever an id is\n"
	      "      --workspace DIR    bind DIR at /home/user (default: its own directory)\n"
	      "      --image DIR|NAME   a root file system directory, an imported image or a\n"
	      "                         snapshot's id or name (default: the host image)\n"
	      "      --policy FILE      sandbox policy (YAML, see toren-sandbox-policy(5))\n"
	      "  -e, --env NAME[=VALUE] let NAME in (host value now, or VALUE); repeatable\n"
	      "      --ttl DURATION     idle timeout: 30m (default), 2h, 90s; 0 = none\n"
	      "      --ttl-absolute     count the timeout from creation instead of activity\n"
	      "      --label KEY=VALUE  a label for `ls --label`; repeatable\n"
	      "      --owner PID|parent the process this sandbox belongs to: `reap` stops it\n"
	      "                         when that process is gone (default: none)\n"
	      "      --user NAME        `user` (default) or `root` for every process\n"
	      "      --memory SIZE      memory limit (cgroup, else RLIMIT_AS)\n"
	      "      --pids N           process limit (cgroup and RLIMIT_NPROC)\n"
	      "      --cpus N           CPU limit (cgroup only)\n"
	      "      --network          egress to the internet, never to private ranges\n"
	      "      --net-allow ENTRY  allow an address prefix (with --network's rules) or a\n"
	      "                         host name or *.suffix (only those, through a proxy);\n"
	      "                         repeatable, implies --network\n"
	      "  -v, --verbose          say what is being done\n"
	      "  -h, --help             show this help\n",
	      f);
}

int ts_subcmd_create(int argc, char **argv)
{
	enum {
		O_NAME = 256,
		O_WORKSPACE,
		O_IMAGE,
		O_POLICY,
		O_TTL,
		O_TTL_ABS,
		O_LABEL,
		O_OWNER,
		O_USER,
		O_MEMORY,
		O_PIDS,
		O_CPUS,
		O_NETWORK,
		O_NET_ALLOW
	};
	static const struct option longopts[] = {
		{ "name", required_argument, NULL, O_NAME },
		{ "workspace", required_argument, NULL, O_WORKSPACE },
		{ "image", required_argument, NULL, O_IMAGE },
		{ "policy", required_argument, NULL, O_POLICY },
		{ "env", required_argument, NULL, 'e' },
		{ "ttl", required_argument, NULL, O_TTL },
		{ "ttl-absolute", no_argument, NULL, O_TTL_ABS },
		{ "label", required_argument, NULL, O_LABEL },
		{ "owner", required_argument, NULL, O_OWNER },
		{ "user", required_argument, NULL, O_USER },
		{ "memory", required_argument, NULL, O_MEMORY },
		{ "pids", required_argument, NULL, O_PIDS },
		{ "cpus", required_argument, NULL, O_CPUS },
		{ "network", no_argument, NULL, O_NETWORK },
		{ "net-allow", required_argument, NULL, O_NET_ALLOW },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct ts_sb_create_opts o = { .timeout_ms = -1 };
	_cleanup_(ts_backend_freep) struct ts_backend *b = NULL;
	_cleanup_(ts_sb_closep) struct ts_sb *sb = NULL;
	struct ts_sb_info info;
	struct ts_error err = { 0 };
	/* the keys of env and labels, split from their values */
	static char keys[2][MAX_LIST][256];
	struct ts_kv env[MAX_LIST], labels[MAX_LIST];
	size_t n_env = 0, n_labels = 0, n_net_allow = 0;
	/* --net-allow: checked here (the policy's rules), recorded as given */
	static struct ts_policy net_check;
	static char *net_allow[MAX_LIST];
	unsigned long long v;
	bool verbose = false;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+e:vh", longopts, NULL)) != -1) {
		switch (c) {
		case O_NAME:
			if (!ts_store_name_valid(optarg)) {
				fprintf(stderr,
					"toren-sandbox create: bad --name `%s`: 1-63 of [A-Za-z0-9_.-], "
					"starting with a letter or digit, not all hex up to 12 chars\n",
					optarg);
				return 2;
			}
			o.name = optarg;
			break;
		case O_WORKSPACE:
			o.workspace = optarg;
			break;
		case O_IMAGE:
			o.template_id = optarg;
			break;
		case O_POLICY:
			o.policy_file = optarg;
			break;
		case 'e': {
			const char *eq = strchr(optarg, '=');
			char name[256];

			snprintf(name, sizeof(name), "%.*s",
				 (int)(eq ? (size_t)(eq - optarg) : strlen(optarg)), optarg);
			if (!ts_env_name_valid(name) || n_env >= MAX_LIST) {
				fprintf(stderr, "toren-sandbox create: bad --env `%s`\n", optarg);
				return 2;
			}
			/* NAME alone: the host's value, taken by the backend now */
			snprintf(keys[0][n_env], sizeof(keys[0][0]), "%s", name);
			env[n_env].key = keys[0][n_env];
			env[n_env++].value = eq ? eq + 1 : NULL;
			break;
		}
		case O_TTL:
			/* a timeout under a second is a typo, and one that rounds to 0 ms would
			 * silently mean none */
			r = ts_parse_duration_ms(optarg, &v);
			if (r < 0 || (v > 0 && v < 1000)) {
				fprintf(stderr,
					"toren-sandbox create: bad --ttl `%s`: %swant 0 (none) or at "
					"least 1s, like 90s, 30m, 2h\n",
					optarg, ts_policy_too_large(r));
				return 2;
			}
			o.timeout_ms = (long long)v;
			break;
		case O_TTL_ABS:
			o.timeout_absolute = true;
			break;
		case O_LABEL:
			if (n_labels >= MAX_LIST) {
				fprintf(stderr, "toren-sandbox create: at most %d --label\n",
					MAX_LIST);
				return 2;
			}
			if (!ts_cli_label_ok("create", optarg))
				return 2;
			snprintf(keys[1][n_labels], sizeof(keys[1][0]), "%.*s",
				 (int)(strchr(optarg, '=') - optarg), optarg);
			labels[n_labels].key = keys[1][n_labels];
			labels[n_labels++].value = strchr(optarg, '=') + 1;
			break;
		case O_OWNER:
			if (!strcmp(optarg, "parent"))
				o.owner_pid = getppid();
			else if (!strcmp(optarg, "none"))
				o.owner_pid = 0;
			else if (ts_parse_ull(optarg, &v) == 0 && v > 0 && v < 4194304)
				o.owner_pid = (pid_t)v;
			else {
				fprintf(stderr, "toren-sandbox create: bad --owner `%s`\n", optarg);
				return 2;
			}
			break;
		case O_USER:
			if (strcmp(optarg, "root") != 0 && strcmp(optarg, "user") != 0) {
				fprintf(stderr, "toren-sandbox create: bad --user `%s`\n", optarg);
				return 2;
			}
			o.user = optarg;
			break;
		case O_MEMORY:
			if ((r = ts_policy_parse_memory(optarg, &o.memory_bytes)) < 0) {
				fprintf(stderr,
					"toren-sandbox create: bad --memory `%s`: %swant %s\n",
					optarg, ts_policy_too_large(r), TS_POLICY_WANT_MEMORY);
				return 2;
			}
			break;
		case O_PIDS:
			if ((r = ts_policy_parse_pids(optarg, &o.pids)) < 0) {
				fprintf(stderr,
					"toren-sandbox create: bad --pids `%s`: %swant %s\n",
					optarg, ts_policy_too_large(r), TS_POLICY_WANT_PIDS);
				return 2;
			}
			break;
		case O_CPUS:
			if ((r = ts_policy_parse_cpus(optarg, &o.cpus)) < 0) {
				fprintf(stderr,
					"toren-sandbox create: bad --cpus `%s`: %swant %s\n",
					optarg, ts_policy_too_large(r), TS_POLICY_WANT_CPUS);
				return 2;
			}
			break;
		case O_NETWORK:
			o.network = true;
			break;
		case O_NET_ALLOW: {
			char why[200];

			if (n_net_allow + 1 >= MAX_LIST ||
			    ts_policy_add_net_allow(&net_check, optarg, why, sizeof(why)) < 0) {
				fprintf(stderr, "toren-sandbox create: bad --net-allow `%s`: %s\n",
					optarg, n_net_allow + 1 >= MAX_LIST ? "too many" : why);
				return 2;
			}
			net_allow[n_net_allow++] = optarg;
			o.network = true;
			break;
		}
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (ts_policy_check_network(&net_check, &err) < 0) {
		fprintf(stderr, "toren-sandbox create: %s\n", err.msg);
		return 2;
	}
	net_allow[n_net_allow] = NULL;
	o.net_allow = n_net_allow ? net_allow : NULL;
	o.envs = env;
	o.n_envs = n_env;
	o.metadata = labels;
	o.n_metadata = n_labels;
	if (ts_cli_backend("create", &b) < 0)
		return 1;
	if (o.template_id && !strcmp(ts_backend_name(b), "local")) {
		struct ts_paths paths;

		if (ts_paths_init(&paths, &err) < 0) {
			ts_cli_error("create", &err);
			return 1;
		}
		/* a snapshot's id or name is no registry reference to pull */
		if (!ts_cli_is_snapshot(b, o.template_id) &&
		    ts_cli_image_ensure(paths.root, o.template_id, "create") < 0)
			return 1;
	}
	if (ts_sb_create(b, &o, &sb, &err) < 0) {
		ts_cli_error("create", &err);
		return 1;
	}
	if (verbose && ts_sb_info(sb, &info, &err) == 0) {
		fprintf(stderr, "toren-sandbox: created %s%s%s around `%s`, init pid %d\n", info.id,
			info.name[0] ? " named " : "", info.name,
			info.workspace ? info.workspace : "?", (int)info.init_pid);
		ts_sb_info_clear(&info);
	}
	printf("%s\n", ts_sb_id(sb));
	return 0;
}
