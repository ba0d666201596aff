/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The backend interface: sandboxes, their processes and their files, shaped like the E2B
 * SDK (Sandbox, commands, pty, files), so that the CLI's durable commands, the
 * E2B-compatible server and the agent runner all call one seam and behave the same on
 * every backend:
 *
 *   local  durable sandboxes of this machine (src/lib: state.db, the helper, each
 *          sandbox's init over its control socket)
 *   e2b    E2B's cloud (REST API + envd), arriving with `serve`
 *   none   every call fails, saying how to enable a backend
 *
 * Chosen by ts_backend_open (TOREN_SANDBOX=auto|local|e2b|none, or the CLI's --backend).
 *
 * Threading and blocking: a backend and everything opened from it belong to one thread.
 * Nothing here waits on a sandbox without a bound: calls that are requests (create, kill,
 * info, file operations, signals, input) return once answered, within TS_BE_REPLY_MS of
 * the sandbox's silence. Everything that streams or lasts — a command's output and end,
 * a directory watch, a file read or write of any size — is a handle with a pollable fd:
 * poll ts_*_fd() for ts_*_events(), then call the step function, which never blocks and
 * yields zero or one event. The blocking helpers at the end (ts_be_run, ...) are built on
 * these and are what a command-line tool uses; an event loop serving many sandboxes uses
 * the handles directly.
 *
 * Errors: functions return 0 or -errno, and fill a struct ts_error; ts_be_code() maps it
 * onto one enum that corresponds 1:1 to the E2B SDK's error classes (ts_be_code_name).
 */
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

#define TS_BE_REPLY_MS 30000 /* how long a sandbox may take to answer one request */

/* --- errors ------------------------------------------------------------------------ */

enum ts_be_code {
	TS_BE_OK = 0,
	TS_BE_NOT_FOUND,	/* NotFoundError, SandboxNotFoundError, FileNotFoundError */
	TS_BE_INVALID_ARGUMENT, /* InvalidArgumentError */
	TS_BE_TIMEOUT,		/* TimeoutError (a deadline, a timeout, a sandbox gone) */
	TS_BE_COMMAND_EXIT,	/* CommandExitError: a command ended with a non-zero status */
	TS_BE_NOT_ENOUGH_SPACE, /* NotEnoughSpaceError */
	TS_BE_AUTHENTICATION,	/* AuthenticationError */
	TS_BE_PERMISSION,	/* permission_denied (no such user in this sandbox, ...) */
	TS_BE_RATE_LIMIT,	/* RateLimitError (resource_exhausted) */
	TS_BE_ALREADY_EXISTS,	/* already_exists (makeDir of an existing directory) */
	TS_BE_UNAVAILABLE,	/* the sandbox is stopped or paused (SDK: TimeoutError) */
	TS_BE_UNIMPLEMENTED,	/* not on this backend */
	TS_BE_TEMPLATE,		/* TemplateError: an image or template that cannot be used */
	TS_BE_INTERNAL,		/* SandboxError: anything else */
};

/* The class of an error (from err->code, the errno of the failure). */
enum ts_be_code ts_be_code(const struct ts_error *err);
/* "not_found", "invalid_argument", ... (Connect's names where E2B uses them). */
const char *ts_be_code_name(enum ts_be_code code);

/* --- backends ---------------------------------------------------------------------- */

struct ts_backend;
struct ts_sb;	 /* a sandbox, connected */
struct ts_cmd;	 /* a process's stream: output and end */
struct ts_watch; /* a directory watch */
struct ts_xfer;	 /* a file read or write in progress */

/*
 * Open the backend `name` (NULL: $TOREN_SANDBOX, else "auto"). auto is e2b when
 * E2B_API_KEY is set, else local. An unknown name (docker included) is -EINVAL with a
 * message naming the valid ones.
 */
int ts_backend_open(const char *name, struct ts_backend **ret, struct ts_error *err);
void ts_backend_free(struct ts_backend *b);
static inline void ts_backend_freep(struct ts_backend **b)
{
	ts_backend_free(*b);
}
const char *ts_backend_name(const struct ts_backend *b);
/* A note on the backend's own state for the user (local: a state database that was
 * repaired), or "". */
const char *ts_backend_warning(struct ts_backend *b);
/*
 * A warning the backend comes upon while it works (local: a sandbox's start found a
 * workspace the sandbox user cannot write, a limit that cannot bind). verbose_only: one
 * that only a verbose caller shows (a limit enforced otherwise than asked). Callers print
 * it, the backend never.
 */
typedef void (*ts_be_note_fn)(void *userdata, bool verbose_only, const char *msg);
/* Where the backend's warnings go from now on (fn NULL, the default: nowhere). */
void ts_backend_on_warning(struct ts_backend *b, ts_be_note_fn fn, void *userdata);

/* --- sandboxes ----------------------------------------------------------------------- */

struct ts_kv {
	const char *key, *value;
};

struct ts_sb_create_opts {
	const char *template_id;  /* an image: NULL or "base" = the default */
	const struct ts_kv *envs; /* sandbox-wide variables */
	size_t n_envs;
	const struct ts_kv *metadata; /* labels */
	size_t n_metadata;
	long long timeout_ms;  /* the sandbox's timeout (idle TTL); < 0: the default, 0: none */
	bool timeout_absolute; /* the timeout counts from creation, not from the last use */
	const char *name;      /* local: a name for the CLI (NULL: none) */
	const char *workspace; /* local: a host directory (NULL: its own) */
	const char *policy_file;
	const char *user; /* local: "root" to run as root by default */
	bool with_root;	  /* local: a root inside (E2B's templates have one) while processes
			   * run as `user` by default: subordinate ids for an ordinary user */
	/* local: a password-less `sudo` inside that asks init to run a command as root (E2B's
	 * templates give `user` one; serve asks for it for `base`). Needs a root in the
	 * sandbox: subordinate ids for an ordinary user (else a warning, and sudo is off) */
	bool sudo;
	/* local: protected patterns beyond the policy's (the agent's own), enforced by the
	 * kernel as the policy's are (NULL-terminated; NULL: none) */
	char *const *protected_patterns;
	unsigned long long memory_bytes, pids;
	double cpus;
	pid_t owner_pid; /* local: stopped when this process ends (0: none) */
	/* local: egress through pasta or slirp4netns, never to private ranges (as policy
	 * `network: true`); recorded, so every start of the sandbox has it */
	bool network;
	/* local: `network.allow` entries beyond the policy's (address prefixes, or host names
	 * and `*.suffix` patterns for the name proxy; NULL-terminated, NULL: none); they mean
	 * network, and are recorded as it is */
	char *const *net_allow;
};

enum ts_sb_state {
	TS_SB_RUNNING,
	TS_SB_STOPPED, /* local: stopped, or its init died; started again on use */
	TS_SB_PAUSED,
};

struct ts_sb_info {
	char id[64];
	char name[128];
	char template_id[256];
	enum ts_sb_state state;
	long long created_ms, started_ms, last_activity_ms, end_at_ms; /* end_at 0: none */
	long long timeout_ms;
	bool timeout_absolute;
	char **metadata; /* "k=v", NULL-terminated */
	size_t n_metadata;
	pid_t init_pid; /* local */
	uint64_t idle_ms, attached;
	char *workspace; /* local: the host directory bound at /home/user */
	char *details;	 /* local: every field of the record, as a JSON object (text) */
};
void ts_sb_info_clear(struct ts_sb_info *i);

struct ts_sb_list_opts {
	const struct ts_kv *metadata; /* every pair must match */
	size_t n_metadata;
	bool running, stopped, paused; /* none set: all */
	unsigned limit;		       /* 0: no limit */
	bool live;		/* local: ask each running init its idle time (one HELLO each) */
	const char *next_token; /* from the previous page */
};

int ts_sb_create(struct ts_backend *b, const struct ts_sb_create_opts *o, struct ts_sb **ret,
		 struct ts_error *err);
/* Connect to a sandbox by id (or, local, a name or id prefix); a stopped one is started.
 * timeout_ms >= 0 extends (never shortens) its deadline as E2B's connect does. */
int ts_sb_connect(struct ts_backend *b, const char *id, long long timeout_ms, struct ts_sb **ret,
		  struct ts_error *err);
/* A handle without starting anything (inspect, stop, remove); -ENOENT when unknown. */
int ts_sb_lookup(struct ts_backend *b, const char *id, struct ts_sb **ret, struct ts_error *err);
int ts_sb_kill(struct ts_backend *b, const char *id, struct ts_error *err);
/* A page of sandboxes (newest first); *next_token (free) is NULL on the last page. */
int ts_sb_list(struct ts_backend *b, const struct ts_sb_list_opts *o, struct ts_sb_info **ret,
	       size_t *n, char **next_token, struct ts_error *err);
void ts_sb_infos_free(struct ts_sb_info *v, size_t n);

const char *ts_sb_id(const struct ts_sb *sb);
int ts_sb_info(struct ts_sb *sb, struct ts_sb_info *ret, struct ts_error *err);
/* The longest timeout a sandbox may be given (ten years): deadlines stay far from overflow. */
#define TS_SB_TIMEOUT_MAX_MS (10LL * 366 * 86400 * 1000)

/* Told what a removal kept or could not remove (callers print it, the backend never). */
typedef void (*ts_be_warn_fn)(void *userdata, const char *msg);

#define TS_SB_REMOVE_FORCE (1U << 0) /* stop a running sandbox first (else -EBUSY) */
#define TS_SB_REMOVE_PURGE (1U << 1) /* local: also its upper layer and own workspace */
/*
 * Remove the sandbox (E2B: kill): its record and the runtime files made for it; never a
 * workspace the user gave. The handle must still be closed. -EBUSY when it runs and
 * TS_SB_REMOVE_FORCE is not given; warn (may be NULL) hears what was kept.
 */
int ts_sb_remove(struct ts_sb *sb, unsigned flags, ts_be_warn_fn warn, void *userdata,
		 struct ts_error *err);

/* What `reap` did, or would do, to one sandbox. */
struct ts_reap_action {
	const char *id, *name;	    /* name "" when none */
	const char *reason;	    /* "idle", "absolute", "owner" */
	const char *detail;	    /* "idle 31m > ttl 30m" */
	long long ttl_ms;	    /* its timeout */
	long long amount_ms;	    /* the idle time or the age past it */
	pid_t owner_pid;	    /* "owner": the process that is gone */
	bool stopped;		    /* done (not with dry_run) */
	const struct ts_error *err; /* why it could not be stopped, or NULL */
};
typedef void (*ts_reap_fn)(void *userdata, const struct ts_reap_action *a);

/*
 * Local only (E2B ends sandboxes itself, -EOPNOTSUPP): stop every sandbox idle past its
 * timeout, past an absolute one, or whose owner process is gone, and remove what a killed
 * one-shot run left behind. Never deletes a record or a workspace. fn hears each action;
 * with dry_run nothing is stopped. *failed counts the stops that failed; stop_early is
 * polled between sandboxes (may be NULL). 0, or -errno when the records cannot be read.
 */
int ts_backend_reap(struct ts_backend *b, bool dry_run, bool (*stop_early)(void), ts_reap_fn fn,
		    void *userdata, unsigned *failed, struct ts_error *err);

/* The new deadline is now + ms (shorter or longer); 0: none; -EINVAL past the maximum. */
int ts_sb_set_timeout(struct ts_sb *sb, long long ms, struct ts_error *err);
/*
 * Hand a started sandbox out as if created now (serve's warm pool): its labels become
 * o->metadata (all of them replaced), its created, started and last-use times now, its
 * timeout o->timeout_ms (0: none, < 0: a create's default) counted as o->timeout_absolute
 * says, and o->envs (each with a value) its sandbox-wide variables from now on, as a
 * create with them would have had them (local: init's SETENV, ctl.h, and the record's
 * spec, so that a restart keeps them). Nothing else of o is looked at: the caller makes
 * sure the sandbox was built as o would build it, without envs. -EINVAL for a bad label,
 * env or timeout (the sandbox unchanged), -ESRCH when it does not run, -EOPNOTSUPP on a
 * backend without it or an init without SETENV.
 */
int ts_sb_reissue(struct ts_sb *sb, const struct ts_sb_create_opts *o, struct ts_error *err);
/*
 * Snapshots (E2B's createSnapshot, listSnapshots, deleteSnapshot; local: snapshot.h): a
 * copy of the sandbox's file system, restorable by ts_sb_create with template_id = its id
 * or one of its names. -EOPNOTSUPP on a backend without them.
 */
#define TS_SNAP_INFO_NAMES 16
struct ts_snap_info {
	char id[64];
	char source[64]; /* the sandbox it was taken of */
	char names[TS_SNAP_INFO_NAMES][64];
	size_t n_names;
	long long created_ms;
	unsigned long long size; /* bytes (local; 0 where unknown) */
};
struct ts_snap_create_opts {
	const char *name;	      /* NULL: none */
	unsigned long long max_bytes; /* 0: the backend's default */
};
/* Take a snapshot (the sandbox is paused while it is copied). */
int ts_sb_snapshot(struct ts_sb *sb, const struct ts_snap_create_opts *o, struct ts_snap_info *ret,
		   struct ts_error *err);
/* Every snapshot, oldest first; free with free(). */
int ts_backend_snapshots(struct ts_backend *b, struct ts_snap_info **ret, size_t *n,
			 struct ts_error *err);
/* Delete by id or name: -ENOENT when there is none. */
int ts_backend_snapshot_delete(struct ts_backend *b, const char *ref, struct ts_error *err);

/* local: start a stopped sandbox / stop a running one (processes end, files stay). */
int ts_sb_start(struct ts_sb *sb, struct ts_error *err);
int ts_sb_stop(struct ts_sb *sb, struct ts_error *err);
/*
 * E2B's pause: every process of the sandbox stops where it is (pids, memory, pipes,
 * ptys and files stay); its state is then TS_SB_PAUSED and it starts no process and
 * serves no file operation (-EHOSTDOWN: TS_BE_UNAVAILABLE) until resumed. Resume
 * continues them. -EALREADY (TS_BE_ALREADY_EXISTS, E2B's 409) when it is paused already
 * (pause) or not paused (resume), -ENOTCONN when it is stopped, -EOPNOTSUPP on a backend
 * that cannot. local: init stops every process of its pid namespace (SIGSTOP) and
 * continues them (SIGCONT); a stop or restart ends the pause.
 */
int ts_sb_pause(struct ts_sb *sb, struct ts_error *err);
int ts_sb_resume(struct ts_sb *sb, struct ts_error *err);
/*
 * E2B's isRunning: does the sandbox answer? E2B: envd's GET /health (2xx: yes; 502, what
 * E2B's proxy answers once the sandbox is paused, killed or past its deadline: no);
 * local: its init runs and is not paused. 0 with *running, or -errno only when that
 * cannot be told (E2B: envd unreachable, -ECONNREFUSED: TS_BE_UNAVAILABLE; another
 * status). As the SDK, nothing probes a sandbox before its first use.
 */
int ts_sb_is_running(struct ts_sb *sb, bool *running, struct ts_error *err);

/* One sample of E2B's SandboxMetric. */
struct ts_sb_metric {
	long long ts_ms; /* when it was taken (CLOCK_REALTIME ms) */
	unsigned cpu_count;
	double cpu_pct; /* of cpu_count CPUs */
	/* bytes */
	uint64_t mem_used, mem_total, mem_cache, disk_used, disk_total;
};
/*
 * E2B's getMetrics of sandbox id: the samples taken from start_ms to end_ms (CLOCK_REALTIME
 * ms, 0: no bound), oldest first; free *ret with free(). E2B (and serve) keep one every
 * few seconds while it runs, its API taking the window in whole seconds; local keeps
 * none: one sample measured now (CPU averaged since its init started) when it runs and
 * now is in the window, else none. -ENOENT (TS_BE_NOT_FOUND) for an unknown id.
 */
int ts_sb_metrics(struct ts_backend *b, const char *id, long long start_ms, long long end_ms,
		  struct ts_sb_metric **ret, size_t *n, struct ts_error *err);
/* May a process run as user here (E2B: always; local: where the id map has that user)?
 * For a stopped sandbox, decided by what its next start would give: nothing is started. */
int ts_sb_check_user(struct ts_sb *sb, const char *user, struct ts_error *err);
void ts_sb_close(struct ts_sb *sb); /* the handle only: the sandbox runs on */
static inline void ts_sb_closep(struct ts_sb **sb)
{
	ts_sb_close(*sb);
}

/* --- commands (E2B's commands and pty) ----------------------------------------------- */

struct ts_cmd_opts {
	char **argv;		  /* the program and its arguments (E2B: cmd, args) */
	const struct ts_kv *envs; /* for this process only */
	size_t n_envs;
	const char *cwd;	       /* NULL: the user's home; missing: -EINVAL, nothing runs */
	const char *user;	       /* NULL: the sandbox's default; "root" or "user" */
	const char *tag;	       /* shown in listings; a process may be named by it */
	unsigned long long timeout_ms; /* killed at the deadline (TS_CMD_END timed_out) */
	bool stdin_open;	       /* stdin a pipe (ts_cmd_send_stdin), else /dev/null */
	bool pty;		       /* a pty of cols x rows (default 80 x 24) */
	unsigned cols, rows;
	bool log;    /* local: also to the sandbox's log of background processes */
	bool detach; /* start it and return: no stream (ts_cmd_start gives no handle) */
};

enum ts_cmd_event_type {
	TS_CMD_EV_START = 1, /* pid */
	TS_CMD_EV_STDOUT,    /* data */
	TS_CMD_EV_STDERR,
	TS_CMD_EV_PTY,
	TS_CMD_EV_END, /* exit_code (-1 after a signal), signal, timed_out */
};

struct ts_cmd_event {
	enum ts_cmd_event_type type;
	pid_t pid;
	const uint8_t *data; /* valid until the next step */
	size_t len;
	uint64_t offset; /* of data in its stream: a gap after attaching says what was lost */
	int exit_code, signal;
	bool timed_out;
};

/* Start a process; with o->detach *ret stays NULL and *ret_pid (may be NULL) is set. */
int ts_cmd_start(struct ts_sb *sb, const struct ts_cmd_opts *o, struct ts_cmd **ret, pid_t *ret_pid,
		 uint64_t *ret_proc, struct ts_error *err);
/* Select a process by pid (local also: its process id, or a tag). */
struct ts_proc_sel {
	pid_t pid;
	uint64_t proc;
	const char *tag;
	bool live; /* ts_cmd_connect: no backlog, only the output from now on (E2B's Connect) */
};

/* Attach to a running (or recently ended) process: its backlog (unless p->live), then live. */
int ts_cmd_connect(struct ts_sb *sb, const struct ts_proc_sel *p, struct ts_cmd **ret,
		   struct ts_error *err);
int ts_cmd_fd(const struct ts_cmd *c);
short ts_cmd_events(const struct ts_cmd *c);
/* One event, or 0 when none is ready (poll ts_cmd_fd for ts_cmd_events: it is readable
 * whenever a step would have something), or -errno. After END: -EPIPE. */
int ts_cmd_step(struct ts_cmd *c, struct ts_cmd_event *ev, struct ts_error *err);
pid_t ts_cmd_pid(const struct ts_cmd *c);
/* Stop streaming; the process runs on (E2B's disconnect). */
void ts_cmd_close(struct ts_cmd *c);
static inline void ts_cmd_closep(struct ts_cmd **c)
{
	ts_cmd_close(*c);
}

struct ts_proc_entry {
	pid_t pid;
	uint64_t proc; /* local: the process id `logs` and `kill` name */
	bool running, timed_out;
	int status; /* wait status once ended */
	char **argv, **envs;
	char *cwd, *tag, *user;
	bool pty, background;
	long long started_ms, ended_ms;
};
int ts_cmd_list(struct ts_sb *sb, struct ts_proc_entry **ret, size_t *n, struct ts_error *err);

/*
 * The stored output of a background process (started with o->log), from offset: up to
 * len bytes into buf, *got 0 at its current end. Kept across restarts until the sandbox
 * is removed. -ENOENT when the process has no log. Local only (-EOPNOTSUPP elsewhere).
 */
int ts_cmd_log_read(struct ts_sb *sb, uint64_t proc, uint64_t offset, void *buf, size_t len,
		    size_t *got, struct ts_error *err);
void ts_proc_entries_free(struct ts_proc_entry *v, size_t n);

int ts_cmd_signal(struct ts_sb *sb, const struct ts_proc_sel *p, int sig, struct ts_error *err);
int ts_cmd_send_stdin(struct ts_sb *sb, const struct ts_proc_sel *p, const void *data, size_t len,
		      struct ts_error *err);
int ts_cmd_close_stdin(struct ts_sb *sb, const struct ts_proc_sel *p, struct ts_error *err);
int ts_cmd_resize(struct ts_sb *sb, const struct ts_proc_sel *p, unsigned cols, unsigned rows,
		  struct ts_error *err);
/* The same through an open stream (its own connection: no extra round trip to connect). */
int ts_cmd_input(struct ts_cmd *c, const void *data, size_t len, struct ts_error *err);
int ts_cmd_input_close(struct ts_cmd *c, struct ts_error *err);
int ts_cmd_signal_self(struct ts_cmd *c, int sig, struct ts_error *err);
int ts_cmd_resize_self(struct ts_cmd *c, unsigned cols, unsigned rows, struct ts_error *err);
/* Input accepted but not yet written into the process's stdin (bytes). */
size_t ts_cmd_input_pending(const struct ts_cmd *c);

/* --- files --------------------------------------------------------------------------- */

enum ts_be_file_type {
	TS_BE_FILE = 1,
	TS_BE_DIR,
	TS_BE_SYMLINK,
	TS_BE_OTHER,
};

struct ts_be_entry {
	char *name; /* the last component */
	char *path; /* absolute, inside the sandbox */
	enum ts_be_file_type type;
	unsigned mode; /* permission bits */
	uint64_t size;
	uint64_t mtime_ms;
	uint32_t uid, gid;
	char *symlink_target; /* NULL unless a symlink */
	/* E2B's metadata: "key=value" of its user.e2b.<key> xattrs, NULL-terminated; NULL
	 * when none (or on a backend that keeps none) */
	char **metadata;
};
void ts_be_entry_clear(struct ts_be_entry *e);
void ts_be_entries_free(struct ts_be_entry *v, size_t n);

/* Paths are absolute, or relative to the user's home; user NULL is the default. */
int ts_file_stat(struct ts_sb *sb, const char *path, const char *user, struct ts_be_entry *ret,
		 struct ts_error *err);
int ts_file_exists(struct ts_sb *sb, const char *path, const char *user, bool *ret,
		   struct ts_error *err);
/* Entries below path up to depth (>= 1) levels, the root excluded. */
int ts_file_list(struct ts_sb *sb, const char *path, unsigned depth, const char *user,
		 struct ts_be_entry **ret, size_t *n, struct ts_error *err);
/* mkdir -p; *created false (and 0) when the directory was there already. The new last
 * directory gets mode (ts_file_mkdir: 0755), its parents 0755. */
int ts_file_mkdir(struct ts_sb *sb, const char *path, const char *user, bool *created,
		  struct ts_error *err);
int ts_file_mkdir_mode(struct ts_sb *sb, const char *path, const char *user, unsigned mode,
		       bool *created, struct ts_error *err);
/* rm -rf; a missing path is not an error. */
int ts_file_remove(struct ts_sb *sb, const char *path, const char *user, struct ts_error *err);
/*
 * Replace the metadata of a file or directory (not followed): its user.e2b.* xattrs
 * become kv[0..n) (n 0: none). At most 64 keys, keys of 1 to 246 bytes without `=`,
 * values of at most 4 KiB (-EINVAL / -E2BIG, nothing changed); -EOPNOTSUPP where the
 * backend or the file system keeps no metadata.
 */
int ts_file_set_metadata(struct ts_sb *sb, const char *path, const char *user,
			 const struct ts_kv *kv, size_t n, struct ts_error *err);
/* The destination's parents are created. */
int ts_file_rename(struct ts_sb *sb, const char *from, const char *to, const char *user,
		   struct ts_error *err);
/* Whole files, through a transfer (below). mode < 0: 0644 for a new file. */
int ts_file_read(struct ts_sb *sb, const char *path, const char *user, uint8_t **ret, size_t *len,
		 size_t max, struct ts_error *err);
int ts_file_write(struct ts_sb *sb, const char *path, const char *user, const void *data,
		  size_t len, int mode, struct ts_error *err);

/* One file of ts_file_write_many. */
struct ts_file_data {
	const char *path;
	const void *data;
	size_t len;
	int mode; /* < 0: 0644 for a new file, an existing one's own */
};
/*
 * E2B's files.write of several files: each written atomically, in order. Stops at the
 * first failure: 0, or -errno with err naming that file; *done (may be NULL) says how
 * many were written (at least: e2b sends them all in one multipart request, as the SDK
 * does, and says 0 when envd refused it). A path given twice is -EINVAL, nothing
 * written (envd's 400).
 */
int ts_file_write_many(struct ts_sb *sb, const struct ts_file_data *files, size_t n,
		       const char *user, size_t *done, struct ts_error *err);

/*
 * A transfer: a read (ts_xfer_read_start; step yields data until done) or a write
 * (ts_xfer_write_start; ts_xfer_push queues bytes, ts_xfer_finish ends them, step
 * sends and says when the sandbox has the whole file). Writes are atomic: the file
 * appears only complete. At most one is in flight per handle.
 */
int ts_xfer_read_start(struct ts_sb *sb, const char *path, const char *user, struct ts_xfer **ret,
		       struct ts_error *err);
int ts_xfer_write_start(struct ts_sb *sb, const char *path, const char *user, int mode,
			struct ts_xfer **ret, struct ts_error *err);
int ts_xfer_fd(const struct ts_xfer *x);
/* What to poll ts_xfer_fd for before the next step (or the push it refused): ready once
 * there is something to do, also when that step sent all that was queued. */
short ts_xfer_events(const struct ts_xfer *x);
/* Read: 1 with data, 0 not now, 2 done (the whole file came), -errno. Write: 0 not done,
 * 2 done, -errno. */
int ts_xfer_step(struct ts_xfer *x, const uint8_t **data, size_t *len, struct ts_error *err);
/* Write: queue len bytes (-EAGAIN when more than a chunk is waiting: step first). */
int ts_xfer_push(struct ts_xfer *x, const void *data, size_t len, struct ts_error *err);
int ts_xfer_finish(struct ts_xfer *x, struct ts_error *err);
void ts_xfer_close(struct ts_xfer *x);

enum ts_watch_op {
	TS_WATCH_CREATE = 1,
	TS_WATCH_WRITE,
	TS_WATCH_REMOVE,
	TS_WATCH_RENAME,
	TS_WATCH_CHMOD,
};

struct ts_watch_event {
	enum ts_watch_op op;
	char name[4096]; /* relative to the watched directory */
};

int ts_watch_start(struct ts_sb *sb, const char *path, bool recursive, const char *user,
		   struct ts_watch **ret, struct ts_error *err);
int ts_watch_fd(const struct ts_watch *w);
/* 1 with an event, 0 none now, -errno. */
int ts_watch_step(struct ts_watch *w, struct ts_watch_event *ev, struct ts_error *err);
void ts_watch_close(struct ts_watch *w);

/* --- blocking helpers, built on the handles ----------------------------------------- */

struct ts_run_result {
	int exit_code; /* -1 after a signal */
	int signal;
	bool timed_out;
	uint8_t *out, *errout; /* with capture: what the command wrote (NUL-terminated) */
	size_t out_len, err_len;
};
void ts_run_result_clear(struct ts_run_result *r);

/* Called with each piece of output (may be NULL). */
typedef void (*ts_be_output_fn)(void *userdata, enum ts_cmd_event_type stream, const uint8_t *data,
				size_t len);

/*
 * Start and wait for the end (E2B's commands.run without background): output goes to
 * on_output and, with capture, into the result (bounded by capture_max each). 0 with
 * the result whatever the exit code, or -errno.
 */
int ts_be_run(struct ts_sb *sb, const struct ts_cmd_opts *o, ts_be_output_fn on_output,
	      void *userdata, bool capture, size_t capture_max, struct ts_run_result *ret,
	      struct ts_error *err);

/* Wait for one event of c, up to timeout_ms (-1: none). 0 with *ev, -ETIMEDOUT, -errno. */
int ts_cmd_wait_event(struct ts_cmd *c, struct ts_cmd_event *ev, int timeout_ms,
		      struct ts_error *err);
