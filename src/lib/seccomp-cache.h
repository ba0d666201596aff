/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The cache of compiled seccomp programs (seccomp-compile.h compiles them). The cache
 * feeds the helper a filter to load, so whoever can write its directory decides the
 * sandbox's syscall policy: the directory must belong to the caller and not be writable
 * by others. Programs are named by a content key (SHA-256 of the profile bytes and of
 * ts_seccomp_compile_fingerprint), written to a temporary name, fsynced and renamed; a
 * symlink named by stat data of the profile and of our executable finds one without
 * reading or hashing the profile. A file that is not whole BPF instructions is rebuilt,
 * never used.
 */
#include <stddef.h>

#include "error.h"

/*
 * Compile the profile at profile_path (with flags) and store the BPF in cache_dir, named by the
 * SHA-256 of (profile bytes, libseccomp version, compiler version). A cached program is
 * reused without loading libseccomp's compiler again. On success writes the absolute
 * path of the .bpf file to ret_path. Returns 0 or -errno; err names the file and,
 * for JSON or profile errors, the line/column or the syscall.
 */
int ts_seccomp_compile_cached(const char *profile_path, unsigned flags, const char *cache_dir,
			      char *ret_path, size_t ret_path_len, struct ts_error *err);
