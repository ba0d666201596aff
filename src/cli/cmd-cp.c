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
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "cleanup.h"
#include "cli.h"
#include "commands.h"
#include "copy.h"
#include "ctl.h"
#include "extract.h"
#include "fileclient.h"
#include "store.h"
#include "util.h"

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

/* --- what a copy needs of the sandbox's files, through the backend interface --- */

struct sink {
	struct ts_sb *sb;
	const char *user;
};

static void to_info(const struct ts_be_entry *e, const char *path, struct ts_file_info *fi)
{
	static const enum ts_file_type types[] = { [TS_BE_FILE] = TS_FILE_TYPE_FILE,
						   [TS_BE_DIR] = TS_FILE_TYPE_DIR,
						   [TS_BE_SYMLINK] = TS_FILE_TYPE_SYMLINK,
						   [TS_BE_OTHER] = TS_FILE_TYPE_OTHER };

	memset(fi, 0, sizeof(*fi));
	snprintf(fi->path, sizeof(fi->path), "%s", path);
	fi->type = (size_t)e->type < ELEMENTSOF(types) ? types[e->type] : TS_FILE_TYPE_OTHER;
	fi->mode = e->mode;
	fi->size = e->size;
	fi->mtime_ms = e->mtime_ms;
	fi->uid = e->uid;
	fi->gid = e->gid;
	if (e->symlink_target)
		snprintf(fi->target, sizeof(fi->target), "%s", e->symlink_target);
}

static int sink_stat(void *ctx, const char *path, struct ts_file_info *ret, struct ts_error *err)
{
	struct sink *k = ctx;
	struct ts_be_entry e;
	int r = ts_file_stat(k->sb, path, k->user, &e, err);

	if (r == 0)
		to_info(&e, e.path ? e.path : path, ret);
	ts_be_entry_clear(&e);
	return r;
}

static int sink_list(void *ctx, const char *path, ts_files_list_fn fn, void *userdata,
		     struct ts_error *err)
{
	struct sink *k = ctx;
	_cleanup_free_ struct ts_file_info *fi = malloc(sizeof(*fi));
	struct ts_be_entry *v = NULL;
	size_t n = 0;
	int r = fi ? ts_file_list(k->sb, path, 1, k->user, &v, &n, err)
		   : ts_err(err, -ENOMEM, "out of memory");

	for (size_t i = 0; r == 0 && i < n; i++) {
		to_info(&v[i], v[i].name ? v[i].name : "", fi);
		r = fn(fi, userdata, err);
	}
	ts_be_entries_free(v, n);
	return r;
}

static int sink_mkdir(void *ctx, const char *path, unsigned mode, struct ts_error *err)
{
	struct sink *k = ctx;

	return ts_file_mkdir_mode(k->sb, path, k->user, mode, NULL, err);
}

/* Wait for a transfer to be ready, bounded. */
static int xfer_wait(struct ts_xfer *x, struct ts_error *err)
{
	struct pollfd p = { .fd = ts_xfer_fd(x), .events = ts_xfer_events(x) };
	int r = poll(&p, 1, TS_BE_REPLY_MS);

	if (r == 0)
		return ts_err(err, -ETIMEDOUT, "the sandbox did not answer in %d s",
			      TS_BE_REPLY_MS / 1000);
	return r < 0 && errno != EINTR ? ts_err_errno(err, -errno, "poll") : 0;
}

static int sink_write_from(void *ctx, const char *path, int mode, ts_files_reader_fn fn,
			   void *userdata, struct ts_error *err)
{
	struct sink *k = ctx;
	_cleanup_free_ uint8_t *buf = malloc(TS_CTL_CHUNK);
	struct ts_xfer *x = NULL;
	size_t have = 0;
	bool eof = false, finished = false;
	int r = buf ? ts_xfer_write_start(k->sb, path, k->user, mode, &x, err)
		    : ts_err(err, -ENOMEM, "out of memory");

	while (r >= 0) {
		const uint8_t *d;
		size_t l;

		if (!have && !eof) {
			ssize_t n = fn(userdata, buf, TS_CTL_CHUNK);

			if (n < 0) {
				/* abandoned: the sandbox keeps the old file */
				r = ts_err_errno(err, (int)n, "write `%s`: read the source", path);
				break;
			}
			eof = n == 0;
			have = (size_t)n;
		}
		if (have) {
			r = ts_xfer_push(x, buf, have, err);
			if (r == 0)
				have = 0;
			else if (r == -EAGAIN)
				r = 0;
			else
				break;
		}
		if (eof && !have && !finished) {
			r = ts_xfer_finish(x, err);
			finished = true;
			if (r < 0)
				break;
		}
		r = ts_xfer_step(x, &d, &l, err);
		if (r == 2) {
			r = 0;
			break;
		}
		if (r == 0 && (have || finished))
			r = xfer_wait(x, err);
	}
	ts_xfer_close(x);
	return r;
}

static int sink_read_to_fd(void *ctx, const char *path, int fd, const char *out_shown,
			   struct ts_error *err)
{
	struct sink *k = ctx;
	struct ts_xfer *x = NULL;
	int r = ts_xfer_read_start(k->sb, path, k->user, &x, err);

	while (r >= 0) {
		const uint8_t *d;
		size_t l;

		r = ts_xfer_step(x, &d, &l, err);
		if (r == 2) {
			r = 0;
			break;
		}
		if (r == 1 && (r = ts_write_all(fd, d, l)) < 0) {
			ts_err_errno(err, r, "write `%s`", out_shown ? out_shown : "the copy");
			break;
		}
		if (r == 0)
			r = xfer_wait(x, err);
	}
	ts_xfer_close(x);
	return r;
}

static const struct ts_copy_ops sink_ops = {
	.stat = sink_stat,
	.list = sink_list,
	.mkdir = sink_mkdir,
	.write_from = sink_write_from,
	.read_to_fd = sink_read_to_fd,
};

static ssize_t read_fd(void *userdata, void *buf, size_t len)
{
	ssize_t n;

	do
		n = read(*(const int *)userdata, buf, len);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
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
	if (!strcmp(src, "-")) {
		int in = STDIN_FILENO;

		return c->ops->write_from(c->ctx, dst, -1, read_fd, &in, err);
	}
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
	r = c->ops->stat(c->ctx, dst, info, err);
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
		return c->ops->read_to_fd(c->ctx, src, STDOUT_FILENO, "standard output", err);
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

int ts_subcmd_cp(int argc, char **argv)
{
	static const struct option longopts[] = { { "help", no_argument, NULL, 'h' },
						  { "user", required_argument, NULL, 'u' },
						  { "extract", no_argument, NULL, 'x' },
						  {} };
	char sref[TS_NAME_MAX + 1], dref[TS_NAME_MAX + 1];
	const char *spath = NULL, *dpath = NULL, *ref;
	struct sink k = { .user = "user" };
	struct ts_copy c = { .ops = &sink_ops, .ctx = &k, .warn = on_warn };
	struct ts_error err = { 0 };
	struct ts_backend *b = NULL;
	bool sin, din, extract = false;
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
			k.user = optarg;
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
	ref = sin ? sref : dref;
	if (ts_cli_backend("cp", &b) < 0)
		return 1;
	/* as root only where the sandbox has one: a refusal starts nothing */
	r = ts_sb_lookup(b, ref, &k.sb, &err);
	if (r == 0 && !strcmp(k.user, "root"))
		r = ts_sb_check_user(k.sb, k.user, &err);
	ts_sb_close(k.sb);
	k.sb = NULL;
	/* a sandbox whose init is gone is rebuilt around its files, as for exec; by default
	 * as the workspace's owner, in every sandbox (E2B's files API does the same) */
	if (r == 0)
		r = ts_sb_connect(b, ref, -1, &k.sb, &err);
	if (r >= 0 && extract)
		r = extract_in(&c, argv[optind], dpath, &err);
	else if (r >= 0)
		r = sin ? copy_out(&c, spath, argv[optind + 1], &err)
			: copy_in(&c, argv[optind], dpath, &err);
	if (r < 0)
		ts_cli_error("cp", &err);
	ts_sb_close(k.sb);
	ts_backend_free(b);
	return r < 0 || c.skipped ? 1 : 0;
}
