/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toren-sandbox cp SRC DST: copy a file or a directory tree between the host and a
 * sandbox; exactly one side is ID:PATH. A stopped sandbox is started first, as exec does.
 *
 * Like cp(1) and docker cp: when DST is an existing directory the copy goes into it under
 * SRC's name, otherwise DST is the copy's own path. Symlinks are never copied, in either
 * direction (a link made on the host from sandbox data would point into the host's
 * tree): they are skipped with a warning, as are special files and, going in, protected
 * names; anything skipped makes the exit status 1. SRC itself, when a host path, is
 * followed if it is a symlink (the user named it); a host DST that is a symlink is
 * refused (write `DST/` to copy into the directory it points to). Inside, cp acts as
 * `user` (the workspace's owner), or as `root` with --user root.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "commands.h"
#include "extract.h"
#include "files.h"
#include "sandbox.h"

static void usage(FILE *f)
{
	fputs("usage: toren-sandbox cp [OPTIONS] SRC DST\n"
	      "       toren-sandbox cp --extract ARCHIVE ID:DIR\n"
	      "\n"
	      "Copy a file or directory between the host and a sandbox. Exactly one of SRC and\n"
	      "DST is ID:PATH (ID: id, name or id prefix; PATH absolute, or relative to\n"
	      "/home/user). A host path with a `:` before its first `/` is written ./PATH.\n"
	      "`-` as the host side is standard input or output (a single file).\n"
	      "\n"
	      "  -x, --extract    SRC is an archive (tar, compressed or not, zip, cpio, ...; `-`:\n"
	      "                   standard input) to unpack into the sandbox directory DST\n"
	      "      --user NAME  act as `user` (default: the owner of /home/user) or `root`\n"
	      "                   (a sandbox with a root: created by root or with --user root)\n"
	      "  -h, --help       show this help\n",
	      f);
}

static void on_warn(void *userdata, const char *msg)
{
	fprintf(stderr, "toren-sandbox cp: warning: %s\n", msg);
}

/* "ID:PATH"? A ':' before any '/' makes the argument a sandbox reference. */
static bool split_ref(const char *arg, char *ref, size_t len, const char **path)
{
	const char *colon = strchr(arg, ':'), *slash = strchr(arg, '/');

	if (!colon || colon == arg || (slash && slash < colon))
		return false;
	snprintf(ref, len, "%.*s", (int)(colon - arg), arg);
	*path = colon[1] ? colon + 1 : ".";
	return true;
}

/* The last component of p (trailing slashes ignored) into buf; "" for "/". */
static void base_name(const char *p, char *buf, size_t len)
{
	size_t n = strlen(p);
	const char *s;

	while (n > 1 && p[n - 1] == '/')
		n--;
	s = memrchr(p, '/', n);
	s = s ? s + 1 : p;
	snprintf(buf, len, "%.*s", (int)(n - (size_t)(s - p)), s);
	if (!strcmp(buf, "/"))
		buf[0] = '\0';
}

/* The directory part of p into buf: "." when there is none. */
static void dir_name(const char *p, char *buf, size_t len)
{
	size_t n = strlen(p);
	const char *s;

	while (n > 1 && p[n - 1] == '/')
		n--;
	s = memrchr(p, '/', n);
	if (!s)
		snprintf(buf, len, ".");
	else if (s == p)
		snprintf(buf, len, "/");
	else
		snprintf(buf, len, "%.*s", (int)(s - p), p);
}

static int copy_in(struct ts_copy *c, const char *src, const char *dst, struct ts_error *err)
{
	_cleanup_free_ struct ts_file_info *info = malloc(sizeof(*info));
	_cleanup_close_ int fd = -EBADF;
	char name[NAME_MAX + 1], target[PATH_MAX];
	struct stat st;
	int r;

	if (!info)
		return ts_err(err, -ENOMEM, "out of memory");
	if (!strcmp(src, "-"))
		return ts_files_write_from_fd(c->conn, dst, -1, STDIN_FILENO, err);
	fd = open(src, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return ts_err_errno(err, -errno, "open `%s`", src);
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return ts_err(err, -EINVAL, "`%s` is not a regular file or directory", src);
	base_name(src, name, sizeof(name));
	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		_cleanup_free_ char *real = realpath(src, NULL);

		base_name(real ? real : "/", name, sizeof(name));
	}
	r = ts_files_stat(c->conn, dst, info, err);
	if (r == 0 && info->type == TS_FILE_TYPE_DIR) {
		if (!name[0])
			return ts_err(err, -EINVAL,
				      "cannot name a copy of `/`: give DST as its path");
		size_t n = strlen(dst);

		while (n > 1 && dst[n - 1] == '/')
			n--;
		if (snprintf(target, sizeof(target), "%.*s%s%s", (int)n, dst,
			     dst[n - 1] == '/' ? "" : "/", name) >= (int)sizeof(target))
			return ts_err(err, -ENAMETOOLONG, "`%s/%s`: path too long", dst, name);
	} else if (r == 0 && S_ISDIR(st.st_mode)) {
		return ts_err(err, -ENOTDIR, "`%s` exists in the sandbox and is not a directory",
			      dst);
	} else if (r == 0 || r == -ENOENT) {
		snprintf(target, sizeof(target), "%s", dst);
	} else {
		return r;
	}
	ts_err_clear(err);
	return ts_files_copy_in(c, fd, src, target, err);
}

static int extract_in(struct ts_copy *c, const char *src, const char *dst, struct ts_error *err)
{
	_cleanup_close_ int fd = -EBADF;

	if (!strcmp(src, "-"))
		return ts_archive_extract(c, STDIN_FILENO, "standard input", dst, err);
	fd = open(src, O_RDONLY | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return ts_err_errno(err, -errno, "open `%s`", src);
	return ts_archive_extract(c, fd, src, dst, err);
}

static int copy_out(struct ts_copy *c, const char *src, const char *dst, struct ts_error *err)
{
	_cleanup_close_ int dfd = -EBADF;
	char name[NAME_MAX + 1], dir[PATH_MAX], shown[PATH_MAX + NAME_MAX + 2];
	struct stat st;
	int r;

	if (!strcmp(dst, "-"))
		return ts_files_read_to_fd(c->conn, src, STDOUT_FILENO, "standard output", err);
	if (lstat(dst, &st) == 0 && S_ISLNK(st.st_mode)) {
		if (stat(dst, &st) == 0 && S_ISDIR(st.st_mode))
			return ts_err(err, -ELOOP,
				      "`%s` is a symlink: write `%s/` to copy into the directory "
				      "it points to",
				      dst, dst);
		return ts_err(err, -ELOOP,
			      "`%s` is a symlink: a copy never replaces or writes through one",
			      dst);
	}
	r = stat(dst, &st) < 0 ? -errno : 0;
	if (r == 0 && S_ISDIR(st.st_mode)) {
		/* into the directory, under the source's name */
		base_name(src, name, sizeof(name));
		if (!ts_files_name_ok(name))
			return ts_err(err, -EINVAL,
				      "cannot name a copy of `%s`: give DST as its path", src);
		snprintf(dir, sizeof(dir), "%s", dst);
		snprintf(shown, sizeof(shown), "%s%s%s", dst,
			 dst[strlen(dst) - 1] == '/' ? "" : "/", name);
	} else if (r == 0 || r == -ENOENT) {
		if (dst[strlen(dst) - 1] == '/')
			return ts_err(err, -ENOENT, "directory `%s` does not exist", dst);
		dir_name(dst, dir, sizeof(dir));
		base_name(dst, name, sizeof(name));
		snprintf(shown, sizeof(shown), "%s", dst);
	} else {
		return ts_err_errno(err, r, "stat `%s`", dst);
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return ts_err_errno(err, -errno, "open `%s`", dir);
	return ts_files_copy_out(c, src, dfd, name, shown, err);
}

int ts_cmd_cp(int argc, char **argv)
{
	static const struct option longopts[] = { { "help", no_argument, NULL, 'h' },
						  { "user", required_argument, NULL, 'u' },
						  { "extract", no_argument, NULL, 'x' },
						  {} };
	char sref[TS_NAME_MAX + 1], dref[TS_NAME_MAX + 1];
	const char *spath = NULL, *dpath = NULL;
	struct ts_copy c = { .conn = -EBADF, .warn = on_warn };
	struct ts_error err = { 0 };
	struct ts_sandbox_rec rec;
	struct ts_store *st;
	bool sin, din;
	unsigned uid = 1000;
	bool extract = false;
	int opt, r;

	while ((opt = getopt_long(argc, argv, "+hx", longopts, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return 0;
		}
		if (opt == 'x') {
			extract = true;
			continue;
		}
		if (opt == 'u' && (!strcmp(optarg, "user") || !strcmp(optarg, "root"))) {
			uid = !strcmp(optarg, "root") ? 0 : 1000;
			continue;
		}
		if (opt == 'u')
			fprintf(stderr, "toren-sandbox cp: bad --user `%s` (user or root)\n",
				optarg);
		else
			usage(stderr);
		return 2;
	}
	if (argc - optind != 2) {
		usage(stderr);
		return 2;
	}
	sin = split_ref(argv[optind], sref, sizeof(sref), &spath);
	din = split_ref(argv[optind + 1], dref, sizeof(dref), &dpath);
	if (sin == din) {
		fprintf(stderr, "toren-sandbox cp: exactly one of SRC and DST must be ID:PATH\n");
		return 2;
	}
	if (extract && sin) {
		fprintf(stderr, "toren-sandbox cp: --extract unpacks a host archive: DST must be "
				"ID:DIR\n");
		return 2;
	}
	if (ts_cli_lookup("cp", sin ? sref : dref, &st, &rec) < 0)
		return 1;
	/* a sandbox whose init is gone is rebuilt around its files, as for exec */
	r = uid == 0 ? ts_sandbox_check_root(&rec, &err) : 0;
	if (r >= 0)
		r = ts_sandbox_start(st, &rec, &err);
	if (r >= 0) {
		ts_store_touch(st, rec.id, &err);
		ts_err_clear(&err);
		r = c.conn = ts_sandbox_connect(&rec, &err);
	}
	/* by default as the workspace's owner, in every sandbox (E2B's files API does the
	 * same); as root only when asked */
	if (r >= 0)
		r = ts_files_as_user(c.conn, uid, &err);
	if (r >= 0 && extract)
		r = extract_in(&c, argv[optind], dpath, &err);
	else if (r >= 0)
		r = sin ? copy_out(&c, spath, argv[optind + 1], &err)
			: copy_in(&c, argv[optind], dpath, &err);
	if (r < 0)
		ts_cli_error("cp", &err);
	if (c.conn >= 0)
		close(c.conn);
	ts_sandbox_rec_free(&rec);
	ts_store_close(st);
	return r < 0 || c.skipped ? 1 : 0;
}
