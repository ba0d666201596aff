/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include "helper.h"

/*
 * Process state of the sandbox's first process: ids, rlimits, session, fds, and the
 * program it becomes.
 */

/* Open the program (a host path) for execution. When an id mapped into the sandbox owns
 * it (the caller's own build tree), it is copied into a sealed memfd, so that nothing in
 * the sandbox can change what PID 1 runs (CVE-2019-5736); a file no id inside could write
 * runs as it is. */
int ts_proc_open_program(const char *path, const struct ts_idmap_line *uid_map, size_t n_uid_map,
			 int *ret_fd, struct ts_error *err);

/* Become the given ids inside the user namespace; drops supplementary groups when the
 * namespace allows it. */
int ts_proc_set_ids(uid_t uid, gid_t gid, struct ts_error *err);

/* Apply ctx->rlimits. */
int ts_proc_set_rlimits(const struct ts_helper_ctx *ctx, struct ts_error *err);

/*
 * Leave only fds 0-2, the n_pass fds in pass (moved to 3, 4, ... and inheritable: the
 * control socket and the logs directory of a durable sandbox) and the n_keep fds in keep
 * (at most 8; close-on-exec, so the program never sees them). Every fd given must be 10
 * or above.
 */
/*
 * Apply the --rlimit values of RLIMIT_SIGPENDING and RLIMIT_MSGQUEUE to ourselves, before
 * the clone: the kernel takes a new user namespace's per-user budget of those from its
 * creator's soft limit at that moment (and counts the namespace's use against ours too).
 */
int ts_proc_ns_rlimits(const struct ts_helper_ctx *ctx, struct ts_error *err);

int ts_proc_close_fds(const int *pass, size_t n_pass, const int *keep, size_t n_keep,
		      struct ts_error *err);

/* execveat() the program memfd with envp (the --setenv list; the helper's own environment
 * never reaches the sandbox). Returns only on error. */
int ts_proc_exec(int prog_fd, char **argv, char **envp, struct ts_error *err);
