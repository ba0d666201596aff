/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox inspect ID: one sandbox as JSON (state, times, timeout, spec, paths). */
#include <getopt.h>
#include <stdio.h>

#include "admin.h"
#include "cli.h"
#include "commands.h"
#include "sandbox.h"

static void usage(FILE *f)
{
	fputs("usage: toren-sandbox inspect ID\n"
	      "\n"
	      "ID is an id, a unique id prefix or a name.\n"
	      "\n"
	      "  -h, --help  show this help\n",
	      f);
}

int ts_subcmd_inspect(int argc, char **argv)
{
	static const struct option longopts[] = { { "help", no_argument, NULL, 'h' }, {} };
	struct ts_store *st = NULL;
	struct ts_sandbox_rec rec = { 0 };
	struct ts_admin_live live;
	json_t *j;
	int c, status;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 1) {
		usage(stderr);
		return 2;
	}
	if (ts_cli_lookup("inspect", argv[optind], &st, &rec) < 0)
		return 1;
	ts_admin_probe(&rec, true, &live);
	j = ts_admin_rec_json(&rec, &live, ts_store_now_ms());
	status = j && ts_admin_print_json(j, false) == 0 ? 0 : 1;
	json_decref(j);
	ts_sandbox_rec_free(&rec);
	ts_store_close(st);
	return status;
}
