/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * E2B's snapshots and fork (delta §"Snapshots and fork") on the backend's snapshots
 * (backend.h ts_sb_snapshot): POST /sandboxes/{id}/snapshots, GET /snapshots,
 * DELETE /templates/{snapshotID}, POST /sandboxes/{id}/fork; a create whose templateID is
 * a snapshot restores it (control.c). The copy, and the creates from a snapshot (which copy
 * its workspace), run on a thread with a backend handle of its own, the request deferred:
 * the loop goes on serving meanwhile and records what was made when it is done.
 */
#include <stdbool.h>

#include "http.h"
#include "server.h"

#define TS_SNAPSHOTS_FORK_MAX 16   /* sandboxes one fork makes */
#define TS_SNAPSHOTS_RUNNING_MAX 4 /* copies at once */

void ts_snapshots_create(void *ctx, struct ts_req *req);
void ts_snapshots_list(void *ctx, struct ts_req *req);
void ts_snapshots_delete(void *ctx, struct ts_req *req);
void ts_snapshots_fork(void *ctx, struct ts_req *req);

/*
 * A create whose template is a snapshot (POST /v2/sandboxes): made on a thread (it copies
 * the snapshot's workspace), recorded and answered (201, as create) from the loop. Takes
 * envs, meta and text (the body's JSON), whatever happens; o's other pointers point into
 * the request.
 */
void ts_snapshots_restore(struct ts_srv *srv, struct ts_req *req, const struct ts_sb_create_opts *o,
			  struct ts_kv *envs, struct ts_kv *meta, char *text, bool auto_pause);

/*
 * Is a snapshot or fork of sandbox sb_id (its exact id) being taken now? Kill, pause,
 * resume and delete of it are refused with 409 meanwhile: the copy pauses it and resumes
 * it after, and would race them.
 */
bool ts_snapshots_busy(const struct ts_srv *srv, const char *sb_id);

/* Is template a snapshot of the backend (its id or one of its names)? */
bool ts_snapshots_has(struct ts_srv *srv, const char *template_id);
