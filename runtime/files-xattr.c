/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The file worker's xattrs: E2B's file metadata is the user.e2b.* xattrs of a file
 * (envd's X-Metadata-* upload headers, EntryInfo.metadata). Only regular files and
 * directories carry user xattrs (the kernel refuses them elsewhere), and they are opened
 * O_NOFOLLOW | O_NONBLOCK so neither a symlink nor a FIFO planted at the name leads
 * anywhere else or hangs the worker.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cleanup.h"
#include "files-internal.h"

#define PREFIX "user.e2b."
#define PREFIX_LEN (sizeof(PREFIX) - 1)
#define LIST_MAX (64U * 1024U) /* XATTR_LIST_MAX */

/* A read-only fd of dfd/name ("" is dfd itself) when it is a file or directory; -errno. */
static int open_for_xattrs(int dfd, const char *name, mode_t mode)
{
	if (!S_ISREG(mode) && !S_ISDIR(mode))
		return -EOPNOTSUPP;
	int fd = openat(dfd, name[0] ? name : ".",
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
				(S_ISDIR(mode) ? O_DIRECTORY : 0));

	return fd < 0 ? -errno : fd;
}

/* The xattr names of fd in buf (NUL-separated), their length or -errno. */
static ssize_t list_names(int fd, char *buf, size_t len)
{
	ssize_t n = flistxattr(fd, buf, len);

	return n < 0 ? -errno : n;
}

int ts_files_fill_xattrs(struct ts_ctl_msg *m, int dfd, const char *name, mode_t mode)
{
	_cleanup_free_ char *names = malloc(LIST_MAX);
	_cleanup_free_ char *kv = malloc(TS_FILE_XATTR_NAME_MAX + 1 + TS_FILE_XATTR_VALUE_MAX + 1);
	_cleanup_close_ int fd = -EBADF;
	unsigned count = 0;
	ssize_t n;

	if (!names || !kv)
		return -ENOMEM;
	fd = open_for_xattrs(dfd, name, mode);
	if (fd < 0)
		return 0; /* unreadable, or no file: no metadata, the entry still counts */
	n = list_names(fd, names, LIST_MAX);
	if (n <= 0)
		return 0;
	for (size_t off = 0; off < (size_t)n && count < TS_FILE_XATTRS_MAX;) {
		const char *p = names + off, *key = p + PREFIX_LEN;
		size_t plen = strnlen(p, (size_t)n - off), klen;
		ssize_t vlen;
		int r;

		off += plen + 1;
		/* the key is what follows the prefix: not empty, and no `=` (the separator) */
		if (plen <= PREFIX_LEN || strncmp(p, PREFIX, PREFIX_LEN) != 0 || strchr(key, '='))
			continue;
		klen = plen - PREFIX_LEN;
		memcpy(kv, key, klen);
		kv[klen] = '=';
		vlen = fgetxattr(fd, p, kv + klen + 1, TS_FILE_XATTR_VALUE_MAX);
		if (vlen < 0 || memchr(kv + klen + 1, '\0', (size_t)vlen))
			continue; /* gone, too long, or binary: not a metadata string */
		kv[klen + 1 + (size_t)vlen] = '\0';
		r = ts_ctl_put_str(m, TS_T_XATTR, kv);
		if (r < 0)
			return r;
		count++;
	}
	return 0;
}

/* The XATTR fields of req, checked: "key=value" with the bounds of ctl.h. */
static int parse_pairs(const struct ts_ctl_msg *req, const char *shown, char **keys, char **vals,
		       size_t *n, struct ts_error *err)
{
	size_t pos = 0;
	const uint8_t *v;
	uint32_t len;
	uint16_t tag;
	int r;

	*n = 0;
	while ((r = ts_ctl_next(req, &pos, &tag, &v, &len)) > 0) {
		const char *eq;
		size_t klen;

		if (tag != TS_T_XATTR)
			continue;
		if (*n == TS_FILE_XATTRS_MAX)
			return ts_err(err, -E2BIG, "metadata of `%s`: more than %d keys", shown,
				      TS_FILE_XATTRS_MAX);
		eq = memchr(v, '=', len);
		if (!eq || memchr(v, '\0', len))
			return ts_err(err, -EINVAL, "metadata of `%s`: a malformed pair", shown);
		klen = (size_t)(eq - (const char *)v);
		if (klen == 0 || PREFIX_LEN + klen > TS_FILE_XATTR_NAME_MAX)
			return ts_err(err, -EINVAL, "metadata of `%s`: a key of 1 to %zu bytes",
				      shown, TS_FILE_XATTR_NAME_MAX - PREFIX_LEN);
		if (len - klen - 1 > TS_FILE_XATTR_VALUE_MAX)
			return ts_err(err, -E2BIG, "metadata of `%s`: a value over %d bytes", shown,
				      TS_FILE_XATTR_VALUE_MAX);
		keys[*n] = strndup((const char *)v, klen);
		vals[*n] = strndup(eq + 1, len - klen - 1);
		if (!keys[*n] || !vals[*n]) {
			free(keys[*n]);
			free(vals[*n]);
			return ts_err(err, -ENOMEM, "out of memory");
		}
		(*n)++;
	}
	return r < 0 ? ts_err(err, -EINVAL, "metadata of `%s`: a malformed request", shown) : 0;
}

/* Replace every user.e2b.* xattr of fd with keys/vals. */
static int replace(int fd, const char *shown, char **keys, char **vals, size_t n,
		   struct ts_error *err)
{
	_cleanup_free_ char *names = malloc(LIST_MAX);
	char name[TS_FILE_XATTR_NAME_MAX + 1];
	ssize_t len;

	if (!names)
		return ts_err(err, -ENOMEM, "out of memory");
	len = list_names(fd, names, LIST_MAX);
	if (len < 0 && len != -EOPNOTSUPP)
		return ts_err_errno(err, (int)len, "metadata of `%s`", shown);
	for (size_t off = 0; len > 0 && off < (size_t)len;) {
		const char *p = names + off;

		off += strnlen(p, (size_t)len - off) + 1;
		if (!strncmp(p, PREFIX, PREFIX_LEN) && fremovexattr(fd, p) < 0 && errno != ENODATA)
			return ts_err_errno(err, -errno, "metadata of `%s`: remove `%s`", shown, p);
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), PREFIX "%s", keys[i]);
		if (fsetxattr(fd, name, vals[i], strlen(vals[i]), 0) < 0)
			return ts_err_errno(err, -errno, "metadata of `%s`: set `%s`", shown,
					    keys[i]);
	}
	return 0;
}

int ts_files_op_set_xattrs(struct ts_files *f, const struct ts_ctl_msg *req, struct ts_error *err)
{
	char in[PATH_MAX];
	char *keys[TS_FILE_XATTRS_MAX], *vals[TS_FILE_XATTRS_MAX];
	struct ts_fpath p;
	_cleanup_close_ int pfd = -EBADF, fd = -EBADF;
	struct stat st;
	size_t n = 0;
	int r;

	r = ts_files_get_path(req, TS_T_PATH, in, err);
	if (r == 0)
		r = ts_files_path_parse(f, in, &p, err);
	if (r < 0)
		return r;
	pfd = p.name ? ts_files_open_parent(f, &p, false, err)
		     : ts_files_open_in_root(f, "", O_PATH | O_DIRECTORY);
	if (pfd < 0)
		return p.name ? pfd : ts_err_errno(err, pfd, "metadata of `/`");
	if (p.name && (r = ts_files_check_target(f, pfd, p.name, p.shown, err)) < 0)
		return r;
	if (fstatat(pfd, p.name ? p.name : "", &st,
		    AT_SYMLINK_NOFOLLOW | (p.name ? 0 : AT_EMPTY_PATH)) < 0)
		return ts_err_errno(err, -errno, "metadata of `%s`", p.shown);
	if (S_ISLNK(st.st_mode))
		return ts_err(err, -ELOOP, "metadata of `%s`: it is a symlink", p.shown);
	fd = open_for_xattrs(pfd, p.name ? p.name : "", st.st_mode);
	if (fd == -EOPNOTSUPP)
		return ts_err(err, -EINVAL, "metadata of `%s`: not a file or directory", p.shown);
	if (fd < 0)
		return ts_err_errno(err, fd, "metadata of `%s`", p.shown);
	r = parse_pairs(req, p.shown, keys, vals, &n, err);
	if (r == 0)
		r = replace(fd, p.shown, keys, vals, n, err);
	for (size_t i = 0; i < n; i++) {
		free(keys[i]);
		free(vals[i]);
	}
	if (r < 0)
		return r;
	r = ts_ctl_send_simple(f->conn, TS_CTL_OK, f->id);
	if (r < 0)
		f->dead = true;
	return r;
}
