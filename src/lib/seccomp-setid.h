/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The setid guard of a seccomp profile, for sandboxes whose workspace is bound with an
 * id-mapped mount (a root-owned workspace of a CI job run as root: its owner appears
 * as the sandbox's user). Through such a mount, a file the sandbox creates belongs on
 * the host to the workspace's owner — root — and the mount's nosuid only stops
 * executing it *through the mount*: a `chmod 4755` inside would leave a setuid-root
 * program on the host, for anyone who runs it there.
 *
 * So the profile is rewritten (as JSON, before it is compiled) to refuse every way of
 * giving a file S_ISUID or S_ISGID: chmod, fchmod, fchmodat, fchmodat2 with either bit
 * in the mode; open, openat and creat creating a file (O_CREAT, O_TMPFILE) with either
 * bit; mknod and mknodat with either bit. openat2 hides its mode behind a pointer
 * seccomp cannot read: it returns ENOSYS, and libc falls back to openat. Only calls the
 * profile allowed unconditionally are narrowed; a profile that allows one of them with
 * argument conditions of its own is refused rather than guessed at.
 */
#include <jansson.h>

#include "error.h"

/* Rewrite the profile in place. 0, or -EINVAL with err naming the rule. */
int ts_seccomp_guard_setid(json_t *root, const char *path, struct ts_error *err);
