/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The control protocol between the host and a sandbox's init (toren-sandbox-init
 * --server), over a SOCK_STREAM unix socket whose listening end init holds as fd 3.
 *
 * A message is a 12-byte header {u32 payload length, u16 type, u16 flags, u32 request
 * id} in host byte order, then the payload: a sequence of TLV fields {u16 tag, u32
 * length, bytes}. File descriptors travel as SCM_RIGHTS on the header's first byte, at
 * most TS_CTL_MAX_FDS per message. Every size is bounded; a malformed message is an
 * error for that connection only. Replies echo the request id.
 *
 * Both sides parse what the other sends, and the host side must treat init's messages as
 * untrusted input (init runs inside the sandbox): everything here is bounds-checked and
 * fuzzed (tests/fuzz/fuzz-ctl.c).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define TS_CTL_VERSION 5       /* the newest this side speaks */
#define TS_CTL_VERSION_MIN 3   /* the oldest (an init started by an older build) */
#define TS_CTL_SETENV_MAX 1024 /* variables in one SETENV */
#define TS_CTL_HDR_LEN 12
#define TS_CTL_MAX_PAYLOAD (1U << 20) /* 1 MiB: file data moves in chunks below this */
#define TS_CTL_CHUNK (256U * 1024U)   /* file data per message */
#define TS_CTL_MAX_FDS 3

enum ts_ctl_type {
	TS_CTL_HELLO = 1,  /* c->s {VERSION, VERSION_MAX}; s->c {VERSION, PID, IDLE_MS, ATTACHED} */
	TS_CTL_OK,	   /* s->c: the request succeeded (may carry fields) */
	TS_CTL_ERROR,	   /* s->c {CODE (positive errno), MSG} */
	TS_CTL_SPAWN,	   /* c->s {ARG..., ENV..., CWD, FLAGS} + fds; s->c SPAWNED */
	TS_CTL_SPAWNED,	   /* s->c {PROC, PID} + the pty master fd with TS_SPAWN_PTY */
	TS_CTL_WAIT,	   /* c->s {PROC}: reply EXITED when the process has exited */
	TS_CTL_EXITED,	   /* s->c {PROC, STATUS (wait status)} */
	TS_CTL_SIGNAL,	   /* c->s {PROC, SIGNAL}: to the process's whole group */
	TS_CTL_PS,	   /* c->s; s->c: one PS_ENTRY each, then END */
	TS_CTL_PS_ENTRY,   /* {PROC, PID, STATE, STATUS, FLAGS, STARTED, ENDED, ARG...} */
	TS_CTL_END,	   /* s->c: end of a multi-message reply */
	TS_CTL_SHUTDOWN,   /* c->s: end every process (TERM, grace, KILL), reply OK, exit */
	TS_CTL_FILE,	   /* c->s {OP, PATH, ...}: file operations, see TS_FILE_* */
	TS_CTL_FILE_DATA,  /* either way {DATA, OFFSET}: a chunk of a file */
	TS_CTL_FILE_ENTRY, /* s->c {PATH, TYPE, MODE, SIZE, MTIME, UID, GID, TARGET} */
	TS_CTL_FILE_EVENT, /* s->c {PATH, EVENT}: a watch event */
	/* v3: init owns every process's streams (runtime/proctab.h) */
	TS_CTL_ATTACH,	    /* c->s {selector, FLAGS}: ATTACHED, backlog, live OUTPUT, EXITED */
	TS_CTL_ATTACHED,    /* s->c {PROC, PID}: attached */
	TS_CTL_DETACH,	    /* c->s {selector}: stop streaming it to this connection; OK */
	TS_CTL_OUTPUT,	    /* s->c {PROC, STREAM, OFFSET, DATA}: output of an attached process */
	TS_CTL_INPUT,	    /* c->s {selector, DATA}: to its stdin pipe or pty; OK */
	TS_CTL_CLOSE_STDIN, /* c->s {selector}: end of its input (after what is queued); OK */
	TS_CTL_RESIZE,	    /* c->s {selector, COLS, ROWS}: its pty's window size; OK */
	TS_CTL_PAUSE,	    /* c->s: stop every process of the sandbox (SIGSTOP); OK, or
			     * ERROR EALREADY when paused */
	TS_CTL_RESUME,	    /* c->s: continue them (SIGCONT); OK, ERROR EALREADY when not */
	/* v4 */
	TS_CTL_SETENV, /* c->s {ENV...}: sandbox-wide variables from now on; OK (below) */
	/* v5 */
	TS_CTL_PAUSE_HOLD, /* c->s: PAUSE held by this connection (below); OK, ERROR EALREADY */
	TS_CTL_HOLD,	   /* c->s: hold a PAUSE made before (below); OK, ERROR EINVAL, EBUSY */
	TS_CTL_TYPE_MAX,
};

enum ts_ctl_tag {
	TS_T_VERSION = 1, /* u64 */
	TS_T_PID,	  /* u64 */
	TS_T_ARG,	  /* string, repeated in order */
	TS_T_ENV,	  /* string NAME=VALUE, repeated */
	TS_T_CWD,	  /* string */
	TS_T_FLAGS,	  /* u64 TS_SPAWN_* */
	TS_T_PROC,	  /* u64 process id given by init (1, 2, ...) */
	TS_T_STATUS,	  /* u64 wait status */
	TS_T_SIGNAL,	  /* u64 */
	TS_T_CODE,	  /* u64 positive errno */
	TS_T_MSG,	  /* string */
	TS_T_STATE,	  /* string "running" | "exited" */
	TS_T_STARTED,	  /* u64 ms since the epoch (CLOCK_REALTIME) */
	TS_T_ENDED,	  /* u64 */
	TS_T_IDLE_MS,	  /* u64 ms since the last activity (CLOCK_MONOTONIC) */
	TS_T_ATTACHED,	  /* u64 connected clients with a live attached process */
	TS_T_OP,	  /* u64 TS_FILE_* */
	TS_T_PATH,	  /* string, a path inside the sandbox */
	TS_T_PATH2,	  /* string, the second path (rename target) */
	TS_T_OFFSET,	  /* u64 */
	TS_T_LENGTH,	  /* u64 */
	TS_T_DATA,	  /* bytes */
	TS_T_TYPE,	  /* string "file" | "dir" | "symlink" | "other" */
	TS_T_MODE,	  /* u64 */
	TS_T_SIZE,	  /* u64 */
	TS_T_MTIME,	  /* u64 ms */
	TS_T_UID,	  /* u64 */
	TS_T_GID,	  /* u64 */
	TS_T_TARGET,	  /* string, symlink target */
	TS_T_DEPTH,	  /* u64 */
	TS_T_EVENT,	  /* string "create" | "write" | "remove" | "rename" | "chmod" */
	/* v3 */
	TS_T_TAG,	 /* string: a process's tag (E2B's ProcessSelector.tag) */
	TS_T_STREAM,	 /* u64 TS_STREAM_* */
	TS_T_COLS,	 /* u64 */
	TS_T_ROWS,	 /* u64 */
	TS_T_TIMEOUT_MS, /* u64: a process's deadline from its start; 0 none */
	TS_T_TIMED_OUT,	 /* u64 1: EXITED because its deadline passed (killed) */
	TS_T_XATTR,	 /* string "key=value": a user.e2b.<key> xattr (E2B's metadata), repeated */
	TS_T_PAUSED,	 /* u64 1 in HELLO: the sandbox is paused (PAUSE) */
	/* v4 */
	TS_T_VERSION_MAX, /* u64 in a client's HELLO: the newest version it speaks */
	TS_T_TAG_MAX,
};

/*
 * HELLO (versions): a client sends VERSION, the oldest version it speaks, and VERSION_MAX,
 * the newest (absent: VERSION). init answers with the newest version both speak, or ERROR
 * EPROTO when there is none; a connection then speaks the answered version. A v3 init
 * ignores VERSION_MAX (an unknown tag) and answers 3 to a client that sends VERSION 3:
 * an older sandbox keeps working with a newer host, without what v4 added.
 *
 * SETENV {ENV...} (v4, serve's warm pool: a started sandbox handed out to a create with
 * envs): each NAME=VALUE (NAME [A-Za-z_][A-Za-z0-9_]*, at most TS_CTL_SETENV_MAX) becomes
 * a sandbox-wide variable of every process started from then on, as if init had been
 * started with it: over the base and the user's HOME, USER and LOGNAME, under a SPAWN's
 * own ENV. All or nothing: a bad entry is ERROR EINVAL and nothing is set. OK.
 *
 * SPAWN {ARG..., ENV..., CWD, UID, TAG, FLAGS, TIMEOUT_MS, COLS, ROWS} (v3). init owns the
 * process's streams: stdout and stderr pipes (or one pty), stdin /dev/null, a pipe kept
 * open until CLOSE_STDIN (TS_SPAWN_STDIN), or the pty. UID: run as 0 (root) or 1000
 * (user) instead of init's own (ERROR EPERM where the sandbox has no such user). A cwd
 * that does not exist is ERROR EINVAL, a program that cannot be executed ERROR
 * ENOENT/EACCES, and nothing runs. Reply SPAWNED {PROC, PID}; with TS_SPAWN_ATTACH the
 * connection is attached from the start (as ATTACH, without the ATTACHED reply).
 *
 * Selectors of ATTACH, DETACH, INPUT, CLOSE_STDIN, RESIZE, SIGNAL, WAIT: {PROC} (init's
 * process id), {PID} (the sandbox's pid: the running process, else the latest record),
 * or {TAG} (the running process with that tag). Unknown: ERROR ESRCH.
 *
 * PAUSE / RESUME (v3, E2B's pause): init sends SIGSTOP / SIGCONT to every process of its
 * pid namespace but itself (kill(-1) from pid 1), so pids, memory, pipes and ptys stay as
 * they are, and init itself keeps answering (HELLO says PAUSED). While paused, SPAWN and
 * FILE are ERROR EHOSTDOWN (unavailable): nothing new runs in a paused sandbox, file
 * workers included. The OK of a PAUSE comes once every other process shows as stopped in
 * /proc (or a zombie), at most TS_CTL_PAUSE_SETTLE_MS after the SIGSTOP: a process in
 * the kernel stops only on its way out.
 *
 * PAUSE_HOLD (v5, a snapshot's copy): a PAUSE that belongs to the connection sending it.
 * While it is held, a RESUME from any other connection is ERROR EBUSY (the copy must not
 * be thawed under it); the holder's RESUME ends it, and so does the holder's connection
 * closing (a killed snapshot), which resumes the sandbox. A v4 init does not know it: a
 * client speaks it only where HELLO answered 5, and pauses with PAUSE otherwise.
 *
 * HOLD (a snapshot of a sandbox its user paused, where PAUSE_HOLD said EALREADY): the
 * pause made before becomes held by this connection, as PAUSE_HOLD's is (another's RESUME
 * is ERROR EBUSY), but it was not the holder's to make: when the connection closes the
 * hold ends and the sandbox stays paused. ERROR EINVAL when it is not paused (resumed in
 * between: pause it again), EBUSY when another connection holds it. An init from before
 * HOLD answers ERROR EOPNOTSUPP, as to any type it does not know: the copy then goes on
 * without a hold.
 */
#define TS_CTL_PAUSE_SETTLE_MS 2000
#define TS_SPAWN_PTY (1U << 0)	  /* a pty of COLS x ROWS (default 80 x 24) */
#define TS_SPAWN_LOG (1U << 1)	  /* output also to $ROOT/<id>/logs/<proc>.log (exec -d) */
#define TS_SPAWN_STDIN (1U << 2)  /* stdin is a pipe, written by INPUT */
#define TS_SPAWN_ATTACH (1U << 3) /* attach the spawning connection */

/* FLAGS of ATTACH (an init that does not know one ignores it) */
#define TS_ATTACH_LIVE (1U << 0) /* no backlog: only the output from now on, then EXITED */

/* TS_T_STREAM of OUTPUT */
enum ts_stream {
	TS_STREAM_STDOUT = 1,
	TS_STREAM_STDERR = 2,
	TS_STREAM_PTY = 3,
};

/* TS_T_OP of FILE */
enum ts_file_op {
	TS_FILE_READ = 1,   /* {PATH, OFFSET, LENGTH}: FILE_DATA chunks, then END */
	TS_FILE_WRITE,	    /* {PATH, MODE}, then FILE_DATA chunks, then END: atomic replace */
	TS_FILE_LIST,	    /* {PATH, DEPTH}: FILE_ENTRY each, then END */
	TS_FILE_STAT,	    /* {PATH}: one FILE_ENTRY */
	TS_FILE_MKDIR,	    /* {PATH, MODE}: mkdir -p */
	TS_FILE_REMOVE,	    /* {PATH}: recursive, never following links */
	TS_FILE_RENAME,	    /* {PATH, PATH2} */
	TS_FILE_WATCH,	    /* {PATH, DEPTH}: FILE_EVENT until the client closes */
	TS_FILE_USER,	    /* {UID}: serve this connection as uid (0 root, 1000 user); only
			   * as a connection's first request; relative paths then start in
			   * that user's home. OK, or ERROR EPERM where the sandbox has no
			   * such user. Without it: init's own uid, home /home/user. */
	TS_FILE_SET_XATTRS, /* {PATH, XATTR...}: replace every user.e2b.* xattr of PATH (a
			     * file or directory, not followed) with these. OK. */
};

/* TS_T_FLAGS of STAT and LIST */
#define TS_FILE_F_XATTRS (1U << 0) /* each entry also carries its user.e2b.* xattrs */
/* Bounds of the xattrs one entry carries or one SET_XATTRS sets; past them an entry
 * carries none of the rest and SET_XATTRS is ERROR E2BIG. */
#define TS_FILE_XATTRS_MAX 64
#define TS_FILE_XATTR_NAME_MAX 255 /* the whole name, "user.e2b." included (XATTR_NAME_MAX) */
#define TS_FILE_XATTR_VALUE_MAX 4096

/* A message, received or being built. */
struct ts_ctl_msg {
	uint16_t type;
	uint16_t flags;
	uint32_t id;
	uint8_t *data; /* payload */
	size_t len, cap;
	int fds[TS_CTL_MAX_FDS]; /* received: owned by the message until taken */
	size_t n_fds;
};

/* Reset m to an empty message of the given type (keeps its buffer). */
void ts_ctl_msg_init(struct ts_ctl_msg *m, uint16_t type, uint32_t id);

/* Free the payload and close every fd still owned; m is then empty and may be reused. */
void ts_ctl_msg_free(struct ts_ctl_msg *m);
/* For `_cleanup_(ts_ctl_msg_freep) struct ts_ctl_msg m = { 0 };` (also after a free). */
static inline void ts_ctl_msg_freep(struct ts_ctl_msg *m)
{
	ts_ctl_msg_free(m);
}

/* Append a field. -E2BIG past TS_CTL_MAX_PAYLOAD, -ENOMEM. */
int ts_ctl_put(struct ts_ctl_msg *m, uint16_t tag, const void *v, size_t len);
int ts_ctl_put_str(struct ts_ctl_msg *m, uint16_t tag, const char *s);
int ts_ctl_put_u64(struct ts_ctl_msg *m, uint16_t tag, uint64_t v);

/* Walk the fields: *pos starts at 0. 1 and the field, 0 at the end, -EBADMSG. */
int ts_ctl_next(const struct ts_ctl_msg *m, size_t *pos, uint16_t *tag, const uint8_t **v,
		uint32_t *len);

/* First field with the tag: u64 (exactly 8 bytes), or a string copied NUL-terminated into
 * buf (refused when it holds a NUL byte or does not fit). -ENOENT when absent. */
int ts_ctl_get_u64(const struct ts_ctl_msg *m, uint16_t tag, uint64_t *ret);
int ts_ctl_get_str(const struct ts_ctl_msg *m, uint16_t tag, char *buf, size_t len);

/* Send a whole message (blocking; retries short writes) with its fds. */
int ts_ctl_send(int fd, const struct ts_ctl_msg *m, const int *fds, size_t n_fds);

/*
 * Incremental receiver for non-blocking sockets: feed it what recvmsg() returns.
 * ts_ctl_conn_read reads from fd (once, or twice when a header completes: then at once
 * its body) and returns 1 when *out holds a whole message (the caller then owns it), 0 when more bytes are needed (or EAGAIN), -ECONNRESET on EOF,
 * -EBADMSG/-E2BIG on a malformed message.
 */
struct ts_ctl_conn {
	uint8_t hdr[TS_CTL_HDR_LEN];
	size_t hdr_got;
	struct ts_ctl_msg cur;
	size_t body_got;
	int fds[TS_CTL_MAX_FDS];
	size_t n_fds;
};
void ts_ctl_conn_init(struct ts_ctl_conn *c);
void ts_ctl_conn_free(struct ts_ctl_conn *c);
int ts_ctl_conn_read(struct ts_ctl_conn *c, int fd, struct ts_ctl_msg *out);

/* Blocking receive of one message (for clients). Same returns as ts_ctl_conn_read, never
 * 0. */
int ts_ctl_recv(int fd, struct ts_ctl_msg *out);

/* As ts_ctl_recv, giving up with -ETIMEDOUT after timeout_ms (a peer that stalls, or
 * sends half a message, cannot hold a caller that has deadlines). */
int ts_ctl_recv_timeout(int fd, struct ts_ctl_msg *out, int timeout_ms);

/*
 * Outgoing messages of a non-blocking peer (init's connections, the host's clients): a
 * byte queue that never blocks the sender. ts_ctl_outq_push serializes m (no fds);
 * ts_ctl_outq_flush writes what the socket takes: 0 when the queue is empty, 1 when bytes
 * remain (wait for POLLOUT), -errno when the peer is gone.
 */
struct ts_ctl_outq {
	struct ts_ctl_chunk *head, *tail;
	size_t bytes, head_off;
};
int ts_ctl_outq_push(struct ts_ctl_outq *q, const struct ts_ctl_msg *m);
int ts_ctl_outq_flush(struct ts_ctl_outq *q, int fd);
void ts_ctl_outq_free(struct ts_ctl_outq *q);

/* Reply helpers (server side). */
int ts_ctl_send_error(int fd, uint32_t id, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int ts_ctl_send_simple(int fd, uint16_t type, uint32_t id);
