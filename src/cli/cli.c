/* SPDX-License-Identifier: Apache-2.0 */
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "backend.h"
#include "cleanup.h"
#include "fileclient.h"
#include "paths.h"
#include "sandbox.h"
#include "util.h"

void ts_cli_error(const char *cmd, const struct ts_error *err)
{
	fprintf(stderr, "toren-sandbox %s: %s\n", cmd,
		err->msg[0] ? err->msg : strerror(err->code));
}

void ts_cli_warn(bool verbose, bool verbose_only, const char *msg)
{
	if (verbose || !verbose_only)
		fprintf(stderr, "toren-sandbox: warning: %s\n", msg);
}

static void backend_warn(void *userdata, bool verbose_only, const char *msg)
{
	(void)userdata;
	ts_cli_warn(false, verbose_only, msg);
}

bool ts_cli_label_ok(const char *cmd, const char *kv)
{
	char why[128], shown[64];

	if (ts_label_valid(kv, why, sizeof(why)))
		return true;
	/* shown as given, but never raw control characters to the terminal */
	snprintf(shown, sizeof(shown), "%s", kv);
	ts_sanitize_text(shown);
	fprintf(stderr, "toren-sandbox %s: bad --label `%s`: %s\n", cmd, shown, why);
	return false;
}

int ts_cli_backend(const char *cmd, struct ts_backend **ret)
{
	struct ts_error err = { 0 };
	int r = ts_backend_open(NULL, ret, &err);

	if (r < 0)
		ts_cli_error(cmd, &err);
	else
		ts_backend_on_warning(*ret, backend_warn, NULL);
	return r;
}

int ts_cli_parse_signal(const char *s, int *ret)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {
		{ "HUP", SIGHUP },   { "INT", SIGINT },	    { "QUIT", SIGQUIT },
		{ "KILL", SIGKILL }, { "USR1", SIGUSR1 },   { "USR2", SIGUSR2 },
		{ "TERM", SIGTERM }, { "CONT", SIGCONT },   { "STOP", SIGSTOP },
		{ "TSTP", SIGTSTP }, { "WINCH", SIGWINCH }, { "ALRM", SIGALRM },
	};
	unsigned long long v;

	if (ts_parse_ull(s, &v) == 0) {
		if (v < 1 || v > 64)
			return -EINVAL;
		*ret = (int)v;
		return 0;
	}
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (!strcasecmp(s, names[i].name)) {
			*ret = names[i].sig;
			return 0;
		}
	return -EINVAL;
}

int ts_cli_each(int argc, char **argv, const char *cmd,
		int (*fn)(struct ts_sb *sb, struct ts_error *err))
{
	_cleanup_(ts_backend_freep) struct ts_backend *b = NULL;
	int failed = 0;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fprintf(argc < 2 ? stderr : stdout,
			"usage: toren-sandbox %s ID...\n\n  -h, --help  show this help\n", cmd);
		return argc < 2 ? 2 : 0;
	}
	if (ts_cli_backend(cmd, &b) < 0)
		return 1;
	for (int i = 1; i < argc; i++) {
		struct ts_sb *sb = NULL;
		struct ts_error err = { 0 };

		if (ts_sb_lookup(b, argv[i], &sb, &err) < 0 || fn(sb, &err) < 0) {
			ts_cli_error(cmd, &err);
			failed = 1;
		}
		ts_sb_close(sb);
	}
	return failed;
}

bool ts_cli_is_snapshot(struct ts_backend *b, const char *ref)
{
	_cleanup_free_ struct ts_snap_info *v = NULL;
	struct ts_error ignore;
	size_t n = 0;

	if (ts_backend_snapshots(b, &v, &n, &ignore) < 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(v[i].id, ref))
			return true;
		for (size_t k = 0; k < v[i].n_names; k++)
			if (!strcmp(v[i].names[k], ref))
				return true;
	}
	return false;
}

int ts_cli_print_json(json_t *j, bool compact)
{
	size_t flags = compact ? JSON_COMPACT : JSON_INDENT(2);

	if (json_dumpf(j, stdout, flags | JSON_PRESERVE_ORDER) < 0 || fputc('\n', stdout) == EOF ||
	    fflush(stdout) == EOF)
		return -EIO;
	return 0;
}

void ts_cli_size_text(uint64_t n, char *out, size_t len)
{
	const char *units = "BKMGT";
	double v = (double)n;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(out, len, "%lluB", (unsigned long long)n);
	else
		snprintf(out, len, "%.1f%c", v, units[u]);
}
