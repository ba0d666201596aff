/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The e2b backend: a client of E2B's control plane (REST, X-API-KEY) and of envd in each
 * sandbox (Connect JSON over HTTP/1.1, /files), with libcurl and jansson, exactly as
 * /work/shared/spec/e2b-protocol.md describes the official SDK's side of the wire.
 *
 *   e2b.c         config, the ops table, sandboxes (the control plane)
 *   e2b-http.c    requests: one CURLSH per backend (connections and DNS reused), the
 *                 blocking unary and REST calls with 429 retries, envd's headers
 *   e2b-stream.c  one streaming transfer: a CURLM driven by curl_multi_socket_action from
 *                 an epoll fd of its own (with a timerfd for curl's timer), so the handle's
 *                 pollable fd is that epoll fd and a step never blocks
 *   e2b-cmd.c     process.Process
 *   e2b-files.c   filesystem.Filesystem, /files, WatchDir
 *   e2b-metrics.c getMetrics (the control plane) and isRunning (envd's /health)
 *   e2b-wire.c    what needs no I/O (envelopes, query encoding, ProtoJSON, error codes,
 *                 multipart framing)
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdbool.h>

#include "backend-impl.h"
#include "curl-dl.h"
#include "e2b-wire.h"

#define E2B_ENVD_PORT 49983
#define E2B_RETRIES 3 /* on 429 with Retry-After, as the SDK's `retries` default */

struct e2b {
	char api_url[512];
	char sandbox_url[512]; /* E2B_SANDBOX_URL, or "" */
	char domain[256];
	char api_key[256];
	bool debug;
	const struct ts_curl *C; /* libcurl (curl-dl.h) */
	CURLSH *share;
};

/* Where one sandbox's envd answers, and how to authenticate to it. */
struct e2b_target {
	struct e2b *e;
	char id[64];
	char envd_url[600];
	char token[256]; /* envdAccessToken, or "" */
};

#define E2B_PTY_PIDS 64

struct e2b_sb {
	struct e2b_target t;
	char envd_version[32];
	/* pids this handle started on a pty, newest last: envd's SendInput names the pty or
	 * stdin, and nothing in its API says which a process has */
	pid_t pty_pids[E2B_PTY_PIDS];
	unsigned n_pty;
};

/* envd's base URL for sandbox id whose create/connect answer gave domain dom (NULL or
 * "": the configured one), by the SDK's rules (spec §1.2): E2B_SANDBOX_URL, else debug's
 * localhost, else https://sandbox.<dom> for E2B's own domains, else
 * https://49983-<id>.<dom>. */
int e2b_envd_url(struct e2b *e, const char *id, const char *dom, char *buf, size_t len,
		 struct ts_error *err);

/* An answer: status and body (bounded by E2B_BODY_MAX). */
struct e2b_resp {
	long status;
	char *body; /* NUL-terminated */
	size_t len;
	char content_type[128];
	char next_token[512]; /* X-Next-Token */
	long long retry_after_s;
};
void e2b_resp_clear(struct e2b_resp *r);

/* --- e2b-http.c -------------------------------------------------------------------- */

/* A handle for url with the backend's shared connections and common options. */
CURL *e2b_easy_new(struct e2b *e, const char *url, char *errbuf);
/* The control plane: method path (with its query) and an optional JSON body (not
 * stolen). 0 with any status in *resp, or -errno when nothing was answered. Retries a
 * 429 carrying Retry-After up to E2B_RETRIES times. */
int e2b_api(struct e2b *e, const char *method, const char *path, json_t *body,
	    struct e2b_resp *resp, struct ts_error *err);
/* The error of an answer that is not a success: errno from the body's integer code (the
 * SDK's choice) or the HTTP status, message "what: the message (HTTP n)". */
int e2b_resp_error(const struct e2b_resp *resp, const char *what, struct ts_error *err);
/* envd's headers (E2b-Sandbox-Id/-Port, X-Access-Token, Basic user when user != NULL)
 * appended to *h. -ENOMEM. */
int e2b_envd_headers(const struct e2b_target *t, const char *user, struct curl_slist **h);
/* A unary Connect call (path "process.Process/List"); *ret the answer's JSON. */
int e2b_envd_unary(const struct e2b_target *t, const char *path, json_t *req, const char *user,
		   json_t **ret, struct ts_error *err);
/* A plain GET of envd (path with its query, e.g. "/files?path=..."), envd's headers. */
int e2b_envd_get(const struct e2b_target *t, const char *path, struct e2b_resp *resp,
		 struct ts_error *err);
/* A Connect error from a unary or stream answer's body (string code), else the status. */
int e2b_connect_error(long status, const char *body, size_t len, const char *what,
		      struct ts_error *err);
/* The errno of a failed transfer. */
int e2b_curl_error(const struct ts_curl *C, CURLcode c, const char *errbuf, const char *what,
		   struct ts_error *err);

/* --- e2b-stream.c ------------------------------------------------------------------ */

struct e2b_stream {
	const struct ts_curl *C;
	CURLM *multi;
	CURL *easy;
	struct curl_slist *hdrs;
	int epfd, tfd, wfd, gfd; /* epoll; curl's timer; a wake-up; the silence guard */
	long long guard_ms;	 /* silence allowed (0: none) */
	bool guard_fired;
	/* request body: a fixed one, or a queue that push fills (upload) */
	uint8_t *up;
	size_t up_len, up_off;
	bool up_streaming, up_finished, up_paused;
	curl_mime *form; /* a multipart body (e2b_stream_open_form), else NULL */
	/* response body, as it came (envelopes or raw bytes) */
	struct e2b_envelopes in;
	bool raw, rx_paused;
	bool fresh; /* bytes came in during the current drive */
	long status;
	bool done;
	CURLcode result;
	char errbuf[CURL_ERROR_SIZE];
};

/*
 * Start a POST (body NULL with streaming: an upload fed by e2b_stream_push) or a GET
 * (get). hdrs is taken. The response is buffered as it comes; raw: plain bytes, else
 * envelopes. guard_ms bounds silence before the first bytes and, with guard_rearm, after
 * every byte in either direction.
 */
int e2b_stream_open(struct e2b *e, const char *url, bool get, struct curl_slist *hdrs,
		    const void *body, size_t len, bool streaming, bool raw, long long guard_ms,
		    struct e2b_stream **ret, struct ts_error *err);
/*
 * One part of a multipart/form-data upload, as the SDK uploads files (spec §5, POST
 * /files): the form field `file` named filename, of type application/octet-stream. Its
 * bytes are data (len), read in place (they must last as long as the stream), or, with
 * pushed (the last part only), what e2b_stream_push queues, to its finish.
 */
struct e2b_form_part {
	const char *filename;
	const void *data;
	size_t len;
	bool pushed;
};

/* Start a POST of the form of n parts (curl's mime: curl writes the framing); the response
 * is buffered raw. hdrs is taken and must not set Content-Type. */
int e2b_stream_open_form(struct e2b *e, const char *url, struct curl_slist *hdrs,
			 const struct e2b_form_part *parts, size_t n, long long guard_ms,
			 struct e2b_stream **ret, struct ts_error *err);
/* A server-streaming Connect call (path "process.Process/Start"): one request envelope of
 * req (taken), application/connect+json, envd's headers, Connect-Timeout-Ms when
 * timeout_ms > 0. */
int e2b_stream_rpc(const struct e2b_target *t, const char *path, json_t *req, const char *user,
		   long long timeout_ms, struct e2b_stream **ret, struct ts_error *err);
/* Drive curl from whatever is ready, never blocking. When that took bytes in or ended the
 * transfer, the fd is left readable, so that a caller polling it steps again (the socket
 * may never be ready again). -errno when the transfer broke. */
int e2b_stream_drive(struct e2b_stream *s, struct ts_error *err);
/* Wait for the fd (up to ms), then drive. */
int e2b_stream_wait(struct e2b_stream *s, int ms, struct ts_error *err);
/* Keep the fd readable (something is buffered for the next step). */
void e2b_stream_wake(struct e2b_stream *s);
/* Data was taken: let a paused receive go on. */
void e2b_stream_consumed(struct e2b_stream *s);
/* Disarm the silence guard (a stream past its handshake lasts as long as it likes). */
void e2b_stream_guard_off(struct e2b_stream *s);
/* Upload: queue bytes (finish: the last). -EAGAIN when a chunk is already waiting. */
int e2b_stream_push(struct e2b_stream *s, const void *data, size_t len, bool finish,
		    struct ts_error *err);
size_t e2b_stream_queued(const struct e2b_stream *s);
void e2b_stream_free(struct e2b_stream *s);

/* --- e2b-cmd.c, e2b-files.c: the ops --------------------------------------------- */

int e2b_cmd_start(struct ts_sb *sb, const struct ts_cmd_opts *o, struct ts_cmd *c, pid_t *pid,
		  uint64_t *proc, struct ts_error *err);
int e2b_cmd_connect(struct ts_sb *sb, const struct ts_proc_sel *p, struct ts_cmd *c,
		    struct ts_error *err);
int e2b_cmd_fd(const struct ts_cmd *c);
short e2b_cmd_events(const struct ts_cmd *c);
int e2b_cmd_step(struct ts_cmd *c, struct ts_cmd_event *ev, struct ts_error *err);
void e2b_cmd_close(struct ts_cmd *c);
int e2b_cmd_input(struct ts_cmd *c, const void *data, size_t len, bool close, struct ts_error *err);
int e2b_cmd_signal_self(struct ts_cmd *c, int sig, struct ts_error *err);
int e2b_cmd_resize_self(struct ts_cmd *c, unsigned cols, unsigned rows, struct ts_error *err);
size_t e2b_cmd_input_pending(const struct ts_cmd *c);
int e2b_cmd_list(struct ts_sb *sb, struct ts_proc_entry **ret, size_t *n, struct ts_error *err);
int e2b_cmd_signal(struct ts_sb *sb, const struct ts_proc_sel *p, int sig, struct ts_error *err);
int e2b_cmd_send_stdin(struct ts_sb *sb, const struct ts_proc_sel *p, const void *data, size_t len,
		       bool close, struct ts_error *err);
int e2b_cmd_resize(struct ts_sb *sb, const struct ts_proc_sel *p, unsigned cols, unsigned rows,
		   struct ts_error *err);

int e2b_file_stat(struct ts_sb *sb, const char *path, const char *user, struct ts_be_entry *ret,
		  struct ts_error *err);
int e2b_file_list(struct ts_sb *sb, const char *path, unsigned depth, const char *user,
		  struct ts_be_entry **ret, size_t *n, struct ts_error *err);
int e2b_file_mkdir(struct ts_sb *sb, const char *path, const char *user, unsigned mode,
		   bool *created, struct ts_error *err);
int e2b_file_remove(struct ts_sb *sb, const char *path, const char *user, struct ts_error *err);
int e2b_file_rename(struct ts_sb *sb, const char *from, const char *to, const char *user,
		    struct ts_error *err);
int e2b_file_write_many(struct ts_sb *sb, const struct ts_file_data *files, size_t n,
			const char *user, size_t *done, struct ts_error *err);
int e2b_xfer_start(struct ts_sb *sb, const char *path, const char *user, bool write, int mode,
		   struct ts_xfer *x, struct ts_error *err);
int e2b_xfer_fd(const struct ts_xfer *x);
short e2b_xfer_events(const struct ts_xfer *x);
int e2b_xfer_step(struct ts_xfer *x, const uint8_t **data, size_t *len, struct ts_error *err);
int e2b_xfer_push(struct ts_xfer *x, const void *data, size_t len, bool finish,
		  struct ts_error *err);
void e2b_xfer_close(struct ts_xfer *x);
int e2b_watch_start(struct ts_sb *sb, const char *path, bool recursive, const char *user,
		    struct ts_watch *w, struct ts_error *err);
int e2b_watch_fd(const struct ts_watch *w);
int e2b_watch_step(struct ts_watch *w, struct ts_watch_event *ev, struct ts_error *err);
void e2b_watch_close(struct ts_watch *w);

/* The target of a sandbox handle. */
static inline const struct e2b_target *e2b_target_of(struct ts_sb *sb)
{
	return &((struct e2b_sb *)sb->impl)->t;
}

/* --- e2b-metrics.c: getMetrics and isRunning (backend.h) ------------------------------- */
int e2b_metrics(struct ts_backend *b, const char *id, long long start_ms, long long end_ms,
		struct ts_sb_metric **ret, size_t *n, struct ts_error *err);
int e2b_is_running(struct ts_sb *sb, bool *running, struct ts_error *err);

/* --- e2b-snap.c: snapshots (backend.h) ------------------------------------------------ */
int e2b_snapshot(struct ts_sb *sb, const struct ts_snap_create_opts *o, struct ts_snap_info *ret,
		 struct ts_error *err);
int e2b_snap_list(struct ts_backend *b, struct ts_snap_info **ret, size_t *n, struct ts_error *err);
int e2b_snap_delete(struct ts_backend *b, const char *ref, struct ts_error *err);
