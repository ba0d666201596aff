/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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
 * with O_NOFOLLOW|O_DIRECTORY). Crosses no mount point. Any depth, with at most about 20
 * fds open (deeper directories are moved up into the tree's top, see util.c). 0 or
 * -errno.
 */
int ts_rm_rf_at(int dirfd, const char *name);

/* Parse a decimal unsigned integer with optional K/M/G/T suffix (powers of 1024).
 * -EINVAL, or -EOVERFLOW past 2^64 - 1 bytes. */
int ts_parse_size(const char *s, unsigned long long *ret);

/* Parse a non-negative decimal integer that fits in long long (-EOVERFLOW if not). */
int ts_parse_ull(const char *s, unsigned long long *ret);

/* Parse a duration: "30", "30s", "5m", "2h", "1.5" (seconds). Result in milliseconds.
 * -EINVAL, -ERANGE (negative, or under 1 ms but not 0), -EOVERFLOW past 10^15 ms
 * (TS_DURATION_MAX_S seconds). */
#define TS_DURATION_MAX_S 1000000000000ULL
int ts_parse_duration_ms(const char *s, unsigned long long *ret);

/* True when s is a valid environment variable name: [A-Za-z_][A-Za-z0-9_]*, 1..255 chars. */
bool ts_env_name_valid(const char *s);

/* Is the JSON text p[0..n) nested at most limit levels deep (strings skipped)? A cheap
 * check before parsing: jansson's own bound (2048) is far deeper than any request needs. */
bool ts_json_depth_ok(const char *p, size_t n, unsigned limit);

/*
 * May fd be handed to a process in a sandbox as one of its standard streams? Not a
 * directory and not an O_PATH fd: either would be a handle on the host's tree outside
 * the sandbox's root, for openat(fd, "..") (the CVE-2024-21626 pattern). 0, -EISDIR,
 * -EBADF.
 */
int ts_stdio_fd_safe(int fd);

/*
 * Make text from inside a sandbox safe to print on a terminal, in place: every C0
 * control and DEL, every C1 control (U+0080..U+009F, as UTF-8 or as a raw 8-bit byte:
 * 0x9B is CSI to many terminals), every invisible character that changes how the text
 * around it is shown (bidirectional overrides, embeddings and isolates, direction
 * marks, zero-width characters, U+2028/U+2029, the BOM), and every byte that is not part
 * of a valid UTF-8 sequence becomes `?` (one per byte). Valid UTF-8 otherwise stays.
 */
void ts_sanitize_text(char *s);

/* The length of the valid UTF-8 sequence at s (len bytes left; 1 to 4), or 0 when it is not
 * one: overlong forms, surrogates and code points past U+10FFFF are not (jansson refuses
 * them too). ts_utf8_decode also gives its code point. */
size_t ts_utf8_decode(const char *s, size_t len, uint32_t *cp);
size_t ts_utf8_seq(const char *s, size_t len);

/* The process's umask, read without changing it (/proc/self/status; 022 if unreadable). */
mode_t ts_umask(void);

/* True when s starts with prefix. */
bool ts_startswith(const char *s, const char *prefix);

/* Directory that holds the running executable (readlink /proc/self/exe). */
int ts_self_dir(char *buf, size_t len);

/*
 * Our own cgroup ("/user.slice/...", "/" at the root) in the hierarchy that holds
 * controller (cgroup v1: "memory", "pids", "cpu", ...; "" for the v2 line "0::PATH"),
 * from /proc/self/cgroup. 0, -ENOENT (no such hierarchy), -ENAMETOOLONG (buf too small),
 * or -errno from reading the file.
 */
int ts_self_cgroup(const char *controller, char *buf, size_t len);

/*
 * Every signal back to its default disposition, and none blocked. What a process
 * inherits is its caller's choice, not ours: a SIGCHLD ignored by the caller (`trap ''
 * CHLD`) would make children vanish unreaped and every wait for them fail with ECHILD.
 */
void ts_signals_reset(void);

/* Milliseconds since an arbitrary point (CLOCK_MONOTONIC): for deadlines and durations,
 * which a change of the wall clock must not move. The one monotonic clock of the tree. */
unsigned long long ts_now_ms(void);

/* Milliseconds since the epoch (CLOCK_REALTIME): for times that are shown or stored (a
 * record's *_ms fields, a process's start and end). The one wall clock of the tree. */
long long ts_realtime_ms(void);
