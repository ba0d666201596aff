/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

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
 * Compile the profile at profile_path (with flags) and store the BPF in cache_dir, named by the
 * SHA-256 of (profile bytes, libseccomp version, compiler version). A cached program is
 * reused without loading libseccomp's compiler again. On success writes the absolute
 * path of the .bpf file to ret_path. Returns 0 or -errno; err names the file and,
 * for JSON or profile errors, the line/column or the syscall.
 */
int ts_seccomp_compile_cached(const char *profile_path, unsigned flags, const char *cache_dir,
			      char *ret_path, size_t ret_path_len, struct ts_error *err);

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
