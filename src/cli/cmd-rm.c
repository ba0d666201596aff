/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox rm [-f] [--purge] ID...: forget sandboxes and remove their runtime files;
 * with --purge also their upper layer and their own workspace. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admin.h"
#include "cleanup.h"
#include "cli.h"
#include "commands.h"
#include "sandbox.h"
#include "util.h"

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

static bool exists_at(int dfd, const char *name)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Remove dfd/name without following links; say what failed. true when gone. */
static bool remove_at(int dfd, const char *dir, const char *name)
{
	int r = ts_rm_rf_at(dfd, name);

	if (r < 0) {
		fprintf(stderr, "toren-sandbox rm: remove `%s/%s`: %s\n", dir, name, strerror(-r));
		return false;
	}
	return true;
}

/*
 * The record is already gone; now its files. Only $ROOT/<id> itself is ever touched,
 * through fds opened with O_NOFOLLOW, so neither a symlink planted in the sandbox's
 * directory nor a tampered `dir` column can point the removal elsewhere.
 */
static int remove_files(const struct ts_paths *paths, const struct ts_sandbox_rec *rec, bool purge)
{
	static const char *const always[] = { "run", "logs", "work" };
	_cleanup_close_ int rootfd = -EBADF, dfd = -EBADF;
	char expect[4200];
	bool own_ws = ts_admin_own_workspace(rec), ok = true;

	snprintf(expect, sizeof(expect), "%s/%s", paths->root, rec->id);
	if (strcmp(expect, rec->dir) != 0) {
		fprintf(stderr,
			"toren-sandbox rm: %s: recorded directory `%s` is not `%s`: its files "
			"are left alone\n",
			rec->id, rec->dir, expect);
		return -EINVAL;
	}
	if (purge && !own_ws)
		fprintf(stderr,
			"toren-sandbox rm: %s: kept workspace `%s`: it was given with --workspace, "
			"not made for the sandbox\n",
			rec->id, rec->workspace);
	rootfd = open(paths->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd >= 0)
		dfd = openat(rootfd, rec->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		if (errno == ENOENT)
			return 0;
		fprintf(stderr, "toren-sandbox rm: open `%s`: %s\n", rec->dir, strerror(errno));
		return -errno;
	}
	for (size_t i = 0; i < ELEMENTSOF(always); i++)
		ok &= remove_at(dfd, rec->dir, always[i]);
	if (purge) {
		ok &= remove_at(dfd, rec->dir, "upper");
		if (own_ws)
			ok &= remove_at(dfd, rec->dir, "workspace");
	} else {
		bool upper = exists_at(dfd, "upper"), ws = own_ws && exists_at(dfd, "workspace");

		if (upper || ws)
			fprintf(stderr,
				"toren-sandbox rm: %s: kept %s%s%s in `%s` (--purge removes %s)\n",
				rec->id, ws ? "its workspace" : "", ws && upper ? " and " : "",
				upper ? "its upper layer" : "", rec->dir,
				ws && upper ? "them" : "it");
	}
	/* Gone when empty; what was kept keeps it. */
	if (unlinkat(rootfd, rec->id, AT_REMOVEDIR) < 0 && errno != ENOTEMPTY && errno != EEXIST &&
	    errno != ENOENT) {
		fprintf(stderr, "toren-sandbox rm: remove `%s`: %s\n", rec->dir, strerror(errno));
		ok = false;
	}
	return ok ? 0 : -EIO;
}

int ts_cmd_rm(int argc, char **argv)
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
		if (ts_store_delete(st, recs[i].id, &err) < 0) {
			ts_cli_error("rm", &err);
			failed = 1;
			continue;
		}
		if (remove_files(&paths, &recs[i], purge) < 0)
			failed = 1;
		printf("%s\n", recs[i].id);
	}
	fflush(stdout);
out:
	ts_sandbox_recs_free(recs, n);
	ts_store_close(st);
	return failed;
}
