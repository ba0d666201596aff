/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The file worker (runtime/files.c) run directly, without a sandbox: ts_files_serve on
 * one end of a socketpair in a forked child, a temporary directory as its root, and the
 * host client (src/lib/fileclient.c) on the other end. TAP.
 *
 *   test-files unit       the operations: read, write, list, stat, mkdir, remove,
 *                         rename, watch, atomic writes, malformed requests
 *   test-files security   security-cases.md FA-01..06, 08, 09, 12 and PP-02, 03, 05, 07
 *                         as API calls, with canaries outside the root
 *
 * Where the test can have a private mount namespace (root, or an unprivileged user
 * namespace), protected files are real read-only bind mounts as in a sandbox, and /proc
 * is bound into the root so that magic links exist to be refused; elsewhere those cases
 * are skipped and the name-based protection is still tested.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../runtime/files.h"
#include "../../src/lib/copy.h"
#include "../../src/lib/fileclient.h"
#include "cleanup.h"
#include "ctl.h"
#include "tap.h"
#include "util.h"

static char *patterns[] = { ".env", "*.pem", "id_rsa", "id_ed25519", ".npmrc", ".git-credentials" };

static struct {
	char tmp[128];	  /* everything below is in here */
	char root[160];	  /* the worker's root */
	char ws[192];	  /* root/home/user */
	char canary[160]; /* outside the root: must never change */
	char dest[160];	  /* host destination of copy-outs */
	bool mounts;	  /* a private mount namespace: bind mounts work */
	int conn;	  /* the shared worker */
	pid_t pid;
} T;

static void fail_setup(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	exit(1);
}

static const char *at(char *buf, const char *base, const char *rel)
{
	snprintf(buf, PATH_MAX, "%s/%s", base, rel);
	return buf;
}

static void put(const char *path, const char *content)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || ts_write_all(fd, content, strlen(content)) < 0)
		fail_setup(path);
	close(fd);
}

static void put_ws(const char *rel, const char *content)
{
	char p[PATH_MAX];

	put(at(p, T.ws, rel), content);
}

static bool has(const char *path, const char *content)
{
	char *got = NULL;
	size_t len = 0;
	bool same;

	if (ts_read_file_at(AT_FDCWD, path, 1 << 20, &got, &len) < 0)
		return false;
	same = len == strlen(content) && !memcmp(got, content, len);
	free(got);
	return same;
}

static bool ws_has(const char *rel, const char *content)
{
	char p[PATH_MAX];

	return has(at(p, T.ws, rel), content);
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static bool ws_exists(const char *rel)
{
	char p[PATH_MAX];

	return exists(at(p, T.ws, rel));
}

static void mk(const char *base, const char *rel)
{
	char p[PATH_MAX];

	if (ts_mkdir_p(AT_FDCWD, at(p, base, rel), 0755) < 0)
		fail_setup(p);
}

static void ln_s(const char *target, const char *rel)
{
	char p[PATH_MAX];

	if (symlink(target, at(p, T.ws, rel)) < 0)
		fail_setup(p);
}

/* The canary directory holds exactly `keep` with its content. */
static bool canary_intact(void)
{
	char p[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(T.canary);
	int n = 0;

	if (!d)
		return false;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n == 1 && has(at(p, T.canary, "keep"), "canary");
}

/* Does any entry of dir start with prefix? */
static bool has_prefixed(const char *dir, const char *prefix)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	bool found = false;

	if (!d)
		return false;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, prefix, strlen(prefix)))
			found = true;
	closedir(d);
	return found;
}

static pid_t start_worker(int *conn, bool no_tmpfile)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		fail_setup("socketpair");
	pid = fork();
	if (pid < 0)
		fail_setup("fork");
	if (pid == 0) {
		struct ts_files_cfg cfg = { .protect_patterns = patterns,
					    .n_protect = ELEMENTSOF(patterns),
					    .home = "/home/user",
					    .root = T.root,
					    .no_tmpfile = no_tmpfile };
		struct ts_ctl_msg first = { 0 };

		close(sv[0]);
		if (ts_ctl_recv(sv[1], &first) < 0)
			_exit(0);
		_exit(ts_files_serve(sv[1], &first, &cfg) < 0 ? 1 : 0);
	}
	close(sv[1]);
	*conn = sv[0];
	return pid;
}

static int stop_worker(pid_t pid, int conn)
{
	int status = 0;

	close(conn);
	waitpid(pid, &status, 0);
	return status;
}

/* A memfd holding content, at offset 0. */
static int memfd_with(const void *content, size_t len)
{
	int fd = memfd_create("t", MFD_CLOEXEC);

	if (fd < 0 || ts_write_all(fd, content, len) < 0 || lseek(fd, 0, SEEK_SET) < 0)
		fail_setup("memfd");
	return fd;
}

static int sb_write(const char *path, const char *content, int mode, struct ts_error *err)
{
	int fd = memfd_with(content, strlen(content));
	int r;

	ts_err_clear(err);
	r = ts_files_write_from_fd(T.conn, path, mode, fd, err);
	close(fd);
	return r;
}

/* Read a sandbox file into a new string; NULL on error (*r says which). */
static char *sb_read(const char *path, int *r)
{
	struct ts_error err = { 0 };
	int fd = memfd_create("r", MFD_CLOEXEC);
	char *buf = NULL;
	off_t len;

	*r = ts_files_read_to_fd(T.conn, path, fd, NULL, &err);
	len = lseek(fd, 0, SEEK_END);
	if (*r == 0 && len >= 0 && (buf = calloc(1, (size_t)len + 1)))
		if (pread(fd, buf, (size_t)len, 0) != len) {
			free(buf);
			buf = NULL;
		}
	close(fd);
	return buf;
}

static bool read_is(const char *path, const char *want)
{
	int r;
	char *got = sb_read(path, &r);
	bool same = got && !strcmp(got, want);

	free(got);
	return same;
}

/* Send a FILE request with a raw path; the final reply's type and, for ERROR, its code. */
static int raw_req(int conn, uint64_t op, const void *path, size_t plen, int *code)
{
	struct ts_ctl_msg m = { 0 };
	uint64_t c = 0;
	int type = -1;

	ts_ctl_msg_init(&m, TS_CTL_FILE, 77);
	ts_ctl_put_u64(&m, TS_T_OP, op);
	if (path)
		ts_ctl_put(&m, TS_T_PATH, path, plen);
	if (op == TS_FILE_RENAME)
		ts_ctl_put_str(&m, TS_T_PATH2, "x");
	ts_ctl_send(conn, &m, NULL, 0);
	ts_ctl_msg_free(&m);
	if (op == TS_FILE_WRITE) /* no data: the reply comes after END */
		ts_ctl_send_simple(conn, TS_CTL_END, 77);
	for (;;) {
		if (ts_ctl_recv(conn, &m) < 0)
			return -1;
		type = m.type;
		if (type == TS_CTL_ERROR)
			ts_ctl_get_u64(&m, TS_T_CODE, &c);
		ts_ctl_msg_free(&m);
		if (type != TS_CTL_FILE_DATA && !(op == TS_FILE_LIST && type == TS_CTL_FILE_ENTRY))
			break;
	}
	*code = (int)c;
	return type;
}

static bool raw_refused(uint64_t op, const void *path, size_t plen, int want)
{
	int code = 0;

	return raw_req(T.conn, op, path, plen, &code) == TS_CTL_ERROR && code == want;
}

static bool setup_mounts(void)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	char map[64];

	if (uid == 0) {
		if (unshare(CLONE_NEWNS) < 0)
			return false;
	} else {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
			return false;
		snprintf(map, sizeof(map), "%u %u 1", uid, uid);
		if (ts_write_file_at(AT_FDCWD, "/proc/self/setgroups", "deny") < 0 ||
		    ts_write_file_at(AT_FDCWD, "/proc/self/uid_map", map) < 0)
			return false;
		snprintf(map, sizeof(map), "%u %u 1", gid, gid);
		if (ts_write_file_at(AT_FDCWD, "/proc/self/gid_map", map) < 0)
			return false;
	}
	return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0;
}

/* Bind path read-only onto itself, as the runtime protects a file. */
static int bind_ro(const char *path)
{
	unsigned long fl = MS_REMOUNT | MS_BIND | MS_RDONLY;
	struct statvfs sv;

	if (mount(path, path, NULL, MS_BIND, NULL) < 0 || statvfs(path, &sv) < 0)
		return -errno;
	/* a remount in a user namespace must keep the locked flags */
	if (sv.f_flag & ST_NOSUID)
		fl |= MS_NOSUID;
	if (sv.f_flag & ST_NODEV)
		fl |= MS_NODEV;
	if (sv.f_flag & ST_NOEXEC)
		fl |= MS_NOEXEC;
	if (sv.f_flag & ST_NOATIME)
		fl |= MS_NOATIME;
	if (sv.f_flag & ST_NODIRATIME)
		fl |= MS_NODIRATIME;
	if (sv.f_flag & ST_RELATIME)
		fl |= MS_RELATIME;
	return mount(NULL, path, NULL, fl, NULL) < 0 ? -errno : 0;
}

static void setup(void)
{
	char p[PATH_MAX], q[PATH_MAX];

	T.mounts = setup_mounts();
	snprintf(T.tmp, sizeof(T.tmp), "/tmp/ts-files-XXXXXX");
	if (!mkdtemp(T.tmp))
		fail_setup("mkdtemp");
	snprintf(T.root, sizeof(T.root), "%s/root", T.tmp);
	snprintf(T.ws, sizeof(T.ws), "%s/home/user", T.root);
	snprintf(T.canary, sizeof(T.canary), "%s/canary", T.tmp);
	snprintf(T.dest, sizeof(T.dest), "%s/dest", T.tmp);
	mk(T.tmp, "root/home/user");
	mk(T.tmp, "root/etc");
	mk(T.tmp, "canary");
	mk(T.tmp, "dest");
	put(at(p, T.canary, "keep"), "canary");
	put(at(p, T.root, "etc/passwd"), "sandbox-passwd\n");
	put_ws(".env", "SECRET=1\n");
	if (T.mounts) {
		/* a hard link made before the protection, as a host could (FA-09) */
		if (link(at(p, T.ws, ".env"), at(q, T.ws, "alias")) < 0)
			fail_setup("link");
		mk(T.ws, "cfg");
		put_ws("cfg/secret.txt", "not a protected name, but mounted\n");
		mk(T.ws, "keys");
		put_ws("keys/id_rsa", "KEY\n");
		put_ws("keys/other.txt", "other\n");
		mk(T.root, "proc");
		if (bind_ro(at(p, T.ws, ".env")) < 0 ||
		    bind_ro(at(p, T.ws, "cfg/secret.txt")) < 0 ||
		    bind_ro(at(p, T.ws, "keys/id_rsa")) < 0 ||
		    mount("/proc", at(q, T.root, "proc"), NULL, MS_BIND | MS_REC, NULL) < 0) {
			diag("bind mounts failed (%s): mount cases skipped", strerror(errno));
			T.mounts = false;
		}
	}
	T.pid = start_worker(&T.conn, false);
}

static void cleanup(void)
{
	char p[PATH_MAX];

	stop_worker(T.pid, T.conn);
	if (T.mounts) {
		umount2(at(p, T.root, "proc"), MNT_DETACH);
		umount2(at(p, T.ws, ".env"), MNT_DETACH);
		umount2(at(p, T.ws, "cfg/secret.txt"), MNT_DETACH);
		umount2(at(p, T.ws, "keys/id_rsa"), MNT_DETACH);
	}
	ts_rm_rf_at(AT_FDCWD, T.tmp);
}

/* ---------------------------------------------------------------- unit ---------- */

static int count_entries(const struct ts_file_info *e, void *userdata, struct ts_error *err)
{
	(*(size_t *)userdata)++;
	return 0;
}

struct names {
	char buf[4096];
};

static int join_names(const struct ts_file_info *e, void *userdata, struct ts_error *err)
{
	struct names *n = userdata;
	size_t l = strlen(n->buf);

	snprintf(n->buf + l, sizeof(n->buf) - l, "%s%s:%c", l ? " " : "", e->path,
		 e->type == TS_FILE_TYPE_DIR	   ? 'd'
		 : e->type == TS_FILE_TYPE_SYMLINK ? 'l'
		 : e->type == TS_FILE_TYPE_FILE	   ? 'f'
						   : 'o');
	return 0;
}

static void unit_read_write(void)
{
	struct ts_error err = { 0 };
	struct ts_file_info *fi = malloc(sizeof(*fi));
	char p[PATH_MAX];
	size_t big = 3 * TS_CTL_CHUNK + 17;
	char *data = malloc(big), *got;
	struct stat st;
	int fd, r;

	ok(sb_write("hello.txt", "hello\n", -1, &err) == 0 && ws_has("hello.txt", "hello\n"),
	   "write a new file (relative path: in the home)");
	ok(stat(at(p, T.ws, "hello.txt"), &st) == 0 && (st.st_mode & 07777) == 0644,
	   "a new file without a mode is 0644");
	ok(read_is("hello.txt", "hello\n") && read_is("/home/user/hello.txt", "hello\n"),
	   "read it back, relative and absolute");
	ok(sb_write("hello.txt", "again\n", 0600, &err) == 0 && ws_has("hello.txt", "again\n") &&
		   stat(p, &st) == 0 && (st.st_mode & 07777) == 0600,
	   "write replaces the content and sets the mode");
	ok(sb_write("hello.txt", "third\n", -1, &err) == 0 && stat(p, &st) == 0 &&
		   (st.st_mode & 07777) == 0600,
	   "a write without a mode keeps the existing file's mode");
	ok(sb_write("suid", "x", 06755, &err) == 0 && stat(at(p, T.ws, "suid"), &st) == 0 &&
		   (st.st_mode & 07777) == 0755,
	   "setuid and setgid bits are never written (06755 gives 0755)");
	ok(sb_write("deep/er/still/f", "d", -1, &err) == 0 && ws_has("deep/er/still/f", "d"),
	   "write creates missing parent directories");
	ok(sb_write("empty", "", -1, &err) == 0 && ws_has("empty", "") && read_is("empty", ""),
	   "an empty file round-trips");
	for (size_t i = 0; i < big; i++)
		data[i] = (char)('a' + i % 23);
	fd = memfd_with(data, big);
	r = ts_files_write_from_fd(T.conn, "big", -1, fd, &err);
	close(fd);
	got = NULL;
	if (r == 0) {
		size_t len = 0;

		r = ts_read_file_at(AT_FDCWD, at(p, T.ws, "big"), big + 2, &got, &len);
		r = r == 0 && len == big && !memcmp(got, data, big) ? 0 : -1;
		free(got);
	}
	ok(r == 0, "a write of several chunks arrives whole");
	got = sb_read("big", &r);
	ok(got && !memcmp(got, data, big), "a read of several chunks arrives whole");
	free(got);
	ok(!has_prefixed(T.ws, ".toren-tmp-"), "no temporary file is left behind");

	/* ranges, with raw requests */
	{
		struct ts_ctl_msg m = { 0 };
		size_t total = 0;
		bool in_order = true;

		ts_ctl_msg_init(&m, TS_CTL_FILE, 5);
		ts_ctl_put_u64(&m, TS_T_OP, TS_FILE_READ);
		ts_ctl_put_str(&m, TS_T_PATH, "big");
		ts_ctl_put_u64(&m, TS_T_OFFSET, TS_CTL_CHUNK - 5);
		ts_ctl_put_u64(&m, TS_T_LENGTH, 10);
		ts_ctl_send(T.conn, &m, NULL, 0);
		ts_ctl_msg_free(&m);
		while (ts_ctl_recv(T.conn, &m) > 0 && m.type == TS_CTL_FILE_DATA) {
			size_t pos = 0;
			uint16_t tag;
			const uint8_t *v;
			uint32_t len;

			while (ts_ctl_next(&m, &pos, &tag, &v, &len) > 0)
				if (tag == TS_T_DATA) {
					in_order = in_order &&
						   !memcmp(v, data + TS_CTL_CHUNK - 5 + total, len);
					total += len;
				}
			ts_ctl_msg_free(&m);
		}
		ok(m.type == TS_CTL_END && total == 10 && in_order,
		   "read {OFFSET, LENGTH} returns that range");
		ts_ctl_msg_free(&m);
	}
	ok(raw_refused(TS_FILE_READ, "deep", 4, EISDIR), "read of a directory: EISDIR");
	ok(ts_files_read_to_fd(T.conn, "nonexistent", -1, NULL, &err) == -ENOENT &&
		   strstr(err.msg, "`nonexistent`"),
	   "read of a missing file: ENOENT naming the path (%s)", err.msg);
	if (mkfifo(at(p, T.ws, "fifo"), 0644) == 0)
		ok(raw_refused(TS_FILE_READ, "fifo", 4, EINVAL), "read of a FIFO: refused at once");
	else
		skip(1, "mkfifo failed");
	ok(ts_files_stat(T.conn, "hello.txt", fi, &err) == 0 && fi->type == TS_FILE_TYPE_FILE &&
		   fi->size == 6 && fi->mode == 0600 && !strcmp(fi->path, "/home/user/hello.txt"),
	   "stat: type, size, mode, normalized path");
	ok(ts_files_stat(T.conn, "/", fi, &err) == 0 && fi->type == TS_FILE_TYPE_DIR &&
		   !strcmp(fi->path, "/"),
	   "stat of the root");
	ln_s("hello.txt", "link");
	ok(ts_files_stat(T.conn, "link", fi, &err) == 0 && fi->type == TS_FILE_TYPE_SYMLINK &&
		   !strcmp(fi->target, "hello.txt"),
	   "stat of a symlink describes the link and its target (lstat)");
	ok(read_is("link", "third\n"), "read follows a symlink inside the root");
	free(fi);
	free(data);
}

static void unit_dirs(void)
{
	struct ts_error err = { 0 };
	struct names n = { 0 };
	char p[PATH_MAX];
	struct stat st;
	size_t count = 0;
	int r;

	ok(ts_files_mkdir(T.conn, "m/a/b", 0700, &err) == 0 &&
		   stat(at(p, T.ws, "m/a/b"), &st) == 0 && S_ISDIR(st.st_mode) &&
		   (st.st_mode & 0777) == 0700,
	   "mkdir -p with a mode");
	ok(ts_files_mkdir(T.conn, "m/a/b", 0755, &err) == 0, "mkdir of an existing directory: ok");
	put_ws("m/file", "f");
	ok(ts_files_mkdir(T.conn, "m/file", 0755, &err) == -EEXIST,
	   "mkdir over a file: EEXIST (%s)", err.msg);
	put_ws("m/a/f1", "1");
	ln_s("a", "m/la");
	ok(ts_files_list(T.conn, "m", 1, join_names, &n, &err) == 0 &&
		   !strcmp(n.buf, "a:d file:f la:l"),
	   "list depth 1: sorted direct entries (%s)", n.buf);
	n.buf[0] = '\0';
	ok(ts_files_list(T.conn, "m", 3, join_names, &n, &err) == 0 &&
		   !strcmp(n.buf, "a:d a/b:d a/f1:f file:f la:l"),
	   "list depth 3: relative paths, a symlink to a directory is not entered (%s)", n.buf);
	ok(ts_files_list(T.conn, "m", 17, join_names, &n, &err) == -EINVAL,
	   "list depth above 16: EINVAL");
	ok(ts_files_list(T.conn, "m/file", 1, join_names, &n, &err) == -ENOTDIR,
	   "list of a file: ENOTDIR");
	ok(ts_files_rename(T.conn, "m/file", "m/renamed", &err) == 0 && ws_has("m/renamed", "f") &&
		   !ws_exists("m/file"),
	   "rename a file");
	put_ws("m/other", "o");
	ok(ts_files_rename(T.conn, "m/other", "m/renamed", &err) == 0 && ws_has("m/renamed", "o"),
	   "rename replaces an existing target");
	ok(ts_files_rename(T.conn, "m/la", "m/lb", &err) == 0 && ws_exists("m/lb") &&
		   lstat(at(p, T.ws, "m/lb"), &st) == 0 && S_ISLNK(st.st_mode) &&
		   ws_exists("m/a/f1"),
	   "rename of a symlink moves the link itself");
	ok(ts_files_remove(T.conn, "m/lb", &err) == 0 && !ws_exists("m/lb") && ws_exists("m/a/f1"),
	   "remove of a symlink to a directory removes only the link");
	ok(ts_files_remove(T.conn, "m", &err) == 0 && !ws_exists("m"), "remove a tree");
	ok(ts_files_remove(T.conn, "m", &err) == -ENOENT, "remove of a missing path: ENOENT");

	mk(T.ws, "many");
	for (int i = 0; i <= 100000; i++) {
		char name[PATH_MAX];
		int fd;

		snprintf(name, sizeof(name), "%s/many/%06d", T.ws, i);
		fd = open(name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			fail_setup(name);
		close(fd);
	}
	r = ts_files_list(T.conn, "many", 1, count_entries, &count, &err);
	ok(r == -E2BIG && count == 100000, "a listing stops at 100000 entries with E2BIG (%zu, %s)",
	   count, err.msg);
	ok(ts_files_remove(T.conn, "many", &err) == 0 && !ws_exists("many"),
	   "remove of 100001 files");
}

/* USER as a connection's first request is acknowledged (init switched ids before it
 * forked the worker); the operations after it are served as usual. */
static void unit_user_first(void)
{
	struct ts_error err = { 0 };
	struct ts_file_info info;
	int conn;
	pid_t pid = start_worker(&conn, false);

	ok(ts_files_as_user(conn, 1000, &err) == 0, "USER first: OK (%s)", err.msg);
	ok(ts_files_stat(conn, "hello.txt", &info, &err) == 0 && info.size == 6,
	   "... then the connection serves file requests (%s)", err.msg);
	ts_err_clear(&err);
	ok(ts_files_as_user(conn, 0, &err) == -EINVAL, "... and refuses a second USER (%s)",
	   err.msg);
	stop_worker(pid, conn);
}

static void unit_protocol(void)
{
	struct ts_ctl_msg m = { 0 };
	int code = 0;

	ok(raw_req(T.conn, 99, "x", 1, &code) == TS_CTL_ERROR && code == EINVAL,
	   "an unknown operation: EINVAL");
	ok(raw_req(T.conn, TS_FILE_STAT, NULL, 0, &code) == TS_CTL_ERROR && code == EINVAL,
	   "a request without a path: EINVAL");
	ts_ctl_msg_init(&m, TS_CTL_PS, 3);
	ts_ctl_send(T.conn, &m, NULL, 0);
	ts_ctl_recv(T.conn, &m);
	ok(m.type == TS_CTL_ERROR && m.id == 3, "a non-file request on a file connection: ERROR");
	ts_ctl_msg_free(&m);
	ok(read_is("hello.txt", "third\n"), "the connection still serves after errors");
	ok(raw_req(T.conn, TS_FILE_USER, NULL, 0, &code) == TS_CTL_ERROR && code == EINVAL,
	   "USER after the first request: EINVAL (a connection's user is fixed)");
	ok(read_is("hello.txt", "third\n"), "... and the connection still serves");
	unit_user_first();
}

/* Kill the worker in the middle of a write (RL-07): the old file or the new, never a mix,
 * no temporary file. */
static void unit_atomic(void)
{
	struct ts_error err = { 0 };
	struct ts_ctl_msg m = { 0 };
	uint8_t *chunk = calloc(1, TS_CTL_CHUNK);
	char p[PATH_MAX];
	struct stat st;
	int conn, fd;
	pid_t pid;

	put_ws("atomic", "old content\n");
	pid = start_worker(&conn, false);
	ts_ctl_msg_init(&m, TS_CTL_FILE, 1);
	ts_ctl_put_u64(&m, TS_T_OP, TS_FILE_WRITE);
	ts_ctl_put_str(&m, TS_T_PATH, "atomic");
	ts_ctl_send(conn, &m, NULL, 0);
	memset(chunk, 'n', TS_CTL_CHUNK);
	for (uint64_t off = 0; off < 50ULL << 20; off += TS_CTL_CHUNK) {
		ts_ctl_msg_init(&m, TS_CTL_FILE_DATA, 1);
		ts_ctl_put(&m, TS_T_DATA, chunk, TS_CTL_CHUNK);
		ts_ctl_put_u64(&m, TS_T_OFFSET, off);
		ts_ctl_send(conn, &m, NULL, 0);
	}
	kill(pid, SIGKILL);
	stop_worker(pid, conn);
	ok(ws_has("atomic", "old content\n"), "worker killed after 50 MB of a write: the old file");
	ok(!has_prefixed(T.ws, ".toren-tmp-"), "... and no temporary file (O_TMPFILE)");

	/* named temporary files: a client that goes away mid-write leaves none behind */
	pid = start_worker(&conn, true);
	ts_ctl_msg_init(&m, TS_CTL_FILE, 1);
	ts_ctl_put_u64(&m, TS_T_OP, TS_FILE_WRITE);
	ts_ctl_put_str(&m, TS_T_PATH, "atomic");
	ts_ctl_send(conn, &m, NULL, 0);
	for (uint64_t off = 0; off < 8ULL << 20; off += TS_CTL_CHUNK) {
		ts_ctl_msg_init(&m, TS_CTL_FILE_DATA, 1);
		ts_ctl_put(&m, TS_T_DATA, chunk, TS_CTL_CHUNK);
		ts_ctl_put_u64(&m, TS_T_OFFSET, off);
		ts_ctl_send(conn, &m, NULL, 0);
	}
	ok(WIFEXITED(stop_worker(pid, conn)) && ws_has("atomic", "old content\n") &&
		   !has_prefixed(T.ws, ".toren-tmp-"),
	   "named temporary file: client EOF mid-write keeps the old file and removes the temporary");
	pid = start_worker(&conn, true);
	fd = memfd_with("via a named temporary\n", 22);
	ok(ts_files_write_from_fd(conn, "atomic", -1, fd, &err) == 0 &&
		   ws_has("atomic", "via a named temporary\n") &&
		   !has_prefixed(T.ws, ".toren-tmp-"),
	   "named temporary file: a complete write replaces the file");
	close(fd);
	stop_worker(pid, conn);

	/* a whole 100 MB write */
	fd = memfd_create("big", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 100 << 20) < 0)
		fail_setup("memfd");
	ok(ts_files_write_from_fd(T.conn, "atomic", -1, fd, &err) == 0 &&
		   stat(at(p, T.ws, "atomic"), &st) == 0 && st.st_size == 100 << 20,
	   "a 100 MB write completes");
	close(fd);
	unlink(p);
	ts_ctl_msg_free(&m);
	free(chunk);
}

/* Receive watch events for up to ms; append "event:path " to buf. */
static void watch_collect(int conn, char *buf, size_t len, int ms, const char *until)
{
	unsigned long long end = ts_now_ms() + (unsigned long long)ms;

	while (ts_now_ms() < end && !strstr(buf, until)) {
		struct pollfd p = { .fd = conn, .events = POLLIN };
		struct ts_ctl_msg m = { 0 };
		char path[PATH_MAX], ev[32];
		size_t l = strlen(buf);

		if (poll(&p, 1, 100) <= 0)
			continue;
		if (ts_ctl_recv(conn, &m) < 0)
			return;
		if (m.type == TS_CTL_FILE_EVENT &&
		    ts_ctl_get_str(&m, TS_T_PATH, path, sizeof(path)) == 0 &&
		    ts_ctl_get_str(&m, TS_T_EVENT, ev, sizeof(ev)) == 0)
			snprintf(buf + l, len - l, "%s:%s ", ev, path);
		else
			snprintf(buf + l, len - l, "type%u ", m.type);
		ts_ctl_msg_free(&m);
	}
}

static void unit_watch(void)
{
	struct ts_ctl_msg m = { 0 };
	char p[PATH_MAX], q[PATH_MAX], ev[4096] = "";
	int conn;
	pid_t pid;

	mk(T.ws, "w/pre");
	pid = start_worker(&conn, false);
	ts_ctl_msg_init(&m, TS_CTL_FILE, 4);
	ts_ctl_put_u64(&m, TS_T_OP, TS_FILE_WATCH);
	ts_ctl_put_str(&m, TS_T_PATH, "w");
	ts_ctl_put_u64(&m, TS_T_DEPTH, 3);
	ts_ctl_send(conn, &m, NULL, 0);
	ts_ctl_msg_free(&m);
	ok(ts_ctl_recv(conn, &m) > 0 && m.type == TS_CTL_OK, "watch: OK once in place");
	ts_ctl_msg_free(&m);
	put_ws("w/f1", "1");
	put_ws("w/pre/f2", "2");
	mk(T.ws, "w/new");
	put_ws("w/new/f3", "3");
	rename(at(p, T.ws, "w/f1"), at(q, T.ws, "w/f4"));
	chmod(q, 0600);
	unlink(q);
	watch_collect(conn, ev, sizeof(ev), 3000, "remove:f4");
	ok(strstr(ev, "create:f1 ") && strstr(ev, "write:f1 "), "watch: create and write (%s)", ev);
	ok(strstr(ev, "create:pre/f2 ") != NULL, "watch: events in an existing subdirectory");
	ok(strstr(ev, "create:new ") && strstr(ev, "create:new/f3 "),
	   "watch: a new subdirectory is followed (its early entries announced)");
	ok(strstr(ev, "rename:f1 ") && strstr(ev, "create:f4 ") && strstr(ev, "chmod:f4 ") &&
		   strstr(ev, "remove:f4 "),
	   "watch: rename, chmod, remove");
	ts_ctl_msg_init(&m, TS_CTL_FILE, 4);
	ts_ctl_send(conn, &m, NULL, 0);
	ev[0] = '\0';
	watch_collect(conn, ev, sizeof(ev), 3000, "type11");
	ok(strstr(ev, "type11") != NULL, "watch: any client message ends it with END");
	ok(WIFEXITED(stop_worker(pid, conn)), "watch: the worker exits when the client closes");
	ts_ctl_msg_free(&m);
}

/* ------------------------------------------------------------ security ---------- */

static void sec_paths(void)
{
	struct ts_error err = { 0 };
	struct ts_file_info *fi = malloc(sizeof(*fi));
	struct names n = { 0 };
	char p[PATH_MAX], longp[PATH_MAX + 2], longn[NAME_MAX + 2];
	int r;

	/* FA-01 */
	ok(ts_files_read_to_fd(T.conn, "../../../../etc/passwd", -1, NULL, &err) == -EINVAL,
	   "FA-01 read `../../../../etc/passwd`: EINVAL (%s)", err.msg);
	ok(sb_write("a/../../x", "x", -1, &err) == -EINVAL && !exists(at(p, T.root, "home/x")) &&
		   !exists(at(p, T.tmp, "x")),
	   "FA-01 write `a/../../x`: EINVAL, nothing created");
	ok(ts_files_list(T.conn, "..", 1, join_names, &n, &err) == -EINVAL,
	   "FA-01 list `..`: EINVAL");
	ok(ts_files_read_to_fd(T.conn, "/home/user/../../etc/passwd", -1, NULL, &err) == -EINVAL,
	   "FA-01 an absolute path with `..`: EINVAL");
	ok(ts_files_remove(T.conn, "x/..", &err) == -EINVAL &&
		   ts_files_mkdir(T.conn, "..", 0755, &err) == -EINVAL &&
		   ts_files_rename(T.conn, "hello.txt", "../hello.txt", &err) == -EINVAL,
	   "FA-01 `..` refused by remove, mkdir and rename");
	/* FA-02 */
	ok(read_is("/etc/passwd", "sandbox-passwd\n"),
	   "FA-02 read `/etc/passwd` is the root's, never the host's");
	r = sb_write("/var/tmp/yard-canary/w", "w", -1, &err);
	ok(r == 0 && has(at(p, T.root, "var/tmp/yard-canary/w"), "w") &&
		   !exists("/var/tmp/yard-canary/w"),
	   "FA-02 write `/var/tmp/yard-canary/w` lands inside the root");
	/* FA-03 */
	ok(sb_write("%2e%2e/x", "e", -1, &err) == 0 && ws_has("%2e%2e/x", "e"),
	   "FA-03 `%%2e%%2e/x` is a literal name inside");
	ok(sb_write("..\\..\\x", "b", -1, &err) == 0 && ws_has("..\\..\\x", "b"),
	   "FA-03 `..\\..\\x` is a literal name inside");
	ok(ts_files_stat(T.conn, "a/./../..", fi, &err) == -EINVAL, "FA-03 `a/./../..`: EINVAL");
	ok(ts_files_stat(T.conn, "//etc", fi, &err) == 0 && !strcmp(fi->path, "/etc"),
	   "FA-03 `//etc` is the root's /etc");
	ok(ts_files_stat(T.conn, "", fi, &err) == -EINVAL, "FA-03 the empty path: EINVAL");
	ok(ts_files_stat(T.conn, ".", fi, &err) == 0 && !strcmp(fi->path, "/home/user") &&
		   fi->type == TS_FILE_TYPE_DIR,
	   "FA-03 `.` is the home directory");
	ok(sb_write("slash/", "s", -1, &err) == -EISDIR && !ws_exists("slash"),
	   "FA-03 a write to `slash/`: EISDIR");
	ok(ts_files_stat(T.conn, "/etc/", fi, &err) == 0 && fi->type == TS_FILE_TYPE_DIR,
	   "FA-03 a trailing `/` elsewhere is ignored");
	ok(raw_refused(TS_FILE_READ, "ok\0/../../etc", 13, EINVAL) &&
		   raw_refused(TS_FILE_WRITE, "ok\0x", 4, EINVAL),
	   "FA-03 an embedded NUL: EINVAL");
	memset(longp, 'a', sizeof(longp));
	for (size_t i = 100; i < PATH_MAX + 1; i += 100)
		longp[i] = '/';
	longp[PATH_MAX + 1] = '\0';
	ok(raw_refused(TS_FILE_READ, longp, PATH_MAX + 1, ENAMETOOLONG) &&
		   ts_files_read_to_fd(T.conn, longp, -1, NULL, &err) == -ENAMETOOLONG,
	   "FA-03 a path of PATH_MAX + 1 bytes: ENAMETOOLONG");
	memset(longn, 'n', sizeof(longn));
	longn[NAME_MAX + 1] = '\0';
	ok(sb_write(longn, "n", -1, &err) == -ENAMETOOLONG,
	   "FA-03 a component of NAME_MAX + 1: ENAMETOOLONG");
	ok(sb_write("\xef\xbc\x8e\xef\xbc\x8e\xef\xbc\x8fx", "w", -1, &err) == 0 &&
		   ws_has("\xef\xbc\x8e\xef\xbc\x8e\xef\xbc\x8fx", "w"),
	   "FA-03 fullwidth `．．／x` is a literal name inside");
	free(fi);
}

static void sec_links(void)
{
	struct ts_error err = { 0 };
	struct ts_file_info *fi = malloc(sizeof(*fi));
	char p[PATH_MAX], q[PATH_MAX], *got;
	int r;

	/* FA-04: absolute symlink out */
	ln_s("/etc/shadow", "l");
	ln_s("/etc/passwd", "lp");
	snprintf(q, sizeof(q), "%s/keep", T.canary);
	ln_s(q, "lc");
	got = sb_read("l", &r);
	ok(!got && r == -ENOENT, "FA-04 read `l -> /etc/shadow`: resolved in the root, ENOENT");
	free(got);
	ok(read_is("lp", "sandbox-passwd\n"), "FA-04 read `lp -> /etc/passwd`: the root's file");
	got = sb_read("lc", &r);
	ok(!got && r == -ENOENT, "FA-04 read `lc -> <canary>/keep`: ENOENT, never the canary");
	free(got);
	ok(sb_write("lc", "owned", -1, &err) == -ELOOP && canary_intact(),
	   "FA-04 write `lc`: ELOOP, the canary is intact (%s)", err.msg);
	ok(ts_files_stat(T.conn, "l", fi, &err) == 0 && fi->type == TS_FILE_TYPE_SYMLINK &&
		   !strcmp(fi->target, "/etc/shadow"),
	   "FA-04 stat `l`: the link itself");
	/* FA-05: relative symlink out */
	ln_s("../../../../etc", "e");
	ok(read_is("e/passwd", "sandbox-passwd\n"),
	   "FA-05 read `e/passwd` with `e -> ../../../../etc`: clamped at the root");
	ln_s("../../../canary", "rc");
	got = sb_read("rc/keep", &r);
	ok(!got && r == -ENOENT, "FA-05 read `rc/keep` with `rc -> ../../../canary`: ENOENT");
	free(got);
	ok(sb_write("rc/new", "x", -1, &err) < 0 && canary_intact(),
	   "FA-05 write through a relative link out: refused, canary intact");
	ok(ts_files_mkdir(T.conn, "rc/d", 0755, &err) < 0 && canary_intact(),
	   "FA-05 mkdir through a relative link out: refused, canary intact");
	/* FA-06: magic links */
	ln_s("/proc/self/root/etc/passwd", "m");
	ln_s("/proc/self/cwd", "mc");
	ln_s("/proc/self/fd/3", "mf");
	snprintf(q, sizeof(q), "/proc/%d/root%s/keep", (int)T.pid, T.canary);
	ln_s(q, "mp");
	if (T.mounts) {
		ok(exists(at(p, T.root, "proc/self/root")),
		   "FA-06 control: /proc is bound in the root");
		got = sb_read("m", &r);
		ok(!got && r == -ELOOP, "FA-06 read `m -> /proc/self/root/etc/passwd`: ELOOP (%d)",
		   r);
		free(got);
		got = sb_read("mp", &r);
		ok(!got && r == -ELOOP, "FA-06 read `mp -> /proc/<worker>/root/...`: ELOOP");
		free(got);
		got = sb_read("mf", &r);
		ok(!got && r == -ELOOP, "FA-06 read `mf -> /proc/self/fd/3`: ELOOP");
		free(got);
		ok(ts_files_list(T.conn, "mc", 1, count_entries, &(size_t){ 0 }, &err) == -ELOOP,
		   "FA-06 list `mc -> /proc/self/cwd`: ELOOP");
		ok(sb_write("mc/x", "x", -1, &err) < 0 && !exists("/x") && canary_intact(),
		   "FA-06 write below a magic link: refused");
	} else {
		got = sb_read("m", &r);
		ok(!got && r < 0, "FA-06 read `m` (no /proc in the root): refused");
		free(got);
		skip(5, "no private mount namespace: /proc not bound into the root");
	}
	free(fi);
}

/* FA-08: a directory swapped for a symlink out, over and over, while the worker works. */
static void sec_race(void)
{
	struct ts_error err = { 0 };
	char a[PATH_MAX], b[PATH_MAX], l[PATH_MAX], p[PATH_MAX];
	int dfd, ops = 0;
	struct ts_copy c = { .ops = &ts_copy_conn_ops, .ctx = &T.conn };
	pid_t sw;

	snprintf(a, sizeof(a), "%s/race", T.ws);
	snprintf(b, sizeof(b), "%s/race/b", T.ws);
	snprintf(l, sizeof(l), "%s/race/l", T.ws);
	sw = fork();
	if (sw == 0) {
		for (unsigned i = 0;; i++) {
			int bfd;

			mkdir(a, 0755);
			mkdir(b, 0755);
			/* never through a link ourselves: b may be the symlink right now */
			bfd = open(b, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (bfd >= 0) {
				mkdirat(bfd, "c", 0755);
				close(bfd);
			}
			unlink(l);
			/* absolute (re-rooted by RESOLVE_IN_ROOT) and relative (clamped) */
			if (symlink(i % 2 ? T.canary : "../../../../canary", l) < 0)
				continue;
			renameat2(AT_FDCWD, b, AT_FDCWD, l, RENAME_EXCHANGE);
			sched_yield();
			renameat2(AT_FDCWD, b, AT_FDCWD, l, RENAME_EXCHANGE);
		}
	}
	dfd = open(T.dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (int i = 0; i < 200; i++) {
		ops += ts_files_mkdir(T.conn, "race/b/c/d", 0755, &err) == 0;
		ops += sb_write("race/b/c/f", "w", -1, &err) == 0;
		ops += ts_files_remove(T.conn, "race/b", &err) == 0;
		if (i % 10 == 0) {
			ops += ts_files_copy_out(&c, "race", dfd, "race", "dest/race", &err) == 0;
			ops += ts_files_remove(T.conn, "race", &err) == 0;
		}
	}
	kill(sw, SIGKILL);
	waitpid(sw, NULL, 0);
	close(dfd);
	diag("%d of the racing operations succeeded", ops);
	ok(canary_intact(), "FA-08 mkdir -p, write, rm -r and copy-out racing a symlink swap x200: "
			    "the canary is intact");
	ok(!exists(at(p, T.tmp, "c")) && !exists(at(p, T.root, "canary")),
	   "FA-08 nothing was created next to the canary or in the root's top");
	ok(ops > 0, "FA-08 control: some of the operations got through");
}

static void sec_protected(void)
{
	struct ts_error err = { 0 };
	char p[PATH_MAX], q[PATH_MAX];

	/* PP-02 */
	ok(sb_write(".env", "x", -1, &err) == -EPERM && ws_has(".env", "SECRET=1\n") &&
		   strstr(err.msg, "`.env` is protected"),
	   "PP-02 write `.env`: EPERM (%s)", err.msg);
	ok(sb_write("/home/user/.env", "x", -1, &err) == -EPERM,
	   "PP-02 write by absolute path: EPERM");
	ok(sb_write("sub/server.pem", "x", -1, &err) == -EPERM && !ws_exists("sub/server.pem"),
	   "PP-02 write a new `*.pem`: EPERM (PP-12: protected names are never created)");
	ok(ts_files_mkdir(T.conn, "x/.npmrc/y", 0755, &err) == -EPERM && !ws_exists("x/.npmrc"),
	   "PP-12 mkdir -p through a protected name: EPERM, not created");
	ok(ts_files_mkdir(T.conn, "id_ed25519", 0755, &err) == -EPERM,
	   "PP-12 mkdir `id_ed25519`: EPERM");
	/* PP-03 */
	put_ws("t", "replacement");
	ok(ts_files_rename(T.conn, "t", ".env", &err) == -EPERM && ws_has(".env", "SECRET=1\n"),
	   "PP-03 rename onto `.env`: EPERM");
	ok(ts_files_rename(T.conn, ".env", "t2", &err) == -EPERM && ws_has(".env", "SECRET=1\n"),
	   "PP-04 rename `.env` away: EPERM");
	/* PP-05 */
	ok(ts_files_remove(T.conn, ".env", &err) == -EPERM && ws_has(".env", "SECRET=1\n"),
	   "PP-05 remove `.env`: EPERM");
	/* PP-07 */
	ln_s(".env", "envlink");
	ok(sb_write("envlink", "x", -1, &err) == -ELOOP && ws_has(".env", "SECRET=1\n"),
	   "PP-07 write `envlink -> .env`: refused (ELOOP)");
	ln_s("/home/user/.env", "envabs");
	ok(sb_write("envabs", "x", -1, &err) == -ELOOP && ws_has(".env", "SECRET=1\n"),
	   "PP-07 write `envabs -> /home/user/.env`: refused");
	if (!T.mounts) {
		skip(9, "no private mount namespace: no protected mounts");
		return;
	}
	/* protection by mount, whatever the name */
	ok(sb_write("cfg/secret.txt", "x", -1, &err) == -EPERM &&
		   ws_has("cfg/secret.txt", "not a protected name, but mounted\n") &&
		   strstr(err.msg, "mount point"),
	   "PP-02 write a mounted file with an ordinary name: EPERM (%s)", err.msg);
	ok(ts_files_rename(T.conn, "t", "cfg/secret.txt", &err) == -EPERM,
	   "PP-03 rename onto a mounted file: EPERM");
	ok(ts_files_remove(T.conn, "keys", &err) == -EPERM && ws_has("keys/id_rsa", "KEY\n") &&
		   ws_has("keys/other.txt", "other\n"),
	   "PP-05 rm -r of a directory holding a protected mount: EPERM, nothing removed (%s)",
	   err.msg);
	ok(ts_files_rename(T.conn, "keys", "keys2", &err) == -EPERM && ws_exists("keys/id_rsa"),
	   "PP-05 rename of a directory holding a protected mount: EPERM");
	ok(ts_files_remove(T.conn, "cfg", &err) == -EPERM && ws_exists("cfg/secret.txt"),
	   "PP-05 rm -r of the mount's directory: EPERM");
	ok(ts_files_remove(T.conn, "/proc", &err) == -EPERM,
	   "remove of a mount point (`/proc`): EPERM");
	/* FA-09 */
	ok(sb_write("alias", "x", -1, &err) == -EPERM && ws_has(".env", "SECRET=1\n") &&
		   ws_has("alias", "SECRET=1\n"),
	   "FA-09 write a hard link of the protected `.env`: EPERM (%s)", err.msg);
	put_ws("h1", "one");
	if (link(at(p, T.ws, "h1"), at(q, T.ws, "h2")) < 0)
		fail_setup("link");
	ok(sb_write("h2", "two", -1, &err) == 0 && ws_has("h2", "two") && ws_has("h1", "one"),
	   "FA-09 control: an ordinary hard link is written by replacing the name, the other "
	   "name keeps its content");
	ok(sb_write("cfg/other", "fine", -1, &err) == 0 && ws_has("cfg/other", "fine"),
	   "control: a new ordinary file next to a mount is written");
}

/* A fake sandbox that lies: names with `/`, `..`, NUL-free but hostile; bad offsets. */
static pid_t fake_sandbox(int *conn)
{
	int sv[2];
	pid_t pid;

	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	pid = fork();
	if (pid == 0) {
		static const char *const names[] = { "../evil", "a/b", ".", "..", "", "ok", "dir" };
		struct ts_ctl_msg m = { 0 }, r = { 0 };
		char path[PATH_MAX];
		uint64_t op;

		close(sv[0]);
		while (ts_ctl_recv(sv[1], &m) > 0) {
			ts_ctl_get_u64(&m, TS_T_OP, &op);
			ts_ctl_get_str(&m, TS_T_PATH, path, sizeof(path));
			if (op == TS_FILE_STAT || op == TS_FILE_LIST) {
				size_t n = op == TS_FILE_STAT	     ? 1
					   : !strcmp(path, "/x/dir") ? 0
								     : ELEMENTSOF(names);

				for (size_t i = 0; i < n; i++) {
					bool dir = op == TS_FILE_STAT || !strcmp(names[i], "dir") ||
						   !strcmp(names[i], ".") ||
						   !strcmp(names[i], "..");

					ts_ctl_msg_init(&r, TS_CTL_FILE_ENTRY, m.id);
					ts_ctl_put_str(&r, TS_T_PATH,
						       op == TS_FILE_STAT ? "/x" : names[i]);
					ts_ctl_put_str(&r, TS_T_TYPE, dir ? "dir" : "file");
					ts_ctl_put_u64(&r, TS_T_MODE, dir ? 0755 : 04755);
					ts_ctl_put_u64(&r, TS_T_SIZE, 4);
					ts_ctl_put_u64(&r, TS_T_MTIME, 0);
					ts_ctl_put_u64(&r, TS_T_UID, 0);
					ts_ctl_put_u64(&r, TS_T_GID, 0);
					ts_ctl_send(sv[1], &r, NULL, 0);
				}
				if (op == TS_FILE_LIST)
					ts_ctl_send_simple(sv[1], TS_CTL_END, m.id);
			} else if (op == TS_FILE_READ && strstr(path, "bad")) {
				ts_ctl_msg_init(&r, TS_CTL_FILE_DATA, m.id);
				ts_ctl_put_str(&r, TS_T_DATA, "xx");
				ts_ctl_put_u64(&r, TS_T_OFFSET, 5);
				ts_ctl_send(sv[1], &r, NULL, 0);
			} else if (op == TS_FILE_READ && strstr(path, "esc")) {
				ts_ctl_send_error(sv[1], m.id, EACCES,
						  "\x1b]0;pwned\x07 \xc2\x9b"
						  "31m");
			} else if (op == TS_FILE_READ) {
				ts_ctl_msg_init(&r, TS_CTL_FILE_DATA, m.id);
				ts_ctl_put_str(&r, TS_T_DATA, "fine");
				ts_ctl_put_u64(&r, TS_T_OFFSET, 0);
				ts_ctl_send(sv[1], &r, NULL, 0);
				ts_ctl_send_simple(sv[1], TS_CTL_END, m.id);
			}
			ts_ctl_msg_free(&m);
		}
		_exit(0);
	}
	close(sv[1]);
	*conn = sv[0];
	return pid;
}

static void warn_count(void *userdata, const char *msg)
{
	diag("warning: %s", msg);
}

/* FA-12: copy-out to a host destination. */
static void sec_copy_out(void)
{
	struct ts_error err = { 0 };
	struct ts_copy c = { .ops = &ts_copy_conn_ops, .ctx = &T.conn, .warn = warn_count };
	char p[PATH_MAX], q[PATH_MAX];
	struct stat st;
	int dfd, conn, r;
	pid_t pid;

	mk(T.ws, "out/sub");
	put_ws("out/f", "file\n");
	put_ws("out/sub/g", "g\n");
	put_ws("out/victim", "from the sandbox\n");
	chmod(at(p, T.ws, "out/f"), 06755);
	ln_s("/etc/passwd", "out/abs");
	ln_s("../../x", "out/rel");
	ln_s("/etc", "out/dirlink");
	mkfifo(at(p, T.ws, "out/fifo"), 0644);
	put(at(p, T.tmp, "victim"), "canary victim\n");
	mk(T.dest, "out");
	snprintf(q, sizeof(q), "%s/victim", T.tmp);
	if (symlink(q, at(p, T.dest, "out/victim")) < 0)
		fail_setup("symlink");
	dfd = open(T.dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = ts_files_copy_out(&c, "out", dfd, "out", "dest/out", &err);
	ok(r == 0 && has(at(p, T.dest, "out/f"), "file\n") &&
		   has(at(p, T.dest, "out/sub/g"), "g\n"),
	   "FA-12 copy-out of a tree: files and directories arrive (%s)", err.msg);
	ok(!exists(at(p, T.dest, "out/abs")) && !exists(at(p, T.dest, "out/rel")) &&
		   !exists(at(p, T.dest, "out/dirlink")) && !exists(at(p, T.dest, "out/fifo")) &&
		   c.skipped == 4,
	   "FA-12 symlinks (absolute, relative, to a directory) and a FIFO are not recreated (%u "
	   "skipped)",
	   c.skipped);
	ok(lstat(at(p, T.dest, "out/victim"), &st) == 0 && S_ISREG(st.st_mode) &&
		   has(p, "from the sandbox\n") && canary_intact() &&
		   has(at(q, T.tmp, "victim"), "canary victim\n"),
	   "FA-12 a host symlink at the destination is replaced, never written through");
	unlink(q);
	ok(stat(at(p, T.dest, "out/f"), &st) == 0 && (st.st_mode & 07777) == 0755,
	   "FA-12 no setuid or setgid bit arrives on the host (06755 gives 0755)");
	ok(!has_prefixed(T.dest, ".toren-cp-") && !has_prefixed(at(p, T.dest, "out"), ".toren-cp-"),
	   "FA-12 no temporary file is left");
	if (symlink(T.canary, at(p, T.dest, "out2")) < 0)
		fail_setup("symlink");
	c.skipped = 0;
	ok(ts_files_copy_out(&c, "out", dfd, "out2", "dest/out2", &err) == -ENOTDIR &&
		   canary_intact(),
	   "FA-12 a host symlink to a directory at the destination is not entered (%s)", err.msg);

	/* a lying sandbox */
	pid = fake_sandbox(&conn);
	c = (struct ts_copy){ .ops = &ts_copy_conn_ops, .ctx = &conn, .warn = warn_count };
	r = ts_files_copy_out(&c, "/x", dfd, "fake", "dest/fake", &err);
	ok(r == 0 && has(at(p, T.dest, "fake/ok"), "fine") && exists(at(p, T.dest, "fake/dir")),
	   "FA-12 lying sandbox: the plain names are copied (%s)", err.msg);
	ok(c.skipped == 5 && !exists(at(p, T.dest, "evil")) && !exists(at(p, T.tmp, "evil")) &&
		   !exists(at(p, T.dest, "fake/a")),
	   "FA-12 lying sandbox: `../evil`, `a/b`, `.`, `..` and `` are refused (%u)", c.skipped);
	ok(stat(at(p, T.dest, "fake/ok"), &st) == 0 && (st.st_mode & 07777) == 0755,
	   "FA-12 lying sandbox: its setuid mode is not copied");
	r = ts_files_read_to_fd(conn, "esc", -1, NULL, &err);
	ok(r == -EACCES && !strchr(err.msg, '\x1b') && !strchr(err.msg, '\x07') &&
		   !strstr(err.msg, "\xc2\x9b"),
	   "a sandbox's error message reaches the host without control characters (%s)", err.msg);
	r = ts_files_read_to_fd(conn, "bad", -1, NULL, &err);
	ok(r == -EPROTO, "file data at the wrong offset: EPROTO, connection dropped (%s)", err.msg);
	ok(ts_files_stat(conn, "x", &(struct ts_file_info){ 0 }, &err) < 0,
	   "... and the connection is not used again");
	stop_worker(pid, conn);
	close(dfd);
	ok(ts_files_name_ok("a.txt") && !ts_files_name_ok("..") && !ts_files_name_ok(".") &&
		   !ts_files_name_ok("") && !ts_files_name_ok("a/b"),
	   "name_ok accepts plain names only");
}

/*
 * `no-openat2`: the whole suite again with openat2 refused (ENOSYS), as the setid guard's
 * seccomp filter refuses it: the worker's own component walks then do every resolution.
 */
static void refuse_openat2(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		fail_setup("seccomp filter refusing openat2");
	diag("openat2 refused (ENOSYS): the worker resolves paths itself");
}

struct meta_seen {
	char buf[256];
};

static int meta_of_entries(const struct ts_file_info *e, void *userdata, struct ts_error *err)
{
	struct meta_seen *m = userdata;
	size_t len = strlen(m->buf);

	for (size_t i = 0; e->metadata && e->metadata[i]; i++) {
		snprintf(m->buf + len, sizeof(m->buf) - len, "%s%s:%s", len ? " " : "", e->path,
			 e->metadata[i]);
		len = strlen(m->buf);
	}
	return 0;
}

/* E2B's metadata: user.e2b.* xattrs, read with stat and list, replaced by SET_XATTRS. */
static void unit_xattrs(void)
{
	struct ts_error err = { 0 };
	struct ts_file_info *fi = calloc(1, sizeof(*fi));
	char p[PATH_MAX], *kv[TS_FILE_XATTRS_MAX + 1], big[TS_FILE_XATTR_VALUE_MAX + 8];
	struct meta_seen seen = { { 0 } };
	char *two[] = { "a=1", "b=x y" }, *one[] = { "c=3" };
	int r;

	ok(ts_files_mkdir(T.conn, "x", 0755, &err) == 0, "a directory for the metadata cases");
	put_ws("x/meta", "m");
	if (setxattr(at(p, T.ws, "x/meta"), "user.probe", "1", 1, 0) < 0) {
		skip(9, "no user xattrs on the test's file system");
		free(fi);
		return;
	}
	removexattr(p, "user.probe");
	ok(ts_files_stat_ex(T.conn, "x/meta", TS_FILES_XATTRS, fi, &err) == 0 && !fi->metadata,
	   "a file without user.e2b.* xattrs has no metadata");
	ts_file_info_clear(fi);
	setxattr(p, "user.other", "no", 2, 0);
	ok(ts_files_set_xattrs(T.conn, "x/meta", two, 2, &err) == 0, "set two metadata keys (%s)",
	   err.msg);
	ok(ts_files_stat_ex(T.conn, "x/meta", TS_FILES_XATTRS, fi, &err) == 0 && fi->metadata &&
		   fi->metadata[0] && fi->metadata[1] && !fi->metadata[2] &&
		   ((!strcmp(fi->metadata[0], "a=1") && !strcmp(fi->metadata[1], "b=x y")) ||
		    (!strcmp(fi->metadata[1], "a=1") && !strcmp(fi->metadata[0], "b=x y"))),
	   "stat reads them back, the prefix stripped, other xattrs not among them");
	ts_file_info_clear(fi);
	ok(ts_files_stat(T.conn, "x/meta", fi, &err) == 0 && !fi->metadata,
	   "without the flag stat carries none");
	ok(ts_files_set_xattrs(T.conn, "x/meta", one, 1, &err) == 0 &&
		   ts_files_list_ex(T.conn, "x", 1, TS_FILES_XATTRS, meta_of_entries, &seen,
				    &err) == 0 &&
		   !strcmp(seen.buf, "meta:c=3"),
	   "a second set replaces every key; list carries them (%s)", seen.buf);
	ok(getxattr(p, "user.other", big, sizeof(big)) == 2, "an xattr outside user.e2b. is kept");
	for (int i = 0; i <= TS_FILE_XATTRS_MAX; i++)
		r = asprintf(&kv[i], "k%d=v", i);
	(void)r;
	ok(ts_files_set_xattrs(T.conn, "x/meta", kv, TS_FILE_XATTRS_MAX + 1, &err) == -E2BIG,
	   "65 keys: E2BIG");
	for (int i = 0; i <= TS_FILE_XATTRS_MAX; i++)
		free(kv[i]);
	memset(big, 'v', sizeof(big));
	memcpy(big, "k=", 2);
	big[sizeof(big) - 1] = '\0';
	kv[0] = big;
	ok(ts_files_set_xattrs(T.conn, "x/meta", kv, 1, &err) == -E2BIG &&
		   ts_files_stat_ex(T.conn, "x/meta", TS_FILES_XATTRS, fi, &err) == 0 &&
		   fi->metadata && !strcmp(fi->metadata[0], "c=3"),
	   "a value over 4 KiB: E2BIG, nothing changed");
	ts_file_info_clear(fi);
	ln_s("meta", "x/lmeta");
	ok(ts_files_set_xattrs(T.conn, "x/lmeta", one, 1, &err) == -ELOOP,
	   "metadata of a symlink: ELOOP, never followed");
	free(fi);
}

int main(int argc, char **argv)
{
	bool security = argc > 1 && !strcmp(argv[1], "security");

	if (argc > 2 && !strcmp(argv[2], "no-openat2"))
		refuse_openat2();
	setup();
	if (!T.mounts)
		diag("no private mount namespace: mount-based cases are skipped");
	if (security) {
		sec_paths();
		sec_links();
		sec_protected();
		sec_copy_out();
		sec_race();
	} else {
		unit_read_write();
		unit_dirs();
		unit_protocol();
		unit_atomic();
		unit_watch();
		unit_xattrs();
	}
	cleanup();
	printf("1..%d\n", tap_n);
	return exit_status();
}
