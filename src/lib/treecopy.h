/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Copy a directory tree a sandbox wrote (its overlay upper layer, its workspace) into a
 * snapshot, and a snapshot's workspace back into a new sandbox's.
 *
 * The tree is untrusted and the copier may be root: every step is relative to a directory
 * fd and opened with O_NOFOLLOW, so a symlink in the tree is copied as a symlink and never
 * followed (`/etc/x -> /etc/shadow` is not read, `dir -> /root` is not written into).
 * Owners, modes (setuid and setgid bits dropped), times, symlinks, `user.*` xattrs, of
 * the overlay's own marks only the opaque one (`user.overlay.opaque` or
 * `trusted.overlay.opaque`, "y", where the caller can read it), overlay whiteouts (0/0
 * character devices), FIFOs and sockets survive; any other device is refused. Hard links become
 * separate copies. Regular files are cloned (FICLONE) where the file system can, else
 * copied with copy_file_range, only their data segments: holes stay holes.
 */
#include <stdbool.h>
#include <stdint.h>

#include "error.h"

#define TS_TREECOPY_MAX_DEPTH 128

struct ts_treecopy {
	uint64_t max_bytes;	 /* file contents; 0: none */
	uint64_t max_entries;	 /* files, directories, links; 0: none */
	uint64_t bytes, entries; /* counted so far */
	/* every copy (and dst) belongs to owner_uid:owner_gid instead of its source's owner:
	 * a tree of many ids restored into a sandbox of one (idcopy.h) */
	bool set_owner;
	uint32_t owner_uid, owner_gid;
};

/*
 * Copy the contents of src_fd (a directory) into dst_fd (a directory, normally empty) and
 * src's owner, mode, xattrs and times onto dst. -ENOSPC past max_bytes, -E2BIG past
 * max_entries, -EPERM for a device, -ELOOP past TS_TREECOPY_MAX_DEPTH; err names the
 * entry. What was copied before a failure stays: the caller removes dst.
 */
int ts_treecopy(int src_fd, int dst_fd, struct ts_treecopy *c, struct ts_error *err);
