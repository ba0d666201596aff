/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Durable sandboxes: created once, started and stopped around the same workspace and
 * upper layer, entered by exec. init (toren-sandbox-init --server) is PID 1 and the
 * whole sandbox: no host process stays attached. The host talks to it over
 * $ROOT/<id>/run/control.sock (see ctl.h); background output lands in $ROOT/<id>/logs/.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "launch.h"
#include "paths.h"
#include "policy.h"
#include "store.h"

struct ts_create_opts {
	const char *name;	 /* NULL: unnamed */
	const char *workspace;	 /* NULL: $ROOT/<id>/workspace */
	const char *image;	 /* NULL: the host image */
	const char *snapshot;	 /* a snapshot's id or name (snapshot.h): its image, its layers
				  * over it and a copy of its workspace; image is then ignored */
	const char *policy_file; /* NULL: the default policy only */
	char **env;		 /* NAME or NAME=VALUE, NULL-terminated, may be NULL */
	char **labels;		 /* k=v, NULL-terminated, may be NULL */
	long long ttl_ms;	 /* < 0: the default (30 min); 0: none */
	bool ttl_absolute;
	pid_t owner_pid;  /* 0: none */
	bool as_root;	  /* processes as root by default */
	bool with_root;	  /* a root inside even when they run as user */
	bool sudo;	  /* sudo inside (as policy `sudo: true`) */
	bool network;	  /* egress (as policy `network: true`) */
	char **net_allow; /* more `network.allow` entries (NULL-terminated), as a policy's */
	char **protected_patterns; /* more protected patterns (NULL-terminated), as a policy's */
	unsigned long long memory_bytes, pids; /* 0: policy's */
	double cpus;
	const struct ts_run_hooks *hooks; /* told the start's warnings (may be NULL) */
};

#define TS_DEFAULT_TTL_MS (30LL * 60 * 1000) /* a create's idle timeout when it asks none */
#define TS_LABEL_KEY_MAX 127
#define TS_LABEL_VALUE_MAX 256

/* A `--label KEY=VALUE`: KEY 1-127 bytes, VALUE at most 256, both UTF-8 without control
 * characters. false with the reason in why. */
bool ts_label_valid(const char *kv, char *why, size_t len);

/* Create the sandbox, record it, start it. rec is filled. 0 or -errno. */
int ts_sandbox_create(const struct ts_create_opts *o, struct ts_sandbox_rec *rec,
		      struct ts_error *err);

/*
 * Add env (NAME=VALUE each, NULL-terminated) to the variables rec's spec asks for, after
 * those it has (a later one of the same name wins, as at a start): what a create with
 * them would have recorded. rec->spec only; the caller stores it. 0, or -EINVAL for a
 * bad entry (nothing changed), -ENOMEM.
 */
int ts_sandbox_spec_add_env(struct ts_sandbox_rec *rec, char *const *env, struct ts_error *err);

/* Is the recorded init alive (and answering)? Updates rec->state when it is not. */
bool ts_sandbox_running(struct ts_sandbox_rec *rec);

/*
 * May something run as root in this sandbox? Its id map decides: the one it runs with, or
 * for a stopped one the one its next start would get (the same plan), so that a request
 * it cannot serve starts nothing. 0, or -EPERM with a message.
 */
int ts_sandbox_check_root(struct ts_sandbox_rec *rec, struct ts_error *err);

/* Start a stopped sandbox around its workspace and upper layer (no-op if running). hooks
 * (may be NULL) are told what the start has to say (ts_launch_durable). */
int ts_sandbox_start(struct ts_store *st, struct ts_sandbox_rec *rec,
		     const struct ts_run_hooks *hooks, struct ts_error *err);

/* Stop: SHUTDOWN to init (TERM, grace, KILL inside), then SIGKILL by pidfd if it is
 * still there after grace_ms; wait until init is gone. Files stay. 0 when stopped. */
int ts_sandbox_stop(struct ts_store *st, struct ts_sandbox_rec *rec, unsigned grace_ms,
		    struct ts_error *err);

/* Ask a running init how long it has been idle and whether a client is attached. */
int ts_sandbox_query(const struct ts_sandbox_rec *rec, uint64_t *idle_ms, uint64_t *attached,
		     struct ts_error *err);

/* Told about what a removal kept or could not remove (the library prints nothing). */
typedef void (*ts_sandbox_warn_fn)(void *userdata, const char *msg);

/*
 * Forget a stopped sandbox and remove its runtime files (run/ logs/ work/); with purge its
 * upper layer and its own workspace too (never one given with --workspace). Only
 * $ROOT/<id> itself is ever touched, through fds opened with O_NOFOLLOW, so neither a
 * symlink planted in the sandbox's directory nor a tampered `dir` column can point the
 * removal elsewhere. What was kept or failed is told to warn. 0, or -errno.
 */
int ts_sandbox_remove(struct ts_store *st, const struct ts_paths *paths,
		      const struct ts_sandbox_rec *rec, bool purge, ts_sandbox_warn_fn warn,
		      void *userdata, struct ts_error *err);

/* Is the workspace the sandbox's own ($ROOT/<id>/workspace, made by create), as opposed to
 * a directory the user gave with --workspace? */
bool ts_sandbox_own_workspace(const struct ts_sandbox_rec *rec);
