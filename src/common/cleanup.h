/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* systemd-style scope cleanup. fds start at -EBADF; free functions accept NULL. */
#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void ts_freep(void *p)
{
	free(*(void **)p);
}

static inline void ts_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void ts_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define _cleanup_free_ _cleanup_(ts_freep)
#define _cleanup_close_ _cleanup_(ts_closep)
#define _cleanup_fclose_ _cleanup_(ts_fclosep)

/* Move ownership out of a cleanup variable. */
#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _ptr_ = (p);                                                         \
		(p) = NULL;                                                                        \
		_ptr_;                                                                             \
	})
#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _fd_ = (fd);                                                                   \
		(fd) = -EBADF;                                                                     \
		_fd_;                                                                              \
	})

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
