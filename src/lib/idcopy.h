/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Copy a sandbox's tree (ts_treecopy) in the sandbox's own id mapping. Where the caller
 * owns every id the sandbox has (mapping modes `single` and `root-range`: one id, or the
 * host's root), in this process. In mode `subid` the files belong to subordinate ids the
 * caller can neither read nor chown: `toren-sandbox-helper --copy-tree` copies them as
 * root of a user namespace with the sandbox's maps, given both directories as open fds.
 */
#include <stddef.h>

#include "idmap-plan.h"
#include "treecopy.h"

/*
 * Copy src_fd into dst_fd as ts_treecopy does, counting into c, for a sandbox whose
 * recorded spec is spec (JSON text, NULL for `{}`); helper is the helper's path. The
 * same errors as ts_treecopy (-ENOSPC, -E2BIG, ...), also when the helper copied.
 */
int ts_idcopy_tree(const char *helper, const char *spec, int src_fd, int dst_fd,
		   struct ts_treecopy *c, struct ts_error *err);

/*
 * Copy a snapshot's tree into a new sandbox's (of recorded spec dst_spec) as
 * ts_idcopy_tree does. src_subids: the tree may hold files of the caller's subordinate
 * ids (its sandbox had them). Into a sandbox that has them too, owners are kept; into one
 * of a single id, which can represent no other owner, such a tree is copied through the
 * helper as root of the caller's whole subordinate mapping and every copy becomes the
 * caller's (c->set_owner): the sandbox's user owns them, modes kept, setid bits
 * dropped as always. A tree recorded as the caller's alone that the in-process copy into
 * such a sandbox cannot read (-EACCES, -EPERM) is copied the same way after all, the
 * destination emptied first, where the caller has subordinate ids.
 */
int ts_idcopy_restore(const char *helper, bool src_subids, const char *dst_spec, int src_fd,
		      int dst_fd, struct ts_treecopy *c, struct ts_error *err);

/* Whether the sandbox of this recorded spec has subordinate ids (mapping mode `subid`). */
bool ts_idcopy_subids(const char *spec);

/*
 * ts_rm_rf_at(dirfd, name), and where that is refused (-EACCES, -EPERM) and the caller has
 * subordinate ids, empty it through `toren-sandbox-helper --copy-tree --remove` as root of
 * the caller's whole subordinate mapping first: a snapshot of a sandbox with a root holds
 * files of those ids. 0 when gone (or absent), else -errno with err set.
 */
int ts_idcopy_remove(const char *helper, int dirfd, const char *name, struct ts_error *err);

/*
 * ts_protect_scan of ws_fd (a sandbox's workspace, open O_RDONLY|O_DIRECTORY) through
 * `toren-sandbox-helper --scan-protected` as root of the sandbox's own id mapping plan
 * (mode `subid` only, else -EINVAL): for a tree the caller cannot walk itself, such as a
 * directory of 0700 that the sandbox's root made. The helper's paths come from a tree the
 * sandbox controls and are checked before they are returned: relative, no empty, `.` or
 * `..` component, each shorter than a --protect destination may be, no more than the
 * helper counted or max_entries (-EPROTO otherwise). *ret and *ret_n as ts_protect_scan's;
 * its errors too (-EACCES: even the sandbox's root may not read a directory).
 */
int ts_idcopy_scan_protected(const char *helper, const struct ts_idmap_plan *plan, int ws_fd,
			     char *const *patterns, size_t n_patterns, size_t max_entries,
			     unsigned flags, char ***ret, size_t *ret_n, struct ts_error *err);
