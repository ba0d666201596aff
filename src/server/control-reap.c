// SPDX-License-Identifier: Apache-2.0
/*
 * What serve does to E2B sandboxes by itself, once a second: past its deadline a sandbox
 * is killed (E2B's kill: removed with its files, gone from every listing) or, created
 * with autoPause, paused; a running one is measured every TS_CONTROL_SAMPLE_MS into
 * meta (metrics.h). Only sandboxes serve created: the CLI's keep their own idle timeout
 * and `toren-sandbox reap`.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "control.h"
#include "runner.h"
#include "meta.h"
#include "metrics.h"
#include "snapshots.h"
#include "util.h"

bool ts_control_expired(const struct ts_srv_sb *e, long long now_ms)
{
	/* a paused sandbox has no deadline; one stopped behind serve's back (`toren-sandbox
	 * stop` or `reap`) still has its E2B one */
	return e->has_meta && !e->meta.auto_pause && !e->meta.paused && e->end_at &&
	       e->end_at <= now_ms;
}

int ts_control_kill(struct ts_srv *srv, struct ts_srv_sb *e, struct ts_error *err)
{
	char id[64];
	struct ts_error ignore;
	int r;

	snprintf(id, sizeof(id), "%s", e->id);
	r = ts_sb_remove(e->sb, TS_SB_REMOVE_FORCE | TS_SB_REMOVE_PURGE, NULL, NULL, err);
	if (r < 0 && r != -ENOENT)
		return r;
	/* e goes with the cache entry: nothing of it is used after this */
	ts_srv_forget(srv, id);
	ts_meta_delete(srv->meta, id, &ignore);
	return r;
}

int ts_control_pause(struct ts_srv *srv, struct ts_srv_sb *e, struct ts_error *err)
{
	struct ts_sb_info info;
	struct ts_error ignore;
	int r = ts_sb_info(e->sb, &info, err);

	if (r < 0)
		return r;
	r = info.state == TS_SB_RUNNING ? 0 : -EALREADY;
	ts_sb_info_clear(&info);
	if (r == 0 && e->has_meta && e->meta.paused)
		r = -EALREADY;
	if (r < 0)
		return ts_err(err, r, "sandbox `%s` is already paused", e->id);
	r = ts_sb_pause(e->sb, err);
	if (r < 0)
		return r;
	/* a sandbox the CLI made has no record: its pause is in its init alone */
	if (e->has_meta && (r = ts_meta_set_paused(srv->meta, e->id, true, err)) < 0)
		return r;
	ts_srv_refresh(srv, e, &ignore);
	return 0;
}

/* The host directories whose use counts as the sandbox's disk: its upper layer and its
 * workspace (from the local backend's details). */
static void disk_dirs(const struct ts_sb_info *i, char **dirs, size_t max)
{
	json_t *d = i->details ? json_loads(i->details, 0, NULL) : NULL;
	json_t *paths = json_object_get(d, "paths");
	const char *up = json_string_value(json_object_get(paths, "upper"));
	size_t n = 0;

	if (i->workspace && *i->workspace && n + 1 < max)
		dirs[n++] = strdup(i->workspace);
	if (up && n + 1 < max)
		dirs[n++] = strdup(up);
	dirs[n] = NULL;
	json_decref(d);
}

static void sample(struct ts_srv *srv, struct ts_srv_sb *e, long long now)
{
	struct ts_metric prev, s;
	struct ts_sb_info info;
	struct ts_error err = { 0 };
	char *dirs[3] = { NULL };
	bool have_prev = ts_meta_metric_last(srv->meta, e->id, &prev, &err) == 0;

	if (have_prev && now - prev.ts_ms < TS_CONTROL_SAMPLE_MS && now >= prev.ts_ms)
		return;
	if (ts_sb_info(e->sb, &info, &err) < 0)
		return;
	disk_dirs(&info, dirs, ELEMENTSOF(dirs));
	if (info.init_pid > 0 && ts_metrics_measure(info.init_pid, e->id, (const char *const *)dirs,
						    have_prev ? &prev : NULL, now, &s, &err) == 0)
		ts_meta_metric_add(srv->meta, e->id, &s, &err);
	for (size_t k = 0; dirs[k]; k++)
		free(dirs[k]);
	ts_sb_info_clear(&info);
}

void ts_control_reap(struct ts_srv *srv)
{
	struct ts_meta_sb *v = NULL;
	struct ts_error err = { 0 };
	size_t n = 0;

	if (ts_meta_list(srv->meta, &v, &n, &err) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		struct ts_srv_sb *e = NULL;
		struct ts_error ignore = { 0 };
		long long now = ts_realtime_ms();
		int r;

		/* paused by its snapshot's copy: a refresh now would record it as not running
		 * (envd's 502) until the next round; the job refreshes it when the copy ends,
		 * and a deadline passed meanwhile is for a later round */
		if (ts_snapshots_busy(srv, v[i].id))
			continue;
		r = ts_srv_sandbox(srv, v[i].id, &e, &ignore);
		if (r == 0)
			r = ts_srv_refresh(srv, e, &ignore);
		if (r == -ENOENT) {
			/* removed behind serve's back (`toren-sandbox rm`): its record goes */
			ts_meta_delete(srv->meta, v[i].id, &ignore);
			continue;
		}
		if (r < 0)
			continue;
		if (ts_control_expired(e, now))
			ts_control_kill(srv, e, &ignore);
		else if (e->meta.auto_pause && e->running && e->end_at && e->end_at <= now)
			ts_control_pause(srv, e, &ignore);
		else if (e->running)
			sample(srv, e, now);
	}
	ts_meta_sbs_free(v, n);
}

/* Once a minute, the agent runs' part of reap (runner.h): the sandboxes of finished runs
 * and the runner's orphans stop, as `toren-sandbox reap` does it. */
static void reap_runs(struct ts_srv *srv)
{
	struct ts_error err = { 0 };
	unsigned failed = 0;

	if (++srv->runs_reap_ticks < TS_CONTROL_RUNS_REAP_TICKS)
		return;
	srv->runs_reap_ticks = 0;
	(void)ts_runner_reap_default(srv->be, false, NULL, NULL, &failed, &err);
}

static void tick(void *userdata)
{
	struct ts_srv *srv = userdata;

	ts_control_reap(srv);
	reap_runs(srv);
	ts_loop_timer_set(srv->reaper, ts_loop_now(srv->loop) + TS_CONTROL_TICK_MS);
}

int ts_control_start(struct ts_srv *srv, struct ts_error *err)
{
	srv->reaper = ts_loop_add_timer(srv->loop, ts_loop_now(srv->loop) + TS_CONTROL_TICK_MS,
					tick, srv);
	return srv->reaper ? 0 : ts_err(err, -ENOMEM, "the reaper's timer");
}

void ts_control_stop(struct ts_srv *srv)
{
	ts_loop_del_timer(srv->reaper);
	srv->reaper = NULL;
}
