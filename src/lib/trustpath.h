/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Opening a host directory for a sandbox when the caller is root and the sandbox will get
 * its owner's identity over it (an id-mapped workspace): the path must not be one that
 * someone else can redirect. Every directory and symlink met while resolving it — the
 * path's own components and those of every symlink's target — must belong to root or to
 * `owner`, and every directory looked up in must be writable by nobody else (group or
 * other write only with the sticky bit, which keeps others from renaming what is not
 * theirs). The walk holds fds from `/` on (O_PATH, O_NOFOLLOW at every step, symlinks read
 * and resolved by us), so what was checked is what is returned: nothing can be swapped
 * between the check and the use.
 */
#include <sys/types.h>

#include "error.h"

/*
 * Resolve path (absolute) as above, trusting root and owner. An O_PATH | O_DIRECTORY fd of
 * the directory, or -errno with err naming the component that is not trusted (-EPERM),
 * a symlink loop (-ELOOP), or what failed.
 */
int ts_trustpath_open(const char *path, uid_t owner, struct ts_error *err);
