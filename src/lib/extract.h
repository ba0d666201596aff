/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Extracting an archive into a sandbox (toren-sandbox cp --extract).
 *
 * The archive is read on the host with libarchive (tar in all its dialects, compressed or
 * not, zip, cpio, 7z, ...), loaded with dlopen(3) on first use so that no other command
 * pays for mapping it and its compression libraries. Only the decompression filters
 * libarchive runs in-process are enabled: none that would start an external program. Nothing is written on the host:
 * every entry becomes a request of the file API (c->ops: mkdir, write_from),
 * served inside the sandbox by a worker without capabilities whose paths resolve in the
 * sandbox's root only.
 *
 * Entry by entry (security-cases.md FA-10):
 *  - names are relative paths below the destination; an absolute name or one with a `..`
 *    component is skipped; `.` components and repeated `/` are dropped;
 *  - directories and regular files are created with their permission bits only: no
 *    setuid, setgid or sticky bit (directories get at least u+rwx);
 *  - symbolic links, hard links, devices, FIFOs and sockets are skipped;
 *  - an entry the sandbox refuses (a protected name, no permission) is skipped.
 * Each skip is counted in c->skipped and told to c->warn, and the rest still goes in.
 */
#include "error.h"
#include "copy.h"

/*
 * Extract the archive open as fd (a file or a pipe) into the sandbox directory dst (made
 * with its parents when missing), through c->ops. shown names the archive in messages.
 * 0 (entries may have been skipped) or -errno: the archive is unreadable or damaged,
 * libarchive is not installed, or the connection failed.
 */
int ts_archive_extract(struct ts_copy *c, int fd, const char *shown, const char *dst,
		       struct ts_error *err);
