/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Standard streams that are terminals never reach a sandbox: a terminal's fd is open
 * read-write, so a process inside that outlived its command (setsid, then the group
 * kill misses it) could read what the user types into that terminal later, or change
 * its modes. Where fd 0, 1 or 2 of the caller is a terminal, the sandbox gets a pipe
 * instead, and the caller copies between the pipe and the terminal for as long as the
 * command runs — and not a moment longer: after the command's exit only what it already
 * wrote is copied, then the pipes are closed.
 *
 * One relay per command, driven from the caller's own poll loop: ts_relay_pollfds adds
 * what to wait for, ts_relay_step moves what is ready. Writes to the caller's fds block
 * (they are never made non-blocking: the open file description is shared with the
 * user's shell); reads from the caller's stdin happen only when poll says so. The
 * library prints nothing; it only copies bytes.
 */
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define TS_RELAY_BUF 65536

struct ts_relay_chan {
	int from, to;	 /* -1: unused */
	int own;	 /* our end of the pipe (from for output, to for input) */
	bool input;	 /* caller's stdin -> sandbox */
	bool eof;	 /* from is done with */
	bool paused;	 /* stdin read while in the background (EIO): wait for resume */
	char *buf;	 /* TS_RELAY_BUF bytes */
	size_t off, len; /* pending bytes buf[off..off+len) */
	int pfd_index;	 /* where ts_relay_pollfds put it, -1: not polled */
};

struct ts_relay {
	struct ts_relay_chan ch[3]; /* by the sandbox's fd number */
	int sandbox_fds[3];	    /* what the sandbox gets for 0, 1, 2 (not owned) */
};

/* An inert relay (nothing relayed), safe to close. */
void ts_relay_init(struct ts_relay *r);

/*
 * Decide for fds 0..2 of the caller: a terminal among those in `wanted` (bit N: fd N is
 * handed to the sandbox) gets a pipe; the others are handed over as they are.
 * r->sandbox_fds[N] is then what to give the sandbox as fd N (the pipe's far end, or N
 * itself). 0, or -errno with err. Nothing is relayed when no fd is a terminal
 * (ts_relay_active is false), so pipes and files cost nothing.
 */
int ts_relay_setup(struct ts_relay *r, unsigned wanted, struct ts_error *err);

/* True when some fd is relayed. */
bool ts_relay_active(const struct ts_relay *r);

/*
 * Close the far ends once the sandbox holds them (they were dup'ed into it): from then
 * on only the sandbox's copies keep the pipes open.
 */
void ts_relay_handed_over(struct ts_relay *r);

/* Add the fds to wait for to pfd (room for 6). Returns how many were added. */
size_t ts_relay_pollfds(struct ts_relay *r, struct pollfd *pfd);

/* Move what poll reported ready (pfd as filled by ts_relay_pollfds). */
void ts_relay_step(struct ts_relay *r, const struct pollfd *pfd);

/* Stdin may be read again (the caller got SIGCONT: it may be in the foreground). */
void ts_relay_resume(struct ts_relay *r);

/*
 * The command has exited: copy what its output pipes hold right now (without waiting
 * for writers that outlived it), then close every pipe.
 */
void ts_relay_finish(struct ts_relay *r);

/* Close everything (also after a failure before the hand-over). */
void ts_relay_close(struct ts_relay *r);
