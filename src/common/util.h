/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/* write() all of buf, retrying on EINTR and short writes. 0 or -errno. */
int ts_write_all(int fd, const void *buf, size_t len);

/* read() exactly len bytes. 0, -errno, or -EIO on early EOF. */
int ts_read_all(int fd, void *buf, size_t len);

/* Write a NUL-terminated string to dirfd/path (O_WRONLY, no create). 0 or -errno. */
int ts_write_file_at(int dirfd, const char *path, const char *content);

/*
 * Read at most max-1 bytes of dirfd/path into a new NUL-terminated buffer. 0 or -errno
 * (-EFBIG when the file is larger than max-1).
 */
int ts_read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len);

/* mkdir -p relative to dirfd (path may be absolute, then dirfd is ignored). 0 or -errno. */
int ts_mkdir_p(int dirfd, const char *path, mode_t mode);

/*
 * Remove the tree at dirfd/name without ever following a symlink (unlinkat on fds opened
 * with O_NOFOLLOW|O_DIRECTORY). Crosses no mount point. 0 or -errno.
 */
int ts_rm_rf_at(int dirfd, const char *name);

/* Parse a decimal unsigned integer with optional K/M/G/T suffix (powers of 1024). */
int ts_parse_size(const char *s, unsigned long long *ret);

/* Parse a non-negative decimal integer that fits in long long. */
int ts_parse_ull(const char *s, unsigned long long *ret);

/* Parse a duration: "30", "30s", "5m", "2h", "1.5" (seconds). Result in milliseconds. */
int ts_parse_duration_ms(const char *s, unsigned long long *ret);

/* True when s is a valid environment variable name: [A-Za-z_][A-Za-z0-9_]*, 1..255 chars. */
bool ts_env_name_valid(const char *s);

/*
 * May fd be handed to a process in a sandbox as one of its standard streams? Not a
 * directory and not an O_PATH fd: either would be a handle on the host's tree outside
 * the sandbox's root, for openat(fd, "..") (the CVE-2024-21626 pattern). 0, -EISDIR,
 * -EBADF.
 */
int ts_stdio_fd_safe(int fd);

/* True when s starts with prefix. */
bool ts_startswith(const char *s, const char *prefix);

/* Directory that holds the running executable (readlink /proc/self/exe). */
int ts_self_dir(char *buf, size_t len);

/* Seconds since an arbitrary point, from CLOCK_MONOTONIC, in milliseconds. */
unsigned long long ts_now_ms(void);
