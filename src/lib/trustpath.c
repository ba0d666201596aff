/* SPDX-License-Identifier: Apache-2.0 */
#include "trustpath.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

#define TRUST_MAX_LINKS 40 /* as the kernel's MAXSYMLINKS */

static bool trusted_owner(const struct stat *st, uid_t owner)
{
	return st->st_uid == 0 || st->st_uid == owner;
}

/* May names in this directory be changed by nobody but root and owner? */
static bool trusted_dir(const struct stat *st, uid_t owner)
{
	if (!trusted_owner(st, owner))
		return false;
	if (st->st_mode & S_ISVTX)
		return true; /* others may add names, never rename or remove ours */
	if (st->st_mode & S_IWOTH)
		return false;
	return !(st->st_mode & S_IWGRP) || st->st_gid == 0;
}

/* Take the first component off rest (in place): its start, or NULL when none is left. */
static char *next_component(char **rest)
{
	char *c = *rest, *slash;

	while (*c == '/')
		c++;
	if (!*c)
		return NULL;
	slash = strchr(c, '/');
	if (slash) {
		*slash = '\0';
		*rest = slash + 1;
	} else {
		*rest = c + strlen(c);
	}
	return c;
}

/* at (the real path walked so far) with one component more or, for "..", one less. */
static void at_step(char *at, size_t len, const char *comp)
{
	if (!strcmp(comp, "..")) {
		char *slash = strrchr(at, '/');

		if (slash)
			*slash = '\0';
		return;
	}
	if (strlen(at) + 1 + strlen(comp) < len)
		strcat(strcat(at, "/"), comp);
}

int ts_trustpath_open(const char *path, uid_t owner, struct ts_error *err)
{
	_cleanup_close_ int cur = -EBADF;
	/* the rest of the walk; a symlink's target is put in front of it */
	char work[2][2 * PATH_MAX], at[PATH_MAX] = "";
	char *rest;
	int links = 0, which = 0;

	if (path[0] != '/')
		return ts_err(err, -EINVAL, "`%s` is not absolute", path);
	if (strlen(path) >= sizeof(work[0]))
		return ts_err(err, -ENAMETOOLONG, "`%s`: too long", path);
	strcpy(work[0], path);
	rest = work[0];
	cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return ts_err_errno(err, -errno, "open `/`");
	for (char *comp; (comp = next_component(&rest));) {
		_cleanup_close_ int fd = -EBADF;
		struct stat dst, st;

		if (!strcmp(comp, "."))
			continue;
		/* the directory we look the name up in: nobody else may change its names */
		if (fstat(cur, &dst) < 0)
			return ts_err_errno(err, -errno, "`%s`: stat `%s/`", path, at);
		if (!trusted_dir(&dst, owner))
			return ts_err(
				err, -EPERM,
				"`%s`: `%s/` belongs to uid %u or others may write it: someone "
				"other than root and the owner (uid %u) could redirect the path",
				path, at, (unsigned)dst.st_uid, (unsigned)owner);
		fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0)
			return ts_err_errno(err, -errno, "`%s`: open `%s/%s`", path, at, comp);
		if (!trusted_owner(&st, owner))
			return ts_err(
				err, -EPERM,
				"`%s`: `%s/%s` belongs to uid %u, not to root or the owner (uid "
				"%u)",
				path, at, comp, (unsigned)st.st_uid, (unsigned)owner);
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);
			char *next = work[!which];

			if (n < 0)
				return ts_err_errno(err, -errno, "`%s`: read link `%s/%s`", path,
						    at, comp);
			target[n] = '\0';
			if (++links > TRUST_MAX_LINKS)
				return ts_err(err, -ELOOP, "`%s`: too many symlinks", path);
			if ((size_t)n + 1 + strlen(rest) >= sizeof(work[0]))
				return ts_err(err, -ENAMETOOLONG, "`%s`: too long after links",
					      path);
			/* Length checked above; memcpy so the bound is plain to see. */
			size_t rlen = strlen(rest);
			memmove(next + n + 1, rest, rlen + 1);
			memcpy(next, target, (size_t)n);
			next[n] = '/';
			which = !which;
			rest = next;
			if (target[0] == '/') {
				close(cur);
				cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
				if (cur < 0)
					return ts_err_errno(err, -errno, "open `/`");
				at[0] = '\0';
			}
			continue;
		}
		if (!S_ISDIR(st.st_mode))
			return ts_err(err, -ENOTDIR, "`%s`: `%s/%s` is not a directory", path, at,
				      comp);
		at_step(at, sizeof(at), comp);
		close(cur);
		cur = TAKE_FD(fd);
	}
	return TAKE_FD(cur);
}
