/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox doctor: one line per check, and the exact fix for each failure. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "hostcheck.h"
#include "launch.h"
#include "policy.h"

static const char *const level_names[] = { "ok", "info", "warn", "FAIL" };

static void on_warn(void *userdata, bool verbose_only, const char *msg)
{
	(void)userdata;
	ts_cli_warn(false, verbose_only, msg);
}

int ts_subcmd_doctor(int argc, char **argv)
{
	struct ts_check checks[TS_MAX_CHECKS];
	size_t n;
	int failures = 0;
	bool live = true;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			puts("usage: toren-sandbox doctor [--no-live]\n\n"
			     "  --no-live   skip starting a test sandbox\n"
			     "  -h, --help  show this help");
			return 0;
		} else if (!strcmp(argv[i], "--no-live")) {
			live = false;
		} else {
			fprintf(stderr, "toren-sandbox doctor: unknown option `%s`\n", argv[i]);
			return 2;
		}
	}
	n = ts_hostcheck_all(checks, TS_MAX_CHECKS);
	for (size_t i = 0; i < n; i++) {
		printf("%-4s %s: %s\n", level_names[checks[i].level], checks[i].name,
		       checks[i].detail);
		if (checks[i].fix[0] && checks[i].level != TS_CHECK_OK)
			printf("     fix: %s\n", checks[i].fix);
		if (checks[i].level == TS_CHECK_FAIL)
			failures++;
	}
	if (live && failures == 0) {
		/* The end-to-end check: start a real sandbox with every default. */
		char *cmd[] = { "/bin/true", NULL };
		struct ts_policy pol;
		const struct ts_run_hooks hooks = { .warn = on_warn };
		struct ts_run_opts o = { .argv = cmd, .hooks = &hooks };
		struct ts_error err = { 0 };
		int status = -1;

		ts_policy_init(&pol);
		o.policy = &pol;
		if (ts_run(&o, &status, &err) < 0 || status != 0) {
			printf("FAIL sandbox start: %s\n",
			       err.msg[0] ? err.msg : "`/bin/true` failed");
			printf("     fix: see the checks above; run `toren-sandbox run -v -- true`\n");
			failures++;
		} else {
			printf("ok   sandbox start: `/bin/true` ran in a sandbox\n");
		}
		ts_policy_free(&pol);
	}
	return failures ? 1 : 0;
}
