/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A layer blob downloaded by a thread of its own into one end of a socket pair while the
 * caller reads (unpacks) it from the other: the blob is never written to disk and read
 * back. The thread has the registry handle to itself until ts_blob_stream_end; the blob's
 * sha256 and size are taken on the way (ts_reg_blob), for the caller to check at the end,
 * before it uses anything it unpacked. A socket rather than a pipe so that the reader can
 * peek at the first bytes (is it gzip?) without taking them.
 */
#include <pthread.h>
#include <stdint.h>

#include "error.h"
#include "oci-registry.h"

struct ts_blob_stream;

/* Start the download of sha256:hex from reg, at most max bytes (the download ends at
 * once past them: -EFBIG from ts_blob_stream_end). 0 or -errno. */
int ts_blob_stream_start(struct ts_registry *reg, const char *hex, uint64_t max,
			 struct ts_blob_stream **ret, struct ts_error *err);

/* The end to read the blob from (EOF when the download ended, whole or not). */
int ts_blob_stream_fd(const struct ts_blob_stream *s);

/*
 * Read what the caller left of the blob (discarded: the download runs to its end, so that
 * its digest says whether the blob is the one asked for), wait for the thread and free s:
 * ts_reg_blob's result, with its sha256 (65 bytes) into got_hex and its size into *got.
 */
int ts_blob_stream_end(struct ts_blob_stream *s, char *got_hex, uint64_t *got,
		       struct ts_error *err);

/* pthread_create with every signal blocked in the new thread: the caller's handlers stay
 * on the caller's threads, and a write to a socket whose reader is gone fails with EPIPE
 * instead of raising SIGPIPE. pthread_create's result (0 or a positive errno). */
int ts_thread_start_quiet(pthread_t *t, void *(*fn)(void *), void *arg);
