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

struct local {
	struct ts_paths paths;
	struct ts_store *st; /* opened on first use */
};

struct local_sb {
	struct local *l;
	struct ts_sandbox_rec rec;
};

/* The store, opened on first use. */
int ts_local_store(struct local *l, struct ts_store **ret, struct ts_error *err);

/* A new control connection to the sandbox's init (HELLO done). */
int ts_local_connect(struct ts_sb *sb, struct ts_ctl_client **ret, struct ts_error *err);

/* The uid inside for a user name (NULL: the sandbox's default, -1). -EINVAL if unknown. */
int ts_local_uid(const char *user, long *ret, struct ts_error *err);

extern const struct ts_backend_ops ts_local_ops;

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
int ts_local_file_rename(struct ts_sb *sb, const char *from, const char *to, const char *user,
			 struct ts_error *err);
int ts_local_xfer_start(struct ts_sb *sb, const char *path, const char *user, bool write, int mode,
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
