/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox timeout ID DURATION: set a sandbox's timeout from now (E2B's setTimeout). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "cleanup.h"
#include "cli.h"
#include "commands.h"
#include "policy.h"
#include "util.h"

static void usage(FILE *f)
{
	fputs("usage: toren-sandbox timeout ID DURATION\n"
	      "\n"
	      "The sandbox expires DURATION from now (90s, 30m, 2h; 0 = never); an idle timeout\n"
	      "stays an idle timeout, counted from now. Shorter and longer are both allowed.\n"
	      "  -h, --help  show this help\n",
	      f);
}

int ts_subcmd_timeout(int argc, char **argv)
{
	_cleanup_(ts_backend_freep) struct ts_backend *b = NULL;
	_cleanup_(ts_sb_closep) struct ts_sb *sb = NULL;
	struct ts_error err = { 0 };
	unsigned long long ms;
	int r;

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc != 3) {
		usage(stderr);
		return 2;
	}
	/* as create --ttl: under a second is a typo, and would round to "never" */
	r = ts_parse_duration_ms(argv[2], &ms);
	if (r < 0 || (ms > 0 && ms < 1000) || ms > (unsigned long long)TS_SB_TIMEOUT_MAX_MS) {
		fprintf(stderr,
			"toren-sandbox timeout: bad duration `%s`: %swant 0 (never) or 1s to 10 "
			"years, like 90s, 30m, 2h\n",
			argv[2], ts_policy_too_large(r));
		return 2;
	}
	if (ts_cli_backend("timeout", &b) < 0)
		return 1;
	r = ts_sb_lookup(b, argv[1], &sb, &err);
	if (r == 0)
		r = ts_sb_set_timeout(sb, (long long)ms, &err);
	if (r < 0) {
		ts_cli_error("timeout", &err);
		return 1;
	}
	return 0;
}
