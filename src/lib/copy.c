/* SPDX-License-Identifier: Apache-2.0 */
#include "copy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "procinfo.h"
#include "util.h"

/* Directory levels a copy follows at most. */
#define COPY_DEPTH_MAX 256

void ts_copy_skip(struct ts_copy *c, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	c->skipped++;
	if (!c->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ts_sanitize_text(msg);
	c->warn(c->userdata, msg);
}

/* Append "/name" to the path in buf (len bytes in use). The new length, or -ENAMETOOLONG. */
static int push(char *buf, size_t len, const char *name)
{
	bool slash = len > 0 && buf[len - 1] != '/';
	int n = snprintf(buf + len, PATH_MAX - len, "%s%s", slash ? "/" : "", name);

	if (n < 0 || (size_t)n >= PATH_MAX - len) {
		buf[len] = '\0';
		return -ENAMETOOLONG;
	}
	return (int)(len + (size_t)n);
}

static ssize_t read_fd(void *userdata, void *buf, size_t len)
{
	ssize_t n;

	do
		n = read(*(const int *)userdata, buf, len);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

struct walk {
	struct ts_copy *c;
	char sb[PATH_MAX];   /* the sandbox path */
	char host[PATH_MAX]; /* the host path, for messages */
};

static int copy_in_at(struct walk *w, int fd, const struct stat *st, int depth,
		      struct ts_error *err);

static int copy_in_dir(struct walk *w, int fd, const struct stat *st, int depth,
		       struct ts_error *err)
{
	size_t sl = strlen(w->sb), hl = strlen(w->host);
	struct dirent *de;
	DIR *d;
	int dfd, r;

	if (depth >= COPY_DEPTH_MAX)
		return ts_err(err, -ELOOP, "`%s`: more than %d levels of directories", w->host,
			      COPY_DEPTH_MAX);
	/* u+rwx: the copy must be able to fill the directory it made */
	r = w->c->ops->mkdir(w->c->ctx, w->sb, (st->st_mode & 0777) | 0700, err);
	if (r < 0)
		return r;
	dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (dfd < 0)
		return ts_err_errno(err, -errno, "read `%s`", w->host);
	d = fdopendir(dfd);
	if (!d) {
		r = -errno;
		close(dfd);
		return ts_err_errno(err, r, "read `%s`", w->host);
	}
	rewinddir(d);
	while ((errno = 0, de = readdir(d))) {
		_cleanup_close_ int sub = -EBADF;
		struct stat sst;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (push(w->sb, sl, de->d_name) < 0 || push(w->host, hl, de->d_name) < 0) {
			r = ts_err(err, -ENAMETOOLONG, "`%s/%s`: path too long", w->host,
				   de->d_name);
			break;
		}
		/* O_NOFOLLOW | O_NONBLOCK: never through a link, never stuck on a FIFO */
		sub = openat(dirfd(d), de->d_name,
			     O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (sub < 0 && errno == ELOOP) {
			ts_copy_skip(w->c, "skipped `%s`: a symlink (cp copies no symlinks)",
				     w->host);
		} else if (sub < 0) {
			r = ts_err_errno(err, -errno, "open `%s`", w->host);
		} else if (fstat(sub, &sst) < 0) {
			r = ts_err_errno(err, -errno, "stat `%s`", w->host);
		} else {
			r = copy_in_at(w, sub, &sst, depth + 1, err);
		}
		w->sb[sl] = '\0';
		w->host[hl] = '\0';
		if (r < 0)
			break;
	}
	if (r == 0 && errno)
		r = ts_err_errno(err, -errno, "read `%s`", w->host);
	closedir(d);
	return r;
}

static int copy_in_at(struct walk *w, int fd, const struct stat *st, int depth,
		      struct ts_error *err)
{
	int r;

	if (S_ISDIR(st->st_mode))
		return copy_in_dir(w, fd, st, depth, err);
	if (!S_ISREG(st->st_mode)) {
		ts_copy_skip(w->c, "skipped `%s`: not a regular file or directory", w->host);
		return 0;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	r = w->c->ops->write_from(w->c->ctx, w->sb, (int)(st->st_mode & 0777), read_fd, &fd, err);
	if (r == -EPERM && depth > 0) {
		/* a protected name in a tree: the rest of the tree still goes in */
		ts_copy_skip(w->c, "skipped `%s`: %s", w->host, err->msg);
		ts_err_clear(err);
		return 0;
	}
	return r;
}

int ts_files_copy_in(struct ts_copy *c, int src_fd, const char *src_shown, const char *dst,
		     struct ts_error *err)
{
	_cleanup_free_ struct walk *w = calloc(1, sizeof(*w));
	struct stat st;

	if (!w)
		return ts_err(err, -ENOMEM, "out of memory");
	w->c = c;
	if (snprintf(w->sb, sizeof(w->sb), "%s", dst) >= (int)sizeof(w->sb) ||
	    snprintf(w->host, sizeof(w->host), "%s", src_shown) >= (int)sizeof(w->host))
		return ts_err(err, -ENAMETOOLONG, "path too long");
	if (fstat(src_fd, &st) < 0)
		return ts_err_errno(err, -errno, "stat `%s`", src_shown);
	return copy_in_at(w, src_fd, &st, 0, err);
}

struct entry {
	char *name;
	enum ts_file_type type;
	unsigned mode;
};

struct entries {
	struct ts_copy *c;
	const char *dir;
	struct entry *v;
	size_t n, cap;
};

static int collect(const struct ts_file_info *e, void *userdata, struct ts_error *err)
{
	struct entries *es = userdata;

	/* The only names ever used on the host are plain ones (FA-12). */
	if (!ts_files_name_ok(e->path)) {
		ts_copy_skip(es->c, "skipped an entry of `%s` with an unusable name `%s`", es->dir,
			     e->path);
		return 0;
	}
	if (es->n == es->cap) {
		size_t ncap = es->cap ? es->cap * 2 : 32;
		struct entry *v = reallocarray(es->v, ncap, sizeof(*v));

		if (!v)
			return ts_err(err, -ENOMEM, "out of memory");
		es->v = v;
		es->cap = ncap;
	}
	es->v[es->n].name = strdup(e->path);
	if (!es->v[es->n].name)
		return ts_err(err, -ENOMEM, "out of memory");
	es->v[es->n].type = e->type;
	es->v[es->n].mode = e->mode;
	es->n++;
	return 0;
}

#define TMP_PREFIX ".toren-cp-"

/* A temporary name that says whose it is: .toren-cp-PID-START-RANDOM. */
static void tmp_name(char *buf, size_t len)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL ^ ts_now_ms();
	snprintf(buf, len, TMP_PREFIX "%d-%llu-%016llx", (int)getpid(),
		 ts_proc_start_time(getpid()), (unsigned long long)v);
}

/*
 * Remove temporary files a copy into dfd left when it was killed: ours (same owner),
 * regular, named by a process that no longer runs. Anything else is left alone, a copy
 * still at work included.
 */
static void sweep_stale(int dfd)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		unsigned long long pid, start;
		struct stat st;
		int used = 0;

		if (strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) != 0 ||
		    sscanf(de->d_name + strlen(TMP_PREFIX), "%llu-%llu-%*16[0-9a-f]%n", &pid,
			   &start, &used) != 2 ||
		    used == 0 || de->d_name[strlen(TMP_PREFIX) + (size_t)used] != '\0' ||
		    pid == 0 || pid > 4194304 || start == 0)
			continue;
		if (ts_proc_alive((pid_t)pid, start))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) && st.st_uid == geteuid())
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

/* Link the complete unnamed file tfd in as dfd/name, replacing what is there. */
static int link_in(int tfd, int dfd, const char *name)
{
	char proc[64], tmp[80];
	int r = 0;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", tfd);
	if (linkat(AT_FDCWD, proc, dfd, name, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	if (errno != EEXIST)
		return -errno;
	/* a file (or a symlink) is there: in under a temporary name, then over it */
	for (int i = 0; i < 16; i++) {
		tmp_name(tmp, sizeof(tmp));
		r = linkat(AT_FDCWD, proc, dfd, tmp, AT_SYMLINK_FOLLOW) < 0 ? -errno : 0;
		if (r != -EEXIST)
			break;
	}
	if (r == 0 && renameat(dfd, tmp, dfd, name) < 0) {
		r = -errno;
		unlinkat(dfd, tmp, 0);
	}
	return r;
}

/* The sandbox file w->sb to dfd/name: written unnamed, linked in when complete. */
static int copy_out_file(struct walk *w, unsigned mode, int dfd, const char *name,
			 struct ts_error *err)
{
	_cleanup_close_ int tfd = -EBADF;
	char tmp[80] = "";
	struct stat st;
	int r;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
		return ts_err(err, -EISDIR, "`%s` is a directory", w->host);
	/* unnamed until complete: a copy killed half-way leaves nothing behind */
	tfd = openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (tfd < 0 && errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return ts_err_errno(err, -errno, "create a file next to `%s`", w->host);
	for (int i = 0; tfd < 0 && i < 16; i++) {
		tmp_name(tmp, sizeof(tmp));
		tfd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (tfd < 0 && errno != EEXIST)
			break;
	}
	if (tfd < 0)
		return ts_err_errno(err, -errno, "create a file next to `%s`", w->host);
	r = w->c->ops->read_to_fd(w->c->ctx, w->sb, tfd, w->host, err);
	/* the sandbox's permission bits less our umask, as cp(1) without -p: no setuid,
	 * setgid or sticky bit, and nothing the user would not have made themselves */
	if (r == 0 && fchmod(tfd, mode & 0777 & ~w->c->umask) < 0)
		r = ts_err_errno(err, -errno, "chmod `%s`", w->host);
	/* rename replaces whatever is at name, a symlink included, and writes through
	 * nothing */
	if (r == 0 && !tmp[0] && (r = link_in(tfd, dfd, name)) < 0)
		r = ts_err_errno(err, r, "create `%s`", w->host);
	if (r == 0 && tmp[0] && renameat(dfd, tmp, dfd, name) < 0)
		r = ts_err_errno(err, -errno, "create `%s`", w->host);
	if (r < 0 && tmp[0])
		unlinkat(dfd, tmp, 0);
	return r;
}

static int copy_out_at(struct walk *w, enum ts_file_type type, unsigned mode, int dfd,
		       const char *name, int depth, struct ts_error *err);

/*
 * An error that concerns one entry of a tree (no permission, gone meanwhile, a name that
 * does not fit, a type clash on the host) becomes a skip with its message; 0 then. Any
 * other (the connection, the host's disk, memory) stays the copy's error.
 */
static int skip_if_local(struct ts_copy *c, int r, struct ts_error *err)
{
	if (r != -EACCES && r != -EPERM && r != -ENOENT && r != -ENAMETOOLONG && r != -EISDIR &&
	    r != -ENOTDIR)
		return r;
	ts_copy_skip(c, "skipped: %s", err->msg);
	ts_err_clear(err);
	return 0;
}

static int copy_out_dir(struct walk *w, unsigned mode, int dfd, const char *name, int depth,
			struct ts_error *err)
{
	struct entries es = { .c = w->c, .dir = w->sb };
	size_t sl = strlen(w->sb), hl = strlen(w->host);
	_cleanup_close_ int sub = -EBADF;
	bool made;
	int r;

	if (depth >= COPY_DEPTH_MAX)
		return ts_err(err, -ELOOP, "`%s`: more than %d levels of directories", w->sb,
			      COPY_DEPTH_MAX);
	made = mkdirat(dfd, name, 0700) == 0;
	if (!made && errno != EEXIST)
		return ts_err_errno(err, -errno, "create `%s`", w->host);
	/* an existing host symlink is never a way in */
	sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0 && (errno == ENOTDIR || errno == ELOOP))
		return ts_err(err, -ENOTDIR, "`%s` exists and is not a directory", w->host);
	if (sub < 0)
		return ts_err_errno(err, -errno, "open `%s`", w->host);
	if (!made)
		sweep_stale(sub);
	r = w->c->ops->list(w->c->ctx, w->sb, collect, &es, err);
	if (depth > 0)
		r = skip_if_local(w->c, r, err);
	for (size_t i = 0; i < es.n && r == 0; i++) {
		if (push(w->sb, sl, es.v[i].name) < 0 || push(w->host, hl, es.v[i].name) < 0)
			r = ts_err(err, -ENAMETOOLONG, "`%s/%s`: path too long", w->host,
				   es.v[i].name);
		else
			r = copy_out_at(w, es.v[i].type, es.v[i].mode, sub, es.v[i].name, depth + 1,
					err);
		/* one entry that cannot be read (or written here) is left out, not the rest */
		r = skip_if_local(w->c, r, err);
		w->sb[sl] = '\0';
		w->host[hl] = '\0';
	}
	for (size_t i = 0; i < es.n; i++)
		free(es.v[i].name);
	free(es.v);
	if (r == 0 && made && fchmod(sub, ((mode & 0777) & ~w->c->umask) | 0700) < 0)
		r = ts_err_errno(err, -errno, "chmod `%s`", w->host);
	return r;
}

static int copy_out_at(struct walk *w, enum ts_file_type type, unsigned mode, int dfd,
		       const char *name, int depth, struct ts_error *err)
{
	switch (type) {
	case TS_FILE_TYPE_FILE:
		return copy_out_file(w, mode, dfd, name, err);
	case TS_FILE_TYPE_DIR:
		return copy_out_dir(w, mode, dfd, name, depth, err);
	case TS_FILE_TYPE_SYMLINK:
		/* A link made on the host would point into the host's tree (FA-12). */
		ts_copy_skip(w->c, "skipped `%s`: a symlink in the sandbox (cp copies no symlinks)",
			     w->sb);
		return 0;
	default:
		ts_copy_skip(w->c, "skipped `%s`: not a regular file or directory", w->sb);
		return 0;
	}
}

int ts_files_copy_out(struct ts_copy *c, const char *src, int dst_dirfd, const char *dst_name,
		      const char *dst_shown, struct ts_error *err)
{
	_cleanup_free_ struct walk *w = calloc(1, sizeof(*w));
	_cleanup_free_ struct ts_file_info *info = malloc(sizeof(*info));
	int r;

	if (!w || !info)
		return ts_err(err, -ENOMEM, "out of memory");
	if (!ts_files_name_ok(dst_name))
		return ts_err(err, -EINVAL, "`%s`: not a usable name", dst_shown);
	w->c = c;
	if (snprintf(w->sb, sizeof(w->sb), "%s", src) >= (int)sizeof(w->sb) ||
	    snprintf(w->host, sizeof(w->host), "%s", dst_shown) >= (int)sizeof(w->host))
		return ts_err(err, -ENAMETOOLONG, "path too long");
	r = c->ops->stat(c->ctx, src, info, err);
	if (r < 0)
		return r;
	c->umask = ts_umask();
	sweep_stale(dst_dirfd);
	return copy_out_at(w, info->type, info->mode, dst_dirfd, dst_name, 0, err);
}

static int conn_stat(void *ctx, const char *path, struct ts_file_info *ret, struct ts_error *err)
{
	return ts_files_stat(*(int *)ctx, path, ret, err);
}

static int conn_list(void *ctx, const char *path, ts_files_list_fn fn, void *userdata,
		     struct ts_error *err)
{
	return ts_files_list(*(int *)ctx, path, 1, fn, userdata, err);
}

static int conn_mkdir(void *ctx, const char *path, unsigned mode, struct ts_error *err)
{
	return ts_files_mkdir(*(int *)ctx, path, mode, err);
}

static int conn_write_from(void *ctx, const char *path, int mode, ts_files_reader_fn fn,
			   void *userdata, struct ts_error *err)
{
	return ts_files_write_from(*(int *)ctx, path, mode, fn, userdata, err);
}

static int conn_read_to_fd(void *ctx, const char *path, int fd, const char *out_shown,
			   struct ts_error *err)
{
	return ts_files_read_to_fd(*(int *)ctx, path, fd, out_shown, err);
}

const struct ts_copy_ops ts_copy_conn_ops = {
	.stat = conn_stat,
	.list = conn_list,
	.mkdir = conn_mkdir,
	.write_from = conn_write_from,
	.read_to_fd = conn_read_to_fd,
};
