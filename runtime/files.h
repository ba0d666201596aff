/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The file worker: a process init forks for a control connection whose first request is
 * TS_CTL_FILE. It runs as the sandbox user, inside every namespace and the seccomp
 * filter, and serves TS_FILE_* requests (ctl.h) on that connection with blocking I/O
 * until the client closes it.
 *
 * Paths are sandbox paths: absolute, or relative to cfg->home. `..` components are
 * refused; empty paths, paths of PATH_MAX bytes or more and components longer than
 * NAME_MAX are refused; `.` and repeated `/` are dropped. Every path is resolved with
 * openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) against cfg->root, so no symlink ever
 * leads out of it and no /proc magic link is followed.
 *
 * Symlinks: read, list and watch follow symlinks inside the root to reach the file or
 * directory named (like a process inside would); stat describes the link itself (lstat)
 * with its target. Write-like operations (write, mkdir, remove, rename) follow symlinks
 * in the parent part of the path only (inside the root) and act on the last component
 * itself: a write to a symlink is refused (ELOOP), remove and rename act on the link.
 * Parents that a write or mkdir creates are created and entered one component at a time
 * with RESOLVE_NO_SYMLINKS, so a symlink swapped in during the walk stops it (ELOOP).
 * Recursive remove walks O_NOFOLLOW directory fds with unlinkat and never crosses into
 * another mount.
 *
 * Protected paths: every write-like operation is refused with EPERM ("`P` is protected")
 * when its target's (for rename: either side's) basename matches one of
 * cfg->protect_patterns (fnmatch(3), flags 0), when the target is a mount root (the
 * runtime protects files by binding them read-only onto themselves), when a directory
 * to remove or rename holds a mount root anywhere below it, and, for write, when the
 * target is a hard link (st_nlink > 1) to a file that is mounted somewhere
 * (/proc/self/mountinfo; refused as well when that cannot be read). A write never
 * writes into an existing inode anyway: it replaces the name (temp file + rename).
 *
 * Rename has rename(2) semantics: an existing target is replaced (a directory only when
 * empty); there is no no-replace or exchange mode. A listing stops after 100000 entries
 * with ERROR E2BIG (after the entries sent). Trees deeper than 256 levels are refused by
 * remove and rename (ELOOP).
 *
 * Writes are atomic: the data goes to an O_TMPFILE file in the target's directory (a
 * hidden, exclusively created `.toren-tmp-*` file on file systems without O_TMPFILE),
 * which is fsync'ed and renamed over the target; on any error or a client EOF before
 * END nothing replaces the target and the temporary file is gone.
 */
#include <stdbool.h>
#include <stddef.h>

#include "ctl.h"

struct ts_files_cfg {
	char **protect_patterns; /* fnmatch(3) patterns matched against basenames */
	size_t n_protect;
	const char *home; /* relative paths start here (a sandbox path); NULL: "/" */
	const char *root; /* the directory paths resolve in; NULL: "/" (tests: a temp dir) */
	bool no_tmpfile;  /* write through a named temporary file (tests of that path) */
};

/*
 * Serve file requests on conn: first (a TS_CTL_FILE request already received; it stays
 * the caller's), then every request until the client closes the connection. Every
 * request gets its replies (OK, FILE_DATA/FILE_ENTRY/FILE_EVENT then END, or ERROR
 * {CODE, MSG}); a failing operation ends nothing but itself. Returns 0 when the client
 * closed the connection between requests, -errno when the connection failed (a send
 * failed, a malformed message, EOF in the middle of a write: -ECONNRESET).
 */
int ts_files_serve(int conn, struct ts_ctl_msg *first, const struct ts_files_cfg *cfg);
