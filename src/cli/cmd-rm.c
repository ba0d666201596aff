/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox rm [-f] [--purge] ID...: forget sandboxes and remove their runtime files;
 * with --purge also their upper layer and their own workspace. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "cli.h"
#include "commands.h"

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

/* Is the sandbox with this id gone from the backend? */
static bool gone(struct ts_backend *b, const char *id)
{
	struct ts_error err = { 0 };
	struct ts_sb *sb = NULL;

	if (ts_sb_lookup(b, id, &sb, &err) == 0) {
		ts_sb_close(sb);
		return false;
	}
	return ts_be_code(&err) == TS_BE_NOT_FOUND;
}

int ts_subcmd_rm(int argc, char **argv)
{
	static const struct option longopts[] = { { "force", no_argument, NULL, 'f' },
						  { "purge", no_argument, NULL, 'P' },
						  { "help", no_argument, NULL, 'h' },
						  {} };
	_cleanup_(ts_backend_freep) struct ts_backend *b = NULL;
	struct ts_sb **sbs = NULL;
	unsigned flags = 0;
	size_t n = 0;
	int c, failed = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "fh", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			flags |= TS_SB_REMOVE_FORCE;
			break;
		case 'P':
			flags |= TS_SB_REMOVE_PURGE;
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
	if (ts_cli_backend("rm", &b) < 0)
		return 1;
	sbs = calloc((size_t)(argc - optind), sizeof(*sbs));
	if (!sbs) {
		fputs("toren-sandbox rm: out of memory\n", stderr);
		return 1;
	}

	/* Every reference resolves and no sandbox runs (unless -f), or nothing is done. */
	for (int i = optind; i < argc; i++) {
		struct ts_error err = { 0 };
		struct ts_sb_info info;
		struct ts_sb *sb = NULL;
		bool dup = false;

		if (ts_sb_lookup(b, argv[i], &sb, &err) < 0) {
			ts_cli_error("rm", &err);
			failed = 1;
			continue;
		}
		for (size_t k = 0; k < n; k++)
			dup |= !strcmp(ts_sb_id(sbs[k]), ts_sb_id(sb));
		if (dup) {
			ts_sb_close(sb);
			continue;
		}
		if (!(flags & TS_SB_REMOVE_FORCE) && ts_sb_info(sb, &info, &err) == 0) {
			if (info.state == TS_SB_RUNNING) {
				fprintf(stderr,
					"toren-sandbox rm: sandbox `%s` is running: stop it first "
					"(`toren-sandbox stop %s`) or use `rm -f`\n",
					ts_sb_id(sb), ts_sb_id(sb));
				failed = 1;
			}
			ts_sb_info_clear(&info);
		}
		sbs[n++] = sb;
	}
	if (failed) {
		fputs("toren-sandbox rm: nothing removed\n", stderr);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct ts_error err = { 0 };

		/* -f was decided above for every one: each removal may stop what it removes */
		if (ts_sb_remove(sbs[i], flags | TS_SB_REMOVE_FORCE, warn_line, NULL, &err) < 0) {
			ts_cli_error("rm", &err);
			failed = 1;
			/* forgotten even when some files stayed: it is removed as a sandbox */
			if (!gone(b, ts_sb_id(sbs[i])))
				continue;
		}
		printf("%s\n", ts_sb_id(sbs[i]));
	}
	fflush(stdout);
out:
	for (size_t i = 0; i < n; i++)
		ts_sb_close(sbs[i]);
	free(sbs);
	return failed;
}
