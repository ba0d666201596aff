/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for `cp --extract` (src/lib/extract.c): the input is an archive (any
 * format and compression libarchive reads in-process), extracted by ts_archive_extract()
 * into the sandbox directory DST. extract.c turns entries into requests through the
 * struct ts_copy_ops it is given (mkdir and write_from) and ts_copy_skip() of
 * src/lib/copy.c; this harness is linked with extract.c but not copy.c and gives those
 * itself, as a recording sink instead of a sandbox (a mkdir or write of a name matching
 * *.pem or .env is refused with EPERM, as a protected name is, to reach the skip path).
 *
 * Checks, beyond "no crash, no leak":
 *  - every request names DST itself (the first mkdir only) or DST/NAME where NAME is made
 *    of plain components: no `..`, no `.`, no empty one, shorter than PATH_MAX;
 *  - modes carry permission bits only (no setuid, setgid, sticky), directories u+rwx;
 *  - the requests are exactly the ones the archive calls for, in order: the harness reads
 *    the same bytes with libarchive itself and expects a mkdir for each directory entry, a
 *    write of the entry's exact data for each regular file that is no hard link, and a
 *    skip for everything else (absolute names, `..`, symlinks, hard links, devices, FIFOs,
 *    sockets, refused names): so no link, device or setuid file is ever asked for;
 *  - the return value agrees (0, -EINVAL, -EIO or the sink's error) and errors are well
 *    formed;
 *  - while libarchive runs, it holds no file of the host open other than the archive
 *    (formats such as mtree name host files whose contents libarchive reads).
 * Each input is capped at 256 KiB, and all data written by one input at 4 MiB (the sink
 * then fails as a broken connection would, which stops the extraction). Run the fuzzer
 * with -malloc_limit_mb=8192: liblzma mallocs whatever dictionary an LZMA header asks for.
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cleanup.h"
#include "copy.h"
#include "extract.h"
#include "fileclient.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x)) {                                                                        \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #x);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#define INPUT_MAX (256 * 1024)
#define DATA_BUDGET (4U << 20)
#define CHUNK (256 * 1024) /* TS_CTL_CHUNK, what ts_files_write_from reads at a time */
#define DST "/home/user/app"
#define MAX_EVENTS 4096

enum ev_kind {
	EV_MKDIR,
	EV_WRITE,
};

struct event {
	enum ev_kind kind;
	char *path;
	unsigned mode;
	uint64_t len, hash; /* the data of a write */
};

struct run {
	struct event ev[MAX_EVENTS];
	size_t n;
	bool overflow;	  /* more events than MAX_EVENTS */
	uint64_t budget;  /* data bytes left */
	int archive_fd;	  /* the memfd the archive is in */
	int n_open;	  /* fds open before the extraction... */
	int open_fds[64]; /* ...and which */
};

static struct run A, B; /* A: what extract.c asked for; B: what the harness expects */
static struct run *cur;
static uint8_t *chunk;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

/* The sink refuses these names as the sandbox refuses protected ones. */
static bool refused(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !fnmatch("*.pem", base, 0) || !strcmp(base, ".env");
}

static void fds_snapshot(struct run *r)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	CHECK(d);
	r->n_open = 0;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && r->n_open < (int)ELEMENTSOF(r->open_fds))
			r->open_fds[r->n_open++] = atoi(de->d_name);
	closedir(d);
}

/* libarchive holds no host file open that was not open before, except the archive. */
static void check_no_host_files(const struct run *r)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	CHECK(d);
	while ((de = readdir(d))) {
		char p[64], target[PATH_MAX];
		bool known = false;
		ssize_t n;
		int fd;

		if (de->d_name[0] == '.')
			continue;
		fd = atoi(de->d_name);
		if (fd == dirfd(d) || fd == r->archive_fd)
			continue;
		for (int i = 0; i < r->n_open; i++)
			known |= r->open_fds[i] == fd;
		if (known)
			continue;
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		n = readlink(p, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		/* pipes, sockets, anon inodes, memfds are no host files */
		if (target[0] != '/' || !strncmp(target, "/memfd:", 7))
			continue;
		fprintf(stderr, "fuzz-extract: libarchive opened the host file `%s` (fd %d)\n",
			target, fd);
		if (!getenv("FUZZ_EXTRACT_HOST_FILES_OK"))
			abort();
	}
	closedir(d);
}

/* A request from extract.c names DST or DST/NAME with plain components only. */
static void check_path(const char *path, bool is_dst)
{
	const char *s;

	CHECK(strlen(path) < PATH_MAX);
	CHECK(!strncmp(path, DST, strlen(DST)));
	s = path + strlen(DST);
	if (is_dst) {
		CHECK(!*s);
		return;
	}
	CHECK(*s == '/');
	while (*s == '/') {
		size_t n;

		s++;
		n = strcspn(s, "/");
		CHECK(n > 0);
		CHECK(!(n == 1 && s[0] == '.'));
		CHECK(!(n == 2 && s[0] == '.' && s[1] == '.'));
		s += n;
	}
	CHECK(!*s);
}

static struct event *record(struct run *r, enum ev_kind kind, const char *path, unsigned mode)
{
	struct event *e;

	if (r->n == MAX_EVENTS) {
		r->overflow = true;
		return NULL;
	}
	e = &r->ev[r->n++];
	*e = (struct event){ .kind = kind, .mode = mode, .hash = 0xcbf29ce484222325ULL };
	e->path = strdup(path);
	CHECK(e->path);
	return e;
}

/* The sink: what a backend would send to the sandbox. ctx is always &sink_ctx. */
static int sink_ctx;

static int sink_mkdir(void *ctx, const char *path, unsigned mode, struct ts_error *err)
{
	CHECK(cur == &A && ctx == &sink_ctx);
	check_path(path, A.n == 0);
	CHECK(mode <= 0777 && (mode & 0700) == 0700);
	check_no_host_files(&A);
	record(&A, EV_MKDIR, path, mode);
	if (A.n > 1 && refused(path))
		return ts_err(err, -EPERM, "`%s` is protected", path);
	return 0;
}

static int sink_write_from(void *ctx, const char *path, int mode, ts_files_reader_fn fn,
			   void *userdata, struct ts_error *err)
{
	struct event *e;

	CHECK(cur == &A && ctx == &sink_ctx);
	CHECK(A.n > 0); /* DST first */
	check_path(path, false);
	CHECK(mode >= 0 && mode <= 0777);
	check_no_host_files(&A);
	e = record(&A, EV_WRITE, path, (unsigned)mode);
	if (refused(path))
		return ts_err(err, -EPERM, "`%s` is protected", path);
	for (;;) {
		ssize_t n = fn(userdata, chunk, CHUNK);

		if (n < 0)
			return ts_err_errno(err, (int)n, "write `%s`: read the source", path);
		CHECK((size_t)n <= CHUNK);
		if (n == 0)
			return 0;
		if ((uint64_t)n > A.budget) {
			A.budget = 0;
			return ts_err(err, -ECONNRESET, "write `%s`: budget", path);
		}
		A.budget -= (uint64_t)n;
		if (e) {
			e->len += (uint64_t)n;
			e->hash = fnv(e->hash, chunk, (size_t)n);
		}
	}
}

/* extract.c never stats, lists or reads: a NULL op would crash, and that is a finding */
static const struct ts_copy_ops sink_ops = { .mkdir = sink_mkdir, .write_from = sink_write_from };

static unsigned skipped_msgs;

void ts_copy_skip(struct ts_copy *c, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int n;

	CHECK(cur == &A);
	c->skipped++;
	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	CHECK(n > 0 && msg[0]);
	skipped_msgs++;
}

/*
 * The expectation, from the archive itself: the same libarchive set-up as extract.c (its
 * in-process filters, its formats: never mtree or raw), entry by entry.
 */
static int (*const filters[])(struct archive *) = {
	archive_read_support_filter_gzip,     archive_read_support_filter_bzip2,
	archive_read_support_filter_compress, archive_read_support_filter_xz,
	archive_read_support_filter_lzma,     archive_read_support_filter_lzip,
	archive_read_support_filter_zstd,     archive_read_support_filter_lz4,
};

static int (*const formats[])(struct archive *) = {
	archive_read_support_format_tar,  archive_read_support_format_cpio,
	archive_read_support_format_zip,  archive_read_support_format_7zip,
	archive_read_support_format_ar,	  archive_read_support_format_iso9660,
	archive_read_support_format_xar,  archive_read_support_format_cab,
	archive_read_support_format_lha,  archive_read_support_format_rar,
	archive_read_support_format_rar5, archive_read_support_format_empty,
};

/* Split name into plain components below DST; 1: none left, -1: refused (abs, `..`). */
static int expect_path(const char *name, char *out, size_t len)
{
	char buf[PATH_MAX * 2], *save = NULL;
	size_t used = (size_t)snprintf(out, len, "%s", DST);
	bool any = false;

	if (name[0] == '/')
		return -1;
	if (strlen(name) >= sizeof(buf))
		return -2;
	snprintf(buf, sizeof(buf), "%s", name);
	for (char *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, ".."))
			return -1;
		if (!strcmp(c, "."))
			continue;
		if (used + 1 + strlen(c) >= len)
			return -2;
		used += (size_t)snprintf(out + used, len - used, "/%s", c);
		any = true;
	}
	return any ? 0 : 1;
}

/* B's skips, and the result extract.c should give. */
static unsigned expect_skipped;

static int expect(int fd)
{
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	int r = 0;

	CHECK(a);
	/* only filters libarchive runs in-process: others would start a program */
	for (size_t i = 0; i < ELEMENTSOF(filters); i++) {
		struct archive *probe = archive_read_new();

		CHECK(probe);
		if (filters[i](probe) == ARCHIVE_OK)
			filters[i](a);
		archive_read_free(probe);
	}
	for (size_t i = 0; i < ELEMENTSOF(formats); i++)
		formats[i](a);
	if (archive_read_open_fd(a, fd, 64 * 1024) != ARCHIVE_OK) {
		archive_read_free(a);
		return -EINVAL;
	}
	for (bool first = true;; first = false) {
		int h = archive_read_next_header(a, &e);
		char path[PATH_MAX];
		const char *name;
		unsigned type, perm;
		struct event *ev;
		int pr;

		if (first && h == ARCHIVE_EOF && archive_format(a) == ARCHIVE_FORMAT_EMPTY) {
			r = -EINVAL;
			break;
		}
		if (first && (h == ARCHIVE_OK || h == ARCHIVE_WARN || h == ARCHIVE_EOF))
			record(&B, EV_MKDIR, DST, 0755);
		if (h == ARCHIVE_EOF)
			break;
		if (h == ARCHIVE_FAILED) {
			expect_skipped++;
			continue;
		}
		if (h != ARCHIVE_OK && h != ARCHIVE_WARN) {
			r = -EIO;
			break;
		}
		name = archive_entry_pathname(e);
		if (!name || !*name) {
			expect_skipped++;
			continue;
		}
		pr = expect_path(name, path, sizeof(path));
		if (pr == 1)
			continue;
		type = archive_entry_filetype(e);
		perm = archive_entry_perm(e) & 0777;
		if (pr < 0 || archive_entry_hardlink(e) || (type != AE_IFDIR && type != AE_IFREG)) {
			expect_skipped++;
			continue;
		}
		if (type == AE_IFDIR) {
			record(&B, EV_MKDIR, path, perm | 0700);
			expect_skipped += refused(path);
			continue;
		}
		ev = record(&B, EV_WRITE, path, perm);
		if (refused(path)) {
			expect_skipped++;
			continue;
		}
		for (;;) {
			la_ssize_t n = archive_read_data(a, chunk, CHUNK);

			if (n < 0) {
				r = -EIO;
				break;
			}
			if (n == 0)
				break;
			if ((uint64_t)n > B.budget) {
				r = -ECONNRESET;
				break;
			}
			B.budget -= (uint64_t)n;
			if (ev) {
				ev->len += (uint64_t)n;
				ev->hash = fnv(ev->hash, chunk, (size_t)n);
			}
		}
		if (r < 0)
			break;
	}
	archive_read_free(a);
	return r;
}

static void run_free(struct run *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->ev[i].path);
	r->n = 0;
	r->overflow = false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ts_copy c = { .ops = &sink_ops, .ctx = &sink_ctx };
	struct ts_error err = { 0 };
	int fd, r, want;

	if (size > INPUT_MAX)
		return 0;
	if (!chunk) {
		chunk = malloc(CHUNK);
		CHECK(chunk);
	}
	fd = memfd_create("fuzz-extract", MFD_CLOEXEC);
	CHECK(fd >= 0);
	CHECK(ts_write_all(fd, data, size) == 0);
	CHECK(lseek(fd, 0, SEEK_SET) == 0);

	run_free(&A);
	run_free(&B);
	A.budget = B.budget = DATA_BUDGET;
	expect_skipped = 0;
	skipped_msgs = 0;
	fds_snapshot(&A);
	A.archive_fd = fd;

	cur = &A;
	r = ts_archive_extract(&c, fd, "fuzz.archive", DST, &err);
	cur = &B;
	check_no_host_files(&A);

	if (r < 0) {
		CHECK(r >= -4095 && err.code == -r && err.msg[0]);
		CHECK(r != -ENOPKG); /* libarchive is linked into this harness: it loads */
	} else {
		CHECK(r == 0 && err.code == 0);
	}
	CHECK(c.skipped == skipped_msgs);

	CHECK(lseek(fd, 0, SEEK_SET) == 0);
	want = expect(fd);
	close(fd);
	CHECK(A.overflow == B.overflow);
	if (A.n != B.n || r != want || c.skipped != expect_skipped) {
		fprintf(stderr,
			"fuzz-extract: extract gave %d (%s), %zu requests, %u skipped; "
			"expected %d, %zu requests, %u skipped\n",
			r, err.msg, A.n, c.skipped, want, B.n, expect_skipped);
		for (size_t i = 0; i < A.n || i < B.n; i++)
			fprintf(stderr, "  %zu: %s %s | %s %s\n", i,
				i < A.n ? (A.ev[i].kind == EV_MKDIR ? "mkdir" : "write") : "-",
				i < A.n ? A.ev[i].path : "",
				i < B.n ? (B.ev[i].kind == EV_MKDIR ? "mkdir" : "write") : "-",
				i < B.n ? B.ev[i].path : "");
		abort();
	}
	for (size_t i = 0; i < A.n; i++) {
		const struct event *x = &A.ev[i], *y = &B.ev[i];

		CHECK(x->kind == y->kind && !strcmp(x->path, y->path) && x->mode == y->mode);
		CHECK(x->len == y->len && x->hash == y->hash);
	}
	run_free(&A);
	run_free(&B);
	return 0;
}
