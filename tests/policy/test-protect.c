/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ts_protect_scan on a temporary tree: exact sorted matches, symlinks, directories and
 * FIFOs never listed, the entry limit, the depth limit, and unreadable directories.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protect.h"
#include "tap.h"
#include "util.h"

static char *const patterns[] = { ".env", ".env.*", "*.pem", "id_rsa*", "*.key" };
#define N_PATTERNS (sizeof(patterns) / sizeof(patterns[0]))

static void touch(int dfd, const char *path)
{
	int fd = openat(dfd, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0) {
		perror(path);
		abort();
	}
	close(fd);
}

static void mkdirs(int dfd, const char *path)
{
	if (ts_mkdir_p(dfd, path, 0700) < 0) {
		perror(path);
		abort();
	}
}

static int build_tree(int dfd)
{
	mkdirs(dfd, "a/b");
	mkdirs(dfd, "x.pem");
	mkdirs(dfd, "d1/d2/d3/d4/d5");
	touch(dfd, ".env");
	touch(dfd, ".hidden.pem");
	touch(dfd, "README.md");
	touch(dfd, "a/key.pem");
	touch(dfd, "a/b/id_rsa");
	touch(dfd, "a/b/id_rsa.pub");
	touch(dfd, "x.pem/inner.key");
	touch(dfd, "d1/d2/d3/d4/d5/.env.local");
	if (symlinkat("/etc/passwd", dfd, "link.pem") < 0 || mkfifoat(dfd, "fifo.pem", 0600) < 0)
		return -errno;
	return 0;
}

/* Entries in build_tree(): 11 files and directories above, 5 for d1..d5, 2 below. */
#define TREE_ENTRIES 18

static const char *const expected[] = {
	".env",
	".hidden.pem",
	"a/b/id_rsa",
	"a/b/id_rsa.pub",
	"a/key.pem",
	"d1/d2/d3/d4/d5/.env.local",
	"x.pem/inner.key",
};
#define N_EXPECTED (sizeof(expected) / sizeof(expected[0]))

static void test_tree(int dfd)
{
	struct ts_error err = { 0 };
	char **v = NULL;
	size_t n = 0;
	int r, same;

	r = ts_protect_scan(dfd, patterns, N_PATTERNS, TREE_ENTRIES, 0, &v, &n, &err);
	ok(r == 0, "scan: %s", r ? err.msg : "ok");
	same = r == 0 && n == N_EXPECTED && v[n] == NULL;
	for (size_t i = 0; same && i < N_EXPECTED; i++)
		same = !strcmp(v[i], expected[i]);
	ok(same, "sorted matches exactly; no symlink, directory or fifo listed");
	for (size_t i = 0; r == 0 && v[i]; i++)
		diag("found %s", v[i]);
	ts_strv_free(v);

	v = NULL;
	r = ts_protect_scan(dfd, patterns, N_PATTERNS, TREE_ENTRIES - 1, 0, &v, &n, &err);
	ok(r == -E2BIG && v == NULL && strstr(err.msg, "17") && strstr(err.msg, "max_entries"),
	   "one entry past max_entries: %s", err.msg);

	r = ts_protect_scan(dfd, NULL, 0, TREE_ENTRIES, 0, &v, &n, &err);
	ok(r == 0 && n == 0 && v && v[0] == NULL, "no patterns: an empty vector");
	ts_strv_free(v);
}

static void test_depth(int dfd)
{
	struct ts_error err = { 0 };
	char **v = NULL;
	size_t n = 0;
	int fd, r;

	/* 256 nested directories are walked; the 257th is refused. */
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (int i = 0; i < 256 && fd >= 0; i++) {
		int sub;

		if (mkdirat(fd, "d", 0700) < 0)
			abort();
		sub = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = sub;
	}
	if (fd < 0)
		abort();
	touch(fd, ".env");
	r = ts_protect_scan(dfd, patterns, N_PATTERNS, 100000, 0, &v, &n, &err);
	ok(r == 0 && n == 1 && strlen(v[0]) == 256 * 2 + 4, "depth 256 is walked: %s",
	   r ? err.msg : "ok");
	ts_strv_free(v);
	v = NULL;
	if (mkdirat(fd, "d", 0700) < 0)
		abort();
	close(fd);
	r = ts_protect_scan(dfd, patterns, N_PATTERNS, 100000, 0, &v, &n, &err);
	ok(r == -ELOOP && v == NULL && strstr(err.msg, "256"), "depth 257: %s", err.msg);
}

static void test_unreadable(int dfd)
{
	struct ts_error err = { 0 };
	char **v = NULL;
	size_t n = 0;
	int fd, r;

	mkdirs(dfd, "locked");
	touch(dfd, "locked/.env");
	if (fchmodat(dfd, "locked", 0, 0) < 0)
		abort();
	/* root, or root in a user namespace over its own files, reads it anyway. */
	fd = openat(dfd, "locked", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		skip(1, "running with CAP_DAC_OVERRIDE");
	} else {
		r = ts_protect_scan(dfd, patterns, N_PATTERNS, 100000, 0, &v, &n, &err);
		ok(r == -EACCES && v == NULL && strstr(err.msg, "`locked`"),
		   "an unreadable directory fails closed: %s", err.msg);
	}
	if (fchmodat(dfd, "locked", 0700, 0) < 0)
		diag("restore mode of `locked`: %s", strerror(errno));
}

static void test_not_dir(int dfd)
{
	struct ts_error err = { 0 };
	char **v = NULL;
	size_t n = 0;
	int fd, r;

	fd = openat(dfd, "README.md", O_RDONLY | O_CLOEXEC);
	r = ts_protect_scan(fd, patterns, N_PATTERNS, 10, 0, &v, &n, &err);
	ok(r == -ENOTDIR && v == NULL, "a file as workspace: %s", err.msg);
	close(fd);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	char root[4096], deep[4200];
	int dfd, ddfd;

	snprintf(root, sizeof(root), "%s/ts-protect-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(deep, sizeof(deep), "%s-deep", root);
	plan(8);
	dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || build_tree(dfd) < 0) {
		perror(root);
		return 1;
	}
	test_tree(dfd);
	test_not_dir(dfd);
	test_unreadable(dfd);
	if (mkdir(deep, 0700) < 0) {
		perror(deep);
		return 1;
	}
	ddfd = open(deep, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	test_depth(ddfd);
	close(ddfd);
	close(dfd);
	ts_rm_rf_at(AT_FDCWD, root);
	ts_rm_rf_at(AT_FDCWD, deep);
	return exit_status();
}
