/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A durable sandbox's record as it stands now: whether it runs, what its init says of
 * its idle time, when its timeout expires, whether `reap` should stop it, and the record
 * as JSON (the local backend's details, `ls --json`, `inspect`). Pure arithmetic on the
 * record plus one HELLO to init when asked; nothing is printed.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* What a running sandbox's init says, when it answers. */
struct ts_sb_live {
	bool running;	   /* init alive (ts_sandbox_running) */
	bool queried;	   /* init answered HELLO */
	uint64_t idle_ms;  /* init's own idle count, when queried */
	uint64_t attached; /* clients attached, when queried */
	bool paused;	   /* its processes are stopped (PAUSE), when queried */
};

/* Is rec running (a dead init is noted in rec) and, when it is and query is set, what
 * does its init say? */
void ts_sb_probe(struct ts_sandbox_rec *rec, bool query, struct ts_sb_live *live);

/*
 * How long rec has been idle at now: since max(last_activity_ms, started_ms), or init's
 * own count when it answered and is lower (activity init saw that the record did not).
 */
long long ts_sb_idle_ms(const struct ts_sandbox_rec *rec, const struct ts_sb_live *live,
			long long now);

/* When the sandbox's timeout expires (ms, CLOCK_REALTIME), or 0 when it has none. */
long long ts_sb_expires_ms(const struct ts_sandbox_rec *rec, const struct ts_sb_live *live,
			   long long now);

/* Why `reap` stops a sandbox. */
enum ts_reap_reason {
	TS_REAP_NONE,
	TS_REAP_IDLE,	  /* idle past its timeout, nobody attached */
	TS_REAP_ABSOLUTE, /* older than its absolute timeout */
	TS_REAP_OWNER,	  /* its owner process is gone */
};
const char *ts_reap_reason_name(enum ts_reap_reason r); /* "idle", "absolute", "owner" */

/*
 * Should rec stop now (probing it, with init's answer in *live)? *amount: the idle time
 * or the age that passed the timeout. describe gets "idle 31m > ttl 30m" and the like.
 */
enum ts_reap_reason ts_sb_judge(struct ts_sandbox_rec *rec, long long now, struct ts_sb_live *live,
				long long *amount, char *describe, size_t len);

/* "2m30s", "31m", "1h5m", "2d3h", "2.5s": the two largest units. */
void ts_fmt_duration(char *buf, size_t len, long long ms);

/* ISO 8601 UTC with milliseconds: "2024-05-01T12:00:00.000Z". */
void ts_fmt_time(char *buf, size_t len, long long ms);

/* The recorded spec as JSON, with the values of env entries removed (names only): values
 * may be secrets and are not needed to tell what a sandbox gets. NULL on bad JSON. */
json_t *ts_sb_spec_json(const char *spec);

/* Every field of the record, with live state, as a JSON object. */
json_t *ts_sb_rec_json(const struct ts_sandbox_rec *rec, const struct ts_sb_live *live,
		       long long now);

/*
 * Add the egress's connection counts to network (the "network" object of ts_sb_rec_json
 * for a running sandbox whose init is init_pid, started at init_start: the helper joins
 * nothing when that pid is another process by then): "connections", "connections_ipv4",
 * "connections_ipv6", the TCP connections it opened through egress, read by
 * `helper --net-counters` (only the helper may join the sandbox's namespaces, where the
 * counters are). Nothing is added where they cannot be read (no egress, not running).
 */
void ts_sb_net_counters(const char *helper, pid_t init_pid, unsigned long long init_start,
			json_t *network);

/* Does the labels JSON object hold every keys[i] = values[i]? */
bool ts_sb_labels_match(const char *labels, const char *const *keys, const char *const *values,
			size_t n);
