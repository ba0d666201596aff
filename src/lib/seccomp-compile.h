/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <nettle/sha2.h>
#include <stddef.h>

#include "error.h"

/*
 * Seccomp policy compilation, done by unprivileged host code (never by the helper).
 *
 * A profile is an OCI/Docker seccomp profile (JSON: defaultAction, defaultErrnoRet,
 * architectures, syscalls[] with names, action, errnoRet, args[], includes/excludes
 * by arch and caps). It is compiled with libseccomp to a raw classic-BPF program
 * (an array of struct sock_filter, as seccomp_export_bpf() writes it) for the native
 * architecture. Non-native architectures (x32, i386) are killed.
 *
 * Our additions to the Docker semantics, applied to every profile:
 *   - syscalls the profile does not name and that libseccomp does not know the name of
 *     (newer than our tables) return ENOSYS, so libc and runtimes fall back;
 *   - clone3 always returns ENOSYS (its flags sit behind a pointer).
 */

/* Flags of the compile functions. */
#define TS_SECCOMP_GUARD_SETID (1U << 0) /* no setuid/setgid modes (seccomp-setid.h) */

/*
 * Compile the profile at profile_path and write the BPF program to fd.
 * Returns 0 or -errno.
 */
int ts_seccomp_compile_to_fd(const char *profile_path, unsigned flags, int fd,
			     struct ts_error *err);

/*
 * Compile the profile and write libseccomp's pseudo-filter-code text (seccomp_export_pfc)
 * to fd. Used by the policy test that diffs the real filter against the intended table.
 */
int ts_seccomp_export_pfc(const char *profile_path, unsigned flags, int fd, struct ts_error *err);

/*
 * Read a profile file (at most 4 MiB) into a new NUL-terminated buffer. 0 or -errno
 * (-EFBIG when larger); err names the file.
 */
int ts_seccomp_read_profile(const char *path, char **ret, size_t *ret_len, struct ts_error *err);

/*
 * Compile the profile bytes buf (read from path, which messages name) to a BPF program in
 * a new buffer *ret of *ret_len bytes: whole struct sock_filter instructions, at most
 * BPF_MAXINSNS of them (-E2BIG). 0 or -errno.
 */
int ts_seccomp_compile_buf(const char *path, const char *buf, size_t len, unsigned flags,
			   char **ret, size_t *ret_len, struct ts_error *err);

/*
 * Feed h with everything a compiled program depends on besides the profile's bytes: this
 * compiler's version, libseccomp's version and the syscall numbers it can name, the native
 * architecture, the kernel release and flags. For a cache key (seccomp-cache.h). 0, or
 * -EOPNOTSUPP on an architecture we do not compile for, or -errno of uname.
 */
int ts_seccomp_compile_fingerprint(struct sha256_ctx *h, unsigned flags, struct ts_error *err);
