/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include "error.h"

/*
 * Load the precompiled classic-BPF program read from fd (an array of struct sock_filter,
 * compiled by unprivileged host code with libseccomp) with SECCOMP_FILTER_FLAG_TSYNC.
 * Requires no_new_privs. Must be the last thing before execve: afterwards the calls
 * the filter denies (mount, unshare, ...) are gone for good, for every later process.
 */
int ts_seccomp_load_fd(int fd, struct ts_error *err);
