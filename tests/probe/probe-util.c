// SPDX-License-Identifier: Apache-2.0
/* Result recording, the errno oracle, and small /proc helpers shared by the cases. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

__attribute__((format(printf, 3, 0))) static void
res_vappend(struct probe_res *r, const char *prefix, const char *fmt, va_list ap)
{
	if (r->len + 8 >= sizeof(r->detail))
		return;
	int n = snprintf(r->detail + r->len, sizeof(r->detail) - r->len, "%s%s", r->len ? " " : "",
			 prefix);
	if (n > 0)
		r->len += (size_t)n;
	if (r->len >= sizeof(r->detail)) {
		r->len = sizeof(r->detail) - 1;
		return;
	}
	n = vsnprintf(r->detail + r->len, sizeof(r->detail) - r->len, fmt, ap);
	if (n > 0)
		r->len += (size_t)n;
	if (r->len >= sizeof(r->detail))
		r->len = sizeof(r->detail) - 1;
}

void res_note(struct probe_res *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	res_vappend(r, "", fmt, ap);
	va_end(ap);
}

void res_fail(struct probe_res *r, const char *fmt, ...)
{
	va_list ap;
	r->failed = true;
	va_start(ap, fmt);
	res_vappend(r, "!", fmt, ap);
	va_end(ap);
}

void res_skip(struct probe_res *r, const char *fmt, ...)
{
	va_list ap;
	r->skipped = true;
	va_start(ap, fmt);
	res_vappend(r, "skip: ", fmt, ap);
	va_end(ap);
}

const char *en(int e)
{
	if (e == 0)
		return "OK";
	const char *s = strerrorname_np(e);
	return s ? s : "E?";
}

bool errno_in(int e, const int *errs)
{
	for (; *errs; errs++)
		if (*errs == e)
			return true;
	return false;
}

static void errs_str(const int *errs, char *out, size_t size)
{
	size_t len = 0;
	out[0] = '\0';
	for (; *errs && len + 1 < size; errs++) {
		int n = snprintf(out + len, size - len, "%s%s", len ? "|" : "", en(*errs));
		if (n < 0)
			break;
		len += (size_t)n;
	}
}

bool expect_err(struct probe_res *r, const char *what, long ret, int err, const int *errs)
{
	char want[96];
	if (ret == -1 && errno_in(err, errs)) {
		res_note(r, "%s=%s", what, en(err));
		return true;
	}
	errs_str(errs, want, sizeof(want));
	if (ret == -1)
		res_fail(r, "%s=%s(want %s)", what, en(err), want);
	else
		res_fail(r, "%s=succeeded(%ld, want %s)", what, ret, want);
	return false;
}

bool control_err(struct probe_res *r, const char *what, long ret, int err, const int *errs)
{
	char want[96];
	if (ret == -1 && errno_in(err, errs)) {
		res_note(r, "ctl:%s=%s", what, en(err));
		return true;
	}
	errs_str(errs, want, sizeof(want));
	if (ret == -1)
		res_fail(r, "ctl:%s=%s(want %s: the probe cannot tell allowed from filtered)", what,
			 en(err), want);
	else
		res_fail(r, "ctl:%s=succeeded(%ld, want %s)", what, ret, want);
	return false;
}

bool control_ok(struct probe_res *r, const char *what, long ret, int err)
{
	if (ret >= 0) {
		res_note(r, "ctl:%s=OK", what);
		return true;
	}
	res_fail(r, "ctl:%s=%s(want success)", what, en(err));
	return false;
}

ssize_t read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	size_t len = 0;
	while (len + 1 < size) {
		ssize_t n = read(fd, buf + len, size - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(fd);
	return (ssize_t)len;
}

int proc_status(pid_t pid, const char *field, char *out, size_t size)
{
	char path[64], buf[8192];
	if (pid == 0)
		snprintf(path, sizeof(path), "/proc/self/status");
	else if (pid == -1)
		snprintf(path, sizeof(path), "/proc/thread-self/status");
	else
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	ssize_t n = read_file(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	size_t flen = strlen(field);
	for (char *line = buf; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (strncmp(line, field, flen) == 0 && line[flen] == ':') {
			const char *v = line + flen + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			snprintf(out, size, "%s", v);
			return 0;
		}
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

size_t proc_pids(pid_t *pids, size_t max)
{
	DIR *d = opendir("/proc");
	size_t n = 0;
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		long v = strtol(de->d_name, &end, 10);
		if (*end || v <= 0)
			continue;
		if (n < max)
			pids[n] = (pid_t)v;
		n++;
	}
	closedir(d);
	return n;
}

/* SHA-256 (FIPS 180-4), small and self-contained: the probe is static and links nothing. */
struct sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t fill;
};

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(struct sha256 *s, const uint8_t *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, h;
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
	e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) +
			      K[i] + w[i];
		uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
	}
	s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
	s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

static void sha256_init(struct sha256 *s)
{
	static const uint32_t iv[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	memcpy(s->h, iv, sizeof(iv));
	s->len = 0;
	s->fill = 0;
}

static void sha256_update(struct sha256 *s, const void *data, size_t len)
{
	const uint8_t *p = data;
	s->len += len;
	while (len) {
		size_t n = 64 - s->fill < len ? 64 - s->fill : len;
		memcpy(s->buf + s->fill, p, n);
		s->fill += n, p += n, len -= n;
		if (s->fill == 64) {
			sha256_block(s, s->buf);
			s->fill = 0;
		}
	}
}

static void sha256_final(struct sha256 *s, char hex[65])
{
	uint64_t bits = s->len * 8;
	uint8_t pad = 0x80, zero = 0, lenbuf[8];
	sha256_update(s, &pad, 1);
	while (s->fill != 56)
		sha256_update(s, &zero, 1);
	for (int i = 0; i < 8; i++)
		lenbuf[i] = (uint8_t)(bits >> (56 - 8 * i));
	sha256_update(s, lenbuf, 8);
	for (int i = 0; i < 8; i++)
		snprintf(hex + 8 * i, 9, "%08x", s->h[i]);
}

void sha256_buf(const void *data, size_t len, char hex[65])
{
	struct sha256 s;
	sha256_init(&s);
	sha256_update(&s, data, len);
	sha256_final(&s, hex);
}

int sha256_file(const char *path, char hex[65])
{
	struct sha256 s;
	char buf[16384];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	sha256_init(&s);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		sha256_update(&s, buf, (size_t)n);
	}
	close(fd);
	sha256_final(&s, hex);
	return 0;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *o = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] && s[3]) {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

bool is_mount_point(const char *abs_path, char *opts, size_t opts_size)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	bool found = false;
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *save = NULL, *tok, *mp = NULL, *o = NULL;
		int i = 0;
		for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save), i++) {
			if (i == 4)
				mp = tok;
			if (i == 5) {
				o = tok;
				break;
			}
		}
		if (!mp || !o)
			continue;
		unescape(mp);
		if (strcmp(mp, abs_path) == 0) {
			found = true;
			if (opts)
				snprintf(opts, opts_size, "%s", o);
		}
	}
	fclose(f);
	return found;
}

int run_child(int (*fn)(void *), void *arg, int timeout_s)
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(fn(arg) & 0xff);
	struct timespec t0, now, nap = { 0, 5 * 1000 * 1000 };
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int st;
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			return st;
		if (w < 0 && errno != EINTR)
			return -errno;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec >= timeout_s) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -ETIMEDOUT;
		}
		nanosleep(&nap, NULL);
	}
}

void fd_link(int fd, char *out, size_t size)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(path, out, size - 1);
	if (n < 0)
		snprintf(out, size, "?%s", en(errno));
	else
		out[n] = '\0';
}
