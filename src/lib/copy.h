/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The host side of `cp`: whole trees between a host directory and a sandbox, through a
 * struct ts_copy_ops the caller gives (the backend interface's file calls, in the CLI),
 * so that copies work on every backend. What the sandbox sends is untrusted: names are
 * checked (ts_files_name_ok) before anything is created on the host, and nothing is ever
 * created through a host symlink.
 */
#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "fileclient.h"

/*
 * What a copy needs of the sandbox's files (the caller's: the CLI gives the backend
 * interface's, a test a recorder). Paths are sandbox paths; errors -errno with err.
 */
struct ts_copy_ops {
	int (*stat)(void *ctx, const char *path, struct ts_file_info *ret, struct ts_error *err);
	/* the entries of a directory (one level), in the sandbox's order */
	int (*list)(void *ctx, const char *path, ts_files_list_fn fn, void *userdata,
		    struct ts_error *err);
	/* mkdir -p; mode for the last directory */
	int (*mkdir)(void *ctx, const char *path, unsigned mode, struct ts_error *err);
	/* replace path atomically with what fn reads (mode < 0: an existing file's) */
	int (*write_from)(void *ctx, const char *path, int mode, ts_files_reader_fn fn,
			  void *userdata, struct ts_error *err);
	/* the whole file to fd; a failed write to fd names out_shown */
	int (*read_to_fd)(void *ctx, const char *path, int fd, const char *out_shown,
			  struct ts_error *err);
};

/* The ops over a files worker connection (ts_files_connect): ctx is an int * to it. */
extern const struct ts_copy_ops ts_copy_conn_ops;

/* Copies of whole trees between the host and a sandbox (toren-sandbox cp). */
struct ts_copy {
	const struct ts_copy_ops *ops;
	void *ctx;
	unsigned skipped; /* entries left out: symlinks, special files, protected names */
	mode_t umask;	  /* applied to what a copy out creates (read by ts_files_copy_out) */
	void (*warn)(void *userdata, const char *msg); /* told about each; may be NULL */
	void *userdata;
};

/* Count an entry left out of a copy and tell c->warn (the message made safe to print). */
void ts_copy_skip(struct ts_copy *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Copy the host file or directory open as src_fd to the sandbox path dst (the new
 * file's or directory's own path). Directories are copied recursively through fds
 * opened with O_NOFOLLOW; symlinks, special files and files inside the tree that the
 * sandbox refuses as protected are skipped (counted in c->skipped, told to c->warn). Modes keep their
 * permission bits (directories get u+rwx). src_shown names src in messages. 0 or -errno.
 */
int ts_files_copy_in(struct ts_copy *c, int src_fd, const char *src_shown, const char *dst,
		     struct ts_error *err);

/*
 * Copy the sandbox file or directory src to dst_name in the host directory dst_dirfd.
 * Everything is created relative to directory fds, with O_NOFOLLOW and O_EXCL, under
 * names the sandbox sent only after ts_files_name_ok. A file is written into an unnamed
 * file (O_TMPFILE) and linked in when complete, replacing an existing one through a
 * rename (an existing host symlink is replaced, never written through); where the file
 * system has no O_TMPFILE, a temporary name `.toren-cp-PID-START-RANDOM` that every exit
 * path removes, and that a later copy into the same directory removes once that process
 * is gone (killed mid-copy). Modes are the sandbox's permission bits less our umask, as
 * cp(1) without -p: no setuid, setgid or sticky bit. Sandbox symlinks and special files
 * are skipped (c->skipped). dst_shown names the destination in messages. 0 or -errno.
 */
int ts_files_copy_out(struct ts_copy *c, const char *src, int dst_dirfd, const char *dst_name,
		      const char *dst_shown, struct ts_error *err);
