/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gzip probe (src/lib/gunzip.h) on what a pull unpacks from: a file (read where it
 * stands, its position untouched) and the socket a layer streams through
 * (src/lib/oci-stream.h), peeked at without taking the bytes: the magic split over two
 * writes, a stream that ends after one byte (no hang), one that is not gzip; then ISA-L
 * decompresses the socket's stream from its first byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gunzip.h"
#include "tap.h"

/* gzip of "hello, streamed layer\n" */
static const unsigned char gz[] = { 0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,
				    0x03, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0xd7, 0x51, 0x28,
				    0x2e, 0x29, 0x4a, 0x4d, 0xcc, 0x4d, 0x4d, 0x51, 0xc8,
				    0x49, 0xac, 0x4c, 0x2d, 0xe2, 0x02, 0x00, 0x92, 0x8d,
				    0x75, 0xbf, 0x16, 0x00, 0x00, 0x00 };
static const char plain[] = "hello, streamed layer\n";

struct writer {
	int fd;
	const unsigned char *data;
	size_t len, first; /* first bytes written, then the rest 50 ms later */
	bool close_after_first;
};

static void *write_split(void *arg)
{
	struct writer *w = arg;

	(void)!write(w->fd, w->data, w->first);
	usleep(50000);
	if (!w->close_after_first)
		(void)!write(w->fd, w->data + w->first, w->len - w->first);
	close(w->fd);
	return NULL;
}

/* is_gzip on a socket fed by a writer thread; the read end in *rfd (for more reading) */
static bool probe_socket(const unsigned char *data, size_t len, size_t first, bool cut, int *rfd)
{
	int sv[2];
	pthread_t t;
	struct writer w = { .data = data, .len = len, .first = first, .close_after_first = cut };
	bool r;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return false;
	w.fd = sv[1];
	pthread_create(&t, NULL, write_split, &w);
	r = ts_gunzip_is_gzip(sv[0]);
	pthread_join(t, NULL);
	if (rfd)
		*rfd = sv[0];
	else
		close(sv[0]);
	return r;
}

int main(void)
{
	char path[] = "/tmp/test-gunzip-XXXXXX", buf[64];
	int fd = mkstemp(path), rfd = -1;
	struct ts_gunzip *g = NULL;
	struct ts_error err = { 0 };
	ssize_t n;
	int r;

	plan(0);
	if (fd < 0 || write(fd, gz, sizeof(gz)) != (ssize_t)sizeof(gz))
		return 1;
	unlink(path);
	lseek(fd, 0, SEEK_SET);
	ok(ts_gunzip_is_gzip(fd) && lseek(fd, 0, SEEK_CUR) == 0,
	   "a gzip file: seen, its position untouched");
	close(fd);

	ok(probe_socket(gz, sizeof(gz), 1, false, &rfd),
	   "a socket whose magic comes in two writes: seen as gzip");
	r = ts_gunzip_open(rfd, &g, &err);
	if (r == -ENOPKG) {
		skip(1, "no libisal.so.2");
	} else {
		n = r < 0 ? -1 : ts_gunzip_read(g, buf, sizeof(buf), &err);
		ok(n == (ssize_t)strlen(plain) && !memcmp(buf, plain, strlen(plain)),
		   "and the peek took nothing: ISA-L decompresses it whole from the socket");
		if (n < 0)
			diag("%s", err.msg);
	}
	ts_gunzip_free(g);
	close(rfd);
	ok(!probe_socket(gz, sizeof(gz), 1, true, NULL),
	   "a socket that ends after one byte: not gzip, no hang");
	ok(!probe_socket((const unsigned char *)"ustar...", 8, 8, false, NULL),
	   "a socket of something else: not gzip");
	return done();
}
