/* SPDX-License-Identifier: Apache-2.0 */
#include "oci-stream.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"

/* the socket's buffer: a few of curl's writes ahead of the reader (capped by the kernel's
 * net.core.wmem_max) */
#define STREAM_SNDBUF (1 << 20)

struct ts_blob_stream {
	struct ts_registry *reg;
	char hex[65];
	uint64_t max;
	int rfd, wfd;
	pthread_t thread;
	/* the thread's, read after pthread_join */
	int r;
	struct ts_error err;
	char got_hex[65];
	uint64_t got;
};

static void *download(void *data)
{
	struct ts_blob_stream *s = data;

	s->r = ts_reg_blob(s->reg, s->hex, s->wfd, s->max, s->got_hex, &s->got, &s->err);
	/* the reader's end of file, whether the blob came whole or not */
	close(s->wfd);
	s->wfd = -EBADF;
	return NULL;
}

int ts_thread_start_quiet(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int r;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

int ts_blob_stream_start(struct ts_registry *reg, const char *hex, uint64_t max,
			 struct ts_blob_stream **ret, struct ts_error *err)
{
	struct ts_blob_stream *s = calloc(1, sizeof(*s));
	int sv[2], buf = STREAM_SNDBUF, r;

	if (!s)
		return ts_err(err, -ENOMEM, "out of memory");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		r = -errno;
		free(s);
		return ts_err_errno(err, r, "socketpair for a layer's download");
	}
	s->reg = reg;
	snprintf(s->hex, sizeof(s->hex), "%s", hex);
	s->max = max;
	s->rfd = sv[0];
	s->wfd = sv[1];
	(void)setsockopt(s->wfd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	/* no SIGPIPE from a write whose reader is gone: EPIPE (a thread-directed signal,
	 * discarded when the thread ends) */
	r = ts_thread_start_quiet(&s->thread, download, s);
	if (r) {
		close(s->rfd);
		close(s->wfd);
		free(s);
		return ts_err_errno(err, -r, "start a layer's download thread");
	}
	*ret = s;
	return 0;
}

int ts_blob_stream_fd(const struct ts_blob_stream *s)
{
	return s->rfd;
}

int ts_blob_stream_end(struct ts_blob_stream *s, char *got_hex, uint64_t *got, struct ts_error *err)
{
	_cleanup_free_ char *buf = malloc(65536);
	ssize_t n;
	int r;

	do {
		n = buf ? read(s->rfd, buf, 65536) : -1;
	} while (n > 0 || (n < 0 && errno == EINTR));
	/* a failed drain (no memory): closing makes the writer fail with EPIPE instead */
	close(s->rfd);
	pthread_join(s->thread, NULL);
	r = s->r;
	if (r < 0) {
		if (err)
			*err = s->err;
	} else {
		memcpy(got_hex, s->got_hex, sizeof(s->got_hex));
		*got = s->got;
	}
	free(s);
	return r;
}
