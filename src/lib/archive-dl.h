/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * libarchive, loaded with dlopen(3) on first use (extract.c), shared by `cp --extract`
 * and the image layers (oci-layer.c), so that no other command pays for mapping it and its
 * compression libraries.
 */
#include <archive.h>
#include <archive_entry.h>

#include "error.h"

#define LIBARCHIVE_SONAME "libarchive.so.13"

/* The libarchive functions we use, resolved by name from the dlopen'ed library. */
struct ts_libarchive {
	void *dl;
	__typeof__(archive_read_new) *read_new;
	__typeof__(archive_read_open_fd) *open_fd;
	__typeof__(archive_read_next_header) *next_header;
	__typeof__(archive_read_data) *read_data;
	__typeof__(archive_read_free) *read_free;
	__typeof__(archive_error_string) *error_string;
	__typeof__(archive_entry_pathname) *entry_pathname;
	__typeof__(archive_entry_filetype) *entry_filetype;
	__typeof__(archive_entry_perm) *entry_perm;
	__typeof__(archive_entry_hardlink) *entry_hardlink;
	__typeof__(archive_format) *format;
	__typeof__(archive_entry_size) *entry_size;
	__typeof__(archive_entry_size_is_set) *entry_size_is_set;
	__typeof__(archive_entry_symlink) *entry_symlink;
	__typeof__(archive_entry_mode) *entry_mode;
	__typeof__(archive_read_support_format_tar) *support_tar;
};

/* Load libarchive into *L (dlclose(L->dl) when done). 0 or -ENOPKG with a message. */
int ts_libarchive_load(struct ts_libarchive *L, struct ts_error *err);

/* Enable on a the decompression filters libarchive runs in-process (never one that would
 * start an external program on untrusted data). */
void ts_libarchive_enable_filters(const struct ts_libarchive *L, struct archive *a);
