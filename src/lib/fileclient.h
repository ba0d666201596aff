/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The host side of a sandbox's file operations (TS_CTL_FILE in ctl.h), over a control
 * connection from ts_sandbox_connect(). Requests run one at a time on a connection.
 *
 * What the sandbox sends is untrusted (its init runs under the sandbox's control): reply
 * types, request ids, data sizes and offsets, entry fields and error codes are checked,
 * and error messages and names are made safe to print (ts_sanitize_text). A reply that
 * breaks the protocol fails the call with EPROTO and shuts the connection down: a stream
 * that cannot be trusted is not used again. So does a reply message that takes longer
 * than 5 minutes (ETIMEDOUT).
 *
 * Sandbox paths are absolute, or relative to the sandbox user's home; `..` is refused by
 * the sandbox (see runtime/files.h for how paths resolve and what is protected).
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

#define TS_FILES_MAX_ENTRIES 100000 /* one LIST; more is a protocol error */

enum ts_file_type {
	TS_FILE_TYPE_FILE,
	TS_FILE_TYPE_DIR,
	TS_FILE_TYPE_SYMLINK,
	TS_FILE_TYPE_OTHER,
};

struct ts_file_info {
	char path[PATH_MAX]; /* stat: the absolute sandbox path; list: relative to the dir */
	enum ts_file_type type;
	unsigned mode; /* permission bits (07777) */
	uint64_t size;
	uint64_t mtime_ms;     /* ms since the epoch */
	uint32_t uid, gid;     /* as seen inside the sandbox */
	char target[PATH_MAX]; /* a symlink's target as stored, else "" */
	/* TS_FILES_XATTRS only: "key=value" of its user.e2b.* xattrs, NULL-terminated (NULL
	 * when none). ts_files_stat_ex: the caller's (ts_file_info_clear); a listing's: valid
	 * in the callback only. Without the flag always NULL. */
	char **metadata;
};

/* Free what ts_files_stat_ex gave in i (the metadata). */
void ts_file_info_clear(struct ts_file_info *i);

#define TS_FILES_XATTRS (1U << 0) /* stat, list: also the entries' metadata */

/*
 * Copy the sandbox file at path to out_fd, which out_shown names in messages (NULL: "the
 * copy"). 0 or -errno: the sandbox's code, EPROTO, or a failed write to out_fd (the
 * message then names out_shown: a full disk is ours, not the sandbox's).
 */
int ts_files_read_to_fd(int conn, const char *path, int out_fd, const char *out_shown,
			struct ts_error *err);

/*
 * Replace the sandbox file at path with everything read from in_fd (atomically: the
 * sandbox keeps the old file until all of it arrived), creating missing directories.
 * mode: permission bits, or -1 for the existing file's (0644 for a new one). When
 * reading in_fd fails the write is abandoned by shutting the connection down.
 * 0 or -errno (EPERM for a protected path).
 */
int ts_files_write_from_fd(int conn, const char *path, int mode, int in_fd, struct ts_error *err);

/* The data of a write: up to len bytes into buf; the count, 0 at the end, or -errno. */
typedef ssize_t (*ts_files_reader_fn)(void *userdata, void *buf, size_t len);

/* ts_files_write_from_fd with the data from fn; an error of fn abandons the write (the
 * sandbox keeps the old file) and closes the connection. */
int ts_files_write_from(int conn, const char *path, int mode, ts_files_reader_fn fn, void *userdata,
			struct ts_error *err);

/* Called for each entry of a listing; a negative return stops it (and is returned). */
typedef int (*ts_files_list_fn)(const struct ts_file_info *e, void *userdata, struct ts_error *err);

/* List the directory path, depth levels deep (1: its entries; at most 16), symlinks not
 * followed. -E2BIG past 100000 entries (the sandbox's limit). 0 or -errno. */
int ts_files_list(int conn, const char *path, unsigned depth, ts_files_list_fn fn, void *userdata,
		  struct ts_error *err);

/* lstat path in the sandbox. 0 or -errno. */
int ts_files_stat(int conn, const char *path, struct ts_file_info *ret, struct ts_error *err);
/* ts_files_stat and ts_files_list with TS_FILES_* flags. */
int ts_files_stat_ex(int conn, const char *path, unsigned flags, struct ts_file_info *ret,
		     struct ts_error *err);
int ts_files_list_ex(int conn, const char *path, unsigned depth, unsigned flags,
		     ts_files_list_fn fn, void *userdata, struct ts_error *err);

/* Replace every user.e2b.* xattr of path (a file or directory, not followed) with the n
 * "key=value" strings of kv (at most 64; keys of 1 to 246 bytes without `=`, values up to
 * 4 KiB). 0 or -errno (EINVAL, E2BIG; ENOTSUP where the file system has no user xattrs). */
int ts_files_set_xattrs(int conn, const char *path, char *const *kv, size_t n,
			struct ts_error *err);

/* mkdir -p path; mode for the last directory. 0 or -errno. */
int ts_files_mkdir(int conn, const char *path, unsigned mode, struct ts_error *err);

/* Serve the rest of this connection as uid (0 root, 1000 user): only as its first request;
 * relative paths then start in that user's home. EPERM where the sandbox has no such
 * user. */
int ts_files_as_user(int conn, unsigned uid, struct ts_error *err);

/* rm -rf path, never following a link. 0 or -errno. */
int ts_files_remove(int conn, const char *path, struct ts_error *err);

/* rename(2) inside the sandbox: an existing target is replaced. 0 or -errno. */
int ts_files_rename(int conn, const char *from, const char *to, struct ts_error *err);

/* Is name (sent by a sandbox) a plain file name: not empty, not `.` or `..`, no `/`,
 * at most NAME_MAX bytes? */
bool ts_files_name_ok(const char *name);
