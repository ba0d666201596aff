// SPDX-License-Identifier: Apache-2.0
/*
 * FS and PP: file systems, overlay residue and protected paths (security-cases.md
 * §B.8, §B.10). Protected files are given workspace-relative with --pp NAME=SHA256;
 * the cwd is the workspace. An fd that should not have opened is closed untouched:
 * the host re-hashes the files, so a false PASS is caught there.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "probe.h"

#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_KEEP_SIZE 0x01
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif

#define DENY_WRITE ERRS(EROFS, EACCES, EPERM)

static bool create_file(const char *path, const char *content)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return false;
	bool ok = write(fd, content, strlen(content)) == (ssize_t)strlen(content);
	return close(fd) == 0 && ok;
}

/* Open with flags that must be refused; an fd that opens is closed untouched. */
static bool open_refused(struct probe_res *r, const char *what, const char *path, int flags,
			 const int *errs)
{
	errno = 0;
	int fd = open(path, flags | O_CLOEXEC | O_NOCTTY, 0644);
	bool ok = expect_err(r, what, fd, errno, errs);
	if (fd >= 0)
		close(fd);
	return ok;
}

static void abs_ws(const char *rel, char *out, size_t size)
{
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)))
		snprintf(cwd, sizeof(cwd), "/home/user");
	if (snprintf(out, size, "%s/%s", cwd, rel) >= (int)size)
		out[0] = '\0';
}

PROBE_CASE(fs01_ro_root)
{
	struct statvfs sv;
	if (CTL_OK(r, "create(/tmp)", open("/tmp/yard-fs01", O_WRONLY | O_CREAT | O_CLOEXEC, 0600)))
		unlink("/tmp/yard-fs01");
	if (CTL_OK(r, "create(workspace)", open("yard-fs01", O_WRONLY | O_CREAT | O_CLOEXEC, 0600)))
		unlink("yard-fs01");
	static const char *const created[] = { "/usr/bin/yard-x", "/yard-x", "/etc/yard-x",
					       "/usr/yard-x" };
	for (size_t i = 0; i < 4; i++)
		if (!open_refused(r, created[i], created[i], O_WRONLY | O_CREAT | O_EXCL,
				  DENY_WRITE))
			unlink(created[i]);
	open_refused(r, "/etc/passwd(append)", "/etc/passwd", O_WRONLY | O_APPEND, DENY_WRITE);
	open_refused(r, "/usr/bin/env(append)", "/usr/bin/env", O_WRONLY | O_APPEND,
		     ERRS(EROFS, EACCES, EPERM, ETXTBSY));
	if (!TRY(r, "mkdir(/usr/yard-d)", mkdir("/usr/yard-d", 0700), EROFS, EACCES, EPERM))
		rmdir("/usr/yard-d");
	if (statvfs("/usr", &sv) == 0 && !(sv.f_flag & ST_RDONLY))
		res_fail(r, "/usr is mounted read-write");
	else
		res_note(r, "/usr ro");
}

PROBE_CASE(fs02_copy_up)
{
	struct statvfs sv;
	CTL_OK(r, "statvfs(/usr)", statvfs("/usr", &sv));
	if (!ctx->lower_file) {
		/* No harness canary in a lower layer: only check that the host /usr refuses. */
		open_refused(r, "/usr/bin/env(append)", "/usr/bin/env", O_WRONLY | O_APPEND,
			     ERRS(EROFS, EACCES, EPERM, ETXTBSY));
		res_note(r, "no --lower-file: host-side hash not checked");
		return;
	}
	int fd = open(ctx->lower_file, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0) {
		expect_err(r, "append(lower file)", -1, errno, DENY_WRITE);
		return;
	}
	/* Writable: it must be a copy-up. The host compares the lower file's hash. */
	ssize_t n = write(fd, "yard\n", 5);
	close(fd);
	res_note(r, "append(lower file)=%s (copy-up; host verifies the lower copy)",
		 n == 5 ? "OK" : en(errno));
}

/* The Dirty Pipe sequence (CVE-2022-0847) against a file we may only read. */
static void dirty_pipe(struct probe_res *r, const char *label, const char *path)
{
	char before[65], after[65];
	static char buf[65536];
	if (sha256_file(path, before) < 0) {
		res_note(r, "%s: unreadable", label);
		return;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int p[2];
	if (fd < 0 || pipe(p) < 0) {
		res_fail(r, "%s: setup %s", label, en(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	/* Fill and drain so every pipe buffer carries PIPE_BUF_FLAG_CAN_MERGE. */
	int cap = fcntl(p[1], F_GETPIPE_SZ);
	for (int left = cap; left > 0;) {
		ssize_t n = write(p[1], buf, left < (int)sizeof(buf) ? (size_t)left : sizeof(buf));
		if (n <= 0)
			break;
		left -= (int)n;
	}
	for (int left = cap; left > 0;) {
		ssize_t n = read(p[0], buf, left < (int)sizeof(buf) ? (size_t)left : sizeof(buf));
		if (n <= 0)
			break;
		left -= (int)n;
	}
	loff_t off = 0;
	ssize_t s = splice(fd, &off, p[1], NULL, 1, 0);
	ssize_t w = s == 1 ? write(p[1], "YARD", 4) : -1;
	close(p[0]);
	close(p[1]);
	close(fd);
	if (sha256_file(path, after) < 0 || strcmp(before, after))
		res_fail(r, "%s: content changed by splice+write", label);
	else
		res_note(r, "%s: unchanged(splice=%zd write=%zd)", label, s, w);
}

PROBE_CASE(fs03_dirty_pipe)
{
	int p[2];
	CTL_OK(r, "pipe", pipe(p));
	size_t n = 0;
	for (size_t i = 0; i < ctx->n_pp; i++, n++)
		dirty_pipe(r, ctx->pp[i].name, ctx->pp[i].name);
	if (ctx->lower_file) {
		dirty_pipe(r, "lower file", ctx->lower_file);
		n++;
	}
	if (!n)
		res_skip(r, "no protected or lower file given");
}

PROBE_CASE(fs04_hardlinks)
{
	if (create_file("yard-fs04-src", "x")) {
		if (CTL_OK(r, "link(within workspace)", link("yard-fs04-src", "yard-fs04-dst")))
			unlink("yard-fs04-dst");
		unlink("yard-fs04-src");
	} else {
		res_fail(r, "ctl: cannot create a workspace file: %s", en(errno));
	}
	const char *src[] = { "/usr/bin/env", "/etc/hostname", "/etc/passwd", ctx->lower_file };
	const char *dst[] = { "yard-fs04-a", "yard-fs04-b", "yard-fs04-c", "yard-fs04-d" };
	for (size_t i = 0; i < 4; i++) {
		char what[PATH_MAX + 16];
		if (!src[i])
			continue;
		snprintf(what, sizeof(what), "link(%s)", src[i]);
		if (!TRY(r, what, link(src[i], dst[i]), EXDEV, EPERM, ENOENT))
			unlink(dst[i]);
	}
}

PROBE_CASE(fs05_residue)
{
	struct stat st;
	char opts[256] = "";
	if (!create_file("yard-fs05-suid", "#!/bin/sh\nid\n")) {
		res_fail(r, "ctl: create: %s", en(errno));
		return;
	}
	res_note(r, "ctl:create=OK");
	/* Allowed on our own file; the host audits that the owner is never privileged. */
	errno = 0;
	int rc = chmod("yard-fs05-suid", 06755);
	res_note(r, "chmod(u+s,g+s)=%s", rc == 0 ? "OK" : en(errno));
	if (stat("yard-fs05-suid", &st) == 0)
		res_note(r, "mode=%o", st.st_mode & 07777);
	TRY(r, "chown(0:0)", chown("yard-fs05-suid", 0, 0), EPERM, EINVAL);
	/* VFS_CAP_REVISION_2 with CAP_NET_RAW effective and permitted. */
	unsigned char cap[20] = { 0x01, 0x00, 0x00, 0x02, 0x00, 0x20, 0x00, 0x00 };
	create_file("yard-fs05-cap", "x");
	errno = 0;
	rc = setxattr("yard-fs05-cap", "security.capability", cap, sizeof(cap), 0);
	res_note(r, "setxattr(security.capability)=%s",
		 rc == 0 ? "OK(host audits rootid)" : en(errno));
	if (CTL_OK(r, "mkfifo", mkfifo("yard-fs05-fifo", 0644)))
		res_note(r, "fifo left for the host audit");
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "yard-fs05-sock");
	unlink(a.sun_path);
	CTL_OK(r, "bind(unix socket file)", bind(s, (void *)&a, sizeof(a)));
	close(s);
	if (!TRY(r, "mknod(char 1:3)", mknod("yard-fs05-dev", S_IFCHR | 0666, makedev(1, 3)),
		 EPERM))
		res_note(r, "device node left for the host audit");
	char ws[PATH_MAX];
	if (getcwd(ws, sizeof(ws)) && is_mount_point(ws, opts, sizeof(opts)))
		res_note(r, "workspace mount %s", opts);
}

PROBE_CASE(fs08_fsize)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_FSIZE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY) {
		res_skip(r, "no RLIMIT_FSIZE set");
		return;
	}
	signal(SIGXFSZ, SIG_IGN);
	int fd = open("yard-fs08", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (!control_ok(r, "open", fd, errno))
		return;
	off_t lim = (off_t)rl.rlim_cur;
	res_note(r, "RLIMIT_FSIZE=%lld", (long long)lim);
	if (lim > 0)
		CTL_OK(r, "pwrite(limit-1)", pwrite(fd, "x", 1, lim - 1));
	TRY(r, "pwrite(limit)", pwrite(fd, "x", 1, lim), EFBIG);
	close(fd);
	unlink("yard-fs08");
}

PROBE_CASE(fs09_planted_symlink)
{
	char abs[PATH_MAX], target[PATH_MAX];
	if (!ctx->n_symlinks) {
		res_skip(r, "no planted symlinks given (--symlink)");
		return;
	}
	for (size_t i = 0; i < ctx->n_symlinks; i++) {
		const char *n = ctx->symlinks[i];
		struct stat st;
		if (lstat(n, &st) < 0) {
			res_fail(r, "%s: lstat=%s", n, en(errno));
			continue;
		}
		if (!S_ISLNK(st.st_mode)) {
			res_fail(r, "%s is no longer a symlink (mounted over or replaced)", n);
			continue;
		}
		ssize_t len = readlink(n, target, sizeof(target) - 1);
		target[len > 0 ? len : 0] = '\0';
		abs_ws(n, abs, sizeof(abs));
		if (is_mount_point(abs, NULL, 0))
			res_fail(r, "%s is a mount point", n);
		else
			res_note(r, "%s: symlink, not a mount", n);
	}
	/* Every mount below the workspace must be one of the protected regular files. */
	char ws[PATH_MAX], line[4096];
	if (!getcwd(ws, sizeof(ws)))
		return;
	size_t wl = strlen(ws);
	FILE *f = fopen("/proc/self/mountinfo", "re");
	size_t mounts = 0;
	while (f && fgets(line, sizeof(line), f)) {
		char *mp = line;
		for (int k = 0; k < 4 && mp; k++)
			mp = strchr(mp + 1, ' ');
		if (!mp)
			continue;
		mp++;
		mp[strcspn(mp, " ")] = '\0';
		if (strncmp(mp, ws, wl) || mp[wl] != '/')
			continue;
		mounts++;
		bool known = false;
		for (size_t i = 0; i < ctx->n_pp; i++)
			if (!strcmp(mp + wl + 1, ctx->pp[i].name))
				known = true;
		if (!known)
			res_fail(r, "unexpected mount %s", mp);
	}
	if (f)
		fclose(f);
	res_note(r, "mounts below the workspace=%zu", mounts);
}

/* ---- protected paths ---- */

static bool pp_given(struct probe_ctx *ctx, struct probe_res *r)
{
	if (ctx->n_pp)
		return true;
	res_skip(r, "no protected files given (--pp NAME=SHA256)");
	return false;
}

static void pp_hash_unchanged(struct probe_res *r, const struct probe_kv *pp)
{
	char hex[65];
	if (!pp->value)
		return;
	if (sha256_file(pp->name, hex) < 0 || strcmp(hex, pp->value))
		res_fail(r, "%s content changed", pp->name);
}

PROBE_CASE(pp01_read)
{
	if (!pp_given(ctx, r))
		return;
	for (size_t i = 0; i < ctx->n_pp; i++) {
		char hex[65];
		int e = sha256_file(ctx->pp[i].name, hex);
		if (e < 0)
			res_fail(r, "%s unreadable: %s", ctx->pp[i].name, en(-e));
		else if (ctx->pp[i].value && strcmp(hex, ctx->pp[i].value))
			res_fail(r, "%s differs from the host's", ctx->pp[i].name);
		else
			res_note(r, "%s=same", ctx->pp[i].name);
	}
}

PROBE_CASE(pp02_write)
{
	if (!pp_given(ctx, r))
		return;
	for (size_t i = 0; i < ctx->n_pp; i++) {
		const char *n = ctx->pp[i].name;
		char abs[PATH_MAX], opts[256] = "", what[PATH_MAX + 32];
		abs_ws(n, abs, sizeof(abs));
		if (!is_mount_point(abs, opts, sizeof(opts)))
			res_fail(r, "%s is not its own mount", n);
		else if (strncmp(opts, "ro", 2) || (opts[2] && opts[2] != ','))
			res_fail(r, "%s mount is %s", n, opts);
		else
			res_note(r, "%s:ro-mount", n);
		snprintf(what, sizeof(what), "%s:O_TRUNC", n);
		open_refused(r, what, n, O_WRONLY | O_TRUNC, DENY_WRITE);
		snprintf(what, sizeof(what), "%s:>", n);
		open_refused(r, what, n, O_WRONLY | O_CREAT | O_TRUNC, DENY_WRITE);
		snprintf(what, sizeof(what), "%s:O_APPEND", n);
		open_refused(r, what, n, O_WRONLY | O_APPEND, DENY_WRITE);
		snprintf(what, sizeof(what), "%s:O_RDWR", n);
		open_refused(r, what, n, O_RDWR, DENY_WRITE);
		snprintf(what, sizeof(what), "%s:truncate", n);
		TRY(r, what, truncate(n, 0), EROFS, EACCES, EPERM);
		int fd = open(n, O_RDONLY | O_CLOEXEC);
		if (control_ok(r, "open(RDONLY)", fd, errno)) {
			snprintf(what, sizeof(what), "%s:fallocate(PUNCH_HOLE)", n);
			TRY(r, what,
			    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 1), EBADF,
			    EROFS, EPERM, EACCES);
			char reopen[64];
			snprintf(reopen, sizeof(reopen), "/proc/self/fd/%d", fd);
			snprintf(what, sizeof(what), "%s:reopen(/proc/self/fd,RDWR)", n);
			open_refused(r, what, reopen, O_RDWR, DENY_WRITE);
			close(fd);
		}
		pp_hash_unchanged(r, &ctx->pp[i]);
	}
}

/* A scratch file next to the protected one (same directory, same mount as its parent). */
static void sibling(const char *name, const char *suffix, char *out, size_t size)
{
	const char *slash = strrchr(name, '/');
	if (slash)
		snprintf(out, size, "%.*s/yard-%s", (int)(slash - name), name, suffix);
	else
		snprintf(out, size, "yard-%s", suffix);
}

PROBE_CASE(pp03_rename_over)
{
	if (!pp_given(ctx, r))
		return;
	for (size_t i = 0; i < ctx->n_pp; i++) {
		const char *n = ctx->pp[i].name;
		char t[PATH_MAX], what[PATH_MAX + 32];
		sibling(n, "pp03-t", t, sizeof(t));
		if (!create_file(t, "x\n")) {
			res_fail(r, "ctl: create %s: %s", t, en(errno));
			continue;
		}
		snprintf(what, sizeof(what), "%s:rename", n);
		TRY(r, what, rename(t, n), EBUSY, EROFS, EPERM, EXDEV);
		snprintf(what, sizeof(what), "%s:RENAME_EXCHANGE", n);
		if (!TRY(r, what, renameat2(AT_FDCWD, t, AT_FDCWD, n, RENAME_EXCHANGE), EBUSY,
			 EROFS, EPERM, EXDEV))
			renameat2(AT_FDCWD, t, AT_FDCWD, n, RENAME_EXCHANGE); /* swap back */
		snprintf(what, sizeof(what), "%s:RENAME_NOREPLACE", n);
		TRY(r, what, renameat2(AT_FDCWD, t, AT_FDCWD, n, RENAME_NOREPLACE), EEXIST, EBUSY,
		    EROFS, EPERM, EXDEV);
		unlink(t);
		pp_hash_unchanged(r, &ctx->pp[i]);
	}
}

PROBE_CASE(pp04_move_away)
{
	if (!pp_given(ctx, r))
		return;
	for (size_t i = 0; i < ctx->n_pp; i++) {
		const char *n = ctx->pp[i].name;
		char bak[PATH_MAX], what[PATH_MAX + 32];
		snprintf(bak, sizeof(bak), "%s.yard-bak", n);
		snprintf(what, sizeof(what), "%s:mv away", n);
		if (!TRY(r, what, rename(n, bak), EBUSY, EROFS, EPERM)) {
			/* Policy violation already recorded; do not recreate, put it back. */
			if (rename(bak, n) < 0)
				res_fail(r, "%s could not be restored: %s", n, en(errno));
		}
		pp_hash_unchanged(r, &ctx->pp[i]);
	}
}

PROBE_CASE(pp05_unlink)
{
	if (!pp_given(ctx, r))
		return;
	for (size_t i = 0; i < ctx->n_pp; i++) {
		const char *n = ctx->pp[i].name;
		char what[PATH_MAX + 32];
		snprintf(what, sizeof(what), "%s:unlink", n);
		TRY(r, what, unlink(n), EBUSY, EROFS, EPERM);
		const char *slash = strrchr(n, '/');
		if (!slash)
			continue;
		/* The parent directory: rmdir, and move it (protection must follow the mount). */
		char dir[PATH_MAX / 2], moved[PATH_MAX], inner[PATH_MAX];
		if (snprintf(dir, sizeof(dir), "%.*s", (int)(slash - n), n) >= (int)sizeof(dir))
			continue;
		snprintf(what, sizeof(what), "%s:rmdir", dir);
		TRY(r, what, rmdir(dir), ENOTEMPTY, EBUSY, EROFS, EPERM);
		snprintf(moved, sizeof(moved), "%s.yard-moved", dir);
		if (rename(dir, moved) == 0) {
			if (snprintf(inner, sizeof(inner), "%s%s", moved, slash) >=
				    (int)sizeof(inner) ||
			    snprintf(what, sizeof(what), "%s(after mv):O_WRONLY", inner) >=
				    (int)sizeof(what))
				continue;
			open_refused(r, what, inner, O_WRONLY | O_APPEND, DENY_WRITE);
			if (rename(moved, dir) < 0)
				res_fail(r, "could not move %s back: %s", moved, en(errno));
			else
				res_note(r, "mv %s and back=OK", dir);
		} else {
			res_note(r, "mv %s=%s", dir, en(errno));
		}
		pp_hash_unchanged(r, &ctx->pp[i]);
	}
}

PROBE_CASE(pp06_hardlink)
{
	if (!pp_given(ctx, r))
		return;
	for (size_t i = 0; i < ctx->n_pp; i++) {
		const char *n = ctx->pp[i].name;
		char alias[PATH_MAX], what[PATH_MAX + 32];
		sibling(n, "pp06-alias", alias, sizeof(alias));
		snprintf(what, sizeof(what), "%s:ln", n);
		if (!TRY(r, what, link(n, alias), EXDEV, EPERM)) {
			snprintf(what, sizeof(what), "%s:write via hardlink", n);
			open_refused(r, what, alias, O_WRONLY | O_APPEND, DENY_WRITE);
			unlink(alias);
		}
		pp_hash_unchanged(r, &ctx->pp[i]);
	}
}

PROBE_CASE(pp07_symlink)
{
	if (!pp_given(ctx, r))
		return;
	for (size_t i = 0; i < ctx->n_pp; i++) {
		const char *n = ctx->pp[i].name;
		char alias[PATH_MAX], abs[PATH_MAX], what[PATH_MAX + 32];
		sibling(n, "pp07-alias", alias, sizeof(alias));
		abs_ws(n, abs, sizeof(abs));
		unlink(alias);
		if (!CTL_OK(r, "symlink", symlink(abs, alias)))
			continue;
		int fd = open(alias, O_RDONLY | O_CLOEXEC);
		if (control_ok(r, "read via symlink", fd, errno))
			close(fd);
		snprintf(what, sizeof(what), "%s:write via symlink", n);
		open_refused(r, what, alias, O_WRONLY | O_TRUNC, DENY_WRITE);
		unlink(alias);
		pp_hash_unchanged(r, &ctx->pp[i]);
	}
}

PROBE_CASE(pp10_metadata)
{
	if (!pp_given(ctx, r))
		return;
	for (size_t i = 0; i < ctx->n_pp; i++) {
		const char *n = ctx->pp[i].name;
		char what[PATH_MAX + 32], val[8];
		struct stat a, b;
		if (stat(n, &a) < 0) {
			res_fail(r, "%s: stat=%s", n, en(errno));
			continue;
		}
		snprintf(what, sizeof(what), "%s:chmod", n);
		TRY(r, what, chmod(n, (a.st_mode & 07777) ^ 0066), EROFS, EPERM);
		snprintf(what, sizeof(what), "%s:chown", n);
		TRY(r, what, chown(n, a.st_uid, a.st_gid), EROFS, EPERM);
		snprintf(what, sizeof(what), "%s:setxattr(user.yard)", n);
		TRY(r, what, setxattr(n, "user.yard", "x", 1, 0), EROFS, EPERM, EACCES);
		snprintf(what, sizeof(what), "%s:utimensat", n);
		TRY(r, what, utimensat(AT_FDCWD, n, NULL, 0), EROFS, EPERM, EACCES);
		int fd = open(n, O_RDONLY | O_CLOEXEC);
		int flags = 0;
		if (fd >= 0 && ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
			flags |= FS_IMMUTABLE_FL;
			snprintf(what, sizeof(what), "%s:chattr+i", n);
			TRY(r, what, ioctl(fd, FS_IOC_SETFLAGS, &flags), EROFS, EPERM, EACCES);
		} else {
			res_note(r, "%s:FS_IOC_GETFLAGS=%s", n, en(errno));
		}
		if (fd >= 0)
			close(fd);
		if (stat(n, &b) < 0 || a.st_mode != b.st_mode || a.st_uid != b.st_uid ||
		    a.st_gid != b.st_gid || a.st_mtim.tv_sec != b.st_mtim.tv_sec ||
		    a.st_mtim.tv_nsec != b.st_mtim.tv_nsec)
			res_fail(r, "%s metadata changed", n);
		if (getxattr(n, "user.yard", val, sizeof(val)) >= 0)
			res_fail(r, "%s gained xattr user.yard", n);
	}
}

PROBE_CASE(pp12_new_name)
{
	/*
	 * Documented policy: a protected name created during a run is allowed and becomes
	 * protected on the next start. The .env stays for the harness to check that.
	 */
	if (mkdir("yard-pp12", 0755) < 0 && errno != EEXIST) {
		res_fail(r, "ctl: mkdir: %s", en(errno));
		return;
	}
	if (create_file("yard-pp12/.env", "yard-pp12\n"))
		res_note(r, "new yard-pp12/.env=OK(allowed by policy)");
	else
		res_fail(r, "new yard-pp12/.env=%s(policy says allowed)", en(errno));
	if (create_file("yard-pp12/id_rsa", "yard-pp12\n")) {
		res_note(r, "new yard-pp12/id_rsa=OK");
		unlink("yard-pp12/id_rsa");
	} else {
		res_fail(r, "new yard-pp12/id_rsa=%s(policy says allowed)", en(errno));
	}
}

PROBE_CASE(pp13_splice)
{
	if (!pp_given(ctx, r))
		return;
	if (!create_file("yard-pp13-src", "x")) {
		res_fail(r, "ctl: create: %s", en(errno));
		return;
	}
	int src = open("yard-pp13-src", O_RDONLY | O_CLOEXEC);
	for (size_t i = 0; i < ctx->n_pp; i++) {
		const char *n = ctx->pp[i].name;
		char what[PATH_MAX + 32];
		int fd = open(n, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			res_fail(r, "%s: open(RDONLY)=%s", n, en(errno));
			continue;
		}
		loff_t off = 0;
		snprintf(what, sizeof(what), "%s:copy_file_range", n);
		TRY(r, what, copy_file_range(src, &off, fd, NULL, 1, 0), EBADF, EROFS, EPERM,
		    EXDEV);
		int p[2];
		if (pipe(p) == 0) {
			(void)!write(p[1], "x", 1);
			snprintf(what, sizeof(what), "%s:splice", n);
			TRY(r, what, splice(p[0], NULL, fd, NULL, 1, 0), EBADF, EROFS, EPERM);
			close(p[0]);
			close(p[1]);
		}
		off = 0;
		snprintf(what, sizeof(what), "%s:sendfile", n);
		TRY(r, what, sendfile(fd, src, &off, 1), EBADF, EINVAL, EROFS, EPERM);
		close(fd);
		dirty_pipe(r, n, n);
		pp_hash_unchanged(r, &ctx->pp[i]);
	}
	close(src);
	unlink("yard-pp13-src");
}

PROBE_CASE(pp14_kernel)
{
	static const struct {
		const char *id;
		probe_fn fn;
	} sub[] = {
		{ "PP-02", pp02_write },     { "PP-03", pp03_rename_over },
		{ "PP-04", pp04_move_away }, { "PP-05", pp05_unlink },
		{ "PP-06", pp06_hardlink },  { "PP-07", pp07_symlink },
		{ "PP-10", pp10_metadata },
	};
	if (!pp_given(ctx, r))
		return;
	/* Run each from here, bypassing any API: only kernel enforcement can hold. */
	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		struct probe_res s;
		memset(&s, 0, sizeof(s));
		s.id = sub[i].id;
		sub[i].fn(ctx, &s);
		if (s.failed)
			res_fail(r, "%s failed", sub[i].id);
		else
			res_note(r, "%s:%s", sub[i].id, s.skipped ? "SKIP" : "held");
	}
}
