/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the file worker's path resolution (runtime/files-path.c). Paths
 * come from the host's client, but the worker runs inside the sandbox and a path is the
 * sandbox user's way to ask for anything: it must never lead out of the root.
 *
 * Once per process a scratch tree is built in a temporary directory T: T/root is the
 * worker's root (home /home/user), T/outside a sibling that nothing may reach. The root
 * holds symlinks that point out (`../../..`, `../../../outside`, T/outside, `/`), loops,
 * dangling and chained links, links to /proc magic links, a FIFO, protected names and,
 * when a private mount namespace can be had (root, or an unprivileged user namespace),
 * files bound read-only onto themselves (protected files as the runtime mounts them), a
 * hard link to one of them, a tmpfs and a bind of the real /proc at /proc, so that
 * /proc/self/root and /proc/self/fd/N are real magic links inside the root.
 *
 * Where that namespace exists, T itself is a tmpfs of it (fast, and gone with the process).
 *
 * Input: byte 0 picks the operation (the call sequences of runtime/files.c: stat, open as
 * read and list do, mkdir -p, the checks of a write, remove, one side of a rename, and
 * open_step below /home/user); byte 1 the open flags (low bits), the home (bit 7: none, so
 * relative paths start at /) and whether the path goes into the ctl field whole, NUL
 * bytes included (bit 6); the rest is the path, up to its first NUL otherwise. The path
 * goes through ts_files_get_path and ts_files_path_parse as a request's would.
 *
 * Checks, beyond "no crash, no leak" (memory and fds):
 *  - errors are negative errno values (-4095..-1) and, where a ts_error is filled, its code
 *    and a message match;
 *  - a parsed path is normalized: no `.`, `..` or empty component, parent + name == rel;
 *  - every fd returned is O_CLOEXEC and refers to something inside T/root, both by its
 *    /proc/self/fd name and, for directories, by walking `..` up to T/root's dev/ino;
 *  - open_step never follows a symlink and stays below its directory;
 *  - a write-like target is refused (EPERM) when its name is protected, and one accepted
 *    is no mount root (statx); a subtree accepted for remove or rename holds no mount
 *    point (/proc/self/mountinfo); ts_files_inode_mounted() finds exactly the inodes bound
 *    onto themselves;
 *  - a removal that succeeds leaves no entry behind; mkdir never creates a protected name;
 *  - after any operation, T holds only root, outside and spare, T/outside is unchanged, and
 *    every mount is still in place.
 * The tree is put back to its initial state after each operation that changes it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "ctl.h"
#include "error.h"
#include "files-internal.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x)) {                                                                        \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #x);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#define ERRNO_OK(r) ((r) < 0 && (r) >= -4095)

/* Fixture entries, relative to T/root. Order matters: parents first, hard links after
 * their targets. */
enum fx_type {
	FX_DIR,
	FX_FILE,
	FX_LINK,
	FX_FIFO,
	FX_HARD,  /* a hard link to target */
	FX_BOUND, /* a file bound read-only onto itself (a protected file) */
	FX_TMPFS, /* a directory with a tmpfs on it */
	FX_PROC,  /* a directory with the real /proc bound on it */
};

struct fx {
	const char *path;
	enum fx_type type;
	const char *target; /* FX_LINK: the link's text ("@" is T/outside); FX_HARD: a path */
};

static const struct fx fixture[] = {
	{ "etc", FX_DIR, NULL },
	{ "etc/passwd", FX_FILE, NULL },
	{ "tmp", FX_DIR, NULL },
	{ "proc", FX_PROC, NULL },
	{ "mnt", FX_TMPFS, NULL },
	{ "mnt/inner", FX_FILE, NULL },
	{ "up", FX_LINK, ".." },
	{ "out", FX_LINK, "../outside" },
	{ "home", FX_DIR, NULL },
	{ "home/user", FX_DIR, NULL },
	{ "home/user/file", FX_FILE, NULL },
	{ "home/user/.env", FX_FILE, NULL },
	{ "home/user/id_rsa", FX_FILE, NULL },
	{ "home/user/key.pem", FX_BOUND, NULL },
	{ "home/user/key-hard", FX_HARD, "home/user/key.pem" },
	{ "home/user/file-hard", FX_HARD, "home/user/file" },
	{ "home/user/holder", FX_DIR, NULL },
	{ "home/user/holder/d", FX_DIR, NULL },
	{ "home/user/holder/d/secret.pem", FX_BOUND, NULL },
	/* mountinfo escapes a space, tab, newline and backslash in a mount point (\040 ...) */
	{ "home/user/odd", FX_DIR, NULL },
	{ "home/user/odd/sp ace\ttab\nnl\\bs.pem", FX_BOUND, NULL },
	{ "home/user/odd-hard", FX_HARD, "home/user/odd/sp ace\ttab\nnl\\bs.pem" },
	{ "home/user/sub", FX_DIR, NULL },
	{ "home/user/sub/deeper", FX_DIR, NULL },
	{ "home/user/sub/deeper/leaf", FX_FILE, NULL },
	{ "home/user/fifo", FX_FIFO, NULL },
	{ "home/user/link-up", FX_LINK, "../../.." },
	{ "home/user/link-out-rel", FX_LINK, "../../../outside" },
	{ "home/user/link-out-abs", FX_LINK, "@" },
	{ "home/user/link-out-file", FX_LINK, "@/secret" },
	{ "home/user/link-root", FX_LINK, "/" },
	{ "home/user/link-etc", FX_LINK, "/etc" },
	{ "home/user/link-passwd", FX_LINK, "/etc/passwd" },
	{ "home/user/link-file", FX_LINK, "file" },
	{ "home/user/link-sub", FX_LINK, "sub/deeper" },
	{ "home/user/link-env", FX_LINK, ".env" },
	{ "home/user/link-pem", FX_LINK, "key.pem" },
	{ "home/user/link-holder", FX_LINK, "/home/user/holder" },
	{ "home/user/loop-a", FX_LINK, "loop-b" },
	{ "home/user/loop-b", FX_LINK, "loop-a" },
	{ "home/user/self", FX_LINK, "self" },
	{ "home/user/dangling", FX_LINK, "nowhere/at/all" },
	{ "home/user/chain", FX_LINK, "link-up/home/user/link-up/up/out" },
	{ "home/user/proc-root", FX_LINK, "/proc/self/root" },
	{ "home/user/proc-cwd", FX_LINK, "/proc/self/cwd" },
	{ "home/user/proc-fd", FX_LINK, "/proc/self/fd" },
	{ "home/user/proc-1", FX_LINK, "/proc/1/root" },
	{ "home/user/proc-thread", FX_LINK, "/proc/thread-self/root" },
	{ "home/user/proc-mnt", FX_LINK, "../../proc/self/mounts" },
	{ "home/user/mnt", FX_LINK, "/mnt" },
};

static char *protect[] = { ".env", "*.pem", "id_rsa*", ".git-credentials" };

static struct {
	bool ready;
	bool mounts; /* the FX_BOUND, FX_TMPFS and FX_PROC mounts are in place */
	bool tmpfs;  /* T is a tmpfs of our own mount namespace */
	char t[PATH_MAX / 2], root[PATH_MAX], outside[PATH_MAX], spare[PATH_MAX / 2 + 16];
	size_t root_len;
	int root_fd; /* O_PATH */
	struct stat root_st;
	struct stat bound[4]; /* the inodes of FX_BOUND entries */
	size_t n_bound;
	dev_t devs[4]; /* the file systems of the root (itself, its tmpfs, its /proc) */
	size_t n_devs;
	struct stat outside_st[8]; /* T, T/outside and what it holds, T/spare */
	size_t n_outside;
	struct ts_files_cfg cfg[2]; /* home /home/user, home NULL */
} S = { .root_fd = -EBADF };

static bool is_protected(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(protect); i++)
		if (fnmatch(protect[i], name, 0) == 0)
			return true;
	return false;
}

static const struct fx *fx_find(const char *rel)
{
	for (size_t i = 0; i < ELEMENTSOF(fixture); i++)
		if (!strcmp(fixture[i].path, rel))
			return &fixture[i];
	return NULL;
}

/* A new file dfd/path holding content. 0 or -1. */
static int make_file(int dfd, const char *path, const char *content)
{
	int fd = openat(dfd, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	int r;

	if (fd < 0)
		return -1;
	r = ts_write_all(fd, content, strlen(content));
	close(fd);
	return r < 0 ? -1 : 0;
}

static void link_target(const struct fx *e, char *buf, size_t len)
{
	if (e->target[0] == '@')
		snprintf(buf, len, "%s%s", S.outside, e->target + 1);
	else
		snprintf(buf, len, "%s", e->target);
}

/*
 * Files are hard links to spares kept in T/spare (outside the root, never reachable), so
 * that one removed (a file, or a hard link to a file now covered by its mount) comes
 * back as the same inode. The spare of entry i is T/spare/i; a FX_HARD shares its
 * target's.
 */
static void spare_path(const struct fx *e, char *buf, size_t len)
{
	size_t i = (size_t)(e - fixture);

	if (e->type == FX_HARD)
		for (i = 0; strcmp(fixture[i].path, e->target); i++)
			;
	snprintf(buf, len, "%s/%zu", S.spare, i);
}

/* Is dfd/name what the fixture says e is? */
static bool fx_matches(int dfd, const char *name, const struct fx *e)
{
	struct stat st, sp;
	char want[PATH_MAX], got[PATH_MAX];
	ssize_t n;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	switch (e->type) {
	case FX_DIR:
	case FX_TMPFS:
	case FX_PROC:
		return S_ISDIR(st.st_mode);
	case FX_FILE:
	case FX_BOUND:
	case FX_HARD:
		spare_path(e, want, sizeof(want));
		CHECK(stat(want, &sp) == 0);
		/* a file on the tmpfs cannot be a link to a spare */
		return S_ISREG(st.st_mode) && (st.st_dev != sp.st_dev || st.st_ino == sp.st_ino);
	case FX_FIFO:
		return S_ISFIFO(st.st_mode);
	case FX_LINK:
		if (!S_ISLNK(st.st_mode))
			return false;
		n = readlinkat(dfd, name, got, sizeof(got) - 1);
		if (n < 0)
			return false;
		got[n] = '\0';
		link_target(e, want, sizeof(want));
		return !strcmp(got, want);
	}
	return false;
}

/* Create fixture entry e (absent now) below the root. */
static void fx_create(const struct fx *e)
{
	char target[PATH_MAX];
	int r = 0;

	switch (e->type) {
	case FX_DIR:
	case FX_TMPFS:
	case FX_PROC:
		r = mkdirat(S.root_fd, e->path, 0755);
		break;
	case FX_FILE:
	case FX_BOUND:
	case FX_HARD:
		spare_path(e, target, sizeof(target));
		if (e->type != FX_HARD && access(target, F_OK) < 0)
			CHECK(make_file(AT_FDCWD, target, e->path) == 0);
		r = linkat(AT_FDCWD, target, S.root_fd, e->path, 0);
		if (r < 0 && errno == EXDEV)
			r = make_file(S.root_fd, e->path, e->path);
		break;
	case FX_FIFO:
		r = mkfifoat(S.root_fd, e->path, 0644);
		break;
	case FX_LINK:
		link_target(e, target, sizeof(target));
		r = symlinkat(target, S.root_fd, e->path);
		break;
	}
	CHECK(r == 0);
}

/* Remove what is not in the fixture below dir (rel: its path, "" for the root), and put
 * back what is missing or was changed. Never enters a mount. */
static void fx_prune(int dfd, const char *rel)
{
	DIR *d;
	struct dirent *de;
	struct stat dst;
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	CHECK(fd >= 0);
	CHECK(fstat(fd, &dst) == 0);
	d = fdopendir(fd);
	CHECK(d);
	while ((de = readdir(d))) {
		char sub[PATH_MAX];
		const struct fx *e;
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
		e = fx_find(sub);
		if (e && fx_matches(dirfd(d), de->d_name, e)) {
			if (e->type == FX_DIR || e->type == FX_TMPFS) {
				int sfd = openat(dirfd(d), de->d_name,
						 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

				CHECK(sfd >= 0);
				fx_prune(sfd, sub);
				close(sfd);
			}
			continue;
		}
		/* New, or changed: an entry made by an operation under test. mkdir never
		 * makes a protected name (PP-12). */
		CHECK(e || !is_protected(de->d_name));
		CHECK(fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0);
		CHECK(st.st_dev == dst.st_dev);
		CHECK(ts_rm_rf_at(dirfd(d), de->d_name) == 0);
	}
	closedir(d);
}

static void fx_sync(void)
{
	fx_prune(S.root_fd, "");
	for (size_t i = 0; i < ELEMENTSOF(fixture); i++) {
		const struct fx *e = &fixture[i];
		struct stat st;

		if (fstatat(S.root_fd, e->path, &st, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		CHECK(errno == ENOENT);
		/* a mount point cannot go while it is mounted */
		CHECK(!S.mounts ||
		      (e->type != FX_BOUND && e->type != FX_TMPFS && e->type != FX_PROC));
		fx_create(e);
	}
}

/* T holds root, outside and spare only, T/outside is as made, every mount is in place. */
static void check_world(void)
{
	DIR *d = opendir(S.t);
	struct dirent *de;
	struct stat st;
	int n = 0;
	char p[PATH_MAX + 32];

	CHECK(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			CHECK(!strcmp(de->d_name, "root") || !strcmp(de->d_name, "outside") ||
			      !strcmp(de->d_name, "spare"));
	closedir(d);
	d = opendir(S.outside);
	CHECK(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	CHECK(n == 2);
	snprintf(p, sizeof(p), "%s/secret", S.outside);
	CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 6);
	snprintf(p, sizeof(p), "%s/dir", S.outside);
	CHECK(lstat(p, &st) == 0 && S_ISDIR(st.st_mode));
	snprintf(p, sizeof(p), "%s/dir/x", S.outside);
	CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 1);
	if (!S.mounts)
		return;
	for (size_t i = 0; i < ELEMENTSOF(fixture); i++) {
		struct statx sx;

		if (fixture[i].type != FX_BOUND && fixture[i].type != FX_TMPFS &&
		    fixture[i].type != FX_PROC)
			continue;
		CHECK(statx(S.root_fd, fixture[i].path, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &sx) == 0);
		CHECK(sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT);
		CHECK(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
	}
}

static void cleanup(void)
{
	if (!S.ready)
		return;
	close(S.root_fd);
	/* the tmpfs on T takes every mount below it along */
	if (S.tmpfs && umount2(S.t, MNT_DETACH) == 0) {
		rmdir(S.t);
		return;
	}
	if (S.mounts)
		for (size_t i = ELEMENTSOF(fixture); i-- > 0;) {
			char p[PATH_MAX + 64];

			if (fixture[i].type != FX_BOUND && fixture[i].type != FX_TMPFS &&
			    fixture[i].type != FX_PROC)
				continue;
			snprintf(p, sizeof(p), "%s/%s", S.root, fixture[i].path);
			umount2(p, MNT_DETACH);
		}
	ts_rm_rf_at(AT_FDCWD, S.t);
}

/* A private mount namespace: as root directly, else in a user namespace of our own. */
static bool private_mounts(void)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (unshare(CLONE_NEWNS) < 0) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
			return false;
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
		if (ts_write_file_at(AT_FDCWD, "/proc/self/uid_map", map) < 0)
			return false;
		if (ts_write_file_at(AT_FDCWD, "/proc/self/setgroups", "deny") < 0)
			return false;
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
		if (ts_write_file_at(AT_FDCWD, "/proc/self/gid_map", map) < 0)
			return false;
	}
	return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0;
}

static bool do_mounts(void)
{
	for (size_t i = 0; i < ELEMENTSOF(fixture); i++) {
		const struct fx *e = &fixture[i];
		char p[PATH_MAX + 64];
		int r;

		snprintf(p, sizeof(p), "%s/%s", S.root, e->path);
		switch (e->type) {
		case FX_BOUND:
			r = mount(p, p, NULL, MS_BIND, NULL);
			if (r == 0)
				r = mount(NULL, p, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL);
			if (r == 0 && S.n_bound < ELEMENTSOF(S.bound))
				r = stat(p, &S.bound[S.n_bound++]);
			break;
		case FX_TMPFS:
			r = mount("tmpfs", p, "tmpfs", 0, "size=1m,mode=0755");
			break;
		case FX_PROC:
			/* Only procfs itself where that is allowed, with its submounts else. */
			r = mount("/proc", p, NULL, MS_BIND, NULL);
			if (r < 0)
				r = mount("/proc", p, NULL, MS_BIND | MS_REC, NULL);
			break;
		default:
			r = 0;
		}
		if (r < 0) {
			fprintf(stderr, "fuzz-files-path: mount `%s`: %m (no mounts)\n", p);
			return false;
		}
	}
	return true;
}

static void setup(void)
{
	char p[PATH_MAX + 32];
	bool ns;

	snprintf(S.t, sizeof(S.t), "%s/fuzz-files-path-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	CHECK(mkdtemp(S.t));
	S.ready = true;
	atexit(cleanup);
	/* In a mount namespace of its own the tree lives on a tmpfs: fast, and gone with us. */
	ns = private_mounts();
	S.tmpfs = ns && mount("tmpfs", S.t, "tmpfs", 0, "size=256m,mode=0700") == 0;
	snprintf(S.root, sizeof(S.root), "%s/root", S.t);
	snprintf(S.outside, sizeof(S.outside), "%s/outside", S.t);
	snprintf(S.spare, sizeof(S.spare), "%s/spare", S.t);
	S.root_len = strlen(S.root);
	CHECK(mkdir(S.root, 0755) == 0 && mkdir(S.outside, 0755) == 0 && mkdir(S.spare, 0700) == 0);
	snprintf(p, sizeof(p), "%s/secret", S.outside);
	CHECK(make_file(AT_FDCWD, p, "secret") == 0);
	snprintf(p, sizeof(p), "%s/dir", S.outside);
	CHECK(mkdir(p, 0755) == 0);
	snprintf(p, sizeof(p), "%s/dir/x", S.outside);
	CHECK(make_file(AT_FDCWD, p, "x") == 0);
	/* opened after the unshare: an older fd would walk the old namespace's mounts */
	S.root_fd = open(S.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	CHECK(S.root_fd >= 0);
	CHECK(fstat(S.root_fd, &S.root_st) == 0);
	for (size_t i = 0; i < ELEMENTSOF(fixture); i++)
		fx_create(&fixture[i]);
	S.mounts = ns && do_mounts();
	/* the tmpfs hides what mnt held: make it again on top */
	fx_sync();
	S.devs[S.n_devs++] = S.root_st.st_dev;
	for (size_t i = 0; i < ELEMENTSOF(fixture); i++) {
		struct stat st;

		if ((fixture[i].type == FX_TMPFS || fixture[i].type == FX_PROC) &&
		    fstatat(S.root_fd, fixture[i].path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S.n_devs < ELEMENTSOF(S.devs))
			S.devs[S.n_devs++] = st.st_dev;
	}
	for (const char *const *o =
		     (const char *const[]){ "", "/outside", "/outside/secret", "/outside/dir",
					    "/outside/dir/x", "/spare", NULL };
	     *o; o++) {
		snprintf(p, sizeof(p), "%s%s", S.t, *o);
		CHECK(lstat(p, &S.outside_st[S.n_outside++]) == 0);
	}
	S.cfg[0] = (struct ts_files_cfg){ .protect_patterns = protect,
					  .n_protect = ELEMENTSOF(protect),
					  .home = "/home/user",
					  .root = S.root };
	S.cfg[1] = S.cfg[0];
	S.cfg[1].home = NULL;
	check_world();
}

/* Does any mount point lie strictly below the absolute path dir? */
static bool mount_below(const char *dir)
{
	_cleanup_fclose_ FILE *mi = fopen("/proc/self/mountinfo", "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0, dl = strlen(dir);

	CHECK(mi);
	while (getline(&line, &cap, mi) > 0) {
		char mp[PATH_MAX];
		const char *s = line;
		size_t n = 0;

		/* the fifth field, its octal escapes undone */
		for (int field = 0; field < 4 && s; field++)
			s = strchr(s, ' ') ? strchr(s, ' ') + 1 : NULL;
		if (!s)
			continue;
		/* the kernel writes every backslash as an escape: \ and three octal digits */
		while (*s && *s != ' ' && *s != '\n' && n + 1 < sizeof(mp)) {
			if (s[0] == '\\' && s[1] && s[2] && s[3]) {
				mp[n++] =
					(char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
				s += 4;
			} else {
				mp[n++] = *s++;
			}
		}
		mp[n] = '\0';
		if (!strncmp(mp, dir, dl) && mp[dl] == '/' && (dl > 1 || mp[1]))
			return true;
	}
	return false;
}

/* The absolute host path fd refers to, from /proc/self/fd; false when it is longer than
 * the kernel shows (T's name plus a path inside the root can pass PATH_MAX). */
static bool fd_path(int fd, char *buf, size_t len)
{
	char p[64];
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	n = readlink(p, buf, len - 1);
	if (n < 0 && errno == ENAMETOOLONG)
		return false;
	CHECK(n > 0 && (size_t)n < len - 1);
	buf[n] = '\0';
	return true;
}

/* Without a name: on a file system of the root, and none of T/outside's inodes. */
static void check_inside_by_inode(const struct stat *st)
{
	bool dev_ok = false;

	for (size_t i = 0; i < S.n_devs; i++)
		dev_ok |= st->st_dev == S.devs[i];
	CHECK(dev_ok);
	for (size_t i = 0; i < S.n_outside; i++)
		CHECK(st->st_dev != S.outside_st[i].st_dev || st->st_ino != S.outside_st[i].st_ino);
}

/* fd is close-on-exec and refers to something inside T/root. */
static void check_inside(int fd)
{
	char path[PATH_MAX];
	struct stat st;
	int cur;

	CHECK(fd >= 0);
	CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	CHECK(fstat(fd, &st) == 0);
	if (!fd_path(fd, path, sizeof(path))) {
		snprintf(path, sizeof(path), "(too long)");
		check_inside_by_inode(&st);
	} else if (strncmp(path, S.root, S.root_len) ||
		   (path[S.root_len] && path[S.root_len] != '/')) {
		fprintf(stderr, "fd %d is `%s`, outside `%s`\n", fd, path, S.root);
		abort();
	}
	if (!S_ISDIR(st.st_mode))
		return;
	/* By inode, too: `..` from a directory inside reaches the root before `/`. */
	cur = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	CHECK(cur >= 0);
	for (int i = 0;; i++) {
		struct stat up;
		int next;

		CHECK(i < PATH_MAX);
		CHECK(fstat(cur, &st) == 0);
		if (st.st_dev == S.root_st.st_dev && st.st_ino == S.root_st.st_ino)
			break;
		next = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		CHECK(next >= 0);
		CHECK(fstat(next, &up) == 0);
		if (up.st_dev == st.st_dev && up.st_ino == st.st_ino) {
			fprintf(stderr, "fd %d (`%s`) reaches `/` without passing the root\n", fd,
				path);
			abort();
		}
		close(cur);
		cur = next;
	}
	close(cur);
}

static void check_err(int r, const struct ts_error *err)
{
	CHECK(ERRNO_OK(r));
	CHECK(err->code == -r);
	CHECK(err->msg[0] && memchr(err->msg, '\0', sizeof(err->msg)));
}

static void check_parsed(const struct ts_fpath *p)
{
	const char *s = p->rel;
	size_t pl;

	CHECK(strlen(p->rel) < PATH_MAX - 1);
	CHECK(p->rel[0] != '/');
	while (*s) {
		size_t n = strcspn(s, "/");

		CHECK(n > 0 && n <= NAME_MAX);
		CHECK(!(n == 1 && s[0] == '.') && !(n == 2 && s[0] == '.' && s[1] == '.'));
		s += n;
		if (*s) {
			s++;
			CHECK(*s); /* no trailing '/' */
		}
	}
	if (!p->rel[0]) {
		CHECK(!p->name && !strcmp(p->parent, "."));
		return;
	}
	CHECK(p->name && p->name >= p->rel && p->name < p->rel + strlen(p->rel));
	CHECK(p->name[0] && !strchr(p->name, '/'));
	if (p->name == p->rel) {
		CHECK(!strcmp(p->parent, "."));
		return;
	}
	pl = strlen(p->parent);
	CHECK(pl && !strncmp(p->rel, p->parent, pl) && p->rel[pl] == '/' &&
	      p->name == p->rel + pl + 1);
}

static const uint64_t open_flags[] = {
	O_PATH,
	O_PATH | O_DIRECTORY,
	O_PATH | O_NOFOLLOW,
	O_RDONLY | O_NOCTTY | O_NONBLOCK, /* op_read */
	O_RDONLY | O_DIRECTORY,		  /* op_list */
	O_RDONLY | O_NONBLOCK | O_NOFOLLOW,
};

enum op {
	OP_STAT,
	OP_OPEN,
	OP_STEP,
	OP_MKDIR,
	OP_WRITE,
	OP_REMOVE,
	OP_SUBTREE,
	OP_MAX,
};

/* A target a write-like operation accepted is no mount root (the kernel's word for it). */
static void check_not_mount_root(int pfd, const char *name)
{
	struct statx sx;

	if (statx(pfd, name, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &sx) == 0)
		CHECK(!(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT));
}

/* The checks a write makes before it writes (write_prepare in runtime/files.c). */
static void op_write(const struct ts_files *f, const struct ts_fpath *p, bool *dirty)
{
	struct ts_error err = { 0 };
	_cleanup_close_ int pfd = -EBADF;
	struct stat st;
	bool want = false;
	int r;

	if (!p->name || p->slash)
		return;
	*dirty = true;
	pfd = ts_files_open_parent(f, p, true, &err);
	if (pfd < 0) {
		check_err(pfd, &err);
		return;
	}
	check_inside(pfd);
	if (fstatat(pfd, p->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
		return;
	r = ts_files_check_target(f, pfd, p->name, p->shown, &err);
	if (is_protected(p->name))
		CHECK(r == -EPERM);
	if (r < 0) {
		check_err(r, &err);
		return;
	}
	check_not_mount_root(pfd, p->name);
	if (fstatat(pfd, p->name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_nlink < 2)
		return;
	/* a hard link to a protected file is found as such, and nothing else is */
	for (size_t i = 0; i < S.n_bound; i++)
		want |= S.bound[i].st_dev == st.st_dev && S.bound[i].st_ino == st.st_ino;
	r = ts_files_inode_mounted(&st);
	CHECK(r == (want ? 1 : 0));
}

/* runtime/files.c op_remove; without rm, the checks of one side of a rename. */
static void op_remove(const struct ts_files *f, const struct ts_fpath *p, bool rm, bool *dirty)
{
	struct ts_error err = { 0 };
	_cleanup_close_ int pfd = -EBADF;
	char path[PATH_MAX + 1], dir[PATH_MAX];
	struct stat st;
	int r;

	if (!p->name)
		return;
	pfd = ts_files_open_parent(f, p, false, &err);
	if (pfd < 0) {
		check_err(pfd, &err);
		return;
	}
	check_inside(pfd);
	r = ts_files_check_target(f, pfd, p->name, p->shown, &err);
	if (is_protected(p->name))
		CHECK(r == -EPERM);
	if (r == 0)
		r = ts_files_check_subtree(pfd, p->name, p->shown, &err);
	if (r < 0) {
		check_err(r, &err);
		return;
	}
	check_not_mount_root(pfd, p->name);
	/* accepted: nothing below it is a mount point */
	if (fstatat(pfd, p->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
	    fd_path(pfd, dir, sizeof(dir))) {
		snprintf(path, sizeof(path), "%s/%s", strcmp(dir, "/") ? dir : "", p->name);
		CHECK(!mount_below(path));
	}
	if (!rm)
		return;
	snprintf(path, sizeof(path), "/%s", p->rel);
	*dirty = true;
	r = ts_files_rm_tree(pfd, p->name, path, &err);
	if (r < 0) {
		check_err(r, &err);
		return;
	}
	CHECK(fstatat(pfd, p->name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT);
}

static void op_step(const char *name, uint64_t flags)
{
	char want[PATH_MAX * 2], got[PATH_MAX];
	_cleanup_close_ int dfd = -EBADF;
	int fd;

	dfd = ts_files_open_in_root(&(struct ts_files){ .cfg = &S.cfg[0], .root = S.root_fd },
				    "home/user", O_PATH | O_DIRECTORY);
	CHECK(dfd >= 0);
	fd = ts_files_open_step(dfd, name, flags);
	if (fd < 0) {
		CHECK(ERRNO_OK(fd));
		return;
	}
	check_inside(fd);
	/* No symlink followed and nothing above dfd: its name is dfd's, then name's. */
	if (!fd_path(fd, got, sizeof(got))) {
		close(fd);
		return;
	}
	snprintf(want, sizeof(want), "%s/home/user", S.root);
	CHECK(!strncmp(got, want, strlen(want)) &&
	      (!got[strlen(want)] || got[strlen(want)] == '/'));
	if (!strchr(name, '.')) {
		char norm[PATH_MAX * 2];
		size_t n = (size_t)snprintf(norm, sizeof(norm), "%s", want);

		for (const char *s = name; *s;) {
			size_t k = strcspn(s, "/");

			if (k)
				n += (size_t)snprintf(norm + n, sizeof(norm) - n, "/%.*s", (int)k,
						      s);
			s += k;
			s += *s == '/';
		}
		CHECK(!strcmp(got, norm));
	}
	close(fd);
}

static int lowest_free_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0);
	close(fd);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ts_ctl_msg m = { 0 };
	struct ts_error err = { 0 };
	struct ts_fpath p;
	struct ts_files f;
	char in[PATH_MAX];
	const uint8_t *nul;
	size_t plen;
	bool dirty = false, whole;
	int fd0, fd, r;
	enum op op;
	uint64_t flags;

	if (!S.ready)
		setup();
	if (size < 2 || size > 2 * PATH_MAX + 2)
		return 0;
	op = (enum op)(data[0] % OP_MAX);
	flags = open_flags[data[1] % ELEMENTSOF(open_flags)];
	f = (struct ts_files){ .conn = -EBADF,
			       .cfg = &S.cfg[(data[1] >> 7) & 1],
			       .root = S.root_fd };
	whole = data[1] & 0x40;
	data += 2;
	size -= 2;
	fd0 = lowest_free_fd();

	if (op == OP_STEP) {
		/* a name, no ctl field in between: open_step gets what files.c gives it */
		memcpy(in, data, size < sizeof(in) - 1 ? size : sizeof(in) - 1);
		in[size < sizeof(in) - 1 ? size : sizeof(in) - 1] = '\0';
		op_step(in, flags);
		goto out;
	}
	/* The path as a ctl field: up to the first NUL, or all of it (byte 1, bit 6) */
	nul = memchr(data, '\0', size);
	plen = nul && !whole ? (size_t)(nul - data) : size;
	ts_ctl_msg_init(&m, TS_CTL_FILE, 1);
	CHECK(ts_ctl_put(&m, TS_T_PATH, data, plen) == 0);
	r = ts_files_get_path(&m, TS_T_PATH, in, &err);
	ts_ctl_msg_free(&m);
	if (r < 0) {
		check_err(r, &err);
		CHECK(plen >= PATH_MAX || memchr(data, '\0', plen));
		goto out;
	}
	CHECK(strlen(in) == plen);
	r = ts_files_path_parse(&f, in, &p, &err);
	if (r < 0) {
		check_err(r, &err);
		CHECK(r == -EINVAL || r == -ENAMETOOLONG);
		goto out;
	}
	check_parsed(&p);
	CHECK(!strncmp(p.shown, in, sizeof(p.shown) - 1));

	switch (op) {
	case OP_STAT:
		fd = p.name ? ts_files_open_parent(&f, &p, false, &err)
			    : ts_files_open_in_root(&f, "", O_PATH | O_DIRECTORY);
		if (fd < 0) {
			CHECK(p.name);
			check_err(fd, &err);
			break;
		}
		check_inside(fd);
		close(fd);
		break;
	case OP_OPEN:
		fd = ts_files_open_in_root(&f, p.rel, flags);
		if (fd < 0) {
			CHECK(ERRNO_OK(fd));
			break;
		}
		check_inside(fd);
		close(fd);
		break;
	case OP_MKDIR:
		if (!p.name)
			break;
		dirty = true;
		fd = ts_files_open_parent(&f, &p, true, &err);
		if (fd < 0) {
			check_err(fd, &err);
			break;
		}
		check_inside(fd);
		close(fd);
		break;
	case OP_WRITE:
		op_write(&f, &p, &dirty);
		break;
	case OP_REMOVE:
	case OP_SUBTREE:
		op_remove(&f, &p, op == OP_REMOVE, &dirty);
		break;
	case OP_STEP:
	case OP_MAX:
		break;
	}
out:
	CHECK(lowest_free_fd() == fd0);
	if (dirty) {
		check_world();
		fx_sync();
	}
	return 0;
}
