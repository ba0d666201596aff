/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox kill ID PROC [SIGNAL]: signal a process's whole process group. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "cli.h"
#include "commands.h"
#include "util.h"

int ts_subcmd_kill(int argc, char **argv)
{
	struct ts_backend *b = NULL;
	struct ts_sb *sb = NULL;
	struct ts_error err = { 0 };
	struct ts_proc_sel sel = { 0 };
	unsigned long long proc;
	int sig = SIGTERM, r;

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
	sel.proc = proc;
	if (ts_cli_backend("kill", &b) < 0)
		return 1;
	r = ts_sb_lookup(b, argv[1], &sb, &err);
	if (r == 0)
		r = ts_cmd_signal(sb, &sel, sig, &err);
	if (r == -ENOTCONN)
		fprintf(stderr, "toren-sandbox kill: sandbox `%s` is stopped\n", argv[1]);
	else if (r < 0)
		ts_cli_error("kill", &err);
	ts_sb_close(sb);
	ts_backend_free(b);
	return r < 0 ? 1 : 0;
}
