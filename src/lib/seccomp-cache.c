/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cache of compiled seccomp programs: $ROOT/cache/seccomp/<sha256>.bpf named by the
 * content key, s-<hex> symlinks named by stat data for the fast path (seccomp-cache.h).
 * Compiling is seccomp-compile.c's.
 */
#include "seccomp-cache.h"
#include "seccomp-compile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <nettle/sha2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cleanup.h"
#include "util.h"

/* The content key: SHA-256 over what the compiler's output depends on and the profile. */
static int cache_key(const char *buf, size_t len, unsigned flags,
		     char hex[2 * SHA256_DIGEST_SIZE + 1], struct ts_error *err)
{
	uint8_t digest[SHA256_DIGEST_SIZE];
	struct sha256_ctx h;
	uint64_t n = len;
	int r;

	sha256_init(&h);
	r = ts_seccomp_compile_fingerprint(&h, flags, err);
	if (r < 0)
		return r;
	sha256_update(&h, sizeof(n), (const uint8_t *)&n);
	sha256_update(&h, len, (const uint8_t *)buf);
	sha256_digest(&h, sizeof(digest), digest);
	for (size_t i = 0; i < sizeof(digest); i++)
		snprintf(hex + 2 * i, 3, "%02x", digest[i]);
	return 0;
}

/*
 * The cache feeds the helper a filter to load, so whoever can write the directory decides
 * the sandbox's syscall policy: it must be ours and closed to others.
 */
static int open_cache_dir(const char *cache_dir, char *abs, size_t abs_len, int *ret_fd,
			  struct ts_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	char real[PATH_MAX];
	struct stat st;
	int r;

	r = ts_mkdir_p(AT_FDCWD, cache_dir, 0700);
	if (r < 0)
		return ts_err_errno(err, r, "create seccomp cache directory `%s`", cache_dir);
	fd = open(cache_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return ts_err_errno(err, -errno, "open seccomp cache directory `%s`", cache_dir);
	if (fstat(fd, &st) < 0)
		return ts_err_errno(err, -errno, "stat seccomp cache directory `%s`", cache_dir);
	if (st.st_uid != geteuid() || (st.st_mode & 022))
		return ts_err(err, -EPERM,
			      "seccomp cache directory `%s` is not owned by uid %u or is "
			      "writable by others",
			      cache_dir, (unsigned int)geteuid());
	if (!realpath(cache_dir, real))
		return ts_err_errno(err, -errno, "resolve seccomp cache directory `%s`", cache_dir);
	if (strlen(real) >= abs_len)
		return ts_err(err, -ENAMETOOLONG, "seccomp cache directory `%s`: path too long",
			      cache_dir);
	strcpy(abs, real);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/*
 * "s-<hex>": FNV-1a over the profile's and our executable's identity (device, inode,
 * size, mtime, ctime). Any change to either gives another name, so a stale link is
 * never followed to an old program.
 */
static int stat_key(const char *profile_path, unsigned flags, char *buf, size_t len)
{
	struct stat a, b;
	unsigned long long h = 1469598103934665603ULL, v[13];

	if (stat(profile_path, &a) < 0 || stat("/proc/self/exe", &b) < 0)
		return -errno;
	v[0] = a.st_dev;
	v[1] = a.st_ino;
	v[2] = (unsigned long long)a.st_size;
	v[3] = (unsigned long long)a.st_mtim.tv_sec;
	v[4] = (unsigned long long)a.st_mtim.tv_nsec;
	v[5] = (unsigned long long)a.st_ctim.tv_nsec;
	v[6] = b.st_dev;
	v[7] = b.st_ino;
	v[8] = (unsigned long long)b.st_size;
	v[9] = (unsigned long long)b.st_mtim.tv_sec;
	v[10] = (unsigned long long)b.st_mtim.tv_nsec;
	v[11] = (unsigned long long)a.st_ctim.tv_sec;
	v[12] = flags;
	for (size_t i = 0; i < 13; i++)
		for (int k = 0; k < 8; k++) {
			h ^= (v[i] >> (8 * k)) & 0xff;
			h *= 1099511628211ULL;
		}
	/* the kernel release too, as in the content key (minKernel rules) */
	{
		struct utsname u;

		if (uname(&u) == 0)
			for (const char *c = u.release; *c; c++) {
				h ^= (unsigned char)*c;
				h *= 1099511628211ULL;
			}
	}
	snprintf(buf, len, "s-%016llx", h);
	return 0;
}

/* Point the stat key at the content-named program (atomically; best effort). */
static void link_stat_key(int dfd, const char *skey, const char *target)
{
	char tmp[160];

	if (!skey[0])
		return;
	snprintf(tmp, sizeof(tmp), ".%s.%d", skey, (int)getpid());
	unlinkat(dfd, tmp, 0);
	if (symlinkat(target, dfd, tmp) == 0 && renameat(dfd, tmp, dfd, skey) < 0)
		unlinkat(dfd, tmp, 0);
}

int ts_seccomp_compile_cached(const char *profile_path, unsigned flags, const char *cache_dir,
			      char *ret_path, size_t ret_path_len, struct ts_error *err)
{
	_cleanup_free_ char *buf = NULL, *prog = NULL;
	_cleanup_close_ int dfd = -EBADF, fd = -EBADF;
	char hex[2 * SHA256_DIGEST_SIZE + 1], dir[PATH_MAX], name[2 * SHA256_DIGEST_SIZE + 8];
	char path[PATH_MAX], tmp[PATH_MAX], skey[128] = "";
	struct stat st;
	size_t len, prog_len;
	int r;

	r = open_cache_dir(cache_dir, dir, sizeof(dir), &dfd, err);
	if (r < 0)
		return r;
	/* Fast path, on every sandbox start: the content key costs a read, a SHA-256 and a
	 * libseccomp probe; the same profile file, unchanged, with the same executable (our
	 * libseccomp is linked in) maps to it through a symlink named by stat data. */
	if (stat_key(profile_path, flags, skey, sizeof(skey)) == 0) {
		char target[2 * SHA256_DIGEST_SIZE + 8];
		ssize_t n = readlinkat(dfd, skey, target, sizeof(target) - 1);

		if (n > 4 && !strchr((target[n] = '\0', target), '/') &&
		    fstatat(dfd, target, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
		    st.st_size > 0 && st.st_size % (off_t)sizeof(struct sock_filter) == 0 &&
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, target) < sizeof(path) &&
		    strlen(path) < ret_path_len) {
			strcpy(ret_path, path);
			return 0;
		}
	}
	r = ts_seccomp_read_profile(profile_path, &buf, &len, err);
	if (r < 0)
		return r;
	r = cache_key(buf, len, flags, hex, err);
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "%s.bpf", hex);
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, hex) >= sizeof(tmp) ||
	    strlen(path) >= ret_path_len)
		return ts_err(err, -ENAMETOOLONG, "seccomp cache path in `%s` is too long",
			      cache_dir);

	/* A torn or foreign file (not whole instructions) is rebuilt, never loaded. */
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size > 0 && st.st_size % (off_t)sizeof(struct sock_filter) == 0) {
		link_stat_key(dfd, skey, name);
		strcpy(ret_path, path);
		return 0;
	}

	r = ts_seccomp_compile_buf(profile_path, buf, len, flags, &prog, &prog_len, err);
	if (r < 0)
		return r;

	/* Same-directory temp file, fsync, rename, fsync the directory: all or nothing. */
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return ts_err_errno(err, -errno, "create a temporary file in `%s`", dir);
	r = ts_write_all(fd, prog, prog_len);
	if (r < 0)
		r = ts_err_errno(err, r, "write the seccomp filter");
	if (r >= 0 && fchmod(fd, 0644) < 0)
		r = ts_err_errno(err, -errno, "chmod `%s`", tmp);
	if (r >= 0 && fsync(fd) < 0)
		r = ts_err_errno(err, -errno, "fsync `%s`", tmp);
	if (r >= 0 && rename(tmp, path) < 0)
		r = ts_err_errno(err, -errno, "rename `%s` to `%s`", tmp, path);
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	if (fsync(dfd) < 0)
		return ts_err_errno(err, -errno, "fsync `%s`", dir);
	link_stat_key(dfd, skey, name);
	strcpy(ret_path, path);
	return 0;
}
