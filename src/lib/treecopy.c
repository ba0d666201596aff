/* SPDX-License-Identifier: Apache-2.0 */
#include "treecopy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cleanup.h"

#define XATTR_LIST_MAX_LEN 65536
#define XATTR_VALUE_MAX_LEN 65536

struct walk {
	struct ts_treecopy *c;
	char path[4096]; /* relative to the top, for messages */
	size_t len;
	uid_t euid;
	gid_t egid;
};

/* The overlay's own name space: trusted.overlay.* (a mount in the initial user
 * namespace), user.overlay.* (a mount with `userxattr`, as the helper makes them). */
static bool overlay_xattr(const char *name)
{
	return !strncmp(name, "trusted.overlay.", 16) || !strncmp(name, "user.overlay.", 13);
}

static bool xattr_wanted(const char *name)
{
	/* The overlay's marks: only `opaque`, which a restore needs (a directory removed
	 * and made again hides the lower layers' entries). The others describe the lower
	 * stack the upper was written over (origin, impure, redirect, metacopy, nlink,
	 * whiteout, ...), which may differ at restore; never copied, so no snapshot carries
	 * overlay metadata into a layer. */
	if (overlay_xattr(name))
		return !strcmp(strchr(name, '.') + 1, "overlay.opaque");
	/* user.*: what the sandbox set (E2B's user.e2b.*). Nothing else: security.*
	 * (capabilities) would give a copied file privileges. */
	return !strncmp(name, "user.", 5);
}

/* Copy the wanted xattrs of src to dst (both fds of the same kind of inode). */
static int copy_xattrs(struct walk *w, int src, int dst, struct ts_error *err)
{
	_cleanup_free_ char *list = malloc(XATTR_LIST_MAX_LEN), *val = malloc(XATTR_VALUE_MAX_LEN);
	ssize_t n;

	if (!list || !val)
		return ts_err(err, -ENOMEM, "out of memory");
	n = flistxattr(src, list, XATTR_LIST_MAX_LEN);
	if (n < 0)
		return errno == ENOTSUP ? 0
					: ts_err_errno(err, -errno, "list xattrs of `%s`", w->path);
	for (char *p = list; p < list + n; p += strlen(p) + 1) {
		ssize_t v;

		if (!xattr_wanted(p))
			continue;
		v = fgetxattr(src, p, val, XATTR_VALUE_MAX_LEN);
		if (v < 0) {
			/* trusted.* is root's alone: a caller without it copies without them */
			if (errno == EPERM || errno == ENODATA || errno == EACCES)
				continue;
			return ts_err_errno(err, -errno, "read xattr `%s` of `%s`", p, w->path);
		}
		/* overlayfs sets "y" on an upper; "x" (a lower layer with xwhiteouts) is
		 * not an upper's */
		if (overlay_xattr(p) && (v != 1 || val[0] != 'y'))
			continue;
		if (fsetxattr(dst, p, val, (size_t)v, 0) < 0 && errno != EPERM && errno != ENOTSUP)
			return ts_err_errno(err, -errno, "set xattr `%s` on `%s`", p, w->path);
	}
	return 0;
}

/* The owner a copy of st gets: st's own, or the one every copy gets (set_owner). */
static void owner_of(const struct walk *w, const struct stat *st, uid_t *uid, gid_t *gid)
{
	*uid = w->c->set_owner ? (uid_t)w->c->owner_uid : st->st_uid;
	*gid = w->c->set_owner ? (gid_t)w->c->owner_gid : st->st_gid;
}

/* Owner, mode without setid bits, xattrs, times of st onto the open fd. */
static int set_meta_fd(struct walk *w, int src, int dst, const struct stat *st,
		       struct ts_error *err)
{
	struct timespec ts[2] = { st->st_atim, st->st_mtim };
	uid_t uid;
	gid_t gid;
	int r;

	owner_of(w, st, &uid, &gid);
	if ((uid != w->euid || gid != w->egid) && fchown(dst, uid, gid) < 0)
		return ts_err_errno(err, -errno, "chown `%s` to %u:%u", w->path, (unsigned)uid,
				    (unsigned)gid);
	/* never a setuid or setgid file or directory out of a sandbox's tree */
	if (fchmod(dst, st->st_mode & 01777) < 0)
		return ts_err_errno(err, -errno, "chmod `%s`", w->path);
	if ((r = copy_xattrs(w, src, dst, err)) < 0)
		return r;
	if (futimens(dst, ts) < 0)
		return ts_err_errno(err, -errno, "set times of `%s`", w->path);
	return 0;
}

/* Owner and times of a symlink, FIFO, socket or whiteout made at dst/name. */
static int set_meta_at(struct walk *w, int dst, const char *name, const struct stat *st,
		       struct ts_error *err)
{
	struct timespec ts[2] = { st->st_atim, st->st_mtim };
	uid_t uid;
	gid_t gid;

	owner_of(w, st, &uid, &gid);
	if ((uid != w->euid || gid != w->egid) &&
	    fchownat(dst, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
		return ts_err_errno(err, -errno, "chown `%s` to %u:%u", w->path, (unsigned)uid,
				    (unsigned)gid);
	if (!S_ISLNK(st->st_mode) && fchmodat(dst, name, st->st_mode & 01777, 0) < 0)
		return ts_err_errno(err, -errno, "chmod `%s`", w->path);
	if (utimensat(dst, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return ts_err_errno(err, -errno, "set times of `%s`", w->path);
	return 0;
}

/* Bytes [off, end) of in to the same offsets of out. */
static int copy_range(struct walk *w, int in, int out, off_t off, off_t end, bool *plain,
		      struct ts_error *err)
{
	char buf[65536];

	while (off < end) {
		off_t ooff = off;
		ssize_t n, m;

		if (!*plain) {
			n = copy_file_range(in, &off, out, &ooff, (size_t)(end - off), 0);
			if (n > 0)
				continue;
			if (n == 0)
				return 0; /* shrunk while we copied: what there was */
			if (errno != EXDEV && errno != ENOSYS && errno != EOPNOTSUPP &&
			    errno != EINVAL)
				return ts_err_errno(err, -errno, "copy `%s`", w->path);
			/* no copy_file_range between these file systems: read and write */
			*plain = true;
		}
		n = pread(in, buf,
			  (size_t)(end - off) < sizeof(buf) ? (size_t)(end - off) : sizeof(buf),
			  off);
		if (n < 0)
			return ts_err_errno(err, -errno, "read `%s`", w->path);
		if (n == 0)
			return 0;
		for (ssize_t o = 0; o < n; o += m) {
			m = pwrite(out, buf + o, (size_t)(n - o), off + o);
			if (m < 0)
				return ts_err_errno(err, -errno, "write `%s`", w->path);
		}
		off += n;
	}
	return 0;
}

/*
 * The contents of in into out (new, empty): cloned where the file system can, else its
 * data segments (SEEK_DATA/SEEK_HOLE) at their offsets and the size set last, so a sparse
 * file stays sparse (copy_file_range alone reads holes as zeros and writes them: a 1 TiB
 * sparse file a sandbox made in a second would fill the disk).
 */
static int copy_data(struct walk *w, int in, int out, off_t size, struct ts_error *err)
{
	bool plain = false;
	off_t off = 0;
	int r;

	if (size == 0 || ioctl(out, FICLONE, in) == 0)
		return 0;
	while (off < size) {
		off_t data = lseek(in, off, SEEK_DATA), hole;

		if (data < 0 && errno == ENXIO)
			break; /* a hole up to the end */
		if (data < 0) {
			if (errno != EINVAL && errno != EOPNOTSUPP)
				return ts_err_errno(err, -errno, "seek in `%s`", w->path);
			data = off; /* no SEEK_DATA here: all of it is data */
			hole = size;
		} else {
			hole = lseek(in, data, SEEK_HOLE);
			if (hole < 0)
				hole = size;
		}
		if (data >= size)
			break;
		if ((r = copy_range(w, in, out, data, hole < size ? hole : size, &plain, err)) < 0)
			return r;
		off = hole;
	}
	if (ftruncate(out, size) < 0)
		return ts_err_errno(err, -errno, "set the size of `%s`", w->path);
	return 0;
}

static int copy_file(struct walk *w, int sdir, int ddir, const char *name, const struct stat *st,
		     struct ts_error *err)
{
	_cleanup_close_ int in = -EBADF, out = -EBADF;
	struct stat now;
	int r;

	in = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (in < 0)
		return ts_err_errno(err, -errno, "open `%s`", w->path);
	if (fstat(in, &now) < 0)
		return ts_err_errno(err, -errno, "stat `%s`", w->path);
	if (!S_ISREG(now.st_mode) || now.st_ino != st->st_ino || now.st_dev != st->st_dev)
		return ts_err(err, -EAGAIN, "`%s` changed while it was copied", w->path);
	w->c->bytes += (uint64_t)now.st_size;
	if (w->c->max_bytes && w->c->bytes > w->c->max_bytes)
		return ts_err(err, -ENOSPC, "more than %llu bytes of files (at `%s`)",
			      (unsigned long long)w->c->max_bytes, w->path);
	out = openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return ts_err_errno(err, -errno, "create `%s`", w->path);
	if ((r = copy_data(w, in, out, now.st_size, err)) < 0)
		return r;
	return set_meta_fd(w, in, out, &now, err);
}

static int copy_dir(struct walk *w, int src, int dst, const struct stat *st, unsigned depth,
		    struct ts_error *err);

static int copy_entry(struct walk *w, int sdir, int ddir, const char *name, unsigned depth,
		      struct ts_error *err)
{
	struct stat st;
	size_t before = w->len;
	int r = 0;

	if (snprintf(w->path + w->len, sizeof(w->path) - w->len, "%s%s", w->len ? "/" : "", name) >=
	    (int)(sizeof(w->path) - w->len))
		return ts_err(err, -ENAMETOOLONG, "path too long below `%.200s`", w->path);
	w->len = strlen(w->path);
	if (++w->c->entries > w->c->max_entries && w->c->max_entries) {
		r = ts_err(err, -E2BIG, "more than %llu files (at `%s`)",
			   (unsigned long long)w->c->max_entries, w->path);
		goto out;
	}
	if (fstatat(sdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		r = ts_err_errno(err, -errno, "stat `%s`", w->path);
		goto out;
	}
	switch (st.st_mode & S_IFMT) {
	case S_IFREG:
		r = copy_file(w, sdir, ddir, name, &st, err);
		break;
	case S_IFDIR: {
		_cleanup_close_ int s = -EBADF, d = -EBADF;

		if (depth >= TS_TREECOPY_MAX_DEPTH) {
			r = ts_err(err, -ELOOP, "deeper than %d directories at `%s`",
				   TS_TREECOPY_MAX_DEPTH, w->path);
			break;
		}
		s = openat(sdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (s < 0) {
			r = ts_err_errno(err, -errno, "open `%s`", w->path);
			break;
		}
		if (mkdirat(ddir, name, 0700) < 0) {
			r = ts_err_errno(err, -errno, "create `%s`", w->path);
			break;
		}
		d = openat(ddir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (d < 0) {
			r = ts_err_errno(err, -errno, "open copy of `%s`", w->path);
			break;
		}
		r = copy_dir(w, s, d, &st, depth + 1, err);
		break;
	}
	case S_IFLNK: {
		char target[4096];
		ssize_t n = readlinkat(sdir, name, target, sizeof(target) - 1);

		if (n < 0) {
			r = ts_err_errno(err, -errno, "read link `%s`", w->path);
			break;
		}
		target[n] = '\0';
		if (symlinkat(target, ddir, name) < 0)
			r = ts_err_errno(err, -errno, "create link `%s`", w->path);
		else
			r = set_meta_at(w, ddir, name, &st, err);
		break;
	}
	case S_IFCHR:
	case S_IFIFO:
	case S_IFSOCK:
		/* a character device is an overlay whiteout (0/0) or refused */
		if (S_ISCHR(st.st_mode) && st.st_rdev != makedev(0, 0)) {
			r = ts_err(err, -EPERM, "`%s` is a device (%u:%u): not copied", w->path,
				   major(st.st_rdev), minor(st.st_rdev));
			break;
		}
		if (mknodat(ddir, name, (st.st_mode & S_IFMT) | 0600,
			    S_ISCHR(st.st_mode) ? makedev(0, 0) : 0) < 0)
			r = ts_err_errno(err, -errno, "create `%s`", w->path);
		else
			r = set_meta_at(w, ddir, name, &st, err);
		break;
	default:
		r = ts_err(err, -EPERM, "`%s` is a device: not copied", w->path);
	}
out:
	w->len = before;
	w->path[before] = '\0';
	return r;
}

static int copy_dir(struct walk *w, int src, int dst, const struct stat *st, unsigned depth,
		    struct ts_error *err)
{
	int dupfd = fcntl(src, F_DUPFD_CLOEXEC, 3);
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (dupfd < 0)
		return ts_err_errno(err, -errno, "open `%s`", w->path[0] ? w->path : ".");
	d = fdopendir(dupfd);
	if (!d) {
		r = ts_err_errno(err, -errno, "open `%s`", w->path[0] ? w->path : ".");
		close(dupfd);
		return r;
	}
	while (r == 0) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				r = ts_err_errno(err, -errno, "read `%s`",
						 w->path[0] ? w->path : ".");
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		r = copy_entry(w, src, dst, de->d_name, depth, err);
	}
	closedir(d);
	/* after the children: their creation changed the directory's times */
	return r < 0 ? r : set_meta_fd(w, src, dst, st, err);
}

int ts_treecopy(int src_fd, int dst_fd, struct ts_treecopy *c, struct ts_error *err)
{
	struct walk w = { .c = c, .euid = geteuid(), .egid = getegid() };
	struct stat st;

	if (fstat(src_fd, &st) < 0)
		return ts_err_errno(err, -errno, "stat the tree's top");
	if (!S_ISDIR(st.st_mode))
		return ts_err(err, -ENOTDIR, "the tree's top is not a directory");
	return copy_dir(&w, src_fd, dst_fd, &st, 0, err);
}
