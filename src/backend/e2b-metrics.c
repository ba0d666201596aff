/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The e2b backend's probes of a sandbox: getMetrics over the control plane
 * (GET /sandboxes/{id}/metrics) and isRunning over envd (GET /health), as the SDK makes
 * them (spec §2 and §5).
 */
#include "e2b.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

#define E2B_METRICS_MAX 100000 /* samples of one answer (E2B keeps far fewer) */

static uint64_t bytes_of(json_t *j, const char *key)
{
	double v = json_number_value(json_object_get(j, key));

	return v > 0 && v < 1.8e19 ? (uint64_t)v : 0;
}

/* A SandboxMetric as ts_sb_metric; -EPROTO without a time. */
static int metric_from(json_t *j, struct ts_sb_metric *m)
{
	const char *ts = json_string_value(json_object_get(j, "timestamp"));
	json_t *unix_s = json_object_get(j, "timestampUnix");
	double cpus = json_number_value(json_object_get(j, "cpuCount"));
	double pct = json_number_value(json_object_get(j, "cpuUsedPct"));

	memset(m, 0, sizeof(*m));
	if (!json_is_object(j))
		return -EPROTO;
	if (!(ts && e2b_time_parse(ts, &m->ts_ms) == 0 && m->ts_ms > 0)) {
		if (!json_is_number(unix_s) || json_number_value(unix_s) <= 0)
			return -EPROTO;
		m->ts_ms = (long long)(json_number_value(unix_s) * 1000);
	}
	m->cpu_count = cpus > 0 && cpus < 1e6 ? (unsigned)cpus : 0;
	m->cpu_pct = pct > 0 ? pct : 0;
	m->mem_used = bytes_of(j, "memUsed");
	m->mem_total = bytes_of(j, "memTotal");
	m->mem_cache = bytes_of(j, "memCache");
	m->disk_used = bytes_of(j, "diskUsed");
	m->disk_total = bytes_of(j, "diskTotal");
	return 0;
}

int e2b_metrics(struct ts_backend *b, const char *id, long long start_ms, long long end_ms,
		struct ts_sb_metric **ret, size_t *n, struct ts_error *err)
{
	struct e2b *e = b->impl;
	_cleanup_free_ char *eid = e2b_uri_component(id), *path = NULL;
	_cleanup_free_ struct ts_sb_metric *v = NULL;
	struct e2b_resp resp = { 0 };
	char window[64] = "";
	json_t *j;
	size_t count;
	int r;

	if (e->debug)
		return 0; /* the SDK's getMetrics in debug mode: [] without asking */
	/* the API's window is whole unix seconds: the seconds that hold start and end */
	if (start_ms || end_ms)
		snprintf(window, sizeof(window), "?start=%lld&end=%lld", start_ms / 1000,
			 end_ms ? (end_ms + 999) / 1000 : (1LL << 40));
	if (!eid || asprintf(&path, "/sandboxes/%s/metrics%s", eid, window) < 0)
		return ts_err(err, -ENOMEM, "out of memory");
	r = e2b_api(e, "GET", path, NULL, &resp, err);
	if (r < 0)
		return r;
	if (resp.status != 200) {
		r = ts_err_prefix(err, e2b_resp_error(&resp, "metrics", err), "sandbox `%.64s`",
				  id);
		e2b_resp_clear(&resp);
		return r;
	}
	j = resp.len ? e2b_json_parse(resp.body, resp.len, err) : NULL;
	e2b_resp_clear(&resp);
	if (!json_is_array(j)) {
		json_decref(j);
		return ts_err(err, -EPROTO, "metrics of `%.64s`: not an array", id);
	}
	count = json_array_size(j);
	if (count > E2B_METRICS_MAX || (count && !(v = calloc(count, sizeof(*v))))) {
		json_decref(j);
		return ts_err(err, count > E2B_METRICS_MAX ? -EPROTO : -ENOMEM,
			      "metrics of `%.64s`: %zu samples", id, count);
	}
	for (size_t i = 0; i < count; i++)
		if (metric_from(json_array_get(j, i), &v[i]) < 0) {
			json_decref(j);
			return ts_err(err, -EPROTO, "metrics of `%.64s`: a sample without a time",
				      id);
		}
	json_decref(j);
	*ret = TAKE_PTR(v);
	*n = count;
	return 0;
}

int e2b_is_running(struct ts_sb *sb, bool *running, struct ts_error *err)
{
	struct e2b_resp resp = { 0 };
	int r = e2b_envd_get(e2b_target_of(sb), "/health", &resp, err);

	/* the SDK's isRunning: 2xx alive, 502 (the proxy's answer for a sandbox paused,
	 * killed or past its deadline) not, anything else an error (spec §5) */
	if (r < 0)
		r = ts_err_prefix(err, r, "sandbox `%s`", sb->id);
	else if (resp.status >= 200 && resp.status < 300)
		*running = true;
	else if (resp.status != 502)
		r = ts_err_prefix(err, e2b_resp_error(&resp, "envd /health", err), "sandbox `%s`",
				  sb->id);
	e2b_resp_clear(&resp);
	return r;
}
