/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toren-sandbox snapshot ID [--name NAME] [--max-size SIZE] | snapshot ls [--json] |
 * snapshot rm SNAP...: copies of a sandbox's file system (snapshot.h), restorable with
 * `create --image SNAP`.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "cli.h"
#include "commands.h"
#include "util.h"

static void usage(FILE *f)
{
	fputs("usage: toren-sandbox snapshot [--name NAME] [--max-size SIZE] ID\n"
	      "       toren-sandbox snapshot ls [--json]\n"
	      "       toren-sandbox snapshot rm SNAP...\n"
	      "\n"
	      "Copy sandbox ID's file system (its changes over its image and its own workspace)\n"
	      "into a snapshot and print the snapshot's id; the sandbox is paused while the copy\n"
	      "runs. `create --image SNAP` (an id or a name) starts a sandbox from it.\n"
	      "\n"
	      "  ls   the snapshots: id, names, source sandbox, size, created (--json: JSON)\n"
	      "  rm   delete snapshots (files a sandbox or another snapshot uses stay until\n"
	      "       nothing does)\n"
	      "\n"
	      "      --name NAME      give the snapshot NAME (taken from any snapshot that had it)\n"
	      "      --max-size SIZE  refuse to copy more than SIZE bytes of files (K, M, G\n"
	      "                       suffixes; default 16G)\n"
	      "      --json           (ls) print JSON\n"
	      "  -h, --help           show this help\n",
	      f);
}

static int snap_ls(int argc, char **argv)
{
	_cleanup_(ts_backend_freep) struct ts_backend *b = NULL;
	_cleanup_free_ struct ts_snap_info *v = NULL;
	struct ts_error err = { 0 };
	bool json = argc > 1 && !strcmp(argv[1], "--json");
	size_t n = 0;

	if (argc > (json ? 2 : 1)) {
		usage(stderr);
		return 2;
	}
	if (ts_cli_backend("snapshot ls", &b) < 0)
		return 1;
	if (ts_backend_snapshots(b, &v, &n, &err) < 0) {
		ts_cli_error("snapshot ls", &err);
		return 1;
	}
	if (json) {
		json_t *arr = json_array();
		int r;

		for (size_t i = 0; i < n; i++) {
			json_t *names = json_array();

			for (size_t k = 0; k < v[i].n_names; k++)
				json_array_append_new(names, json_string(v[i].names[k]));
			json_array_append_new(arr,
					      json_pack("{s:s, s:o, s:s, s:I, s:I}", "id", v[i].id,
							"names", names, "source", v[i].source,
							"size", (json_int_t)v[i].size, "created_ms",
							(json_int_t)v[i].created_ms));
		}
		r = ts_cli_print_json(arr, false);
		json_decref(arr);
		return r < 0 ? 1 : 0;
	}
	printf("%-18s %-24s %-13s %8s  %s\n", "ID", "NAMES", "SOURCE", "SIZE", "CREATED");
	for (size_t i = 0; i < n; i++) {
		char names[256] = "", size[32], when[32];
		time_t t = (time_t)(v[i].created_ms / 1000);
		struct tm tm;
		size_t len = 0;

		for (size_t k = 0; k < v[i].n_names && len < sizeof(names); k++)
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s",
						k ? "," : "", v[i].names[k]);
		ts_cli_size_text(v[i].size, size, sizeof(size));
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&t, &tm));
		printf("%-18s %-24s %-13s %8s  %s\n", v[i].id, names[0] ? names : "-", v[i].source,
		       size, when);
	}
	return 0;
}

static int snap_rm(int argc, char **argv)
{
	_cleanup_(ts_backend_freep) struct ts_backend *b = NULL;
	int failed = 0;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (ts_cli_backend("snapshot rm", &b) < 0)
		return 1;
	for (int i = 1; i < argc; i++) {
		struct ts_error err = { 0 };

		if (ts_backend_snapshot_delete(b, argv[i], &err) < 0) {
			ts_cli_error("snapshot rm", &err);
			failed = 1;
		}
	}
	return failed;
}

int ts_subcmd_snapshot(int argc, char **argv)
{
	enum {
		O_NAME = 256,
		O_MAX
	};
	static const struct option longopts[] = {
		{ "name", required_argument, NULL, O_NAME },
		{ "max-size", required_argument, NULL, O_MAX },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	_cleanup_(ts_backend_freep) struct ts_backend *b = NULL;
	struct ts_snap_create_opts o = { 0 };
	struct ts_snap_info info;
	struct ts_sb *sb = NULL;
	struct ts_error err = { 0 };
	int c, r;

	if (argc > 1 && !strcmp(argv[1], "ls"))
		return snap_ls(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "rm"))
		return snap_rm(argc - 1, argv + 1);
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case O_NAME:
			o.name = optarg;
			break;
		case O_MAX:
			if (ts_parse_size(optarg, &o.max_bytes) < 0 || o.max_bytes == 0) {
				fprintf(stderr,
					"toren-sandbox snapshot: --max-size `%s`: a size such as 512M "
					"or 2G\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	if (ts_cli_backend("snapshot", &b) < 0)
		return 1;
	r = ts_sb_lookup(b, argv[optind], &sb, &err);
	if (r >= 0)
		r = ts_sb_snapshot(sb, &o, &info, &err);
	ts_sb_close(sb);
	if (r < 0) {
		ts_cli_error("snapshot", &err);
		return 1;
	}
	printf("%s\n", info.id);
	return 0;
}
