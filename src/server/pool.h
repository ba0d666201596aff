/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * serve's warm pool (`serve --pool`): per template, a few sandboxes started ahead, built as
 * E2B's create builds them (a root and sudo for `user`, no network, no limits, no envs) or,
 * with `v1:`, as a /v1 create does (neither), so that a create which asks nothing a started
 * sandbox cannot take is answered by handing one out (ts_sb_reissue: its labels, times,
 * timeout and envs become the create's) instead of starting one. One refill thread with
 * its own backend handle starts them, one at a time, never on the loop; the loop only
 * takes an id off a list under a mutex.
 *
 * A pool member carries two labels: TS_POOL_LABEL (its template, "v1:" before it for the
 * /v1 kind) and TS_POOL_OWNER_LABEL (serve's pid and start time). Lists never show
 * members; they have no timeout while pooled; serve's exit removes them, and the next
 * serve on the same state root removes the members of a serve that is gone (kill -9)
 * before it fills its own pool. A member handed out is an ordinary sandbox from the one
 * store update that replaces its labels: never a member again.
 */
#include <stdbool.h>
#include <stddef.h>

#include "backend.h"
#include "error.h"

#define TS_POOL_PER_TEMPLATE_MAX 32
#define TS_POOL_TOTAL_MAX 64
#define TS_POOL_LABEL "toren-sandbox.pool"
#define TS_POOL_OWNER_LABEL "toren-sandbox.pool-owner"
#define TS_POOL_RETRY_MAX_MS 30000  /* the longest wait after failed starts */
#define TS_POOL_WARM_MS 10000	    /* the warming command's bound */
#define TS_POOL_REFILL_DELAY_MS 300 /* refills wait this long after a hand-out */

struct ts_http_route;
struct ts_srv;
struct ts_req;
struct ts_pool;

/*
 * Parse the `--pool` values (NULL-terminated; each "[v1:]N" for `base` (E2B) or the host
 * image (v1), or "[v1:]TEMPLATE=N", a later one for the same template and kind replacing
 * it), check the bounds and that every template is `base` or an image of the store under
 * root, and start the refill thread (which first removes a dead serve's members). Also
 * with no values: the orphans go all the same. 0, or -errno with err (-EINVAL: a bad value
 * or bound).
 */
int ts_pool_new(const char *const *specs, const char *backend, const char *root, ts_be_note_fn warn,
		void *userdata, struct ts_pool **ret, struct ts_error *err);
/* Stop the thread (waiting for a start under way) and remove every member through be. */
void ts_pool_free(struct ts_pool *p, struct ts_backend *be);

/*
 * For a create with options o: when o asks only what a started sandbox can take (no
 * network, limits, workspace, name, policy or user; envs only with values; E2B's root and
 * sudo, or /v1's neither) and a member of its template and kind is ready, hand that one
 * out with o's metadata, timeout and envs. 0 and *ret (a fresh handle), or -ENOENT: none
 * fits or none is ready (create as usual; a member that could not be handed out is
 * removed, never put back).
 */
int ts_pool_claim(struct ts_pool *p, struct ts_backend *be, const struct ts_sb_create_opts *o,
		  struct ts_sb **ret);

/* Does ref (an id or an id prefix) name a ready member? NULL p: false. */
bool ts_pool_holds(struct ts_pool *p, const char *ref);
/* Is this sandbox a pool member (never listed, never handed to a caller by id)? */
bool ts_pool_member(const struct ts_sb_info *i);

/* The key of kv that is one of the pool's labels (a create may not set them), or NULL. */
const char *ts_pool_reserved(const struct ts_kv *kv, size_t n);

/* GET /v1/pool: the targets and what is ready, per template (scope sandboxes:read). */
void ts_pool_status(void *ctx, struct ts_req *req);
