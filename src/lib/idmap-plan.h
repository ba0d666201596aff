/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/*
 * Which ids a sandbox gets, decided by unprivileged host code and handed to the helper
 * as --uid-map/--gid-map lines.
 *
 *  - ordinary user, no subordinate ids:  `1000 <uid> 1` (the sandbox `user` is you; there
 *    is no root inside);
 *  - ordinary user asking for a root inside (--user root), with /etc/subuid and
 *    /etc/subgid ranges and newuidmap: inside 0..999 and 1001.. come from the range, 1000
 *    is you (workspace files stay yours);
 *  - root in the initial namespace: inside 0..65535 is an unprivileged host range (root's
 *    own /etc/subuid entry, else TS_ROOT_IDMAP_BASE), never host uid 0;
 *  - root inside a user namespace with one id (e.g. `unshare -r`): `1000 0 1`, which the
 *    helper refuses when our 0 is the host's root.
 */

/* The host range used for sandboxes started by root when /etc/subuid names none. */
#define TS_ROOT_IDMAP_BASE 2147352576UL /* 0x7ffe0000 */
#define TS_IDMAP_RANGE 65536UL

struct ts_idmap_line_plan {
	unsigned long inside, outside, count;
};

struct ts_idmap_plan {
	struct ts_idmap_line_plan uid[3], gid[3];
	size_t n_uid, n_gid;
	bool newidmap;		/* apply through newuidmap/newgidmap */
	bool has_root;		/* uid 0 exists inside (--user root possible) */
	unsigned long user_uid; /* host uid that is `user` (1000) inside */
	unsigned long user_gid;
	unsigned long root_uid; /* host uid that is root inside, when has_root */
	unsigned long root_gid;
	const char *mode; /* "single", "subid" or "root-range": for doctor/inspect */
};

/*
 * Decide the plan for the calling process. An ordinary user gets the subordinate range
 * only when want_root (a root inside is asked for): newuidmap and newgidmap are two
 * setuid executions on every start, and the sandbox `user` needs only the caller's id.
 * 0 or -errno.
 */
int ts_idmap_plan(struct ts_idmap_plan *p, bool want_root, struct ts_error *err);

/* Are we the host's root: uid 0 in the initial user namespace? */
bool ts_idmap_host_root(void);

/*
 * Look up the subordinate range of `name` (or of the numeric `uid`) in a subid file
 * (/etc/subuid format). 0 and the first range with count >= min_count, -ENOENT if none.
 */
int ts_subid_lookup(const char *file, const char *name, unsigned long uid, unsigned long min_count,
		    unsigned long *start, unsigned long *count);
