/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The setid guard of a seccomp profile, in every sandbox: what a sandbox creates in its
 * workspace belongs on the host to someone (the caller; the sandbox's host ids; through
 * an id-mapped mount, a root-owned workspace's owner, root), and the mount's nosuid only
 * stops executing it *through the mount*: a `chmod 4755` inside would leave a setuid
 * program of that someone on the host, for any local user who reaches it.
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
