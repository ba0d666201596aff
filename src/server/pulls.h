/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * serve's image pulls: a create whose template is a registry reference the local image
 * store lacks pulls it first (oci-store.h's ts_oci_pull), off the loop — a pull can take
 * minutes and the loop never waits. Each pull runs in a thread of its own, at
 * most TS_PULLS_MAX at once; the store's lock makes a second pull of the same image wait
 * for the first and then fetch nothing. A finished pull is handed back through an
 * eventfd the loop watches, which then calls the job's done callback.
 *
 * Stopping (ts_pulls_free): every job not yet delivered gets done(-ESHUTDOWN) at once;
 * the pulls still running are cancelled (a download ends within about a second, leaving
 * no layer and no name, as any failed pull; layers already unpacked stay for the next
 * create) and their threads joined, waiting at most TS_PULLS_STOP_S seconds.
 */
#include <stdbool.h>
#include <stdint.h>

#include "error.h"

struct ts_req;
struct ts_srv;

#define TS_PULLS_MAX 4
#define TS_PULLS_STOP_S 5
/* what one pull may download and each of its layers unpack to, unless `--pull-max-size`
 * says otherwise: a caller names the image, the operator bounds what it costs the disk */
#define TS_PULLS_DEFAULT_MAX_BYTES (8ULL << 30)

struct ts_loop;
struct ts_pulls;

/* max_bytes: the most one pull downloads, and each of its layers unpacks to (0: the
 * default); a bigger image fails with -EFBIG (507) before its layers are fetched */
int ts_pulls_new(struct ts_loop *loop, const char *root, uint64_t max_bytes, struct ts_pulls **ret,
		 struct ts_error *err);
void ts_pulls_free(struct ts_pulls *p);

/* Pull ref; done(userdata, 0 or -errno, message) runs on the loop, exactly once.
 * -EAGAIN when TS_PULLS_MAX pulls are running. */
int ts_pulls_start(struct ts_pulls *p, const char *ref,
		   void (*done)(void *userdata, int r, const char *msg), void *userdata,
		   struct ts_error *err);

/*
 * For a create handler: when image is a registry reference the store lacks (and serve
 * pulls: the local backend), defer req, pull it, and then call handler(srv, req) again
 * (the store has it now) or fail(req, status, message) (404: the registry has no such
 * image; 503: busy or stopping; 507: bigger than the pulls' limit; 502: the pull failed). True when req is taken (deferred
 * or answered); false: go on.
 */
bool ts_pulls_first(struct ts_srv *srv, struct ts_req *req, const char *image,
		    void (*handler)(void *ctx, struct ts_req *req),
		    void (*fail)(struct ts_req *req, unsigned status, const char *msg));
