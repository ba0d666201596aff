/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The file worker's paths (see files.h): parsing, resolution inside the root, the
 * protected-path checks, and the walks that never follow a link or cross a mount.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "error.h"
#include "files-internal.h"
#include "syscall.h"

/* Deeper trees are refused by remove, rename and the mount scan: one fd per level. */
#define FILES_WALK_MAX 256

int ts_files_get_path(const struct ts_ctl_msg *m, uint16_t tag, char *buf, struct ts_error *err)
{
	int r = ts_ctl_get_str(m, tag, buf, PATH_MAX);

	if (r == -ENOENT)
		return ts_err(err, -EINVAL, "request without a path");
	if (r == -ENAMETOOLONG)
		return ts_err(err, r, "path longer than %d bytes", PATH_MAX - 1);
	if (r < 0)
		return ts_err(err, -EINVAL, "malformed path (a NUL byte?)");
	return 0;
}

/* Append the components of s to p->rel; see files.h for what is refused. */
static int path_append(struct ts_fpath *p, size_t *len, const char *s, struct ts_error *err)
{
	while (*s) {
		const char *e;
		size_t n;

		while (*s == '/')
			s++;
		if (!*s)
			break;
		e = strchrnul(s, '/');
		n = (size_t)(e - s);
		if (n == 1 && s[0] == '.') {
			s = e;
			continue;
		}
		/* Refused rather than resolved: a client that writes `a/../b` is confused or
		 * probing, and lexical `..` handling is where path bugs live (FA-01). */
		if (n == 2 && s[0] == '.' && s[1] == '.')
			return ts_err(err, -EINVAL, "`%s`: `..` is not allowed in paths", p->shown);
		if (n > NAME_MAX)
			return ts_err(err, -ENAMETOOLONG,
				      "`%s`: a component is longer than %d bytes", p->shown,
				      NAME_MAX);
		/* room for a leading '/' in messages: "/" + rel fits in PATH_MAX */
		if (*len + 1 + n >= sizeof(p->rel) - 1)
			return ts_err(err, -ENAMETOOLONG, "`%s`: path too long", p->shown);
		if (*len)
			p->rel[(*len)++] = '/';
		memcpy(p->rel + *len, s, n);
		*len += n;
		p->rel[*len] = '\0';
		s = e;
	}
	return 0;
}

int ts_files_path_parse(const struct ts_files *f, const char *in, struct ts_fpath *p,
			struct ts_error *err)
{
	size_t len = 0;
	char *slash;
	int r;

	snprintf(p->shown, sizeof(p->shown), "%s", in);
	p->rel[0] = '\0';
	p->name = NULL;
	snprintf(p->parent, sizeof(p->parent), ".");
	if (!in[0])
		return ts_err(err, -EINVAL, "empty path");
	p->slash = in[strlen(in) - 1] == '/';
	if (in[0] != '/') {
		r = path_append(p, &len, f->cfg->home ? f->cfg->home : "/", err);
		if (r < 0)
			return r;
	}
	r = path_append(p, &len, in, err);
	if (r < 0 || len == 0)
		return r;
	slash = strrchr(p->rel, '/');
	if (!slash) {
		p->name = p->rel;
	} else {
		memcpy(p->parent, p->rel, (size_t)(slash - p->rel));
		p->parent[slash - p->rel] = '\0';
		p->name = slash + 1;
	}
	return 0;
}

static int openat2_retry(int dfd, const char *path, struct open_how *how)
{
	/* EAGAIN: a rename or mount raced the scoped lookup; the kernel asks for a retry. */
	for (int i = 0; i < 64; i++) {
		int fd = ts_openat2(dfd, path, how);

		if (fd >= 0)
			return fd;
		if (errno != EAGAIN)
			return -errno;
	}
	return -EAGAIN;
}

/*
 * Without openat2 (a seccomp filter that refuses it, as the setid guard does, or an old
 * kernel), the same resolutions done by us, one component at a time: every lookup is
 * openat(O_PATH | O_NOFOLLOW) relative to the directory reached so far, so the kernel
 * never follows a link by itself (no magic link either: /proc's links are read as text
 * and resolved like any other, inside the root), and `..` at the root stays there.
 */
#define FILES_MAX_LINKS 40
#define PROC_ROOT_INO 1 /* the inode of procfs's top directory */

/* The last component of flags' open: ELOOP for a symlink unless O_PATH | O_NOFOLLOW. */
static int open_last(int dfd, const char *name, uint64_t flags)
{
	int fd = openat(dfd, name, (int)flags | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return -errno;
	if ((flags & O_PATH) && !(flags & O_NOFOLLOW) && fstat(fd, &st) == 0 &&
	    S_ISLNK(st.st_mode)) {
		close(fd);
		return -ELOOP;
	}
	return fd;
}

/* RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS by hand: plain components, no link, no `..`. */
static int walk_beneath(int dfd, const char *path, uint64_t flags)
{
	_cleanup_free_ char *copy = strdup(path);
	char *save = NULL, *c, *next;
	int cur = -EBADF;

	if (!copy)
		return -ENOMEM;
	for (c = strtok_r(copy, "/", &save); c; c = next) {
		int fd;

		next = strtok_r(NULL, "/", &save);
		if (!strcmp(c, ".."))
			fd = -EXDEV;
		else if (!next)
			fd = open_last(cur >= 0 ? cur : dfd, c, flags);
		else if ((fd = openat(cur >= 0 ? cur : dfd, c,
				      O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			fd = errno == ENOTDIR ? -ELOOP : -errno; /* a symlink, or a file */
		if (cur >= 0)
			close(cur);
		if (fd < 0)
			return fd;
		cur = fd;
	}
	return cur >= 0 ? cur : openat(dfd, ".", (int)flags | O_CLOEXEC);
}

/*
 * A /proc link that is no path (fd/N, cwd, root, exe, ns/..., map_files/...: the kernel
 * jumps to the object itself): on procfs, every link below its top directory (the
 * top's own, `self`, `thread-self`, `mounts`, `net`, are plain links).
 */
static bool magic_link(int dirfd, int linkfd)
{
	struct statfs sfs;
	struct stat dst;

	if (fstatfs(linkfd, &sfs) < 0 || sfs.f_type != PROC_SUPER_MAGIC)
		return false;
	return fstat(dirfd, &dst) < 0 || dst.st_ino != PROC_ROOT_INO;
}

/*
 * The kernel's fs.protected_symlinks, which our own walk would otherwise bypass: a link
 * in a sticky, world-writable directory (/tmp) is followed only when it belongs to us or
 * to the directory's owner. Applied whatever the host's setting: root of a two-user
 * sandbox (cp --user root) must never follow a link the user planted in /tmp.
 */
static bool may_follow(int dirfd, const struct stat *link)
{
	struct stat dst;

	if (fstat(dirfd, &dst) < 0)
		return false;
	if (!(dst.st_mode & S_ISVTX) || !(dst.st_mode & S_IWOTH))
		return true;
	return link->st_uid == geteuid() || link->st_uid == dst.st_uid;
}

/* RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS by hand. */
static int walk_in_root(int root, const char *rel, uint64_t flags)
{
	char work[2][2 * PATH_MAX], *rest;
	struct stat rst;
	int cur, links = 0, which = 0;

	if (strlen(rel) >= sizeof(work[0]) || fstat(root, &rst) < 0)
		return strlen(rel) >= sizeof(work[0]) ? -ENAMETOOLONG : -errno;
	snprintf(work[0], sizeof(work[0]), "%s", rel);
	rest = work[0];
	cur = openat(root, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return -errno;
	for (;;) {
		char *c = rest, *slash;
		struct stat st;
		bool last;
		int fd;

		while (*c == '/')
			c++;
		if (!*c) /* "" or a trailing slash: the directory itself */
			break;
		slash = strchr(c, '/');
		if (slash)
			*slash = '\0';
		rest = slash ? slash + 1 : c + strlen(c);
		while (*rest == '/')
			rest++;
		last = !*rest;
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			/* the root's parent is the root */
			if (fstat(cur, &st) == 0 && st.st_dev == rst.st_dev &&
			    st.st_ino == rst.st_ino)
				continue;
			fd = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		} else {
			fd = openat(cur, c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		}
		if (fd < 0) {
			int r = -errno;

			close(cur);
			return r;
		}
		if (fstat(fd, &st) < 0 || (S_ISLNK(st.st_mode) && last && (flags & O_NOFOLLOW))) {
			/* O_NOFOLLOW: the link itself (O_PATH) or ELOOP, as openat2 would */
			close(fd);
			fd = open_last(cur, c, flags);
			close(cur);
			return fd;
		}
		if (S_ISLNK(st.st_mode) && magic_link(cur, fd)) {
			close(fd);
			close(cur);
			return -ELOOP; /* as RESOLVE_NO_MAGICLINKS */
		}
		if (S_ISLNK(st.st_mode) && !may_follow(cur, &st)) {
			close(fd);
			close(cur);
			return -EACCES; /* as the kernel's fs.protected_symlinks */
		}
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX], *next = work[!which];
			ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);

			close(fd);
			if (n < 0 || ++links > FILES_MAX_LINKS ||
			    (size_t)n + 1 + strlen(rest) >= sizeof(work[0])) {
				close(cur);
				return n < 0			 ? -errno
				       : links > FILES_MAX_LINKS ? -ELOOP
								 : -ENAMETOOLONG;
			}
			/* target + "/" + rest, the length checked above */
			memcpy(next, target, (size_t)n);
			next[n] = '/';
			memmove(next + n + 1, rest, strlen(rest) + 1);
			which = !which;
			rest = next;
			if (target[0] == '/') {
				close(cur);
				cur = openat(root, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
				if (cur < 0)
					return -errno;
			}
			continue;
		}
		if (last) {
			close(fd);
			fd = open_last(cur, c, flags);
			close(cur);
			return fd;
		}
		close(cur);
		if (!S_ISDIR(st.st_mode)) {
			close(fd);
			return -ENOTDIR;
		}
		cur = fd;
	}
	/* the directory reached, opened as asked */
	{
		int fd = openat(cur, ".", (int)flags | O_CLOEXEC);

		close(cur);
		return fd < 0 ? -errno : fd;
	}
}

int ts_files_open_in_root(const struct ts_files *f, const char *rel, uint64_t flags)
{
	struct open_how how = { .flags = flags | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	int fd = openat2_retry(f->root, rel[0] ? rel : ".", &how);

	return fd == -ENOSYS ? walk_in_root(f->root, rel, flags) : fd;
}

int ts_files_open_step(int dfd, const char *name, uint64_t flags)
{
	struct open_how how = { .flags = flags | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					   RESOLVE_NO_MAGICLINKS };
	int fd = openat2_retry(dfd, name, &how);

	return fd == -ENOSYS ? walk_beneath(dfd, name, flags) : fd;
}

static bool name_protected(const struct ts_files *f, const char *name)
{
	/* Flags 0 as in protect.c: a leading `*` also matches a leading dot. */
	for (size_t i = 0; i < f->cfg->n_protect; i++)
		if (fnmatch(f->cfg->protect_patterns[i], name, 0) == 0)
			return true;
	return false;
}

/* statx of dfd/name itself (never followed); name "" is dfd. 0 or -errno. */
static int statx_at(int dfd, const char *name, struct statx *sx)
{
	int flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (name[0] ? 0 : AT_EMPTY_PATH);

	if (statx(dfd, name, flags,
		  STATX_TYPE | STATX_MODE | STATX_NLINK | STATX_INO | STATX_MNT_ID, sx) < 0)
		return -errno;
	return 0;
}

/* Is the entry sx (found in directory dfd) the root of a mount? 1, 0 or -errno. */
static int is_mount_root(int dfd, const struct statx *sx)
{
	struct statx px;
	int r;

	if (sx->stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)
		return !!(sx->stx_attributes & STATX_ATTR_MOUNT_ROOT);
	/* Before Linux 5.8: a mount root has another mount id than its directory. */
	r = statx_at(dfd, "", &px);
	if (r < 0)
		return r;
	if ((sx->stx_mask & STATX_MNT_ID) && (px.stx_mask & STATX_MNT_ID))
		return sx->stx_mnt_id != px.stx_mnt_id;
	return sx->stx_dev_major != px.stx_dev_major || sx->stx_dev_minor != px.stx_dev_minor;
}

/*
 * May a write-like operation touch dfd/name? Its name must not be protected and it must
 * not be a mount root: protected files are read-only bind mounts of themselves, and a
 * mount point is never ours to replace or remove. An absent entry is fine.
 */
int ts_files_check_target(const struct ts_files *f, int dfd, const char *name, const char *shown,
			  struct ts_error *err)
{
	struct statx sx;
	int r;

	if (name_protected(f, name))
		return ts_err(err, -EPERM, "`%s` is protected", shown);
	r = statx_at(dfd, name, &sx);
	if (r == -ENOENT)
		return 0;
	if (r == 0)
		r = is_mount_root(dfd, &sx);
	if (r < 0)
		return ts_err_errno(err, r, "stat `%s`", shown);
	if (r > 0)
		return ts_err(err, -EPERM, "`%s` is protected: it is a mount point", shown);
	return 0;
}

/* Undo mountinfo's octal escapes (\040 for a space, ...) of the field at s into out. */
static void mountinfo_field(const char *s, char *out, size_t len)
{
	size_t o = 0;

	while (*s && *s != ' ' && *s != '\n' && o + 1 < len) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			out[o++] = (char)(((s[1] - '0') << 6) | ((s[2] - '0') << 3) | (s[3] - '0'));
			s += 4;
		} else {
			out[o++] = *s++;
		}
	}
	out[o] = '\0';
}

/*
 * Is the inode of st (a regular file) also mounted somewhere, i.e. a protected file
 * reached through a hard link (FA-09)? Mount points are read from this process's own
 * mountinfo and looked up in its own root: they are where the kernel put them. 1, 0, or
 * -errno when that cannot be told.
 */
int ts_files_inode_mounted(const struct stat *st)
{
	_cleanup_fclose_ FILE *mi = fopen("/proc/self/mountinfo", "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;

	if (!mi)
		return -errno;
	while (getline(&line, &cap, mi) > 0) {
		char mp[PATH_MAX];
		struct stat ms;
		int n = 0;

		/* id parent major:minor root mount-point ... */
		if (sscanf(line, "%*u %*u %*u:%*u %*s %n", &n) < 0 || n == 0)
			continue;
		mountinfo_field(line + n, mp, sizeof(mp));
		if (mp[0] != '/')
			continue;
		if (fstatat(AT_FDCWD, mp, &ms, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT) == 0 &&
		    S_ISREG(ms.st_mode) && ms.st_dev == st->st_dev && ms.st_ino == st->st_ino)
			return 1;
	}
	return ferror(mi) ? -EIO : 0;
}

/*
 * Refuse to remove or move a directory that holds a mount root anywhere below it (a
 * protected file deep in the tree, PP-05). path holds the shown path of the directory
 * (len bytes) and is extended in place. fd is an O_RDONLY directory fd and is consumed.
 */
static int scan_mounts(int fd, char *path, size_t len, int depth, struct ts_error *err)
{
	struct dirent *de;
	DIR *d = fdopendir(fd);
	int r = 0;

	if (!d) {
		r = -errno;
		close(fd);
		return ts_err_errno(err, r, "read `%s`", path);
	}
	while ((errno = 0, de = readdir(d))) {
		struct statx sx;
		int sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (len + 1 + strlen(de->d_name) >= PATH_MAX) {
			r = ts_err(err, -ENAMETOOLONG, "`%s`: a path below is too long", path);
			break;
		}
		snprintf(path + len, PATH_MAX - len, "/%s", de->d_name);
		r = statx_at(dirfd(d), de->d_name, &sx);
		if (r == -ENOENT) {
			r = 0;
			path[len] = '\0';
			continue;
		}
		if (r == 0)
			r = is_mount_root(dirfd(d), &sx);
		if (r < 0) {
			ts_err_errno(err, r, "stat `%s`", path);
			break;
		}
		if (r > 0) {
			r = ts_err(err, -EPERM, "`%s` is protected: it is a mount point", path);
			break;
		}
		if (S_ISDIR(sx.stx_mode)) {
			if (depth + 1 >= FILES_WALK_MAX) {
				r = ts_err(err, -ELOOP, "`%s`: more than %d levels of directories",
					   path, FILES_WALK_MAX);
				break;
			}
			sub = openat(dirfd(d), de->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				r = scan_mounts(sub, path, strlen(path), depth + 1, err);
				if (r < 0)
					break;
			} else if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP) {
				r = ts_err_errno(err, -errno, "open `%s`", path);
				break;
			}
		}
		path[len] = '\0';
	}
	if (r == 0 && errno)
		r = ts_err_errno(err, -errno, "read `%s`", path);
	closedir(d);
	path[len] = '\0';
	return r;
}

/*
 * rm -rf dfd/name: unlinkat on O_NOFOLLOW directory fds, so a symlink swapped in
 * anywhere is removed as a link and never followed (FA-08); a mount root met on the way
 * (the scan before ran earlier, the tree may have changed since) stops the walk.
 */
static int rm_tree(int dfd, const char *name, char *path, size_t len, int depth,
		   struct ts_error *err)
{
	struct statx sx;
	struct dirent *de;
	DIR *d;
	int fd, r;

	r = statx_at(dfd, name, &sx);
	if (r == -ENOENT)
		return 0;
	if (r == 0)
		r = is_mount_root(dfd, &sx);
	if (r < 0)
		return ts_err_errno(err, r, "stat `%s`", path);
	if (r > 0)
		return ts_err(err, -EPERM, "`%s` is protected: it is a mount point", path);
	if (!S_ISDIR(sx.stx_mode))
		goto unlink_entry;
	if (depth >= FILES_WALK_MAX)
		return ts_err(err, -ELOOP, "`%s`: more than %d levels of directories", path,
			      FILES_WALK_MAX);
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && (errno == ENOTDIR || errno == ELOOP))
		goto unlink_entry; /* replaced by a non-directory since the statx */
	if (fd < 0)
		return errno == ENOENT ? 0 : ts_err_errno(err, -errno, "open `%s`", path);
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		return ts_err_errno(err, r, "read `%s`", path);
	}
	while ((errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (len + 1 + strlen(de->d_name) >= PATH_MAX) {
			r = ts_err(err, -ENAMETOOLONG, "`%s`: a path below is too long", path);
			break;
		}
		snprintf(path + len, PATH_MAX - len, "/%s", de->d_name);
		r = rm_tree(dirfd(d), de->d_name, path, strlen(path), depth + 1, err);
		path[len] = '\0';
		if (r < 0)
			break;
	}
	if (r == 0 && errno)
		r = ts_err_errno(err, -errno, "read `%s`", path);
	closedir(d);
	if (r < 0)
		return r;
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return ts_err_errno(err, -errno, "remove `%s`", path);
	return 0;
unlink_entry:
	if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
		return ts_err_errno(err, -errno, "remove `%s`", path);
	return 0;
}

/*
 * Create the missing directories of rel (a normalized path). The longest part of rel that
 * exists is opened as any parent is, following symlinks inside the root; below it each
 * missing directory is made and entered one component at a time with openat2(
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), so a symlink met (or swapped in) on the way
 * stops the walk with ELOOP instead of leading the next mkdirat somewhere else (FA-08).
 * Returns an O_PATH fd of rel.
 */
static int mkdir_walk(const struct ts_files *f, const char *rel, const char *shown,
		      struct ts_error *err)
{
	char buf[PATH_MAX], done[PATH_MAX];
	_cleanup_close_ int dfd = -EBADF;
	size_t have;
	char *save = NULL;

	snprintf(buf, sizeof(buf), "%s", rel);
	for (have = strlen(buf);;) {
		char *slash;

		dfd = ts_files_open_in_root(f, have ? buf : "", O_PATH | O_DIRECTORY);
		if (dfd >= 0 || dfd != -ENOENT || have == 0)
			break;
		slash = strrchr(buf, '/');
		have = slash ? (size_t)(slash - buf) : 0;
		buf[have] = '\0';
	}
	if (dfd < 0)
		return ts_err_errno(err, dfd, "`%s`: open `/%s`", shown, buf);
	snprintf(done, sizeof(done), "%s%s", have ? "/" : "", buf);
	snprintf(buf, sizeof(buf), "%s", rel + have + (rel[have] == '/'));
	for (char *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		size_t dl = strlen(done);
		int fd;

		snprintf(done + dl, sizeof(done) - dl, "/%s", c);
		fd = ts_files_open_step(dfd, c, O_PATH | O_DIRECTORY);
		if (fd == -ENOENT) {
			/* a protected name is never created, as a directory neither (PP-12) */
			if (name_protected(f, c))
				return ts_err(err, -EPERM, "`%s` is protected", done);
			if (mkdirat(dfd, c, 0755) < 0 && errno != EEXIST)
				return ts_err_errno(err, -errno, "create `%s`", done);
			fd = ts_files_open_step(dfd, c, O_PATH | O_DIRECTORY);
		}
		if (fd == -ELOOP)
			return ts_err(
				err, -ELOOP,
				"`%s`: `%s` is a symlink (missing directories are created only "
				"below directories)",
				shown, done);
		if (fd == -ENOTDIR)
			return ts_err(err, -ENOTDIR, "`%s`: `%s` is not a directory", shown, done);
		if (fd < 0)
			return ts_err_errno(err, fd, "open `%s`", done);
		close(dfd);
		dfd = fd;
	}
	return TAKE_FD(dfd);
}

/*
 * An O_PATH fd of p's parent directory, found following symlinks inside the root; with
 * create, missing parents are made by mkdir_walk.
 */
int ts_files_open_parent(const struct ts_files *f, const struct ts_fpath *p, bool create,
			 struct ts_error *err)
{
	int fd = ts_files_open_in_root(f, p->parent, O_PATH | O_DIRECTORY);

	if (fd >= 0)
		return fd;
	if (fd == -ENOENT && create)
		return mkdir_walk(f, p->parent, p->shown, err);
	return ts_err_errno(err, fd, "`%s`: open its directory", p->shown);
}

/* Refuse a directory that holds a mount root; fine for anything else. */
int ts_files_check_subtree(int pfd, const char *name, const char *shown, struct ts_error *err)
{
	char path[PATH_MAX];
	struct statx sx;
	int fd, r;

	r = statx_at(pfd, name, &sx);
	if (r < 0)
		return ts_err_errno(err, r, "`%s`", shown);
	if (!S_ISDIR(sx.stx_mode))
		return 0;
	fd = ts_files_open_step(pfd, name, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return ts_err_errno(err, fd, "open `%s`", shown);
	snprintf(path, sizeof(path), "%s", shown);
	while (strlen(path) > 1 && path[strlen(path) - 1] == '/')
		path[strlen(path) - 1] = '\0';
	return scan_mounts(fd, path, strlen(path), 0, err);
}

int ts_files_rm_tree(int dfd, const char *name, const char *shown, struct ts_error *err)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s", shown);
	return rm_tree(dfd, name, path, strlen(path), 0, err);
}
