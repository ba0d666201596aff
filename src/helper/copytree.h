/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * `toren-sandbox-helper --copy-tree`: copy the directory open as fd 3 into the directory
 * open as fd 4 (ts_treecopy) as root of a new user namespace mapped like a sandbox
 * (--uid-map, --gid-map, --newidmap), so that the files of a sandbox with subordinate
 * ids, which its caller cannot read or chown, are copied with their owners.
 *
 * The caller opens both directories (O_NOFOLLOW|O_DIRECTORY) before the helper runs: no
 * path is taken or resolved here. Only a user namespace is made (the host's mounts, no
 * new root), the maps pass the sandbox's rules (ts_idmap_check, and in setuid mode those
 * of ts_setuid_enter), and a setuid helper has dropped to the caller first.
 *
 * With --remove: empty the directory open as fd 3 instead (a snapshot's files of
 * subordinate ids, which its owner could not unlink); no fd 4.
 *
 * `toren-sandbox-helper --scan-protected`: the same namespace, for ts_protect_scan of the
 * directory open as fd 3 (--pattern, repeated; --aliases; --max-entries, required),
 * which the caller could not walk itself (a directory of 0700 that a sandbox's root
 * made). Each protected path, relative to fd 3, is written with its terminating NUL to
 * fd 4 (open for writing: the caller reads it while the helper runs); then `paths N`
 * on stdout.
 *
 * Prints `entries N bytes N` (the totals, counting --used-*) on stdout and exits 0; on
 * failure one line on stderr and the positive errno as exit status (125 when the
 * arguments or the namespace failed before the copy or the scan).
 */
/* argv[1] is `--copy-tree` or `--scan-protected`; returns the helper's exit status. */
int ts_copytree_main(int argc, char **argv);
