/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The copier of snapshots (src/lib/treecopy.h) on a tree as a sandbox could leave it:
 * contents, modes without setid bits, times, user.* xattrs, symlinks copied as links and
 * never followed (one points at a FIFO outside: following it would block), FIFOs,
 * whiteouts; a device refused; the byte, entry and depth bounds; one owner for every copy
 * (set_owner, as root).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "tap.h"
#include "treecopy.h"
#include "util.h"

static char base[256];

static int dirfd_of(const char *name)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", base, name);
	mkdir(p, 0755);
	return open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static int copy(const char *src, const char *dst, uint64_t max_bytes, uint64_t max_entries,
		struct ts_error *err)
{
	struct ts_treecopy c = { .max_bytes = max_bytes, .max_entries = max_entries };
	int s = dirfd_of(src), d = dirfd_of(dst), r = ts_treecopy(s, d, &c, err);

	close(s);
	close(d);
	return r;
}

static void put(const char *path, const char *text, mode_t mode)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", base, path);
	f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	chmod(p, mode);
}

int main(void)
{
	struct ts_error err = { 0 };
	char p[512], q[512], buf[64];
	struct stat st;
	ssize_t n;
	int r;
	bool whiteout, ovl_xattrs;

	plan(0);
	snprintf(base, sizeof(base), "/tmp/ts-treecopy-XXXXXX");
	if (!mkdtemp(base)) {
		printf("1..0 # SKIP mkdtemp: %s\n", strerror(errno));
		return 0;
	}
	alarm(60); /* a followed link to the FIFO would block: fail, do not hang */
	mkdir(strcat(strcpy(p, base), "/src"), 0755);
	mkdir(strcat(strcpy(p, base), "/src/d"), 0750);
	mkdir(strcat(strcpy(p, base), "/src/d/e"), 0755);
	put("src/d/e/f", "deep\n", 0644);
	put("src/setuid", "x", 04755);
	put("src/x", "xattr", 0640);
	snprintf(p, sizeof(p), "%s/src/x", base);
	if (setxattr(p, "user.k", "v1", 2, 0) < 0)
		diag("setxattr: %s", strerror(errno));
	snprintf(p, sizeof(p), "%s/outside-fifo", base);
	mkfifo(p, 0666);
	snprintf(q, sizeof(q), "%s/src/trap", base);
	if (symlink(p, q) < 0)
		diag("symlink: %s", strerror(errno));
	snprintf(q, sizeof(q), "%s/src/fifo", base);
	mkfifo(q, 0644);
	snprintf(q, sizeof(q), "%s/src/wh", base);
	whiteout = mknod(q, S_IFCHR | 0, makedev(0, 0)) == 0;

	/* an upper as overlayfs with `userxattr` leaves it, and what else a layer could carry */
	snprintf(p, sizeof(p), "%s/src/d", base);
	ovl_xattrs = setxattr(p, "user.overlay.opaque", "y", 1, 0) == 0 &&
		     setxattr(p, "user.overlay.origin", "\0\xfb\x21", 3, 0) == 0 &&
		     setxattr(p, "user.overlay.impure", "y", 1, 0) == 0 &&
		     setxattr(p, "user.overlay.redirect", "/x", 2, 0) == 0 &&
		     setxattr(p, "user.overlay.overlay.opaque", "y", 1, 0) == 0 &&
		     setxattr(p, "user.note", "n", 1, 0) == 0;
	snprintf(p, sizeof(p), "%s/src/d/e", base);
	ovl_xattrs = ovl_xattrs && setxattr(p, "user.overlay.opaque", "x", 1, 0) == 0;
	snprintf(p, sizeof(p), "%s/src/d/e/f", base);
	ovl_xattrs = ovl_xattrs && setxattr(p, "user.overlay.metacopy", "", 0, 0) == 0;
	if (!ovl_xattrs)
		diag("user.overlay.* on src/d: %s", strerror(errno));

	ok(copy("src", "dst", 0, 0, &err) == 0, "a tree copies (%s)", err.msg);
	snprintf(p, sizeof(p), "%s/dst/d/e/f", base);
	n = -1;
	{
		int fd = open(p, O_RDONLY);

		if (fd >= 0) {
			n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
		}
	}
	ok(n == 5 && !memcmp(buf, "deep\n", 5), "contents of a nested file");
	snprintf(p, sizeof(p), "%s/dst/d", base);
	ok(stat(p, &st) == 0 && (st.st_mode & 07777) == 0750, "a directory's mode");
	/* inside a sandbox (tests/compat) its setid guard refuses the source's setuid bit */
	snprintf(p, sizeof(p), "%s/src/setuid", base);
	if (stat(p, &st) < 0 || !(st.st_mode & S_ISUID)) {
		skip(1, "no setuid file can be made here (a sandbox's setid guard?)");
	} else {
		snprintf(p, sizeof(p), "%s/dst/setuid", base);
		r = stat(p, &st);
		ok(r == 0 && (st.st_mode & 07777) == 0755, "the setuid bit is dropped (%o)",
		   (unsigned)(st.st_mode & 07777));
	}
	snprintf(p, sizeof(p), "%s/src/x", base);
	r = getxattr(p, "user.k", buf, sizeof(buf)) == 2 ? 0 : -1;
	snprintf(p, sizeof(p), "%s/dst/x", base);
	if (r == 0)
		ok(getxattr(p, "user.k", buf, sizeof(buf)) == 2 && !memcmp(buf, "v1", 2),
		   "user.* xattrs are copied");
	else
		skip(1, "no user xattrs on this file system");
	if (ovl_xattrs) {
		snprintf(p, sizeof(p), "%s/dst/d", base);
		ok(getxattr(p, "user.overlay.opaque", buf, sizeof(buf)) == 1 && buf[0] == 'y',
		   "an opaque directory's user.overlay.opaque is copied");
		ok(getxattr(p, "user.note", buf, sizeof(buf)) == 1 && buf[0] == 'n',
		   "next to it a user.* xattr that is not overlay's is copied");
		ok(getxattr(p, "user.overlay.origin", buf, sizeof(buf)) < 0 && errno == ENODATA &&
			   getxattr(p, "user.overlay.impure", buf, sizeof(buf)) < 0 &&
			   errno == ENODATA &&
			   getxattr(p, "user.overlay.redirect", buf, sizeof(buf)) < 0 &&
			   errno == ENODATA,
		   "user.overlay.origin, impure and redirect are not copied");
		ok(getxattr(p, "user.overlay.overlay.opaque", buf, sizeof(buf)) < 0 &&
			   errno == ENODATA,
		   "nor what a sandbox set as user.overlay.* (stored escaped, user.overlay.overlay.*)");
		snprintf(p, sizeof(p), "%s/dst/d/e", base);
		ok(getxattr(p, "user.overlay.opaque", buf, sizeof(buf)) < 0 && errno == ENODATA,
		   "an opaque mark other than \"y\" (a lower layer's xwhiteouts) is not copied");
		snprintf(p, sizeof(p), "%s/dst/d/e/f", base);
		ok(getxattr(p, "user.overlay.metacopy", buf, sizeof(buf)) < 0 && errno == ENODATA,
		   "nor user.overlay.metacopy of a file");
	} else {
		skip(6, "no user xattrs on directories of this file system");
	}
	snprintf(p, sizeof(p), "%s/dst/trap", base);
	n = readlink(p, q, sizeof(q) - 1);
	ok(lstat(p, &st) == 0 && S_ISLNK(st.st_mode) && n > 0 && !strncmp(q, base, strlen(base)),
	   "a symlink to a FIFO outside is copied as a link (never opened)");
	snprintf(p, sizeof(p), "%s/dst/fifo", base);
	ok(lstat(p, &st) == 0 && S_ISFIFO(st.st_mode), "a FIFO is made as a FIFO");
	snprintf(p, sizeof(p), "%s/dst/wh", base);
	if (whiteout)
		ok(lstat(p, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0),
		   "a whiteout (0/0) is copied");
	else
		skip(1, "mknod of a whiteout is refused here");

	ok(copy("src", "dst-bytes", 3, 0, &err) == -ENOSPC && strstr(err.msg, "more than 3 bytes"),
	   "past the byte bound: ENOSPC (%s)", err.msg);
	ok(copy("src", "dst-entries", 0, 2, &err) == -E2BIG && strstr(err.msg, "more than 2 files"),
	   "past the entry bound: E2BIG (%s)", err.msg);
	snprintf(p, sizeof(p), "%s/deep", base);
	mkdir(p, 0755);
	for (int i = 0; i <= TS_TREECOPY_MAX_DEPTH && strlen(p) + 3 < sizeof(p); i++) {
		strcat(p, "/a");
		mkdir(p, 0755);
	}
	r = copy("deep", "dst-deep", 0, 0, &err);
	ok(r == -ELOOP || r == -ENAMETOOLONG, "a tree deeper than the bound is refused (%s)",
	   err.msg);
	snprintf(q, sizeof(q), "%s/dev/null", base);
	mkdir(strcat(strcpy(p, base), "/dev"), 0755);
	if (mknod(q, S_IFCHR | 0666, makedev(1, 3)) == 0)
		ok(copy("dev", "dst-dev", 0, 0, &err) == -EPERM && strstr(err.msg, "device"),
		   "a device is refused (%s)", err.msg);
	else
		skip(1, "mknod of a device needs root");
	/* set_owner (a restore into a sandbox of one id): every copy and the top get it.
	 * Asked of the kernel, not of geteuid(): uid 0 of a one-id namespace (`unshare -r`)
	 * has CAP_CHOWN but no id 4242 to give. */
	snprintf(q, sizeof(q), "%s/owner-probe", base);
	close(open(q, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	if (chown(q, 4242, 4343) == 0) {
		struct ts_treecopy c = { .set_owner = true, .owner_uid = 4242, .owner_gid = 4343 };
		int s = dirfd_of("src"), d = dirfd_of("dst-owner");
		const char *names[] = { "", "/d", "/d/e/f", "/setuid", "/trap", "/fifo" };
		bool all = true;

		ts_err_clear(&err);
		if (chown(strcat(strcpy(p, base), "/src/d/e/f"), 1, 2) < 0)
			diag("chown: %s", strerror(errno));
		ok(ts_treecopy(s, d, &c, &err) == 0, "a copy with one owner (%s)", err.msg);
		close(s);
		close(d);
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			snprintf(p, sizeof(p), "%s/dst-owner%s", base, names[i]);
			if (lstat(p, &st) < 0 || st.st_uid != 4242 || st.st_gid != 4343) {
				diag("`%s`: %u:%u", p, (unsigned)st.st_uid, (unsigned)st.st_gid);
				all = false;
			}
		}
		ok(all,
		   "every copy (directory, file of another owner, link, FIFO) has the one owner");
		snprintf(p, sizeof(p), "%s/dst-owner/setuid", base);
		ok(stat(p, &st) == 0 && (st.st_mode & 07777) == 0755,
		   "with one owner too the setuid bit is dropped");
	} else {
		skip(3, "giving another owner needs CAP_CHOWN and ids 4242:4343 mapped");
	}
	/* a sparse file: only its data is copied, its holes stay holes */
	mkdir(strcat(strcpy(p, base), "/sparse"), 0755);
	snprintf(p, sizeof(p), "%s/sparse/big", base);
	{
		int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		bool made = fd >= 0 && ftruncate(fd, 64 << 20) == 0 &&
			    pwrite(fd, "x", 1, 32 << 20) == 1 &&
			    pwrite(fd, "y", 1, (64 << 20) - 1) == 1;

		if (fd >= 0)
			close(fd);
		if (made && stat(p, &st) == 0 && st.st_blocks * 512LL < (1 << 20)) {
			char a = 0, b = 0;

			ok(copy("sparse", "dst-sparse", 0, 0, &err) == 0,
			   "a sparse file copies (%s)", err.msg);
			snprintf(p, sizeof(p), "%s/dst-sparse/big", base);
			fd = open(p, O_RDONLY);
			ok(fd >= 0 && fstat(fd, &st) == 0 && st.st_size == 64 << 20 &&
				   pread(fd, &a, 1, 32 << 20) == 1 &&
				   pread(fd, &b, 1, (64 << 20) - 1) == 1 && a == 'x' && b == 'y',
			   "the copy has the size and the data at their offsets");
			ok(fd >= 0 && st.st_blocks * 512LL < (1 << 20),
			   "the copy is sparse (%lld bytes allocated of 64 MiB)",
			   (long long)st.st_blocks * 512);
			if (fd >= 0)
				close(fd);
		} else {
			skip(3, "no sparse files under /tmp");
		}
	}
	ts_rm_rf_at(AT_FDCWD, base);
	return done();
}
