/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The conformance suite of the backend interface (src/backend/backend.h): one list of
 * scenarios, as data (scenarios.c), executed by an engine (engine*.c) that calls nothing
 * but backend.h, for a runner that knows which backend it opened and what it can do
 * (runner-local.c today; the e2b runner of the next issue runs the same list against
 * `toren-sandbox serve`).
 *
 * A scenario is a list of steps. Each step is one interface call (or a few, for the
 * streaming ones) and what it must give: the class of its error by ts_be_code() (never
 * a message), and for a success the values that matter (exit status, output, file
 * contents, listings, events). Steps name sandboxes, process streams, pids and watches by
 * slot (0..CONF_SLOTS-1), so that nothing in the list depends on ids a backend invents.
 * Strings may hold ${RUN} (a token unique to this run: metadata that no other run
 * matches), ${ID:n} (the id of sandbox slot n), ${PID:n} (the pid in pid slot n) and
 * ${TOOLID:n} (the id a tool step gave, a background bash's: C_TOOL with .pid = n and
 * .detach).
 *
 * A step that fails ends its scenario (later steps build on it); the engine then kills
 * every sandbox the scenario created. One TAP line per scenario; a scenario that needs a
 * capability its runner lacks is a TAP skip naming it, never a pass.
 */
#include <stdbool.h>
#include <stddef.h>

#include "backend.h"

#define CONF_SLOTS 8

/* What a backend can do beyond E2B's common ground (a runner sets what it has). */
enum conf_cap {
	CONF_CAP_BACKLOG = 1U << 0,    /* an attach first gets output from before it attached */
	CONF_CAP_STOP = 1U << 1,       /* ts_sb_stop/ts_sb_start keep files; state "stopped" */
	CONF_CAP_PROC_ID = 1U << 2,    /* processes are also named by their process id */
	CONF_CAP_PROC_LOG = 1U << 3,   /* ts_cmd_log_read */
	CONF_CAP_NO_TIMEOUT = 1U << 4, /* a timeout of 0 is "none" */
	CONF_CAP_ROOT = 1U << 5,       /* processes may run as root */
	CONF_CAP_AUTH = 1U << 6,       /* there are credentials: r->open_unauthenticated */
	CONF_CAP_MODES = 1U << 7,      /* files and directories are made with a given mode */
	CONF_CAP_PROC_USER = 1U << 8,  /* process listings say which user a process runs as */
	CONF_CAP_PAUSE = 1U << 9,      /* ts_sb_pause/ts_sb_resume keep processes; "paused" */
	CONF_CAP_SNAPSHOT = 1U << 10,  /* ts_sb_snapshot of this runner's sandboxes */
};

enum conf_op {
	C_END = 0, /* ends a step list */
	/* sandboxes */
	C_SB_CREATE,	  /* sb <- ts_sb_create(template, envs, meta, ms) */
	C_SB_CONNECT,	  /* sb <- ts_sb_connect(id or ${ID:sb}, ms): the old handle closed */
	C_SB_LOOKUP,	  /* sb <- ts_sb_lookup(id or ${ID:sb}) */
	C_SB_KILL,	  /* ts_sb_kill(id or ${ID:sb}) */
	C_SB_LIST,	  /* every page of ts_sb_list(meta, states, limit): expect.sbs in order */
	C_SB_INFO,	  /* ts_sb_info(sb): state, metadata, template, deadline */
	C_SB_SET_TIMEOUT, /* ts_sb_set_timeout(sb, ms) */
	C_SB_STOP,
	C_SB_START,
	C_SB_CHECK_USER, /* ts_sb_check_user(sb, user) */
	C_SB_PAUSE,	 /* ts_sb_pause(sb) (CONF_CAP_PAUSE) */
	C_SB_RESUME,	 /* ts_sb_resume(sb) */
	C_SB_EXPIRE,	 /* the runner acts on expired timeouts (local: `toren-sandbox reap`) */
	C_SB_CLOSE,	 /* ts_sb_close(sb): the handle only */
	C_SB_RUNNING,	 /* ts_sb_is_running(sb): expect.yes */
	/* ts_sb_metrics(id or ${ID:sb}): over all time, or with ms > 0 over [now - 2 ms,
	 * now - ms]. expect.yes: within CONF_WAIT_MS a sample comes, every one of them
	 * plausible (its time in the sandbox's life, CPUs, memory and disk); absent: none */
	C_SB_METRICS,
	C_SNAPSHOT,    /* snapshot slot h <- ts_sb_snapshot(sb, name text) (${SNAP:h}) */
	C_SNAP_DELETE, /* ts_backend_snapshot_delete(id, expanded) */
	/* commands */
	C_RUN,		  /* ts_be_run: the whole command, output captured */
	C_START,	  /* h <- ts_cmd_start, pid slot <- its pid (detach: no stream) */
	C_CONNECT,	  /* h <- ts_cmd_connect(selector) */
	C_WAIT_OUTPUT,	  /* h: events until stream `stream` holds expect.out_has */
	C_WAIT_END,	  /* h: events until END (ts_cmd_wait_event); status and output */
	C_DETACH,	  /* ts_cmd_close(h): the process runs on */
	C_STDIN,	  /* ts_cmd_send_stdin(selector, text) */
	C_STDIN_CLOSE,	  /* ts_cmd_close_stdin(selector) */
	C_INPUT,	  /* ts_cmd_input(h, text) */
	C_INPUT_CLOSE,	  /* ts_cmd_input_close(h) */
	C_SIGNAL,	  /* ts_cmd_signal(selector, sig) */
	C_SIGNAL_SELF,	  /* ts_cmd_signal_self(h, sig) */
	C_RESIZE,	  /* ts_cmd_resize(selector, cols, rows) */
	C_RESIZE_SELF,	  /* ts_cmd_resize_self(h, cols, rows) */
	C_PROCS,	  /* ts_cmd_list: the entry of pid slot `pid` (or none: expect.absent) */
	C_LOG_READ,	  /* ts_cmd_log_read of the process in pid slot `pid`: expect.data */
	C_INPUT_PENDING0, /* ts_cmd_input_pending(h) is 0 */
	/* files */
	C_WRITE,	/* ts_file_write (stream: ts_xfer_* in small pieces) */
	C_WRITE_MANY,	/* ts_file_write_many: path gets text, path2 the data kind */
	C_READ,		/* ts_file_read (stream: ts_xfer_*): expect.data / expect.out */
	C_XFER_ABANDON, /* a write started, data pushed, closed before finish */
	C_STAT,		/* ts_file_stat: expect.type, size, mode */
	C_EXISTS,	/* ts_file_exists: expect.yes */
	C_LIST,		/* ts_file_list(path, depth): expect.names, exactly */
	C_MKDIR,	/* ts_file_mkdir: expect.yes is "created" */
	C_REMOVE,	/* ts_file_remove */
	C_RENAME,	/* ts_file_rename(path, path2) */
	C_WATCH,	/* w <- ts_watch_start(path, recursive) */
	C_WATCH_EXPECT, /* w: events until (expect.watch_op, expect.name) */
	C_WATCH_CLOSE,
	/* errors and time */
	C_WAIT_QUIET,	   /* h: ts_cmd_wait_event for ms while nothing comes: expect.code */
	C_OPEN,		   /* ts_backend_open(text): expect.code; `none` refuses everything */
	C_UNAUTHENTICATED, /* list through r->open_unauthenticated: expect.code */
	C_CODE,	 /* ts_be_code of errno err_no is expect.code, ts_be_code_name expect.out */
	C_SLEEP, /* ms: lets a deadline pass; never a measurement */
	/* the agent toolkit, through the runner (src/runner/runner.h) without a run */
	C_TOOL, /* tool `tool` with the JSON arguments `text` (expanded); limit: the tool-set
		 * version (0: the newest); expect.tool_error, out, out_has, out_lacks (text);
		 * detach: keep the result's data.id as ${TOOLID:pid} */
};

/* Content, generated the same way on both sides of a comparison. */
enum conf_data {
	D_NONE = 0,
	D_TEXT,	 /* the step's text (expanded) */
	D_EMPTY, /* zero bytes */
	D_BYTES, /* size bytes: every value 0..255 in each 256, shifted by one per block */
	D_SEQ8,	 /* size lines of `seq -f %07g 0 size-1`: 8 bytes each, every one unique */
};

/* How a process is named (C_CONNECT, C_STDIN, C_SIGNAL, C_RESIZE). */
enum conf_sel {
	SEL_PID = 0,	 /* the pid in pid slot `pid` */
	SEL_TAG,	 /* the tag `tag` */
	SEL_PROC,	 /* the process id in pid slot `pid` (CONF_CAP_PROC_ID) */
	SEL_UNKNOWN_PID, /* a pid nothing has */
};

/* A sandbox's state as C_SB_INFO expects it. */
enum conf_state {
	ST_ANY = 0,
	ST_RUNNING,
	ST_STOPPED,
	ST_PAUSED,
};

struct conf_expect {
	enum ts_be_code code; /* the class of the result (TS_BE_OK: success) */
	bool any_error;	      /* some error: E2B leaves the class open */
	/* C_RUN, C_WAIT_END: exactly this end; with code TS_BE_COMMAND_EXIT, a non-zero exit
	 * (E2B's CommandExitError) of exit_code */
	int exit_code, signal;
	bool timed_out;
	const char *out, *err;			   /* the stream exactly (expanded) */
	const char *out_has, *out_lacks, *err_has; /* substrings (expanded) */
	enum conf_data data; /* stdout, a pty's output or a file: exactly this */
	size_t size;
	bool whole; /* C_WAIT_END with data: from offset 0 (else a suffix, offsets checked) */
	bool yes;   /* C_EXISTS, C_MKDIR "created", C_PROCS "running" */
	bool absent;
	const char *const *names; /* C_LIST: relative paths, a directory with a trailing "/" */
	const int *sbs;		  /* C_SB_LIST: sandbox slots in the order listed, -1 ends */
	enum conf_state state;
	const char *const *meta; /* C_SB_INFO: "k=v" each present */
	const char *template_id;
	long long end_in_ms; /* C_SB_INFO: end_at is about now + this; -1: no deadline */
	bool end_same;	     /* C_SB_INFO: end_at exactly as the slot's last C_SB_INFO saw it */
	enum ts_be_file_type type;
	unsigned mode;
	enum ts_watch_op watch_op;
	const char *name;
	const char *const *argv; /* C_PROCS */
	const char *const *envs; /* C_PROCS: "K=V" each present */
	const char *cwd, *user, *tag;
	const char *tool_error; /* C_TOOL: a tool error with this code (NULL: success) */
};

struct conf_step {
	enum conf_op op;
	int sb, h, pid; /* slots */
	const char *id; /* C_SB_CONNECT/LOOKUP/KILL: this id rather than slot sb's */
	const char *const *argv, *const *envs, *const *meta; /* "K=V", "k=v" */
	const char *template_id, *cwd, *user, *tag, *path, *path2, *text;
	enum conf_data data;
	size_t size;
	/* C_SB_CREATE: the timeout (0: the default, -1: none); C_SB_CONNECT: extend to
	 * (0: leave); C_SB_SET_TIMEOUT, C_RUN, C_START: the timeout; C_SLEEP; C_WAIT_*: how
	 * long */
	long long ms;
	unsigned cols, rows, depth, limit;
	int sig, err_no;
	enum conf_sel sel;
	enum ts_cmd_event_type stream; /* C_WAIT_OUTPUT, C_WAIT_END: the stream (0: stdout) */
	int mode; /* C_WRITE: the file's mode, C_MKDIR: the directory's (0: the default) */
	bool log; /* C_START: local's log of a background process (CONF_CAP_PROC_LOG) */
	bool stdin_open, pty, recursive, stream_io, running, stopped, paused, detach;
	const char *token; /* C_SB_LIST: a page token of our own (a bad one) */
	const char *tool;  /* C_TOOL */
	struct conf_expect expect;
};

struct conf_scenario {
	const char *name;
	const char *what; /* one line: what it shows */
	unsigned needs;	  /* capabilities it needs (enum conf_cap) */
	unsigned lacks;	  /* capabilities it must not have (the other side of a choice) */
	const struct conf_step *steps;
};

extern const struct conf_scenario conf_scenarios[];
extern const size_t conf_n_scenarios;

struct conf_runner {
	const char *name; /* for diagnostics */
	struct ts_backend *b;
	unsigned caps;
	/* Act on deadlines that have passed (C_SB_EXPIRE). 0 or -errno with err filled. */
	int (*expire)(struct conf_runner *r, struct ts_error *err);
	/* The same backend with wrong credentials (CONF_CAP_AUTH). */
	int (*open_unauthenticated)(struct conf_runner *r, struct ts_backend **ret,
				    struct ts_error *err);
	void *userdata;
};

/* The name of a capability bit. */
const char *conf_cap_name(unsigned cap);

/*
 * Run every scenario whose name matches one of filters (fnmatch; none: all), one TAP line
 * each, then the plan. Returns 0 when none failed.
 */
int conf_run(struct conf_runner *r, char **filters, size_t n_filters);
