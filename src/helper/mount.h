/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>

#include "helper.h"

/*
 * The sandbox's mount tree. Everything is done on fds: host sources are opened before
 * the first mount (so nothing we mount can redirect them), every target inside the new
 * root is resolved one component at a time with O_NOFOLLOW (a symlink planted by an
 * earlier run in a persistent upper layer or workspace is refused, never followed), and
 * mounts are attached with the new mount API (fsopen/fsmount/open_tree/move_mount/
 * mount_setattr), falling back to mount(2) on /proc/self/fd paths where the kernel lacks
 * it.
 */

struct ts_mount_state {
	int rootfd;	   /* the new root while it is being built */
	int devnull_fd;	   /* host /dev/null, to mask /proc files */
	int dev_fds[6];	   /* host null zero full random urandom tty */
	int mask_fd;	   /* root of the first empty read-only tmpfs, cloned for later masks */
	bool legacy;	   /* use mount(2) instead of the new mount API */
	bool no_userxattr; /* overlayfs refused `userxattr` (before Linux 5.11) */
	unsigned uid, gid; /* the program's ids inside: owner of fresh tmpfs mounts */
};

/* Open every host path the ops name, in the new mount namespace before anything is
 * mounted (mounts can only be cloned from the namespace one is in). 0 or -errno. */
int ts_mount_open_sources(struct ts_helper_ctx *ctx, struct ts_mount_state *st,
			  struct ts_error *err);

/*
 * Make our mount namespace private, build the tree described by ctx->ops on a staging
 * mount point, then pivot_root into it and detach the old root. On return the process
 * is in the new root with cwd "/". 0 or -errno.
 */
int ts_mount_build(struct ts_helper_ctx *ctx, struct ts_mount_state *st, struct ts_error *err);
