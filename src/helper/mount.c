/* SPDX-License-Identifier: Apache-2.0 */
#include "mount.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "syscall.h"

/* A host mount point we may cover in our private namespace while the new root is built.
 * Every source was opened before, so covering it hides nothing we still need. */
#define TS_STAGING "/tmp"

static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };

/* /proc files that leak kernel state or act on the host: covered with /dev/null. */
static const char *const proc_masked_files[] = {
	"kcore",       "kallsyms",	"keys",	       "key-users",  "timer_list",   "timer_stats",
	"sched_debug", "latency_stats", "kmsg",	       "kpagecount", "kpageflags",   "kpagecgroup",
	"config.gz",   "sysrq-trigger", "vmallocinfo", "slabinfo",   "pagetypeinfo", "buddyinfo",
};
/* /proc directories hidden under an empty read-only tmpfs. */
static const char *const proc_masked_dirs[] = { "acpi", "asound", "scsi", "driver", "tty/driver" };
/* PID 1's (init's) files that change how the kernel treats it (OOM choice, scheduling,
 * timers, core dumps): read-only binds of themselves, so that not even the sandbox's
 * root can make the kernel kill or starve init (as the seccomp filter keeps prlimit and
 * sched_* off pid 1). */
static const char *const proc_init_readonly[] = {
	"oom_score_adj",   "oom_adj",	 "autogroup",	 "timerslack_ns",
	"coredump_filter", "clear_refs", "make-it-fail", "fail-nth",
};
/* /proc entries kept visible but read-only. */
static const char *const proc_readonly[] = { "sys", "bus", "fs", "irq" };
/* sysfs directories hidden (OCI defaults plus kernel internals). */
static const char *const sys_masked_dirs[] = { "firmware",     "devices/virtual/powercap",
					       "kernel/debug", "kernel/security",
					       "fs/cgroup",    "fs/bpf",
					       "fs/pstore",    "kernel/tracing" };

static void fdpath(char *buf, size_t len, int fd)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/*
 * Resolve dest (absolute, inside the new root) to an O_PATH fd, one component at a time,
 * never following a symlink. With create, missing directories are made (mode 0755, the
 * last one with `mode`) and a missing last component is made a directory (dir) or an
 * empty file (!dir).
 */
static int open_target(int rootfd, const char *dest, bool dir, bool create, mode_t mode, int *ret,
		       struct ts_error *err)
{
	char buf[4096], *comp, *save = NULL, *next;
	_cleanup_close_ int cur = -EBADF;

	if (strlen(dest) >= sizeof(buf))
		return ts_err(err, -ENAMETOOLONG, "path `%s` too long", dest);
	snprintf(buf, sizeof(buf), "%s", dest);
	cur = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
	if (cur < 0)
		return ts_err_errno(err, -errno, "dup root fd");
	for (comp = strtok_r(buf, "/", &save); comp; comp = next) {
		bool last;
		int fd;

		next = strtok_r(NULL, "/", &save);
		last = next == NULL;
		if (!strcmp(comp, "."))
			continue;
		if (!strcmp(comp, ".."))
			return ts_err(err, -EINVAL, "`..` in `%s`", dest);
		if (!last || dir) {
			fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
			if (fd < 0 && errno == ENOENT && create) {
				if (mkdirat(cur, comp, last ? mode : 0755) < 0 && errno != EEXIST)
					return ts_err_errno(err, -errno,
							    "create directory `%s` in `%s`", comp,
							    dest);
				fd = openat(cur, comp,
					    O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
			}
			if (fd < 0 && (errno == ENOTDIR || errno == ELOOP))
				return ts_err(err, -ELOOP,
					      "`%s` in `%s` is not a directory (a symlink is never "
					      "followed)",
					      comp, dest);
		} else {
			fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0 && errno == ENOENT && create) {
				int w = openat(cur, comp,
					       O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC,
					       mode ? mode : 0644);
				if (w < 0 && errno != EEXIST)
					return ts_err_errno(err, -errno, "create file `%s` in `%s`",
							    comp, dest);
				if (w >= 0)
					close(w);
				fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
			}
			if (fd >= 0) {
				struct stat st;

				if (fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
					close(fd);
					return ts_err(err, -ELOOP,
						      "`%s` is a symlink; refusing to mount on it",
						      dest);
				}
			}
		}
		if (fd < 0)
			return ts_err_errno(err, -errno, "open `%s` in the new root", dest);
		close(cur);
		cur = fd;
	}
	*ret = TAKE_FD(cur);
	return 0;
}

static int attach(struct ts_mount_state *st, int mntfd, int targetfd, const char *dest,
		  struct ts_error *err)
{
	if (ts_move_mount(mntfd, "", targetfd, "",
			  MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return ts_err_errno(err, -errno, "attach mount at `%s`", dest);
	return 0;
}

static unsigned long attrs_to_msflags(unsigned int attrs)
{
	unsigned long f = 0;

	if (attrs & MOUNT_ATTR_RDONLY)
		f |= MS_RDONLY;
	if (attrs & MOUNT_ATTR_NOSUID)
		f |= MS_NOSUID;
	if (attrs & MOUNT_ATTR_NODEV)
		f |= MS_NODEV;
	if (attrs & MOUNT_ATTR_NOEXEC)
		f |= MS_NOEXEC;
	return f;
}

/*
 * Mount a new file system of `type` with "key=value" / "flag" options on the target.
 * opts is a comma-separated option string in mount(8) syntax.
 */
static int mount_new(struct ts_mount_state *st, const char *type, const char *opts,
		     unsigned int attrs, int targetfd, const char *dest, struct ts_error *err)
{
	_cleanup_close_ int fsfd = -EBADF, mntfd = -EBADF;
	char optbuf[4096], *o, *save = NULL;
	char tpath[64];

	if (!st->legacy) {
		fsfd = ts_fsopen(type, FSOPEN_CLOEXEC);
		if (fsfd < 0 && errno == ENOSYS)
			st->legacy = true;
		else if (fsfd < 0)
			return ts_err_errno(err, -errno, "fsopen `%s` for `%s`", type, dest);
	}
	if (st->legacy) {
		fdpath(tpath, sizeof(tpath), targetfd);
		if (mount(type, tpath, type, attrs_to_msflags(attrs), opts) < 0)
			return ts_err_errno(err, -errno, "mount %s on `%s`", type, dest);
		return 0;
	}
	snprintf(optbuf, sizeof(optbuf), "%s", opts ? opts : "");
	for (o = strtok_r(optbuf, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(o, '=');
		int r;

		if (eq) {
			*eq = '\0';
			r = ts_fsconfig(fsfd, FSCONFIG_SET_STRING, o, eq + 1, 0);
		} else {
			r = ts_fsconfig(fsfd, FSCONFIG_SET_FLAG, o, NULL, 0);
		}
		if (r < 0)
			return ts_err_errno(err, -errno, "%s option `%s` for `%s`", type, o, dest);
	}
	if (ts_fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return ts_err_errno(err, -errno, "create %s for `%s`", type, dest);
	mntfd = ts_fsmount(fsfd, FSMOUNT_CLOEXEC, attrs);
	if (mntfd < 0)
		return ts_err_errno(err, -errno, "fsmount %s for `%s`", type, dest);
	return attach(st, mntfd, targetfd, dest, err);
}

/* Bind srcfd (recursively) onto targetfd with the given attributes. */
static int mount_bind(struct ts_mount_state *st, int srcfd, unsigned int attrs, int targetfd,
		      const char *dest, struct ts_error *err)
{
	_cleanup_close_ int tree = -EBADF;
	char spath[64], tpath[64];

	if (!st->legacy) {
		tree = ts_open_tree(srcfd, "",
				    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
					    AT_RECURSIVE);
		if (tree < 0 && errno == ENOSYS)
			st->legacy = true;
		else if (tree < 0)
			return ts_err_errno(err, -errno, "clone mount for `%s`", dest);
	}
	if (st->legacy) {
		fdpath(spath, sizeof(spath), srcfd);
		fdpath(tpath, sizeof(tpath), targetfd);
		if (mount(spath, tpath, NULL, MS_BIND | MS_REC, NULL) < 0)
			return ts_err_errno(err, -errno, "bind mount on `%s`", dest);
		if (attrs) {
			/* targetfd still names the covered directory: resolve again. */
			_cleanup_close_ int newfd = -EBADF;
			int r = open_target(st->rootfd, dest, false, false, 0, &newfd, err);

			if (r < 0)
				return r;
			fdpath(tpath, sizeof(tpath), newfd);
			if (mount(NULL, tpath, NULL, MS_REMOUNT | MS_BIND | attrs_to_msflags(attrs),
				  NULL) < 0)
				return ts_err_errno(err, -errno, "remount `%s`", dest);
		}
		return 0;
	}
	if (attrs) {
		struct mount_attr ma = { .attr_set = attrs };

		if (ts_mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &ma) < 0)
			return ts_err_errno(err, -errno, "set attributes of `%s`", dest);
	}
	return attach(st, tree, targetfd, dest, err);
}

/* Make the mount at dest (resolved to fd) read-only; it must be a mount root. */
static int remount_ro(struct ts_mount_state *st, int fd, const char *dest, struct ts_error *err)
{
	struct mount_attr ma = { .attr_set = MOUNT_ATTR_RDONLY };
	char tpath[64];

	if (!st->legacy) {
		if (ts_mount_setattr(fd, "", AT_EMPTY_PATH, &ma) == 0)
			return 0;
		if (errno != ENOSYS)
			return ts_err_errno(err, -errno, "make `%s` read-only", dest);
		st->legacy = true;
	}
	fdpath(tpath, sizeof(tpath), fd);
	if (mount(NULL, tpath, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
		return ts_err_errno(err, -errno, "make `%s` read-only", dest);
	return 0;
}

/*
 * --bind-fd: the caller's fd is of a mount in the host's namespace, and a mount can only
 * be cloned from the namespace one is in. Its copy in ours is found by the fd's own path
 * and accepted only if it is the very same directory (device and inode): the fd decides,
 * the path only finds its copy, and a directory swapped in by someone meanwhile is
 * refused.
 */
static int reopen_here(struct ts_mount_op *op, struct ts_error *err)
{
	char link[64], path[PATH_MAX];
	struct stat want, got;
	ssize_t n;
	int fd;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", op->src_fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0 || fstat(op->src_fd, &want) < 0)
		return ts_err_errno(err, -errno, "--bind-fd %s", op->src);
	path[n] = '\0';
	fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return ts_err_errno(err, -errno, "--bind-fd %s: open `%s`", op->src, path);
	if (fstat(fd, &got) < 0 || got.st_dev != want.st_dev || got.st_ino != want.st_ino) {
		close(fd);
		return ts_err(err, -EAGAIN,
			      "--bind-fd %s: `%s` is no longer the directory that was opened",
			      op->src, path);
	}
	close(op->src_fd);
	op->src_fd = fd;
	return 0;
}

int ts_mount_open_sources(struct ts_helper_ctx *ctx, struct ts_mount_state *st,
			  struct ts_error *err)
{
	for (size_t i = 0; i < ctx->n_ops; i++) {
		struct ts_mount_op *op = &ctx->ops[i];

		switch (op->kind) {
		case TS_MOUNT_BIND:
		case TS_MOUNT_RO_BIND:
			if (op->idmapped_fd >= 0)
				break; /* the parent's id-mapped tree (idmount.h) */
			if (op->src_is_fd) {
				int r = reopen_here(op, err);

				if (r < 0)
					return r;
				break;
			}
			op->src_fd = open(op->src, O_PATH | O_CLOEXEC);
			if (op->src_fd < 0)
				return ts_err_errno(err, -errno, "open bind source `%s`", op->src);
			break;
		case TS_MOUNT_OVERLAY:
			for (size_t k = 0; k < op->n_lowers; k++) {
				op->lower_fds[k] =
					open(op->lowers[k], O_PATH | O_DIRECTORY | O_CLOEXEC);
				if (op->lower_fds[k] < 0)
					return ts_err_errno(err, -errno, "open overlay layer `%s`",
							    op->lowers[k]);
			}
			if (op->upper) {
				op->upper_fd = open(op->upper, O_PATH | O_DIRECTORY | O_CLOEXEC);
				if (op->upper_fd < 0)
					return ts_err_errno(err, -errno, "open upper dir `%s`",
							    op->upper);
				op->work_fd = open(op->work, O_PATH | O_DIRECTORY | O_CLOEXEC);
				if (op->work_fd < 0)
					return ts_err_errno(err, -errno, "open work dir `%s`",
							    op->work);
			}
			break;
		default:
			break;
		}
	}
	st->devnull_fd = open("/dev/null", O_PATH | O_CLOEXEC);
	if (st->devnull_fd < 0)
		return ts_err_errno(err, -errno, "open `/dev/null`");
	for (size_t i = 0; i < ELEMENTSOF(dev_nodes); i++) {
		char p[32];

		snprintf(p, sizeof(p), "/dev/%s", dev_nodes[i]);
		st->dev_fds[i] = open(p, O_PATH | O_CLOEXEC);
		if (st->dev_fds[i] < 0)
			return ts_err_errno(err, -errno, "open `%s`", p);
	}
	return 0;
}

/*
 * The overlay's options: its layers as /proc/self/fd paths of the fds opened before any
 * mount, and `userxattr`. We mount in the sandbox's user namespace (never the initial
 * one, in every id mapping), where overlayfs cannot set its trusted.overlay.* xattrs
 * (CAP_SYS_ADMIN in the initial namespace): without `userxattr` every operation that
 * needs one fails with EIO (removing a directory of a lower layer and making it again,
 * which needs an opaque mark). With it, overlayfs keeps its marks as user.overlay.*, and
 * what the sandbox sets under that name through the overlay is refused (before Linux
 * 6.7) or stored escaped as user.overlay.overlay.* (6.7 on), never taken for a mark; it
 * also forces redirect_dir to nofollow and index and metacopy off, which is what an
 * unprivileged mount has anyway. No upper ever had trusted.overlay.* marks (they
 * could not be set), so uppers of durable sandboxes made before keep working.
 */
static int overlay_opts(char *opts, size_t size, const struct ts_mount_op *op, bool userxattr,
			struct ts_error *err)
{
	size_t len = 0;

	len += (size_t)snprintf(opts + len, size - len, "lowerdir=");
	for (size_t k = 0; k < op->n_lowers && len < size; k++)
		len += (size_t)snprintf(opts + len, size - len, "%s/proc/self/fd/%d", k ? ":" : "",
					op->lower_idmapped_fds[k] >= 0 ? op->lower_idmapped_fds[k]
								       : op->lower_fds[k]);
	if (op->upper && len < size)
		len += (size_t)snprintf(opts + len, size - len,
					",upperdir=/proc/self/fd/%d,workdir=/proc/self/fd/%d",
					op->upper_fd, op->work_fd);
	if (userxattr && len < size)
		len += (size_t)snprintf(opts + len, size - len, ",userxattr");
	if (len >= size)
		return ts_err(err, -E2BIG, "overlay options too long");
	return 0;
}

static int mount_overlay(struct ts_mount_state *st, struct ts_mount_op *op, bool userxattr,
			 int targetfd, struct ts_error *err)
{
	char opts[2048];
	int r = overlay_opts(opts, sizeof(opts), op, userxattr, err);

	if (r < 0)
		return r;
	return mount_new(st, "overlay", opts,
			 MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (op->ro ? MOUNT_ATTR_RDONLY : 0),
			 targetfd, op->dest, err);
}

static int do_overlay(struct ts_mount_state *st, struct ts_mount_op *op, int targetfd,
		      struct ts_error *err)
{
	char first[sizeof(err->msg)];
	bool userxattr = !st->no_userxattr, idmapped = false;
	struct stat sb;
	int r;

	if (op->ro && op->n_lowers == 1 && op->lower_idmapped_fds[0] < 0)
		return mount_bind(st, op->lower_fds[0],
				  MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
				  targetfd, op->dest, err);
	for (size_t k = 0; k < op->n_lowers; k++) {
		/* A layer of an unmapped owner: overlayfs, with our credentials, could not
		 * read user.overlay.* of its directories that only their owner may read
		 * (EACCES on every lookup there), while trusted.overlay.* is merely absent
		 * to it. */
		if (op->lower_unmapped[k])
			userxattr = false;
		if (op->lower_idmapped_fds[k] < 0)
			continue;
		/* The parent's id-mapped tree (idmount.h), attached over the layer in our
		 * private namespace: overlayfs refuses a detached mount of a namespace
		 * whose user namespace we have no privilege over. The fd then names the
		 * attached mount; lower_fds[k] still names the layer's own directory. */
		/* the child opened the layer by its path again: it must be the directory the
		 * parent's tree was made from (the attach point would be another's, and
		 * the sandbox would be told the layer is where it is not) */
		if (fstat(op->lower_fds[k], &sb) < 0)
			return ts_err_errno(err, -errno, "stat layer `%s`", op->lowers[k]);
		if (sb.st_dev != op->lower_dev[k] || sb.st_ino != op->lower_ino[k])
			return ts_err(err, -ESTALE,
				      "layer `%s` changed while the sandbox was set up",
				      op->lowers[k]);
		r = attach(st, op->lower_idmapped_fds[k], op->lower_fds[k], op->lowers[k], err);
		if (r < 0)
			return ts_err_prefix(err, r, "id-mapped layer");
		idmapped = true;
	}
	r = mount_overlay(st, op, userxattr, targetfd, err);
	if (r == -EINVAL && idmapped) {
		/* Before Linux 5.19 overlayfs refuses id-mapped layers (EINVAL): the layers
		 * as they are, of an unmapped owner (so without `userxattr`, as above) */
		fprintf(stderr,
			"toren-sandbox-helper: warning: %s (overlayfs before Linux 5.19 takes no "
			"id-mapped layer); `%s` is mounted with its layers as they are: their "
			"files belong to ids the sandbox does not have\n",
			err ? err->msg : "", op->dest);
		ts_err_clear(err);
		for (size_t k = 0; k < op->n_lowers; k++)
			if (op->lower_idmapped_fds[k] >= 0) {
				close(op->lower_idmapped_fds[k]);
				op->lower_idmapped_fds[k] = -EBADF;
				op->lower_unmapped[k] = true;
				userxattr = false;
			}
		return mount_overlay(st, op, userxattr, targetfd, err);
	}
	if (r != -EINVAL || !userxattr)
		return r;
	/* `userxattr` is Linux 5.11's: an older overlayfs refuses the unknown option with
	 * EINVAL. Mount without it, as before; it then cannot set its xattrs in a user
	 * namespace (the kernel logs "try mounting with 'userxattr' option"), and removing
	 * a directory of a lower layer fails with EIO. */
	st->no_userxattr = true;
	snprintf(first, sizeof(first), "%s", err ? err->msg : "");
	ts_err_clear(err);
	r = mount_overlay(st, op, false, targetfd, err);
	if (r == 0)
		fprintf(stderr,
			"toren-sandbox-helper: warning: %s (overlayfs before Linux 5.11?); `%s` "
			"is mounted without `userxattr`: removing a directory of a lower layer "
			"fails with EIO\n",
			first, op->dest);
	return r;
}

/*
 * Hide parentfd/name (a directory, skipped when absent) under an empty read-only tmpfs.
 * The first mask is a new tmpfs; later ones are clones of it, which costs the kernel
 * less than creating a file system each time.
 */
static int mask_dir(struct ts_mount_state *st, int parentfd, const char *name, struct ts_error *err)
{
	const unsigned int attrs = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
				   MOUNT_ATTR_NOEXEC;
	_cleanup_close_ int fd =
		openat(parentfd, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return 0;
	if (st->mask_fd >= 0 && !st->legacy)
		return mount_bind(st, st->mask_fd, attrs, fd, name, err);
	r = mount_new(st, "tmpfs", "size=4k,mode=0555", attrs, fd, name, err);
	if (r < 0)
		return r;
	/* opened again by name: now the root of the new mount, not the covered directory */
	st->mask_fd = openat(parentfd, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	return 0;
}

/*
 * /proc/1/<file> of proc_init_readonly: we are PID 1 of the namespace this procfs shows.
 * mount(2), not the new API: the kernel refuses to move a clone of a pid's own file onto
 * it (EINVAL), while a classic bind of it onto itself, then made read-only, works.
 */
static int protect_init_files(int procfd, struct ts_error *err)
{
	_cleanup_close_ int pid1 =
		openat(procfd, "1", O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	char path[128];

	if (pid1 < 0)
		return ts_err_errno(err, -errno, "open /proc/1");
	for (size_t i = 0; i < ELEMENTSOF(proc_init_readonly); i++) {
		struct stat st;

		if (fstatat(pid1, proc_init_readonly[i], &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue; /* not built into this kernel */
		snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", pid1, proc_init_readonly[i]);
		if (mount(path, path, NULL, MS_BIND, NULL) < 0 ||
		    mount(NULL, path, NULL,
			  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  NULL) < 0)
			return ts_err_errno(err, -errno, "read-only /proc/1/%s",
					    proc_init_readonly[i]);
	}
	return 0;
}

static int do_proc(struct ts_mount_state *st, struct ts_mount_op *op, int targetfd,
		   struct ts_error *err)
{
	_cleanup_close_ int procfd = -EBADF;
	struct statfs sfs;
	int r;

	r = mount_new(st, "proc", NULL, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
		      targetfd, op->dest, err);
	if (r < 0)
		return r;
	r = open_target(st->rootfd, op->dest, true, false, 0, &procfd, err);
	if (r < 0)
		return r;
	/* Only ever write through what is really our fresh procfs. */
	if (fstatfs(procfd, &sfs) < 0 || sfs.f_type != PROC_SUPER_MAGIC)
		return ts_err(err, -EXDEV, "`%s` is not procfs after mounting it", op->dest);
	for (size_t i = 0; i < ELEMENTSOF(proc_masked_files); i++) {
		_cleanup_close_ int fd =
			openat(procfd, proc_masked_files[i], O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue; /* not built into this kernel */
		r = mount_bind(st, st->devnull_fd,
			       MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, fd,
			       proc_masked_files[i], err);
		if (r < 0)
			return ts_err_prefix(err, r, "mask /proc");
	}
	for (size_t i = 0; i < ELEMENTSOF(proc_masked_dirs); i++) {
		r = mask_dir(st, procfd, proc_masked_dirs[i], err);
		if (r < 0)
			return ts_err_prefix(err, r, "mask /proc");
	}
	r = protect_init_files(procfd, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(proc_readonly); i++) {
		_cleanup_close_ int fd = openat(procfd, proc_readonly[i],
						O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		r = mount_bind(st, fd,
			       MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
				       MOUNT_ATTR_NOEXEC,
			       fd, proc_readonly[i], err);
		if (r < 0)
			return ts_err_prefix(err, r, "read-only /proc");
	}
	return 0;
}

static int do_dev(struct ts_mount_state *st, struct ts_mount_op *op, int targetfd,
		  struct ts_error *err)
{
	static const struct {
		const char *target, *name;
	} links[] = {
		{ "/proc/self/fd", "fd" },	 { "/proc/self/fd/0", "stdin" },
		{ "/proc/self/fd/1", "stdout" }, { "/proc/self/fd/2", "stderr" },
		{ "pts/ptmx", "ptmx" },
	};
	_cleanup_close_ int devfd = -EBADF, ptsfd = -EBADF, shmfd = -EBADF;
	int r;

	r = mount_new(st, "tmpfs", "mode=0755,size=64k,nr_inodes=64",
		      MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, targetfd, op->dest, err);
	if (r < 0)
		return r;
	r = open_target(st->rootfd, op->dest, true, false, 0, &devfd, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(dev_nodes); i++) {
		_cleanup_close_ int fd = -EBADF;
		int w = openat(devfd, dev_nodes[i], O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);

		if (w < 0)
			return ts_err_errno(err, -errno, "create `/dev/%s`", dev_nodes[i]);
		close(w);
		fd = openat(devfd, dev_nodes[i], O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return ts_err_errno(err, -errno, "open `/dev/%s`", dev_nodes[i]);
		r = mount_bind(st, st->dev_fds[i], MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, fd,
			       dev_nodes[i], err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(links); i++)
		if (symlinkat(links[i].target, devfd, links[i].name) < 0)
			return ts_err_errno(err, -errno, "symlink `/dev/%s`", links[i].name);
	/* A private devpts instance: the sandbox never sees the host's ptys (DV-04). */
	if (mkdirat(devfd, "pts", 0755) < 0 || mkdirat(devfd, "shm", 01777) < 0)
		return ts_err_errno(err, -errno, "create /dev directories");
	ptsfd = openat(devfd, "pts", O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	shmfd = openat(devfd, "shm", O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	if (ptsfd < 0 || shmfd < 0)
		return ts_err_errno(err, -errno, "open /dev directories");
	r = mount_new(st, "devpts", "newinstance,ptmxmode=0666,mode=0620",
		      MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, ptsfd, "/dev/pts", err);
	if (r < 0)
		return r;
	return mount_new(st, "tmpfs", "mode=1777", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, shmfd,
			 "/dev/shm", err);
}

static int do_sysfs(struct ts_mount_state *st, struct ts_mount_op *op, int targetfd,
		    struct ts_error *err)
{
	_cleanup_close_ int sysfd = -EBADF;
	int r;

	r = mount_new(st, "sysfs", NULL,
		      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
		      targetfd, op->dest, err);
	if (r == -EPERM || r == -EACCES) {
		/* A kernel that refuses sysfs here leaves /sys empty: "not at all". */
		ts_err_clear(err);
		return 0;
	}
	if (r < 0)
		return r;
	r = open_target(st->rootfd, op->dest, true, false, 0, &sysfd, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(sys_masked_dirs); i++) {
		r = mask_dir(st, sysfd, sys_masked_dirs[i], err);
		if (r < 0)
			return ts_err_prefix(err, r, "mask /sys");
	}
	return 0;
}

static int do_protect(struct ts_mount_state *st, struct ts_mount_op *op, struct ts_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	struct stat sb;
	int r;

	r = open_target(st->rootfd, op->dest, false, false, 0, &fd, err);
	if (r == -ENOENT || r == -ELOOP) {
		/* Gone or replaced by a symlink since the caller looked: nothing to protect
		 * under that name, and a symlink is never followed to mount over its target. */
		fprintf(stderr, "toren-sandbox-helper: protected path `%s` not protected: %s\n",
			op->dest, err->msg);
		ts_err_clear(err);
		return 0;
	}
	if (r < 0)
		return r;
	if (fstat(fd, &sb) < 0)
		return ts_err_errno(err, -errno, "stat `%s`", op->dest);
	if (!S_ISREG(sb.st_mode)) {
		fprintf(stderr, "toren-sandbox-helper: protected path `%s` is not a regular file\n",
			op->dest);
		return 0;
	}
	/* The file becomes its own read-only mount: write, truncate, chmod, rename over it,
	 * unlink and hard links to it all fail in the kernel (EROFS/EBUSY/EXDEV). */
	return mount_bind(st, fd,
			  MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
				  MOUNT_ATTR_NOEXEC,
			  fd, op->dest, err);
}

static int do_symlink(struct ts_mount_state *st, struct ts_mount_op *op, struct ts_error *err)
{
	char parent[4096], *slash;
	_cleanup_close_ int pfd = -EBADF;
	int r;

	snprintf(parent, sizeof(parent), "%s", op->dest);
	slash = strrchr(parent, '/');
	if (!slash || !slash[1])
		return ts_err(err, -EINVAL, "bad symlink destination `%s`", op->dest);
	*slash = '\0';
	r = open_target(st->rootfd, parent[0] ? parent : "/", true, true, 0755, &pfd, err);
	if (r < 0)
		return r;
	if (symlinkat(op->src, pfd, slash + 1) < 0) {
		char cur[4096];
		ssize_t n;

		if (errno != EEXIST)
			return ts_err_errno(err, -errno, "symlink `%s`", op->dest);
		n = readlinkat(pfd, slash + 1, cur, sizeof(cur) - 1);
		if (n < 0 || (cur[n] = '\0', strcmp(cur, op->src) != 0))
			return ts_err(err, -EEXIST, "`%s` exists and is not a symlink to `%s`",
				      op->dest, op->src);
	}
	return 0;
}

static int do_op(struct ts_mount_state *st, struct ts_mount_op *op, struct ts_error *err)
{
	_cleanup_close_ int target = -EBADF;
	bool file_target = false;
	char opts[128];
	int r;

	switch (op->kind) {
	case TS_MOUNT_SYMLINK:
		return do_symlink(st, op, err);
	case TS_MOUNT_PROTECT:
		return do_protect(st, op, err);
	case TS_MOUNT_REMOUNT_RO:
		r = open_target(st->rootfd, op->dest, true, false, 0, &target, err);
		if (r < 0)
			return r;
		return remount_ro(st, target, op->dest, err);
	case TS_MOUNT_BIND:
	case TS_MOUNT_RO_BIND: {
		struct stat sb;

		if (fstat(op->idmapped_fd >= 0 ? op->idmapped_fd : op->src_fd, &sb) < 0)
			return ts_err_errno(err, -errno, "stat `%s`", op->src);
		file_target = !S_ISDIR(sb.st_mode);
		break;
	}
	default:
		break;
	}
	r = open_target(st->rootfd, op->dest, !file_target, true,
			op->kind == TS_MOUNT_DIR ? op->mode : (file_target ? 0644 : 0755), &target,
			err);
	if (r < 0)
		return r;

	switch (op->kind) {
	case TS_MOUNT_DIR:
		if (op->owner >= 0 && fchownat(target, "", (uid_t)op->owner, (gid_t)op->owner,
					       AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
			return ts_err_errno(err, -errno, "chown `%s` to %lld", op->dest, op->owner);
		return 0;
	case TS_MOUNT_BIND:
		if (op->idmapped_fd >= 0) /* nosuid, nodev and the mapping are set already */
			return attach(st, op->idmapped_fd, target, op->dest, err);
		return mount_bind(st, op->src_fd, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, target,
				  op->dest, err);
	case TS_MOUNT_RO_BIND:
		if (op->idmapped_fd >= 0)
			return attach(st, op->idmapped_fd, target, op->dest, err);
		return mount_bind(st, op->src_fd,
				  MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, target,
				  op->dest, err);
	case TS_MOUNT_TMPFS: {
		/* Owned by the program's ids unless --owner says (uid= is read in our user
		 * namespace): /root is root's when a root exists, else the user's. */
		unsigned uid = op->owner >= 0 ? (unsigned)op->owner : (unsigned)st->uid;
		unsigned gid = op->owner >= 0 ? (unsigned)op->owner : (unsigned)st->gid;

		if (op->size)
			snprintf(opts, sizeof(opts), "mode=%04o,uid=%u,gid=%u,size=%llu",
				 (unsigned)op->mode, uid, gid, op->size);
		else
			snprintf(opts, sizeof(opts), "mode=%04o,uid=%u,gid=%u", (unsigned)op->mode,
				 uid, gid);
		return mount_new(st, "tmpfs", opts, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, target,
				 op->dest, err);
	}
	case TS_MOUNT_OVERLAY:
		return do_overlay(st, op, target, err);
	case TS_MOUNT_PROC:
		return do_proc(st, op, target, err);
	case TS_MOUNT_DEV:
		return do_dev(st, op, target, err);
	case TS_MOUNT_SYSFS:
		return do_sysfs(st, op, target, err);
	case TS_MOUNT_MQUEUE:
		return mount_new(st, "mqueue", NULL,
				 MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, target,
				 op->dest, err);
	default:
		return ts_err(err, -EINVAL, "unhandled mount kind %d", (int)op->kind);
	}
}

int ts_mount_build(struct ts_helper_ctx *ctx, struct ts_mount_state *st, struct ts_error *err)
{
	_cleanup_close_ int staging = -EBADF;
	int r;

	/* Nothing we mount may propagate back to the host, and no host mount event may
	 * reach the sandbox later (NS-09). */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return ts_err_errno(err, -errno, "make mounts private");

	staging = open(TS_STAGING, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (staging < 0)
		return ts_err_errno(err, -errno, "open staging directory `%s`", TS_STAGING);
	/* The root is the first op (checked when parsing). */
	switch (ctx->ops[0].kind) {
	case TS_MOUNT_OVERLAY:
		r = do_overlay(st, &ctx->ops[0], staging, err);
		break;
	case TS_MOUNT_BIND:
		r = mount_bind(st, ctx->ops[0].src_fd, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
			       staging, "/", err);
		break;
	case TS_MOUNT_RO_BIND:
		r = mount_bind(st, ctx->ops[0].src_fd,
			       MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, staging,
			       "/", err);
		break;
	case TS_MOUNT_TMPFS:
		r = mount_new(st, "tmpfs", "mode=0755", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
			      staging, "/", err);
		break;
	default:
		r = ts_err(err, -EINVAL, "the root must be an overlay, a bind or a tmpfs");
	}
	if (r < 0)
		return ts_err_prefix(err, r, "root file system");
	st->rootfd = open(TS_STAGING, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (st->rootfd < 0)
		return ts_err_errno(err, -errno, "open the new root");

	for (size_t i = 1; i < ctx->n_ops; i++) {
		r = do_op(st, &ctx->ops[i], err);
		if (r < 0)
			return r;
	}

	/* pivot_root(".", ".") stacks the old root on top of the new one; detaching "."
	 * then removes the old root without needing a directory to put it in. */
	if (fchdir(st->rootfd) < 0)
		return ts_err_errno(err, -errno, "enter the new root");
	if (ts_pivot_root(".", ".") < 0)
		return ts_err_errno(err, -errno, "pivot_root");
	if (umount2(".", MNT_DETACH) < 0)
		return ts_err_errno(err, -errno, "detach the old root");
	if (chdir("/") < 0)
		return ts_err_errno(err, -errno, "chdir to the new root");
	close(st->rootfd);
	st->rootfd = -EBADF;
	return 0;
}
