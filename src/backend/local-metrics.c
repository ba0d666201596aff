/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The local backend's metrics and liveness (backend.h: ts_sb_metrics, ts_sb_is_running).
 * Local keeps no history of samples (serve keeps its own, control-reap.c): a call measures
 * the sandbox now from the host (metrics.h), its CPU averaged since its init started.
 */
#include "local.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "metrics.h"
#include "util.h"

/* The host directories whose use is the sandbox's disk: its workspace, its upper layer
 * (from the record's details), NULL-terminated in dirs[max]. */
static void disk_dirs(const struct ts_sb_info *i, char **dirs, size_t max)
{
	json_t *d = i->details ? json_loads(i->details, 0, NULL) : NULL;
	const char *up = json_string_value(json_object_get(json_object_get(d, "paths"), "upper"));
	size_t n = 0;

	if (i->workspace && *i->workspace && n + 1 < max)
		dirs[n++] = strdup(i->workspace);
	if (up && n + 1 < max && (dirs[n] = strdup(up)))
		n++;
	dirs[n] = NULL;
	json_decref(d);
}

int ts_local_metrics(struct ts_backend *b, const char *id, long long start_ms, long long end_ms,
		     struct ts_sb_metric **ret, size_t *n, struct ts_error *err)
{
	_cleanup_(ts_sb_closep) struct ts_sb *sb = NULL;
	struct ts_sb_info info;
	struct ts_metric since, m;
	struct ts_error gone = { 0 };
	char *dirs[3] = { NULL };
	long long now = ts_realtime_ms();
	int r = ts_sb_lookup(b, id, &sb, err);

	if (r < 0)
		return r;
	if ((r = ts_sb_info(sb, &info, err)) < 0)
		return r;
	if (info.init_pid <= 0 || (start_ms && now < start_ms) || (end_ms && now > end_ms)) {
		ts_sb_info_clear(&info);
		return 0; /* stopped, or a window without now: no sample */
	}
	disk_dirs(&info, dirs, ELEMENTSOF(dirs));
	since = (struct ts_metric){ .ts_ms = info.started_ms };
	r = ts_metrics_measure(info.init_pid, info.id, (const char *const *)dirs, &since, now, &m,
			       &gone);
	for (size_t k = 0; dirs[k]; k++)
		free(dirs[k]);
	ts_sb_info_clear(&info);
	if (r < 0)
		return 0; /* its init ended since: no sample */
	if (!(*ret = calloc(1, sizeof(**ret))))
		return ts_err(err, -ENOMEM, "out of memory");
	**ret = (struct ts_sb_metric){ .ts_ms = m.ts_ms,
				       .cpu_count = m.cpu_count,
				       .cpu_pct = m.cpu_pct,
				       .mem_used = m.mem_used,
				       .mem_total = m.mem_total,
				       .mem_cache = m.mem_cache,
				       .disk_used = m.disk_used,
				       .disk_total = m.disk_total };
	*n = 1;
	return 0;
}

int ts_local_is_running(struct ts_sb *sb, bool *running, struct ts_error *err)
{
	struct ts_sb_info info;
	int r = ts_sb_info(sb, &info, err);

	/* as E2B's /health: a paused or stopped sandbox does not answer */
	*running = r == 0 && info.state == TS_SB_RUNNING;
	if (r == 0)
		ts_sb_info_clear(&info);
	return r;
}
