/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The event log of durable runs (runlog.h): runs.db, its schema and the matching of calls
 * on resume.
 *
 * Durability, per transaction (sqlite applies PRAGMA synchronous when the statement is
 * prepared and refuses it inside a transaction, so it is set by sqlite3_exec right before
 * each write transaction, and only when it changes):
 *   - the `started` record (ts_runlog_call_begin: a new call, or the attempt count of a
 *     retried one) commits with synchronous=NORMAL: its frames are written into the WAL
 *     (page cache: a killed process loses nothing) without an fsync;
 *   - the `completed` record (ts_runlog_call_complete) commits with synchronous=FULL: the
 *     WAL is fsynced before it returns. The WAL is one file appended in order, so that
 *     fsync also makes every earlier frame durable: the call's `started` record, events
 *     and seen rows written since;
 *   - events and seen rows are NORMAL (they reach the disk with the next completed call);
 *   - a run's own records (new, sandbox, finish) are FULL: a run id handed out or a
 *     sandbox recorded must survive a power cut.
 * So one fsync per tool call. A power cut can lose only what followed the last FULL
 * commit: a `started` record of a call that never completed (it executes again on
 * resume, as any started-but-not-completed call does), events and seen rows of it.
 *
 * Matching (ts_runlog_call_begin) is one BEGIN IMMEDIATE transaction: the run's state, the
 * lookup by key and the insert at the next index happen under the write lock, so two
 * processes appending to one run never take the same index, and a call is never both
 * replayed by one and retried by another from a half-read state.
 */
#include "runlog.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "paths.h"
#include "sqldb.h"
#include "util.h"

/* Sizes: what an agent sends and gets back is bounded so that one call cannot make the
 * log (and every `runs export`) carry an arbitrary amount. */
#define JSON_MAX (8U << 20)	  /* a call's arguments, a result */
#define AGENT_JSON_MAX (1U << 20) /* a run's agent configuration */
#define EVENT_DATA_MAX (1U << 20) /* an event's data */
#define KEY_MAX 512
#define PATH_MAX_BYTES 4096 /* agent_path, workspace, a seen path */
#define TOOL_MAX 128
#define BACKEND_MAX 32
#define SANDBOX_ID_MAX 128
#define EVENT_TYPE_MAX 64
#define HASH_MAX 128
#define QUOTE_MAX 100 /* bytes of JSON quoted in a divergence message */

/*
 * Schema migrations: entry i takes user_version i to i + 1. Never edit a released entry;
 * append one. Every text column is NOT NULL except a call's result (NULL: not completed);
 * a time of 0 means "not yet". calls, events and seen rows belong to their run
 * (cascading, for a later `runs rm`); an event's call must exist in the same run.
 * Not WITHOUT ROWID: a call's row holds up to 8 MiB of arguments and as much result.
 */
static const char *const migrations[] = {
	"CREATE TABLE runs ("
	" id TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 16),"
	" created_ms INTEGER NOT NULL,"
	" finished_ms INTEGER NOT NULL DEFAULT 0,"
	" agent_json TEXT NOT NULL,"
	" agent_path TEXT NOT NULL DEFAULT '',"
	" backend TEXT NOT NULL,"
	" sandbox_id TEXT NOT NULL DEFAULT '',"
	" workspace TEXT NOT NULL DEFAULT '');"
	"CREATE INDEX runs_created ON runs(created_ms);"
	"CREATE TABLE calls ("
	" run TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" idx INTEGER NOT NULL CHECK (idx >= 0),"
	" key TEXT NOT NULL,"
	" tool TEXT NOT NULL,"
	" args TEXT NOT NULL,"
	" result TEXT,"
	" attempts INTEGER NOT NULL DEFAULT 1 CHECK (attempts >= 1),"
	" started_ms INTEGER NOT NULL,"
	" completed_ms INTEGER NOT NULL DEFAULT 0,"
	" PRIMARY KEY (run, idx),"
	" UNIQUE (run, key));"
	"CREATE TABLE events ("
	" run TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" seq INTEGER NOT NULL CHECK (seq >= 0),"
	" call INTEGER,"
	" ms INTEGER NOT NULL,"
	" type TEXT NOT NULL,"
	" data TEXT NOT NULL,"
	" PRIMARY KEY (run, seq),"
	" FOREIGN KEY (run, call) REFERENCES calls(run, idx) ON DELETE CASCADE);"
	"CREATE TABLE seen ("
	" run TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" path TEXT NOT NULL,"
	" hash TEXT NOT NULL,"
	" PRIMARY KEY (run, path));",
};

/* The statements used per call, prepared once per handle. */
enum stmt_id {
	ST_BEGIN,
	ST_COMMIT,
	ST_RUN_STATE,
	ST_CALL_BY_KEY,
	ST_CALL_NEXT,
	ST_CALL_INSERT,
	ST_CALL_RETRY,
	ST_CALL_COMPLETE,
	ST_CALL_STATE,
	ST_EVENT_INSERT,
	ST_SEEN_GET,
	ST_SEEN_SET,
	ST_SEEN_DEL,
	ST__MAX,
};

static const char *const stmt_sql[ST__MAX] = {
	[ST_BEGIN] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_RUN_STATE] = "SELECT finished_ms FROM runs WHERE id = ?1",
	[ST_CALL_BY_KEY] = "SELECT idx, tool, args, result, attempts, started_ms, completed_ms"
			   " FROM calls WHERE run = ?1 AND key = ?2",
	[ST_CALL_NEXT] = "SELECT coalesce(max(idx) + 1, 0) FROM calls WHERE run = ?1",
	[ST_CALL_INSERT] = "INSERT INTO calls (run, idx, key, tool, args, attempts, started_ms)"
			   " VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6)",
	[ST_CALL_RETRY] = "UPDATE calls SET attempts = attempts + 1, started_ms = ?3"
			  " WHERE run = ?1 AND idx = ?2",
	[ST_CALL_COMPLETE] = "UPDATE calls SET result = ?3, completed_ms = ?4"
			     " WHERE run = ?1 AND idx = ?2 AND result IS NULL",
	[ST_CALL_STATE] = "SELECT result IS NOT NULL FROM calls WHERE run = ?1 AND idx = ?2",
	[ST_EVENT_INSERT] = "INSERT INTO events (run, seq, call, ms, type, data)"
			    " SELECT ?1, coalesce((SELECT max(seq) + 1 FROM events WHERE run = ?1),"
			    " 0), ?2, ?3, ?4, ?5 FROM runs WHERE id = ?1",
	[ST_SEEN_GET] = "SELECT hash FROM seen WHERE run = ?1 AND path = ?2",
	[ST_SEEN_SET] = "INSERT INTO seen (run, path, hash) VALUES (?1, ?2, ?3)"
			" ON CONFLICT (run, path) DO UPDATE SET hash = excluded.hash",
	[ST_SEEN_DEL] = "DELETE FROM seen WHERE run = ?1 AND path = ?2",
};

enum sync_mode {
	SYNC_UNKNOWN,
	SYNC_NORMAL,
	SYNC_FULL,
};

struct ts_runlog {
	struct ts_sqldb sql;
	enum sync_mode sync; /* what the connection has now */
	sqlite3_stmt *st[ST__MAX];
};

/* A statement of the cache, reset (and its bindings cleared) when it leaves scope: a
 * stepped SELECT left unreset would hold its read transaction open. */
static void stmt_resetp(sqlite3_stmt **st)
{
	if (*st) {
		sqlite3_reset(*st);
		sqlite3_clear_bindings(*st);
	}
}
#define _cleanup_reset_ _cleanup_(stmt_resetp)

static int stmt(struct ts_runlog *l, enum stmt_id id, sqlite3_stmt **ret, struct ts_error *err)
{
	if (!l->st[id]) {
		int rc = sqlite3_prepare_v3(l->sql.db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
					    &l->st[id], NULL);

		if (rc != SQLITE_OK)
			return ts_sqldb_err(&l->sql, err, rc, "prepare");
	}
	*ret = l->st[id];
	return 0;
}

/* Step a statement that returns no row. */
static int run_stmt(struct ts_runlog *l, sqlite3_stmt *st, const char *what, struct ts_error *err)
{
	int rc = ts_sqldb_step(st);

	if (rc != SQLITE_DONE)
		return ts_sqldb_err(&l->sql, err, rc, what);
	return 0;
}

static int run_cached(struct ts_runlog *l, enum stmt_id id, const char *what, struct ts_error *err)
{
	_cleanup_reset_ sqlite3_stmt *st = NULL;
	int r = stmt(l, id, &st, err);

	return r < 0 ? r : run_stmt(l, st, what, err);
}

/*
 * synchronous=NORMAL or FULL for the next write transaction. Through sqlite3_exec, not a
 * cached statement: the pragma takes effect when it is prepared, not when it is stepped.
 * Never inside a transaction (sqlite refuses that).
 */
static int set_sync(struct ts_runlog *l, enum sync_mode want, struct ts_error *err)
{
	int rc;

	if (l->sync == want)
		return 0;
	rc = sqlite3_exec(l->sql.db,
			  want == SYNC_FULL ? "PRAGMA synchronous = FULL"
					    : "PRAGMA synchronous = NORMAL",
			  NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		l->sync = SYNC_UNKNOWN;
		return ts_sqldb_err(&l->sql, err, rc, "set synchronous");
	}
	l->sync = want;
	return 0;
}

static int begin(struct ts_runlog *l, enum sync_mode sync, struct ts_error *err)
{
	int r = set_sync(l, sync, err);

	return r < 0 ? r : run_cached(l, ST_BEGIN, "begin", err);
}

static int commit(struct ts_runlog *l, struct ts_error *err)
{
	int r = run_cached(l, ST_COMMIT, "commit", err);

	if (r < 0)
		ts_sqldb_rollback(&l->sql);
	return r;
}

static int bind_text(struct ts_runlog *l, sqlite3_stmt *st, int i, const char *s,
		     struct ts_error *err)
{
	int rc = sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);

	return rc == SQLITE_OK ? 0 : ts_sqldb_err(&l->sql, err, rc, "bind");
}

static int bind_int(struct ts_runlog *l, sqlite3_stmt *st, int i, long long v, struct ts_error *err)
{
	int rc = sqlite3_bind_int64(st, i, v);

	return rc == SQLITE_OK ? 0 : ts_sqldb_err(&l->sql, err, rc, "bind");
}

/* A copy of a text column ("" for NULL); NULL only when out of memory. */
static char *col_dup(sqlite3_stmt *st, int i)
{
	const char *s = (const char *)sqlite3_column_text(st, i);

	return strdup(s ? s : "");
}

/* --- validation --- */

/*
 * s from byte `from` (moved back to the start of a UTF-8 character), at most max bytes of
 * it (cut at a character boundary), control bytes as \xNN, in backticks, with `…` where
 * something was left out. For messages: bounded, and nothing that a terminal would act on.
 */
static void quote(char *out, size_t outlen, const char *s, size_t from, size_t max)
{
	size_t len = strlen(s), o = 0, end;

	if (outlen == 0)
		return;
	if (from > len)
		from = len;
	while (from > 0 && ((unsigned char)s[from] & 0xc0) == 0x80)
		from--;
	end = len - from > max ? from + max : len;
	while (end > from && end < len && ((unsigned char)s[end] & 0xc0) == 0x80)
		end--;
#define PUT(str)                                                                                   \
	do {                                                                                       \
		int w_ = snprintf(out + o, outlen - o, "%s", str);                                 \
		o = w_ < 0 || (size_t)w_ >= outlen - o ? outlen - 1 : o + (size_t)w_;              \
	} while (0)
	PUT("`");
	if (from > 0)
		PUT("…");
	for (size_t i = from; i < end && o + 1 < outlen; i++) {
		unsigned char c = (unsigned char)s[i];
		char b[8];

		if (c < 0x20 || c == 0x7f || c == '`')
			snprintf(b, sizeof(b), c == '`' ? "\\`" : "\\x%02x", c);
		else
			b[0] = (char)c, b[1] = '\0';
		PUT(b);
	}
	if (end < len)
		PUT("…");
	PUT("`");
#undef PUT
}

/* At most max bytes (strnlen: an unterminated giant is not scanned to its end). */
static int check_len(const char *s, size_t max, const char *what, size_t *len, struct ts_error *err)
{
	size_t n = strnlen(s, max + 1);

	if (n > max)
		return ts_err(err, -E2BIG, "%s is longer than the event log's limit of %zu bytes",
			      what, max);
	if (len)
		*len = n;
	return 0;
}

/* ASCII only, whatever the locale. */
static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Printable ASCII from set (plus alphanumerics), 1..max bytes. */
static int check_word(const char *s, size_t max, const char *extra, const char *what,
		      struct ts_error *err)
{
	size_t n = strnlen(s, max + 1);

	if (n == 0 || n > max)
		return ts_err(err, -EINVAL, "%s must be 1 to %zu characters", what, max);
	for (const char *p = s; *p; p++)
		if (!is_alnum(*p) && !strchr(extra, *p))
			return ts_err(
				err, -EINVAL,
				"%s `%.64s` has a character other than letters, digits and `%s`",
				what, s, extra);
	return 0;
}

static bool is_run_id(const char *s)
{
	if (s[0] != 'r' || strnlen(s, TS_RUN_ID_LEN + 1) != TS_RUN_ID_LEN)
		return false;
	for (const char *p = s + 1; *p; p++)
		if (!(*p >= '0' && *p <= '9') && !(*p >= 'a' && *p <= 'f'))
			return false;
	return true;
}

/* Not a run id cannot be a run: -ENOENT, as for an unknown one, saying what ids look like. */
static int check_run(const char *run, struct ts_error *err)
{
	if (!run)
		return ts_err(err, -EINVAL, "no run id given");
	if (!is_run_id(run)) {
		char q[80];

		quote(q, sizeof(q), run, 0, 48);
		return ts_err(err, -ENOENT,
			      "no run %s: a run id is `r` and 15 lowercase hex digits", q);
	}
	return 0;
}

/* "k:" + 1..510 bytes without control characters, or "p:" + a decimal number. */
static int check_key(const char *key, struct ts_error *err)
{
	size_t n = strnlen(key, KEY_MAX + 1);
	char q[80];

	if (n > KEY_MAX)
		return ts_err(err, -E2BIG, "call key longer than %d bytes: use a shorter one",
			      KEY_MAX);
	quote(q, sizeof(q), key, 0, 48);
	if (n < 3 || (strncmp(key, "k:", 2) != 0 && strncmp(key, "p:", 2) != 0))
		return ts_err(err, -EINVAL, "call key %s is neither `k:KEY` nor `p:N`", q);
	for (const char *p = key; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return ts_err(err, -EINVAL, "call key %s has a control character", q);
	if (key[0] == 'p') {
		const char *d = key + 2;

		if (strspn(d, "0123456789") != strlen(d) || strlen(d) > 19 || (d[0] == '0' && d[1]))
			return ts_err(err, -EINVAL,
				      "call key %s: after `p:` comes a call's position (0, 1, ...)",
				      q);
	}
	return 0;
}

/* Parse JSON of at most max bytes; *ret the value (NULL: only checked). */
static int parse_json(const char *s, size_t max, const char *what, json_t **ret,
		      struct ts_error *err)
{
	json_error_t je;
	size_t len = 0;
	json_t *j;
	int r;

	if (!s)
		return ts_err(err, -EINVAL, "no JSON given for %s", what);
	if ((r = check_len(s, max, what, &len, err)) < 0)
		return ts_err(err, r,
			      "%s: more than %zu MiB, the event log's limit: pass large "
			      "content through a file of the workspace",
			      what, (size_t)max >> 20);
	j = json_loadb(s, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return ts_err(err, -EINVAL, "%s is not JSON: %s at line %d, column %d", what,
			      je.text, je.line, je.column);
	if (ret)
		*ret = j;
	else
		json_decref(j);
	return 0;
}

/* The canonical form of args: sorted keys, compact. */
static int canonical_args(const char *args, char **ret, struct ts_error *err)
{
	json_auto_t *j = NULL;
	int r = parse_json(args, JSON_MAX, "the call's arguments", &j, err);

	if (r < 0)
		return r;
	*ret = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	if (!*ret)
		return ts_err(err, -ENOMEM, "serialise the call's arguments");
	/* the canonical form of 8 MiB of spaced-out JSON is shorter, never longer, except
	 * for escapes jansson adds: bound the stored form too */
	if (strlen(*ret) > JSON_MAX) {
		free(TAKE_PTR(*ret));
		return ts_err(
			err, -E2BIG,
			"the call's arguments are more than %u MiB in canonical form, the "
			"event log's limit: pass large content through a file of the workspace",
			JSON_MAX >> 20);
	}
	return 0;
}

/* --- open, close --- */

int ts_runlog_open(const char *path, struct ts_runlog **ret, struct ts_error *err)
{
	struct ts_runlog *l;
	int r;

	if (!path || !path[0])
		return ts_err(err, -EINVAL, "no event log path given");
	l = calloc(1, sizeof(*l));
	if (!l)
		return ts_err(err, -ENOMEM, "allocate the event log");
	if ((r = ts_sqldb_open(&l->sql, path, err)) < 0) {
		free(l);
		return r;
	}
	l->sync = SYNC_FULL; /* ts_sqldb_open's default */
	r = ts_sqldb_migrate(&l->sql, migrations, ELEMENTSOF(migrations), err);
	if (r < 0) {
		ts_runlog_close(l);
		return ts_err_prefix(err, r, "event log");
	}
	*ret = l;
	return 0;
}

int ts_runlog_open_default(struct ts_runlog **ret, struct ts_error *err)
{
	const char *env = getenv("TOREN_SANDBOX_ROOT");
	char path[4200];
	struct stat st;
	int r;

	if (env && env[0]) {
		/* ts_paths_init also finds the helper and init, which the log does not need
		 * (and a test or a tool outside the install does not have): the root's checks
		 * of paths.c that matter for one file of ours, here. */
		if (env[0] != '/')
			return ts_err(err, -EINVAL, "TOREN_SANDBOX_ROOT `%s` is not absolute", env);
		if (ts_path_join(path, sizeof(path), env, "runs.db") < 0)
			return ts_err(err, -ENAMETOOLONG, "TOREN_SANDBOX_ROOT too long");
		r = ts_mkdir_p(AT_FDCWD, env, 0700);
		if (r < 0)
			return ts_err_errno(err, r, "create state root `%s`", env);
		if (stat(env, &st) < 0)
			return ts_err_errno(err, -errno, "state root `%s`", env);
		if (st.st_uid != geteuid() || (st.st_mode & 022))
			return ts_err(err, -EPERM,
				      "state root `%s` is not ours alone (uid %u, mode %04o): "
				      "`chmod 700` it or use one of our own (TOREN_SANDBOX_ROOT)",
				      env, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	} else {
		struct ts_paths p;

		if ((r = ts_paths_init(&p, err)) < 0)
			return r;
		if (ts_path_join(path, sizeof(path), p.root, "runs.db") < 0)
			return ts_err(err, -ENAMETOOLONG, "state root `%s` too long", p.root);
	}
	return ts_runlog_open(path, ret, err);
}

void ts_runlog_close(struct ts_runlog *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < ST__MAX; i++)
		sqlite3_finalize(l->st[i]);
	ts_sqldb_close(&l->sql);
	free(l);
}

/* --- runs --- */

void ts_run_rec_clear(struct ts_run_rec *r)
{
	if (!r)
		return;
	free(r->agent_json);
	free(r->agent_path);
	free(r->backend);
	free(r->sandbox_id);
	free(r->workspace);
	memset(r, 0, sizeof(*r));
}

void ts_run_recs_free(struct ts_run_rec *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		ts_run_rec_clear(&v[i]);
	free(v);
}

static int run_id_new(char id[TS_RUN_ID_LEN + 1], struct ts_error *err)
{
	uint64_t v;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		return ts_err_errno(err, -errno, "getrandom");
	snprintf(id, TS_RUN_ID_LEN + 1, "r%015llx",
		 (unsigned long long)(v & ((UINT64_C(1) << 60) - 1)));
	return 0;
}

int ts_runlog_run_new(struct ts_runlog *l, const char *agent_json, const char *agent_path,
		      const char *backend, const char *workspace, char id_out[TS_RUN_ID_LEN + 1],
		      struct ts_error *err)
{
	char id[TS_RUN_ID_LEN + 1];
	int r, rc;

	if ((r = parse_json(agent_json, AGENT_JSON_MAX, "the agent configuration", NULL, err)) < 0)
		return r;
	agent_path = agent_path ? agent_path : "";
	workspace = workspace ? workspace : "";
	if ((r = check_len(agent_path, PATH_MAX_BYTES, "the agent file's path", NULL, err)) < 0 ||
	    (r = check_len(workspace, PATH_MAX_BYTES, "the workspace's path", NULL, err)) < 0 ||
	    (r = check_word(backend ? backend : "", BACKEND_MAX, "-_", "backend name", err)) < 0)
		return r;
	if ((r = set_sync(l, SYNC_FULL, err)) < 0)
		return r;
	/* 60 random bits: a collision is not expected, but a second draw costs nothing */
	for (int attempt = 0; attempt < 4; attempt++) {
		_cleanup_stmt_ sqlite3_stmt *st = NULL;

		if ((r = run_id_new(id, err)) < 0)
			return r;
		if ((r = ts_sqldb_prepare(&l->sql, &st,
					  "INSERT INTO runs (id, created_ms, agent_json, agent_path,"
					  " backend, workspace) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
					  err)) < 0 ||
		    (r = bind_text(l, st, 1, id, err)) < 0 ||
		    (r = bind_int(l, st, 2, ts_realtime_ms(), err)) < 0 ||
		    (r = bind_text(l, st, 3, agent_json, err)) < 0 ||
		    (r = bind_text(l, st, 4, agent_path, err)) < 0 ||
		    (r = bind_text(l, st, 5, backend, err)) < 0 ||
		    (r = bind_text(l, st, 6, workspace, err)) < 0)
			return r;
		rc = ts_sqldb_step(st);
		if (rc == SQLITE_CONSTRAINT_PRIMARYKEY)
			continue;
		if (rc != SQLITE_DONE)
			return ts_sqldb_err(&l->sql, err, rc, "record a new run");
		memcpy(id_out, id, sizeof(id));
		return 0;
	}
	return ts_err(err, -EEXIST, "no free run id after 4 random draws in `%s`", l->sql.path);
}

#define RUN_COLUMNS                                                                                \
	"id, created_ms, finished_ms, agent_json, agent_path, backend, sandbox_id, workspace,"     \
	" (SELECT coalesce(max(idx) + 1, 0) FROM calls WHERE run = runs.id)"

static int run_from_row(sqlite3_stmt *st, struct ts_run_rec *rec, struct ts_error *err)
{
	const char *id = (const char *)sqlite3_column_text(st, 0);

	memset(rec, 0, sizeof(*rec));
	snprintf(rec->id, sizeof(rec->id), "%s", id ? id : "");
	rec->created_ms = sqlite3_column_int64(st, 1);
	rec->finished_ms = sqlite3_column_int64(st, 2);
	rec->agent_json = col_dup(st, 3);
	rec->agent_path = col_dup(st, 4);
	rec->backend = col_dup(st, 5);
	rec->sandbox_id = col_dup(st, 6);
	rec->workspace = col_dup(st, 7);
	rec->n_calls = (uint64_t)sqlite3_column_int64(st, 8);
	if (!rec->agent_json || !rec->agent_path || !rec->backend || !rec->sandbox_id ||
	    !rec->workspace) {
		ts_run_rec_clear(rec);
		return ts_err(err, -ENOMEM, "read a run");
	}
	return 0;
}

int ts_runlog_run_get(struct ts_runlog *l, const char *id, struct ts_run_rec *ret,
		      struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r, rc;

	memset(ret, 0, sizeof(*ret));
	if ((r = check_run(id, err)) < 0)
		return r;
	if ((r = ts_sqldb_prepare(&l->sql, &st, "SELECT " RUN_COLUMNS " FROM runs WHERE id = ?1",
				  err)) < 0 ||
	    (r = bind_text(l, st, 1, id, err)) < 0)
		return r;
	rc = ts_sqldb_step(st);
	if (rc == SQLITE_DONE)
		return ts_err(err, -ENOENT, "no run `%s` in `%s`", id, l->sql.path);
	if (rc != SQLITE_ROW)
		return ts_sqldb_err(&l->sql, err, rc, "read run");
	return run_from_row(st, ret, err);
}

/* One statement on a run's row, FULL; -ENOENT when it changed nothing. */
static int run_update(struct ts_runlog *l, const char *id, const char *sql, const char *text,
		      long long num, const char *what, struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	if ((r = set_sync(l, SYNC_FULL, err)) < 0 ||
	    (r = ts_sqldb_prepare(&l->sql, &st, sql, err)) < 0 ||
	    (r = bind_text(l, st, 1, id, err)) < 0 ||
	    (r = text ? bind_text(l, st, 2, text, err) : bind_int(l, st, 2, num, err)) < 0 ||
	    (r = run_stmt(l, st, what, err)) < 0)
		return r;
	if (sqlite3_changes(l->sql.db) == 0) {
		struct ts_run_rec rec;

		/* finish of a finished run changes nothing either: not an error */
		r = ts_runlog_run_get(l, id, &rec, err);
		ts_run_rec_clear(&rec);
		return r;
	}
	return 0;
}

int ts_runlog_run_set_sandbox(struct ts_runlog *l, const char *id, const char *sandbox_id,
			      struct ts_error *err)
{
	int r;

	if ((r = check_run(id, err)) < 0)
		return r;
	if (!sandbox_id)
		return ts_err(err, -EINVAL, "no sandbox id given");
	if (sandbox_id[0] &&
	    (r = check_word(sandbox_id, SANDBOX_ID_MAX, "-_.", "sandbox id", err)) < 0)
		return r;
	return run_update(l, id, "UPDATE runs SET sandbox_id = ?2 WHERE id = ?1", sandbox_id, 0,
			  "record the run's sandbox", err);
}

int ts_runlog_run_set_workspace(struct ts_runlog *l, const char *id, const char *workspace,
				struct ts_error *err)
{
	int r;

	if ((r = check_run(id, err)) < 0)
		return r;
	if (!workspace || strlen(workspace) > PATH_MAX_BYTES)
		return ts_err(err, -EINVAL, "no workspace, or one longer than %d bytes",
			      PATH_MAX_BYTES);
	return run_update(l, id, "UPDATE runs SET workspace = ?2 WHERE id = ?1", workspace, 0,
			  "record the run's workspace", err);
}

int ts_runlog_run_finish(struct ts_runlog *l, const char *id, struct ts_error *err)
{
	int r;

	if ((r = check_run(id, err)) < 0)
		return r;
	return run_update(l, id,
			  "UPDATE runs SET finished_ms = ?2 WHERE id = ?1 AND finished_ms = 0",
			  NULL, ts_realtime_ms(), "finish the run", err);
}

/* Grow *v (of *cap elements of size) to hold n + 1. */
static int grow(void **v, size_t *cap, size_t n, size_t size, struct ts_error *err)
{
	size_t c;
	void *p;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 16;
	if (c > SIZE_MAX / size)
		return ts_err(err, -ENOMEM, "list too long");
	p = realloc(*v, c * size);
	if (!p)
		return ts_err(err, -ENOMEM, "allocate a list");
	*v = p;
	*cap = c;
	return 0;
}

int ts_runlog_run_list(struct ts_runlog *l, struct ts_run_rec **ret, size_t *n,
		       struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	struct ts_run_rec *v = NULL;
	size_t cnt = 0, cap = 0;
	int r, rc;

	*ret = NULL;
	*n = 0;
	if ((r = ts_sqldb_prepare(&l->sql, &st,
				  "SELECT " RUN_COLUMNS " FROM runs ORDER BY created_ms DESC, id",
				  err)) < 0)
		return r;
	while ((rc = ts_sqldb_step(st)) == SQLITE_ROW) {
		if ((r = grow((void **)&v, &cap, cnt, sizeof(*v), err)) < 0 ||
		    (r = run_from_row(st, &v[cnt], err)) < 0)
			goto fail;
		cnt++;
	}
	if (rc != SQLITE_DONE) {
		r = ts_sqldb_err(&l->sql, err, rc, "list runs");
		goto fail;
	}
	*ret = v;
	*n = cnt;
	return 0;
fail:
	ts_run_recs_free(v, cnt);
	return r;
}

/* --- calls --- */

void ts_call_rec_clear(struct ts_call_rec *c)
{
	if (!c)
		return;
	free(c->key);
	free(c->tool);
	free(c->args);
	free(c->result);
	memset(c, 0, sizeof(*c));
}

void ts_call_recs_free(struct ts_call_rec *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		ts_call_rec_clear(&v[i]);
	free(v);
}

/* The finished_ms of run under the lock: -ENOENT without it. */
static int run_state(struct ts_runlog *l, const char *run, long long *finished,
		     struct ts_error *err)
{
	_cleanup_reset_ sqlite3_stmt *st = NULL;
	int r, rc;

	if ((r = stmt(l, ST_RUN_STATE, &st, err)) < 0 || (r = bind_text(l, st, 1, run, err)) < 0)
		return r;
	rc = ts_sqldb_step(st);
	if (rc == SQLITE_DONE)
		return ts_err(err, -ENOENT, "no run `%s` in `%s`", run, l->sql.path);
	if (rc != SQLITE_ROW)
		return ts_sqldb_err(&l->sql, err, rc, "read run");
	*finished = sqlite3_column_int64(st, 0);
	return 0;
}

static int next_index(struct ts_runlog *l, const char *run, uint64_t *idx, struct ts_error *err)
{
	_cleanup_reset_ sqlite3_stmt *st = NULL;
	int r, rc;

	if ((r = stmt(l, ST_CALL_NEXT, &st, err)) < 0 || (r = bind_text(l, st, 1, run, err)) < 0)
		return r;
	rc = ts_sqldb_step(st);
	if (rc != SQLITE_ROW)
		return ts_sqldb_err(&l->sql, err, rc, "count the run's calls");
	*idx = (uint64_t)sqlite3_column_int64(st, 0);
	return 0;
}

/* The record under key into rec: 1 found, 0 not, or -errno. */
static int call_by_key(struct ts_runlog *l, const char *run, const char *key,
		       struct ts_call_rec *rec, struct ts_error *err)
{
	_cleanup_reset_ sqlite3_stmt *st = NULL;
	int r, rc;

	if ((r = stmt(l, ST_CALL_BY_KEY, &st, err)) < 0 ||
	    (r = bind_text(l, st, 1, run, err)) < 0 || (r = bind_text(l, st, 2, key, err)) < 0)
		return r;
	rc = ts_sqldb_step(st);
	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW)
		return ts_sqldb_err(&l->sql, err, rc, "look up the call");
	rec->index = (uint64_t)sqlite3_column_int64(st, 0);
	rec->key = strdup(key);
	rec->tool = col_dup(st, 1);
	rec->args = col_dup(st, 2);
	rec->completed = sqlite3_column_type(st, 3) != SQLITE_NULL;
	rec->result = rec->completed ? col_dup(st, 3) : NULL;
	rec->attempts = (unsigned)sqlite3_column_int64(st, 4);
	rec->started_ms = sqlite3_column_int64(st, 5);
	rec->completed_ms = sqlite3_column_int64(st, 6);
	if (!rec->key || !rec->tool || !rec->args || (rec->completed && !rec->result))
		return ts_err(err, -ENOMEM, "read the call");
	return 1;
}

/* -EILSEQ naming the recorded call, both versions quoted from where they differ. */
static int divergence(const struct ts_call_rec *rec, const char *tool, const char *args,
		      struct ts_error *err)
{
	char k[80], t1[80], t2[80], a1[QUOTE_MAX + 16], a2[QUOTE_MAX + 16];
	size_t from = 0;

	if (strcmp(rec->tool, tool) == 0) {
		size_t d = 0;

		while (rec->args[d] && rec->args[d] == args[d])
			d++;
		/* some context before the first difference */
		from = d > 24 ? d - 24 : 0;
	}
	quote(k, sizeof(k), rec->key, 0, 48);
	quote(t1, sizeof(t1), rec->tool, 0, 48);
	quote(t2, sizeof(t2), tool, 0, 48);
	quote(a1, sizeof(a1), rec->args, from, QUOTE_MAX);
	quote(a2, sizeof(a2), args, from, QUOTE_MAX);
	return ts_err(err, -EILSEQ,
		      "call %llu (key %s) was recorded as %s %s; this call is %s %s: a resumed "
		      "run repeats its calls as recorded (or start a new run)",
		      (unsigned long long)rec->index, k, t1, a1, t2, a2);
}

static int call_begin_locked(struct ts_runlog *l, const char *run, const char *key,
			     const char *tool, const char *args, enum ts_call_kind *kind,
			     struct ts_call_rec *rec, struct ts_error *err)
{
	_cleanup_free_ char *pkey = NULL;
	long long finished, now = ts_realtime_ms();
	uint64_t idx = 0;
	int r;

	if ((r = run_state(l, run, &finished, err)) < 0)
		return r;
	if (finished)
		return ts_err(err, -ESTALE, "run `%s` is finished: it takes no more calls", run);
	if (key) {
		r = call_by_key(l, run, key, rec, err);
		if (r < 0)
			return r;
		if (r > 0) {
			if (strcmp(rec->tool, tool) != 0 || strcmp(rec->args, args) != 0)
				return divergence(rec, tool, args, err);
			if (rec->completed) {
				*kind = TS_CALL_REPLAY;
				return 0;
			}
			_cleanup_reset_ sqlite3_stmt *st = NULL;

			if ((r = stmt(l, ST_CALL_RETRY, &st, err)) < 0 ||
			    (r = bind_text(l, st, 1, run, err)) < 0 ||
			    (r = bind_int(l, st, 2, (long long)rec->index, err)) < 0 ||
			    (r = bind_int(l, st, 3, now, err)) < 0 ||
			    (r = run_stmt(l, st, "record the call's new attempt", err)) < 0)
				return r;
			rec->attempts++;
			rec->started_ms = now;
			*kind = TS_CALL_RETRY;
			return 0;
		}
	}
	if ((r = next_index(l, run, &idx, err)) < 0)
		return r;
	if (!key) {
		if (asprintf(&pkey, "p:%llu", (unsigned long long)idx) < 0)
			return ts_err(err, -ENOMEM, "allocate a call key");
		/* a positional key can have been recorded at another index ("p:5" given for
		 * the third call): an append must not take it over */
		r = call_by_key(l, run, pkey, rec, err);
		ts_call_rec_clear(rec);
		if (r < 0)
			return r;
		if (r > 0)
			return ts_err(err, -EEXIST,
				      "run `%s`: key `%s` of its next call was given to another "
				      "call: name this call's key",
				      run, pkey);
		key = pkey;
	}
	{
		_cleanup_reset_ sqlite3_stmt *st = NULL;

		if ((r = stmt(l, ST_CALL_INSERT, &st, err)) < 0 ||
		    (r = bind_text(l, st, 1, run, err)) < 0 ||
		    (r = bind_int(l, st, 2, (long long)idx, err)) < 0 ||
		    (r = bind_text(l, st, 3, key, err)) < 0 ||
		    (r = bind_text(l, st, 4, tool, err)) < 0 ||
		    (r = bind_text(l, st, 5, args, err)) < 0 ||
		    (r = bind_int(l, st, 6, now, err)) < 0 ||
		    (r = run_stmt(l, st, "record the call as started", err)) < 0)
			return r;
	}
	rec->index = idx;
	rec->key = pkey ? TAKE_PTR(pkey) : strdup(key);
	rec->tool = strdup(tool);
	rec->args = strdup(args);
	rec->attempts = 1;
	rec->started_ms = now;
	if (!rec->key || !rec->tool || !rec->args)
		return ts_err(err, -ENOMEM, "copy the call");
	*kind = TS_CALL_NEW;
	return 0;
}

int ts_runlog_call_begin(struct ts_runlog *l, const char *run, const char *key, const char *tool,
			 const char *args, enum ts_call_kind *kind, struct ts_call_rec *rec,
			 struct ts_error *err)
{
	_cleanup_free_ char *canon = NULL;
	int r;

	memset(rec, 0, sizeof(*rec));
	if ((r = check_run(run, err)) < 0 || (key && (r = check_key(key, err)) < 0) ||
	    (r = check_word(tool ? tool : "", TOOL_MAX, "_.-", "tool name", err)) < 0 ||
	    (r = canonical_args(args, &canon, err)) < 0)
		return r;
	/* NORMAL: the `started` record needs no fsync of its own (the file's comment) */
	if ((r = begin(l, SYNC_NORMAL, err)) < 0)
		return r;
	r = call_begin_locked(l, run, key, tool, canon, kind, rec, err);
	if (r >= 0)
		r = commit(l, err);
	else
		ts_sqldb_rollback(&l->sql);
	if (r < 0)
		ts_call_rec_clear(rec);
	return r;
}

int ts_runlog_call_complete(struct ts_runlog *l, const char *run, uint64_t index,
			    const char *result, struct ts_error *err)
{
	_cleanup_reset_ sqlite3_stmt *st = NULL;
	int r, rc;

	if ((r = check_run(run, err)) < 0 ||
	    (r = parse_json(result, JSON_MAX, "the call's result", NULL, err)) < 0)
		return r;
	if (index > INT64_MAX)
		return ts_err(err, -ENOENT, "run `%s` has no call %llu", run,
			      (unsigned long long)index);
	/* FULL: the one fsync of the call, covering its `started` record too. A finished run
	 * still takes the result of a call begun before it finished: it did execute. */
	if ((r = set_sync(l, SYNC_FULL, err)) < 0 ||
	    (r = stmt(l, ST_CALL_COMPLETE, &st, err)) < 0 ||
	    (r = bind_text(l, st, 1, run, err)) < 0 ||
	    (r = bind_int(l, st, 2, (long long)index, err)) < 0 ||
	    (r = bind_text(l, st, 3, result, err)) < 0 ||
	    (r = bind_int(l, st, 4, ts_realtime_ms(), err)) < 0 ||
	    (r = run_stmt(l, st, "record the call as completed", err)) < 0)
		return r;
	if (sqlite3_changes(l->sql.db) == 1)
		return 0;
	/* nothing changed: no such call, or it was completed already */
	sqlite3_reset(st);
	if ((r = stmt(l, ST_CALL_STATE, &st, err)) < 0 || (r = bind_text(l, st, 1, run, err)) < 0 ||
	    (r = bind_int(l, st, 2, (long long)index, err)) < 0)
		return r;
	rc = ts_sqldb_step(st);
	if (rc == SQLITE_DONE)
		return ts_err(err, -ENOENT, "run `%s` has no call %llu", run,
			      (unsigned long long)index);
	if (rc != SQLITE_ROW)
		return ts_sqldb_err(&l->sql, err, rc, "read the call");
	return ts_err(err, -EALREADY,
		      "call %llu of run `%s` is completed already (another execution of it "
		      "finished first): its recorded result stands",
		      (unsigned long long)index, run);
}

int ts_runlog_call_list(struct ts_runlog *l, const char *run, uint64_t from,
			struct ts_call_rec **ret, size_t *n, struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	struct ts_call_rec *v = NULL;
	size_t cnt = 0, cap = 0;
	long long finished;
	int r, rc;

	*ret = NULL;
	*n = 0;
	if ((r = check_run(run, err)) < 0)
		return r;
	if (from > INT64_MAX)
		return 0;
	/* one read transaction: the run's existence and its calls seen at the same point */
	if ((r = ts_sqldb_exec(&l->sql, "BEGIN", err)) < 0)
		return r;
	if ((r = run_state(l, run, &finished, err)) < 0)
		goto fail;
	if ((r = ts_sqldb_prepare(
		     &l->sql, &st,
		     "SELECT idx, key, tool, args, result, attempts, started_ms,"
		     " completed_ms FROM calls WHERE run = ?1 AND idx >= ?2 ORDER BY idx",
		     err)) < 0 ||
	    (r = bind_text(l, st, 1, run, err)) < 0 ||
	    (r = bind_int(l, st, 2, (long long)from, err)) < 0)
		goto fail;
	while ((rc = ts_sqldb_step(st)) == SQLITE_ROW) {
		struct ts_call_rec *c;

		if ((r = grow((void **)&v, &cap, cnt, sizeof(*v), err)) < 0)
			goto fail;
		c = &v[cnt++];
		memset(c, 0, sizeof(*c));
		c->index = (uint64_t)sqlite3_column_int64(st, 0);
		c->key = col_dup(st, 1);
		c->tool = col_dup(st, 2);
		c->args = col_dup(st, 3);
		c->completed = sqlite3_column_type(st, 4) != SQLITE_NULL;
		c->result = c->completed ? col_dup(st, 4) : NULL;
		c->attempts = (unsigned)sqlite3_column_int64(st, 5);
		c->started_ms = sqlite3_column_int64(st, 6);
		c->completed_ms = sqlite3_column_int64(st, 7);
		if (!c->key || !c->tool || !c->args || (c->completed && !c->result)) {
			r = ts_err(err, -ENOMEM, "read the run's calls");
			goto fail;
		}
	}
	if (rc != SQLITE_DONE) {
		r = ts_sqldb_err(&l->sql, err, rc, "list the run's calls");
		goto fail;
	}
	sqlite3_finalize(TAKE_PTR(st));
	ts_sqldb_rollback(&l->sql); /* a read transaction: nothing to keep */
	*ret = v;
	*n = cnt;
	return 0;
fail:
	sqlite3_finalize(TAKE_PTR(st));
	ts_sqldb_rollback(&l->sql);
	ts_call_recs_free(v, cnt);
	return r;
}

/* --- events --- */

int ts_runlog_event(struct ts_runlog *l, const char *run, uint64_t call, const char *type,
		    const char *data, struct ts_error *err)
{
	_cleanup_reset_ sqlite3_stmt *st = NULL;
	int r, rc;

	if ((r = check_run(run, err)) < 0 ||
	    (r = check_word(type ? type : "", EVENT_TYPE_MAX, "_.-", "event type", err)) < 0 ||
	    (r = parse_json(data, EVENT_DATA_MAX, "the event's data", NULL, err)) < 0)
		return r;
	if (call != UINT64_MAX && call > INT64_MAX)
		return ts_err(err, -ENOENT, "run `%s` has no call %llu", run,
			      (unsigned long long)call);
	if ((r = set_sync(l, SYNC_NORMAL, err)) < 0 ||
	    (r = stmt(l, ST_EVENT_INSERT, &st, err)) < 0 ||
	    (r = bind_text(l, st, 1, run, err)) < 0 ||
	    (r = call == UINT64_MAX ? 0 : bind_int(l, st, 2, (long long)call, err)) < 0 ||
	    (r = bind_int(l, st, 3, ts_realtime_ms(), err)) < 0 ||
	    (r = bind_text(l, st, 4, type, err)) < 0 || (r = bind_text(l, st, 5, data, err)) < 0)
		return r;
	rc = ts_sqldb_step(st);
	if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
		return ts_err(err, -ENOENT, "run `%s` has no call %llu", run,
			      (unsigned long long)call);
	if (rc != SQLITE_DONE)
		return ts_sqldb_err(&l->sql, err, rc, "record an event");
	if (sqlite3_changes(l->sql.db) == 0)
		return ts_err(err, -ENOENT, "no run `%s` in `%s`", run, l->sql.path);
	return 0;
}

void ts_run_events_free(struct ts_run_event *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		free(v[i].type);
		free(v[i].data);
	}
	free(v);
}

int ts_runlog_event_list(struct ts_runlog *l, const char *run, struct ts_run_event **ret, size_t *n,
			 struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	struct ts_run_event *v = NULL;
	size_t cnt = 0, cap = 0;
	long long finished;
	int r, rc;

	*ret = NULL;
	*n = 0;
	if ((r = check_run(run, err)) < 0)
		return r;
	if ((r = ts_sqldb_exec(&l->sql, "BEGIN", err)) < 0)
		return r;
	if ((r = run_state(l, run, &finished, err)) < 0)
		goto fail;
	if ((r = ts_sqldb_prepare(&l->sql, &st,
				  "SELECT seq, call, ms, type, data FROM events WHERE run = ?1"
				  " ORDER BY seq",
				  err)) < 0 ||
	    (r = bind_text(l, st, 1, run, err)) < 0)
		goto fail;
	while ((rc = ts_sqldb_step(st)) == SQLITE_ROW) {
		struct ts_run_event *e;

		if ((r = grow((void **)&v, &cap, cnt, sizeof(*v), err)) < 0)
			goto fail;
		e = &v[cnt++];
		e->seq = (uint64_t)sqlite3_column_int64(st, 0);
		e->call = sqlite3_column_type(st, 1) == SQLITE_NULL
				  ? UINT64_MAX
				  : (uint64_t)sqlite3_column_int64(st, 1);
		e->ms = sqlite3_column_int64(st, 2);
		e->type = col_dup(st, 3);
		e->data = col_dup(st, 4);
		if (!e->type || !e->data) {
			r = ts_err(err, -ENOMEM, "read the run's events");
			goto fail;
		}
	}
	if (rc != SQLITE_DONE) {
		r = ts_sqldb_err(&l->sql, err, rc, "list the run's events");
		goto fail;
	}
	sqlite3_finalize(TAKE_PTR(st));
	ts_sqldb_rollback(&l->sql);
	*ret = v;
	*n = cnt;
	return 0;
fail:
	sqlite3_finalize(TAKE_PTR(st));
	ts_sqldb_rollback(&l->sql);
	ts_run_events_free(v, cnt);
	return r;
}

/* --- seen --- */

static int check_seen(const char *run, const char *path, struct ts_error *err)
{
	int r;

	if ((r = check_run(run, err)) < 0)
		return r;
	if (!path || !path[0])
		return ts_err(err, -EINVAL, "no path given");
	return check_len(path, PATH_MAX_BYTES, "the path", NULL, err);
}

int ts_runlog_seen_get(struct ts_runlog *l, const char *run, const char *path, char *hash,
		       size_t len, struct ts_error *err)
{
	_cleanup_reset_ sqlite3_stmt *st = NULL;
	const char *h;
	int r, rc;

	if (len)
		hash[0] = '\0';
	if ((r = check_seen(run, path, err)) < 0)
		return r;
	if ((r = stmt(l, ST_SEEN_GET, &st, err)) < 0 || (r = bind_text(l, st, 1, run, err)) < 0 ||
	    (r = bind_text(l, st, 2, path, err)) < 0)
		return r;
	rc = ts_sqldb_step(st);
	if (rc == SQLITE_DONE)
		return ts_err(err, -ENOENT, "run `%s` has not seen `%.64s`", run, path);
	if (rc != SQLITE_ROW)
		return ts_sqldb_err(&l->sql, err, rc, "read a file's hash");
	h = (const char *)sqlite3_column_text(st, 0);
	if (!h || strlen(h) >= len)
		return ts_err(err, -ENOBUFS, "hash of `%.64s` does not fit %zu bytes", path, len);
	memcpy(hash, h, strlen(h) + 1);
	return 0;
}

int ts_runlog_seen_set(struct ts_runlog *l, const char *run, const char *path, const char *hash,
		       struct ts_error *err)
{
	_cleanup_reset_ sqlite3_stmt *st = NULL;
	bool forget;
	int r, rc;

	if ((r = check_seen(run, path, err)) < 0)
		return r;
	if (!hash)
		return ts_err(err, -EINVAL, "no hash given");
	/* "": forget the file (as never seen) */
	forget = !hash[0];
	if (!forget && (r = check_word(hash, HASH_MAX, "+/=_-:", "file hash", err)) < 0)
		return r;
	if ((r = set_sync(l, SYNC_NORMAL, err)) < 0 ||
	    (r = stmt(l, forget ? ST_SEEN_DEL : ST_SEEN_SET, &st, err)) < 0 ||
	    (r = bind_text(l, st, 1, run, err)) < 0 || (r = bind_text(l, st, 2, path, err)) < 0 ||
	    (!forget && (r = bind_text(l, st, 3, hash, err)) < 0))
		return r;
	rc = ts_sqldb_step(st);
	if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
		return ts_err(err, -ENOENT, "no run `%s` in `%s`", run, l->sql.path);
	if (rc != SQLITE_DONE)
		return ts_sqldb_err(&l->sql, err, rc, "record a file's hash");
	return 0;
}
