/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Per-sandbox kernel budgets. The kernel counts some objects per user and per user
 * namespace, and charges each one at every level of the chain up to the initial
 * namespace (kernel/ucount.c): inotify instances and watches, fanotify groups and
 * marks, namespaces of each kind. Without a limit of its own, a sandbox could use up
 * its host user's budget (128 inotify instances by default) and break that user's other
 * programs. The limits of the sandbox's own user namespace (/proc/sys/user/max_*, which
 * a process writes for the namespace it is in, holding CAP_SYS_RESOURCE there) bound
 * what the sandbox's processes can take, whatever they do later.
 */
#include "helper.h"

/* Parse one --userns-limit NAME=VALUE (NAME a file of /proc/sys/user). */
int ts_ucount_parse(const char *s, struct ts_helper_ctx *ctx, struct ts_error *err);

/*
 * The budget files, opened for writing early — right after the clone, on the host's
 * procfs, which shows each process the files of its own user namespace — and written
 * late, once the sandbox has made every namespace it makes (a detached mount tree
 * counts as a mount namespace, so the limits can only come after the mount tree is
 * built, when /proc is the sandbox's own, read-only /proc/sys).
 */
struct ts_ucount_files {
	int fds[TS_HELPER_MAX_UCOUNTS];
};

/* Open the files for ctx's limits (fds[i] = -1 where this kernel has no such budget). */
int ts_ucount_open(const struct ts_helper_ctx *ctx, struct ts_ucount_files *f,
		   struct ts_error *err);

/* Write the limits (we must still hold CAP_SYS_RESOURCE in our user namespace) and close
 * the files. */
int ts_ucount_write(const struct ts_helper_ctx *ctx, struct ts_ucount_files *f,
		    struct ts_error *err);
