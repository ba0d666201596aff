/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Unpacking an image layer (a tar, compressed or not) into a directory, safe against a
 * hostile layer. Entry by entry:
 *  - names are relative paths below the layer directory: an absolute name or one with a
 *    `..` component is skipped with a warning; `.` components and repeated `/` dropped;
 *  - every path is walked from the layer's directory fd one component at a time with
 *    O_NOFOLLOW: an entry whose parent is (or goes through) a symbolic link is skipped, so
 *    nothing is ever written outside the layer directory;
 *  - symbolic links are created as they are (their target is text, resolved inside the
 *    sandbox's root when used, never followed here); hard links only to a regular file
 *    already in the same layer, else skipped;
 *  - devices, FIFOs and sockets are skipped with a warning; setuid and setgid bits are
 *    cleared with a warning; owners and extended attributes are not restored (the files
 *    belong to the user who imports);
 *  - the whole layer is bounded (bytes, entries, one entry's size): past a bound the
 *    unpacking fails with -EFBIG and the caller discards the directory;
 *  - with whiteouts on (image layers): `.wh.NAME` becomes an overlay whiteout (a 0/0
 *    character device, which the kernel lets an unprivileged user create), and an opaque
 *    directory (`.wh..wh..opq`) gets a whiteout for every name the layers below have in
 *    it (recursively where both have a directory), so it needs no trusted.* or user.*
 *    xattr and works with any overlay mount options.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct ts_layer_opts {
	bool whiteouts;	      /* OCI whiteouts -> overlay whiteouts */
	const int *lower_fds; /* the layers below (for opaque directories) */
	size_t n_lowers;
	uint64_t max_bytes;	  /* 0: 16 GiB */
	uint64_t max_entries;	  /* 0: 1,000,000 */
	uint64_t max_entry_bytes; /* 0: max_bytes */
	void (*warn)(void *userdata, const char *msg);
	void *userdata;
	/* Not NULL: 65 bytes for the diff_id (ts_layer_diff_id), taken in the same pass as
	 * the unpacking, over the whole decompressed stream (what follows the tar's end
	 * included), max_bytes bounding that stream too. The caller checks it before it uses
	 * the directory: one decompression instead of two. */
	char *diff_id;
	/* Not NULL: the layer's opaque directories are recorded here instead of made opaque
	 * (lower_fds unused), for ts_layer_opaque_apply once the layers below are unpacked: a
	 * layer can then be unpacked beside the one below it. */
	struct ts_layer_opaque *defer;
};

struct ts_layer_stats {
	uint64_t bytes, entries, skipped;
};

/* The opaque directories of a layer unpacked with o->defer: paths relative to it. */
struct ts_layer_opaque {
	char **paths;
	size_t n;
};

/* Unpack the archive open as fd into the directory dirfd. 0 (entries may have been
 * skipped, each told to o->warn) or -errno (-EFBIG past a bound). */
int ts_layer_unpack(int fd, int dirfd, const struct ts_layer_opts *o, struct ts_layer_stats *st,
		    struct ts_error *err);

/*
 * The sha256 (hex, 65 bytes) of the archive open as fd once decompressed: an OCI layer's
 * diff_id. -EFBIG past max_bytes decompressed (0: 16 GiB). 0 or -errno.
 */
int ts_layer_diff_id(int fd, uint64_t max_bytes, char *hex, struct ts_error *err);

/* Make the opaque directories q of the layer dirfd (unpacked with o->defer) opaque over
 * o->lower_fds, as ts_layer_unpack would have: a whiteout for every name below. Warnings
 * to o->warn, counted in st->skipped. 0 or -errno. */
int ts_layer_opaque_apply(int dirfd, const struct ts_layer_opaque *q, const struct ts_layer_opts *o,
			  struct ts_layer_stats *st, struct ts_error *err);

/* Free what q holds (q itself is the caller's). */
void ts_layer_opaque_free(struct ts_layer_opaque *q);
