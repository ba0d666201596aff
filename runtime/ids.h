/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Which ids init may start processes (and file workers) as.
 *
 * init runs as the sandbox's default user with no capabilities, except in a sandbox whose
 * id map holds both root (0) and user (1000): there the helper leaves it CAP_SETUID,
 * CAP_SETGID, CAP_SETPCAP and CAP_KILL in the sandbox's user namespace (helper
 * --init-setid), a child of init can become either id, and init can signal both. Every child, whatever its ids, leaves with no
 * capability at all, an empty bounding set included, before it runs anything.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TS_IDS_ROOT 0
#define TS_IDS_USER 1000

struct ts_ids {
	uid_t uid; /* init's own ids: the default for every request */
	gid_t gid;
	bool can_switch; /* we hold the four capabilities above */
	uint64_t bset;	 /* our bounding set at start (bit N: capability N): what each child
			  * drops, without asking for the other 60 */
};

/* Read our ids and capabilities once, at start. */
void ts_ids_init(struct ts_ids *ids);

/* 0 if a request may run as uid, else -EPERM with a message for the client in msg. */
int ts_ids_check(const struct ts_ids *ids, uint64_t uid, char *msg, size_t len);

/*
 * In a freshly forked child: become uid (already checked) with its group, drop the
 * supplementary groups, and give up every capability, the bounding set included, also
 * when uid is init's own. 0 or -errno: the child must then not run anything. Only system
 * calls, no libc state: safe in a child that shares init's memory until it executes.
 */
int ts_ids_become(const struct ts_ids *ids, uid_t uid);

/*
 * Create files as uid from now on (setfsuid/setfsgid; a no-op where we cannot switch):
 * a pty init opens for a process of the other user must belong to that user, or the
 * sandbox's other id could open its slave. ts_ids_fs_as(ids, ids->uid) goes back.
 */
void ts_ids_fs_as(const struct ts_ids *ids, uid_t uid);

/* The HOME and USER a process of uid gets by default. */
const char *ts_ids_home(uid_t uid);
const char *ts_ids_name(uid_t uid);
