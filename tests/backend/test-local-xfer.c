/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The local backend's transfers (src/backend/local-files.c) without a sandbox: the
 * client end of a socketpair as the file connection, and on the other end either a peer
 * driven here step by step (the wake-ups, deterministic) or the real file worker
 * (runtime/files.c) forked on a temporary root, under ts_file_write and ts_file_read of
 * large files (sizes a race shows on: 1, 3, 8 and 16 MiB, repeatedly). TAP.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../runtime/files.h"
#include "backend.h"
#include "cleanup.h"
#include "ctl.h"
#include "ctlclient.h"
#include "local.h"
#include "tap.h"
#include "util.h"

#define MIB (1024U * 1024U)
#define PIECE 65536U /* what ts_file_write pushes at a time */
#define WAIT_MS 2000 /* a transfer silent this long here has lost its wake-up */
#define REPEATS 4    /* of each size through the worker */

static char tmp[64], root[96];

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 7 + i / PIECE);
}

static uint8_t *gen(size_t len)
{
	uint8_t *d = malloc(len ? len : 1);

	for (size_t i = 0; d && i < len; i++)
		d[i] = pattern(i);
	return d;
}

/* A file connection's client on fd, as ts_ctl_client_connect leaves it. */
static struct ts_ctl_client *client_on(int fd)
{
	struct ts_ctl_client *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->fd = fd;
	fcntl(fd, F_SETFL, O_NONBLOCK);
	ts_ctl_conn_init(&c->rx);
	return c;
}

/* --- a peer driven here ------------------------------------------------------------ */

struct peer {
	int fd;
	struct ts_ctl_conn rx;
	bool request, ended, bad;
	uint64_t got; /* file bytes, checked in order */
};

/* Read all the client sent so far (never blocks); at END, answer OK. */
static void peer_drain(struct peer *p)
{
	for (;;) {
		struct ts_ctl_msg m = { 0 };
		uint64_t op = 0, off = ~0ULL;
		const uint8_t *v;
		uint32_t vlen = 0;
		uint16_t tag;
		size_t pos = 0;
		struct pollfd pf = { .fd = p->fd, .events = POLLIN };
		int r;

		/* 0 from a read is a part of a message as well as nothing: ask poll */
		if (poll(&pf, 1, 0) != 1)
			return;
		r = ts_ctl_conn_read(&p->rx, p->fd, &m);
		if (r == 0)
			continue;
		if (r < 0) {
			p->bad = true;
			return;
		}
		if (!p->request) {
			p->request = m.type == TS_CTL_FILE &&
				     ts_ctl_get_u64(&m, TS_T_OP, &op) == 0 && op == TS_FILE_WRITE;
			p->bad |= !p->request;
		} else if (m.type == TS_CTL_FILE_DATA) {
			while (ts_ctl_next(&m, &pos, &tag, &v, &vlen) > 0 && tag != TS_T_DATA)
				vlen = 0;
			if (ts_ctl_get_u64(&m, TS_T_OFFSET, &off) < 0 || off != p->got)
				p->bad = true;
			for (uint32_t i = 0; i < vlen && !p->bad; i++)
				p->bad = v[i] != pattern(p->got + i);
			p->got += vlen;
		} else if (m.type == TS_CTL_END && !p->ended) {
			p->ended = true;
			p->bad |= ts_ctl_send_simple(p->fd, TS_CTL_OK, m.id) < 0;
		} else {
			p->bad = true;
		}
		ts_ctl_msg_free(&m);
	}
}

/* Ready within WAIT_MS for what ts_xfer_events asks? */
static bool ready(struct ts_xfer *x)
{
	struct pollfd pf = { .fd = ts_local_xfer_fd(x), .events = ts_local_xfer_events(x) };

	return poll(&pf, 1, WAIT_MS) == 1;
}

/*
 * The lost wake-up: a push refused (-EAGAIN), then steps that send the whole queue while
 * the sandbox reads all of it at once (as init's worker does) and says nothing before END.
 * The caller waits for ts_xfer_events before it pushes again: that wait must end.
 */
static void test_refused_push_wakes(void)
{
	const size_t len = 3 * MIB;
	struct ts_error err = { 0 };
	struct ts_xfer x = { .write = true };
	struct peer p = { 0 };
	struct ts_ctl_client *c;
	uint8_t *data = gen(len);
	size_t off = 0;
	bool finished = false, stalled = false;
	int sv[2], r = -1;

	if (!data || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    !(c = client_on(sv[0]))) {
		ok(0, "set up a socketpair");
		free(data);
		return;
	}
	p.fd = sv[1];
	fcntl(p.fd, F_SETFL, O_NONBLOCK);
	ts_ctl_conn_init(&p.rx);
	ok(ts_local_xfer_open(c, "/home/user/big", true, -1, &x, &err) == 0, "a write opens: %s",
	   err.msg);
	ok(!(ts_local_xfer_events(&x) & POLLOUT),
	   "nothing queued nor refused: the transfer waits for the sandbox only (no busy wait)");
	/* the sandbox reads nothing yet: the socket fills, then the queue */
	while (off < len && (r = ts_local_xfer_push(&x, data + off, PIECE, false, &err)) == 0)
		off += PIECE;
	ok(r == -EAGAIN && off > 0 && off < len, "pushes are refused once the queue is full (%zu)",
	   off);
	for (int i = 0; i < 1000 && c->q.bytes; i++) {
		const uint8_t *d;
		size_t l;

		peer_drain(&p);
		r = ts_local_xfer_step(&x, &d, &l, &err);
		if (r != 0)
			break;
	}
	peer_drain(&p);
	ok(r == 0 && c->q.bytes == 0 && p.got == off,
	   "steps sent the whole queue, the sandbox has it all and says nothing before END");
	ok(ready(&x), "a caller waiting to push again is woken (ts_xfer_events after -EAGAIN)");
	ok(ts_local_xfer_push(&x, data + off, PIECE, false, &err) == 0, "and its push goes");
	off += PIECE;
	/* the rest as ts_file_write does it: push until refused, finish, step, wait */
	for (int rounds = 0; rounds < 100000; rounds++) {
		const uint8_t *d;
		size_t l;

		while (off < len && (r = ts_local_xfer_push(&x, data + off,
							    len - off > PIECE ? PIECE : len - off,
							    false, &err)) == 0)
			off += len - off > PIECE ? PIECE : len - off;
		if (off == len && !finished) {
			r = ts_local_xfer_push(&x, NULL, 0, true, &err);
			finished = true;
		} else if (r == -EAGAIN) {
			r = 0;
		}
		if (r < 0)
			break;
		r = ts_local_xfer_step(&x, &d, &l, &err);
		if (r != 0)
			break;
		peer_drain(&p);
		if (!ready(&x)) {
			stalled = true;
			break;
		}
	}
	ok(!stalled && r == 2, "the whole write ends with the sandbox's OK (%d: %s)", r, err.msg);
	ok(!p.bad && p.ended && p.got == len, "the sandbox got every byte, in order, then END");
	ts_local_xfer_close(&x);
	ts_ctl_conn_free(&p.rx);
	close(p.fd);
	free(data);
}

/* --- the real worker under ts_file_write and ts_file_read -------------------------- */

static struct ts_backend_ops ops;
static pid_t worker = -1;

static int worker_xfer_start(struct ts_sb *sb, const char *path, const char *user, bool write,
			     int mode, struct ts_xfer *x, struct ts_error *err)
{
	struct ts_ctl_client *c;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return ts_err_errno(err, -errno, "socketpair");
	worker = fork();
	if (worker < 0)
		return ts_err_errno(err, -errno, "fork");
	if (worker == 0) {
		struct ts_files_cfg cfg = { .home = "/home/user", .root = root };
		struct ts_ctl_msg first = { 0 };

		close(sv[0]);
		if (ts_ctl_recv(sv[1], &first) < 0)
			_exit(0);
		_exit(ts_files_serve(sv[1], &first, &cfg) < 0 ? 1 : 0);
	}
	close(sv[1]);
	c = client_on(sv[0]);
	if (!c) {
		close(sv[0]);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	return ts_local_xfer_open(c, path, write, mode, x, err);
}

static void worker_xfer_close(struct ts_xfer *x)
{
	ts_local_xfer_close(x);
	if (worker > 0)
		waitpid(worker, NULL, 0);
	worker = -1;
}

static void test_worker_sizes(void)
{
	static const size_t sizes[] = { 1 * MIB, 3 * MIB, 3000000, 8 * MIB, 16 * MIB };
	struct ts_sb sb = { .ops = &ops };

	ops = ts_local_ops;
	ops.xfer_start = worker_xfer_start;
	ops.xfer_close = worker_xfer_close;
	for (size_t k = 0; k < ELEMENTSOF(sizes); k++) {
		size_t len = sizes[k];
		uint8_t *data = gen(len);
		int wrote = 0, read_back = 0;
		long long worst = 0;

		for (int i = 0; data && i < REPEATS; i++) {
			struct ts_error err = { 0 };
			long long t0 = (long long)ts_now_ms();
			uint8_t *got = NULL;
			size_t n = 0;
			int r = ts_file_write(&sb, "big.bin", NULL, data, len, -1, &err);

			if (r < 0)
				diag("write %zu bytes: %s", len, err.msg);
			else
				wrote++;
			if ((long long)ts_now_ms() - t0 > worst)
				worst = (long long)ts_now_ms() - t0;
			r = ts_file_read(&sb, "big.bin", NULL, &got, &n, 32 * MIB, &err);
			if (r < 0)
				diag("read %zu bytes: %s", len, err.msg);
			else if (n == len && !memcmp(got, data, len))
				read_back++;
			free(got);
		}
		ok(wrote == REPEATS, "ts_file_write of %zu bytes, %d times (slowest %lld ms)", len,
		   REPEATS, worst);
		ok(read_back == REPEATS, "ts_file_read gives the same %zu bytes back, %d times",
		   len, REPEATS);
		free(data);
	}
}

int main(void)
{
	char p[160];

	plan(0);
	snprintf(tmp, sizeof(tmp), "/tmp/ts-xfer-XXXXXX");
	if (!mkdtemp(tmp)) {
		ok(0, "mkdtemp");
		return done();
	}
	snprintf(root, sizeof(root), "%s/root", tmp);
	snprintf(p, sizeof(p), "%s/root/home/user", tmp);
	if (ts_mkdir_p(AT_FDCWD, p, 0755) < 0) {
		ok(0, "mkdir %s", p);
		return done();
	}
	test_refused_push_wakes();
	test_worker_sizes();
	ts_rm_rf_at(AT_FDCWD, tmp);
	return done();
}
