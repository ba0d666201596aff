/* SPDX-License-Identifier: Apache-2.0 */
#include "ids.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* init links nothing but libc: capget/capset by hand, version 3 (two 32-bit words). */
static int caps_get(struct __user_cap_data_struct data[2])
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };

	return (int)syscall(SYS_capget, &hdr, data);
}

static int caps_clear(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	return 0;
}

static bool has_cap(const struct __user_cap_data_struct data[2], int cap)
{
	return data[cap / 32].effective & (1U << (cap % 32));
}

void ts_ids_init(struct ts_ids *ids)
{
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	ids->uid = getuid();
	ids->gid = getgid();
	ids->can_switch = caps_get(data) == 0 && has_cap(data, CAP_SETUID) &&
			  has_cap(data, CAP_SETGID) && has_cap(data, CAP_SETPCAP) &&
			  has_cap(data, CAP_KILL);
	/* Nothing can add to a bounding set: what is in it now is all a child may drop. A
	 * kernel that cannot say leaves every bit set, so that each child tries them all. */
	ids->bset = 0;
	for (int c = 0; c < 64; c++) {
		int in = prctl(PR_CAPBSET_READ, c, 0, 0, 0);

		if (in < 0 && c == 0)
			ids->bset = ~0ULL;
		if (in < 0)
			break; /* past the kernel's last capability */
		if (in == 1)
			ids->bset |= 1ULL << c;
	}
}

int ts_ids_check(const struct ts_ids *ids, uint64_t uid, char *msg, size_t len)
{
	if (uid == ids->uid)
		return 0;
	if (ids->can_switch && (uid == TS_IDS_ROOT || uid == TS_IDS_USER))
		return 0;
	if (uid == TS_IDS_ROOT || uid == TS_IDS_USER)
		snprintf(msg, len,
			 "this sandbox runs everything as uid %u: its user namespace has no %s "
			 "(create it with `--user root`, which needs subordinate ids, or as "
			 "root)",
			 (unsigned)ids->uid, uid == TS_IDS_ROOT ? "root" : "second user");
	else
		snprintf(msg, len, "uid %llu is not a user of this sandbox (root or user)",
			 (unsigned long long)uid);
	return -EPERM;
}

/* Empty the bounding set (bset: what init's held at start). Dropping needs CAP_SETPCAP;
 * without it the set must already be empty (the helper emptied it when it left init no
 * capability). */
static int bounding_clear(uint64_t bset)
{
	for (int c = 0; c < 64 && bset; c++) {
		if (!(bset & (1ULL << c)))
			continue;
		bset &= ~(1ULL << c);
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	}
	return 0;
}

int ts_ids_become(const struct ts_ids *ids, uid_t uid)
{
	gid_t gid = uid == ids->uid ? ids->gid : (gid_t)uid;
	int r;

	if (uid != ids->uid && !ids->can_switch)
		return -EPERM;
	/* The bounding set first, while CAP_SETPCAP is ours: an exec as root would
	 * otherwise be granted what is left in it. */
	r = bounding_clear(ids->bset);
	if (r < 0)
		return r;
	/* Raw system calls: this runs in a vfork-style child sharing init's memory
	 * (proctab.c start_child), where musl's wrappers would take libc's locks and
	 * broadcast to threads (__synccall); init has one thread, so the calls are the
	 * whole job. */
	if (uid != ids->uid &&
	    (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, gid, gid, gid) < 0 ||
	     syscall(SYS_setresuid, uid, uid, uid) < 0))
		return -errno;
	/* Always, whatever init believes it holds (its capget may have failed under a
	 * custom seccomp profile): clearing sets is allowed to anyone. */
	return caps_clear();
}

void ts_ids_fs_as(const struct ts_ids *ids, uid_t uid)
{
	if (!ids->can_switch)
		return;
	setfsgid(uid == ids->uid ? ids->gid : (gid_t)uid);
	setfsuid(uid);
}

const char *ts_ids_home(uid_t uid)
{
	return uid == TS_IDS_ROOT ? "/root" : "/home/user";
}

const char *ts_ids_name(uid_t uid)
{
	return uid == TS_IDS_ROOT ? "root" : "user";
}
