/* SPDX-License-Identifier: Apache-2.0 */
#include "gunzip.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef TS_NO_ISAL
/* built without libisal-dev: every gzip layer goes through libarchive */
bool ts_gunzip_is_gzip(int fd)
{
	(void)fd;
	return false;
}

int ts_gunzip_open(int fd, struct ts_gunzip **ret, struct ts_error *err)
{
	(void)fd;
	*ret = NULL;
	return ts_err(err, -ENOPKG, "built without ISA-L (libisal-dev)");
}

ssize_t ts_gunzip_read(struct ts_gunzip *g, void *buf, size_t len, struct ts_error *err)
{
	(void)g;
	(void)buf;
	(void)len;
	return ts_err(err, -ENOPKG, "built without ISA-L (libisal-dev)");
}

void ts_gunzip_free(struct ts_gunzip *g)
{
	(void)g;
}
#else
#include <isa-l/igzip_lib.h>
#include <poll.h>
#include <sys/socket.h>

#define ISAL_SONAME "libisal.so.2"
/* the compressed input read at a time: large enough that read(2) is a small part */
#define IN_BUF (256 * 1024)

struct ts_gunzip {
	void *dl;
	__typeof__(isal_inflate_init) *init;
	__typeof__(isal_inflate) *inflate;
	int fd;
	bool eof_in; /* read(2) said end of file */
	bool done;   /* the stream ended (0 from now on) */
	uint8_t *in; /* IN_BUF bytes; st.next_in/avail_in point into it */
	struct inflate_state st;
};

/* The first two bytes of the stream socket fd, peeked (left for the reader): 2, or fewer
 * when it ends before them. A peek returns what has come so far, never waiting for more,
 * so one byte alone (curl's writes are larger: rare) is waited on a millisecond at a time
 * until the second comes or the writer is gone (POLLRDHUP). */
static ssize_t peek2(int fd, uint8_t *m)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };
		ssize_t n = recv(fd, m, 2, MSG_PEEK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n != 1)
			return n;
		if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			return 1;
		poll(NULL, 0, 1);
	}
}

bool ts_gunzip_is_gzip(int fd)
{
	uint8_t m[2];
	off_t at = lseek(fd, 0, SEEK_CUR);

	if (at < 0 && errno == ESPIPE)
		return peek2(fd, m) == 2 && m[0] == 0x1f && m[1] == 0x8b;
	return at >= 0 && pread(fd, m, sizeof(m), at) == 2 && m[0] == 0x1f && m[1] == 0x8b;
}

void ts_gunzip_free(struct ts_gunzip *g)
{
	if (!g)
		return;
	if (g->dl)
		dlclose(g->dl);
	free(g->in);
	free(g);
}

static void start_member(struct ts_gunzip *g)
{
	uint8_t *next = g->st.next_in;
	uint32_t avail = g->st.avail_in;

	g->init(&g->st);
	/* the gzip header parsed, the trailer's CRC-32 and length checked by isal_inflate */
	g->st.crc_flag = ISAL_GZIP;
	g->st.next_in = next;
	g->st.avail_in = avail;
}

int ts_gunzip_open(int fd, struct ts_gunzip **ret, struct ts_error *err)
{
	struct ts_gunzip *g = calloc(1, sizeof(*g));

	if (!g)
		return ts_err(err, -ENOMEM, "out of memory");
	g->fd = fd;
	g->in = malloc(IN_BUF);
	if (!g->in) {
		ts_gunzip_free(g);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	g->dl = dlopen(ISAL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!g->dl) {
		const char *e = dlerror();

		ts_gunzip_free(g);
		return ts_err(err, -ENOPKG, "cannot load `%s` (install libisal2): %s", ISAL_SONAME,
			      e ? e : "not found");
	}
	*(void **)&g->init = dlsym(g->dl, "isal_inflate_init");
	*(void **)&g->inflate = dlsym(g->dl, "isal_inflate");
	if (!g->init || !g->inflate) {
		ts_gunzip_free(g);
		return ts_err(err, -ENOPKG, "`%s` has no isal_inflate", ISAL_SONAME);
	}
	g->st.next_in = g->in;
	g->st.avail_in = 0;
	start_member(g);
	*ret = g;
	return 0;
}

/* Move what is left of the input to the buffer's start and read more after it. */
static int refill(struct ts_gunzip *g, struct ts_error *err)
{
	size_t have = g->st.avail_in;
	ssize_t n;

	if (have && g->st.next_in != g->in)
		memmove(g->in, g->st.next_in, have);
	g->st.next_in = g->in;
	do
		n = read(g->fd, g->in + have, IN_BUF - have);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return ts_err_errno(err, -errno, "read the compressed layer");
	if (n == 0)
		g->eof_in = true;
	g->st.avail_in = (uint32_t)(have + (size_t)n);
	return 0;
}

static const char *isal_strerror(int r)
{
	switch (r) {
	case ISAL_INVALID_BLOCK:
		return "an invalid deflate block";
	case ISAL_INVALID_SYMBOL:
		return "an invalid deflate symbol";
	case ISAL_INVALID_LOOKBACK:
		return "a distance beyond the start of the data";
	case ISAL_INVALID_WRAPPER:
		return "a damaged gzip header";
	case ISAL_UNSUPPORTED_METHOD:
		return "a gzip member not compressed with deflate";
	case ISAL_INCORRECT_CHECKSUM:
		return "its CRC-32 or length does not match the data";
	default:
		return "a gzip header field too long or a preset dictionary";
	}
}

ssize_t ts_gunzip_read(struct ts_gunzip *g, void *buf, size_t len, struct ts_error *err)
{
	size_t produced;
	int r;

	if (g->done || len == 0)
		return 0;
	if (len > UINT32_MAX)
		len = UINT32_MAX;
	g->st.next_out = buf;
	g->st.avail_out = (uint32_t)len;
	for (;;) {
		uint32_t in_before = g->st.avail_in, out_before = g->st.avail_out;

		produced = len - g->st.avail_out;
		if (g->st.block_state == ISAL_BLOCK_FINISH) {
			if (produced)
				return (ssize_t)produced;
			/* another member follows only when it starts with the magic */
			while (g->st.avail_in < 2 && !g->eof_in)
				if ((r = refill(g, err)) < 0)
					return r;
			if (g->st.avail_in < 2 || g->st.next_in[0] != 0x1f ||
			    g->st.next_in[1] != 0x8b) {
				g->done = true;
				return 0;
			}
			start_member(g);
			g->st.next_out = buf;
			g->st.avail_out = (uint32_t)len;
			continue;
		}
		if (g->st.avail_in == 0 && !g->eof_in && (r = refill(g, err)) < 0)
			return r;
		r = g->inflate(&g->st);
		if (r < 0 || (r != ISAL_DECOMP_OK && r != ISAL_END_INPUT && r != ISAL_OUT_OVERFLOW))
			return ts_err(err, -EIO, "decompress layer: %s", isal_strerror(r));
		produced = len - g->st.avail_out;
		if (g->st.block_state == ISAL_BLOCK_FINISH)
			continue;
		if (g->st.avail_out == 0)
			return (ssize_t)produced;
		if (g->st.avail_in == 0 && g->eof_in) {
			if (produced)
				return (ssize_t)produced;
			return ts_err(err, -EIO, "decompress layer: the gzip stream is cut short");
		}
		if (g->st.avail_in == in_before && g->st.avail_out == out_before &&
		    g->st.avail_in > 0)
			return ts_err(err, -EIO,
				      "decompress layer: no progress in the gzip stream");
	}
}
#endif
