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

struct ts_meta;
struct ts_tokens;

struct ts_serve_opts {
	const char *listen;	 /* control plane + /v1 ("127.0.0.1:3000") */
	const char *envd_listen; /* envd ("127.0.0.1:49983") */
	const char *socket;	 /* also on this unix socket (control plane + /v1), or NULL */
	const char *backend;	 /* backend name (NULL: local) */
	const char *tokens_file; /* access tokens (NULL: none: any key, loopback only) */
	unsigned pool;		 /* warm sandboxes kept started per template (0: none) */
	int listen_fd, envd_fd;	 /* socket-activated fds (-1: none) */
	bool quiet;		 /* no request log on stderr */
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
};

/* Run serve until SIGINT/SIGTERM. 0, or -errno with err. */
int ts_serve(const struct ts_serve_opts *o, struct ts_error *err);

/*
 * The open handle of sandbox id (connected once, then cached; a killed sandbox's entry
 * goes with ts_srv_forget). -ENOENT when the backend does not know it. Never starts a
 * stopped or resumes a paused sandbox: envd calls on one fail (502 upstream).
 */
int ts_srv_sandbox(struct ts_srv *srv, const char *id, struct ts_sb **ret, struct ts_error *err);
void ts_srv_forget(struct ts_srv *srv, const char *id);

/* A JSON error body {"code": status, "message": ...} (E2B's REST and /files shape). */
int ts_srv_reply_error(struct ts_req *r, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The HTTP status for a backend error class (not_found 404, invalid_argument 400, ...). */
unsigned ts_srv_http_status(enum ts_be_code code);

/* Route tables of the modules (each ended by a zero entry). */
extern const struct ts_route ts_control_routes[]; /* control.c: E2B's control plane */
extern const struct ts_route ts_v1_routes[];	  /* v1.c: /v1 REST */
extern const struct ts_route ts_envd_process_routes[]; /* envd-process.c */
extern const struct ts_route ts_envd_fs_routes[];      /* envd-fs.c */
extern const struct ts_route ts_envd_files_routes[];   /* envd-files.c: /files, /health */
