/* SPDX-License-Identifier: Apache-2.0 */
#include "sqldb.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

int ts_sqldb_errno(sqlite3 *db, int rc)
{
	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EAGAIN; /* try again: not EBUSY, which the backend reads as a conflict (409) */
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return -EBADMSG;
	case SQLITE_CONSTRAINT:
		return -EEXIST;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_CANTOPEN:
	case SQLITE_IOERR:
		if (db && sqlite3_system_errno(db) > 0)
			return -sqlite3_system_errno(db);
		return (rc & 0xff) == SQLITE_CANTOPEN ? -ENOENT : -EIO;
	default:
		return -EIO;
	}
}

int ts_sqldb_err(struct ts_sqldb *db, struct ts_error *err, int rc, const char *what)
{
	return ts_err(err, ts_sqldb_errno(db->db, rc), "%s in `%s`: %s", what, db->path,
		      db->db ? sqlite3_errmsg(db->db) : sqlite3_errstr(rc));
}

/*
 * The busy timeout covers lock waits, but WAL mode can still answer SQLITE_BUSY without
 * calling the handler (a reader racing a checkpoint, recovery, a journal mode switch by
 * another opener). Those are transient: retry with a short back-off up to a deadline.
 */
int ts_sqldb_step(sqlite3_stmt *st)
{
	unsigned long long deadline = ts_now_ms() + 2 * TS_SQLDB_BUSY_MS;
	unsigned delay_us = 1000;
	int rc;

	for (;;) {
		rc = sqlite3_step(st);
		if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
			return rc;
		if (ts_now_ms() > deadline)
			return rc;
		sqlite3_reset(st);
		usleep(delay_us);
		if (delay_us < 50000)
			delay_us *= 2;
	}
}

int ts_sqldb_exec(struct ts_sqldb *db, const char *sql, struct ts_error *err)
{
	sqlite3_stmt *st = NULL;
	const char *tail = sql;
	int rc;

	while (tail && *tail) {
		rc = sqlite3_prepare_v2(db->db, tail, -1, &st, &tail);
		if (rc != SQLITE_OK)
			return ts_sqldb_err(db, err, rc, "prepare");
		if (!st) /* whitespace or a comment */
			break;
		do
			rc = ts_sqldb_step(st);
		while (rc == SQLITE_ROW);
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE)
			return ts_sqldb_err(db, err, rc, "run");
	}
	return 0;
}

int ts_sqldb_prepare(struct ts_sqldb *db, sqlite3_stmt **st, const char *sql, struct ts_error *err)
{
	int rc = sqlite3_prepare_v2(db->db, sql, -1, st, NULL);

	if (rc != SQLITE_OK)
		return ts_sqldb_err(db, err, rc, "prepare");
	return 0;
}

int ts_sqldb_begin_write(struct ts_sqldb *db, struct ts_error *err)
{
	return ts_sqldb_exec(db, "BEGIN IMMEDIATE", err);
}

int ts_sqldb_commit(struct ts_sqldb *db, struct ts_error *err)
{
	return ts_sqldb_exec(db, "COMMIT", err);
}

void ts_sqldb_rollback(struct ts_sqldb *db)
{
	if (!sqlite3_get_autocommit(db->db))
		sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
}

static int read_version(struct ts_sqldb *db, int *version, struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int rc, r;

	if ((r = ts_sqldb_prepare(db, &st, "PRAGMA user_version", err)) < 0)
		return r;
	rc = ts_sqldb_step(st);
	if (rc != SQLITE_ROW)
		return ts_sqldb_err(db, err, rc, "read schema version");
	*version = sqlite3_column_int(st, 0);
	return 0;
}

int ts_sqldb_migrate(struct ts_sqldb *db, const char *const *migrations, size_t n,
		     struct ts_error *err)
{
	const int latest = (int)n;
	char sql[64];
	int version, r;

	if ((r = read_version(db, &version, err)) < 0)
		return r;
	if (version == latest)
		return 0;
	/* Check again under the write lock: another process may have just migrated. */
	if ((r = ts_sqldb_begin_write(db, err)) < 0 || (r = read_version(db, &version, err)) < 0)
		goto fail;
	if (version < 0 || version > latest) {
		r = ts_err(err, -EPROTONOSUPPORT,
			   "`%s` has schema version %d, which this toren-sandbox does not know "
			   "(it knows up to %d): use a newer toren-sandbox",
			   db->path, version, latest);
		goto fail;
	}
	for (int v = version; v < latest; v++)
		if ((r = ts_sqldb_exec(db, migrations[v], err)) < 0)
			goto fail;
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", latest);
	if ((r = ts_sqldb_exec(db, sql, err)) < 0 || (r = ts_sqldb_commit(db, err)) < 0)
		goto fail;
	return 0;
fail:
	ts_sqldb_rollback(db);
	return r;
}

/*
 * A database of the state root is the owner's alone (0600; state.db holds `create --env`
 * values), whatever the umask and also in a state root that already existed with wider
 * permissions. sqlite gives its -wal and -shm files the database's mode; older ones are
 * narrowed too.
 */
static int private_files(const char *db, struct ts_error *err)
{
	static const char *const suffixes[] = { "-wal", "-shm" };
	_cleanup_close_ int fd = open(db, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	struct stat st;
	char path[PATH_MAX + 8];

	if (fd < 0)
		return ts_err_errno(err, -errno, "open `%s`", db);
	if (fstat(fd, &st) < 0)
		return ts_err_errno(err, -errno, "stat `%s`", db);
	if (!(st.st_mode & 077))
		return 0;
	if (fchmod(fd, 0600) < 0)
		return ts_err_errno(err, -errno, "chmod 600 `%s`", db);
	for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
		snprintf(path, sizeof(path), "%s%s", db, suffixes[i]);
		if (chmod(path, 0600) < 0 && errno != ENOENT)
			return ts_err_errno(err, -errno, "chmod 600 `%s`", path);
	}
	return 0;
}

int ts_sqldb_open(struct ts_sqldb *db, const char *path, struct ts_error *err)
{
	sqlite3_stmt *st;
	int rc, r;

	memset(db, 0, sizeof(*db));
	if (strlen(path) >= sizeof(db->path))
		return ts_err(err, -ENAMETOOLONG, "database path `%s` too long", path);
	strcpy(db->path, path);
	r = private_files(db->path, err);
	if (r < 0)
		goto fail;
	/* NOMUTEX: a handle is used by one thread. sqlite opens its files O_CLOEXEC, so the
	 * helper and the processes it starts never inherit the database. */
	rc = sqlite3_open_v2(db->path, &db->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			     NULL);
	if (rc != SQLITE_OK) {
		r = ts_err(err, ts_sqldb_errno(db->db, rc), "open `%s`: %s", db->path,
			   db->db ? sqlite3_errmsg(db->db) : sqlite3_errstr(rc));
		goto fail;
	}
	sqlite3_extended_result_codes(db->db, 1);
	/* Keep the -wal and -shm files between processes: every CLI call opens the store,
	 * and creating and deleting them each time costs more than the query. */
	{
		int persist = 1;

		sqlite3_file_control(db->db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
	}
	/* The busy timeout first: every later statement may meet another process's lock. */
	sqlite3_busy_timeout(db->db, TS_SQLDB_BUSY_MS);

	/* journal_mode answers with the mode in force: anything but wal means WAL is not
	 * possible here (a file system without shared memory), which we do not run on. */
	if ((r = ts_sqldb_prepare(db, &st, "PRAGMA journal_mode = WAL", err)) < 0)
		goto fail;
	rc = ts_sqldb_step(st);
	if (rc == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(st, 0), "wal") != 0) {
		r = ts_err(err, -EOPNOTSUPP, "`%s`: journal mode WAL refused (got `%s`)", db->path,
			   sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
		goto fail;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW) {
		r = ts_sqldb_err(db, err, rc, "set journal mode");
		goto fail;
	}
	/* FULL: a record that says a sandbox exists must survive a power cut (WAL with NORMAL
	 * may lose the last commits). */
	if ((r = ts_sqldb_exec(db, "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON", err)) < 0)
		goto fail;
	return 0;
fail:
	ts_sqldb_close(db);
	return r;
}

void ts_sqldb_close(struct ts_sqldb *db)
{
	sqlite3_close_v2(db->db);
	db->db = NULL;
}
