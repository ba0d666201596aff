/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * E2B's control plane (control.c: the routes, ts_control_routes in server.h) and what
 * serve does to sandboxes on its own (control-reap.c): at its deadline an E2B sandbox is
 * killed (removed with its files) or, with autoPause, paused; a running one is measured
 * every TS_CONTROL_SAMPLE_MS for GET /sandboxes/{id}/metrics.
 */
#include <stdbool.h>

#include "server.h"

#define TS_CONTROL_TICK_MS 1000	      /* the reaper's period */
#define TS_CONTROL_RUNS_REAP_TICKS 60 /* ticks between two rounds of the runs' reap */
#define TS_CONTROL_SAMPLE_MS 5000     /* metrics samples of a running sandbox */
#define TS_CONTROL_TIMEOUT_S 300      /* a create or resume without timeout */
#define TS_CONTROL_ENVD_VERSION "0.6.13"

/* Arm the reaper on srv->loop (srv->reaper). 0 or -errno. */
int ts_control_start(struct ts_srv *srv, struct ts_error *err);
void ts_control_stop(struct ts_srv *srv);

/* One round of the reaper now: every E2B sandbox past its deadline is killed or paused,
 * samples are taken where due. */
void ts_control_reap(struct ts_srv *srv);

/*
 * E2B's kill of an entry: removed with its files, forgotten by the cache and by meta.
 * 0, or -errno with err (-ENOENT when the backend no longer knew it: forgotten all the
 * same).
 */
int ts_control_kill(struct ts_srv *srv, struct ts_srv_sb *e, struct ts_error *err);
/* E2B's pause of an entry (state and meta). -EALREADY when paused or stopped. */
int ts_control_pause(struct ts_srv *srv, struct ts_srv_sb *e, struct ts_error *err);

/* For snapshots.c: the auth check (0, or -1 with the 401/403 sent), the entry of id (NULL
 * with the 404 or other error sent), a create recorded as POST /sandboxes does one, *ret
 * the Sandbox JSON (-EPROTO: its record could not be written). */
int ts_control_auth(struct ts_srv *srv, struct ts_req *req);
struct ts_srv_sb *ts_control_find(struct ts_srv *srv, struct ts_req *req, const char *id);
int ts_control_create(struct ts_srv *srv, const struct ts_sb_create_opts *o, const char *text,
		      bool auto_pause, json_t **ret, struct ts_error *err);
/* The record half of ts_control_create, also for a sandbox made elsewhere (a thread's
 * backend handle, snapshots.c: own false): sb is taken (own: into the cache entry, else
 * closed; removed when it cannot be recorded). */
int ts_control_record(struct ts_srv *srv, struct ts_sb *sb, bool own, const char *template_id,
		      const char *text, bool auto_pause, json_t **ret, struct ts_error *err);

/* Is the entry past its deadline, to be killed? Not an autoPause one (it is paused), nor
 * one serve paused (a paused sandbox has no deadline). */
bool ts_control_expired(const struct ts_srv_sb *e, long long now_ms);
