/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "paths.h"
#include "policy.h"

/*
 * One-shot sandboxes: `toren-sandbox run`. Prepares everything on the host (state dir,
 * image layers, id maps, seccomp BPF, protected paths, limits), describes the sandbox as
 * a helper command line, starts the helper, and supervises: signals are forwarded, the
 * timeout kills the whole tree, the terminal is put in raw mode for a pty, and the
 * sandbox's files are removed afterwards unless kept.
 */

struct ts_run_opts {
	char **argv;			/* the command, NULL-terminated */
	const char *workspace;		/* host directory bound at /home/user; NULL: a fresh one */
	const char *image;		/* root file system directory; NULL: the host image */
	const struct ts_policy *policy; /* merged policy: limits, env, binds, protected */
	bool as_root;			/* --user root */
	bool tty;			/* -t: a pty when stdin is a terminal */
	bool keep;			/* keep the fresh workspace and upper dir */
	bool dry_run;			/* print the helper command line and exit */
	bool verbose;
	/* durable sandboxes (sandbox.c): build around $ROOT/<durable_id>, keep everything,
	 * start init as a server (no command) and let it run on with no host process */
	const char *durable_id;
	/* the caller's ts_paths_init() result, so start-up does it once; NULL: looked up */
	const struct ts_paths *paths;
};

/* Exit statuses of `run` besides the command's own. */
#define TS_EXIT_TIMEOUT 124
#define TS_EXIT_SETUP 125

/*
 * Run the command in a new sandbox and wait for it. *ret_status is the exit status to
 * give the caller: the command's, 128+N when it was killed by signal N, TS_EXIT_TIMEOUT
 * when the timeout killed it. Returns 0, or -errno (with err) when the sandbox could not
 * be prepared or started.
 */
int ts_run(const struct ts_run_opts *o, int *ret_status, struct ts_error *err);

/*
 * Start the init of the durable sandbox o->durable_id (its directories are made when
 * missing, kept otherwise): init listens on $ROOT/<id>/run/control.sock and writes
 * background output to $ROOT/<id>/logs/. Returns once init runs, with its host pid.
 */
int ts_launch_durable(const struct ts_run_opts *o, pid_t *ret_init_pid, struct ts_error *err);

/* Fill a sockaddr_un for dir/name, through /proc/self/fd/DIRFD when the path is too long
 * for sun_path. dirfd must stay open while the address is used. 0 or -ENAMETOOLONG. */
struct sockaddr_un;
int ts_unix_addr(struct sockaddr_un *sa, const char *dir, int dirfd, const char *name);
