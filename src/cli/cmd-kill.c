/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox kill ID PROC [SIGNAL]: signal a process's whole process group. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "procs.h"
#include "sandbox.h"
#include "util.h"

int ts_cmd_kill(int argc, char **argv)
{
	struct ts_store *st;
	struct ts_sandbox_rec rec;
	struct ts_error err = { 0 };
	unsigned long long proc;
	int sig = SIGTERM, conn, code = 0;

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		puts("usage: toren-sandbox kill ID PROC [SIGNAL]\n\n"
		     "SIGNAL: a number or a name (TERM, SIGKILL, ...); default TERM\n"
		     "  -h, --help  show this help");
		return 0;
	}
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: toren-sandbox kill ID PROC [SIGNAL]\n");
		return 2;
	}
	if (ts_parse_ull(argv[2], &proc) < 0 || proc == 0) {
		fprintf(stderr, "toren-sandbox kill: bad process id `%s`\n", argv[2]);
		return 2;
	}
	if (argc == 4 && ts_cli_parse_signal(argv[3], &sig) < 0) {
		fprintf(stderr, "toren-sandbox kill: bad signal `%s`\n", argv[3]);
		return 2;
	}
	if (ts_cli_lookup("kill", argv[1], &st, &rec) < 0)
		return 1;
	if (!ts_sandbox_running(&rec)) {
		fprintf(stderr, "toren-sandbox kill: sandbox `%s` is stopped\n", rec.id);
		code = 1;
		goto out;
	}
	conn = ts_sandbox_connect(&rec, &err);
	if (conn < 0 || ts_procs_signal(conn, proc, sig, &err) < 0) {
		ts_cli_error("kill", &err);
		code = 1;
	}
	if (conn >= 0)
		close(conn);
out:
	ts_sandbox_rec_free(&rec);
	ts_store_close(st);
	return code;
}
