/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox start ID...: rebuild stopped sandboxes around their workspace. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "sandbox.h"

int ts_cmd_start(int argc, char **argv)
{
	int failed = 0;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs("usage: toren-sandbox start ID...\n\n  -h, --help  show this help\n",
		      argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (int i = 1; i < argc; i++) {
		struct ts_store *st;
		struct ts_sandbox_rec rec;
		struct ts_error err = { 0 };

		if (ts_cli_lookup("start", argv[i], &st, &rec) < 0) {
			failed = 1;
			continue;
		}
		if (ts_sandbox_start(st, &rec, &err) < 0) {
			ts_cli_error("start", &err);
			failed = 1;
		}
		ts_sandbox_rec_free(&rec);
		ts_store_close(st);
	}
	return failed;
}
