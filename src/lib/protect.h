/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>

#include "error.h"

/*
 * Protected paths: files in the workspace that the sandbox may read but never write,
 * truncate, rename over or delete. Enforcement is in the kernel: the helper bind-mounts
 * each existing match read-only onto itself. This module only finds the matches.
 */

/*
 * Walk the tree below workspace_fd (never following symlinks, never crossing mounts)
 * and collect the relative paths of regular files whose basename matches one of the
 * fnmatch(3) patterns. Symlinks and other non-regular files are not protected (a
 * symlink is resolved by the kernel in the sandbox's own root and cannot alias a host
 * file). The walk visits at most max_entries entries and returns -E2BIG past that.
 * *ret is a NULL-terminated array of malloc'd strings, sorted; free with
 * ts_strv_free(). Returns 0 or -errno.
 */
int ts_protect_scan(int workspace_fd, char *const *patterns, size_t n_patterns, size_t max_entries,
		    unsigned flags, char ***ret, size_t *ret_n, struct ts_error *err);

/*
 * flags: TS_PROTECT_ALIASES also collects, whatever their names, the regular files whose
 * contents reach beyond the workspace or beyond the sandbox's privilege, which an
 * id-mapped workspace (the sandbox acting as the files' owner, root) must not write:
 *  - files with more than one hard link (another name, maybe outside the workspace,
 *    would see the write: a local `git clone` shares its objects with the original);
 *  - executables that are setuid or setgid or carry file capabilities
 *    (security.capability): the kernel clears those on write(2), not on a store through
 *    a shared mapping, so the sandbox could rewrite a setuid-root program in place.
 */
#define TS_PROTECT_ALIASES (1U << 0)

/* Free a NULL-terminated string vector. Accepts NULL. */
void ts_strv_free(char **v);
