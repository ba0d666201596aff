/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Id-mapped binds (--bind-owner UID:GID), for a workspace whose owner is not the
 * sandbox's user: a root-owned checkout of a CI job run as root. Through an id-mapped
 * mount the owner's files appear as the sandbox user's, and what the sandbox creates is
 * stored as the owner's on the host.
 *
 * Only the host's root may create one (CAP_SYS_ADMIN over the file system's user
 * namespace, the initial one), and the sandbox's child has no privilege there: so the
 * helper's parent makes the mount before the clone, as a detached tree (open_tree +
 * mount_setattr with MOUNT_ATTR_IDMAP, nosuid, nodev) that the child inherits and
 * attaches. The mapping is one line each: the owner's uid and gid, as the ids the
 * sandbox's user has on the host; every other owner stays unmapped (nobody) inside.
 * Refused in setuid mode. Where the kernel or the file system cannot (before 5.12,
 * file systems without idmapped-mount support), the bind stays a plain one, with a
 * warning, and the workspace is what its permission bits make it for the sandbox.
 *
 * What the sandbox creates there belongs to the owner, root: toren-sandbox compiles the
 * sandbox's seccomp profile with the setid guard for it (src/lib/seccomp-setid.h).
 */
#include "helper.h"

/* For every op with --bind-owner, make its id-mapped tree (op->idmapped_fd), or fall back
 * to a plain bind with a warning. Parent, before the clone. 0 or -errno with err. */
int ts_idmount_prepare(struct ts_helper_ctx *ctx, struct ts_error *err);

/*
 * Overlay layers (--overlay-src) owned by an id the sandbox's maps do not have: as the
 * host's root (root-range maps), an image's layers unpacked by root belong to host uid 0,
 * which no sandbox maps. Through overlayfs they show as nobody, and a copy-up (any change
 * of an image file by the sandbox's root) fails with EOVERFLOW: the copy in the upper
 * would need an owner the sandbox cannot give. For such a layer below an upper the parent
 * makes a detached tree id-mapped with the sandbox's own maps (on-disk 0 appears as the
 * sandbox's root), read-only, nosuid and nodev (op->lower_idmapped_fds); the child
 * attaches it over the layer in its private mount namespace (overlayfs takes its layers
 * only from the caller's mount namespace) and stacks it. Every layer that stays owned by
 * an unmapped id is marked (op->lower_unmapped): that overlay is mounted without
 * `userxattr`. Where the kernel or the file system cannot, a warning; the layer stays as
 * it is. 0 or -errno with err.
 */
int ts_idmount_prepare_lowers(struct ts_helper_ctx *ctx, struct ts_error *err);
