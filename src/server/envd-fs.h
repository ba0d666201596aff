/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * envd's filesystem.Filesystem service (envd-fs.c): Stat, ListDir, MakeDir, Move, Remove,
 * the WatchDir stream and the polling watchers (CreateWatcher, GetWatcherEvents,
 * RemoveWatcher), on the backend interface. The polling watchers live in srv->fs: per
 * sandbox (at most 16 each, 256 in all), freed when their sandbox goes (within a few
 * seconds of it) or with the server (ts_envd_fs_free).
 */
#include <jansson.h>

#include "backend.h"

struct ts_srv;

/* Go's FileMode.String() of a type and permission bits ("-rw-r--r--", "drwxr-xr-x"):
 * 11 bytes with the NUL. */
void ts_envd_fs_permissions(enum ts_be_file_type type, unsigned mode, char buf[11]);

/* E2B's EntryInfo of e (as ProtoJSON), NULL when out of memory. */
json_t *ts_envd_fs_entry_json(const struct ts_be_entry *e);

/* Make a symlink entry describe what it points to, as envd does: its target's type and
 * attributes, symlink_target the resolved absolute path (a dangling or looping link stays
 * a symlink). Anything else is left as it is. Each hop is a question to the sandbox, which
 * serve's one thread waits for: budget (NULL: none but the 40 hops of one link) is what a
 * whole listing may still ask, and a link met once it is spent stays a symlink. 0, or
 * -ENOMEM. */
int ts_envd_fs_follow(struct ts_sb *sb, const char *user, struct ts_be_entry *e, unsigned *budget);

/* Free every polling watcher (serve's shutdown). */
void ts_envd_fs_free(struct ts_srv *srv);
