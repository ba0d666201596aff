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
 * timeout kills the whole tree, and the sandbox's files are removed afterwards unless
 * kept. It prints nothing and leaves the terminal's modes alone: what it has to say, and
 * when a pty needs the terminal raw, it tells the caller's hooks.
 */

/* What ts_run prepared, for a caller that says so (`run -v`). */
struct ts_run_info {
	const char *id;		/* the sandbox's id */
	const char *dir;	/* $ROOT/<id> */
	const char *ids_mode;	/* how the ids are mapped (idmap-plan.h) */
	unsigned long user_uid; /* the host uid of the sandbox's user */
};

/*
 * The caller's side of a run or of a durable start: every function may be NULL (then that
 * is not told), each gets userdata first. Called from the thread that called ts_run or
 * ts_launch_durable, before it returns.
 */
struct ts_run_hooks {
	void *userdata;
	/* A warning, told once the sandbox is prepared and before it starts: a workspace the
	 * sandbox user cannot write, a limit that cannot bind. verbose_only: one that only a
	 * verbose caller shows (a limit enforced otherwise than asked, as an rlimit). */
	void (*warn)(void *userdata, bool verbose_only, const char *msg);
	/* ts_run: the sandbox is prepared (after the warnings, before it starts). */
	void (*prepared)(void *userdata, const struct ts_run_info *info);
	/* ts_run with dry_run: the helper's command line (NULL-terminated; it is run with an
	 * empty environment) and the seccomp program it reads from fd seccomp_fd. Nothing is
	 * started. */
	void (*dry_run)(void *userdata, char *const *argv, int seccomp_fd,
			const char *seccomp_path);
	/* ts_run with a pty (tty, and stdin is a terminal): raw is true right before the
	 * helper starts and false once the sandbox has ended (or failed to start). The caller
	 * puts its terminal in raw mode and back; init copies between the pty and it. */
	void (*terminal)(void *userdata, bool raw);
	/* ts_run's timeout fired: the sandbox is being killed (the status is TS_EXIT_TIMEOUT). */
	void (*timed_out)(void *userdata, unsigned long long timeout_ms);
};

struct ts_run_opts {
	char **argv;			/* the command, NULL-terminated */
	const char *workspace;		/* host directory bound at /home/user; NULL: a fresh one */
	const char *image;		/* root file system directory; NULL: the host image */
	const char *image_pin;		/* durable, an image of the store: the layers its spec
					 * recorded (ts_oci_pin), used instead of the name's */
	const struct ts_policy *policy; /* merged policy: limits, env, binds, protected */
	/* durable, restored from a snapshot: its layers' directories (snapshot.h), top
	 * first, read-only lower layers over the image's */
	char (*snap_layers)[4096];
	size_t n_snap_layers;
	bool as_root;			  /* --user root */
	bool with_root;			  /* a root inside though processes run as user */
	bool tty;			  /* -t: a pty when stdin is a terminal */
	bool keep;			  /* keep the fresh workspace and upper dir */
	bool dry_run;			  /* tell hooks->dry_run the helper command line, no more */
	const struct ts_run_hooks *hooks; /* NULL: nothing is told */
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
 * o->hooks->warn hears the warnings; no other hook is called.
 */
int ts_launch_durable(const struct ts_run_opts *o, pid_t *ret_init_pid, struct ts_error *err);

/* Fill a sockaddr_un for dir/name, through /proc/self/fd/DIRFD when the path is too long
 * for sun_path. dirfd must stay open while the address is used. 0 or -ENAMETOOLONG. */
struct sockaddr_un;
int ts_unix_addr(struct sockaddr_un *sa, const char *dir, int dirfd, const char *name);
