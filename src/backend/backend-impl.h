/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Inside the backend interface: what a backend provides (an ops table) and the handles'
 * common heads. backend.c dispatches every ts_* call of backend.h to handle->ops; a
 * backend keeps its own state behind `impl`. Not for callers of the interface.
 */
#include "backend.h"

struct ts_backend_ops {
	const char *name;
	void (*free)(struct ts_backend *b);
	const char *(*warning)(struct ts_backend *b);

	int (*sb_create)(struct ts_backend *b, const struct ts_sb_create_opts *o, struct ts_sb *sb,
			 struct ts_error *err);
	int (*sb_connect)(struct ts_backend *b, const char *id, long long timeout_ms, bool start,
			  struct ts_sb *sb, struct ts_error *err);
	int (*sb_remove)(struct ts_sb *sb, unsigned flags, ts_be_warn_fn warn, void *userdata,
			 struct ts_error *err);
	int (*reap)(struct ts_backend *b, bool dry_run, bool (*stop_early)(void), ts_reap_fn fn,
		    void *userdata, unsigned *failed, struct ts_error *err);
	int (*sb_list)(struct ts_backend *b, const struct ts_sb_list_opts *o,
		       struct ts_sb_info **ret, size_t *n, char **next_token, struct ts_error *err);
	int (*sb_info)(struct ts_sb *sb, struct ts_sb_info *ret, struct ts_error *err);
	int (*sb_set_timeout)(struct ts_sb *sb, long long ms, struct ts_error *err);
	int (*sb_reissue)(struct ts_sb *sb, const struct ts_sb_create_opts *o,
			  struct ts_error *err); /* NULL: -EOPNOTSUPP */
	int (*sb_start)(struct ts_sb *sb, struct ts_error *err);
	int (*sb_stop)(struct ts_sb *sb, struct ts_error *err);
	int (*sb_pause)(struct ts_sb *sb, struct ts_error *err);
	int (*sb_resume)(struct ts_sb *sb, struct ts_error *err);
	void (*sb_close)(struct ts_sb *sb);
	int (*sb_check_user)(struct ts_sb *sb, const char *user, struct ts_error *err);
	/* optional (NULL: -EOPNOTSUPP) */
	int (*sb_is_running)(struct ts_sb *sb, bool *running, struct ts_error *err);
	int (*sb_metrics)(struct ts_backend *b, const char *id, long long start_ms,
			  long long end_ms, struct ts_sb_metric **ret, size_t *n,
			  struct ts_error *err);
	int (*sb_snapshot)(struct ts_sb *sb, const struct ts_snap_create_opts *o,
			   struct ts_snap_info *ret, struct ts_error *err);
	int (*snap_list)(struct ts_backend *b, struct ts_snap_info **ret, size_t *n,
			 struct ts_error *err);
	int (*snap_delete)(struct ts_backend *b, const char *ref, struct ts_error *err);
	int (*cmd_log_read)(struct ts_sb *sb, uint64_t proc, uint64_t offset, void *buf, size_t len,
			    size_t *got, struct ts_error *err);

	int (*cmd_start)(struct ts_sb *sb, const struct ts_cmd_opts *o, struct ts_cmd *c,
			 pid_t *pid, uint64_t *proc, struct ts_error *err);
	int (*cmd_connect)(struct ts_sb *sb, const struct ts_proc_sel *p, struct ts_cmd *c,
			   struct ts_error *err);
	int (*cmd_fd)(const struct ts_cmd *c);
	short (*cmd_events)(const struct ts_cmd *c);
	int (*cmd_step)(struct ts_cmd *c, struct ts_cmd_event *ev, struct ts_error *err);
	void (*cmd_close)(struct ts_cmd *c);
	int (*cmd_input)(struct ts_cmd *c, const void *data, size_t len, bool close,
			 struct ts_error *err);
	int (*cmd_signal_self)(struct ts_cmd *c, int sig, struct ts_error *err);
	int (*cmd_resize_self)(struct ts_cmd *c, unsigned cols, unsigned rows,
			       struct ts_error *err);
	size_t (*cmd_input_pending)(const struct ts_cmd *c);
	int (*cmd_list)(struct ts_sb *sb, struct ts_proc_entry **ret, size_t *n,
			struct ts_error *err);
	int (*cmd_signal)(struct ts_sb *sb, const struct ts_proc_sel *p, int sig,
			  struct ts_error *err);
	int (*cmd_send_stdin)(struct ts_sb *sb, const struct ts_proc_sel *p, const void *data,
			      size_t len, bool close, struct ts_error *err);
	int (*cmd_resize)(struct ts_sb *sb, const struct ts_proc_sel *p, unsigned cols,
			  unsigned rows, struct ts_error *err);

	int (*file_stat)(struct ts_sb *sb, const char *path, const char *user,
			 struct ts_be_entry *ret, struct ts_error *err);
	int (*file_list)(struct ts_sb *sb, const char *path, unsigned depth, const char *user,
			 struct ts_be_entry **ret, size_t *n, struct ts_error *err);
	int (*file_mkdir)(struct ts_sb *sb, const char *path, const char *user, unsigned mode,
			  bool *created, struct ts_error *err);
	int (*file_remove)(struct ts_sb *sb, const char *path, const char *user,
			   struct ts_error *err);
	int (*file_rename)(struct ts_sb *sb, const char *from, const char *to, const char *user,
			   struct ts_error *err);
	/* optional (NULL: -EOPNOTSUPP) */
	int (*file_set_metadata)(struct ts_sb *sb, const char *path, const char *user,
				 const struct ts_kv *kv, size_t n, struct ts_error *err);
	/* optional (NULL: one ts_file_write after the other) */
	int (*file_write_many)(struct ts_sb *sb, const struct ts_file_data *files, size_t n,
			       const char *user, size_t *done, struct ts_error *err);
	int (*xfer_start)(struct ts_sb *sb, const char *path, const char *user, bool write,
			  int mode, struct ts_xfer *x, struct ts_error *err);
	int (*xfer_fd)(const struct ts_xfer *x);
	short (*xfer_events)(const struct ts_xfer *x);
	int (*xfer_step)(struct ts_xfer *x, const uint8_t **data, size_t *len,
			 struct ts_error *err);
	int (*xfer_push)(struct ts_xfer *x, const void *data, size_t len, bool finish,
			 struct ts_error *err);
	void (*xfer_close)(struct ts_xfer *x);
	int (*watch_start)(struct ts_sb *sb, const char *path, bool recursive, const char *user,
			   struct ts_watch *w, struct ts_error *err);
	int (*watch_fd)(const struct ts_watch *w);
	int (*watch_step)(struct ts_watch *w, struct ts_watch_event *ev, struct ts_error *err);
	void (*watch_close)(struct ts_watch *w);
};

struct ts_backend {
	const struct ts_backend_ops *ops;
	void *impl;
	ts_be_note_fn warn; /* ts_backend_on_warning */
	void *warn_userdata;
};

struct ts_sb {
	const struct ts_backend_ops *ops;
	struct ts_backend *b;
	char id[64];
	void *impl;
};

struct ts_cmd {
	const struct ts_backend_ops *ops;
	pid_t pid;
	bool ended;
	void *impl;
};

struct ts_xfer {
	const struct ts_backend_ops *ops;
	bool write;
	void *impl;
};

struct ts_watch {
	const struct ts_backend_ops *ops;
	void *impl;
};

/* The backends. */
int ts_backend_local_open(struct ts_backend *b, struct ts_error *err);
/* E2B's cloud (or anything speaking its API: `toren-sandbox serve`), configured from
 * E2B_API_KEY, E2B_DOMAIN, E2B_API_URL, E2B_SANDBOX_URL and E2B_DEBUG as the SDK reads them;
 * -EKEYREJECTED without a key. */
int ts_backend_e2b_open(struct ts_backend *b, struct ts_error *err);
int ts_backend_none_open(struct ts_backend *b, const char *why, struct ts_error *err);
