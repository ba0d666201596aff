/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The state of durable sandboxes: $TOREN_SANDBOX_ROOT/state.db (sqlite, WAL,
 * synchronous=FULL), one row per sandbox. Every CLI process opens it, does its work in
 * short transactions and closes it: there is no daemon holding it.
 */
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "procinfo.h"

#define TS_NAME_MAX 64

struct ts_sandbox_rec {
	char id[16];		       /* 12 lowercase hex */
	char name[TS_NAME_MAX];	       /* "" when unnamed; unique when set */
	char dir[4096];		       /* $ROOT/<id> */
	char workspace[4096];	       /* host directory bound at /home/user */
	char *spec;		       /* JSON: what create was asked (image, policy, env, limits,
				      * user...), enough to rebuild the sandbox on start; owned */
	char *labels;		       /* JSON object {"k": "v"}; owned; "{}" when none */
	long long created_ms;	       /* CLOCK_REALTIME ms (ts_realtime_ms), as every *_ms */
	long long started_ms;	       /* last start, 0 when never */
	long long last_activity_ms;    /* last command, file operation or attached process */
	long long ttl_ms;	       /* idle timeout; 0 = none */
	bool ttl_absolute;	       /* count ttl from created_ms instead of activity */
	char state[16];		       /* "running" | "stopped" as last recorded */
	pid_t init_pid;		       /* host pid of init while running, else 0 */
	unsigned long long init_start; /* its start time (/proc/PID/stat field 22), against
					* pid reuse */
	pid_t owner_pid;	       /* the process the sandbox belongs to, 0 = none */
	unsigned long long owner_start;
};

struct ts_store;

/*
 * Names and references. A name is [A-Za-z0-9][A-Za-z0-9_.-]{0,62} and is not made of hex
 * digits only when 12 characters or shorter: such a string is always an id or an id
 * prefix, so a name can never shadow one. A reference (what a user types where an ID is
 * accepted) is 1..64 characters of [A-Za-z0-9_.-]; anything else is refused before the
 * database is asked.
 */
bool ts_store_name_valid(const char *name);
bool ts_store_ref_valid(const char *ref);

/*
 * Open (creating or upgrading the schema if needed) $root/state.db: WAL, synchronous=FULL,
 * busy timeout 5 s, foreign keys on. -EPROTONOSUPPORT when the file has a newer schema
 * than this build knows, -EBADMSG when it is not a database, else -errno. A handle
 * belongs to one process and one thread: open a new one after fork().
 */
int ts_store_open(struct ts_store **ret, const char *root, struct ts_error *err);
void ts_store_close(struct ts_store *s);
static inline void ts_store_closep(struct ts_store **s)
{
	ts_store_close(*s);
}

/* The database under the store, for the other tables of state.db (snapshot.c). */
struct ts_sqldb *ts_store_sql(struct ts_store *s);

/* Insert a new record: -EEXIST (err names it) when the id or the name is taken. */
int ts_store_insert(struct ts_store *s, const struct ts_sandbox_rec *rec, struct ts_error *err);

/* Replace the record with rec->id. -ENOENT when gone. */
int ts_store_update(struct ts_store *s, const struct ts_sandbox_rec *rec, struct ts_error *err);

/*
 * Find by full id, by name, or by a unique id prefix (at least 1 character). -ENOENT
 * ("no sandbox `x`"), -ENOTUNIQ ("`ab` matches 3 sandboxes: ..."). rec's owned strings
 * are allocated; free with ts_sandbox_rec_free.
 */
int ts_store_get(struct ts_store *s, const char *ref, struct ts_sandbox_rec *rec,
		 struct ts_error *err);

/*
 * Every record, oldest first. Free with ts_sandbox_recs_free.
 *
 * A row that cannot be read back as a valid record (a NULL or a wrong type where a value
 * is expected, spec or labels that are not a JSON object, a malformed id or name) is never
 * returned: it is moved to the table sandboxes_quarantine (all its columns, the reason,
 * the time) and skipped, and ts_store_warning() says so. ts_store_get() on such a row
 * quarantines it the same way and fails with -EBADMSG. The sandbox's files are left alone.
 */
int ts_store_list(struct ts_store *s, struct ts_sandbox_rec **ret, size_t *n, struct ts_error *err);

/* What the last ts_store_list/ts_store_get quarantined ("" when nothing): for the caller
 * to print as a warning. */
const char *ts_store_warning(const struct ts_store *s);

/* Delete the record (not its files). -ENOENT when gone. */
int ts_store_delete(struct ts_store *s, const char *id, struct ts_error *err);

/* Set last_activity_ms = now for id (cheap, called on every command). */
int ts_store_touch(struct ts_store *s, const char *id, struct ts_error *err);

/* Free rec's owned strings (rec itself is the caller's); accepts NULL and a zeroed rec. */
void ts_sandbox_rec_free(struct ts_sandbox_rec *rec);
/* For `_cleanup_(ts_sandbox_rec_freep) struct ts_sandbox_rec rec = { 0 };`. */
static inline void ts_sandbox_rec_freep(struct ts_sandbox_rec *rec)
{
	ts_sandbox_rec_free(rec);
}
void ts_sandbox_recs_free(struct ts_sandbox_rec *recs, size_t n);
