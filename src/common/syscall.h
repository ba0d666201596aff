/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Raw syscalls glibc 2.36 does not wrap (or wraps only recently), wrapped once here.
 * Each returns what the kernel returns: -1 and errno on failure.
 */
#include <linux/openat2.h>
#include <signal.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "missing.h"

static inline int ts_openat2(int dirfd, const char *path, const struct open_how *how)
{
	return (int)syscall(SYS_openat2, dirfd, path, how, sizeof(*how));
}

static inline int ts_pidfd_open(pid_t pid, unsigned int flags)
{
	return (int)syscall(SYS_pidfd_open, pid, flags);
}

static inline int ts_pidfd_send_signal(int pidfd, int sig, siginfo_t *info, unsigned int flags)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, info, flags);
}

static inline int ts_pivot_root(const char *new_root, const char *put_old)
{
	return (int)syscall(SYS_pivot_root, new_root, put_old);
}

static inline int ts_open_tree(int dirfd, const char *path, unsigned int flags)
{
	return (int)syscall(SYS_open_tree, dirfd, path, flags);
}

static inline int ts_move_mount(int from_dfd, const char *from, int to_dfd, const char *to,
				unsigned int flags)
{
	return (int)syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags);
}

static inline int ts_fsopen(const char *fs, unsigned int flags)
{
	return (int)syscall(SYS_fsopen, fs, flags);
}

static inline int ts_fsconfig(int fd, unsigned int cmd, const char *key, const void *value, int aux)
{
	return (int)syscall(SYS_fsconfig, fd, cmd, key, value, aux);
}

static inline int ts_fsmount(int fd, unsigned int flags, unsigned int attr)
{
	return (int)syscall(SYS_fsmount, fd, flags, attr);
}

static inline int ts_mount_setattr(int dirfd, const char *path, unsigned int flags,
				   struct mount_attr *attr)
{
	return (int)syscall(SYS_mount_setattr, dirfd, path, flags, attr, sizeof(*attr));
}

static inline int ts_close_range(unsigned int first, unsigned int last, unsigned int flags)
{
	return (int)syscall(SYS_close_range, first, last, flags);
}

static inline int ts_seccomp(unsigned int op, unsigned int flags, void *args)
{
	return (int)syscall(SYS_seccomp, op, flags, args);
}
