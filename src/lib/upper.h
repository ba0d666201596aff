/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the host writes into a sandbox's upper layer before a start: the mount points of
 * the policy's ro_binds, made there (as the caller) because inside, the directory above
 * may belong to an id the sandbox cannot write as.
 *
 * The upper layer holds whatever the sandbox made of its root, symlinks included, and
 * the host side may run as root. So every step is relative to a directory fd and opened
 * with O_NOFOLLOW: a symlink anywhere on the way (`/sdk` -> a root-only host directory)
 * stops the walk with ELOOP, and only what the walk itself creates is chowned, never a
 * tree the sandbox wrote.
 */
#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

/*
 * Make dst (absolute, inside the sandbox; no `..`) below upper_fd: missing directories
 * 0755, the last component a directory (dir) or an empty 0644 file. With chown_to_set,
 * what is created is chowned to uid:gid. An existing last component must be of the
 * right kind. 0, or -errno with err (-ELOOP for a symlink on the way, -ENOTDIR for a
 * file where a directory must be).
 */
int ts_upper_mount_point(int upper_fd, const char *dst, bool dir, bool chown_to_set, uid_t uid,
			 gid_t gid, struct ts_error *err);
