/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * `toren-sandbox serve`: one process, one thread, one event loop (loop.h), serving
 *   - the E2B control plane and /v1 REST on --listen (control.c, v1.c),
 *   - envd on --envd-listen, routed by E2b-Sandbox-Id (envd-process.c, envd-fs.c,
 *     envd-files.c over connect.c's framing),
 * every call going through the backend interface (src/backend/backend.h), never to the
 * local sandbox code directly. What E2B knows of a sandbox that the backend does not (its
 * envd access token, the create body it echoes, the lifecycle) lives in serve's own
 * database (meta.h) beside the state root, so a restarted serve finds every sandbox and
 * token again.
 */
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "error.h"
#include "http.h"
#include "loop.h"
#include "meta.h"

struct ts_tokens;
struct ts_runs;
struct ts_pool;
struct ts_snap_job;

struct ts_serve_opts {
	const char *listen;	 /* control plane + /v1 ("127.0.0.1:3000") */
	const char *envd_listen; /* envd ("127.0.0.1:49983") */
	const char *socket;	 /* also on this unix socket (control plane + /v1), or NULL */
	const char *backend;	 /* backend name (NULL: local) */
	const char *tokens_file; /* access tokens (NULL: none: any key, loopback only) */
	/* `--pool` values ("N" or "TEMPLATE=N": sandboxes kept started; pool.h),
	 * NULL-terminated; NULL: none */
	const char *const *pool;
	/* registries a create may pull a template from (`--pull`; "*": any not on a
	 * loopback or private address), NULL-terminated; NULL: serve pulls nothing */
	const char *const *pull_from;
	uint64_t pull_max_bytes; /* `--pull-max-size` (0: pulls.h's default) */
	int listen_fd, envd_fd;	 /* socket-activated fds (-1: none) */
	/* told once every listener is up: the real addresses (a port 0 asked is chosen) */
	void (*ready)(void *userdata, const char *control, const char *envd);
	/* the backend's warnings (a sandbox's start found a workspace it cannot write, ...) */
	ts_be_note_fn warn;
	void *userdata;
};

/* What serve holds: handler modules get it as their ctx. */
struct ts_srv {
	const struct ts_serve_opts *opts;
	struct ts_loop *loop;
	struct ts_backend *be;
	struct ts_meta *meta;
	struct ts_tokens *tokens;
	struct ts_http_listener *control, *envd, *unix_control;
	struct ts_srv_sb *sbs; /* open sandbox handles, by id (srv_sandbox) */
	struct ts_loop_timer *reaper;
	unsigned runs_reap_ticks;      /* control-reap.c: ticks since the runs' reap */
	struct ts_envd_fs *fs;	       /* envd-fs.c's polling watchers (ts_envd_fs_free) */
	struct ts_runs *runs;	       /* the agent runner's workers and approvals (runs.h) */
	struct ts_pulls *pulls;	       /* image pulls for creates (pulls.h; local backend only) */
	struct ts_pool *pool;	       /* the warm pool (pool.h; local backend only) */
	unsigned snapshots_running;    /* snapshot copies on their threads (snapshots.c) */
	struct ts_snap_job *snap_jobs; /* those jobs, for ts_snapshots_busy */
	const char *root;	       /* the state root (paths.h) */
};

/* Run serve until SIGINT/SIGTERM. 0, or -errno with err. */
int ts_serve(const struct ts_serve_opts *o, struct ts_error *err);

/*
 * serve's view of one sandbox, cached: the backend handle (opened once, reused by every
 * request and stream: never closed by a caller), its E2B record (meta; defaults and no
 * token for a sandbox serve did not create), and its deadline. Refreshed from the
 * backend by ts_srv_refresh (the control plane calls it after every change it makes;
 * the reaper every second), so an envd request costs no backend round trip to check it.
 */
struct ts_srv_sb {
	char id[64];
	struct ts_sb *sb;
	struct ts_meta_sb meta;
	bool has_meta;	      /* created through serve (an E2B record exists) */
	long long end_at;     /* realtime ms of its deadline, 0: none */
	bool running;	      /* running and not paused (a stopped one is not served by envd) */
	bool gone;	      /* forgotten (killed): freed when the last reference goes */
	unsigned refs;	      /* the cache's own, plus one per stream holding e->sb */
	unsigned dir_watches; /* WatchDir streams open on it (envd-fs.c) */
	struct ts_srv_sb *next;
};

/* The entry of sandbox id, opened on first use. -ENOENT when the backend does not know
 * it (the exact id: no name or prefix matching). Never starts or resumes anything. */
int ts_srv_sandbox(struct ts_srv *srv, const char *id, struct ts_srv_sb **ret,
		   struct ts_error *err);
/*
 * The entry of a sandbox just created (or handed out) through sb, whose handle it takes
 * (also on failure), with m (may be NULL) as its serve.db record and info as its state:
 * what ts_srv_sandbox would read back, without reading it back.
 */
int ts_srv_adopt(struct ts_srv *srv, struct ts_sb *sb, const struct ts_meta_sb *m,
		 const struct ts_sb_info *info, struct ts_srv_sb **ret, struct ts_error *err);
/* Re-read an entry's state from the backend and meta (-ENOENT: it is gone and forgotten). */
int ts_srv_refresh(struct ts_srv *srv, struct ts_srv_sb *e, struct ts_error *err);
/* Drop the entry from the cache (after a kill); streams holding a reference keep its
 * handle until they unref it. */
void ts_srv_forget(struct ts_srv *srv, const char *id);
/* A stream that keeps e->sb beyond its request takes a reference and drops it when done. */
struct ts_srv_sb *ts_srv_sb_ref(struct ts_srv_sb *e);
void ts_srv_sb_unref(struct ts_srv_sb *e);
/* Is the entry's sandbox serving now (running, not paused, before its deadline)? */
bool ts_srv_serving(const struct ts_srv *srv, const struct ts_srv_sb *e);

/* A JSON error body {"code": status, "message": ...} (E2B's REST and /files shape). */
int ts_srv_reply_error(struct ts_req *r, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The HTTP status for a backend error class (not_found 404, invalid_argument 400, ...). */
unsigned ts_srv_http_status(enum ts_be_code code);

/* Route tables of the modules (each ended by a zero entry). */
extern const struct ts_route ts_control_routes[];      /* control.c: E2B's control plane */
extern const struct ts_route ts_v1_routes[];	       /* v1.c: /v1 REST */
extern const struct ts_route ts_envd_process_routes[]; /* envd-process.c */
extern const struct ts_route ts_envd_fs_routes[];      /* envd-fs.c */
extern const struct ts_route ts_envd_files_routes[];   /* envd-files.c: /files, /health */
