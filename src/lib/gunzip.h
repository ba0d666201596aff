/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A gzip stream read from a file descriptor and decompressed with ISA-L's igzip
 * (libisal.so.2, loaded with dlopen(3) when an image layer is unpacked): several times
 * zlib's inflate, which was most of a pull's CPU time (bench/RESULTS.md, "Images").
 * Concatenated members are read as one stream, and what follows the last member when it
 * does not start with gzip's magic is not part of it, as libarchive's gzip reader does,
 * so a layer's diff_id is the same whichever decompresses it. Each member's CRC-32 and
 * length are checked: a damaged or cut stream is an error, never a short success.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

struct ts_gunzip;

/* Whether fd starts, at its current position (read with pread, the position untouched), as
 * gzip does; a stream socket (oci-stream.h) is peeked at, waiting for its first bytes. */
bool ts_gunzip_is_gzip(int fd);

/* A reader of the gzip stream fd from its current position. -ENOPKG (a message in err)
 * when ISA-L cannot be loaded: the caller decompresses another way. */
int ts_gunzip_open(int fd, struct ts_gunzip **ret, struct ts_error *err);

/* Up to len decompressed bytes into buf: their number, 0 at the stream's end, or -EIO (a
 * damaged or truncated stream, -errno of a failed read) with a message in err. */
ssize_t ts_gunzip_read(struct ts_gunzip *g, void *buf, size_t len, struct ts_error *err);

void ts_gunzip_free(struct ts_gunzip *g);
