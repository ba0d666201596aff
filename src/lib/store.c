/* SPDX-License-Identifier: Apache-2.0 */
#include "store.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "sqldb.h"
#include "util.h"

#define SPEC_MAX (1U << 20)

struct ts_store {
	struct ts_sqldb sql;
	char warning[512];
};

/*
 * Schema migrations: entry i takes user_version i to i + 1. Never edit a released entry;
 * append one. sandboxes_quarantine has the columns of sandboxes without constraints, so
 * that any row, however broken, can be moved there verbatim.
 */
static const char *const migrations[] = {
	"CREATE TABLE sandboxes ("
	" id TEXT PRIMARY KEY NOT NULL,"
	" name TEXT UNIQUE,"
	" dir TEXT,"
	" workspace TEXT,"
	" spec TEXT,"
	" labels TEXT,"
	" created_ms INTEGER,"
	" started_ms INTEGER,"
	" last_activity_ms INTEGER,"
	" ttl_ms INTEGER,"
	" ttl_absolute INTEGER,"
	" state TEXT,"
	" init_pid INTEGER,"
	" init_start INTEGER,"
	" owner_pid INTEGER,"
	" owner_start INTEGER);"
	"CREATE INDEX sandboxes_created ON sandboxes(created_ms);"
	"CREATE TABLE sandboxes_quarantine ("
	" id, name, dir, workspace, spec, labels, created_ms, started_ms, last_activity_ms,"
	" ttl_ms, ttl_absolute, state, init_pid, init_start, owner_pid, owner_start,"
	" reason TEXT, quarantined_ms INTEGER);",
	/* snapshot.c: copies of a sandbox's file system, restorable as templates */
	"CREATE TABLE snapshots ("
	" id TEXT PRIMARY KEY NOT NULL,"
	" names TEXT NOT NULL,"
	" source TEXT NOT NULL,"
	" spec TEXT NOT NULL,"
	" created_ms INTEGER NOT NULL,"
	" size INTEGER NOT NULL);"
	"CREATE INDEX snapshots_created ON snapshots(created_ms);",
};

#define COLUMNS                                                                                    \
	"id, name, dir, workspace, spec, labels, created_ms, started_ms, last_activity_ms, "       \
	"ttl_ms, ttl_absolute, state, init_pid, init_start, owner_pid, owner_start"

/* snprintf whose truncation is intended (messages are bounded by design). */
static void __attribute__((format(printf, 3, 4))) msgf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

static bool all_hex(const char *p)
{
	for (; *p; p++)
		if (!isxdigit((unsigned char)*p))
			return false;
	return true;
}

static bool is_id(const char *p)
{
	size_t n = strlen(p);

	if (n != 12)
		return false;
	for (; *p; p++)
		if (!isdigit((unsigned char)*p) && !(*p >= 'a' && *p <= 'f'))
			return false;
	return true;
}

static bool ref_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-';
}

bool ts_store_name_valid(const char *name)
{
	size_t n;

	if (!name || !isalnum((unsigned char)name[0]))
		return false;
	n = strlen(name);
	if (n >= TS_NAME_MAX)
		return false;
	for (const char *p = name; *p; p++)
		if (!ref_char(*p) || !isascii((unsigned char)*p))
			return false;
	/* All hex and short enough to be an id prefix: it would shadow one. */
	if (n <= 12 && all_hex(name))
		return false;
	return true;
}

bool ts_store_ref_valid(const char *ref)
{
	size_t n;

	if (!ref)
		return false;
	n = strlen(ref);
	if (n == 0 || n > 64)
		return false;
	for (const char *p = ref; *p; p++)
		if (!ref_char(*p) || !isascii((unsigned char)*p))
			return false;
	return true;
}

/* A copy of untrusted text fit for an error message: printable ASCII, at most 64. */
static const char *shown(const char *s, char buf[80])
{
	size_t i;

	if (!s)
		s = "(null)";
	for (i = 0; s[i] && i < 64; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '`') ? s[i] : '?';
	if (s[i]) {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

int ts_store_open(struct ts_store **ret, const char *root, struct ts_error *err)
{
	struct ts_store *s;
	char path[sizeof(s->sql.path)];
	int r;

	if ((size_t)snprintf(path, sizeof(path), "%s/state.db", root) >= sizeof(path))
		return ts_err(err, -ENAMETOOLONG, "state root `%s` too long", root);
	s = calloc(1, sizeof(*s));
	if (!s)
		return ts_err(err, -ENOMEM, "out of memory");
	if ((r = ts_sqldb_open(&s->sql, path, err)) < 0) {
		free(s);
		return r;
	}
	r = ts_sqldb_migrate(&s->sql, migrations, ELEMENTSOF(migrations), err);
	if (r < 0) {
		ts_store_close(s);
		return r;
	}
	*ret = s;
	return 0;
}

void ts_store_close(struct ts_store *s)
{
	if (!s)
		return;
	ts_sqldb_close(&s->sql);
	free(s);
}

struct ts_sqldb *ts_store_sql(struct ts_store *s)
{
	return &s->sql;
}

const char *ts_store_warning(const struct ts_store *s)
{
	return s ? s->warning : "";
}

void ts_sandbox_rec_free(struct ts_sandbox_rec *rec)
{
	if (!rec)
		return;
	free(rec->spec);
	free(rec->labels);
	rec->spec = rec->labels = NULL;
}

void ts_sandbox_recs_free(struct ts_sandbox_rec *recs, size_t n)
{
	if (!recs)
		return;
	for (size_t i = 0; i < n; i++)
		ts_sandbox_rec_free(&recs[i]);
	free(recs);
}

/* spec and labels must be JSON objects; labels' values strings. */
static const char *json_problem(const char *text, bool labels)
{
	json_error_t jerr;
	json_t *j, *v;
	const char *k, *why = NULL;

	if (strlen(text) > SPEC_MAX)
		return "longer than 1 MiB";
	j = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (!j)
		return "not valid JSON";
	if (!json_is_object(j))
		why = "not a JSON object";
	else if (labels)
		json_object_foreach(j, k, v)
			if (!json_is_string(v)) {
				why = "a label value is not a string";
				break;
			}
	json_decref(j);
	return why;
}

static bool text_fits(const char *v, size_t max)
{
	return strlen(v) < max;
}

enum {
	C_ROWID,
	C_ID,
	C_NAME,
	C_DIR,
	C_WORKSPACE,
	C_SPEC,
	C_LABELS,
	C_CREATED,
	C_STARTED,
	C_ACTIVITY,
	C_TTL,
	C_TTL_ABS,
	C_STATE,
	C_INIT_PID,
	C_INIT_START,
	C_OWNER_PID,
	C_OWNER_START,
};

static const char *col_text(sqlite3_stmt *st, int c)
{
	if (sqlite3_column_type(st, c) != SQLITE_TEXT)
		return NULL;
	return (const char *)sqlite3_column_text(st, c);
}

static bool col_int(sqlite3_stmt *st, int c, long long max, long long *v)
{
	if (sqlite3_column_type(st, c) != SQLITE_INTEGER)
		return false;
	*v = sqlite3_column_int64(st, c);
	return *v >= 0 && *v <= max;
}

/*
 * Read the current row of a `SELECT rowid, COLUMNS` into rec. Every column is checked:
 * the file is ours, but a broken disk, an older bug or a hand edit must give a clear
 * error and not a crash or a sandbox rebuilt from garbage. On -EBADMSG why says what.
 */
static int row_to_rec(sqlite3_stmt *st, struct ts_sandbox_rec *rec, char *why, size_t whylen)
{
	const char *v, *problem;
	long long n;

	memset(rec, 0, sizeof(*rec));
#define BAD(...)                                                                                   \
	do {                                                                                       \
		snprintf(why, whylen, __VA_ARGS__);                                                \
		goto bad;                                                                          \
	} while (0)
	v = col_text(st, C_ID);
	if (!v || !is_id(v))
		BAD("id is not 12 lowercase hex digits");
	memcpy(rec->id, v, 13);
	if (sqlite3_column_type(st, C_NAME) != SQLITE_NULL) {
		v = col_text(st, C_NAME);
		if (!v || !ts_store_name_valid(v))
			BAD("name is not a valid name");
		snprintf(rec->name, sizeof(rec->name), "%s", v);
	}
	v = col_text(st, C_DIR);
	if (!v || v[0] != '/' || !text_fits(v, sizeof(rec->dir)))
		BAD("dir is not an absolute path");
	snprintf(rec->dir, sizeof(rec->dir), "%s", v);
	v = col_text(st, C_WORKSPACE);
	if (!v || v[0] != '/' || !text_fits(v, sizeof(rec->workspace)))
		BAD("workspace is not an absolute path");
	snprintf(rec->workspace, sizeof(rec->workspace), "%s", v);
	v = col_text(st, C_SPEC);
	if (!v)
		BAD("spec is missing");
	if ((problem = json_problem(v, false)))
		BAD("spec is %s", problem);
	v = col_text(st, C_LABELS);
	if (!v)
		BAD("labels are missing");
	if ((problem = json_problem(v, true)))
		BAD("labels are %s", problem);
	if (!col_int(st, C_CREATED, LLONG_MAX, &rec->created_ms) ||
	    !col_int(st, C_STARTED, LLONG_MAX, &rec->started_ms) ||
	    !col_int(st, C_ACTIVITY, LLONG_MAX, &rec->last_activity_ms))
		BAD("a time is not a non-negative integer");
	if (!col_int(st, C_TTL, LLONG_MAX, &rec->ttl_ms))
		BAD("ttl_ms is not a non-negative integer");
	if (!col_int(st, C_TTL_ABS, 1, &n))
		BAD("ttl_absolute is not 0 or 1");
	rec->ttl_absolute = n;
	v = col_text(st, C_STATE);
	if (!v || !v[0] || !text_fits(v, sizeof(rec->state)))
		BAD("state is not a state");
	for (const char *p = v; *p; p++)
		if (!(*p >= 'a' && *p <= 'z') && *p != '-')
			BAD("state is not a state");
	snprintf(rec->state, sizeof(rec->state), "%s", v);
	if (!col_int(st, C_INIT_PID, INT_MAX, &n))
		BAD("init_pid is not a pid");
	rec->init_pid = (pid_t)n;
	if (!col_int(st, C_INIT_START, LLONG_MAX, &n))
		BAD("init_start is not a start time");
	rec->init_start = (unsigned long long)n;
	if (!col_int(st, C_OWNER_PID, INT_MAX, &n))
		BAD("owner_pid is not a pid");
	rec->owner_pid = (pid_t)n;
	if (!col_int(st, C_OWNER_START, LLONG_MAX, &n))
		BAD("owner_start is not a start time");
	rec->owner_start = (unsigned long long)n;
#undef BAD
	rec->spec = strdup(col_text(st, C_SPEC));
	rec->labels = strdup(col_text(st, C_LABELS));
	if (!rec->spec || !rec->labels) {
		ts_sandbox_rec_free(rec);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	return 0;
bad:
	memset(rec, 0, sizeof(*rec));
	return -EBADMSG;
}

/* Move the row to sandboxes_quarantine, in one transaction. */
static int quarantine(struct ts_store *s, long long rowid, const char *why, struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *ins = NULL, *del = NULL;
	int rc, r;

	if ((r = ts_sqldb_begin_write(&s->sql, err)) < 0)
		return r;
	if ((r = ts_sqldb_prepare(&s->sql, &ins,
				  "INSERT INTO sandboxes_quarantine (" COLUMNS
				  ", reason, quarantined_ms) "
				  "SELECT " COLUMNS ", ?1, ?2 FROM sandboxes WHERE rowid = ?3",
				  err)) < 0 ||
	    (r = ts_sqldb_prepare(&s->sql, &del, "DELETE FROM sandboxes WHERE rowid = ?1", err)) <
		    0)
		goto fail;
	sqlite3_bind_text(ins, 1, why, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(ins, 2, ts_realtime_ms());
	sqlite3_bind_int64(ins, 3, rowid);
	sqlite3_bind_int64(del, 1, rowid);
	if ((rc = ts_sqldb_step(ins)) != SQLITE_DONE || (rc = ts_sqldb_step(del)) != SQLITE_DONE) {
		r = ts_sqldb_err(&s->sql, err, rc, "quarantine");
		goto fail;
	}
	if ((r = ts_sqldb_commit(&s->sql, err)) < 0)
		goto fail;
	return 0;
fail:
	ts_sqldb_rollback(&s->sql);
	return r;
}

/*
 * A corrupt row: quarantine it, and describe that in err (code EBADMSG) and s->warning.
 * The caller has reset its reading statement: the move needs the write lock, which a
 * connection still inside an older read snapshot cannot take in WAL mode.
 */
static int corrupt_row(struct ts_store *s, long long rowid, const char *id, const char *why,
		       struct ts_error *err)
{
	struct ts_error qerr = { 0 }, e = { 0 };

	if (quarantine(s, rowid, why, &qerr) < 0)
		ts_err(&e, -EBADMSG,
		       "sandbox record `%s` in `%s` is corrupt (%s); moving it aside failed: %s",
		       id, s->sql.path, why, qerr.msg);
	else
		ts_err(&e, -EBADMSG,
		       "sandbox record `%s` in `%s` is corrupt (%s): moved to table "
		       "`sandboxes_quarantine`, its files are untouched",
		       id, s->sql.path, why);
	msgf(s->warning, sizeof(s->warning), "%s", e.msg);
	if (err)
		*err = e;
	return -EBADMSG;
}

static int check_rec(struct ts_store *s, const struct ts_sandbox_rec *rec, struct ts_error *err)
{
	char buf[80];
	const char *p;

	(void)s;
	if (!is_id(rec->id))
		return ts_err(err, -EINVAL, "bad sandbox id `%s`", shown(rec->id, buf));
	if (rec->name[0] && !ts_store_name_valid(rec->name))
		return ts_err(err, -EINVAL,
			      "bad sandbox name `%s`: want 1-63 of [A-Za-z0-9_.-], starting "
			      "with a letter or digit, and not only hex digits when 12 or shorter",
			      shown(rec->name, buf));
	if (rec->dir[0] != '/' || rec->workspace[0] != '/')
		return ts_err(err, -EINVAL, "sandbox `%s`: dir and workspace must be absolute",
			      rec->id);
	if (rec->spec && (p = json_problem(rec->spec, false)))
		return ts_err(err, -EINVAL, "sandbox `%s`: spec is %s", rec->id, p);
	if (rec->labels && (p = json_problem(rec->labels, true)))
		return ts_err(err, -EINVAL, "sandbox `%s`: labels are %s", rec->id, p);
	if (!rec->state[0] || strlen(rec->state) >= sizeof(rec->state))
		return ts_err(err, -EINVAL, "sandbox `%s`: no state", rec->id);
	if (rec->created_ms < 0 || rec->started_ms < 0 || rec->last_activity_ms < 0 ||
	    rec->ttl_ms < 0 || rec->init_pid < 0 || rec->owner_pid < 0 ||
	    rec->init_start > LLONG_MAX || rec->owner_start > LLONG_MAX)
		return ts_err(err, -EINVAL, "sandbox `%s`: negative time, ttl or pid", rec->id);
	return 0;
}

/* Bind rec to ?1..?16 in COLUMNS order. */
static void bind_rec(sqlite3_stmt *st, const struct ts_sandbox_rec *rec)
{
	sqlite3_bind_text(st, 1, rec->id, -1, SQLITE_TRANSIENT);
	if (rec->name[0])
		sqlite3_bind_text(st, 2, rec->name, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, 2);
	sqlite3_bind_text(st, 3, rec->dir, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 4, rec->workspace, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 5, rec->spec ? rec->spec : "{}", -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 6, rec->labels ? rec->labels : "{}", -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 7, rec->created_ms);
	sqlite3_bind_int64(st, 8, rec->started_ms);
	sqlite3_bind_int64(st, 9, rec->last_activity_ms);
	sqlite3_bind_int64(st, 10, rec->ttl_ms);
	sqlite3_bind_int(st, 11, rec->ttl_absolute ? 1 : 0);
	sqlite3_bind_text(st, 12, rec->state, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 13, rec->init_pid);
	sqlite3_bind_int64(st, 14, (long long)rec->init_start);
	sqlite3_bind_int64(st, 15, rec->owner_pid);
	sqlite3_bind_int64(st, 16, (long long)rec->owner_start);
}

/* Which of the two unique keys was hit: sqlite names only the first it checked. An update
 * never changes the id, so there it is the name. */
static int constraint_err(struct ts_store *s, const struct ts_sandbox_rec *rec, bool inserting,
			  int rc, struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	bool id_taken = rc == SQLITE_CONSTRAINT_PRIMARYKEY;

	if ((rc & 0xff) != SQLITE_CONSTRAINT)
		return ts_sqldb_err(&s->sql, err, rc, "write sandbox record");
	if (inserting && !id_taken &&
	    sqlite3_prepare_v2(s->sql.db, "SELECT 1 FROM sandboxes WHERE id = ?1", -1, &st, NULL) ==
		    SQLITE_OK) {
		sqlite3_bind_text(st, 1, rec->id, -1, SQLITE_TRANSIENT);
		id_taken = ts_sqldb_step(st) == SQLITE_ROW;
	}
	if (id_taken || !rec->name[0])
		return ts_err(err, -EEXIST, "sandbox id `%s` is taken", rec->id);
	return ts_err(err, -EEXIST, "a sandbox named `%s` exists", rec->name);
}

int ts_store_insert(struct ts_store *s, const struct ts_sandbox_rec *rec, struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int rc, r;

	if ((r = check_rec(s, rec, err)) < 0)
		return r;
	if ((r = ts_sqldb_prepare(
		     &s->sql, &st,
		     "INSERT INTO sandboxes (" COLUMNS ") VALUES "
		     "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
		     err)) < 0)
		return r;
	bind_rec(st, rec);
	rc = ts_sqldb_step(st);
	if (rc != SQLITE_DONE)
		return constraint_err(s, rec, true, rc, err);
	return 0;
}

int ts_store_update(struct ts_store *s, const struct ts_sandbox_rec *rec, struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int rc, r;

	if ((r = check_rec(s, rec, err)) < 0)
		return r;
	if ((r = ts_sqldb_prepare(
		     &s->sql, &st,
		     "UPDATE sandboxes SET name = ?2, dir = ?3, workspace = ?4, spec = ?5, "
		     "labels = ?6, created_ms = ?7, started_ms = ?8, last_activity_ms = ?9, "
		     "ttl_ms = ?10, ttl_absolute = ?11, state = ?12, init_pid = ?13, "
		     "init_start = ?14, owner_pid = ?15, owner_start = ?16 WHERE id = ?1",
		     err)) < 0)
		return r;
	bind_rec(st, rec);
	rc = ts_sqldb_step(st);
	if (rc != SQLITE_DONE)
		return constraint_err(s, rec, false, rc, err);
	if (sqlite3_changes(s->sql.db) == 0)
		return ts_err(err, -ENOENT, "no sandbox `%s`", rec->id);
	return 0;
}

int ts_store_delete(struct ts_store *s, const char *id, struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	char buf[80];
	int rc, r;

	if ((r = ts_sqldb_prepare(&s->sql, &st, "DELETE FROM sandboxes WHERE id = ?1", err)) < 0)
		return r;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	rc = ts_sqldb_step(st);
	if (rc != SQLITE_DONE)
		return ts_sqldb_err(&s->sql, err, rc, "delete sandbox record");
	if (sqlite3_changes(s->sql.db) == 0)
		return ts_err(err, -ENOENT, "no sandbox `%s`", shown(id, buf));
	return 0;
}

int ts_store_touch(struct ts_store *s, const char *id, struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	char buf[80];
	int rc, r;

	/* max(): a slow writer with an older clock reading never moves activity back. */
	if ((r = ts_sqldb_prepare(
		     &s->sql, &st,
		     "UPDATE sandboxes SET last_activity_ms = max(last_activity_ms, ?1) "
		     "WHERE id = ?2",
		     err)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, ts_realtime_ms());
	sqlite3_bind_text(st, 2, id, -1, SQLITE_TRANSIENT);
	rc = ts_sqldb_step(st);
	if (rc != SQLITE_DONE)
		return ts_sqldb_err(&s->sql, err, rc, "touch sandbox record");
	if (sqlite3_changes(s->sql.db) == 0)
		return ts_err(err, -ENOENT, "no sandbox `%s`", shown(id, buf));
	return 0;
}

/* Read the row whose column equals value: 0, -ENOENT (quietly: err untouched), -EBADMSG. */
static int get_by(struct ts_store *s, const char *column, const char *value,
		  struct ts_sandbox_rec *rec, struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	char sql[256], why[160];
	int rc, r;

	snprintf(sql, sizeof(sql), "SELECT rowid, " COLUMNS " FROM sandboxes WHERE %s = ?1",
		 column);
	if ((r = ts_sqldb_prepare(&s->sql, &st, sql, err)) < 0)
		return r;
	sqlite3_bind_text(st, 1, value, -1, SQLITE_TRANSIENT);
	rc = ts_sqldb_step(st);
	if (rc == SQLITE_DONE)
		return -ENOENT;
	if (rc != SQLITE_ROW)
		return ts_sqldb_err(&s->sql, err, rc, "read sandbox record");
	r = row_to_rec(st, rec, why, sizeof(why));
	if (r == -EBADMSG) {
		long long rowid = sqlite3_column_int64(st, C_ROWID);
		char idbuf[80];

		shown(col_text(st, C_ID), idbuf);
		sqlite3_reset(st);
		return corrupt_row(s, rowid, idbuf, why, err);
	}
	if (r < 0)
		return ts_err(err, r, "read sandbox record: %s", why);
	return 0;
}

int ts_store_get(struct ts_store *s, const char *ref, struct ts_sandbox_rec *rec,
		 struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	char buf[80], lower[16], ids[8][16], list[400];
	size_t n = 0, len;
	int rc, r;

	memset(rec, 0, sizeof(*rec));
	s->warning[0] = '\0';
	if (!ts_store_ref_valid(ref))
		return ts_err(err, -EINVAL,
			      "bad sandbox reference `%s`: want an id, an id prefix or a name "
			      "(1-64 of [A-Za-z0-9_.-])",
			      shown(ref, buf));
	len = strlen(ref);
	/* Hex of 12 or fewer: an id or a prefix (names never look like that), in any case. */
	if (len <= 12 && all_hex(ref)) {
		for (size_t i = 0; i <= len; i++)
			lower[i] = (char)tolower((unsigned char)ref[i]);
		if (len == 12) {
			r = get_by(s, "id", lower, rec, err);
			if (r != -ENOENT)
				return r;
		}
		if ((r = ts_sqldb_prepare(&s->sql, &st,
					  "SELECT id FROM sandboxes WHERE substr(id, 1, ?2) = ?1 "
					  "ORDER BY created_ms, id",
					  err)) < 0)
			return r;
		sqlite3_bind_text(st, 1, lower, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(st, 2, (int)len);
		list[0] = '\0';
		while ((rc = ts_sqldb_step(st)) == SQLITE_ROW) {
			const char *id = (const char *)sqlite3_column_text(st, 0);

			if (n < ELEMENTSOF(ids))
				snprintf(ids[n], sizeof(ids[n]), "%s", id ? id : "");
			n++;
		}
		if (rc != SQLITE_DONE)
			return ts_sqldb_err(&s->sql, err, rc, "find sandbox");
		if (n == 1) {
			r = get_by(s, "id", ids[0], rec, err);
			/* Deleted between the two statements. */
			if (r == -ENOENT)
				return ts_err(err, -ENOENT, "no sandbox `%s`", ref);
			return r;
		}
		if (n > 1) {
			for (size_t i = 0; i < n && i < ELEMENTSOF(ids); i++) {
				size_t l = strlen(list);
				snprintf(list + l, sizeof(list) - l, "%s%s", i ? ", " : "", ids[i]);
			}
			return ts_err(err, -ENOTUNIQ, "`%s` matches %zu sandboxes: %s%s", ref, n,
				      list, n > ELEMENTSOF(ids) ? ", ..." : "");
		}
		return ts_err(err, -ENOENT, "no sandbox `%s`", ref);
	}
	r = get_by(s, "name", ref, rec, err);
	if (r == -ENOENT)
		return ts_err(err, -ENOENT, "no sandbox `%s`", ref);
	return r;
}

int ts_store_list(struct ts_store *s, struct ts_sandbox_rec **ret, size_t *ret_n,
		  struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	struct ts_sandbox_rec *recs = NULL, *t;
	long long bad_rowids[64];
	char why[160], first_bad[512] = "";
	size_t n = 0, cap = 0, n_bad = 0, n_bad_total = 0;
	int rc, r;

	s->warning[0] = '\0';
	if ((r = ts_sqldb_prepare(&s->sql, &st,
				  "SELECT rowid, " COLUMNS
				  " FROM sandboxes ORDER BY created_ms, rowid",
				  err)) < 0)
		return r;
	while ((rc = ts_sqldb_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			t = realloc(recs, cap * sizeof(*recs));
			if (!t) {
				r = ts_err(err, -ENOMEM, "out of memory");
				goto fail;
			}
			recs = t;
		}
		r = row_to_rec(st, &recs[n], why, sizeof(why));
		if (r == -EBADMSG) {
			/* Quarantined after the scan: writing inside a reading statement
			 * would need the write lock held for the whole scan. */
			if (n_bad < ELEMENTSOF(bad_rowids)) {
				bad_rowids[n_bad++] = sqlite3_column_int64(st, C_ROWID);
				if (!first_bad[0]) {
					char idbuf[80];
					msgf(first_bad, sizeof(first_bad), "`%s` (%s)",
					     shown(col_text(st, C_ID), idbuf), why);
				}
			}
			n_bad_total++;
			continue;
		}
		if (r < 0) {
			r = ts_err(err, r, "read sandbox records: %s", why);
			goto fail;
		}
		n++;
	}
	if (rc != SQLITE_DONE) {
		r = ts_sqldb_err(&s->sql, err, rc, "list sandboxes");
		goto fail;
	}
	sqlite3_finalize(TAKE_PTR(st));
	if (n_bad_total) {
		struct ts_error qerr = { 0 };
		int q = 0;

		for (size_t i = 0; i < n_bad && q >= 0; i++)
			q = quarantine(s, bad_rowids[i], "corrupt", &qerr);
		msgf(s->warning, sizeof(s->warning),
		     "%zu corrupt sandbox record%s in `%s` skipped, first %s%s%s", n_bad_total,
		     n_bad_total == 1 ? "" : "s", s->sql.path, first_bad,
		     q < 0 ? "; moving aside failed: " : ": moved to table `sandboxes_quarantine`",
		     q < 0 ? qerr.msg : "");
	}
	*ret = recs;
	*ret_n = n;
	return 0;
fail:
	ts_sandbox_recs_free(recs, n);
	return r;
}
