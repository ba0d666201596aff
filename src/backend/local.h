/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The local backend's shared parts (local.c: sandboxes, local-cmd.c: processes,
 * local-files.c: files): durable sandboxes of this machine, their records in
 * $TOREN_SANDBOX_ROOT/state.db, and a control connection to each one's init per request
 * or stream.
 */
#include "backend-impl.h"
#include "ctlclient.h"
#include "paths.h"
#include "store.h"

/*
 * A control connection kept after a process request that left it idle, for the next one
 * to the same sandbox: a connect and HELLO (and the liveness check) saved per request.
 */
#define TS_LOCAL_SPARES 8
struct local_spare {
	char id[64];
	struct ts_ctl_client *c;
};

struct local {
	struct ts_paths paths;
	struct ts_store *st; /* opened on first use */
	struct local_spare spares[TS_LOCAL_SPARES];
};

struct local_sb {
	struct local *l;
	struct ts_sandbox_rec rec;
};

/* The store, opened on first use. */
int ts_local_store(struct local *l, struct ts_store **ret, struct ts_error *err);

/* A new control connection to the sandbox's init (HELLO done). */
int ts_local_connect(struct ts_sb *sb, struct ts_ctl_client **ret, struct ts_error *err);

/*
 * A connection for process requests (not files: a file connection becomes its worker's):
 * the sandbox's spare when there is one (*reused), else a new one. A request that fails
 * on a reused connection because it is gone (init restarted) is retried on a new one.
 */
int ts_local_proc_conn(struct ts_sb *sb, struct ts_ctl_client **ret, bool *reused,
		       struct ts_error *err);
/* Done with it: kept as the spare of sandbox id when idle (nothing queued either way,
 * nothing attached), else closed. */
void ts_local_proc_conn_done(struct local *l, const char *id, struct ts_ctl_client *c, bool idle);
/* The sandbox's init changes (stop, start, remove): its spare goes. */
void ts_local_forget(struct local *l, const char *id);
/* Is a request's failure one of a connection that is gone (retry on a new one)? */
bool ts_local_conn_gone(int r);

/* The uid inside for a user name (NULL: the sandbox's default, -1). -EINVAL if unknown. */
int ts_local_uid(const char *user, long *ret, struct ts_error *err);

/* Snapshots (local-snap.c). */
int ts_local_snapshot(struct ts_sb *sb, const struct ts_snap_create_opts *o,
		      struct ts_snap_info *ret, struct ts_error *err);
int ts_local_snap_list(struct ts_backend *b, struct ts_snap_info **ret, size_t *n,
		       struct ts_error *err);
int ts_local_snap_delete(struct ts_backend *b, const char *ref, struct ts_error *err);
/* Does the template ref name a snapshot (its id or one of its names)? */
bool ts_local_is_snapshot(struct local *l, const char *ref);

/* Metrics and liveness (local-metrics.c). */
int ts_local_metrics(struct ts_backend *b, const char *id, long long start_ms, long long end_ms,
		     struct ts_sb_metric **ret, size_t *n, struct ts_error *err);
int ts_local_is_running(struct ts_sb *sb, bool *running, struct ts_error *err);

extern const struct ts_backend_ops ts_local_ops;

/* local-reap.c */
int ts_local_reap(struct ts_backend *b, bool dry_run, bool (*stop_early)(void), ts_reap_fn fn,
		  void *userdata, unsigned *failed, struct ts_error *err);

/* local-cmd.c and local-files.c fill these parts of ts_local_ops. */
int ts_local_cmd_start(struct ts_sb *sb, const struct ts_cmd_opts *o, struct ts_cmd *c, pid_t *pid,
		       uint64_t *proc, struct ts_error *err);
int ts_local_cmd_connect(struct ts_sb *sb, const struct ts_proc_sel *p, struct ts_cmd *c,
			 struct ts_error *err);
int ts_local_cmd_fd(const struct ts_cmd *c);
short ts_local_cmd_events(const struct ts_cmd *c);
int ts_local_cmd_step(struct ts_cmd *c, struct ts_cmd_event *ev, struct ts_error *err);
void ts_local_cmd_close(struct ts_cmd *c);
int ts_local_cmd_input(struct ts_cmd *c, const void *data, size_t len, bool close,
		       struct ts_error *err);
int ts_local_cmd_signal_self(struct ts_cmd *c, int sig, struct ts_error *err);
int ts_local_cmd_resize_self(struct ts_cmd *c, unsigned cols, unsigned rows, struct ts_error *err);
size_t ts_local_cmd_input_pending(const struct ts_cmd *c);
int ts_local_cmd_list(struct ts_sb *sb, struct ts_proc_entry **ret, size_t *n,
		      struct ts_error *err);
int ts_local_cmd_signal(struct ts_sb *sb, const struct ts_proc_sel *p, int sig,
			struct ts_error *err);
int ts_local_cmd_send_stdin(struct ts_sb *sb, const struct ts_proc_sel *p, const void *data,
			    size_t len, bool close, struct ts_error *err);
int ts_local_cmd_resize(struct ts_sb *sb, const struct ts_proc_sel *p, unsigned cols, unsigned rows,
			struct ts_error *err);

int ts_local_file_stat(struct ts_sb *sb, const char *path, const char *user,
		       struct ts_be_entry *ret, struct ts_error *err);
int ts_local_file_list(struct ts_sb *sb, const char *path, unsigned depth, const char *user,
		       struct ts_be_entry **ret, size_t *n, struct ts_error *err);
int ts_local_file_mkdir(struct ts_sb *sb, const char *path, const char *user, unsigned mode,
			bool *created, struct ts_error *err);
int ts_local_file_remove(struct ts_sb *sb, const char *path, const char *user,
			 struct ts_error *err);
int ts_local_file_set_metadata(struct ts_sb *sb, const char *path, const char *user,
			       const struct ts_kv *kv, size_t n, struct ts_error *err);
int ts_local_file_rename(struct ts_sb *sb, const char *from, const char *to, const char *user,
			 struct ts_error *err);
int ts_local_xfer_start(struct ts_sb *sb, const char *path, const char *user, bool write, int mode,
			struct ts_xfer *x, struct ts_error *err);
/* The same on a file connection already made (its first request not sent yet); c is the
 * transfer's from now, freed on failure too (tests/backend drives it on a socketpair). */
int ts_local_xfer_open(struct ts_ctl_client *c, const char *path, bool write, int mode,
		       struct ts_xfer *x, struct ts_error *err);
int ts_local_xfer_fd(const struct ts_xfer *x);
short ts_local_xfer_events(const struct ts_xfer *x);
int ts_local_xfer_step(struct ts_xfer *x, const uint8_t **data, size_t *len, struct ts_error *err);
int ts_local_xfer_push(struct ts_xfer *x, const void *data, size_t len, bool finish,
		       struct ts_error *err);
void ts_local_xfer_close(struct ts_xfer *x);
int ts_local_watch_start(struct ts_sb *sb, const char *path, bool recursive, const char *user,
			 struct ts_watch *w, struct ts_error *err);
int ts_local_watch_fd(const struct ts_watch *w);
int ts_local_watch_step(struct ts_watch *w, struct ts_watch_event *ev, struct ts_error *err);
void ts_local_watch_close(struct ts_watch *w);

/* A file connection (its own worker inside), as user (NULL: the default). */
int ts_local_file_conn(struct ts_sb *sb, const char *user, struct ts_ctl_client **ret,
		       struct ts_error *err);
