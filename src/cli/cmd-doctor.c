/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox doctor: one line per check, and the exact fix for each failure. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "curl-dl.h"
#include "hostcheck.h"
#include "launch.h"
#include "mhd-dl.h"
#include "policy.h"

static const char *const level_names[] = { "ok", "info", "warn", "FAIL" };

/*
 * The libraries loaded on first use (curl-dl.h, mhd-dl.h): what works without them is
 * everything local; a check loads them now, to say so before a command needs them.
 */
static size_t check_libraries(struct ts_check *out)
{
	struct ts_error e = { 0 };
	bool curl = ts_curl_load(&e) != NULL, mhd;

	out[0] =
		(struct ts_check){ .name = "libcurl", .level = curl ? TS_CHECK_OK : TS_CHECK_INFO };
	snprintf(out[0].detail, sizeof(out[0].detail), "%s",
		 curl ? TS_CURL_SONAME " loads (the e2b backend, `image pull`, send_file)" : e.msg);
	if (!curl)
		snprintf(out[0].fix, sizeof(out[0].fix),
			 "optional (the e2b backend, `image pull`, send_file): "
			 "apt-get install " TS_CURL_PACKAGE);
	ts_err_clear(&e);
	mhd = ts_mhd_load(&e) != NULL;
	out[1] = (struct ts_check){ .name = "libmicrohttpd",
				    .level = mhd ? TS_CHECK_OK : TS_CHECK_INFO };
	snprintf(out[1].detail, sizeof(out[1].detail), "%s",
		 mhd ? TS_MHD_SONAME " loads (`serve`)" : e.msg);
	if (!mhd)
		snprintf(out[1].fix, sizeof(out[1].fix),
			 "optional (`serve`): apt-get install " TS_MHD_PACKAGE);
	return 2;
}

static void on_warn(void *userdata, bool verbose_only, const char *msg)
{
	(void)userdata;
	ts_cli_warn(false, verbose_only, msg);
}

int ts_subcmd_doctor(int argc, char **argv)
{
	struct ts_check checks[TS_MAX_CHECKS + 2];
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
	n += check_libraries(checks + n);
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
