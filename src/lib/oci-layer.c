/* SPDX-License-Identifier: Apache-2.0 */
#include "oci-layer.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <nettle/sha2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "archive-dl.h"
#include "cleanup.h"
#include "gunzip.h"
#include "util.h"

#define MAX_OPAQUE 4096
#define MAX_DEPTH 128

/*
 * Write-behind: a layer's files go to the disk while the unpacking goes on, and their
 * pages leave the page cache once there, to be used again for the next files. Without
 * it an import dirties its whole unpacked size in fresh page-cache pages before the one
 * syncfs (finish_layers), and fresh pages can be dear: on a VM whose balloon reports
 * free pages to the host (virtio_balloon's free page reporting, as on the machines the
 * bench ran on), the first touch of each faults through the host: writing 282 MB into
 * fresh pages cost 0.5-1.2 s of system time there, into recycled ones 0.06-0.2 s
 * (bench/RESULTS.md, "write-behind"). A file's write-out starts when it is complete
 * (sync_file_range WRITE) and it joins a ring of the files written last; the oldest is
 * waited for, dropped from the cache (POSIX_FADV_DONTNEED) and closed once the ring
 * holds WB_FILES files or more than WB_INFLIGHT bytes, so it had the time of the files
 * after it to reach the disk. A large file does the same by WB_BYTES ranges as it is
 * written. The ring bounds the fds an unpacking holds (a pull unpacks two layers at
 * once, and serve runs several pulls beside its connections under the usual soft limit
 * of 1024). What this does is only advice: its failures lose nothing, because the
 * syncfs before a layer goes into place reports any write error (finish_layers).
 */
#define WB_FILES 16
#define WB_BYTES (32ULL << 20)
#define WB_INFLIGHT (64ULL << 20)

struct writeback {
	int fd[WB_FILES];
	uint64_t len[WB_FILES]; /* bytes of each not settled yet */
	unsigned head, n;	/* the oldest, how many */
	uint64_t bytes;		/* the sum of len[] */
};

struct unpack {
	const struct ts_layer_opts *o;
	struct ts_layer_stats *st;
	int dirfd;
	char **opaque; /* relative paths of opaque directories */
	size_t n_opaque;
	/* The directory of the last entry (tar order keeps a directory's entries together):
	 * its fd, opened by the same walk as any other, and its clean path. It stays the
	 * directory a new walk would open: the walk's directories change only when the
	 * unpacking removes one (nothing is renamed, hard links are to files), and what an
	 * entry removes is a child of its own directory, which is the cached one; an entry in
	 * another directory walks afresh. */
	int pfd;
	char pfd_path[PATH_MAX];
	struct writeback wb;
};

/* Wait for the range's write-out (started earlier or not) and drop its pages. */
static void wb_settle(int fd, uint64_t off, uint64_t len)
{
	(void)sync_file_range(fd, (off_t)off, (off_t)len,
			      SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
				      SYNC_FILE_RANGE_WAIT_AFTER);
	(void)posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
}

/* The oldest file of the ring settled (wait) or only closed (a failed unpacking). */
static void wb_pop(struct writeback *wb, bool wait)
{
	unsigned i = wb->head;

	if (wait)
		wb_settle(wb->fd[i], 0, 0);
	close(wb->fd[i]);
	wb->bytes -= wb->len[i];
	wb->head = (i + 1) % WB_FILES;
	wb->n--;
}

/* A complete file (fd is given to wb) whose last len bytes have not been settled. */
static void wb_add(struct writeback *wb, int fd, uint64_t len)
{
	unsigned i;

	(void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	if (wb->n == WB_FILES)
		wb_pop(wb, true);
	i = (wb->head + wb->n) % WB_FILES;
	wb->fd[i] = fd;
	wb->len[i] = len;
	wb->n++;
	wb->bytes += len;
	while (wb->n > 1 && wb->bytes > WB_INFLIGHT)
		wb_pop(wb, true);
}

/* All of wb's files closed, settled first with wait. */
static void wb_end(struct writeback *wb, bool wait)
{
	while (wb->n)
		wb_pop(wb, wait);
}

__attribute__((format(printf, 2, 3))) static void warn(struct unpack *u, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	u->st->skipped++;
	if (!u->o->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	u->o->warn(u->o->userdata, msg);
}

/* name -> a clean relative path in out ("" for the layer's root). -EXDEV for an absolute
 * name or a `..` component. */
static int clean_name(const char *name, char *out, size_t len)
{
	size_t used = 0;
	const char *p = name;

	if (name[0] == '/')
		return -EXDEV;
	out[0] = '\0';
	while (*p) {
		size_t n = strcspn(p, "/");

		if (n == 2 && !strncmp(p, "..", 2))
			return -EXDEV;
		if (n > 0 && !(n == 1 && p[0] == '.')) {
			if (used + n + 2 >= len || n > NAME_MAX)
				return -ENAMETOOLONG;
			if (used)
				out[used++] = '/';
			memcpy(out + used, p, n);
			used += n;
			out[used] = '\0';
		}
		p += n;
		p += *p == '/';
	}
	return 0;
}

/* Open the directory rel (clean, relative) below dirfd one component at a time, never
 * following a symbolic link; with create, missing directories are made (0755). */
static int open_dir_beneath(int dirfd, const char *rel, bool create)
{
	char buf[PATH_MAX], *comp, *save = NULL;
	int cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);

	if (cur < 0)
		return -errno;
	snprintf(buf, sizeof(buf), "%s", rel);
	for (comp = strtok_r(buf, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		int fd = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (fd < 0 && errno == ENOENT && create) {
			if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST) {
				int e = errno;

				close(cur);
				return -e;
			}
			fd = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (fd < 0) {
			int e = errno == ENOTDIR ? ELOOP : errno;

			close(cur);
			return -e;
		}
		close(cur);
		cur = fd;
	}
	return cur;
}

/* Split a clean path into its parent (in buf) and its last name. */
static const char *split(char *path, const char **parent)
{
	char *slash = strrchr(path, '/');

	if (!slash) {
		*parent = "";
		return path;
	}
	*slash = '\0';
	*parent = path;
	return slash + 1;
}

static void drop_parent(struct unpack *u)
{
	if (u->pfd >= 0)
		close(u->pfd);
	u->pfd = -EBADF;
}

/* The directory parent (clean, relative) of the layer, made where missing: a borrowed fd
 * (the cache's), or -errno. */
static int parent_dir(struct unpack *u, const char *parent)
{
	int fd;

	if (u->pfd >= 0 && !strcmp(u->pfd_path, parent))
		return u->pfd;
	drop_parent(u);
	fd = open_dir_beneath(u->dirfd, parent, true);
	if (fd < 0)
		return fd;
	u->pfd = fd;
	snprintf(u->pfd_path, sizeof(u->pfd_path), "%s", parent);
	return fd;
}

/* Make room for a new entry called name in pfd: remove what is there, unless both are
 * directories (then 1: keep it). */
/* Where a hard link is made before it takes its name (see unpack_entry). */
#define LINK_TMP ".wh..toren-hardlink"

static int make_room(int pfd, const char *name, bool want_dir)
{
	struct stat st;

	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISDIR(st.st_mode)) {
		if (want_dir)
			return 1;
		return ts_rm_rf_at(pfd, name) < 0 ? -EIO : 0;
	}
	return unlinkat(pfd, name, 0) < 0 ? -errno : 0;
}

static int whiteout(int pfd, const char *name)
{
	int r = make_room(pfd, name, false);

	if (r < 0)
		return r;
	return mknodat(pfd, name, S_IFCHR | 0600, makedev(0, 0)) < 0 ? -errno : 0;
}

/* The entry's data into out; *unsettled: its last bytes not yet settled by write-behind
 * (all of it, unless it is larger than WB_BYTES). */
static int write_data(struct unpack *u, const struct ts_libarchive *L, struct archive *a, int out,
		      const char *name, uint64_t max_entry, uint64_t *unsettled,
		      struct ts_error *err)
{
	char buf[65536];
	uint64_t written = 0, started = 0, settled = 0;
	la_ssize_t n;

	while ((n = L->read_data(a, buf, sizeof(buf))) > 0) {
		written += (uint64_t)n;
		u->st->bytes += (uint64_t)n;
		if (written > max_entry)
			return ts_err(err, -EFBIG, "layer entry `%s` is larger than %llu bytes",
				      name, (unsigned long long)max_entry);
		if (u->st->bytes > u->o->max_bytes)
			return ts_err(err, -EFBIG, "layer unpacks to more than %llu bytes",
				      (unsigned long long)u->o->max_bytes);
		if (ts_write_all(out, buf, (size_t)n) < 0)
			return ts_err_errno(err, -errno, "write `%s`", name);
		if (written - started >= WB_BYTES) {
			(void)sync_file_range(out, (off_t)started, (off_t)(written - started),
					      SYNC_FILE_RANGE_WRITE);
			if (started > settled)
				wb_settle(out, settled, started - settled);
			settled = started;
			started = written;
		}
	}
	*unsettled = written - settled;
	if (n < 0)
		return ts_err(err, -EIO, "read `%s` in the layer: %s", name,
			      L->error_string(a) ? L->error_string(a) : "damaged");
	return 0;
}

static int unpack_entry(struct unpack *u, const struct ts_libarchive *L, struct archive *a,
			struct archive_entry *e, struct ts_error *err)
{
	const char *raw = L->entry_pathname(e), *parent, *base;
	char path[PATH_MAX];
	int pfd; /* the cache's: not closed here */
	unsigned type = (unsigned)L->entry_filetype(e);
	unsigned mode = (unsigned)L->entry_mode(e) & 07777;
	uint64_t max_entry = u->o->max_entry_bytes;
	int r;

	if (++u->st->entries > u->o->max_entries)
		return ts_err(err, -EFBIG, "layer has more than %llu entries",
			      (unsigned long long)u->o->max_entries);
	if (!raw || !raw[0]) {
		warn(u, "skipped an entry without a name");
		return 0;
	}
	r = clean_name(raw, path, sizeof(path));
	if (r == -EXDEV) {
		warn(u, "skipped `%s`: an absolute name or one with `..`", raw);
		return 0;
	}
	if (r < 0) {
		warn(u, "skipped `%s`: name too long", raw);
		return 0;
	}
	if (!path[0])
		return 0; /* the layer's root itself */
	if (L->entry_size_is_set(e) && L->entry_size(e) > 0 &&
	    (uint64_t)L->entry_size(e) > max_entry)
		return ts_err(err, -EFBIG, "layer entry `%s` is larger than %llu bytes", raw,
			      (unsigned long long)max_entry);
	base = split(path, &parent);
	pfd = parent_dir(u, parent);
	if (pfd < 0) {
		warn(u,
		     "skipped `%s`: its directory goes through a symbolic link or is not a "
		     "directory",
		     raw);
		return 0;
	}
	if (u->o->whiteouts && !strncmp(base, ".wh.", 4)) {
		if (!strcmp(base, ".wh..wh..opq")) {
			if (u->n_opaque >= MAX_OPAQUE)
				return ts_err(err, -EFBIG,
					      "layer has more than %d opaque directories",
					      MAX_OPAQUE);
			u->opaque[u->n_opaque] = strdup(parent);
			if (!u->opaque[u->n_opaque])
				return ts_err(err, -ENOMEM, "out of memory");
			u->n_opaque++;
			return 0;
		}
		if (!base[4] || !strcmp(base + 4, ".") || !strcmp(base + 4, "..")) {
			warn(u, "skipped `%s`: a whiteout without a name", raw);
			return 0;
		}
		r = whiteout(pfd, base + 4);
		if (r < 0)
			return ts_err_errno(err, r, "whiteout `%s`", raw);
		return 0;
	}
	if (mode & (S_ISUID | S_ISGID)) {
		warn(u, "`%s`: cleared its setuid/setgid bits", raw);
		mode &= ~(unsigned)(S_ISUID | S_ISGID);
	}
	if (L->entry_hardlink(e)) {
		char target[PATH_MAX];
		const char *tparent, *tbase;
		_cleanup_close_ int tfd = -EBADF;
		struct stat st;

		if (clean_name(L->entry_hardlink(e), target, sizeof(target)) < 0 || !target[0]) {
			warn(u, "skipped `%s`: a hard link to `%s`, out of the layer", raw,
			     L->entry_hardlink(e));
			return 0;
		}
		tbase = split(target, &tparent);
		tfd = open_dir_beneath(u->dirfd, tparent, false);
		if (tfd < 0 || fstatat(tfd, tbase, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode)) {
			warn(u, "skipped `%s`: a hard link to `%s`, not a file of the layer", raw,
			     L->entry_hardlink(e));
			return 0;
		}
		/* Through a temporary name, so that the target outlives make_room: a link to
		 * itself (GNU tar archives a name given twice so) or to a file below the
		 * directory it replaces. No entry of a layer ends up under this name: a `.wh.`
		 * name becomes a whiteout of the rest. */
		if (linkat(tfd, tbase, pfd, LINK_TMP, 0) < 0)
			return ts_err_errno(err, -errno, "hard link `%s`", raw);
		if ((r = make_room(pfd, base, false)) < 0 ||
		    (r = renameat(pfd, LINK_TMP, pfd, base) < 0 ? -errno : 0) < 0) {
			unlinkat(pfd, LINK_TMP, 0);
			return ts_err_errno(err, r, "hard link `%s`", raw);
		}
		return 0;
	}
	switch (type) {
	case AE_IFDIR:
		r = make_room(pfd, base, true);
		if (r < 0)
			return ts_err_errno(err, r, "directory `%s`", raw);
		if (r == 0 && mkdirat(pfd, base, 0700) < 0)
			return ts_err_errno(err, -errno, "directory `%s`", raw);
		/* u+rwx so that the rest of the layer can go in */
		if (fchmodat(pfd, base, (mode & 01777) | 0700, 0) < 0)
			return ts_err_errno(err, -errno, "chmod `%s`", raw);
		return 0;
	case AE_IFREG: {
		_cleanup_close_ int out = -EBADF;
		uint64_t unsettled = 0;

		if ((r = make_room(pfd, base, false)) < 0)
			return ts_err_errno(err, r, "file `%s`", raw);
		out = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out < 0)
			return ts_err_errno(err, -errno, "create `%s`", raw);
		r = write_data(u, L, a, out, raw, max_entry, &unsettled, err);
		if (r < 0)
			return r;
		if (fchmod(out, mode & 01777) < 0)
			return ts_err_errno(err, -errno, "chmod `%s`", raw);
		wb_add(&u->wb, TAKE_FD(out), unsettled);
		return 0;
	}
	case AE_IFLNK: {
		const char *target = L->entry_symlink(e);

		if (!target || !target[0] || strlen(target) >= PATH_MAX) {
			warn(u, "skipped `%s`: a symbolic link without a usable target", raw);
			return 0;
		}
		if ((r = make_room(pfd, base, false)) < 0 || symlinkat(target, pfd, base) < 0)
			return ts_err_errno(err, r < 0 ? r : -errno, "symbolic link `%s`", raw);
		return 0;
	}
	default:
		warn(u, "skipped `%s`: %s", raw,
		     type == AE_IFCHR || type == AE_IFBLK ? "a device node"
		     : type == AE_IFIFO			  ? "a FIFO"
							  : "not a file, directory or link");
		return 0;
	}
}

/* The directory ofd is opaque over the lower directory lfd: a whiteout in ofd for each
 * name of lfd that ofd lacks; where both have a directory, the same below. */
static int opaque_over(struct unpack *u, int ofd, int lfd, int depth)
{
	DIR *d;
	struct dirent *de;
	int dup, r = 0;

	if (depth > MAX_DEPTH)
		return -ELOOP;
	dup = fcntl(lfd, F_DUPFD_CLOEXEC, 3);
	if (dup < 0)
		return -errno;
	d = fdopendir(dup);
	if (!d) {
		close(dup);
		return -errno;
	}
	while ((de = readdir(d)) && r == 0) {
		struct stat ost, lst;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(lfd, de->d_name, &lst, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISCHR(lst.st_mode) && lst.st_rdev == makedev(0, 0))
			continue; /* already a whiteout below */
		if (fstatat(ofd, de->d_name, &ost, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT) {
				r = -errno;
				break;
			}
			r = mknodat(ofd, de->d_name, S_IFCHR | 0600, makedev(0, 0)) < 0 ? -errno
											: 0;
			continue;
		}
		if (S_ISDIR(ost.st_mode) && S_ISDIR(lst.st_mode)) {
			_cleanup_close_ int o2 = -EBADF, l2 = -EBADF;

			o2 = openat(ofd, de->d_name,
				    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			l2 = openat(lfd, de->d_name,
				    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (o2 >= 0 && l2 >= 0)
				r = opaque_over(u, o2, l2, depth + 1);
		}
	}
	closedir(d);
	return r;
}

static int apply_opaque(struct unpack *u, struct ts_error *err)
{
	for (size_t i = 0; i < u->n_opaque; i++) {
		_cleanup_close_ int ofd = open_dir_beneath(u->dirfd, u->opaque[i], true);

		if (ofd < 0) {
			warn(u, "skipped the opaque marker of `%s`: not a directory", u->opaque[i]);
			continue;
		}
		for (size_t k = 0; k < u->o->n_lowers; k++) {
			_cleanup_close_ int lfd =
				open_dir_beneath(u->o->lower_fds[k], u->opaque[i], false);
			int r;

			if (lfd < 0)
				continue;
			r = opaque_over(u, ofd, lfd, 0);
			if (r < 0)
				return ts_err_errno(err, r, "opaque directory `%s`", u->opaque[i]);
		}
	}
	return 0;
}

/*
 * The diff_id in the unpacking pass: a second reader (ISA-L for gzip, else libarchive's
 * format raw: the stream as it is, filters on) decompresses the layer, and its output,
 * hashed on the way, is the input of the tar reader (no filters: nothing left to
 * decompress). Decompressing and hashing run in a thread of their own, FEED_SLOTS buffers
 * ahead of the tar reader, which writes the files: the two halves of the work on two
 * CPUs. The thread touches only the feed (its reader, the hash, the counters) and stops
 * at the tar reader's request or the stream's end; everything of the feed is read by the
 * unpacking only after feed_stop has joined it, or under the lock.
 */
#define FEED_BUF (256 * 1024)
#define FEED_SLOTS 4

struct raw_feed {
	const struct ts_libarchive *L;
	struct archive *raw;
	struct ts_gunzip *gz;	/* a gzip layer, decompressed by ISA-L instead of raw */
	struct ts_error gz_err; /* what gz said went wrong */
	struct sha256_ctx h;
	uint64_t total, max;
	char *buf; /* FEED_SLOTS buffers of FEED_BUF */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	bool started;
	/* under mu: */
	size_t len[FEED_SLOTS];
	unsigned head, tail; /* buffers filled, buffers given back by the tar reader */
	bool holding;	     /* the tar reader has buffer tail (valid until its next read) */
	bool stop;	     /* the tar reader needs no more */
	bool ended;	     /* the thread filled its last buffer (end or error) */
	int error;	     /* 0, -EFBIG past max, -EIO a damaged stream */
};

static void *feed_thread(void *data)
{
	struct raw_feed *f = data;

	for (;;) {
		unsigned slot;
		char *out;
		la_ssize_t n;
		int error = 0;

		pthread_mutex_lock(&f->mu);
		while (f->head - f->tail >= FEED_SLOTS && !f->stop)
			pthread_cond_wait(&f->cv, &f->mu);
		slot = f->head % FEED_SLOTS;
		if (f->stop) {
			f->ended = true;
			pthread_mutex_unlock(&f->mu);
			return NULL;
		}
		pthread_mutex_unlock(&f->mu);
		out = f->buf + (size_t)slot * FEED_BUF;
		n = f->gz ? ts_gunzip_read(f->gz, out, FEED_BUF, &f->gz_err)
			  : f->L->read_data(f->raw, out, FEED_BUF);
		if (n < 0) {
			error = -EIO;
		} else {
			f->total += (uint64_t)n;
			if (f->total > f->max)
				error = -EFBIG;
			else
				sha256_update(&f->h, (size_t)n, (const uint8_t *)out);
		}
		pthread_mutex_lock(&f->mu);
		if (error || n == 0) {
			f->error = error;
			f->ended = true;
		} else {
			f->len[slot] = (size_t)n;
			f->head++;
		}
		pthread_cond_broadcast(&f->cv);
		pthread_mutex_unlock(&f->mu);
		if (error || n == 0)
			return NULL;
	}
}

static int feed_start(struct raw_feed *f)
{
	int r;

	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	r = pthread_create(&f->thread, NULL, feed_thread, f);
	if (r) {
		pthread_mutex_destroy(&f->mu);
		pthread_cond_destroy(&f->cv);
		return -r;
	}
	f->started = true;
	return 0;
}

/* Ask the thread to stop and wait for it; the feed is the caller's alone then. */
static void feed_stop(struct raw_feed *f)
{
	if (!f->started)
		return;
	pthread_mutex_lock(&f->mu);
	f->stop = true;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	pthread_join(f->thread, NULL);
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cv);
	f->started = false;
}

static la_ssize_t feed_read(struct archive *a, void *data, const void **buf)
{
	struct raw_feed *f = data;
	la_ssize_t n;

	(void)a;
	pthread_mutex_lock(&f->mu);
	if (f->holding) {
		f->tail++;
		f->holding = false;
		pthread_cond_broadcast(&f->cv);
	}
	while (f->head == f->tail && !f->ended)
		pthread_cond_wait(&f->cv, &f->mu);
	if (f->head == f->tail) {
		n = f->error ? -1 : 0;
	} else {
		*buf = f->buf + (size_t)(f->tail % FEED_SLOTS) * FEED_BUF;
		n = (la_ssize_t)f->len[f->tail % FEED_SLOTS];
		f->holding = true;
	}
	pthread_mutex_unlock(&f->mu);
	return n;
}

/* The rest of the stream after the tar's end: part of the diff_id all the same. */
static int feed_drain(struct raw_feed *f)
{
	const void *b;
	la_ssize_t n;

	while ((n = feed_read(NULL, f, &b)) > 0)
		;
	return n < 0 ? -EIO : 0;
}

/* The thread's error (after feed_stop). */
static int feed_error(struct raw_feed *f, struct ts_error *err)
{
	if (f->error == -EFBIG)
		return ts_err(err, -EFBIG, "layer unpacks to more than %llu bytes",
			      (unsigned long long)f->max);
	if (f->gz)
		return ts_err(err, -EIO, "%s", f->gz_err.msg);
	return ts_err(err, -EIO, "decompress layer: %s",
		      f->L->error_string(f->raw) ? f->L->error_string(f->raw) : "damaged");
}

/* A gzip layer through ISA-L (*gz), or NULL in *gz: libarchive decompresses it (another
 * compression, no libisal.so.2, or TOREN_SANDBOX_INFLATE=libarchive, which the bench uses
 * to compare the two in the same run). */
static int open_gzip(int fd, struct ts_gunzip **gz, struct ts_error *err)
{
	const char *how = getenv("TOREN_SANDBOX_INFLATE");
	int r;

	*gz = NULL;
	if ((how && !strcmp(how, "libarchive")) || !ts_gunzip_is_gzip(fd))
		return 0;
	r = ts_gunzip_open(fd, gz, err);
	return r == -ENOPKG ? 0 : r;
}

/* Open a on the layer fd: directly, or through f (f->raw set up here) for the diff_id. */
static int open_layer(const struct ts_libarchive *L, struct archive *a, int fd, struct raw_feed *f,
		      struct ts_error *err)
{
	__typeof__(archive_read_support_format_raw) *raw;
	__typeof__(archive_read_open) *open_cb;
	struct archive_entry *e;
	int r;

	L->support_tar(a); /* layers are tar archives, nothing else */
	if (!f) {
		ts_libarchive_enable_filters(L, a);
		if (L->open_fd(a, fd, 64 * 1024) != ARCHIVE_OK)
			return ts_err(err, -EINVAL, "layer is not a tar archive: %s",
				      L->error_string(a) ? L->error_string(a) : "unreadable");
		return 0;
	}
	*(void **)&raw = dlsym(L->dl, "archive_read_support_format_raw");
	*(void **)&open_cb = dlsym(L->dl, "archive_read_open");
	if (!raw || !open_cb)
		return ts_err(err, -ENOPKG, "libarchive has no raw format or no archive_read_open");
	f->L = L;
	f->buf = malloc((size_t)FEED_SLOTS * FEED_BUF);
	if (!f->buf)
		return ts_err(err, -ENOMEM, "out of memory");
	r = open_gzip(fd, &f->gz, err);
	if (r < 0)
		return r;
	if (!f->gz) {
		f->raw = L->read_new();
		if (!f->raw)
			return ts_err(err, -ENOMEM, "out of memory");
		ts_libarchive_enable_filters(L, f->raw);
		raw(f->raw);
		if (L->open_fd(f->raw, fd, 64 * 1024) != ARCHIVE_OK ||
		    L->next_header(f->raw, &e) != ARCHIVE_OK)
			return ts_err(err, -EINVAL, "layer is unreadable: %s",
				      L->error_string(f->raw) ? L->error_string(f->raw)
							      : "damaged");
	}
	sha256_init(&f->h);
	r = feed_start(f);
	if (r < 0)
		return ts_err_errno(err, r, "start the layer's decompression thread");
	if (open_cb(a, f, NULL, feed_read, NULL) != ARCHIVE_OK) {
		feed_stop(f);
		if (f->error)
			return feed_error(f, err);
		return ts_err(err, -EINVAL, "layer is not a tar archive: %s",
			      L->error_string(a) ? L->error_string(a) : "unreadable");
	}
	return 0;
}

int ts_layer_unpack(int fd, int dirfd, const struct ts_layer_opts *o, struct ts_layer_stats *st,
		    struct ts_error *err)
{
	struct ts_layer_opts lim = *o;
	struct ts_libarchive L = { 0 };
	struct unpack u = { .o = &lim, .st = st, .dirfd = dirfd, .pfd = -EBADF };
	struct raw_feed feed = { 0 };
	struct archive *a;
	struct archive_entry *e;
	int r;

	memset(st, 0, sizeof(*st));
	if (!lim.max_bytes)
		lim.max_bytes = 16ULL << 30;
	if (!lim.max_entries)
		lim.max_entries = 1000000;
	if (!lim.max_entry_bytes || lim.max_entry_bytes > lim.max_bytes)
		lim.max_entry_bytes = lim.max_bytes;
	u.opaque = calloc(MAX_OPAQUE, sizeof(*u.opaque));
	if (!u.opaque)
		return ts_err(err, -ENOMEM, "out of memory");
	r = ts_libarchive_load(&L, err);
	if (r < 0)
		goto out_free;
	a = L.read_new();
	if (!a) {
		r = ts_err(err, -ENOMEM, "out of memory");
		goto out_dl;
	}
	feed.max = lim.max_bytes;
	r = open_layer(&L, a, fd, lim.diff_id ? &feed : NULL, err);
	if (r < 0)
		goto out_a;
	for (;;) {
		int h = L.next_header(a, &e);

		if (h == ARCHIVE_EOF)
			break;
		if (h != ARCHIVE_OK && h != ARCHIVE_WARN) {
			r = ts_err(err, -EIO, "read layer: %s",
				   L.error_string(a) ? L.error_string(a) : "damaged archive");
			break;
		}
		r = unpack_entry(&u, &L, a, e, err);
		if (r < 0)
			break;
	}
	wb_end(&u.wb, r == 0);
	if (r == 0 && lim.diff_id && feed_drain(&feed) < 0)
		r = -EIO;
	feed_stop(&feed);
	/* a stream error seen by the tar reader as a damaged header, its data's end or a short
	 * entry, or after the tar's end: the decompression's own words */
	if (r == -EIO && feed.error)
		r = feed_error(&feed, err);
	if (r == 0 && lim.defer) {
		lim.defer->paths = TAKE_PTR(u.opaque);
		lim.defer->n = u.n_opaque;
		u.n_opaque = 0;
	} else if (r == 0) {
		r = apply_opaque(&u, err);
	}
	if (r == 0 && lim.diff_id) {
		uint8_t d[SHA256_DIGEST_SIZE];

		sha256_digest(&feed.h, sizeof(d), d);
		for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
			snprintf(lim.diff_id + 2 * i, 3, "%02x", d[i]);
	}
out_a:
	feed_stop(&feed);
	L.read_free(a);
	if (feed.raw)
		L.read_free(feed.raw);
	ts_gunzip_free(feed.gz);
	free(feed.buf);
out_dl:
	dlclose(L.dl);
out_free:
	drop_parent(&u);
	for (size_t i = 0; i < u.n_opaque; i++)
		free(u.opaque[i]);
	free(u.opaque);
	return r;
}

int ts_layer_opaque_apply(int dirfd, const struct ts_layer_opaque *q, const struct ts_layer_opts *o,
			  struct ts_layer_stats *st, struct ts_error *err)
{
	struct unpack u = {
		.o = o, .st = st, .dirfd = dirfd, .opaque = q->paths, .n_opaque = q->n, .pfd = -EBADF
	};

	return apply_opaque(&u, err);
}

void ts_layer_opaque_free(struct ts_layer_opaque *q)
{
	for (size_t i = 0; i < q->n; i++)
		free(q->paths[i]);
	free(q->paths);
	q->paths = NULL;
	q->n = 0;
}

/* ts_layer_diff_id of a gzip layer through ISA-L; 1: not that way (open_gzip). */
static int gzip_diff_id(int fd, uint64_t max_bytes, char *hex, struct ts_error *err)
{
	struct ts_gunzip *gz = NULL;
	_cleanup_free_ uint8_t *buf = NULL;
	struct sha256_ctx h;
	uint8_t d[SHA256_DIGEST_SIZE];
	uint64_t total = 0;
	ssize_t n;
	int r = open_gzip(fd, &gz, err);

	if (r < 0 || !gz)
		return r < 0 ? r : 1;
	buf = malloc(FEED_BUF);
	if (!buf) {
		ts_gunzip_free(gz);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	sha256_init(&h);
	while ((n = ts_gunzip_read(gz, buf, FEED_BUF, err)) > 0) {
		total += (uint64_t)n;
		if (total > max_bytes) {
			ts_gunzip_free(gz);
			return ts_err(err, -EFBIG, "layer unpacks to more than %llu bytes",
				      (unsigned long long)max_bytes);
		}
		sha256_update(&h, (size_t)n, buf);
	}
	ts_gunzip_free(gz);
	if (n < 0)
		return (int)n;
	sha256_digest(&h, sizeof(d), d);
	for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	return 0;
}

int ts_layer_diff_id(int fd, uint64_t max_bytes, char *hex, struct ts_error *err)
{
	struct ts_libarchive L = { 0 };
	__typeof__(archive_read_support_format_raw) *raw;
	struct archive *a;
	struct archive_entry *e;
	struct sha256_ctx h;
	uint8_t d[SHA256_DIGEST_SIZE];
	uint64_t total = 0;
	char *buf = NULL;
	la_ssize_t n;
	int r;

	if (!max_bytes)
		max_bytes = 16ULL << 30;
	r = gzip_diff_id(fd, max_bytes, hex, err);
	if (r != 1)
		return r;
	r = ts_libarchive_load(&L, err);
	if (r < 0)
		return r;
	*(void **)&raw = dlsym(L.dl, "archive_read_support_format_raw");
	a = raw ? L.read_new() : NULL;
	buf = malloc(65536);
	if (!a || !buf) {
		r = ts_err(err, raw ? -ENOMEM : -ENOPKG, "%s",
			   raw ? "out of memory" : "libarchive has no raw format");
		goto out;
	}
	ts_libarchive_enable_filters(&L, a);
	raw(a);
	if (L.open_fd(a, fd, 64 * 1024) != ARCHIVE_OK || L.next_header(a, &e) != ARCHIVE_OK) {
		r = ts_err(err, -EINVAL, "layer is unreadable: %s",
			   L.error_string(a) ? L.error_string(a) : "damaged");
		goto out;
	}
	sha256_init(&h);
	while ((n = L.read_data(a, buf, 65536)) > 0) {
		total += (uint64_t)n;
		if (total > max_bytes) {
			r = ts_err(err, -EFBIG, "layer unpacks to more than %llu bytes",
				   (unsigned long long)max_bytes);
			goto out;
		}
		sha256_update(&h, (size_t)n, (const uint8_t *)buf);
	}
	if (n < 0) {
		r = ts_err(err, -EIO, "decompress layer: %s",
			   L.error_string(a) ? L.error_string(a) : "damaged");
		goto out;
	}
	sha256_digest(&h, sizeof(d), d);
	for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
out:
	free(buf);
	if (a)
		L.read_free(a);
	dlclose(L.dl);
	return r;
}
