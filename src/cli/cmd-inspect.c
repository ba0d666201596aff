/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox inspect ID: one sandbox as JSON (state, times, timeout, spec, paths). */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>

#include "cleanup.h"
#include "cli.h"
#include "commands.h"

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
	_cleanup_(ts_backend_freep) struct ts_backend *b = NULL;
	_cleanup_(ts_sb_closep) struct ts_sb *sb = NULL;
	struct ts_error err = { 0 };
	struct ts_sb_info info;
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
	if (ts_cli_backend("inspect", &b) < 0)
		return 1;
	if (ts_sb_lookup(b, argv[optind], &sb, &err) < 0 || ts_sb_info(sb, &info, &err) < 0) {
		ts_cli_error("inspect", &err);
		return 1;
	}
	j = info.details ? json_loads(info.details, 0, NULL) : NULL;
	if (!j) {
		fprintf(stderr, "toren-sandbox inspect: backend `%s` gives no details\n",
			ts_backend_name(b));
		ts_sb_info_clear(&info);
		return 1;
	}
	status = ts_cli_print_json(j, false) == 0 ? 0 : 1;
	json_decref(j);
	ts_sb_info_clear(&info);
	return status;
}
