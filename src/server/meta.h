/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What E2B says of a sandbox that the backend does not keep: its envd access token, the
 * template id it was created from, the create body (echoed: network, lifecycle, ...),
 * the lifecycle choice at the deadline, and the metrics samples. One sqlite file,
 * `serve.db` in the state root (sqldb.h), so a restarted serve knows every sandbox and
 * token again. A sandbox the backend knows but meta does not (made by the CLI) is served
 * with defaults and no token.
 */
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "metrics.h"

struct ts_meta;

struct ts_meta_sb {
	char id[64];
	char template_id[256];
	char client_id[64];
	char envd_token[80];	/* envdAccessToken ("" when none) */
	char traffic_token[80]; /* trafficAccessToken */
	char *create_body;	/* the create request's JSON as given (text) */
	bool auto_pause;	/* at the deadline: pause, not kill */
	bool paused;
	long long created_ms;
};
void ts_meta_sb_clear(struct ts_meta_sb *m);

/* Open (create) state_root/serve.db. */
int ts_meta_open(const char *state_root, struct ts_meta **ret, struct ts_error *err);
void ts_meta_close(struct ts_meta *m);

/* Insert or replace the record of m->id. */
int ts_meta_put(struct ts_meta *m, const struct ts_meta_sb *sb, struct ts_error *err);
/* -ENOENT when unknown. */
int ts_meta_get(struct ts_meta *m, const char *id, struct ts_meta_sb *ret, struct ts_error *err);
int ts_meta_delete(struct ts_meta *m, const char *id, struct ts_error *err);
int ts_meta_set_paused(struct ts_meta *m, const char *id, bool paused, struct ts_error *err);
/* Every record (for signed-URL routing and the reaper). */
int ts_meta_list(struct ts_meta *m, struct ts_meta_sb **ret, size_t *n, struct ts_error *err);
void ts_meta_sbs_free(struct ts_meta_sb *v, size_t n);

/* --- metrics samples (control-reap.c takes them, GET /sandboxes/{id}/metrics reads) --- */

#define TS_META_METRICS_KEEP 720 /* per sandbox: an hour of samples 5 s apart */

/* Add a sample of sandbox id, dropping its oldest beyond TS_META_METRICS_KEEP. Samples go
 * with the sandbox's record (ts_meta_delete). */
int ts_meta_metric_add(struct ts_meta *m, const char *id, const struct ts_metric *s,
		       struct ts_error *err);
/* Its samples with from_ms <= ts_ms <= to_ms, oldest first (*ret NULL when none). */
int ts_meta_metrics(struct ts_meta *m, const char *id, long long from_ms, long long to_ms,
		    struct ts_metric **ret, size_t *n, struct ts_error *err);
/* Its newest sample; -ENOENT when it has none. */
int ts_meta_metric_last(struct ts_meta *m, const char *id, struct ts_metric *ret,
			struct ts_error *err);
