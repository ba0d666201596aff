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
 * Prints `entries N bytes N` (the totals, counting --used-*) on stdout and exits 0; on
 * failure one line on stderr and the positive errno as exit status (125 when the
 * arguments or the namespace failed before the copy).
 */
int ts_copytree_main(int argc, char **argv);
