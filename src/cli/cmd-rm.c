/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox rm [-f] [--purge] ID...: forget sandboxes and remove their runtime files;
 * with --purge also their upper layer and their own workspace. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "cleanup.h"
#include "cli.h"
#include "commands.h"
#include "sandbox.h"

#define RM_GRACE_MS 2000

static void usage(FILE *f)
{
	fputs("usage: toren-sandbox rm [-f] [--purge] ID...\n"
	      "\n"
	      "  -f, --force  stop a running sandbox first (else running ones are refused)\n"
	      "      --purge  also delete the upper layer and the sandbox's own workspace\n"
	      "               (never a directory given with create --workspace)\n"
	      "  -h, --help   show this help\n",
	      f);
}

/* What the removal kept or could not remove, as a warning line. */
static void warn_line(void *userdata, const char *msg)
{
	(void)userdata;
	fprintf(stderr, "toren-sandbox rm: %s\n", msg);
}

/* Is id no longer in the store? */
static bool forgotten(struct ts_store *st, const char *id)
{
	struct ts_error err = { 0 };
	struct ts_sandbox_rec rec;

	if (ts_store_get(st, id, &rec, &err) == 0) {
		ts_sandbox_rec_free(&rec);
		return false;
	}
	return err.code == ENOENT;
}

int ts_subcmd_rm(int argc, char **argv)
{
	static const struct option longopts[] = { { "force", no_argument, NULL, 'f' },
						  { "purge", no_argument, NULL, 'P' },
						  { "help", no_argument, NULL, 'h' },
						  {} };
	struct ts_paths paths;
	struct ts_store *st = NULL;
	struct ts_sandbox_rec *recs = NULL;
	bool force = false, purge = false;
	size_t n = 0;
	int c, failed = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "fh", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			force = true;
			break;
		case 'P':
			purge = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	if (ts_admin_open("rm", &paths, &st) < 0)
		return 1;
	recs = calloc((size_t)(argc - optind), sizeof(*recs));
	if (!recs) {
		fputs("toren-sandbox rm: out of memory\n", stderr);
		ts_store_close(st);
		return 1;
	}

	/* Every reference resolves and no sandbox runs (unless -f), or nothing is done. */
	for (int i = optind; i < argc; i++) {
		struct ts_error err = { 0 };
		struct ts_sandbox_rec rec;
		bool dup = false;

		if (ts_store_get(st, argv[i], &rec, &err) < 0) {
			ts_cli_error("rm", &err);
			failed = 1;
			continue;
		}
		for (size_t k = 0; k < n; k++)
			dup |= !strcmp(recs[k].id, rec.id);
		if (dup) {
			ts_sandbox_rec_free(&rec);
			continue;
		}
		if (!force && ts_sandbox_running(&rec)) {
			fprintf(stderr,
				"toren-sandbox rm: sandbox `%s` is running: stop it first "
				"(`toren-sandbox stop %s`) or use `rm -f`\n",
				rec.id, rec.id);
			failed = 1;
		}
		recs[n++] = rec;
	}
	if (failed) {
		fputs("toren-sandbox rm: nothing removed\n", stderr);
		goto out;
	}

	for (size_t i = 0; i < n; i++) {
		struct ts_error err = { 0 };

		/* also when it looks stopped: stop ends an init that runs unrecorded */
		if (ts_sandbox_stop(st, &recs[i], RM_GRACE_MS, &err) < 0) {
			ts_cli_error("rm", &err);
			failed = 1;
			continue;
		}
		if (ts_sandbox_remove(st, &paths, &recs[i], purge, warn_line, NULL, &err) < 0) {
			ts_cli_error("rm", &err);
			failed = 1;
			/* forgotten even when some files stayed: it is removed as a sandbox */
			if (!forgotten(st, recs[i].id))
				continue;
			printf("%s\n", recs[i].id);
			continue;
		}
		printf("%s\n", recs[i].id);
	}
	fflush(stdout);
out:
	ts_sandbox_recs_free(recs, n);
	ts_store_close(st);
	return failed;
}
