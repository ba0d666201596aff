/* SPDX-License-Identifier: Apache-2.0 */
/* The runs' part of `reap` (runner.h): finished runs' sandboxes and orphans. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "paths.h"
#include "runner.h"
#include "util.h"

/* The value of label key in a "k=v" list, or NULL. */
static const char *label(const struct ts_sb_info *i, const char *key)
{
	size_t kl = strlen(key);
	for (size_t k = 0; k < i->n_metadata; k++)
		if (strncmp(i->metadata[k], key, kl) == 0 && i->metadata[k][kl] == '=')
			return i->metadata[k] + kl + 1;
	return NULL;
}

/* Why the runner's sandbox i should stop, or NULL when it stays. */
static const char *judge(struct ts_runlog *l, const struct ts_sb_info *i, long long now,
			 char *detail, size_t len, struct ts_error *err)
{
	const char *run = label(i, "toren.run");
	struct ts_run_rec rec = { 0 };
	int k = run && *run ? ts_runlog_run_get(l, run, &rec, err) : -ENOENT;
	const char *why = NULL;

	if (k == 0) {
		if (rec.finished_ms) {
			why = "run-finished";
			snprintf(detail, len, "run %s is finished", rec.id);
		}
	} else if (k == -ENOENT && now - i->created_ms > TS_RUNNER_ORPHAN_MS) {
		why = "orphan";
		snprintf(detail, len, "made by the runner %lld h ago and in no known run",
			 (now - i->created_ms) / 3600000);
	}
	/* another error: the log cannot say; the sandbox stays */
	ts_run_rec_clear(&rec);
	ts_err_clear(err);
	return why;
}

int ts_runner_reap(struct ts_backend *b, struct ts_runlog *l, bool dry_run, ts_reap_fn fn,
		   void *userdata, unsigned *failed, struct ts_error *err)
{
	struct ts_sb_list_opts o = { .running = true };
	struct ts_sb_info *v = NULL;
	size_t n = 0;
	char *next = NULL;
	long long now = ts_realtime_ms();
	bool local = strcmp(ts_backend_name(b), "local") == 0;
	int k;

	*failed = 0;
	if ((k = ts_sb_list(b, &o, &v, &n, &next, err)) < 0)
		return k;
	free(next); /* one page: the local backend lists every sandbox */
	for (size_t i = 0; i < n; i++) {
		char detail[256];
		struct ts_error e = { 0 };
		if (!label(&v[i], "toren.agent"))
			continue;
		const char *why = judge(l, &v[i], now, detail, sizeof(detail), &e);
		if (!why)
			continue;
		struct ts_reap_action a = { .id = v[i].id,
					    .name = v[i].name,
					    .reason = why,
					    .detail = detail,
					    .ttl_ms = v[i].timeout_ms };
		if (!dry_run) {
			struct ts_sb *sb = NULL;
			int s = ts_sb_lookup(b, v[i].id, &sb, &e);
			if (s == 0)
				s = local ? ts_sb_stop(sb, &e) : ts_sb_kill(b, v[i].id, &e);
			ts_sb_close(sb);
			a.stopped = s == 0;
			a.err = s < 0 ? &e : NULL;
			if (s < 0)
				(*failed)++;
		}
		if (fn)
			fn(userdata, &a);
	}
	ts_sb_infos_free(v, n);
	return 0;
}

int ts_runner_reap_default(struct ts_backend *b, bool dry_run, ts_reap_fn fn, void *userdata,
			   unsigned *failed, struct ts_error *err)
{
	struct ts_paths paths;
	char path[4200];
	struct ts_runlog *l = NULL;
	int k = ts_paths_init(&paths, err);

	*failed = 0;
	if (k < 0)
		return k;
	if (snprintf(path, sizeof(path), "%s/runs.db", paths.root) >= (int)sizeof(path))
		return ts_err(err, -ENAMETOOLONG, "the state root's path is too long");
	if (access(path, F_OK) < 0)
		return errno == ENOENT ? 0 : ts_err_errno(err, -errno, "access `%s`", path);
	if ((k = ts_runlog_open(path, &l, err)) < 0)
		return k;
	k = ts_runner_reap(b, l, dry_run, fn, userdata, failed, err);
	ts_runlog_close(l);
	return k;
}
