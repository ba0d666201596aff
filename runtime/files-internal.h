/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by the file worker's request handlers (files.c), its paths (files-path.c) and its
 * watch (files-watch.c). */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "ctl.h"
#include "error.h"
#include "files.h"

#define TS_FILES_LIST_MAX 100000 /* entries of one LIST; past it: ERROR E2BIG */
#define TS_FILES_DEPTH_MAX 16	 /* LIST and WATCH depth */
#define TS_FILES_WATCH_MAX 8192	 /* directories one WATCH follows */

struct ts_files {
	int conn;
	const struct ts_files_cfg *cfg;
	int root;    /* O_PATH fd of cfg->root */
	uint32_t id; /* the request being served */
	bool dead;   /* the connection failed: stop */
	bool eof;    /* the client closed it (seen by a watch) */
	bool served; /* a request was handled already */
};

/* A request's path, normalized (see files.h). */
struct ts_fpath {
	char shown[PATH_MAX];  /* as the client wrote it, for messages */
	char rel[PATH_MAX];    /* components relative to the root; "" is the root */
	char parent[PATH_MAX]; /* rel without its last component; "." for the root */
	const char *name;      /* the last component (in rel); NULL for the root */
	bool slash;	       /* written with a trailing '/' */
};

/* Send m (f->dead on failure). 0 or -errno. */
int ts_files_send(struct ts_files *f, const struct ts_ctl_msg *m);

/* Send ERROR {err->code, err->msg} for the current request. */
int ts_files_send_err(struct ts_files *f, const struct ts_error *err);

/* The string field tag of m into buf (PATH_MAX bytes). -EINVAL, -ENAMETOOLONG. */
int ts_files_get_path(const struct ts_ctl_msg *m, uint16_t tag, char *buf, struct ts_error *err);

/* Normalize in into p. -EINVAL (empty, `..`), -ENAMETOOLONG. */
int ts_files_path_parse(const struct ts_files *f, const char *in, struct ts_fpath *p,
			struct ts_error *err);

/* openat2 of rel under the root, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS. fd or -errno. */
int ts_files_open_in_root(const struct ts_files *f, const char *rel, uint64_t flags);

/* openat2 of one name under dfd, no symlink anywhere (RESOLVE_NO_SYMLINKS). fd or -errno. */
int ts_files_open_step(int dfd, const char *name, uint64_t flags);

/* An O_PATH fd of p's parent directory, following symlinks inside the root; with create,
 * missing directories are made one RESOLVE_NO_SYMLINKS step at a time. fd or -errno. */
int ts_files_open_parent(const struct ts_files *f, const struct ts_fpath *p, bool create,
			 struct ts_error *err);

/* May a write-like operation touch dfd/name (never followed)? -EPERM when its name is
 * protected or it is a mount root; 0 also when it does not exist. */
int ts_files_check_target(const struct ts_files *f, int dfd, const char *name, const char *shown,
			  struct ts_error *err);

/* -EPERM when dfd/name is a directory holding a mount root anywhere below it. */
int ts_files_check_subtree(int dfd, const char *name, const char *shown, struct ts_error *err);

/* Is the inode of st also a mount point somewhere (a protected file reached through a
 * hard link)? 1, 0, or -errno when /proc/self/mountinfo cannot be read. */
int ts_files_inode_mounted(const struct stat *st);

/* rm -rf dfd/name on O_NOFOLLOW directory fds; a mount root stops it with -EPERM.
 * shown (the absolute path) names entries in messages. 0 or -errno. */
int ts_files_rm_tree(int dfd, const char *name, const char *shown, struct ts_error *err);

/* Add PATH, TYPE, MODE, SIZE, MTIME, UID, GID (and TARGET for a symlink) of dfd/name (not
 * followed; "" is dfd itself) to m. *ret_mode gets st_mode when not NULL. 0 or -errno. */
int ts_files_fill_entry(struct ts_ctl_msg *m, const char *path, int dfd, const char *name,
			mode_t *ret_mode);

/* Add the user.e2b.* xattrs of dfd/name ("" is dfd itself), of type mode, to m as XATTR
 * fields "key=value" (at most TS_FILE_XATTRS_MAX; binary values and unreadable files
 * give none). 0 or -errno (m full). */
int ts_files_fill_xattrs(struct ts_ctl_msg *m, int dfd, const char *name, mode_t mode);

/* SET_XATTRS {PATH, XATTR...}: OK, or an error for the caller to send. */
int ts_files_op_set_xattrs(struct ts_files *f, const struct ts_ctl_msg *req, struct ts_error *err);

/* WATCH {PATH, DEPTH}: OK, then FILE_EVENT messages until the client closes the
 * connection (f->eof) or sends anything (answered with END). */
int ts_files_watch(struct ts_files *f, const struct ts_ctl_msg *req, struct ts_error *err);
