/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Synchronisation between the helper's two halves and its caller:
 *  - child -> parent: one "ready" byte once it may be given id maps;
 *  - parent -> child: one "go" byte once the id maps and cgroups are in place;
 *  - child -> parent: a struct ts_error if setup fails; EOF (the socket is close-on-exec)
 *    when init was executed;
 *  - parent -> caller: one struct ts_helper_report (+ init's pidfd) on --sync-fd.
 */
#include <sys/types.h>

#include "error.h"

/* Child -> parent: ready for the id maps (one 'r' message). 0 or -errno. */
int ts_sync_send_ready(int fd);

/* Parent: wait for the child's 'r'; a struct ts_error instead is the child's failure. */
int ts_sync_wait_ready(int fd, struct ts_error *err);

/* Tell the child to go on (c = 'g') or to give up (c = 'x'). 0 or -errno. */
int ts_sync_send_go(int fd, char c);

/* Child: wait for the parent's byte. 0 on 'g', -ECANCELED on 'x' or EOF, -errno. */
int ts_sync_wait_go(int fd);

/* Child -> parent: the name proxy's listening socket (one 'l' message with the fd as
 * SCM_RIGHTS); the child then waits for a second "go". 0 or -errno. */
int ts_sync_send_fd(int fd, int pass);

/* Parent: receive that socket. The fd (close-on-exec), or the child's negative error code
 * with err filled when it sent a struct ts_error instead. */
int ts_sync_recv_fd(int fd, struct ts_error *err);

/* Child: report a setup error to the parent. Best effort. */
void ts_sync_send_error(int fd, const struct ts_error *err);

/*
 * Parent: wait for the child's verdict. 0 when the child executed init (EOF), or the
 * child's negative error code with err filled.
 */
int ts_sync_wait_child(int fd, struct ts_error *err);

/* Parent: send the report to the caller; pidfd may be -1 on failure. 0 or -errno. */
int ts_sync_report(int sync_fd, int status, pid_t pid, int pidfd, const struct ts_error *err);
