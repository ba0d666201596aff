/* SPDX-License-Identifier: Apache-2.0 */
/* The file worker: TS_FILE_* requests on one control connection (see files.h). */
#include "files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "error.h"
#include "files-internal.h"
#include "syscall.h"
#include "util.h"

/* 1: the handler already sent its final reply (an ERROR), see handle(). */
#define REPLIED 1

int ts_files_send(struct ts_files *f, const struct ts_ctl_msg *m)
{
	int r = ts_ctl_send(f->conn, m, NULL, 0);

	if (r < 0)
		f->dead = true;
	return r;
}

int ts_files_send_err(struct ts_files *f, const struct ts_error *err)
{
	int r = ts_ctl_send_error(f->conn, f->id, err->code ? err->code : EIO, "%s", err->msg);

	if (r < 0)
		f->dead = true;
	return r;
}

static int send_type(struct ts_files *f, uint16_t type)
{
	int r = ts_ctl_send_simple(f->conn, type, f->id);

	if (r < 0)
		f->dead = true;
	return r;
}

int ts_files_fill_entry(struct ts_ctl_msg *m, const char *path, int dfd, const char *name,
			mode_t *ret_mode)
{
	char target[PATH_MAX];
	const char *type;
	struct stat st;
	int r;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW | (name[0] ? 0 : AT_EMPTY_PATH)) < 0)
		return -errno;
	if (S_ISREG(st.st_mode))
		type = "file";
	else if (S_ISDIR(st.st_mode))
		type = "dir";
	else if (S_ISLNK(st.st_mode))
		type = "symlink";
	else
		type = "other";
	if (ret_mode)
		*ret_mode = st.st_mode;
	r = ts_ctl_put_str(m, TS_T_PATH, path);
	if (r == 0)
		r = ts_ctl_put_str(m, TS_T_TYPE, type);
	if (r == 0)
		r = ts_ctl_put_u64(m, TS_T_MODE, st.st_mode & 07777);
	if (r == 0)
		r = ts_ctl_put_u64(m, TS_T_SIZE, (uint64_t)st.st_size);
	if (r == 0)
		r = ts_ctl_put_u64(m, TS_T_MTIME,
				   st.st_mtim.tv_sec < 0
					   ? 0
					   : (uint64_t)st.st_mtim.tv_sec * 1000 +
						     (uint64_t)st.st_mtim.tv_nsec / 1000000);
	if (r == 0)
		r = ts_ctl_put_u64(m, TS_T_UID, st.st_uid);
	if (r == 0)
		r = ts_ctl_put_u64(m, TS_T_GID, st.st_gid);
	if (r == 0 && S_ISLNK(st.st_mode)) {
		ssize_t n = readlinkat(dfd, name, target, sizeof(target) - 1);

		if (n >= 0) {
			target[n] = '\0';
			r = ts_ctl_put_str(m, TS_T_TARGET, target);
		}
	}
	return r;
}

static int op_read(struct ts_files *f, const struct ts_ctl_msg *req, struct ts_error *err)
{
	char in[PATH_MAX];
	struct ts_fpath p;
	struct ts_ctl_msg m = { 0 };
	_cleanup_free_ uint8_t *buf = NULL;
	_cleanup_close_ int fd = -EBADF;
	uint64_t off = 0, len = 0, left;
	struct stat st;
	int r;

	r = ts_files_get_path(req, TS_T_PATH, in, err);
	if (r == 0)
		r = ts_files_path_parse(f, in, &p, err);
	if (r < 0)
		return r;
	if (ts_ctl_get_u64(req, TS_T_OFFSET, &off) == -EBADMSG ||
	    ts_ctl_get_u64(req, TS_T_LENGTH, &len) == -EBADMSG || off > INT64_MAX)
		return ts_err(err, -EINVAL, "read `%s`: bad offset or length", p.shown);
	/* O_NONBLOCK: opening a FIFO must not hang the worker; non-files are refused below. */
	fd = ts_files_open_in_root(f, p.rel, O_RDONLY | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return ts_err_errno(err, fd, "read `%s`", p.shown);
	if (fstat(fd, &st) < 0)
		return ts_err_errno(err, -errno, "read `%s`", p.shown);
	if (S_ISDIR(st.st_mode))
		return ts_err(err, -EISDIR, "read `%s`: it is a directory", p.shown);
	if (!S_ISREG(st.st_mode))
		return ts_err(err, -EINVAL, "read `%s`: not a regular file", p.shown);
	buf = malloc(TS_CTL_CHUNK);
	if (!buf)
		return ts_err(err, -ENOMEM, "read `%s`: out of memory", p.shown);
	left = len ? len : UINT64_MAX;
	while (left > 0) {
		size_t want = left < TS_CTL_CHUNK ? (size_t)left : TS_CTL_CHUNK;
		ssize_t n = pread(fd, buf, want, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = ts_err_errno(err, -errno, "read `%s`", p.shown);
			break;
		}
		if (n == 0)
			break;
		ts_ctl_msg_init(&m, TS_CTL_FILE_DATA, f->id);
		r = ts_ctl_put(&m, TS_T_DATA, buf, (size_t)n);
		if (r == 0)
			r = ts_ctl_put_u64(&m, TS_T_OFFSET, off);
		if (r == 0)
			r = ts_files_send(f, &m);
		if (r < 0) {
			ts_err_errno(err, r, "read `%s`: send", p.shown);
			break;
		}
		off += (uint64_t)n;
		left -= (uint64_t)n;
	}
	ts_ctl_msg_free(&m);
	if (r < 0)
		return r;
	return send_type(f, TS_CTL_END);
}

/* Read the client's FILE_DATA messages up to END, discarding them. 0 at END. */
static int drain_write(struct ts_files *f)
{
	for (;;) {
		struct ts_ctl_msg d = { 0 };
		int r = ts_ctl_recv(f->conn, &d);
		uint16_t type = d.type;

		ts_ctl_msg_free(&d);
		if (r < 0) {
			f->dead = true;
			return r;
		}
		if (type == TS_CTL_END)
			return 0;
		if (type != TS_CTL_FILE_DATA) {
			f->dead = true;
			return -EPROTO;
		}
	}
}

struct wr {
	struct ts_fpath p;
	int pfd;      /* O_PATH fd of the target's directory */
	int tfd;      /* the temporary file */
	char tmp[32]; /* its name once it has one */
	mode_t mode;
	bool tmpfile; /* O_TMPFILE: nameless until linked */
};

static void tmp_name(char *buf, size_t len)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL ^ ts_now_ms();
	snprintf(buf, len, ".toren-tmp-%016llx", (unsigned long long)v);
}

/* Everything a write checks and opens before the data comes. */
static int write_prepare(struct ts_files *f, const struct ts_ctl_msg *req, struct wr *w,
			 struct ts_error *err)
{
	char in[PATH_MAX];
	uint64_t mode = 0;
	bool have_mode;
	struct stat st;
	int r;

	r = ts_files_get_path(req, TS_T_PATH, in, err);
	if (r == 0)
		r = ts_files_path_parse(f, in, &w->p, err);
	if (r < 0)
		return r;
	if (!w->p.name || w->p.slash)
		return ts_err(err, -EISDIR, "write `%s`: a file path cannot end in `/`",
			      w->p.shown);
	r = ts_ctl_get_u64(req, TS_T_MODE, &mode);
	if (r == -EBADMSG)
		return ts_err(err, -EINVAL, "write `%s`: bad mode", w->p.shown);
	have_mode = r == 0;
	/* Permission bits only: the API never makes a setuid, setgid or sticky file. */
	w->mode = (mode_t)(mode & 0777);
	w->pfd = ts_files_open_parent(f, &w->p, true, err);
	if (w->pfd < 0)
		return w->pfd;
	/* a directory first: one that is a mount point (/home/user) is no protected file */
	if (fstatat(w->pfd, w->p.name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
		return ts_err(err, -EISDIR, "write `%s`: it is a directory", w->p.shown);
	r = ts_files_check_target(f, w->pfd, w->p.name, w->p.shown, err);
	if (r < 0)
		return r;
	if (fstatat(w->pfd, w->p.name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode))
			return ts_err(err, -ELOOP,
				      "write `%s`: it is a symlink (writes never follow links)",
				      w->p.shown);
		if (S_ISDIR(st.st_mode))
			return ts_err(err, -EISDIR, "write `%s`: it is a directory", w->p.shown);
		if (!S_ISREG(st.st_mode))
			return ts_err(err, -EINVAL, "write `%s`: not a regular file", w->p.shown);
		if (st.st_nlink > 1) {
			r = ts_files_inode_mounted(&st);
			if (r > 0)
				return ts_err(
					err, -EPERM,
					"`%s` is protected: it is a hard link to a mounted file",
					w->p.shown);
			if (r < 0)
				return ts_err_errno(err, -EPERM,
						    "write `%s`: it has other hard links and the "
						    "mounts cannot be checked",
						    w->p.shown);
		}
		if (!have_mode)
			w->mode = st.st_mode & 0777;
	} else if (errno == ENOENT) {
		if (!have_mode)
			w->mode = 0644;
	} else {
		return ts_err_errno(err, -errno, "write `%s`", w->p.shown);
	}
	if (!f->cfg->no_tmpfile) {
		/* Nameless until complete: a crash or kill leaves nothing behind. */
		w->tfd = openat(w->pfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
		if (w->tfd >= 0) {
			w->tmpfile = true;
			return 0;
		}
		if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
			return ts_err_errno(err, -errno, "write `%s`: temporary file", w->p.shown);
	}
	for (int i = 0; i < 16; i++) {
		tmp_name(w->tmp, sizeof(w->tmp));
		w->tfd = openat(w->pfd, w->tmp,
				O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (w->tfd >= 0 || errno != EEXIST)
			break;
	}
	if (w->tfd < 0) {
		r = -errno;
		w->tmp[0] = '\0';
		return ts_err_errno(err, r, "write `%s`: temporary file", w->p.shown);
	}
	return 0;
}

/* Give an O_TMPFILE file a (temporary) name in the target's directory. */
static int link_tmpfile(struct wr *w)
{
	char proc[64];

	for (int i = 0; i < 16; i++) {
		tmp_name(w->tmp, sizeof(w->tmp));
		if (linkat(w->tfd, "", w->pfd, w->tmp, AT_EMPTY_PATH) == 0)
			return 0;
		if (errno == EEXIST)
			continue;
		if (errno != ENOENT && errno != EPERM)
			break;
		/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH on older kernels: /proc/self/fd
		 * names the same open file. */
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", w->tfd);
		if (linkat(AT_FDCWD, proc, w->pfd, w->tmp, AT_SYMLINK_FOLLOW) == 0)
			return 0;
		if (errno != EEXIST)
			break;
	}
	w->tmp[0] = '\0';
	return -errno;
}

static int write_commit(struct ts_files *f, struct wr *w, struct ts_error *err)
{
	_cleanup_close_ int dfd = -EBADF;
	int r;

	if (fchmod(w->tfd, w->mode) < 0 || fsync(w->tfd) < 0)
		return ts_err_errno(err, -errno, "write `%s`", w->p.shown);
	if (w->tmpfile) {
		r = link_tmpfile(w);
		if (r < 0)
			return ts_err_errno(err, r, "write `%s`: link the new file", w->p.shown);
	}
	/* Look again: the sandbox had the whole transfer to change the target. A symlink
	 * there now is replaced, not followed; a mount point is refused. */
	r = ts_files_check_target(f, w->pfd, w->p.name, w->p.shown, err);
	if (r < 0)
		return r;
	if (renameat(w->pfd, w->tmp, w->pfd, w->p.name) < 0)
		return ts_err_errno(err, -errno, "write `%s`", w->p.shown);
	w->tmp[0] = '\0';
	/* The rename itself must survive a crash too. */
	dfd = openat(w->pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		fsync(dfd);
	return 0;
}

/*
 * WRITE: refused up front (ERROR at once, then the client's data is read and dropped up
 * to its END), or the data goes to a temporary file that replaces the target at END.
 * Exactly one reply either way.
 */
static int op_write(struct ts_files *f, const struct ts_ctl_msg *req, struct ts_error *err)
{
	struct wr w = { .pfd = -EBADF, .tfd = -EBADF };
	uint64_t off = 0;
	int r, failed = 0;

	r = write_prepare(f, req, &w, err);
	if (r < 0) {
		if (ts_files_send_err(f, err) == 0)
			drain_write(f);
		r = REPLIED;
		goto out;
	}
	for (;;) {
		struct ts_ctl_msg d = { 0 };
		const uint8_t *v = NULL;
		uint32_t vlen = 0;
		uint64_t doff;
		uint16_t tag, type;
		size_t pos = 0;
		bool have_data = false;

		r = ts_ctl_recv(f->conn, &d);
		type = d.type;
		if (r < 0) {
			/* EOF before END: the client gave up; the target stays as it was. */
			ts_ctl_msg_free(&d);
			f->dead = true;
			r = ts_err_errno(err, r, "write `%s`: client gone", w.p.shown);
			goto out;
		}
		if (type == TS_CTL_FILE_DATA) {
			while ((r = ts_ctl_next(&d, &pos, &tag, &v, &vlen)) > 0)
				if (tag == TS_T_DATA) {
					have_data = true;
					break;
				}
			r = ts_ctl_get_u64(&d, TS_T_OFFSET, &doff);
			if (!have_data || r == -EBADMSG || (r == 0 && doff != off))
				type = 0;
		}
		if (type == TS_CTL_FILE_DATA && !failed) {
			r = ts_write_all(w.tfd, v, vlen);
			if (r < 0) {
				/* ENOSPC, EFBIG...: tell the client now so it can stop sending */
				failed = r;
				ts_err_errno(err, r, "write `%s`", w.p.shown);
				ts_files_send_err(f, err);
			}
		}
		if (type == TS_CTL_FILE_DATA)
			off += vlen;
		ts_ctl_msg_free(&d);
		if (type == TS_CTL_END)
			break;
		if (type != TS_CTL_FILE_DATA) {
			/* The stream cannot be trusted any more: reply and hang up. */
			ts_err(err, -EPROTO, "write `%s`: bad message in the data", w.p.shown);
			if (!failed)
				ts_files_send_err(f, err);
			f->dead = true;
			r = REPLIED;
			goto out;
		}
		if (f->dead) {
			r = REPLIED;
			goto out;
		}
	}
	if (failed) {
		r = REPLIED;
		goto out;
	}
	r = write_commit(f, &w, err);
	if (r == 0)
		r = send_type(f, TS_CTL_OK);
out:
	if (w.tmp[0])
		unlinkat(w.pfd, w.tmp, 0);
	if (w.tfd >= 0)
		close(w.tfd);
	if (w.pfd >= 0)
		close(w.pfd);
	return r;
}

static int op_stat(struct ts_files *f, const struct ts_ctl_msg *req, struct ts_error *err)
{
	char in[PATH_MAX], shown[PATH_MAX + 1];
	struct ts_fpath p;
	struct ts_ctl_msg m = { 0 };
	_cleanup_close_ int fd = -EBADF;
	uint64_t flags = 0;
	mode_t mode = 0;
	int r;

	r = ts_files_get_path(req, TS_T_PATH, in, err);
	if (r == 0)
		r = ts_files_path_parse(f, in, &p, err);
	if (r < 0)
		return r;
	fd = p.name ? ts_files_open_parent(f, &p, false, err)
		    : ts_files_open_in_root(f, "", O_PATH | O_DIRECTORY);
	if (fd < 0)
		return p.name ? fd : ts_err_errno(err, fd, "stat `/`");
	snprintf(shown, sizeof(shown), "/%s", p.rel);
	ts_ctl_msg_init(&m, TS_CTL_FILE_ENTRY, f->id);
	ts_ctl_get_u64(req, TS_T_FLAGS, &flags);
	r = ts_files_fill_entry(&m, shown, fd, p.name ? p.name : "", &mode);
	if (r == 0 && (flags & TS_FILE_F_XATTRS))
		r = ts_files_fill_xattrs(&m, fd, p.name ? p.name : "", mode);
	if (r == 0)
		r = ts_files_send(f, &m);
	ts_ctl_msg_free(&m);
	if (r < 0)
		return ts_err_errno(err, r, "stat `%s`", p.shown);
	return 0;
}

static int op_mkdir(struct ts_files *f, const struct ts_ctl_msg *req, struct ts_error *err)
{
	char in[PATH_MAX];
	struct ts_fpath p;
	uint64_t mode = 0755;
	_cleanup_close_ int pfd = -EBADF, fd = -EBADF;
	struct stat st;
	int r;

	r = ts_files_get_path(req, TS_T_PATH, in, err);
	if (r == 0)
		r = ts_files_path_parse(f, in, &p, err);
	if (r < 0)
		return r;
	if (ts_ctl_get_u64(req, TS_T_MODE, &mode) == -EBADMSG)
		return ts_err(err, -EINVAL, "mkdir `%s`: bad mode", p.shown);
	mode &= 0777;
	/* mkdir -p: a directory that is there (also a mount point, or reached through a
	 * symlink inside the root) is left as it is */
	fd = ts_files_open_in_root(f, p.rel, O_PATH | O_DIRECTORY);
	if (fd >= 0 || !p.name)
		return send_type(f, TS_CTL_OK);
	pfd = ts_files_open_parent(f, &p, true, err);
	if (pfd < 0)
		return pfd;
	r = ts_files_check_target(f, pfd, p.name, p.shown, err);
	if (r < 0)
		return r;
	if (mkdirat(pfd, p.name, (mode_t)mode) == 0) {
		/* the exact mode, whatever our umask */
		fd = ts_files_open_step(pfd, p.name, O_RDONLY | O_DIRECTORY);
		if (fd < 0 || fchmod(fd, (mode_t)mode) < 0)
			return ts_err_errno(err, fd < 0 ? fd : -errno, "mkdir `%s`", p.shown);
	} else if (errno == EEXIST) {
		if (fstatat(pfd, p.name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			return ts_err(err, -EEXIST, "mkdir `%s`: it exists and is not a directory",
				      p.shown);
	} else {
		return ts_err_errno(err, -errno, "mkdir `%s`", p.shown);
	}
	return send_type(f, TS_CTL_OK);
}

static int op_remove(struct ts_files *f, const struct ts_ctl_msg *req, struct ts_error *err)
{
	char in[PATH_MAX], path[PATH_MAX + 1];
	struct ts_fpath p;
	_cleanup_close_ int pfd = -EBADF;
	int r;

	r = ts_files_get_path(req, TS_T_PATH, in, err);
	if (r == 0)
		r = ts_files_path_parse(f, in, &p, err);
	if (r < 0)
		return r;
	if (!p.name)
		return ts_err(err, -EPERM, "`%s` is protected: it is the root", p.shown);
	pfd = ts_files_open_parent(f, &p, false, err);
	if (pfd < 0)
		return pfd;
	r = ts_files_check_target(f, pfd, p.name, p.shown, err);
	if (r == 0)
		r = ts_files_check_subtree(pfd, p.name, p.shown, err);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "/%s", p.rel);
	r = ts_files_rm_tree(pfd, p.name, path, err);
	if (r < 0)
		return r;
	return send_type(f, TS_CTL_OK);
}

static int op_rename(struct ts_files *f, const struct ts_ctl_msg *req, struct ts_error *err)
{
	char in[PATH_MAX];
	struct ts_fpath a, b;
	_cleanup_close_ int afd = -EBADF, bfd = -EBADF;
	int r;

	r = ts_files_get_path(req, TS_T_PATH, in, err);
	if (r == 0)
		r = ts_files_path_parse(f, in, &a, err);
	if (r == 0)
		r = ts_files_get_path(req, TS_T_PATH2, in, err);
	if (r == 0)
		r = ts_files_path_parse(f, in, &b, err);
	if (r < 0)
		return r;
	if (!a.name || !b.name)
		return ts_err(err, -EPERM, "`%s` is protected: it is the root",
			      a.name ? b.shown : a.shown);
	afd = ts_files_open_parent(f, &a, false, err);
	if (afd < 0)
		return afd;
	bfd = ts_files_open_parent(f, &b, false, err);
	if (bfd < 0)
		return bfd;
	r = ts_files_check_target(f, afd, a.name, a.shown, err);
	if (r == 0)
		r = ts_files_check_target(f, bfd, b.name, b.shown, err);
	/* A moved directory takes its mounts along (PP-05): refused like remove. */
	if (r == 0)
		r = ts_files_check_subtree(afd, a.name, a.shown, err);
	if (r < 0)
		return r;
	/* rename(2) semantics: an existing target is replaced (a directory only when empty) */
	if (renameat(afd, a.name, bfd, b.name) < 0)
		return ts_err_errno(err, -errno, "rename `%s` to `%s`", a.shown, b.shown);
	return send_type(f, TS_CTL_OK);
}

struct lister {
	struct ts_files *f;
	struct ts_ctl_msg m;
	size_t count;
	unsigned depth;
	bool xattrs; /* TS_FILE_F_XATTRS */
	char path[PATH_MAX];
	const char *shown;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Entries of the directory fd (consumed), sorted, depth first. l->path holds len bytes. */
static int list_dir(struct lister *l, int fd, size_t len, unsigned level, struct ts_error *err)
{
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	DIR *d = fdopendir(fd);
	int r = 0;

	if (!d) {
		r = -errno;
		close(fd);
		return ts_err_errno(err, r, "list `%s`", l->shown);
	}
	while ((errno = 0, de = readdir(d)) && n <= TS_FILES_LIST_MAX) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			char **v = reallocarray(names, ncap, sizeof(*v));

			if (!v) {
				r = -ENOMEM;
				break;
			}
			names = v;
			cap = ncap;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			r = -ENOMEM;
			break;
		}
		n++;
	}
	if (r == 0 && !de && errno)
		r = -errno;
	if (r < 0)
		ts_err_errno(err, r, "list `%s`", l->shown);
	else if (n > 1)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n && r == 0; i++) {
		mode_t mode = 0;
		int sub;

		if (len + 1 + strlen(names[i]) >= sizeof(l->path)) {
			r = ts_err(err, -ENAMETOOLONG, "list `%s`: a path is too long", l->shown);
			break;
		}
		snprintf(l->path + len, sizeof(l->path) - len, "%s%s", len ? "/" : "", names[i]);
		if (l->count >= TS_FILES_LIST_MAX) {
			r = ts_err(err, -E2BIG, "list `%s`: stopped after %d entries", l->shown,
				   TS_FILES_LIST_MAX);
			break;
		}
		ts_ctl_msg_init(&l->m, TS_CTL_FILE_ENTRY, l->f->id);
		r = ts_files_fill_entry(&l->m, l->path, dirfd(d), names[i], &mode);
		if (r == -ENOENT) {
			r = 0; /* gone since readdir */
			continue;
		}
		if (r == 0 && l->xattrs)
			r = ts_files_fill_xattrs(&l->m, dirfd(d), names[i], mode);
		if (r == 0)
			r = ts_files_send(l->f, &l->m);
		if (r < 0) {
			ts_err_errno(err, r, "list `%s`", l->shown);
			break;
		}
		l->count++;
		/* O_NOFOLLOW: a symlink to a directory is an entry, never a way in */
		if (!S_ISDIR(mode) || level + 1 >= l->depth)
			continue;
		sub = openat(dirfd(d), names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue; /* unreadable, or replaced since: its entry is listed */
		r = list_dir(l, sub, strlen(l->path), level + 1, err);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	l->path[len] = '\0';
	return r;
}

static int op_list(struct ts_files *f, const struct ts_ctl_msg *req, struct ts_error *err)
{
	char in[PATH_MAX];
	struct ts_fpath p;
	struct lister l = { .f = f, .depth = 1 };
	uint64_t depth = 1, flags = 0;
	int fd, r;

	r = ts_files_get_path(req, TS_T_PATH, in, err);
	if (r == 0)
		r = ts_files_path_parse(f, in, &p, err);
	if (r < 0)
		return r;
	r = ts_ctl_get_u64(req, TS_T_DEPTH, &depth);
	if (r == -EBADMSG || (r == 0 && depth > TS_FILES_DEPTH_MAX))
		return ts_err(err, -EINVAL, "list `%s`: depth must be 1 to %d", p.shown,
			      TS_FILES_DEPTH_MAX);
	l.depth = depth ? (unsigned)depth : 1;
	ts_ctl_get_u64(req, TS_T_FLAGS, &flags);
	l.xattrs = flags & TS_FILE_F_XATTRS;
	l.shown = p.shown;
	fd = ts_files_open_in_root(f, p.rel, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return ts_err_errno(err, fd, "list `%s`", p.shown);
	r = list_dir(&l, fd, 0, 0, err);
	ts_ctl_msg_free(&l.m);
	if (r < 0)
		return r;
	return send_type(f, TS_CTL_END);
}

/* One request and all its replies; f->dead when the connection is done for. */
static void handle(struct ts_files *f, const struct ts_ctl_msg *m)
{
	struct ts_error err = { 0 };
	uint64_t op = 0;
	int r;

	f->id = m->id;
	if (m->type != TS_CTL_FILE) {
		r = ts_err(&err, -EPROTO, "unexpected message (type %u) on a file connection",
			   m->type);
	} else if (ts_ctl_get_u64(m, TS_T_OP, &op) < 0) {
		r = ts_err(&err, -EINVAL, "file request without an operation");
	} else {
		switch (op) {
		case TS_FILE_READ:
			r = op_read(f, m, &err);
			break;
		case TS_FILE_WRITE:
			r = op_write(f, m, &err);
			break;
		case TS_FILE_LIST:
			r = op_list(f, m, &err);
			break;
		case TS_FILE_STAT:
			r = op_stat(f, m, &err);
			break;
		case TS_FILE_MKDIR:
			r = op_mkdir(f, m, &err);
			break;
		case TS_FILE_REMOVE:
			r = op_remove(f, m, &err);
			break;
		case TS_FILE_RENAME:
			r = op_rename(f, m, &err);
			break;
		case TS_FILE_WATCH:
			r = ts_files_watch(f, m, &err);
			break;
		case TS_FILE_SET_XATTRS:
			r = ts_files_op_set_xattrs(f, m, &err);
			break;
		case TS_FILE_USER:
			/* init became the user before it handed us the connection */
			r = f->served ? ts_err(&err, -EINVAL,
					       "a connection's user is set by its first request")
				      : ts_ctl_send_simple(f->conn, TS_CTL_OK, f->id);
			if (r < 0 && !err.msg[0])
				f->dead = true;
			break;
		default:
			r = ts_err(&err, -EINVAL, "unknown file operation %llu",
				   (unsigned long long)op);
		}
	}
	if (r < 0 && !f->dead)
		ts_files_send_err(f, &err);
	f->served = true;
}

int ts_files_serve(int conn, struct ts_ctl_msg *first, const struct ts_files_cfg *cfg)
{
	struct ts_files f = { .conn = conn, .cfg = cfg };
	const char *root = cfg->root ? cfg->root : "/";
	int r = 0;

	f.root = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (f.root < 0) {
		r = -errno;
		ts_ctl_send_error(conn, first->id, -r, "open the root `%s`: %s", root,
				  strerror(-r));
		return r;
	}
	handle(&f, first);
	while (!f.dead && !f.eof) {
		struct ts_ctl_msg m = { 0 };

		r = ts_ctl_recv(conn, &m);
		if (r == -ECONNRESET) {
			r = 0;
			break;
		}
		if (r < 0)
			break;
		handle(&f, &m);
		ts_ctl_msg_free(&m);
	}
	if (f.dead && r == 0)
		r = -ECONNRESET;
	close(f.root);
	return r;
}
