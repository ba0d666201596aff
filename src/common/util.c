/* SPDX-License-Identifier: Apache-2.0 */
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"

int ts_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int ts_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int ts_write_file_at(int dirfd, const char *path, const char *content)
{
	_cleanup_close_ int fd = -EBADF;

	fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	return ts_write_all(fd, content, strlen(content));
}

int ts_read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	buf = malloc(max);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len + 1 >= max)
			return -EFBIG;
		n = read(fd, buf + len, max - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	*ret = TAKE_PTR(buf);
	return 0;
}

int ts_mkdir_p(int dirfd, const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdirat(dirfd, buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdirat(dirfd, buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * How many directory levels a removal holds open. A tree may be far deeper (a sandbox
 * makes one as deep as it likes): a directory at this depth is moved up, renamed into the
 * top of the tree being removed, and removed by a later pass from there. Every fd stays
 * inside that tree, the work stays linear in its size, and the fds in use stay bounded.
 */
#define RM_OPEN_LEVELS 16

struct rm_walk {
	int top; /* the directory being emptied */
	dev_t dev;
	unsigned long moved; /* directories moved up so far (their names) */
	bool again;	     /* something was moved up: the top needs another pass */
};

/* Move dfd/name (a directory too deep to enter) up into the top of the removal. */
static int rm_move_up(struct rm_walk *w, int dfd, const char *name)
{
	for (int tries = 0; tries < 1000; tries++) {
		char tmp[64];

		snprintf(tmp, sizeof(tmp), ".ts-rm-deep-%lu", w->moved++);
		/* musl has no renameat2() wrapper */
		if (syscall(SYS_renameat2, dfd, name, w->top, tmp, RENAME_NOREPLACE) == 0) {
			w->again = true;
			return 0;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* chmod 0700 the directory name of dfd, never a symlink swapped in for it: fchmodat(2)
 * follows symlinks, so the mode goes through an O_PATH fd of the directory itself. */
static int chmod_dir_nofollow(int dfd, const char *name)
{
	char proc[64];
	struct stat st;
	int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISDIR(st.st_mode))
		r = -ENOTDIR;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (r == 0 && chmod(proc, 0700) < 0)
		r = -errno;
	close(fd);
	if (r < 0)
		errno = -r;
	return r;
}

/* Empty the directory open as dfd (consumed) at depth levels below the top. */
static int rm_children(struct rm_walk *w, int dfd, int depth)
{
	DIR *d;
	struct dirent *de;
	int r = 0;

	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -errno;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT && !r)
				r = -errno;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			int sub, k;

			/* Never descend into another file system: a mount point inside means
			 * something is still mounted and removing through it is wrong. */
			if (st.st_dev != w->dev) {
				if (!r)
					r = -EBUSY;
				continue;
			}
			if (depth + 1 >= RM_OPEN_LEVELS) {
				k = rm_move_up(w, dirfd(d), de->d_name);
				if (k < 0 && !r)
					r = k;
				continue;
			}
			sub = openat(dirfd(d), de->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0) {
				/* A directory without x/r bits we own: make it removable. */
				if (errno == EACCES &&
				    chmod_dir_nofollow(dirfd(d), de->d_name) == 0)
					sub = openat(dirfd(d), de->d_name,
						     O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
							     O_CLOEXEC);
				if (sub < 0) {
					if (!r)
						r = -errno;
					continue;
				}
			}
			k = rm_children(w, sub, depth + 1);
			if (k < 0 && !r)
				r = k;
			if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0 && errno != ENOENT &&
			    !r)
				r = -errno;
		} else if (unlinkat(dirfd(d), de->d_name, 0) < 0 && errno != ENOENT && !r) {
			r = -errno;
		}
	}
	closedir(d);
	return r;
}

int ts_rm_rf_at(int dirfd, const char *name)
{
	struct rm_walk w = { .top = -EBADF };
	struct stat st;
	int r;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dirfd, name, 0) < 0 ? -errno : 0;
	w.top = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (w.top < 0)
		return -errno;
	w.dev = st.st_dev;
	/* each pass removes what it reaches and moves up what lies deeper */
	do {
		int fd = fcntl(w.top, F_DUPFD_CLOEXEC, 3);

		w.again = false;
		r = fd < 0 ? -errno : rm_children(&w, fd, 0);
		if (fd >= 0)
			lseek(w.top, 0, SEEK_SET);
	} while (r == 0 && w.again);
	close(w.top);
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && !r)
		r = -errno;
	return r;
}

int ts_parse_ull(const char *s, unsigned long long *ret)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return errno == ERANGE ? -EOVERFLOW : -errno;
	if (*end)
		return -EINVAL;
	*ret = v;
	return 0;
}

int ts_parse_size(const char *s, unsigned long long *ret)
{
	char *end;
	unsigned long long v, mul = 1;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return errno == ERANGE ? -EOVERFLOW : -errno;
	if (end == s)
		return -EINVAL;
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		mul = 1ULL << 10;
		end++;
		break;
	case 'm':
	case 'M':
		mul = 1ULL << 20;
		end++;
		break;
	case 'g':
	case 'G':
		mul = 1ULL << 30;
		end++;
		break;
	case 't':
	case 'T':
		mul = 1ULL << 40;
		end++;
		break;
	default:
		return -EINVAL;
	}
	if (*end == 'i' && mul > 1)
		end++;
	if ((*end == 'b' || *end == 'B') && mul > 1)
		end++;
	if (*end)
		return -EINVAL;
	if (v > ULLONG_MAX / mul)
		return -EOVERFLOW;
	*ret = v * mul;
	return 0;
}

int ts_parse_duration_ms(const char *s, unsigned long long *ret)
{
	char *end;
	double v, mul = 1000.0;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v != v)
		return -EINVAL;
	if (!strcmp(end, "") || !strcmp(end, "s"))
		mul = 1000.0;
	else if (!strcmp(end, "ms"))
		mul = 1.0;
	else if (!strcmp(end, "m"))
		mul = 60000.0;
	else if (!strcmp(end, "h"))
		mul = 3600000.0;
	else if (!strcmp(end, "d"))
		mul = 86400000.0;
	else
		return -EINVAL;
	if (v < 0)
		return -ERANGE;
	if (v * mul > 1e15)
		return -EOVERFLOW;
	/* a positive duration never becomes 0 ms (0 often means "none") */
	if (v > 0 && v * mul < 1.0)
		return -ERANGE;
	*ret = (unsigned long long)(v * mul);
	return 0;
}

bool ts_env_name_valid(const char *s)
{
	size_t n = 0;

	if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
		return false;
	for (; s[n]; n++)
		if (!((s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= 'a' && s[n] <= 'z') ||
		      (s[n] >= '0' && s[n] <= '9') || s[n] == '_') ||
		    n >= 255)
			return false;
	return true;
}

int ts_stdio_fd_safe(int fd)
{
	struct stat st;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fstat(fd, &st) < 0)
		return -EBADF;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (fl & O_PATH)
		return -EBADF;
	return 0;
}

bool ts_startswith(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

int ts_self_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n < 0)
		return -errno;
	if ((size_t)n >= len - 1)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		return -EINVAL;
	*slash = '\0';
	return 0;
}

int ts_self_cgroup(const char *controller, char *buf, size_t len)
{
	_cleanup_free_ char *data = NULL;
	char *save = NULL;
	int r = ts_read_file_at(AT_FDCWD, "/proc/self/cgroup", 65536, &data, NULL);

	if (r < 0)
		return r;
	/* lines are "ID:CONTROLLERS:PATH"; CONTROLLERS is comma separated ("cpu,cpuacct")
	 * and empty on the v2 line */
	for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2, *s2 = NULL;
		bool found = false;

		if (!c1 || !(c2 = strchr(c1 + 1, ':')))
			continue;
		*c2 = '\0';
		if (!controller[0])
			found = c1[1] == '\0';
		else
			for (char *t = strtok_r(c1 + 1, ",", &s2); t && !found;
			     t = strtok_r(NULL, ",", &s2))
				found = !strcmp(t, controller);
		if (found)
			return (size_t)snprintf(buf, len, "%s", c2 + 1) >= len ? -ENAMETOOLONG : 0;
	}
	return -ENOENT;
}

unsigned long long ts_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000ULL +
	       (unsigned long long)ts.tv_nsec / 1000000ULL;
}

long long ts_realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

void ts_signals_reset(void)
{
	sigset_t none;

	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL); /* EINVAL for the ones libc reserves: fine */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

size_t ts_utf8_decode(const char *s, size_t len, uint32_t *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;
	uint32_t c;

	if (len == 0)
		return 0;
	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
		c = p[0] & 0x1f;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		c = p[0] & 0x0f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		c = p[0] & 0x07;
	} else {
		return 0; /* a continuation byte, an overlong lead (C0, C1) or past U+10FFFF */
	}
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (p[i] & 0x3f);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0; /* overlong, out of range, or a surrogate */
	*cp = c;
	return n;
}

size_t ts_utf8_seq(const char *s, size_t len)
{
	uint32_t cp;

	return ts_utf8_decode(s, len, &cp);
}

/*
 * Code points that change how the text around them is shown without being seen
 * themselves: bidirectional embeddings, overrides and isolates (U+202A..U+202E,
 * U+2066..U+2069; a right-to-left override makes `txt.exe` show as `exe.txt`), direction
 * marks, zero-width characters, the line and paragraph separators, and the BOM.
 */
static bool invisible(uint32_t cp)
{
	return (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) ||
	       (cp >= 0x2060 && cp <= 0x2069) || cp == 0x061c || cp == 0xfeff;
}

void ts_sanitize_text(char *s)
{
	char *p = s, *end = s + strlen(s);

	while (p < end) {
		uint32_t cp;
		size_t n = ts_utf8_decode(p, (size_t)(end - p), &cp);

		if (n == 0) {
			*p++ = '?';
			continue;
		}
		if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || invisible(cp))
			memset(p, '?', n);
		p += n;
	}
}

mode_t ts_umask(void)
{
	_cleanup_free_ char *status = NULL;
	const char *line;
	unsigned long m;
	char *end;

	if (ts_read_file_at(AT_FDCWD, "/proc/self/status", 65536, &status, NULL) < 0 ||
	    !(line = strstr(status, "\nUmask:")))
		return 022;
	m = strtoul(line + 7, &end, 8);
	return end == line + 7 || m > 0777 ? 022 : (mode_t)m;
}

bool ts_json_depth_ok(const char *p, size_t n, unsigned limit)
{
	unsigned depth = 0;
	bool in_str = false;

	for (size_t i = 0; i < n; i++) {
		if (in_str) {
			if (p[i] == '\\')
				i++;
			else if (p[i] == '"')
				in_str = false;
		} else if (p[i] == '"') {
			in_str = true;
		} else if (p[i] == '{' || p[i] == '[') {
			if (++depth > limit)
				return false;
		} else if ((p[i] == '}' || p[i] == ']') && depth) {
			depth--;
		}
	}
	return true;
}
