/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A sqlite database of the host library's state, opened the one way every such file is:
 * owner-only files, WAL, synchronous=FULL, busy timeout, foreign keys, schema migrations
 * by PRAGMA user_version; statements whose errors become a struct ts_error naming the
 * file. Used by store.c (state.db); any other database of the state root uses it too.
 *
 * A handle belongs to one process and one thread (SQLITE_OPEN_NOMUTEX): open a new one
 * after fork(). `rc` is the name for sqlite's result codes, `r` for -errno.
 */
#include <sqlite3.h>
#include <stddef.h>

#include "cleanup.h"
#include "error.h"

/* How long a statement waits for another process's lock before SQLITE_BUSY. */
#define TS_SQLDB_BUSY_MS 5000

struct ts_sqldb {
	sqlite3 *db;
	char path[4200]; /* for messages */
};

/*
 * Open (creating it 0600) the database file at path into *db: sqlite's extended result
 * codes, persistent WAL files, busy timeout TS_SQLDB_BUSY_MS, journal mode WAL,
 * synchronous=FULL, foreign keys on. The file and its -wal and -shm files are narrowed
 * to 0600 if they were wider. 0 or -errno: -ENAMETOOLONG, -EBADMSG when it is not a
 * database, -EOPNOTSUPP when WAL is refused, else from the system call or sqlite. On
 * failure *db is closed again.
 */
int ts_sqldb_open(struct ts_sqldb *db, const char *path, struct ts_error *err);

/* Close the contents of db (a valid pointer; a db never opened or closed is fine). */
void ts_sqldb_close(struct ts_sqldb *db);

/*
 * Bring the schema to version n: entry i of migrations takes PRAGMA user_version i to i + 1,
 * all in one write transaction (checked again under the lock: another process may have just
 * migrated). -EPROTONOSUPPORT when the file has a newer version than n.
 */
int ts_sqldb_migrate(struct ts_sqldb *db, const char *const *migrations, size_t n,
		     struct ts_error *err);

/* sqlite's result code rc as -errno (-EAGAIN for busy or locked, -ENOMEM, -EROFS, -ENOSPC,
 * -EBADMSG, -EEXIST, -EACCES, the system's errno of an I/O error, else -EIO). db may be
 * NULL. */
int ts_sqldb_errno(sqlite3 *db, int rc);

/* Fill err with "WHAT in `PATH`: sqlite's message" for rc; returns its -errno. */
int ts_sqldb_err(struct ts_sqldb *db, struct ts_error *err, int rc, const char *what);

/* Prepare one statement. 0 or -errno (err says "prepare in `PATH`: ..."). */
int ts_sqldb_prepare(struct ts_sqldb *db, sqlite3_stmt **st, const char *sql, struct ts_error *err);

/*
 * sqlite3_step, retrying a transient SQLITE_BUSY or SQLITE_LOCKED (with back-off, up to
 * twice the busy timeout) that sqlite answers without calling the busy handler. Returns
 * sqlite's result code.
 */
int ts_sqldb_step(sqlite3_stmt *st);

/* Run sql, one or more statements without parameters (rows are discarded), retrying while
 * busy. 0 or -errno. */
int ts_sqldb_exec(struct ts_sqldb *db, const char *sql, struct ts_error *err);

/*
 * Transactions. ts_sqldb_begin_write is BEGIN IMMEDIATE: it takes the write lock up front,
 * since a deferred transaction that reads and then writes gets SQLITE_BUSY_SNAPSHOT in WAL
 * mode, which no busy handler can resolve. ts_sqldb_rollback does nothing outside a
 * transaction.
 */
int ts_sqldb_begin_write(struct ts_sqldb *db, struct ts_error *err);
int ts_sqldb_commit(struct ts_sqldb *db, struct ts_error *err);
void ts_sqldb_rollback(struct ts_sqldb *db);

static inline void ts_sqldb_finalizep(sqlite3_stmt **st)
{
	sqlite3_finalize(*st);
}
#define _cleanup_stmt_ _cleanup_(ts_sqldb_finalizep)
