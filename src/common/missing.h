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
