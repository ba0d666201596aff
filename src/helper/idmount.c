/* SPDX-License-Identifier: Apache-2.0 */
#include "idmount.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "syscall.h"
#include "util.h"

/* The host id the sandbox's user (1000 inside) has, from a map; -1 if unmapped. */
static long long user_outside(const struct ts_idmap_line *map, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (map[i].inside <= 1000 && 1000 - map[i].inside < map[i].count)
			return (long long)(map[i].outside + (1000 - map[i].inside));
	return -1;
}

/*
 * A user namespace fd with the given uid_map and gid_map contents: held by a child that
 * only waits, so that nothing ever runs in it.
 */
static int mapping_userns(const char *uid_map, const char *gid_map, struct ts_error *err)
{
	int go[2] = { -1, -1 }, ready[2] = { -1, -1 }, fd = -1, r = 0, status;
	char path[64];
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(ready, O_CLOEXEC) < 0) {
		r = ts_err_errno(err, -errno, "pipe");
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		r = ts_err_errno(err, -errno, "fork for the id-mapped mount's user namespace");
		goto out;
	}
	if (pid == 0) {
		char b;

		/* only our ends: the read of go must see the parent's close */
		close(go[1]);
		close(ready[0]);
		b = unshare(CLONE_NEWUSER) == 0 ? 'r' : 'x';

		(void)!write(ready[1], &b, 1);
		(void)!read(go[0], &b, 1);
		_exit(0);
	}
	close(ready[1]);
	ready[1] = -1;
	{
		char b = 0;

		if (read(ready[0], &b, 1) != 1 || b != 'r')
			r = ts_err(err, -EPERM, "user namespace for an id-mapped mount");
	}
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	if (r == 0 && (r = ts_write_file_at(AT_FDCWD, path, uid_map)) < 0)
		ts_err_errno(err, r, "write `%s`", path);
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	if (r == 0 && (r = ts_write_file_at(AT_FDCWD, path, gid_map)) < 0)
		ts_err_errno(err, r, "write `%s`", path);
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	if (r == 0 && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		r = ts_err_errno(err, -errno, "open `%s`", path);
	close(go[1]);
	go[1] = -1;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
out:
	for (int i = 0; i < 2; i++) {
		if (go[i] >= 0)
			close(go[i]);
		if (ready[i] >= 0)
			close(ready[i]);
	}
	if (r < 0 && fd >= 0)
		close(fd);
	return r < 0 ? r : fd;
}

static int make_tree(struct ts_mount_op *op, long long x, long long y, struct ts_error *err)
{
	_cleanup_close_ int userns = -EBADF, tree = -EBADF;
	struct mount_attr ma = { .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID |
					     MOUNT_ATTR_NODEV };

	char uid_map[64], gid_map[64];

	snprintf(uid_map, sizeof(uid_map), "%lld %lld 1\n", op->map_uid, x);
	snprintf(gid_map, sizeof(gid_map), "%lld %lld 1\n", op->map_gid, y);
	userns = mapping_userns(uid_map, gid_map, err);
	if (userns < 0)
		return userns;
	/* this mount only: an id mapping applies to one file system, and a mount below the
	 * workspace would be another */
	tree = op->src_fd >= 0
		       ? ts_open_tree(op->src_fd, "",
				      AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)
		       : ts_open_tree(AT_FDCWD, op->src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0)
		return ts_err_errno(err, -errno, "open `%s` for an id-mapped bind", op->src);
	if (op->kind == TS_MOUNT_RO_BIND)
		ma.attr_set |= MOUNT_ATTR_RDONLY;
	ma.userns_fd = (uint64_t)userns;
	if (ts_mount_setattr(tree, "", AT_EMPTY_PATH, &ma) < 0)
		return ts_err_errno(err, -errno, "id-map `%s`", op->src);
	op->idmapped_fd = TAKE_FD(tree);
	return 0;
}

int ts_idmount_prepare(struct ts_helper_ctx *ctx, struct ts_error *err)
{
	long long x = user_outside(ctx->uid_map, ctx->n_uid_map);
	long long y = user_outside(ctx->gid_map, ctx->n_gid_map);

	for (size_t i = 0; i < ctx->n_ops; i++) {
		struct ts_mount_op *op = &ctx->ops[i];
		int r;

		if (op->map_uid < 0)
			continue;
		if (x <= 0 || y <= 0)
			return ts_err(
				err, -EINVAL,
				"--bind-owner `%s`: the sandbox has no user 1000 mapped to an "
				"unprivileged host id",
				op->src);
		r = make_tree(op, x, y, err);
		if (r == -EINVAL || r == -EOPNOTSUPP || r == -ENOSYS || r == -EPERM) {
			/* this kernel or file system cannot: a plain bind, said so */
			fprintf(stderr,
				"toren-sandbox-helper: warning: %s; `%s` is bound as it is: its "
				"owner (uid %lld) is not the sandbox's user inside\n",
				err->msg, op->src, op->map_uid);
			ts_err_clear(err);
			op->map_uid = op->map_gid = -1;
			continue;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* Whether the host id (as this namespace sees it) is the outside of a map line. */
static bool outside_mapped(const struct ts_idmap_line *map, size_t n, unsigned long id)
{
	for (size_t i = 0; i < n; i++)
		if (id >= map[i].outside && id - map[i].outside < map[i].count)
			return true;
	return false;
}

static int format_map(char *buf, size_t size, const struct ts_idmap_line *map, size_t n)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%lu %lu %lu\n", map[i].inside,
					map[i].outside, map[i].count);
	return len < size ? 0 : -E2BIG;
}

/*
 * The layer at path, opened without following a symbolic link in any of its components
 * (RESOLVE_NO_SYMLINKS): the path may run through directories another user owns (root's
 * `--image /home/alice/img`), who could otherwise swap a component for a link to `/`
 * between our look and the mount, and have the host's root file system id-mapped with
 * its owner-only files the sandbox root's. -ELOOP for a path with a link in it.
 */
static int open_layer(const char *path, struct stat *sb, struct ts_error *err)
{
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	_cleanup_close_ int fd = ts_openat2(AT_FDCWD, path, &how);

	if (fd < 0)
		return ts_err_errno(err, -errno, "open layer `%s` (no symbolic links)", path);
	if (fstat(fd, sb) < 0)
		return ts_err_errno(err, -errno, "stat layer `%s`", path);
	return TAKE_FD(fd);
}

/* The layer open as fd as a detached, read-only, nosuid, nodev tree id-mapped through
 * userns. */
static int lower_tree(int fd, const char *path, int userns, struct ts_error *err)
{
	_cleanup_close_ int tree = -EBADF;
	struct mount_attr ma = { .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY |
					     MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
				 .userns_fd = (uint64_t)userns };

	/* this mount only, as for binds: a mount below the layer would be another */
	tree = ts_open_tree(fd, "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0)
		return ts_err_errno(err, -errno, "open layer `%s` for an id-mapped mount", path);
	if (ts_mount_setattr(tree, "", AT_EMPTY_PATH, &ma) < 0)
		return ts_err_errno(err, -errno, "id-map layer `%s`", path);
	return TAKE_FD(tree);
}

int ts_idmount_prepare_lowers(struct ts_helper_ctx *ctx, struct ts_error *err)
{
	_cleanup_close_ int userns = -EBADF;
	char uid_map[TS_HELPER_MAX_IDMAP * 40], gid_map[TS_HELPER_MAX_IDMAP * 40];
	bool tried = false;

	for (size_t i = 0; i < ctx->n_ops; i++) {
		struct ts_mount_op *op = &ctx->ops[i];

		if (op->kind != TS_MOUNT_OVERLAY)
			continue;
		for (size_t k = 0; k < op->n_lowers; k++) {
			_cleanup_close_ int layer = -EBADF;
			struct stat sb;
			int fd;

			/* For the plain layers a hint only (which option): the child opens
			 * them again for the mount itself. An id-mapped one is made from this
			 * fd, and the child checks that it opened the same directory. */
			if (stat(op->lowers[k], &sb) < 0 ||
			    (outside_mapped(ctx->uid_map, ctx->n_uid_map, sb.st_uid) &&
			     outside_mapped(ctx->gid_map, ctx->n_gid_map, sb.st_gid)))
				continue;
			op->lower_unmapped[k] = true;
			/* Only below an upper, where a copy-up has to give its copy an owner
			 * the sandbox has (else EOVERFLOW); and only as the host's root, the
			 * one who may id-map a mount of the host's file systems. */
			if (!op->upper || geteuid() != 0 || ctx->newidmap)
				continue;
			if (!tried) {
				tried = true;
				if (format_map(uid_map, sizeof(uid_map), ctx->uid_map,
					       ctx->n_uid_map) < 0 ||
				    format_map(gid_map, sizeof(gid_map), ctx->gid_map,
					       ctx->n_gid_map) < 0)
					return ts_err(err, -E2BIG, "id maps too long");
				userns = mapping_userns(uid_map, gid_map, err);
				if (userns < 0) {
					/* not the initial namespace's root (`unshare -r`) */
					ts_err_clear(err);
					userns = -EBADF;
				}
			}
			if (userns < 0)
				continue;
			layer = open_layer(op->lowers[k], &sb, err);
			if (layer == -ELOOP) {
				fprintf(stderr,
					"toren-sandbox-helper: warning: layer `%s` is reached "
					"through a symbolic link: not id-mapped (its files belong to "
					"ids the sandbox does not have: a change to one fails with "
					"EOVERFLOW)\n",
					op->lowers[k]);
				ts_err_clear(err);
				continue;
			}
			if (layer < 0)
				return layer;
			if (outside_mapped(ctx->uid_map, ctx->n_uid_map, sb.st_uid) &&
			    outside_mapped(ctx->gid_map, ctx->n_gid_map, sb.st_gid))
				continue; /* changed since the stat: the child will see */
			fd = lower_tree(layer, op->lowers[k], userns, err);
			if (fd == -EINVAL || fd == -EOPNOTSUPP || fd == -ENOSYS || fd == -EPERM) {
				/* this kernel or file system cannot: the layer stays as it is */
				fprintf(stderr,
					"toren-sandbox-helper: warning: %s; its files belong to "
					"ids the sandbox does not have: a change to one fails with "
					"EOVERFLOW\n",
					err->msg);
				ts_err_clear(err);
				continue;
			}
			if (fd < 0)
				return fd;
			op->lower_idmapped_fds[k] = fd;
			op->lower_dev[k] = sb.st_dev;
			op->lower_ino[k] = sb.st_ino;
			op->lower_unmapped[k] = false;
		}
	}
	return 0;
}
