/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the listing and housekeeping commands (ls, inspect, rm, reap) share: the record as
 * JSON, times and durations for people, the idle time as reap counts it. */
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "paths.h"
#include "store.h"

/* Resolve the paths and open the store; on failure print "toren-sandbox CMD: ..." and
 * return -errno. */
int ts_admin_open(const char *cmd, struct ts_paths *paths, struct ts_store **st);

/* What a running sandbox's init says, when it answers. */
struct ts_admin_live {
	bool running;	   /* init alive (ts_sandbox_running) */
	bool queried;	   /* init answered ts_sandbox_query */
	uint64_t idle_ms;  /* init's own idle count, when queried */
	uint64_t attached; /* clients attached, when queried */
};

/* Check whether rec runs and, when it does and query is set, ask its init. */
void ts_admin_probe(struct ts_sandbox_rec *rec, bool query, struct ts_admin_live *live);

/*
 * How long rec has been idle at now: since max(last_activity_ms, started_ms), or init's
 * own count when it answered and is lower (activity init saw that the record did not).
 */
long long ts_admin_idle_ms(const struct ts_sandbox_rec *rec, const struct ts_admin_live *live,
			   long long now);

/* When the sandbox's timeout expires (ms, CLOCK_REALTIME), or 0 when it has none. */
long long ts_admin_expires_ms(const struct ts_sandbox_rec *rec, const struct ts_admin_live *live,
			      long long now);

/* "2m30s", "31m", "1h5m", "2d3h", "2.5s": the two largest units. */
void ts_admin_fmt_duration(char *buf, size_t len, long long ms);

/* ISO 8601 UTC with milliseconds: "2024-05-01T12:00:00.000Z". */
void ts_admin_fmt_time(char *buf, size_t len, long long ms);

/* The recorded spec as JSON, with the values of env entries removed (names only): values
 * may be secrets and are not needed to tell what a sandbox gets. NULL on bad JSON. */
json_t *ts_admin_spec_json(const char *spec);

/* Every field of the record, with live state, as a JSON object (ls --json, inspect). */
json_t *ts_admin_rec_json(const struct ts_sandbox_rec *rec, const struct ts_admin_live *live,
			  long long now);

/* Does the labels JSON object hold every KEY=VALUE of filters? */
bool ts_admin_labels_match(const char *labels, char *const *filters, size_t n);

/* Print json to stdout (indented, or one line when compact) with a newline. 0 or -EIO. */
int ts_admin_print_json(json_t *j, bool compact);
