/* SPDX-License-Identifier: Apache-2.0 */
#include "oci-store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <nettle/sha2.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "oci-layer.h"
#include "oci-registry.h"
#include "oci-stream.h"
#include "paths.h"
#include "snapshot.h"
#include "store.h"
#include "syscall.h"
#include "util.h"

#define MAX_JSON (4u << 20)    /* an index, a manifest or a config */
#define MAX_BLOB (64ULL << 30) /* a layer blob, whatever its descriptor says */

#if defined(__x86_64__)
#define OCI_ARCH "amd64"
#elif defined(__aarch64__)
#define OCI_ARCH "arm64"
#elif defined(__arm__)
#define OCI_ARCH "arm"
#elif defined(__i386__)
#define OCI_ARCH "386"
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define OCI_ARCH "ppc64le"
#elif defined(__s390x__)
#define OCI_ARCH "s390x"
#elif defined(__riscv) && __riscv_xlen == 64
#define OCI_ARCH "riscv64"
#else
#define OCI_ARCH "unknown"
#endif

struct store {
	char dir[PATH_MAX];
	int fd;	  /* images/oci */
	int lock; /* images/oci/lock, flock'ed */
};

static void store_close(struct store *s)
{
	if (s->fd >= 0)
		close(s->fd);
	if (s->lock >= 0)
		close(s->lock); /* releases the flock */
	s->fd = s->lock = -EBADF;
}

/* Open the store (with create: made when missing, and locked: for writers only, since
 * index.json is replaced by a rename and readers always see a whole one). */
static int store_open_waiting(const char *root, bool create, struct store *s,
			      void (*waiting)(void *userdata), void *userdata,
			      struct ts_error *err);

static int store_open(const char *root, bool create, struct store *s, struct ts_error *err)
{
	return store_open_waiting(root, create, s, NULL, NULL, err);
}

/* store_open; waiting (when not NULL) is told when another writer holds the lock. */
static int store_open_waiting(const char *root, bool create, struct store *s,
			      void (*waiting)(void *userdata), void *userdata, struct ts_error *err)
{
	s->fd = s->lock = -EBADF;
	if ((size_t)snprintf(s->dir, sizeof(s->dir), "%s/images/oci", root) >= sizeof(s->dir))
		return ts_err(err, -ENAMETOOLONG, "image store path too long");
	if (create) {
		int r = ts_mkdir_p(AT_FDCWD, s->dir, 0700);

		if (r < 0)
			return ts_err_errno(err, r, "create `%s`", s->dir);
	}
	s->fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->fd < 0 && errno == ENOENT)
		return ts_err(err, -ENOENT,
			      "no image store `%s` yet (see `toren-sandbox image import`)", s->dir);
	if (s->fd < 0)
		return ts_err_errno(err, -errno, "open image store `%s`", s->dir);
	if (create) {
		static const char *const sub[] = { "blobs",   "blobs/sha256",
						   "layers",  "layers/sha256",
						   "diffids", "pulls",
						   "tmp" };

		for (size_t i = 0; i < ELEMENTSOF(sub); i++)
			if (mkdirat(s->fd, sub[i], 0700) < 0 && errno != EEXIST)
				return ts_err_errno(err, -errno, "create `%s/%s`", s->dir, sub[i]);
	}
	if (!create)
		return 0;
	s->lock = openat(s->fd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (s->lock < 0)
		return ts_err_errno(err, -errno, "open `%s/lock`", s->dir);
	if (flock(s->lock, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno == EWOULDBLOCK && waiting)
		waiting(userdata);
	if (flock(s->lock, LOCK_EX) < 0)
		return ts_err_errno(err, -errno, "lock `%s/lock`", s->dir);
	return 0;
}

/* Open an existing store for readers that must not race a prune: the lock taken shared
 * (imports, rm and prune take it exclusively), held until store_close. */
static int store_open_shared(const char *root, struct store *s, struct ts_error *err)
{
	int r = store_open(root, false, s, err);

	if (r < 0)
		return r;
	s->lock = openat(s->fd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (s->lock < 0)
		return ts_err_errno(err, -errno, "open `%s/lock`", s->dir);
	while (flock(s->lock, LOCK_SH) < 0)
		if (errno != EINTR)
			return ts_err_errno(err, -errno, "lock `%s/lock`", s->dir);
	return 0;
}

bool ts_oci_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 255 || strstr(s, ".."))
		return false;
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
	      (s[0] >= '0' && s[0] <= '9')))
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:/@+-") ==
	       n;
}

static bool hex64(const char *s)
{
	return strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

/* "sha256:<64 hex>" -> the hex part, else NULL */
static const char *digest_hex(const char *d)
{
	if (!d || strncmp(d, "sha256:", 7) != 0 || !hex64(d + 7))
		return NULL;
	return d + 7;
}

static void to_hex(const uint8_t *b, char *out)
{
	for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* Copy in to out (when out >= 0) while hashing; the hex digest and the size. */
static int hash_copy(int in, int out, uint64_t max, char *hex, uint64_t *size)
{
	struct sha256_ctx h;
	uint8_t d[SHA256_DIGEST_SIZE];
	char buf[65536];
	ssize_t n;

	sha256_init(&h);
	*size = 0;
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		*size += (uint64_t)n;
		if (*size > max)
			return -EFBIG;
		sha256_update(&h, (size_t)n, (const uint8_t *)buf);
		if (out >= 0 && ts_write_all(out, buf, (size_t)n) < 0)
			return -errno;
	}
	if (n < 0)
		return -errno;
	sha256_digest(&h, sizeof(d), d);
	to_hex(d, hex);
	return 0;
}

static void sha256_hex_of(const char *s, char *hex)
{
	struct sha256_ctx h;
	uint8_t d[SHA256_DIGEST_SIZE];

	sha256_init(&h);
	sha256_update(&h, strlen(s), (const uint8_t *)s);
	sha256_digest(&h, sizeof(d), d);
	to_hex(d, hex);
}

/* The source of an import: a directory fd of its blobs (an OCI layout, or the unpacked
 * docker-archive) */
struct source {
	int dirfd;
	const char *shown;
	/* a pull: manifests and blobs come from here instead (dirfd unused) */
	struct ts_registry *reg;
	const char *top_hex; /* the manifest or index the tag named, fetched already */
	const char *top_text;
	size_t top_len;
};

#define BENEATH_LINKS_MAX 40 /* symlinks followed by the walk without openat2 */

/*
 * Without openat2 (a kernel before 5.6, or inside a sandbox, whose seccomp filter answers
 * ENOSYS for it): the same rule walked by hand. The path is made lexical first, each
 * symlink met is read and its target put in its place (an absolute one, or `..` above the
 * top, leads out: -EXDEV), and every component is opened with O_NOFOLLOW from the one
 * before, so nothing resolves outside dirfd.
 */
static int open_beneath_walk(int dirfd, const char *path)
{
	char todo[PATH_MAX * 2], done[PATH_MAX];
	unsigned links = 0;

	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	snprintf(todo, sizeof(todo), "%s", path);
	done[0] = '\0';
	for (;;) {
		/* todo: what is left, relative to done (a lexical path below dirfd) */
		char *p = todo, *next;
		if (*p == '/')
			return -EXDEV;
		while (*p) {
			next = strchr(p, '/');
			size_t n = next ? (size_t)(next - p) : strlen(p);
			char comp[NAME_MAX + 1];
			if (n > NAME_MAX)
				return -ENAMETOOLONG;
			memcpy(comp, p, n);
			comp[n] = '\0';
			p = next ? next + 1 : p + n;
			if (!n || !strcmp(comp, "."))
				continue;
			if (!strcmp(comp, "..")) {
				char *slash = strrchr(done, '/');
				if (!done[0])
					return -EXDEV;
				if (slash)
					*slash = '\0';
				else
					done[0] = '\0';
				continue;
			}
			char cand[PATH_MAX];
			if (snprintf(cand, sizeof(cand), "%s%s%s", done, done[0] ? "/" : "",
				     comp) >= (int)sizeof(cand))
				return -ENAMETOOLONG;
			/* a symlink? its target takes its place */
			char target[PATH_MAX];
			ssize_t tl = readlinkat(dirfd, cand, target, sizeof(target) - 1);
			if (tl >= 0) {
				if (++links > BENEATH_LINKS_MAX)
					return -ELOOP;
				target[tl] = '\0';
				if (target[0] == '/')
					return -EXDEV;
				char rest[PATH_MAX * 2];
				if (snprintf(rest, sizeof(rest), "%s%s%s", target, *p ? "/" : "",
					     p) >= (int)sizeof(rest))
					return -ENAMETOOLONG;
				snprintf(todo, sizeof(todo), "%s", rest);
				goto again;
			}
			memcpy(done, cand, strlen(cand) + 1);
		}
		break;
again:;
	}
	if (!done[0])
		return -EISDIR;
	/* every component of done is a directory or the file, none a symlink (checked above;
	 * O_NOFOLLOW at each step keeps a swap from leading elsewhere) */
	int fd = dup(dirfd);
	if (fd < 0)
		return -errno;
	char *q = done;
	for (;;) {
		char *slash = strchr(q, '/');
		if (slash)
			*slash = '\0';
		int nfd = openat(fd, q,
				 (slash ? O_PATH | O_DIRECTORY : O_RDONLY | O_NONBLOCK) |
					 O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		close(fd);
		if (nfd < 0)
			return -e;
		fd = nfd;
		if (!slash)
			return fd;
		q = slash + 1;
	}
}

/* Open the regular file path below src->dirfd, never leaving it (no absolute path, no
 * `..` above it, no symlink out: a docker archive may link a layer to another one, never
 * elsewhere). Opened without blocking, so that a FIFO there cannot hold the import (and
 * the store's lock) forever: anything but a regular file is -EMEDIUMTYPE. */
static int open_beneath(const struct source *src, const char *path)
{
	struct open_how how = { .flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
	/* a symlink as the last component is resolved beneath too */
	int fd = ts_openat2(src->dirfd, path, &how);
	struct stat st;

	/* EPERM too: a seccomp filter may answer so for a system call it does not know */
	if (fd < 0 && (errno == ENOSYS || errno == EPERM))
		fd = open_beneath_walk(src->dirfd, path);
	else if (fd < 0)
		fd = -errno;
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EMEDIUMTYPE;
	}
	return fd;
}

/* Read the file path below src->dirfd (open_beneath), at most MAX_JSON bytes. */
static int read_beneath(const struct source *src, const char *path, char **ret,
			struct ts_error *err)
{
	_cleanup_close_ int fd = open_beneath(src, path);
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;

	if (fd == -EXDEV || fd == -ELOOP)
		return ts_err(err, fd, "`%s` in `%s` leads out of it; refusing the image", path,
			      src->shown);
	if (fd == -EMEDIUMTYPE)
		return ts_err(err, fd, "`%s` in `%s` is not a regular file; refusing the image",
			      path, src->shown);
	if (fd < 0)
		return ts_err_errno(err, fd, "`%s` in `%s`", path, src->shown);
	buf = calloc(1, MAX_JSON + 1);
	if (!buf)
		return ts_err(err, -ENOMEM, "out of memory");
	while (len < MAX_JSON) {
		ssize_t n = read(fd, buf + len, MAX_JSON - len);

		if (n < 0)
			return ts_err_errno(err, -errno, "read `%s` in `%s`", path, src->shown);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len == MAX_JSON)
		return ts_err(err, -EFBIG, "`%s` in `%s` is larger than %u bytes", path, src->shown,
			      MAX_JSON - 1);
	*ret = TAKE_PTR(buf);
	return 0;
}

/* A new file in the store's tmp/ that no name reaches (gone when closed). */
static int tmp_file(struct store *s, struct ts_error *err)
{
	char tmpl[64];
	int out = openat(s->fd, "tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);

	if (out < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		/* no O_TMPFILE here: a named file, unlinked at once */
		snprintf(tmpl, sizeof(tmpl), "tmp/blob-%d-%p", (int)getpid(), (void *)&out);
		out = openat(s->fd, tmpl, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out >= 0)
			unlinkat(s->fd, tmpl, 0);
	}
	if (out < 0)
		return ts_err_errno(err, -errno, "temporary file in `%s/tmp`", s->dir);
	return out;
}

/* Copy the blob dir/path into the store's tmp/ as a new file, checking it against
 * want_hex (and want_size when >= 0); the fd of the copy, at its start. */
static int fetch_blob(struct store *s, const struct source *src, const char *path,
		      const char *want_hex, long long want_size, uint64_t max, struct ts_error *err)
{
	_cleanup_close_ int in = -EBADF, out = -EBADF;
	char hex[65];
	uint64_t size;
	int r;

	in = open_beneath(src, path);
	if (in == -EXDEV || in == -ELOOP)
		return ts_err(err, in, "blob `%s` in `%s` leads out of it; refusing the image",
			      path, src->shown);
	if (in == -EMEDIUMTYPE)
		return ts_err(err, in,
			      "blob `%s` in `%s` is not a regular file; refusing the image", path,
			      src->shown);
	if (in < 0)
		return ts_err_errno(err, in, "blob `%s` in `%s`", path, src->shown);
	out = tmp_file(s, err);
	if (out < 0)
		return out;
	r = hash_copy(in, out, max, hex, &size);
	if (r == -EFBIG)
		return ts_err(err, r, "blob `%s` in `%s` is larger than %llu bytes", path,
			      src->shown, (unsigned long long)max);
	if (r < 0)
		return ts_err_errno(err, r, "copy blob `%s` from `%s`", path, src->shown);
	if (strcmp(hex, want_hex) != 0)
		return ts_err(err, -EBADMSG,
			      "blob `%s` in `%s` does not match its digest: sha256:%s, expected "
			      "sha256:%s; refusing the image",
			      path, src->shown, hex, want_hex);
	if (want_size >= 0 && size != (uint64_t)want_size)
		return ts_err(
			err, -EBADMSG,
			"blob `%s` in `%s` has %llu bytes, its descriptor says %lld; refusing "
			"the image",
			path, src->shown, (unsigned long long)size, want_size);
	if (lseek(out, 0, SEEK_SET) < 0)
		return ts_err_errno(err, -errno, "seek");
	return TAKE_FD(out);
}

static int blob_path(const char *hex, char *out, size_t len);

/* Check what came for sha256:want_hex (want_size when >= 0): -EBADMSG unless it is. */
static int verify(const struct source *src, const char *what, const char *want_hex,
		  long long want_size, const char *hex, uint64_t size, struct ts_error *err)
{
	if (strcmp(hex, want_hex) != 0)
		return ts_err(err, -EBADMSG,
			      "%s sha256:%s from `%s` does not match its digest: it is sha256:%s; "
			      "refusing the image",
			      what, want_hex, src->shown, hex);
	if (want_size >= 0 && size != (uint64_t)want_size)
		return ts_err(err, -EBADMSG,
			      "%s sha256:%s from `%s` has %llu bytes, its descriptor says %lld; "
			      "refusing the image",
			      what, want_hex, src->shown, (unsigned long long)size, want_size);
	return 0;
}

static int fetch_desc_at_most(struct store *s, const struct source *src, bool manifest,
			      const char *hex, long long size, uint64_t max, struct ts_error *err);

/*
 * The blob sha256:hex of the source (a manifest or index when manifest: a registry keeps
 * those apart) as a verified file in tmp/, its fd at the start: from the layout's
 * blobs/, or downloaded.
 */
static int fetch_desc(struct store *s, const struct source *src, bool manifest, const char *hex,
		      long long size, uint64_t max, struct ts_error *err)
{
	/* a blob is as long as its descriptor says: never more is taken in */
	if (size >= 0 && (uint64_t)size < max) {
		int fd;

		max = (uint64_t)size;
		fd = fetch_desc_at_most(s, src, manifest, hex, size, max, err);
		if (fd == -EFBIG)
			return ts_err(err, fd,
				      "sha256:%s from `%s` is longer than the %lld bytes its "
				      "descriptor says: it does not match its digest; refusing the "
				      "image",
				      hex, src->shown, size);
		return fd;
	}
	return fetch_desc_at_most(s, src, manifest, hex, size, max, err);
}

/* fetch_desc, at most max bytes taken in. */
static int fetch_desc_at_most(struct store *s, const struct source *src, bool manifest,
			      const char *hex, long long size, uint64_t max, struct ts_error *err)
{
	_cleanup_close_ int out = -EBADF;
	char got[65];
	uint64_t n = 0;
	int r;

	if (!src->reg) {
		char path[128];

		blob_path(hex, path, sizeof(path));
		return fetch_blob(s, src, path, hex, size, max, err);
	}
	{
		/* the store keeps the manifests and configs it imported, verified then */
		char path[128];
		int fd;

		blob_path(hex, path, sizeof(path));
		fd = openat(s->fd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			return fd;
	}
	out = tmp_file(s, err);
	if (out < 0)
		return out;
	if (manifest) {
		_cleanup_free_ char *text = NULL;
		const char *body = NULL;
		char mtype[128];
		size_t len = 0;

		if (src->top_hex && !strcmp(src->top_hex, hex)) {
			body = src->top_text;
			len = src->top_len;
		} else {
			char digest[80];

			snprintf(digest, sizeof(digest), "sha256:%s", hex);
			r = ts_reg_manifest(src->reg, digest, &text, &len, mtype, sizeof(mtype),
					    err);
			if (r < 0)
				return r;
			body = text;
		}
		{
			struct sha256_ctx h;
			uint8_t d[SHA256_DIGEST_SIZE];

			sha256_init(&h);
			sha256_update(&h, len, (const uint8_t *)body);
			sha256_digest(&h, sizeof(d), d);
			to_hex(d, got);
		}
		n = len;
		if (ts_write_all(out, body, len) < 0)
			return ts_err_errno(err, -errno, "write a manifest to `%s/tmp`", s->dir);
	} else {
		r = ts_reg_blob(src->reg, hex, out, max, got, &n, err);
		if (r < 0)
			return r;
	}
	r = verify(src, manifest ? "manifest" : "blob", hex, size, got, n, err);
	if (r < 0)
		return r;
	if (lseek(out, 0, SEEK_SET) < 0)
		return ts_err_errno(err, -errno, "seek");
	return TAKE_FD(out);
}

/* A JSON blob of the source, verified: the text and the parsed object. */
static int fetch_json(struct store *s, const struct source *src, bool manifest, const char *hex,
		      long long size, char **text, json_t **ret, struct ts_error *err)
{
	_cleanup_close_ int fd = fetch_desc(s, src, manifest, hex, size, MAX_JSON, err);
	json_error_t jerr;
	size_t len;

	if (fd < 0)
		return fd;
	*text = calloc(1, MAX_JSON + 1);
	if (!*text)
		return ts_err(err, -ENOMEM, "out of memory");
	for (len = 0; len < MAX_JSON;) {
		ssize_t n = read(fd, *text + len, MAX_JSON - len);

		if (n < 0)
			return ts_err_errno(err, -errno, "read sha256:%s", hex);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	/* the text is kept by its strlen: a NUL inside would cut it off its digest */
	if (memchr(*text, '\0', len))
		return ts_err(err, -EBADMSG,
			      "sha256:%s in `%s` holds a NUL byte; refusing the image", hex,
			      src->shown);
	*ret = json_loads(*text, JSON_REJECT_DUPLICATES, &jerr);
	if (!*ret || !json_is_object(*ret)) {
		json_decref(*ret);
		*ret = NULL;
		return ts_err(err, -EBADMSG, "sha256:%s in `%s` is not a JSON object: %s", hex,
			      src->shown, jerr.text);
	}
	return 0;
}

static int blob_path(const char *hex, char *out, size_t len)
{
	return (size_t)snprintf(out, len, "blobs/sha256/%s", hex) >= len ? -ENAMETOOLONG : 0;
}

/* Keep text as the store's blob sha256:hex. */
static int keep_blob(struct store *s, const char *hex, const char *text, struct ts_error *err)
{
	char path[128], tmp[160];
	_cleanup_close_ int fd = -EBADF;

	blob_path(hex, path, sizeof(path));
	if (faccessat(s->fd, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	snprintf(tmp, sizeof(tmp), "tmp/blob-%s-%d", hex, (int)getpid());
	fd = openat(s->fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || ts_write_all(fd, text, strlen(text)) < 0 || fsync(fd) < 0 ||
	    renameat(s->fd, tmp, s->fd, path) < 0) {
		int e = errno;

		unlinkat(s->fd, tmp, 0);
		return ts_err_errno(err, -e, "store blob sha256:%s in `%s`", hex, s->dir);
	}
	return 0;
}

static int read_index(struct store *s, json_t **ret, struct ts_error *err)
{
	_cleanup_free_ char *text = NULL;
	json_error_t jerr;
	json_t *j;
	int r = ts_read_file_at(s->fd, "index.json", MAX_JSON, &text, NULL);

	if (r == -ENOENT) {
		*ret = json_pack("{s:i,s:{}}", "version", 1, "images");
		return *ret ? 0 : ts_err(err, -ENOMEM, "out of memory");
	}
	if (r < 0)
		return ts_err_errno(err, r, "read `%s/index.json`", s->dir);
	j = json_loads(text, 0, &jerr);
	if (!j || !json_is_object(json_object_get(j, "images"))) {
		json_decref(j);
		return ts_err(err, -EBADMSG, "`%s/index.json` is damaged: %s", s->dir, jerr.text);
	}
	*ret = j;
	return 0;
}

static int write_index(struct store *s, json_t *idx, struct ts_error *err)
{
	_cleanup_free_ char *text = json_dumps(idx, JSON_INDENT(2) | JSON_SORT_KEYS);
	_cleanup_close_ int fd = -EBADF;

	if (!text)
		return ts_err(err, -ENOMEM, "out of memory");
	fd = openat(s->fd, "index.json.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	if (fd < 0 || ts_write_all(fd, text, strlen(text)) < 0 || ts_write_all(fd, "\n", 1) < 0 ||
	    fsync(fd) < 0 || renameat(s->fd, "index.json.tmp", s->fd, "index.json") < 0)
		return ts_err_errno(err, -errno, "write `%s/index.json`", s->dir);
	return 0;
}

/* Disk use of the tree at dirfd/name (st_blocks), no symlink followed. */
static uint64_t du_at(int at, const char *name, int depth)
{
	struct stat st;
	uint64_t sum;
	DIR *d;
	struct dirent *de;
	int fd;

	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	sum = (uint64_t)st.st_blocks * 512;
	if (!S_ISDIR(st.st_mode) || depth > 256)
		return sum;
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sum;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return sum;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			sum += du_at(dirfd(d), de->d_name, depth + 1);
	closedir(d);
	return sum;
}

static int sweep(int dirfd, const char *sub, json_t *keep, const char *beside, uint64_t *freed,
		 size_t *removed);

struct import {
	struct store *s;
	struct source src;
	void (*warn)(void *userdata, const char *msg);
	void *userdata;
	uint64_t max_bytes;    /* per layer */
	uint64_t max_download; /* a pull's layers still to fetch (0: no limit) */
	json_t *layers;	       /* [{digest, key}] bottom first */
	/* a pull's progress (NULL: none) */
	void (*progress)(void *userdata, const struct ts_oci_progress *p);
	struct ts_oci_progress prog;
	uint64_t blob_base;	   /* prog.bytes_done before the layer in flight */
	bool in_layer;		   /* a layer is being downloaded (not a manifest or config) */
	bool relock;		   /* a pull: the store's lock is taken again only to unpack */
	bool unlocked;		   /* a pull between letting the store's lock go and relock */
	const atomic_bool *cancel; /* a pull's (NULL: never) */
	atomic_bool abort;	   /* a pull failed: the layers still in flight end */
	/* The warn and progress callbacks are called under it: a pull's download thread tells
	 * its bytes while the unpacking may warn, and the caller's callbacks (a progress bar
	 * on the same terminal) need not be thread-safe. */
	pthread_mutex_t cb_mu;
	/* Layers unpacked into their tmp/ directory (pending_path) and checked, waiting for the
	 * one syncfs (finish_layers) after which they are renamed into place: one wait for the
	 * disk per import instead of one per layer, and a layer in layers/ is still complete
	 * after a crash. diff: what diffids/<key> records once it is in place. */
	struct {
		char key[65], diff[72];
	} pending[TS_OCI_MAX_LAYERS];
	size_t n_pending;
	/* A pull's work directory tmp/<work> (work_dir), where its layers are unpacked without
	 * the store's lock, and the layers of the store it uses, flock'ed shared until it ends
	 * (stream_layers); n_streamed: the layers stream_layers went through. */
	char work[64];
	int work_fd;
	int held[TS_OCI_MAX_LAYERS];
	size_t n_streamed;
	struct stream_slot *slots; /* STREAM_SLOTS of them */
};

/* flock(fd, op: LOCK_EX or LOCK_SH); with cancel, polled so that a cancelled pull does not
 * wait for another process's to end: -ECANCELED. 0 or -errno. */
static int lock_op(int fd, int op, const atomic_bool *cancel)
{
	for (;;) {
		if (flock(fd, cancel ? op | LOCK_NB : op) == 0)
			return 0;
		if (errno != EINTR && errno != EWOULDBLOCK)
			return -errno;
		if (cancel && atomic_load(cancel))
			return -ECANCELED;
		if (cancel)
			poll(NULL, 0, 100);
	}
}

static int lock_ex(int fd, const atomic_bool *cancel)
{
	return lock_op(fd, LOCK_EX, cancel);
}

static void tell(struct import *im, enum ts_oci_phase phase)
{
	pthread_mutex_lock(&im->cb_mu);
	im->prog.phase = phase;
	if (im->progress)
		im->progress(im->userdata, &im->prog);
	pthread_mutex_unlock(&im->cb_mu);
}

/* One more layer done (cached: the store had it), told: under cb_mu, since the download
 * threads read im->prog to tell their bytes. */
static void tell_layer(struct import *im, bool cached)
{
	pthread_mutex_lock(&im->cb_mu);
	im->prog.layers_done++;
	if (cached)
		im->prog.layers_cached++;
	im->prog.phase = TS_OCI_PHASE_DOWNLOAD;
	if (im->progress)
		im->progress(im->userdata, &im->prog);
	pthread_mutex_unlock(&im->cb_mu);
}

static void im_warn(void *userdata, const char *msg)
{
	struct import *im = userdata;

	if (!im->warn)
		return;
	pthread_mutex_lock(&im->cb_mu);
	im->warn(im->userdata, msg);
	pthread_mutex_unlock(&im->cb_mu);
}

/* The tmp/ directory of the pending layer key: in a pull's work directory, else one of
 * its own (an import holds the store's lock throughout, so no sweep runs meanwhile). */
static void pending_path(struct import *im, const char *key, char *out, size_t len)
{
	if (im->work[0])
		snprintf(out, len, "tmp/%s/layer-%s", im->work, key);
	else
		snprintf(out, len, "tmp/layer-%s-%d", key, (int)getpid());
}

/* Where the layer key is: its tmp/ directory while it is pending, else layers/sha256/. */
static void layer_path(struct import *im, const char *key, char *out, size_t len)
{
	for (size_t i = 0; i < im->n_pending; i++)
		if (!strcmp(im->pending[i].key, key)) {
			pending_path(im, key, out, len);
			return;
		}
	snprintf(out, len, "layers/sha256/%s", key);
}

/* The pending layer key given up: its directory removed, its entry dropped. */
static void drop_pending(struct import *im, const char *key)
{
	for (size_t i = 0; i < im->n_pending; i++)
		if (!strcmp(im->pending[i].key, key)) {
			char p[160];

			pending_path(im, key, p, sizeof(p));
			ts_rm_rf_at(im->s->fd, p);
			memmove(&im->pending[i], &im->pending[i + 1],
				(im->n_pending - i - 1) * sizeof(im->pending[0]));
			im->n_pending--;
			return;
		}
}

/* Unpack the verified layer blob (fd, digest sha256:hex, named so in errors) as
 * layers/sha256/<key>, on top of the layers in im->layers so far (for its opaque
 * directories). With got (65 bytes): its diff_id, taken
 * in the same pass, and the directory renamed into place only when that is want_diff
 * (hex), else removed and 1 (a mismatch; the caller says so). A layer unpacked already is
 * only hashed then. 0 or -errno as well. */
static int unpack_layer(struct import *im, int fd, const char *hex, const char *key,
			const char *want_diff, char *got, struct ts_error *err)
{
	char final[128], tmp[160];
	int lower_fds[TS_OCI_MAX_LAYERS];
	size_t n_lowers = 0;
	struct ts_layer_stats st;
	struct ts_layer_opts o = { .whiteouts = true,
				   .max_bytes = im->max_bytes,
				   .warn = im_warn,
				   .userdata = im,
				   .diff_id = got };
	_cleanup_close_ int dfd = -EBADF;
	size_t i;
	json_t *l;
	int r;

	snprintf(final, sizeof(final), "layers/sha256/%s", key);
	if (faccessat(im->s->fd, final, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		/* unpacked once already (by an older store without a diff_id record) */
		if (!got)
			return 0;
		r = ts_layer_diff_id(fd, im->max_bytes, got, err);
		return r < 0 ? r : want_diff && !strcmp(got, want_diff) ? 0 : 1;
	}
	json_array_foreach(im->layers, i, l) {
		char p[160];

		layer_path(im, json_string_value(json_object_get(l, "key")), p, sizeof(p));
		lower_fds[n_lowers] =
			openat(im->s->fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (lower_fds[n_lowers] >= 0)
			n_lowers++;
	}
	o.lower_fds = lower_fds;
	o.n_lowers = n_lowers;
	pending_path(im, key, tmp, sizeof(tmp));
	ts_rm_rf_at(im->s->fd, tmp);
	if (mkdirat(im->s->fd, tmp, 0755) < 0) {
		r = ts_err_errno(err, -errno, "create `%s/%s`", im->s->dir, tmp);
		goto out;
	}
	dfd = openat(im->s->fd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		r = ts_err_errno(err, -errno, "open `%s/%s`", im->s->dir, tmp);
		goto out;
	}
	r = ts_layer_unpack(fd, dfd, &o, &st, err);
	if (r < 0) {
		ts_err_prefix(err, r, "layer sha256:%s", hex);
		ts_rm_rf_at(im->s->fd, tmp);
		goto out;
	}
	if (got && (!want_diff || strcmp(got, want_diff) != 0)) {
		/* another content than the config names: nothing of it is used */
		ts_rm_rf_at(im->s->fd, tmp);
		r = 1;
		goto out;
	}
	/* renamed into place by finish_layers, after the syncfs */
	snprintf(im->pending[im->n_pending].key, sizeof(im->pending[0].key), "%s", key);
	im->pending[im->n_pending++].diff[0] = '\0';
out:
	for (i = 0; i < n_lowers; i++)
		close(lower_fds[i]);
	return r;
}

/* The key (oci-store.h) of the layer sha256:hex over the one whose key is below (NULL: the
 * bottom layer), 65 bytes. */
static void chain_key(const char *below, const char *hex, char *key)
{
	char chain[200];

	if (!below) {
		snprintf(key, 65, "%s", hex);
		return;
	}
	snprintf(chain, sizeof(chain), "%s sha256:%s", below, hex);
	sha256_hex_of(chain, key);
}

/* The key of the layer with digest hex on top of im->layers. */
static int layer_key(struct import *im, const char *hex, char *key, struct ts_error *err)
{
	size_t n = json_array_size(im->layers);

	if (n >= TS_OCI_MAX_LAYERS)
		return ts_err(err, -E2BIG, "the image has more than %d layers", TS_OCI_MAX_LAYERS);
	chain_key(n ? json_string_value(json_object_get(json_array_get(im->layers, n - 1), "key"))
		    : NULL,
		  hex, key);
	return 0;
}

static bool layer_present(struct import *im, const char *key)
{
	char p[128];

	snprintf(p, sizeof(p), "layers/sha256/%s", key);
	return faccessat(im->s->fd, p, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* The diff_id (sha256:<hex>) the layer `key` was unpacked from, as diffids/<key> keeps
 * it: what a later image naming the same layer must agree with. "" when not recorded. */
static void read_diff_id(struct import *im, const char *key, char *out, size_t len)
{
	char p[128];
	_cleanup_close_ int fd = -EBADF;
	ssize_t n;

	out[0] = '\0';
	snprintf(p, sizeof(p), "diffids/%s", key);
	fd = openat(im->s->fd, p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, out, len - 1);
	out[n > 0 ? n : 0] = '\0';
	if (!ts_startswith(out, "sha256:") || strlen(out) != 71)
		out[0] = '\0';
}

static int note_diff_id(struct import *im, const char *key, const char *hex, struct ts_error *err)
{
	char p[128], tmp[160], text[80];
	_cleanup_close_ int fd = -EBADF;

	for (size_t i = 0; i < im->n_pending; i++)
		if (!strcmp(im->pending[i].key, key) && !im->pending[i].diff[0]) {
			/* recorded when the layer is in place (finish_layers) */
			snprintf(im->pending[i].diff, sizeof(im->pending[i].diff), "%s", hex);
			return 0;
		}

	snprintf(p, sizeof(p), "diffids/%s", key);
	snprintf(tmp, sizeof(tmp), "tmp/diffid-%s-%d", key, (int)getpid());
	snprintf(text, sizeof(text), "sha256:%s", hex);
	fd = openat(im->s->fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || ts_write_all(fd, text, strlen(text)) < 0 ||
	    renameat(im->s->fd, tmp, im->s->fd, p) < 0) {
		int e = errno;

		unlinkat(im->s->fd, tmp, 0);
		return ts_err_errno(err, -e, "record the diff_id of layer %s in `%s`", key,
				    im->s->dir);
	}
	return 0;
}

static int push_layer(struct import *im, const char *hex, const char *key, struct ts_error *err)
{
	if (json_array_append_new(im->layers, json_pack("{s:s+,s:s}", "digest", "sha256:", hex,
							"key", key)) < 0)
		return ts_err(err, -ENOMEM, "out of memory");
	return 0;
}

/* Add the uncompressed layer blob with digest hex (its diff_id too) on top of im->layers.
 * The digest is taken again while it is unpacked: a docker archive's blob was verified as
 * it was copied into the store, but `image build`'s tar is read where it lies, once for
 * its digest and once more here, and must not have changed in between. */
static int add_layer(struct import *im, int blobfd, const char *hex, struct ts_error *err)
{
	char key[65], got[65];
	int r = layer_key(im, hex, key, err);

	if (r < 0)
		return r;
	r = unpack_layer(im, blobfd, hex, key, hex, got, err);
	if (r == 1)
		return ts_err(err, -EBADMSG,
			      "`%s`: layer sha256:%s unpacked as sha256:%s (it changed while it "
			      "was read, or it is compressed); refusing the image",
			      im->src.shown, hex, got);
	if (r < 0 || (r = note_diff_id(im, key, hex, err)) < 0)
		return r;
	return push_layer(im, hex, key, err);
}

static bool platform_ok(json_t *desc)
{
	json_t *p = json_object_get(desc, "platform");

	return json_is_object(p) &&
	       !strcmp(json_string_value(json_object_get(p, "os")) ?: "", "linux") &&
	       !strcmp(json_string_value(json_object_get(p, "architecture")) ?: "", OCI_ARCH);
}

static bool is_index_type(const char *mt)
{
	return mt && (!strcmp(mt, "application/vnd.oci.image.index.v1+json") ||
		      !strcmp(mt, "application/vnd.docker.distribution.manifest.list.v2+json"));
}

/* Pick from the OCI index idx the manifest (descend into nested indexes): its descriptor. */
static int pick_manifest(struct import *im, json_t *idx, const char *ref, int depth, json_t **ret,
			 struct ts_error *err)
{
	json_t *ms = json_object_get(idx, "manifests"), *m, *pick = NULL;
	size_t i, n_match = 0;

	if (!json_is_array(ms) || json_array_size(ms) == 0)
		return ts_err(err, -EBADMSG, "`%s`: an index without manifests", im->src.shown);
	if (depth > 4)
		return ts_err(err, -ELOOP, "`%s`: indexes nested too deep", im->src.shown);
	json_array_foreach(ms, i, m) {
		const char *name = json_string_value(json_object_get(
			json_object_get(m, "annotations"), "org.opencontainers.image.ref.name"));

		if (depth == 0 && ref) {
			if (name && !strcmp(name, ref)) {
				pick = m;
				n_match++;
			}
		} else if (depth > 0) {
			if (platform_ok(m) ||
			    (!json_object_get(m, "platform") && json_array_size(ms) == 1)) {
				pick = m;
				break;
			}
		} else {
			pick = m;
			n_match++;
		}
	}
	if (depth == 0 && ref && !pick)
		return ts_err(err, -ENOENT, "`%s` has no image named `%s`", im->src.shown, ref);
	if (depth == 0 && !ref && n_match > 1) {
		/* several: the platform decides when it names one, else the caller does */
		size_t n_platform = 0;

		pick = NULL;
		json_array_foreach(ms, i, m)
			if (platform_ok(m)) {
				pick = m;
				n_platform++;
			}
		if (n_platform != 1)
			return ts_err(err, -EINVAL,
				      "`%s` holds %zu images: name one with oci:DIR:REF",
				      im->src.shown, n_match);
	}
	if (!pick)
		return ts_err(err, -ENOENT, "`%s` has no image for linux/%s", im->src.shown,
			      OCI_ARCH);
	if (is_index_type(json_string_value(json_object_get(pick, "mediaType")))) {
		const char *hex = digest_hex(json_string_value(json_object_get(pick, "digest")));
		_cleanup_free_ char *text = NULL;
		json_t *sub = NULL;
		int r;

		if (!hex)
			return ts_err(err, -EBADMSG, "`%s`: an index entry without a sha256 digest",
				      im->src.shown);
		r = fetch_json(im->s, &im->src, true, hex,
			       json_integer_value(json_object_get(pick, "size")), &text, &sub, err);
		if (r < 0)
			return r;
		r = pick_manifest(im, sub, NULL, depth + 1, ret, err);
		json_decref(sub);
		return r;
	}
	*ret = json_deep_copy(pick);
	return *ret ? 0 : ts_err(err, -ENOMEM, "out of memory");
}

/*
 * The pending layers into place: one syncfs of the store's file system for all of them
 * (what the per-layer syncfs did: the files of a layer reach the disk before its name
 * does), then each renamed and its diff_id recorded. Also on a failed import, so that
 * the layers checked before the failure are kept as a later pull's cache, as they were
 * when each went into place on its own. A failed syncfs (a write error of the file
 * system since the store was opened, or one of the write-behind of ts_layer_unpack,
 * which only syncfs reports) installs none of them: a layer whose files may not be
 * what was written is never used.
 */
static int finish_layers(struct import *im, struct ts_error *err)
{
	int r = 0;

	if (!im->n_pending)
		return 0;
	if (syncfs(im->s->fd) < 0)
		r = ts_err_errno(err, -errno, "write the layers to the disk of `%s`", im->s->dir);
	for (size_t i = 0; i < im->n_pending; i++) {
		char final[128], tmp[160], diff[72];
		int q;

		snprintf(final, sizeof(final), "layers/sha256/%s", im->pending[i].key);
		pending_path(im, im->pending[i].key, tmp, sizeof(tmp));
		snprintf(diff, sizeof(diff), "%s", im->pending[i].diff);
		if (r == 0 && faccessat(im->s->fd, final, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
			/* another pull put the same layer in place meanwhile: that one is used */
			ts_rm_rf_at(im->s->fd, tmp);
			im->pending[i].key[0] = '\0';
			continue;
		}
		if (r < 0 || renameat(im->s->fd, tmp, im->s->fd, final) < 0) {
			if (r == 0)
				r = ts_err_errno(err, -errno, "install layer `%s/%s`", im->s->dir,
						 final);
			ts_rm_rf_at(im->s->fd, tmp);
			continue;
		}
		/* a layer in place without a record is fetched and checked again: no harm */
		im->pending[i].key[0] = '\0';
		if (diff[0] &&
		    (q = note_diff_id(im, final + strlen("layers/sha256/"), diff, err)) < 0)
			r = q;
	}
	im->n_pending = 0;
	return r;
}

static int record(struct import *im, const char *name, const char *source, const char *manifest_hex,
		  const char *config_hex, struct ts_error *err)
{
	json_t *idx = NULL, *entry;
	int r = finish_layers(im, err);

	if (r < 0)
		return r;
	r = read_index(im->s, &idx, err);
	if (r < 0)
		return r;
	entry = json_pack("{s:s+,s:s+,s:O,s:s,s:I}", "digest", "sha256:", manifest_hex, "config",
			  "sha256:", config_hex, "layers", im->layers, "source", source, "imported",
			  (json_int_t)time(NULL));
	if (!entry || json_object_set_new(json_object_get(idx, "images"), name, entry) < 0) {
		json_decref(idx);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	r = write_index(im->s, idx, err);
	json_decref(idx);
	return r;
}

/* The layer i of the manifest (descriptor l, diff_id want) on top of im->layers: skipped
 * when a layer with its key is unpacked already, else fetched, checked and unpacked. */
static int import_one_layer(struct import *im, size_t i, json_t *l, json_t *diff, int fetched,
			    struct ts_error *err)
{
	const char *lhex = digest_hex(json_string_value(json_object_get(l, "digest")));
	const char *want = digest_hex(json_string_value(diff));
	json_t *size = json_object_get(l, "size");
	_cleanup_close_ int fd = fetched; /* downloaded before the lock was taken, or -EBADF */
	char key[65], got[65];
	int r;

	if (!lhex)
		return ts_err(err, -EBADMSG, "`%s`: layer %zu has no sha256 digest", im->src.shown,
			      i);
	r = layer_key(im, lhex, key, err);
	if (r < 0)
		return r;
	if (layer_present(im, key)) {
		char had[80];

		/* unpacked (and checked against its diff_id) by an earlier import or pull: this
		 * config must name the same content, else it describes another image. A layer
		 * without a record (an older store) is fetched and checked once more. */
		read_diff_id(im, key, had, sizeof(had));
		if (had[0] && strcmp(had, json_string_value(diff) ?: "") != 0)
			return ts_err(err, -EBADMSG,
				      "`%s`: layer sha256:%s decompresses to %s, its config's "
				      "diff_id says %s; refusing the image",
				      im->src.shown, lhex, had,
				      json_string_value(diff) ?: "nothing");
		if (had[0]) {
			tell_layer(im, true);
			return push_layer(im, lhex, key, err);
		}
	}
	if (fd < 0) {
		im->blob_base = im->prog.bytes_done;
		im->in_layer = true;
		fd = fetch_desc(im->s, &im->src, false, lhex,
				json_is_integer(size) ? json_integer_value(size) : -1, MAX_BLOB,
				err);
		im->in_layer = false;
		if (fd < 0)
			return fd;
		if (json_is_integer(size))
			im->prog.bytes_done = im->blob_base + (uint64_t)json_integer_value(size);
	}
	tell(im, TS_OCI_PHASE_UNPACK);
	/* the config's diff_id: the digest of the layer decompressed, taken while it is
	 * unpacked into tmp/ (one decompression); renamed into place only when it matches */
	r = unpack_layer(im, fd, lhex, key, want, got, err);
	if (r == 1)
		return ts_err(err, -EBADMSG,
			      "`%s`: layer sha256:%s decompresses to sha256:%s, its config's "
			      "diff_id says %s; refusing the image",
			      im->src.shown, lhex, got, json_string_value(diff) ?: "nothing");
	if (r < 0 || (r = note_diff_id(im, key, got, err)) < 0)
		return r;
	tell_layer(im, false);
	return push_layer(im, lhex, key, err);
}

/* Take the store's lock again (a pull let it go while it downloaded). */
static int relock(struct import *im, struct ts_error *err)
{
	int r;

	if (im->cancel && atomic_load(im->cancel))
		return ts_err(err, -ECANCELED, "the pull was cancelled");
	if (flock(im->s->lock, LOCK_EX | LOCK_NB) == 0) {
		im->unlocked = false;
		return 0;
	}
	if (errno == EWOULDBLOCK)
		tell(im, TS_OCI_PHASE_WAIT);
	r = lock_ex(im->s->lock, im->cancel);
	if (r < 0)
		return ts_err_errno(err, r, "lock `%s/lock`", im->s->dir);
	im->unlocked = false;
	return 0;
}

#define STREAM_SLOTS 2 /* layers downloaded and unpacked at once: 2 CPUs busy */

/* One layer in flight: its download (a registry handle of the slot's) and its unpacking,
 * in a thread of its own; the opaque directories are made by the pull's thread once the
 * layers below are unpacked (stream_finish). */
struct stream_slot {
	struct import *im;
	struct ts_registry *reg; /* the slot's, progress told to the slot */
	bool busy;
	pthread_t thread;
	/* the layer: set before the thread starts */
	size_t i;
	const char *hex;
	long long size;
	char key[65];
	int dfd; /* its directory in the work directory */
	/* the thread's, read after pthread_join */
	uint64_t now; /* bytes downloaded (under im->cb_mu) */
	int ur, dr;
	struct ts_error uerr, derr;
	char got_blob[65], got_diff[65];
	uint64_t got;
	struct ts_layer_opaque opaque;
};

/* The pull's bytes: the layers finished (blob_base) and those in flight. Under cb_mu. */
static void sum_bytes(struct import *im)
{
	im->prog.bytes_done = im->blob_base;
	for (size_t k = 0; k < STREAM_SLOTS; k++)
		if (im->slots[k].busy)
			im->prog.bytes_done += im->slots[k].now;
}

/* The bytes of a slot's download so far. Called by the slots' download threads. */
static void slot_bytes(void *userdata, uint64_t bytes)
{
	struct stream_slot *sl = userdata;
	struct import *im = sl->im;

	pthread_mutex_lock(&im->cb_mu);
	sl->now = bytes;
	sum_bytes(im);
	im->prog.phase = TS_OCI_PHASE_DOWNLOAD;
	if (im->progress)
		im->progress(im->userdata, &im->prog);
	pthread_mutex_unlock(&im->cb_mu);
}

static void *slot_main(void *data)
{
	struct stream_slot *sl = data;
	struct import *im = sl->im;
	struct ts_layer_stats st;
	struct ts_layer_opts o = { .whiteouts = true,
				   .max_bytes = im->max_bytes,
				   .warn = im_warn,
				   .userdata = im,
				   .diff_id = sl->got_diff,
				   .defer = &sl->opaque };
	struct ts_blob_stream *bs = NULL;

	/* a blob is as long as its descriptor says (at most 64 GiB): never more is taken in */
	sl->dr = ts_blob_stream_start(sl->reg, sl->hex,
				      (uint64_t)sl->size < MAX_BLOB ? (uint64_t)sl->size : MAX_BLOB,
				      &bs, &sl->derr);
	if (sl->dr < 0)
		return NULL;
	sl->ur = ts_layer_unpack(ts_blob_stream_fd(bs), sl->dfd, &o, &st, &sl->uerr);
	sl->dr = ts_blob_stream_end(bs, sl->got_blob, &sl->got, &sl->derr);
	return NULL;
}

/* Start the layer i (descriptor l, key) the store lacks in the free slot sl: its directory
 * made in the work directory, its thread started. 0 or -errno. */
static int stream_start(struct import *im, struct stream_slot *sl, size_t i, json_t *l,
			const char *key, struct ts_error *err)
{
	char p[160];
	int r;

	sl->hex = digest_hex(json_string_value(json_object_get(l, "digest")));
	sl->size = json_integer_value(json_object_get(l, "size"));
	if (!json_is_integer(json_object_get(l, "size")) || sl->size < 0)
		return ts_err(err, -EBADMSG, "`%s`: layer %zu has no size; refusing the image",
			      im->src.shown, i);
	if (!sl->reg &&
	    (r = ts_reg_clone(im->src.reg, slot_bytes, sl, &im->abort, &sl->reg, err)) < 0)
		return r;
	sl->i = i;
	snprintf(sl->key, sizeof(sl->key), "%s", key);
	sl->now = 0;
	sl->ur = sl->dr = 0;
	memset(&sl->opaque, 0, sizeof(sl->opaque));
	pending_path(im, key, p, sizeof(p));
	ts_rm_rf_at(im->s->fd, p);
	if (mkdirat(im->s->fd, p, 0755) < 0)
		return ts_err_errno(err, -errno, "create `%s/%s`", im->s->dir, p);
	sl->dfd = openat(im->s->fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sl->dfd < 0)
		return ts_err_errno(err, -errno, "open `%s/%s`", im->s->dir, p);
	r = ts_thread_start_quiet(&sl->thread, slot_main, sl);
	if (r) {
		close(sl->dfd);
		sl->dfd = -EBADF;
		return ts_err_errno(err, -r, "start a layer's thread");
	}
	pthread_mutex_lock(&im->cb_mu);
	sl->busy = true;
	pthread_mutex_unlock(&im->cb_mu);
	return 0;
}

/* Wait for the slot's layer; with err (the pull goes on), check it and make its opaque
 * directories over the layers below (im->layers, all unpacked), then it is pending. The
 * directory of a layer that is not used is removed. 0 or -errno. */
static int stream_finish(struct import *im, struct stream_slot *sl, json_t *diff,
			 struct ts_error *err)
{
	const char *want = digest_hex(json_string_value(diff));
	char p[160];
	int r;

	pthread_join(sl->thread, NULL);
	pthread_mutex_lock(&im->cb_mu);
	sl->busy = false;
	if (sl->dr == 0)
		im->blob_base += (uint64_t)sl->size;
	sum_bytes(im);
	pthread_mutex_unlock(&im->cb_mu);
	pending_path(im, sl->key, p, sizeof(p));
	/* The download's verdict first: a blob that is not the one asked for explains whatever
	 * its unpacking said, and nothing unpacked from it is kept. */
	if (sl->dr == 0)
		sl->dr = verify(&im->src, "blob", sl->hex, sl->size, sl->got_blob, sl->got,
				&sl->derr);
	if (!err)
		r = -ECANCELED;
	else if (sl->dr == -EFBIG)
		r = ts_err(err, sl->dr,
			   "sha256:%s from `%s` is longer than the %lld bytes its descriptor says: "
			   "it does not match its digest; refusing the image",
			   sl->hex, im->src.shown, sl->size);
	else if (sl->dr < 0)
		r = (*err = sl->derr, sl->dr);
	else if (sl->ur < 0)
		r = (*err = sl->uerr, ts_err_prefix(err, sl->ur, "layer sha256:%s", sl->hex));
	else if (!want || strcmp(sl->got_diff, want) != 0)
		r = ts_err(err, -EBADMSG,
			   "`%s`: layer sha256:%s decompresses to sha256:%s, its config's diff_id "
			   "says %s; refusing the image",
			   im->src.shown, sl->hex, sl->got_diff,
			   json_string_value(diff) ?: "nothing");
	else
		r = 0;
	if (r == 0 && sl->opaque.n) {
		int lower_fds[TS_OCI_MAX_LAYERS];
		size_t n_lowers = 0, i;
		struct ts_layer_stats st = { 0 };
		struct ts_layer_opts o = { .whiteouts = true, .warn = im_warn, .userdata = im };
		json_t *l;

		json_array_foreach(im->layers, i, l) {
			char lp[160];

			layer_path(im, json_string_value(json_object_get(l, "key")), lp,
				   sizeof(lp));
			lower_fds[n_lowers] = openat(
				im->s->fd, lp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (lower_fds[n_lowers] >= 0)
				n_lowers++;
		}
		o.lower_fds = lower_fds;
		o.n_lowers = n_lowers;
		r = ts_layer_opaque_apply(sl->dfd, &sl->opaque, &o, &st, err);
		if (r < 0)
			ts_err_prefix(err, r, "layer sha256:%s", sl->hex);
		for (i = 0; i < n_lowers; i++)
			close(lower_fds[i]);
	}
	ts_layer_opaque_free(&sl->opaque);
	close(sl->dfd);
	sl->dfd = -EBADF;
	if (r < 0) {
		ts_rm_rf_at(im->s->fd, p);
		return r;
	}
	/* renamed into place by finish_layers, after the syncfs */
	snprintf(im->pending[im->n_pending].key, sizeof(im->pending[0].key), "%s", sl->key);
	im->pending[im->n_pending++].diff[0] = '\0';
	r = note_diff_id(im, sl->key, sl->got_diff, err);
	if (r < 0)
		return r;
	tell_layer(im, false);
	return 0;
}

/*
 * A pull's layers, without the store's lock: a slow registry keeps no other import, pull,
 * prune or sandbox start waiting. First, under the store's lock taken shared (a prune
 * sweeps under it exclusively, so nothing goes between a check and its flock), each layer
 * the store has, checked against its diff_id record, is flock'ed shared until the pull
 * ends (held[]): a sweep skips it (entry_busy) while the layers above use it for their
 * opaque directories. Then each layer the store lacks is streamed into its unpacking,
 * STREAM_SLOTS at once (each with its own registry connection and threads), and finished
 * bottom first (stream_finish: its opaque directories need the layers below whole). The
 * layers go into im->layers as they are finished; the caller takes the store's lock,
 * starts im->layers afresh and installs the first n_streamed (install_streamed). At a
 * layer this cannot do (one in the store without its record, or with another) it stops:
 * the caller's pass under the lock does the rest, as imports do.
 */
static int stream_layers(struct import *im, json_t *ls, json_t *diffs, struct ts_error *err)
{
	char keys[TS_OCI_MAX_LAYERS][65], had[80];
	size_t i, n = 0, next = 0;
	int slot_of[TS_OCI_MAX_LAYERS];
	json_t *l;
	int r = lock_op(im->s->lock, LOCK_SH, im->cancel);

	if (r < 0)
		return ts_err_errno(err, r, "lock `%s/lock`", im->s->dir);
	json_array_foreach(ls, i, l) {
		const char *h = digest_hex(json_string_value(json_object_get(l, "digest")));
		char p[128];

		if (!h)
			break;
		chain_key(i ? keys[i - 1] : NULL, h, keys[i]);
		n = i + 1;
		slot_of[i] = -1;
		if (!layer_present(im, keys[i]))
			continue;
		read_diff_id(im, keys[i], had, sizeof(had));
		if (had[0] && !strcmp(had, json_string_value(json_array_get(diffs, i)) ?: "")) {
			snprintf(p, sizeof(p), "layers/sha256/%s", keys[i]);
			im->held[i] = openat(im->s->fd, p,
					     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (im->held[i] >= 0 && flock(im->held[i], LOCK_SH | LOCK_NB) < 0) {
				close(im->held[i]);
				im->held[i] = -EBADF;
			}
		}
		if (im->held[i] < 0) {
			n = i; /* the pass under the lock from here */
			break;
		}
	}
	flock(im->s->lock, LOCK_UN);
	im->blob_base = im->prog.bytes_done;
	im->in_layer = false;
	if (!im->slots) {
		im->slots = calloc(STREAM_SLOTS, sizeof(*im->slots));
		if (!im->slots)
			return ts_err(err, -ENOMEM, "out of memory");
		for (size_t k = 0; k < STREAM_SLOTS; k++) {
			im->slots[k].im = im;
			im->slots[k].dfd = -EBADF;
		}
	}
	for (i = 0; i < n && r == 0; i++) {
		/* keep the slots busy with the layers above */
		for (size_t k = 0; k < STREAM_SLOTS && r == 0; k++) {
			while (next < n && im->held[next] >= 0)
				next++;
			if (next >= n || im->slots[k].busy)
				continue;
			if ((r = stream_start(im, &im->slots[k], next, json_array_get(ls, next),
					      keys[next], err)) == 0)
				slot_of[next++] = (int)k;
		}
		if (r < 0)
			break;
		if (im->held[i] >= 0) {
			tell_layer(im, true);
		} else if ((r = stream_finish(im, &im->slots[slot_of[i]], json_array_get(diffs, i),
					      err)) < 0) {
			break;
		}
		slot_of[i] = -1;
		r = push_layer(im,
			       digest_hex(json_string_value(
				       json_object_get(json_array_get(ls, i), "digest"))),
			       keys[i], err);
		if (r == 0)
			im->n_streamed = i + 1;
	}
	/* a failure: the layers still in flight ended (their downloads abort, their unpacking
	 * then reads the end of its stream), waited for, their directories removed */
	if (r < 0)
		atomic_store(&im->abort, true);
	for (size_t k = 0; k < STREAM_SLOTS; k++)
		if (im->slots[k].busy)
			stream_finish(im, &im->slots[k], NULL, NULL);
	return r;
}

/* The layer i that stream_layers went through on top of im->layers, under the store's
 * lock: one it holds as it is, one it unpacked as it is unless another pull put the same
 * layer in place meanwhile (then that one is used, checked as any in the store). */
static int install_streamed(struct import *im, size_t i, json_t *l, json_t *diff,
			    struct ts_error *err)
{
	const char *h = digest_hex(json_string_value(json_object_get(l, "digest")));
	char key[65];
	int r = layer_key(im, h, key, err);

	if (r < 0)
		return r;
	if (im->held[i] < 0 && layer_present(im, key)) {
		drop_pending(im, key);
		im->prog.layers_done--;
		return import_one_layer(im, i, l, diff, -EBADF, err);
	}
	return push_layer(im, h, key, err);
}

/* A new directory tmp/<prefix>-<id> of the store (mode 0700), its name relative to the
 * store into name. The caller holds the store's lock and locks it before letting go (a
 * sweep removes what nobody holds). 0 or -errno. */
static int tmp_dir(struct store *s, const char *prefix, char *name, size_t len,
		   struct ts_error *err)
{
	for (int tries = 0;; tries++) {
		char id[TS_ID_LEN + 1];
		int r = ts_id_new(id, err);

		if (r < 0)
			return r;
		snprintf(name, len, "tmp/%s-%s", prefix, id);
		if (mkdirat(s->fd, name, 0700) == 0)
			return 0;
		if (errno != EEXIST || tries > 8)
			return ts_err_errno(err, -errno, "create `%s/%s`", s->dir, name);
	}
}

/* A pull's work directory, tmp/pull-<random>, made and flock'ed under the store's
 * lock (taken by import_begin): sweeps, which run under it, skip a locked entry
 * (entry_busy) until the pull ends or is killed. */
static int work_dir(struct import *im, struct ts_error *err)
{
	char p[sizeof(im->work) + 4];
	int r = tmp_dir(im->s, "pull", p, sizeof(p), err);

	if (r < 0)
		return r;
	memcpy(im->work, p + strlen("tmp/"), sizeof(im->work));
	im->work_fd = openat(im->s->fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (im->work_fd < 0 || flock(im->work_fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;

		ts_rm_rf_at(im->s->fd, p);
		im->work[0] = '\0';
		return ts_err_errno(err, -e, "work directory `%s/%s`", im->s->dir, p);
	}
	return 0;
}

/* A pull's end: what it unpacked and did not install removed, what it held let go. */
static void pull_end(struct import *im)
{
	if (im->slots)
		for (size_t k = 0; k < STREAM_SLOTS; k++)
			ts_reg_free(im->slots[k].reg);
	free(im->slots);
	im->slots = NULL;
	for (size_t i = 0; i < TS_OCI_MAX_LAYERS; i++)
		if (im->held[i] >= 0) {
			close(im->held[i]);
			im->held[i] = -EBADF;
		}
	if (im->work[0]) {
		char p[96];

		snprintf(p, sizeof(p), "tmp/%s", im->work);
		ts_rm_rf_at(im->s->fd, p);
		im->work[0] = '\0';
	}
	if (im->work_fd >= 0)
		close(im->work_fd);
	im->work_fd = -EBADF;
}

/* The image whose manifest desc names (a descriptor: digest, size), from im->src. */
static int import_manifest(struct import *im, json_t *desc, const char *name, const char *source,
			   char *digest, size_t len, struct ts_error *err)
{
	_cleanup_free_ char *mtext = NULL, *ctext = NULL;
	json_t *man = NULL, *cfg = NULL, *ls, *l, *diffs;
	const char *mhex, *chex;
	size_t i;
	int r;

	mhex = digest_hex(json_string_value(json_object_get(desc, "digest")));
	if (!mhex)
		return ts_err(err, -EBADMSG, "`%s`: a manifest without a sha256 digest",
			      im->src.shown);
	r = fetch_json(im->s, &im->src, true, mhex,
		       json_integer_value(json_object_get(desc, "size")) ?: -1, &mtext, &man, err);
	if (r < 0)
		goto out;
	if (is_index_type(json_string_value(json_object_get(man, "mediaType"))) ||
	    json_object_get(man, "manifests")) {
		r = ts_err(err, -EBADMSG, "`%s`: sha256:%s is an index where a manifest belongs",
			   im->src.shown, mhex);
		goto out;
	}
	chex = digest_hex(
		json_string_value(json_object_get(json_object_get(man, "config"), "digest")));
	ls = json_object_get(man, "layers");
	if (!chex || !json_is_array(ls)) {
		r = ts_err(err, -EBADMSG, "`%s`: manifest sha256:%s has no config or layers",
			   im->src.shown, mhex);
		goto out;
	}
	if (json_array_size(ls) > TS_OCI_MAX_LAYERS) {
		r = ts_err(err, -E2BIG, "`%s`: the image has %zu layers, at most %d are supported",
			   im->src.shown, json_array_size(ls), TS_OCI_MAX_LAYERS);
		goto out;
	}
	if (im->src.reg &&
	    json_integer_value(json_object_get(json_object_get(man, "config"), "size")) <= 0) {
		r = ts_err(err, -EBADMSG,
			   "`%s`: the config's descriptor has no size; refusing the "
			   "image",
			   im->src.shown);
		goto out;
	}
	r = fetch_json(im->s, &im->src, false, chex,
		       json_integer_value(json_object_get(json_object_get(man, "config"), "size"))
			       ?: -1,
		       &ctext, &cfg, err);
	if (r < 0)
		goto out;
	diffs = json_object_get(json_object_get(cfg, "rootfs"), "diff_ids");
	if (!json_is_array(diffs) || json_array_size(diffs) != json_array_size(ls)) {
		r = ts_err(
			err, -EBADMSG,
			"`%s`: the config's rootfs.diff_ids do not list the manifest's %zu layers",
			im->src.shown, json_array_size(ls));
		goto out;
	}
	/* what is left to download: the layers not unpacked yet (keys from the digests).
	 * No layer may claim more than MAX_BLOB, so that the sum (of at most
	 * TS_OCI_MAX_LAYERS of them) cannot wrap past max_download. */
	im->prog.layers = json_array_size(ls);
	{
		char key[65], below[65] = "";

		json_array_foreach(ls, i, l) {
			const char *h = digest_hex(json_string_value(json_object_get(l, "digest")));
			json_int_t size = json_integer_value(json_object_get(l, "size"));

			if (!h)
				break;
			if (size < 0 || (uint64_t)size > MAX_BLOB) {
				r = ts_err(
					err, -EFBIG,
					"`%s`: layer %zu declares a size of %lld bytes, outside 0 to "
					"%llu; refusing the image",
					im->src.shown, i, (long long)size,
					(unsigned long long)MAX_BLOB);
				goto out;
			}
			chain_key(i ? below : NULL, h, key);
			snprintf(below, sizeof(below), "%s", key);
			if (!layer_present(im, key))
				im->prog.bytes_total += (uint64_t)size;
		}
	}
	if (im->max_download && im->prog.bytes_total > im->max_download) {
		r = ts_err(err, -EFBIG,
			   "`%s`: its layers to download weigh %llu bytes, more than the %llu this "
			   "pull may fetch; nothing was downloaded",
			   im->src.shown, (unsigned long long)im->prog.bytes_total,
			   (unsigned long long)im->max_download);
		goto out;
	}
	tell(im, TS_OCI_PHASE_DOWNLOAD);
	if (im->src.reg && im->relock) {
		r = stream_layers(im, ls, diffs, err);
		if (r < 0)
			goto out;
	}
	if (im->relock) {
		r = relock(im, err);
		if (r < 0)
			goto out;
	}
	json_array_clear(im->layers);
	json_array_foreach(ls, i, l) {
		r = i < im->n_streamed
			    ? install_streamed(im, i, l, json_array_get(diffs, i), err)
			    : import_one_layer(im, i, l, json_array_get(diffs, i), -EBADF, err);
		if (r < 0)
			goto out;
	}
	if ((r = keep_blob(im->s, mhex, mtext, err)) < 0 ||
	    (r = keep_blob(im->s, chex, ctext, err)) < 0)
		goto out;
	r = record(im, name, source, mhex, chex, err);
	if (r == 0) {
		snprintf(digest, len, "sha256:%s", mhex);
		tell(im, TS_OCI_PHASE_DONE);
	}
out:
	json_decref(man);
	json_decref(cfg);
	return r;
}

/* The image of an OCI layout open as im->src (ref: NULL or a ref.name). */
static int import_layout(struct import *im, const char *ref, const char *name, const char *source,
			 char *digest, size_t len, struct ts_error *err)
{
	_cleanup_free_ char *itext = NULL;
	json_t *idx = NULL, *desc = NULL;
	json_error_t jerr;
	int r;

	r = read_beneath(&im->src, "index.json", &itext, err);
	if (r < 0)
		return ts_err_prefix(err, r, "not an OCI image layout?");
	idx = json_loads(itext, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(idx)) {
		r = ts_err(err, -EBADMSG, "`%s/index.json` is not a JSON object: %s", im->src.shown,
			   jerr.text);
		goto out;
	}
	r = pick_manifest(im, idx, ref, 0, &desc, err);
	if (r == 0)
		r = import_manifest(im, desc, name, source, digest, len, err);
out:
	json_decref(idx);
	json_decref(desc);
	return r;
}

/* A `docker save` tarball, unpacked (its own entries checked as a layer's) into tmp/. */
static int import_docker(struct import *im, const char *file, const char *name, const char *source,
			 char *digest, size_t len, struct ts_error *err)
{
	_cleanup_free_ char *mtext = NULL, *ctext = NULL, *mantext = NULL;
	_cleanup_close_ int fd = -EBADF, dfd = -EBADF;
	json_t *mj = NULL, *cfg = NULL, *man = NULL, *img, *ls, *l, *mlayers;
	struct ts_layer_opts o = { .max_entries = 100000,
				   .max_bytes = im->max_bytes ? im->max_bytes * TS_OCI_MAX_LAYERS
							      : 0,
				   .warn = im->warn,
				   .userdata = im->userdata };
	struct ts_layer_stats st;
	char tmp[64], chex[65], mhex[65];
	const char *cpath;
	json_error_t jerr;
	size_t i;
	int r;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ts_err_errno(err, -errno, "open `%s`", file);
	snprintf(tmp, sizeof(tmp), "tmp/archive-%d", (int)getpid());
	ts_rm_rf_at(im->s->fd, tmp);
	if (mkdirat(im->s->fd, tmp, 0700) < 0 ||
	    (dfd = openat(im->s->fd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return ts_err_errno(err, -errno, "create `%s/%s`", im->s->dir, tmp);
	r = ts_layer_unpack(fd, dfd, &o, &st, err);
	if (r < 0) {
		ts_err_prefix(err, r, "`%s`", file);
		goto out;
	}
	im->src.dirfd = dfd;
	im->src.shown = file;
	if (faccessat(dfd, "manifest.json", F_OK, AT_SYMLINK_NOFOLLOW) < 0 &&
	    faccessat(dfd, "index.json", F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		r = import_layout(im, NULL, name, source, digest, len, err);
		goto out;
	}
	r = read_beneath(&im->src, "manifest.json", &mtext, err);
	if (r < 0) {
		ts_err_prefix(err, r, "not a `docker save` tarball?");
		goto out;
	}
	mj = json_loads(mtext, JSON_REJECT_DUPLICATES, &jerr);
	img = json_array_get(mj, 0);
	cpath = json_string_value(json_object_get(img, "Config"));
	ls = json_object_get(img, "Layers");
	if (!json_is_array(mj) || json_array_size(mj) != 1 || !cpath || !json_is_array(ls)) {
		r = ts_err(err, -EBADMSG,
			   "`%s`: manifest.json must describe one image with Config and Layers",
			   file);
		goto out;
	}
	r = read_beneath(&im->src, cpath, &ctext, err);
	if (r < 0)
		goto out;
	sha256_hex_of(ctext, chex);
	cfg = json_loads(ctext, JSON_REJECT_DUPLICATES, &jerr);
	{
		json_t *diffs = json_object_get(json_object_get(cfg, "rootfs"), "diff_ids");

		if (!json_is_array(diffs) || json_array_size(diffs) != json_array_size(ls)) {
			r = ts_err(err, -EBADMSG,
				   "`%s`: the config's rootfs.diff_ids do not list the %zu layers",
				   file, json_array_size(ls));
			goto out;
		}
		mlayers = json_array();
		json_array_foreach(ls, i, l) {
			const char *want = digest_hex(json_string_value(json_array_get(diffs, i)));
			const char *lp = json_string_value(l);
			int lfd;

			if (!want || !lp) {
				json_decref(mlayers);
				r = ts_err(err, -EBADMSG,
					   "`%s`: layer %zu without a sha256 diff_id", file, i);
				goto out;
			}
			/* docker layers are uncompressed: their digest is the diff_id */
			lfd = fetch_blob(im->s, &im->src, lp, want, -1, MAX_BLOB, err);
			if (lfd < 0) {
				json_decref(mlayers);
				r = lfd;
				goto out;
			}
			r = add_layer(im, lfd, want, err);
			close(lfd);
			if (r < 0) {
				json_decref(mlayers);
				goto out;
			}
			json_array_append_new(mlayers,
					      json_pack("{s:s,s:s+}", "mediaType",
							"application/vnd.oci.image.layer.v1.tar",
							"digest", "sha256:", want));
		}
	}
	/* the manifest this image would have as an OCI layout */
	man = json_pack("{s:i,s:s,s:{s:s,s:s+,s:I},s:o}", "schemaVersion", 2, "mediaType",
			"application/vnd.oci.image.manifest.v1+json", "config", "mediaType",
			"application/vnd.oci.image.config.v1+json", "digest", "sha256:", chex,
			"size", (json_int_t)strlen(ctext), "layers", mlayers);
	mantext = man ? json_dumps(man, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (!mantext) {
		r = ts_err(err, -ENOMEM, "out of memory");
		goto out;
	}
	sha256_hex_of(mantext, mhex);
	if ((r = keep_blob(im->s, mhex, mantext, err)) < 0 ||
	    (r = keep_blob(im->s, chex, ctext, err)) < 0)
		goto out;
	r = record(im, name, source, mhex, chex, err);
	if (r == 0)
		snprintf(digest, len, "sha256:%s", mhex);
out:
	ts_rm_rf_at(im->s->fd, tmp);
	json_decref(mj);
	json_decref(cfg);
	json_decref(man);
	return r;
}

/* The start of an import or a pull as name: the store open and locked (waiting told when
 * another writer holds it), tmp/ swept, no layers yet. Undone by the caller's `out`. */
static int import_begin(struct import *im, const char *root, const char *name,
			void (*waiting)(void *userdata), struct ts_error *err)
{
	uint64_t freed = 0;
	size_t removed = 0;
	int r;

	pthread_mutex_init(&im->cb_mu, NULL);
	im->work_fd = -EBADF;
	for (size_t i = 0; i < TS_OCI_MAX_LAYERS; i++)
		im->held[i] = -EBADF;
	im->s->fd = im->s->lock = -EBADF;
	if (!ts_oci_name_valid(name))
		return ts_err(err, -EINVAL,
			      "image name `%s`: use letters, digits and `._:/@+-`, at most 255, "
			      "starting with a letter or digit",
			      name);
	r = store_open_waiting(root, true, im->s, waiting, im, err);
	if (r < 0)
		return r;
	/* under the lock no other import runs: what is in tmp/ was left by a killed one */
	sweep(im->s->fd, "tmp", NULL, NULL, &freed, &removed);
	im->layers = json_array();
	return im->layers ? 0 : ts_err(err, -ENOMEM, "out of memory");
}

int ts_oci_import(const char *root, const char *src, const char *name, uint64_t max_bytes,
		  void (*warn)(void *userdata, const char *msg), void *userdata, char *digest,
		  size_t len, struct ts_error *err)
{
	struct store s;
	struct import im = { .s = &s, .warn = warn, .userdata = userdata, .max_bytes = max_bytes };
	int r;

	r = import_begin(&im, root, name, NULL, err);
	if (r < 0)
		goto out;
	if (ts_startswith(src, "oci:")) {
		_cleanup_free_ char *dir = strdup(src + 4);
		char *colon = dir ? strrchr(dir, ':') : NULL;
		const char *ref = NULL;
		_cleanup_close_ int dfd = -EBADF;

		if (!dir) {
			r = ts_err(err, -ENOMEM, "out of memory");
			goto out;
		}
		if (colon && !strchr(colon, '/')) {
			*colon = '\0';
			ref = colon + 1;
		}
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0) {
			r = ts_err_errno(err, -errno, "OCI layout `%s`", dir);
			goto out;
		}
		im.src.dirfd = dfd;
		im.src.shown = dir;
		r = import_layout(&im, ref && ref[0] ? ref : NULL, name, src, digest, len, err);
	} else if (ts_startswith(src, "docker-archive:")) {
		r = import_docker(&im, src + 15, name, src, digest, len, err);
	} else {
		r = ts_err(err, -EINVAL,
			   "`%s`: import from oci:DIR[:REF] (an OCI image layout) or "
			   "docker-archive:FILE (a `docker save` tarball)",
			   src);
	}
out:
	/* a failed import keeps the layers it checked (no-op after record) */
	finish_layers(&im, NULL);
	json_decref(im.layers);
	pthread_mutex_destroy(&im.cb_mu);
	store_close(&s);
	return r;
}

static void pull_bytes(void *userdata, uint64_t bytes)
{
	struct import *im = userdata;

	if (!im->in_layer)
		return;
	/* from a layer's download thread while the layer unpacks: under the callbacks' lock */
	pthread_mutex_lock(&im->cb_mu);
	im->prog.bytes_done = im->blob_base + bytes;
	im->prog.phase = TS_OCI_PHASE_DOWNLOAD;
	if (im->progress)
		im->progress(im->userdata, &im->prog);
	pthread_mutex_unlock(&im->cb_mu);
}

static void pull_waiting(void *userdata)
{
	tell(userdata, TS_OCI_PHASE_WAIT);
}

static bool is_manifest_type(const char *mt)
{
	return mt && (!strcmp(mt, "application/vnd.oci.image.manifest.v1+json") ||
		      !strcmp(mt, "application/vnd.docker.distribution.manifest.v2+json"));
}

int ts_oci_pull(const char *root, const char *refstr, const char *name,
		const struct ts_oci_pull_opts *o, char *digest, size_t len, struct ts_error *err)
{
	struct store s;
	struct import im = { .s = &s,
			     .warn = o->warn,
			     .userdata = o->userdata,
			     .max_bytes = o->max_bytes,
			     .max_download = o->max_download,
			     .progress = o->progress,
			     .cancel = o->cancel };
	struct ts_reg_opts ro = { .insecure = o->insecure,
				  .auth_file = o->auth_file,
				  .no_credentials = o->no_credentials,
				  .progress = pull_bytes,
				  .userdata = &im,
				  .cancel = o->cancel };
	struct ts_oci_ref ref;
	struct ts_registry *reg = NULL;
	_cleanup_free_ char *top = NULL;
	char mtype[128], top_hex[65], shown[600];
	json_t *topj = NULL, *desc = NULL;
	_cleanup_close_ int ref_lock = -EBADF;
	size_t top_len = 0;
	int r;

	r = ts_oci_ref_parse(refstr, &ref, err);
	if (r < 0)
		return r;
	if (!name)
		name = refstr;
	ts_oci_ref_format(&ref, shown, sizeof(shown));
	r = import_begin(&im, root, name, pull_waiting, err);
	if (r < 0)
		goto out;
	/* downloads and their unpacking run without the store's lock, in a work directory of
	 * the pull's (taken again to install and record, after them): a slow registry keeps
	 * nobody waiting. Pulls of one reference take turns on a lock of their own, so the
	 * second finds the layers and downloads nothing. */
	r = work_dir(&im, err);
	if (r < 0)
		goto out;
	flock(s.lock, LOCK_UN);
	im.relock = true;
	im.unlocked = true;
	{
		char hex[65], path[128];

		sha256_hex_of(shown, hex);
		snprintf(path, sizeof(path), "pulls/%s", hex);
		ref_lock = openat(s.fd, path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (ref_lock < 0) {
			r = ts_err_errno(err, -errno, "open `%s/%s`", s.dir, path);
			goto out;
		}
		if (flock(ref_lock, LOCK_EX | LOCK_NB) < 0) {
			tell(&im, TS_OCI_PHASE_WAIT);
			r = lock_ex(ref_lock, o->cancel);
			if (r < 0) {
				ts_err_errno(err, r, "lock `%s/%s`", s.dir, path);
				goto out;
			}
		}
	}
	r = ts_reg_open(&ref, &ro, &reg, err);
	if (r < 0)
		goto out;
	im.src.dirfd = -EBADF;
	im.src.shown = shown;
	im.src.reg = reg;
	tell(&im, TS_OCI_PHASE_MANIFEST);
	r = ts_reg_manifest(reg, ref.digest[0] ? ref.digest : ref.tag, &top, &top_len, mtype,
			    sizeof(mtype), err);
	if (r < 0)
		goto out;
	{
		struct sha256_ctx h;
		uint8_t d[SHA256_DIGEST_SIZE];

		sha256_init(&h);
		sha256_update(&h, top_len, (const uint8_t *)top);
		sha256_digest(&h, sizeof(d), d);
		to_hex(d, top_hex);
	}
	/* a digest names exactly these bytes: the registry must not hand out others */
	if (ref.digest[0] && strcmp(ref.digest + 7, top_hex) != 0) {
		r = ts_err(err, -EBADMSG,
			   "%s: the registry's manifest is sha256:%s, not the digest asked for; "
			   "refusing the image",
			   shown, top_hex);
		goto out;
	}
	im.src.top_hex = top_hex;
	im.src.top_text = top;
	im.src.top_len = top_len;
	topj = json_loads(top, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(topj)) {
		r = ts_err(err, -EBADMSG, "%s: the manifest is not a JSON object", shown);
		goto out;
	}
	if (is_index_type(mtype) ||
	    (!is_manifest_type(mtype) && json_object_get(topj, "manifests"))) {
		r = pick_manifest(&im, topj, NULL, 1, &desc, err);
	} else if (is_manifest_type(mtype) || json_object_get(topj, "layers")) {
		desc = json_pack("{s:s+,s:I}", "digest", "sha256:", top_hex, "size",
				 (json_int_t)top_len);
		r = desc ? 0 : ts_err(err, -ENOMEM, "out of memory");
	} else {
		r = ts_err(err, -EPROTONOSUPPORT,
			   "%s: a manifest of type `%s`: only OCI and Docker v2 (schema 2) images "
			   "are supported",
			   shown, mtype[0] ? mtype : "unknown");
	}
	if (r == 0) {
		char source[640];

		snprintf(source, sizeof(source), "docker://%s", shown);
		r = import_manifest(&im, desc, name, source, digest, len, err);
	}
out:
	json_decref(topj);
	json_decref(desc);
	ts_reg_free(reg);
	/* a failed pull keeps the layers it checked (no-op after record): installed under the
	 * store's lock, taken again for them if the pull failed without it (given up when
	 * cancelled) */
	if (o->cancel && atomic_load(o->cancel))
		im.n_pending = 0; /* cancelled: nothing more, no syncfs; pull_end removes them */
	if (im.unlocked && im.n_pending && lock_ex(s.lock, o->cancel) == 0)
		im.unlocked = false;
	if (!im.unlocked)
		finish_layers(&im, NULL);
	pull_end(&im);
	json_decref(im.layers);
	pthread_mutex_destroy(&im.cb_mu);
	store_close(&s);
	return r;
}

int ts_oci_import_tar(const char *root, const char *tar, const char *name, const char *source,
		      const char *created_by, uint64_t max_bytes,
		      void (*warn)(void *userdata, const char *msg), void *userdata, char *digest,
		      size_t len, struct ts_error *err)
{
	struct store s;
	struct import im = { .s = &s, .warn = warn, .userdata = userdata, .max_bytes = max_bytes };
	_cleanup_free_ char *ctext = NULL, *mtext = NULL;
	_cleanup_close_ int fd = -EBADF;
	json_t *cfg = NULL, *man = NULL;
	char hex[65], chex[65], mhex[65], when[32];
	uint64_t size;
	time_t now = time(NULL);
	struct tm tm;
	int r;

	s.fd = s.lock = -EBADF;
	im.src.shown = tar;
	fd = open(tar, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return ts_err_errno(err, -errno, "open `%s`", tar);
	r = import_begin(&im, root, name, NULL, err);
	if (r < 0)
		goto out;
	/* an uncompressed layer: its digest is its diff_id */
	r = hash_copy(fd, -1, max_bytes ? max_bytes : 16ULL << 30, hex, &size);
	if (r < 0) {
		r = r == -EFBIG ? ts_err(err, r, "`%s` is larger than the layer bound", tar)
				: ts_err_errno(err, r, "read `%s`", tar);
		goto out;
	}
	if (lseek(fd, 0, SEEK_SET) < 0) {
		r = ts_err_errno(err, -errno, "seek `%s`", tar);
		goto out;
	}
	r = add_layer(&im, fd, hex, err);
	if (r < 0)
		goto out;
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	cfg = json_pack("{s:s,s:s,s:s,s:{s:[s]},s:{s:s,s:[s+]},s:[{s:s,s:s}]}", "architecture",
			OCI_ARCH, "os", "linux", "created", when, "config", "Env",
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"rootfs", "type", "layers", "diff_ids", "sha256:", hex, "history",
			"created", when, "created_by", created_by);
	ctext = cfg ? json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (!ctext) {
		r = ts_err(err, -ENOMEM, "out of memory");
		goto out;
	}
	sha256_hex_of(ctext, chex);
	man = json_pack("{s:i,s:s,s:{s:s,s:s+,s:I},s:[{s:s,s:s+,s:I}]}", "schemaVersion", 2,
			"mediaType", "application/vnd.oci.image.manifest.v1+json", "config",
			"mediaType", "application/vnd.oci.image.config.v1+json", "digest",
			"sha256:", chex, "size", (json_int_t)strlen(ctext), "layers", "mediaType",
			"application/vnd.oci.image.layer.v1.tar", "digest", "sha256:", hex, "size",
			(json_int_t)size);
	mtext = man ? json_dumps(man, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (!mtext) {
		r = ts_err(err, -ENOMEM, "out of memory");
		goto out;
	}
	sha256_hex_of(mtext, mhex);
	if ((r = keep_blob(&s, mhex, mtext, err)) < 0 || (r = keep_blob(&s, chex, ctext, err)) < 0)
		goto out;
	r = record(&im, name, source, mhex, chex, err);
	if (r == 0)
		snprintf(digest, len, "sha256:%s", mhex);
out:
	json_decref(cfg);
	json_decref(man);
	/* a failed import keeps the layers it checked (no-op after record) */
	finish_layers(&im, NULL);
	json_decref(im.layers);
	pthread_mutex_destroy(&im.cb_mu);
	store_close(&s);
	return r;
}

int ts_oci_workdir(const char *root, const char *prefix, char *path, size_t len,
		   struct ts_error *err)
{
	struct store s;
	char name[64];
	int fd, r;

	if (strlen(prefix) > 32 || strchr(prefix, '/'))
		return ts_err(err, -EINVAL, "bad work directory prefix `%s`", prefix);
	/* created under the store's lock, so no sweep sees it unlocked */
	r = store_open(root, true, &s, err);
	if (r < 0) {
		store_close(&s);
		return r;
	}
	if ((r = tmp_dir(&s, prefix, name, sizeof(name), err)) < 0)
		goto out;
	/* a regular file, not the directory: the fd may be handed to the processes that work
	 * there (so the lock lasts as long as they do), and a directory fd would be a way out
	 * of a chroot made in it */
	{
		char lock[128];

		snprintf(lock, sizeof(lock), "%s/.lock", name);
		fd = openat(s.fd, lock, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
		r = ts_err_errno(err, -errno, "lock `%s/%s`", s.dir, name);
		if (fd >= 0)
			close(fd);
		goto out;
	}
	if ((size_t)snprintf(path, len, "%s/%s", s.dir, name) >= len) {
		close(fd);
		r = ts_err(err, -ENAMETOOLONG, "image store path too long");
		goto out;
	}
	r = fd;
out:
	store_close(&s);
	return r;
}

static int lookup(struct store *s, const char *name, json_t **idx, json_t **entry,
		  struct ts_error *err)
{
	int r = read_index(s, idx, err);

	if (r < 0)
		return r;
	*entry = json_object_get(json_object_get(*idx, "images"), name);
	if (!json_is_object(*entry))
		return ts_err(err, -ENOENT, "no image `%s` (see `toren-sandbox image ls`)", name);
	return 0;
}

int ts_oci_list(const char *root, json_t **ret, struct ts_error *err)
{
	struct store s;
	json_t *idx = NULL, *out, *e;
	const char *name;
	int r = store_open(root, false, &s, err);

	if (r == -ENOENT) {
		ts_err_clear(err);
		store_close(&s);
		*ret = json_array();
		return *ret ? 0 : ts_err(err, -ENOMEM, "out of memory");
	}
	if (r < 0) {
		store_close(&s);
		return r;
	}
	r = read_index(&s, &idx, err);
	if (r < 0) {
		store_close(&s);
		return r;
	}
	out = json_array();
	json_object_foreach(json_object_get(idx, "images"), name, e) {
		uint64_t size = 0;
		size_t i;
		json_t *l;

		json_array_foreach(json_object_get(e, "layers"), i, l) {
			char p[128];

			snprintf(p, sizeof(p), "layers/sha256/%s",
				 json_string_value(json_object_get(l, "key")) ?: "-");
			size += du_at(s.fd, p, 0);
		}
		json_array_append_new(
			out,
			json_pack("{s:s,s:O,s:I,s:I,s:O}", "name", name, "digest",
				  json_object_get(e, "digest"), "layers",
				  (json_int_t)json_array_size(json_object_get(e, "layers")), "size",
				  (json_int_t)size, "source", json_object_get(e, "source")));
	}
	json_decref(idx);
	store_close(&s);
	*ret = out;
	return 0;
}

int ts_oci_inspect(const char *root, const char *name, json_t **ret, struct ts_error *err)
{
	struct store s;
	json_t *idx = NULL, *e, *out = NULL, *layers, *l, *man = NULL, *cfg = NULL;
	char path[128];
	size_t i;
	int r = store_open(root, false, &s, err);

	if (r < 0 || (r = lookup(&s, name, &idx, &e, err)) < 0)
		goto out;
	for (int k = 0; k < 2; k++) {
		const char *hex =
			digest_hex(json_string_value(json_object_get(e, k ? "config" : "digest")));
		_cleanup_free_ char *text = NULL;

		if (!hex || blob_path(hex, path, sizeof(path)) < 0 ||
		    (r = ts_read_file_at(s.fd, path, MAX_JSON, &text, NULL)) < 0) {
			r = ts_err(err, -EBADMSG, "image `%s`: its %s blob is missing in `%s`",
				   name, k ? "config" : "manifest", s.dir);
			goto out;
		}
		*(k ? &cfg : &man) = json_loads(text, 0, NULL);
	}
	layers = json_array();
	json_array_foreach(json_object_get(e, "layers"), i, l) {
		snprintf(path, sizeof(path), "layers/sha256/%s",
			 json_string_value(json_object_get(l, "key")) ?: "-");
		json_array_append_new(layers,
				      json_pack("{s:O,s:O,s:s++,s:I}", "digest",
						json_object_get(l, "digest"), "key",
						json_object_get(l, "key"), "path", s.dir, "/", path,
						"size", (json_int_t)du_at(s.fd, path, 0)));
	}
	out = json_pack("{s:s,s:O,s:O,s:O?,s:o?,s:o?,s:o}", "name", name, "digest",
			json_object_get(e, "digest"), "source", json_object_get(e, "source"),
			"imported", json_object_get(e, "imported"), "manifest", man, "config", cfg,
			"layers", layers);
	man = cfg = NULL;
	if (!out)
		r = ts_err(err, -ENOMEM, "out of memory");
out:
	json_decref(idx);
	json_decref(man);
	json_decref(cfg);
	store_close(&s);
	*ret = out;
	return r;
}

/* The Env of the image entry e (its config blob in the store), as ts_oci_env gives it. */
static int entry_env(struct store *s, const char *name, json_t *e, char *buf, size_t len,
		     size_t *used, struct ts_error *err)
{
	static const char *const ours[] = { "HOME", "USER", "LOGNAME", "TERM" };
	_cleanup_free_ char *text = NULL;
	json_t *cfg = NULL, *v;
	const char *hex;
	char path[128];
	size_t i, count = 0;

	*used = 0;
	hex = digest_hex(json_string_value(json_object_get(e, "config")));
	if (!hex || blob_path(hex, path, sizeof(path)) < 0 ||
	    ts_read_file_at(s->fd, path, MAX_JSON, &text, NULL) < 0 ||
	    !(cfg = json_loads(text, 0, NULL)))
		return ts_err(err, -EBADMSG, "image `%s`: its config blob is missing in `%s`", name,
			      s->dir);
	json_array_foreach(json_object_get(json_object_get(cfg, "config"), "Env"), i, v) {
		const char *kv = json_string_value(v), *eq = kv ? strchr(kv, '=') : NULL;
		char n[256];
		bool skip = false;

		if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(n) || count >= 64)
			continue;
		snprintf(n, sizeof(n), "%.*s", (int)(eq - kv), kv);
		for (size_t k = 0; k < ELEMENTSOF(ours); k++)
			skip |= !strcmp(n, ours[k]);
		if (skip || !ts_env_name_valid(n) || *used + strlen(kv) + 1 > len)
			continue;
		memcpy(buf + *used, kv, strlen(kv) + 1);
		*used += strlen(kv) + 1;
		count++;
	}
	json_decref(cfg);
	return 0;
}

int ts_oci_env(const char *root, const char *name, char *buf, size_t len, size_t *used,
	       struct ts_error *err)
{
	struct store s;
	json_t *idx = NULL, *e;
	int r = store_open(root, false, &s, err);

	*used = 0;
	if (r == 0 && (r = lookup(&s, name, &idx, &e, err)) == 0)
		r = entry_env(&s, name, e, buf, len, used, err);
	json_decref(idx);
	store_close(&s);
	return r;
}

bool ts_oci_has(const char *root, const char *name)
{
	struct store s;
	json_t *idx = NULL, *e;
	bool has = false;

	s.fd = s.lock = -EBADF;
	if (ts_oci_name_valid(name) && store_open(root, false, &s, NULL) == 0)
		has = lookup(&s, name, &idx, &e, NULL) == 0;
	json_decref(idx);
	store_close(&s);
	return has;
}

int ts_oci_rm(const char *root, const char *name, struct ts_error *err)
{
	struct store s;
	json_t *idx = NULL, *e;
	int r = store_open(root, true, &s, err);

	if (r == 0 && (r = lookup(&s, name, &idx, &e, err)) == 0) {
		json_object_del(json_object_get(idx, "images"), name);
		r = write_index(&s, idx, err);
	}
	json_decref(idx);
	store_close(&s);
	return r;
}

/*
 * Is someone holding a flock(2) on dirfd/name? A build in progress holds its tmp/ entry
 * exclusively, a running one-shot sandbox each of its layer directories shared
 * (ts_oci_use): neither may be removed under it. The lock dies with its holder, so a killed
 * build's leftovers are free to go.
 */
static bool entry_busy(int dirfd, const char *name)
{
	_cleanup_close_ int fd =
		openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	_cleanup_close_ int lock = -EBADF;

	if (fd < 0)
		return false;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK;
	/* a work directory is held through its .lock file (ts_oci_workdir) */
	lock = openat(fd, ".lock", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK;
	return false; /* the locks go with the fds */
}

/* Remove the entries of dirfd/sub whose names are not in keep (a JSON object used as a
 * set) nor in dirfd/beside (NULL: none) and that nobody holds a lock on (entry_busy);
 * count them and their disk use. */
static int sweep(int dirfd, const char *sub, json_t *keep, const char *beside, uint64_t *freed,
		 size_t *removed)
{
	_cleanup_close_ int fd =
		openat(dirfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;
	struct dirent *de;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	d = fdopendir(fcntl(fd, F_DUPFD_CLOEXEC, 3));
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((keep && json_object_get(keep, de->d_name)) || entry_busy(fd, de->d_name))
			continue;
		if (beside) {
			char p[PATH_MAX];

			snprintf(p, sizeof(p), "%s/%s", beside, de->d_name);
			if (faccessat(dirfd, p, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
				continue;
		}
		*freed += du_at(fd, de->d_name, 0);
		if (ts_rm_rf_at(fd, de->d_name) == 0)
			(*removed)++;
	}
	closedir(d);
	return 0;
}

/* Add the layer keys and blobs of entry e (an index entry or a pin) to the keep sets. */
static void keep_entry(json_t *e, json_t *layers, json_t *blobs)
{
	const char *m = digest_hex(json_string_value(json_object_get(e, "digest")));
	const char *c = digest_hex(json_string_value(json_object_get(e, "config")));
	size_t i;
	json_t *l;

	if (m)
		json_object_set_new(blobs, m, json_true());
	if (c)
		json_object_set_new(blobs, c, json_true());
	json_array_foreach(json_object_get(e, "layers"), i, l) {
		const char *k = json_string_value(json_object_get(l, "key"));

		if (k && hex64(k))
			json_object_set_new(layers, k, json_true());
	}
}

/*
 * What the durable sandboxes of root use: each records at create the layers of its image
 * (spec `image_pin`, ts_oci_pin), running or stopped, whatever became of the name. Read
 * under the store's exclusive lock: a create holds it shared from its pin until its record
 * is in state.db, so none is missed.
 */
static int keep_pinned(const char *root, json_t *layers, json_t *blobs, struct ts_error *err)
{
	_cleanup_(ts_store_closep) struct ts_store *st = NULL;
	struct ts_sandbox_rec *recs = NULL;
	struct ts_snapshot *snaps = NULL;
	size_t n = 0;
	int r = ts_store_open(&st, root, err);

	if (r < 0 || (r = ts_store_list(st, &recs, &n, err)) < 0)
		return ts_err_prefix(err, r, "the sandboxes' images (nothing pruned)");
	for (size_t i = 0; i < n; i++) {
		json_t *spec = json_loads(recs[i].spec ? recs[i].spec : "{}", 0, NULL);

		keep_entry(json_object_get(spec, "image_pin"), layers, blobs);
		json_decref(spec);
	}
	ts_sandbox_recs_free(recs, n);
	/* a snapshot restores over the image its source had: its pin is kept as theirs */
	if ((r = ts_snapshot_list(st, &snaps, &n, err)) < 0)
		return ts_err_prefix(err, r, "the snapshots' images (nothing pruned)");
	for (size_t i = 0; i < n; i++) {
		json_t *spec = json_loads(snaps[i].spec, 0, NULL);

		keep_entry(json_object_get(spec, "image_pin"), layers, blobs);
		json_decref(spec);
	}
	ts_snapshots_free(snaps, n);
	return 0;
}

int ts_oci_prune(const char *root, uint64_t *freed, size_t *removed, struct ts_error *err)
{
	struct store s;
	json_t *idx = NULL, *e, *layers = json_object(), *blobs = json_object();
	const char *name;
	uint64_t rec_bytes = 0; /* the diff_id records: not counted */
	size_t recs = 0;
	int r = store_open(root, true, &s, err);

	*freed = 0;
	*removed = 0;
	if (r < 0 || (r = read_index(&s, &idx, err)) < 0 ||
	    (r = keep_pinned(root, layers, blobs, err)) < 0)
		goto out;
	json_object_foreach(json_object_get(idx, "images"), name, e)
		keep_entry(e, layers, blobs);
	if ((r = sweep(s.fd, "layers/sha256", layers, NULL, freed, removed)) < 0 ||
	    /* a record goes with its layer: one a pull holds stays, and so does its record */
	    (r = sweep(s.fd, "diffids", NULL, "layers/sha256", &rec_bytes, &recs)) < 0 ||
	    (r = sweep(s.fd, "blobs/sha256", blobs, NULL, freed, removed)) < 0 ||
	    (r = sweep(s.fd, "tmp", NULL, NULL, freed, removed)) < 0)
		r = ts_err_errno(err, r, "prune `%s`", s.dir);
out:
	json_decref(idx);
	json_decref(layers);
	json_decref(blobs);
	store_close(&s);
	return r;
}

/* The layer directories of the image entry e, top first, into lowers (max entries); with
 * hold, each also opened and flock'ed shared into hold[] (*n_hold of them). */
static int entry_lowers(struct store *s, const char *name, json_t *e, char (*lowers)[4096],
			size_t max, size_t *n, int *hold, size_t *n_hold, struct ts_error *err)
{
	json_t *ls = json_object_get(e, "layers");
	size_t count = json_array_size(ls);

	*n = 0;
	if (count == 0 || count > max)
		return ts_err(err, -E2BIG, "image `%s` has %zu layers (1 to %zu can be stacked)",
			      name, count, max);
	for (size_t i = 0; i < count; i++) {
		const char *k = json_string_value(json_object_get(json_array_get(ls, i), "key"));
		char *dst = lowers[count - 1 - i];
		int fd;

		if (!k || !hex64(k))
			return ts_err(err, -EBADMSG, "image `%s`: a damaged layer entry", name);
		if ((size_t)snprintf(dst, 4096, "%.3900s/layers/sha256/%s", s->dir, k) >= 4096)
			return ts_err(err, -ENAMETOOLONG, "image store path too long");
		fd = open(dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return ts_err_errno(err, -errno,
					    "image `%s`: layer `%s` (import the image again)", name,
					    dst);
		if (!hold) {
			close(fd);
			continue;
		}
		/* shared: any number of sandboxes, never under a prune (entry_busy) */
		if (flock(fd, LOCK_SH) < 0) {
			int r = ts_err_errno(err, -errno, "lock layer `%s`", dst);

			close(fd);
			return r;
		}
		hold[(*n_hold)++] = fd;
	}
	*n = count;
	return 0;
}

int ts_oci_lowers(const char *root, const char *name, char (*lowers)[4096], size_t max, size_t *n,
		  struct ts_error *err)
{
	struct store s;
	json_t *idx = NULL, *e;
	int r = store_open(root, false, &s, err);

	*n = 0;
	if (r == 0 && (r = lookup(&s, name, &idx, &e, err)) == 0)
		r = entry_lowers(&s, name, e, lowers, max, n, NULL, NULL, err);
	json_decref(idx);
	store_close(&s);
	return r;
}

#define MAX_PIN 16384 /* 14 layers of two digests each, a name */

int ts_oci_pin(const char *root, const char *name, char **ret, int *lock, struct ts_error *err)
{
	struct store s;
	json_t *idx = NULL, *e, *pin = NULL;
	char lowers[TS_OCI_MAX_LAYERS][4096];
	size_t n;
	int r = store_open_shared(root, &s, err);

	*ret = NULL;
	*lock = -EBADF;
	if (r < 0 || (r = lookup(&s, name, &idx, &e, err)) < 0)
		goto out;
	/* a pin of an image whose layers are all there */
	r = entry_lowers(&s, name, e, lowers, TS_OCI_MAX_LAYERS, &n, NULL, NULL, err);
	if (r < 0)
		goto out;
	pin = json_pack("{s:s,s:O,s:O,s:O}", "name", name, "digest", json_object_get(e, "digest"),
			"config", json_object_get(e, "config"), "layers",
			json_object_get(e, "layers"));
	*ret = pin ? json_dumps(pin, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (!*ret || strlen(*ret) >= MAX_PIN) {
		free(*ret);
		*ret = NULL;
		r = ts_err(err, -ENOMEM, "image `%s`: cannot record its layers", name);
		goto out;
	}
	*lock = TAKE_FD(s.lock);
out:
	json_decref(pin);
	json_decref(idx);
	store_close(&s);
	return r;
}

int ts_oci_use(const char *root, const char *name, const char *pin, struct ts_oci_use *u,
	       struct ts_error *err)
{
	struct store s;
	json_t *idx = NULL, *e = NULL, *pj = NULL;
	const char *shown = name;
	int r;

	u->n = u->env_used = u->n_hold = 0;
	r = store_open_shared(root, &s, err);
	if (r < 0)
		goto out;
	if (pin) {
		pj = strlen(pin) < MAX_PIN ? json_loads(pin, 0, NULL) : NULL;
		if (!json_is_object(pj) || !json_is_array(json_object_get(pj, "layers"))) {
			r = ts_err(err, -EBADMSG, "image `%s`: a damaged record of its layers",
				   name);
			goto out;
		}
		e = pj;
	} else if ((r = lookup(&s, name, &idx, &e, err)) < 0) {
		goto out;
	}
	r = entry_lowers(&s, shown, e, u->lowers, u->max, &u->n, u->hold, &u->n_hold, err);
	if (r == 0)
		r = entry_env(&s, shown, e, u->env, u->env_len, &u->env_used, err);
	if (r < 0)
		ts_oci_use_release(u);
out:
	json_decref(pj);
	json_decref(idx);
	store_close(&s);
	return r;
}

void ts_oci_use_release(struct ts_oci_use *u)
{
	for (size_t i = 0; i < u->n_hold; i++)
		close(u->hold[i]);
	u->n_hold = 0;
}
