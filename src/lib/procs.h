/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Processes of a running durable sandbox, over a control connection (ctl.h). Replies come
 * from init, inside the sandbox: every field is checked before use. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

struct ts_spawn_req {
	char **argv;	  /* NULL-terminated */
	char **env;	  /* NAME=VALUE, NULL-terminated, may be NULL */
	const char *cwd;  /* NULL: /home/user */
	bool pty;	  /* a pty: its master comes back in *ret_master */
	bool detach;	  /* background: output to $ROOT/<id>/logs/<proc>.log */
	const int *stdio; /* 3 fds for stdin/stdout/stderr, when neither pty nor detach */
	enum ts_spawn_user {
		TS_SPAWN_AS_DEFAULT = 0, /* the sandbox's own user (zero-initialized) */
		TS_SPAWN_AS_ROOT,	 /* uid 0 inside */
		TS_SPAWN_AS_USER,	 /* uid 1000 inside */
	} as;
};

/* Start a process. 0 with its id (and pid, pty master), or -errno with err. */
int ts_procs_spawn(int conn, const struct ts_spawn_req *req, uint64_t *ret_proc, pid_t *ret_pid,
		   int *ret_master, struct ts_error *err);

/* Ask for the exit of proc: the EXITED message arrives later on conn (request id 2). */
int ts_procs_watch(int conn, uint64_t proc, struct ts_error *err);

/* Send a signal to proc's process group (request id 3; OK or ERROR arrives on conn). */
int ts_procs_signal_async(int conn, uint64_t proc, int sig, struct ts_error *err);

/* Signal and wait for the answer on a connection of its own. */
int ts_procs_signal(int conn, uint64_t proc, int sig, struct ts_error *err);

struct ts_proc_info {
	uint64_t proc;
	pid_t pid;
	bool running;
	int status; /* wait status when exited */
	uint64_t flags, started_ms, ended_ms;
	uint64_t uid; /* inside the sandbox */
	char command[256];
};

/* List the processes init knows (running and recently finished). Free *ret with free. */
int ts_procs_list(int conn, struct ts_proc_info **ret, size_t *n, struct ts_error *err);

/* The exit status a shell would give: the code, or 128+N for a signal. */
int ts_procs_exit_code(int status);
