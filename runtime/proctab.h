/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The process table of a durable sandbox's init (control protocol v3): E2B's process
 * model, kept by PID 1.
 *
 * init owns every process's streams: a pipe each for stdout and stderr (or one pty),
 * stdin /dev/null, a pipe it writes from INPUT requests until CLOSE_STDIN, or the pty.
 * What a process writes goes, in order, to
 *   - its backlog: the last TS_PROC_BACKLOG bytes, for clients that attach later;
 *   - every attached client, as OUTPUT messages (any number of clients, each may detach);
 *   - with TS_SPAWN_LOG, the file $ROOT/<id>/logs/<proc>.log (merged, at most 64 MiB).
 * A process's end (its wait status, or that its deadline killed it) goes to every
 * attached client, and its record stays at least TS_PROC_KEEP_MS after the exit so that
 * a late ATTACH still gets the end, and in any case until TS_PROC_MAX_FINISHED newer
 * records have ended. Its backlog is kept TS_PROC_KEEP_MS after the exit (and while a
 * client is attached), then freed: an idle init holds no finished process's output.
 *
 * Back-pressure, never loss and never a stall of init: while the output queue of any
 * client attached to a process holds more than TS_PROC_QUEUE_SOFT bytes, init stops
 * reading that process's output (so it blocks when its pipe fills); other processes and
 * other clients go on. A client that does not read for so long that its queue passes
 * the server's hard limit is disconnected (server.c). Input is accepted into a bounded
 * queue; its OK comes once the data is in the process's pipe, which is how a client
 * knows to send the next chunk.
 *
 * Processes are started in sessions of their own (never init's: see spawn.c), with the
 * sandbox's RLIMIT_NOFILE, as the user asked for, with no capability.
 */
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "ctl.h"
#include "error.h"
#include "ids.h"

#define TS_PROC_MAX 1024		/* records, running and finished */
#define TS_PROC_MAX_FINISHED 256	/* finished records kept beyond TS_PROC_KEEP_MS */
#define TS_PROC_KEEP_MS 30000		/* a finished record stays at least this long */
#define TS_PROC_BACKLOG (64U << 10)	/* bytes of output kept per process */
#define TS_PROC_LOG_CAP (64ULL << 20)	/* bytes of a background process's log */
#define TS_PROC_QUEUE_SOFT (256U << 10) /* a client's queue past this holds the process */
#define TS_PROC_STDIN_MAX (4U << 20)	/* input queued for one process */
#define TS_PROC_MAX_ATTACH 16		/* clients attached to one process */
#define TS_PROC_CONFIG_MAX (64U << 10)	/* bytes of a process's config kept for listings */

/* How the table reaches the server's connections. */
struct ts_proctab_ops {
	void *ctx;
	/* queue m to connection conn */
	void (*emit)(void *ctx, int conn, const struct ts_ctl_msg *m);
	/* bytes queued to conn and not yet sent */
	size_t (*queued)(void *ctx, int conn);
};

struct ts_proctab_cfg {
	const struct ts_ids *ids;
	int logs_fd;	      /* $ROOT/<id>/logs, for TS_SPAWN_LOG */
	struct rlimit nofile; /* what the processes get (init raised its own) */
	char **global_env;    /* names of the sandbox-wide variables (over the base) */
	size_t n_global_env;
	uint64_t first_id; /* the first process id (ids go on across starts) */
};

struct ts_proc;
struct ts_proctab;

/* A table (its large arrays are static, zero: never cleared as a whole, so that the
 * pages of records never used stay out of an idle sandbox's memory). */
struct ts_proctab *ts_proctab_get(const struct ts_proctab_cfg *cfg,
				  const struct ts_proctab_ops *ops);

/*
 * SPAWN from connection conn. Replies (SPAWNED or ERROR) are emitted to conn with the
 * request's id; with TS_SPAWN_ATTACH, conn is attached.
 */
void ts_proctab_spawn(struct ts_proctab *t, int conn, const struct ts_ctl_msg *req);

/* The other requests on processes (ATTACH DETACH INPUT CLOSE_STDIN RESIZE SIGNAL WAIT PS),
 * replying to conn. */
void ts_proctab_request(struct ts_proctab *t, int conn, const struct ts_ctl_msg *req);

/* SETENV made name sandbox-wide (it is in init's environment now): a process's HOME, USER
 * or LOGNAME of that name is no longer its user's but the sandbox's. */
void ts_proctab_set_global(struct ts_proctab *t, const char *name);

/* Connection conn is gone: it is no longer attached to anything. */
void ts_proctab_conn_gone(struct ts_proctab *t, int conn);

/* A child ended (from waitpid). False when it is none of the table's. */
bool ts_proctab_reaped(struct ts_proctab *t, pid_t pid, int status);

/* The fds to poll (output not held back by a full client, input pending): pfd and a
 * parallel map, room for 2 * TS_PROC_MAX entries. Returns how many were added. */
size_t ts_proctab_pollfds(struct ts_proctab *t, struct pollfd *pfd, int *map);

/* fd, of map value m, is ready (ignored if the record moved since ts_proctab_pollfds). */
void ts_proctab_ready(struct ts_proctab *t, int m, int fd, short revents);

/* Deadlines and expiry: call after every poll. Returns ms until the next deadline, or -1
 * when there is none. */
int ts_proctab_tick(struct ts_proctab *t);

/* Running processes at least one client is attached to (activity, for idle time). */
size_t ts_proctab_attached(const struct ts_proctab *t);

/* Everything that is init's (pipes, ptys, logs) closed: in a forked file worker. */
void ts_proctab_close_all(struct ts_proctab *t);

/* Every running process's group killed with sig (shutdown). */
void ts_proctab_kill_all(struct ts_proctab *t, int sig);
