/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * `sudo` inside a durable sandbox (policy `sudo: true`): init listens on a unix socket,
 * TS_SUDO_SOCKET, that every process of the sandbox may connect to and none may replace,
 * and starts the command a client (toren-sandbox-sudo, seen as /usr/bin/sudo) asks for as
 * root or user of the sandbox, with the client's standard streams.
 *
 * The protocol is ctl.h's framing on that socket, one request per connection:
 * client -> init  SPAWN {ARG..., ENV..., CWD, UID} with exactly three fds (0, 1, 2);
 * init -> client  SPAWNED {PID}, then EXITED {STATUS} (a wait status) when it ends, or
 *                 ERROR {CODE, MSG} instead of either;
 * client -> init  SIGNAL {SIGNAL} at any time: to the command's whole process group.
 * A client that goes away takes the command's process group with it (SIGKILL).
 *
 * The command gets no more than any process init starts: its own session and process
 * group (what is left of the group is killed when the leader exits), no capability, an
 * empty bounding set, init's seccomp filter, rlimits and no_new_privs; a fixed
 * environment (PATH reset, HOME, USER, LOGNAME, SHELL, SUDO_*) plus the client's TERM,
 * LANG, LANGUAGE and LC_*; its cwd is the client's, entered with the target's ids only.
 */
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "error.h"
#include "ids.h"

#define TS_SUDO_DIR "/run/toren"
#define TS_SUDO_SOCKET "/run/toren/sudo.sock"
#define TS_SUDO_MAX 16	      /* connections at once, each at most one command */
#define TS_SUDO_MAX_ARGS 4096 /* arguments of one command (the payload is <= 1 MiB) */
#define TS_SUDO_SECURE_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct ts_sudo;

/*
 * Create TS_SUDO_DIR (root's, 0755) and the listening socket in it (0666), as root of
 * the sandbox through our file-system ids: needs ids->can_switch (-EPERM otherwise).
 * 0 or -errno with err.
 */
int ts_sudo_open(struct ts_sudo **ret, const struct ts_ids *ids, struct rlimit nofile,
		 struct ts_error *err);

/* Our descriptors to poll (at most TS_SUDO_MAX + 1); map[i] is for ts_sudo_ready. */
size_t ts_sudo_pollfds(struct ts_sudo *s, struct pollfd *pfd, int *map);
void ts_sudo_ready(struct ts_sudo *s, int which, short revents);

/* A child was reaped: true when it was a sudo command (its client gets EXITED). */
bool ts_sudo_reaped(struct ts_sudo *s, pid_t pid, int status);

/* Commands running now (activity, for the idle count). */
size_t ts_sudo_running(const struct ts_sudo *s);

/* In a forked child of init: close every descriptor of ours. Accepts NULL. */
void ts_sudo_close_all(struct ts_sudo *s);
