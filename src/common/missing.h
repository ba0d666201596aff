/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Constants newer than the oldest headers we build against (Debian 12: linux 6.1, glibc 2.36). */
#include <sys/mount.h>

#ifndef RESOLVE_IN_ROOT
#define RESOLVE_IN_ROOT 0x10
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef PIDFD_NONBLOCK
#define PIDFD_NONBLOCK 04000
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef SECCOMP_FILTER_FLAG_TSYNC
#define SECCOMP_FILTER_FLAG_TSYNC (1UL << 0)
#endif

/* musl, the libc toren-sandbox-init is built with where musl-gcc exists (meson.build), has
 * no statx(2) wrapper before 1.2.5 and no struct mount_attr (glibc 2.36 has both). The
 * guards test macros that come with the declarations: include this before <linux/stat.h>
 * or <linux/mount.h> (nothing here includes those otherwise). */
#if !defined(__GLIBC__)
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifndef STATX_TYPE
#include <linux/stat.h>
static inline int statx(int dfd, const char *path, int flags, unsigned int mask, struct statx *sx)
{
	return (int)syscall(SYS_statx, dfd, path, flags, mask, sx);
}
#endif
#ifndef MOUNT_ATTR_RDONLY
struct mount_attr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};
#endif
#endif
