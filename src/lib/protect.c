/* SPDX-License-Identifier: Apache-2.0 */
#include "protect.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cleanup.h"

/* Deeper than any real workspace; past it the tree is hostile or broken. */
#define PROTECT_MAX_DEPTH 256

struct scan {
	unsigned flags;
	char *const *patterns;
	size_t n_patterns;
	size_t max_entries;
	size_t n_entries;
	dev_t dev;
	char **found;
	size_t n_found, cap_found;
	struct ts_error *err;
};

void ts_strv_free(char **v)
{
	if (!v)
		return;
	for (char **s = v; *s; s++)
		free(*s);
	free(v);
}

/*
 * fnmatch flags 0: without FNM_PERIOD a leading `*` or `?` also matches a leading dot,
 * so `*.pem` protects `.hidden.pem` too. A protection list errs on the side of matching.
 * FNM_PATHNAME is moot: a basename holds no `/` and patterns are refused with one.
 */
static bool matches(const struct scan *s, const char *name)
{
	for (size_t i = 0; i < s->n_patterns; i++)
		if (fnmatch(s->patterns[i], name, 0) == 0)
			return true;
	return false;
}

static int add(struct scan *s, const char *dir, const char *name)
{
	char *path;

	if (s->n_found + 1 >= s->cap_found) {
		size_t ncap = s->cap_found ? s->cap_found * 2 : 16;
		char **v = reallocarray(s->found, ncap, sizeof(*v));

		if (!v)
			return ts_err(s->err, -ENOMEM, "scan protected paths: out of memory");
		s->found = v;
		s->cap_found = ncap;
	}
	if (asprintf(&path, "%s%s%s", dir, dir[0] ? "/" : "", name) < 0)
		return ts_err(s->err, -ENOMEM, "scan protected paths: out of memory");
	s->found[s->n_found++] = path;
	s->found[s->n_found] = NULL;
	return 0;
}

/* TS_PROTECT_ALIASES: another name sees its contents, or it runs with more privilege. */
static bool aliased(int dfd, const char *name, const struct stat *st)
{
	char path[PATH_MAX];

	if (st->st_nlink > 1)
		return true;
	if (!(st->st_mode & 0111))
		return false; /* neither setid bits nor capabilities act without exec */
	if (st->st_mode & (S_ISUID | S_ISGID))
		return true;
	/* any security.capability counts, even one we cannot read: fail closed (EOVERFLOW:
	 * read from a user namespace, as the helper's --scan-protected does, capabilities
	 * whose root id that namespace does not map) */
	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dfd, name);
	return lgetxattr(path, "security.capability", NULL, 0) >= 0 || errno == E2BIG ||
	       errno == EACCES || errno == EPERM || errno == EOVERFLOW;
}

/* dir is the relative path of dfd ("" for the workspace); dfd is consumed. */
static int walk(struct scan *s, int dfd, const char *dir, unsigned depth)
{
	DIR *d;
	struct dirent *de;
	int r = 0;

	d = fdopendir(dfd);
	if (!d) {
		r = -errno;
		close(dfd);
		return ts_err_errno(s->err, r, "scan protected paths: read `%s`",
				    dir[0] ? dir : ".");
	}
	for (;;) {
		_cleanup_free_ char *sub = NULL;
		struct stat st;
		bool want;
		int fd;

		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				r = ts_err_errno(s->err, -errno, "scan protected paths: read `%s`",
						 dir[0] ? dir : ".");
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++s->n_entries > s->max_entries) {
			r = ts_err(s->err, -E2BIG,
				   "scan protected paths: the workspace has more than %zu entries "
				   "(the `max_entries` limit)",
				   s->max_entries);
			break;
		}
		want = matches(s, de->d_name);
		/* d_type spares a stat for the common case: a file that matches nothing
		 * (unless every regular file's links and mode count: TS_PROTECT_ALIASES). */
		if (!want && de->d_type != DT_DIR && de->d_type != DT_UNKNOWN &&
		    !(de->d_type == DT_REG && (s->flags & TS_PROTECT_ALIASES)))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue; /* removed while we walked */
			r = ts_err_errno(s->err, -errno, "scan protected paths: stat `%s%s%s`", dir,
					 dir[0] ? "/" : "", de->d_name);
			break;
		}
		if (S_ISREG(st.st_mode)) {
			if (!want && (s->flags & TS_PROTECT_ALIASES))
				want = aliased(dirfd(d), de->d_name, &st);
			if (want) {
				r = add(s, dir, de->d_name);
				if (r < 0)
					break;
			}
			continue;
		}
		/* A mount inside the workspace is someone else's tree: not ours to protect
		 * and not ours to walk (it may be huge, or the host's /). */
		if (!S_ISDIR(st.st_mode) || st.st_dev != s->dev)
			continue;
		if (asprintf(&sub, "%s%s%s", dir, dir[0] ? "/" : "", de->d_name) < 0) {
			sub = NULL;
			r = ts_err(s->err, -ENOMEM, "scan protected paths: out of memory");
			break;
		}
		if (depth + 1 > PROTECT_MAX_DEPTH) {
			r = ts_err(s->err, -ELOOP,
				   "scan protected paths: directories nested deeper than %d levels "
				   "at `%s`",
				   PROTECT_MAX_DEPTH, sub);
			break;
		}
		/*
		 * An unreadable directory is an error, not a skip: the sandbox user is the
		 * host user and can chmod it back, then write whatever secret is inside.
		 * Failing closed makes the owner fix the mode instead.
		 */
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT)
				continue;
			r = ts_err_errno(s->err, -errno, "scan protected paths: open `%s`", sub);
			break;
		}
		r = walk(s, fd, sub, depth + 1);
		if (r < 0)
			break;
	}
	closedir(d);
	return r;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int ts_protect_scan(int workspace_fd, char *const *patterns, size_t n_patterns, size_t max_entries,
		    unsigned flags, char ***ret, size_t *ret_n, struct ts_error *err)
{
	struct scan s = {
		.flags = flags,
		.patterns = patterns,
		.n_patterns = n_patterns,
		.max_entries = max_entries,
		.err = err,
	};
	struct stat st;
	int fd, r;

	if (fstat(workspace_fd, &st) < 0)
		return ts_err_errno(err, -errno, "scan protected paths: stat workspace");
	if (!S_ISDIR(st.st_mode))
		return ts_err(err, -ENOTDIR,
			      "scan protected paths: the workspace is not a directory");
	s.dev = st.st_dev;
	/* A fresh open file description: fdopendir() and readdir() must not move the
	 * caller's offset or close the caller's fd. */
	fd = openat(workspace_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return ts_err_errno(err, -errno, "scan protected paths: open workspace");
	r = walk(&s, fd, "", 0);
	if (r < 0) {
		if (s.found)
			s.found[s.n_found] = NULL;
		ts_strv_free(s.found);
		return r;
	}
	if (!s.found) {
		s.found = calloc(1, sizeof(*s.found));
		if (!s.found)
			return ts_err(err, -ENOMEM, "scan protected paths: out of memory");
	}
	qsort(s.found, s.n_found, sizeof(*s.found), cmp);
	*ret = s.found;
	if (ret_n)
		*ret_n = s.n_found;
	return 0;
}
