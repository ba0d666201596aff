/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The event log (src/runner/runlog.c) against a temporary directory: runs, the matching of
 * calls on resume (new, replay, retry, divergence), finished and unknown runs, appended
 * keys, bounds, events and seen rows, two processes appending to one file, a process
 * killed between `started` and `completed`, and which commits ask sqlite for an fsync
 * (counted by a VFS that wraps the default one). TAP.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runlog.h"
#include "tap.h"

static char base[256];

/* --- a VFS that counts xSync per kind of file --- */

static struct {
	sqlite3_vfs vfs;
	sqlite3_vfs *real;
	unsigned wal_syncs, db_syncs;
} counting;

struct cfile {
	sqlite3_file base;
	int is_wal;
	sqlite3_file *real; /* follows the struct */
};

#define REAL(f) (((struct cfile *)(f))->real)

static int c_close(sqlite3_file *f)
{
	return REAL(f)->pMethods->xClose(REAL(f));
}
static int c_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o)
{
	return REAL(f)->pMethods->xRead(REAL(f), b, n, o);
}
static int c_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o)
{
	return REAL(f)->pMethods->xWrite(REAL(f), b, n, o);
}
static int c_truncate(sqlite3_file *f, sqlite3_int64 n)
{
	return REAL(f)->pMethods->xTruncate(REAL(f), n);
}
static int c_sync(sqlite3_file *f, int flags)
{
	if (((struct cfile *)f)->is_wal)
		counting.wal_syncs++;
	else
		counting.db_syncs++;
	return REAL(f)->pMethods->xSync(REAL(f), flags);
}
static int c_size(sqlite3_file *f, sqlite3_int64 *n)
{
	return REAL(f)->pMethods->xFileSize(REAL(f), n);
}
static int c_lock(sqlite3_file *f, int l)
{
	return REAL(f)->pMethods->xLock(REAL(f), l);
}
static int c_unlock(sqlite3_file *f, int l)
{
	return REAL(f)->pMethods->xUnlock(REAL(f), l);
}
static int c_reserved(sqlite3_file *f, int *out)
{
	return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int c_fcntl(sqlite3_file *f, int op, void *arg)
{
	return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int c_sector(sqlite3_file *f)
{
	return REAL(f)->pMethods->xSectorSize(REAL(f));
}
static int c_devchar(sqlite3_file *f)
{
	return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}
static int c_shmmap(sqlite3_file *f, int pg, int sz, int ext, void volatile **p)
{
	return REAL(f)->pMethods->xShmMap(REAL(f), pg, sz, ext, p);
}
static int c_shmlock(sqlite3_file *f, int off, int n, int flags)
{
	return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
}
static void c_shmbarrier(sqlite3_file *f)
{
	REAL(f)->pMethods->xShmBarrier(REAL(f));
}
static int c_shmunmap(sqlite3_file *f, int del)
{
	return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}
static int c_fetch(sqlite3_file *f, sqlite3_int64 o, int n, void **p)
{
	return REAL(f)->pMethods->xFetch(REAL(f), o, n, p);
}
static int c_unfetch(sqlite3_file *f, sqlite3_int64 o, void *p)
{
	return REAL(f)->pMethods->xUnfetch(REAL(f), o, p);
}

static const sqlite3_io_methods c_methods = {
	3,	   c_close,	 c_read,     c_write, c_truncate, c_sync,    c_size,
	c_lock,	   c_unlock,	 c_reserved, c_fcntl, c_sector,	  c_devchar, c_shmmap,
	c_shmlock, c_shmbarrier, c_shmunmap, c_fetch, c_unfetch,
};

static int c_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *out)
{
	struct cfile *cf = (struct cfile *)f;
	int rc;

	(void)v;
	cf->real = (sqlite3_file *)(cf + 1);
	cf->is_wal = !!(flags & SQLITE_OPEN_WAL);
	rc = counting.real->xOpen(counting.real, name, cf->real, flags, out);
	cf->base.pMethods = cf->real->pMethods ? &c_methods : NULL;
	return rc;
}

static int c_delete(sqlite3_vfs *v, const char *n, int s)
{
	return counting.real->xDelete(counting.real, n, s);
}
static int c_access(sqlite3_vfs *v, const char *n, int fl, int *o)
{
	return counting.real->xAccess(counting.real, n, fl, o);
}
static int c_fullpath(sqlite3_vfs *v, const char *n, int len, char *o)
{
	return counting.real->xFullPathname(counting.real, n, len, o);
}
static int c_random(sqlite3_vfs *v, int n, char *o)
{
	return counting.real->xRandomness(counting.real, n, o);
}
static int c_sleep(sqlite3_vfs *v, int us)
{
	return counting.real->xSleep(counting.real, us);
}
static int c_time(sqlite3_vfs *v, double *t)
{
	return counting.real->xCurrentTime(counting.real, t);
}
static int c_lasterr(sqlite3_vfs *v, int n, char *o)
{
	return counting.real->xGetLastError(counting.real, n, o);
}
static int c_time64(sqlite3_vfs *v, sqlite3_int64 *t)
{
	return counting.real->xCurrentTimeInt64(counting.real, t);
}

/* The default VFS, wrapped: every open without a VFS name (ts_sqldb_open's) counts. */
static int counting_install(void)
{
	counting.real = sqlite3_vfs_find(NULL);
	if (!counting.real)
		return -1;
	counting.vfs = (sqlite3_vfs){
		.iVersion = 2,
		.szOsFile = (int)sizeof(struct cfile) + counting.real->szOsFile,
		.mxPathname = counting.real->mxPathname,
		.zName = "counting",
		.xOpen = c_open,
		.xDelete = c_delete,
		.xAccess = c_access,
		.xFullPathname = c_fullpath,
		.xDlOpen = NULL,
		.xRandomness = c_random,
		.xSleep = c_sleep,
		.xCurrentTime = c_time,
		.xGetLastError = c_lasterr,
		.xCurrentTimeInt64 = c_time64,
	};
	return sqlite3_vfs_register(&counting.vfs, 1) == SQLITE_OK ? 0 : -1;
}

/* --- helpers --- */

static const char *db_path(const char *name)
{
	static char p[400];

	snprintf(p, sizeof(p), "%s/%s", base, name);
	return p;
}

static long long sql_int(const char *path, const char *query)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	long long v = -1;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, "unix") != SQLITE_OK)
		return -1;
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_prepare_v2(db, query, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return v;
}

static long long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) < 0 ? -1 : (long long)st.st_size;
}

static char *big_json_string(size_t total)
{
	char *s = malloc(total + 1);

	/* "aaa...a": total bytes of JSON */
	memset(s, 'a', total);
	s[0] = '"';
	s[total - 1] = '"';
	s[total] = '\0';
	return s;
}

static const char *AGENT = "{\"name\":\"builder\",\"sandbox\":true}";

static int new_run(struct ts_runlog *l, char id[TS_RUN_ID_LEN + 1])
{
	struct ts_error err = { 0 };

	return ts_runlog_run_new(l, AGENT, "/x/agent.yaml", "local", "/x/ws", id, &err);
}

/* --- runs --- */

static void test_open_and_runs(void)
{
	struct ts_runlog *l = NULL;
	struct ts_error err = { 0 };
	struct ts_run_rec rec = { 0 }, *list = NULL;
	char id[TS_RUN_ID_LEN + 1], id2[TS_RUN_ID_LEN + 1];
	const char *path = db_path("runs.db");
	struct stat st;
	size_t n = 0;
	int r;

	umask(022);
	r = ts_runlog_open(path, &l, &err);
	ok(r == 0, "open a new event log (%s)", err.msg);
	if (r < 0)
		return;
	if (stat(path, &st) < 0)
		st.st_mode = 0;
	ok((st.st_mode & 0777) == 0600, "runs.db is 0600 (%o)", st.st_mode & 0777);
	ok(sql_int(path, "PRAGMA user_version") == 1, "schema version 1 is recorded");
	ok(sql_int(path, "SELECT count(*) FROM pragma_journal_mode WHERE journal_mode = 'wal'") ==
		   1,
	   "the log is in WAL mode");
	ok(sql_int(path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
			 "('runs', 'calls', 'events', 'seen')") == 4,
	   "tables runs, calls, events, seen exist");

	r = ts_runlog_run_new(l, AGENT, "/x/agent.yaml", "local", "/x/ws", id, &err);
	ok(r == 0, "a new run (%s)", err.msg);
	ok(strlen(id) == TS_RUN_ID_LEN && id[0] == 'r' &&
		   strspn(id + 1, "0123456789abcdef") == TS_RUN_ID_LEN - 1,
	   "its id `%s` is `r` + 15 lowercase hex", id);
	r = ts_runlog_run_get(l, id, &rec, &err);
	ok(r == 0 && strcmp(rec.id, id) == 0 && strcmp(rec.agent_json, AGENT) == 0 &&
		   strcmp(rec.agent_path, "/x/agent.yaml") == 0 &&
		   strcmp(rec.backend, "local") == 0 && strcmp(rec.workspace, "/x/ws") == 0 &&
		   strcmp(rec.sandbox_id, "") == 0 && rec.finished_ms == 0 && rec.created_ms > 0 &&
		   rec.n_calls == 0,
	   "run_get returns what was recorded (%s)", err.msg);
	ts_run_rec_clear(&rec);

	ok(ts_runlog_run_set_sandbox(l, id, "0123456789ab", &err) == 0 &&
		   ts_runlog_run_get(l, id, &rec, &err) == 0 &&
		   strcmp(rec.sandbox_id, "0123456789ab") == 0,
	   "set_sandbox records the sandbox (%s)", err.msg);
	ts_run_rec_clear(&rec);
	r = ts_runlog_run_set_sandbox(l, id, "a b;c", &err);
	ok(r == -EINVAL, "a sandbox id with a space is refused: %d %s", r, err.msg);
	r = ts_runlog_run_set_sandbox(l, "r000000000000000", "x", &err);
	ok(r == -ENOENT, "set_sandbox of an unknown run: -ENOENT (%s)", err.msg);

	r = ts_runlog_run_new(l, "{not json", NULL, "local", NULL, id2, &err);
	ok(r == -EINVAL && strstr(err.msg, "not JSON"), "agent JSON that is not JSON: %s", err.msg);
	r = ts_runlog_run_new(l, AGENT, NULL, "lo cal", NULL, id2, &err);
	ok(r == -EINVAL, "a backend name with a space: %s", err.msg);
	r = ts_runlog_run_new(l, AGENT, NULL, NULL, NULL, id2, &err);
	ok(r == -EINVAL, "no backend: %s", err.msg);

	usleep(3000); /* a later created_ms */
	r = ts_runlog_run_new(l, AGENT, NULL, "e2b", NULL, id2, &err);
	ok(r == 0 && strcmp(id, id2) != 0, "a second run, another id (%s)", err.msg);
	r = ts_runlog_run_list(l, &list, &n, &err);
	ok(r == 0 && n == 2 && strcmp(list[0].id, id2) == 0 && strcmp(list[1].id, id) == 0 &&
		   strcmp(list[0].agent_path, "") == 0 && strcmp(list[0].workspace, "") == 0,
	   "run_list: both, newest first (%s)", err.msg);
	ts_run_recs_free(list, n);

	r = ts_runlog_run_get(l, "r000000000000000", &rec, &err);
	ok(r == -ENOENT && strstr(err.msg, "r000000000000000"), "an unknown run: -ENOENT, %s",
	   err.msg);
	r = ts_runlog_run_get(l, "R00000\x1b[2J", &rec, &err);
	ok(r == -ENOENT && strstr(err.msg, "15 lowercase hex") && !strchr(err.msg, '\x1b'),
	   "not a run id: -ENOENT saying what one is, without the escape byte: %s", err.msg);

	ok(ts_runlog_run_finish(l, id2, &err) == 0 && ts_runlog_run_get(l, id2, &rec, &err) == 0 &&
		   rec.finished_ms > 0,
	   "finish records the time (%s)", err.msg);
	{
		long long t = rec.finished_ms;

		ts_run_rec_clear(&rec);
		usleep(3000);
		ok(ts_runlog_run_finish(l, id2, &err) == 0 &&
			   ts_runlog_run_get(l, id2, &rec, &err) == 0 && rec.finished_ms == t,
		   "finishing again is fine and keeps the first time");
		ts_run_rec_clear(&rec);
	}
	r = ts_runlog_run_finish(l, "rffffffffffffff0", &err);
	ok(r == -ENOENT, "finish an unknown run: -ENOENT (%s)", err.msg);
	ts_runlog_close(l);

	/* a second open of the same file: schema already there */
	r = ts_runlog_open(path, &l, &err);
	ok(r == 0 && ts_runlog_run_get(l, id, &rec, &err) == 0, "reopen: the run is still there");
	ts_run_rec_clear(&rec);
	ts_runlog_close(l);
}

static void test_open_default(void)
{
	struct ts_runlog *l = NULL;
	struct ts_error err = { 0 };
	char root[400], db[450];
	int r;

	snprintf(root, sizeof(root), "%s/root", base);
	snprintf(db, sizeof(db), "%s/runs.db", root);
	setenv("TOREN_SANDBOX_ROOT", root, 1);
	r = ts_runlog_open_default(&l, &err);
	ok(r == 0 && access(db, F_OK) == 0, "open_default creates $TOREN_SANDBOX_ROOT/runs.db (%s)",
	   err.msg);
	ts_runlog_close(l);
	l = NULL;
	chmod(root, 0777);
	r = ts_runlog_open_default(&l, &err);
	ok(r == -EPERM && !l, "a state root writable by others is refused: %s", err.msg);
	chmod(root, 0700);
	setenv("TOREN_SANDBOX_ROOT", "relative/dir", 1);
	r = ts_runlog_open_default(&l, &err);
	ok(r == -EINVAL, "a relative TOREN_SANDBOX_ROOT is refused: %s", err.msg);
	unsetenv("TOREN_SANDBOX_ROOT");
	r = ts_runlog_open(db_path("no/such/dir/runs.db"), &l, &err);
	ok(r < 0 && !l, "open in a missing directory fails: %d %s", r, err.msg);
}

/* --- calls --- */

static void test_calls(void)
{
	struct ts_runlog *l = NULL;
	struct ts_error err = { 0 };
	struct ts_call_rec rec = { 0 }, *calls = NULL;
	struct ts_run_rec run = { 0 };
	enum ts_call_kind kind = 0;
	const char *path = db_path("calls.db");
	char id[TS_RUN_ID_LEN + 1], wal[450];
	long long wal_before;
	size_t n = 0;
	int r;

	if (ts_runlog_open(path, &l, &err) < 0 || new_run(l, id) < 0) {
		skip(1, "cannot open the log");
		return;
	}
	snprintf(wal, sizeof(wal), "%s-wal", path);

	/* NEW, appended */
	r = ts_runlog_call_begin(l, id, NULL, "bash", "{ \"timeout\": 5, \"command\": \"ls\" }",
				 &kind, &rec, &err);
	ok(r == 0 && kind == TS_CALL_NEW && rec.index == 0 && strcmp(rec.key, "p:0") == 0 &&
		   rec.attempts == 1 && !rec.completed && !rec.result && rec.started_ms > 0,
	   "begin without a key: NEW, index 0, key p:0, attempt 1 (%s)", err.msg);
	ok(r == 0 && strcmp(rec.args, "{\"command\":\"ls\",\"timeout\":5}") == 0,
	   "the arguments are stored canonical (sorted keys, compact): %s", rec.args);
	ok(sql_int(path, "SELECT count(*) FROM calls WHERE key = 'p:0' AND result IS NULL") == 1,
	   "another connection sees the `started` record: it is committed");
	ts_call_rec_clear(&rec);

	r = ts_runlog_call_complete(l, id, 0, "{\"exit_code\":0,\"stdout\":\"a\\nb\\n\"}", &err);
	ok(r == 0, "complete call 0 (%s)", err.msg);
	r = ts_runlog_call_complete(l, id, 0, "{\"exit_code\":1}", &err);
	ok(r == -EALREADY, "completing it again: -EALREADY (%s)", err.msg);
	r = ts_runlog_call_complete(l, id, 7, "{}", &err);
	ok(r == -ENOENT, "completing a call never begun: -ENOENT (%s)", err.msg);
	r = ts_runlog_call_complete(l, id, 0, "{oops", &err);
	ok(r == -EINVAL, "a result that is not JSON: -EINVAL (%s)", err.msg);

	/* REPLAY: same tool, the same arguments written differently */
	wal_before = file_size(wal);
	r = ts_runlog_call_begin(l, id, "p:0", "bash", "{\"command\":\"ls\",\n \"timeout\":5}",
				 &kind, &rec, &err);
	ok(r == 0 && kind == TS_CALL_REPLAY && rec.index == 0 && rec.completed && rec.result &&
		   strcmp(rec.result, "{\"exit_code\":0,\"stdout\":\"a\\nb\\n\"}") == 0 &&
		   rec.attempts == 1 && rec.completed_ms >= rec.started_ms,
	   "begin p:0 again with equal arguments: REPLAY with the recorded result (%s)", err.msg);
	ok(file_size(wal) == wal_before && wal_before > 0,
	   "a replay writes nothing (WAL stays at %lld bytes)", wal_before);
	ts_call_rec_clear(&rec);

	/* keyed NEW, then RETRY */
	r = ts_runlog_call_begin(l, id, "k:build", "write_file",
				 "{\"path\":\"a\",\"content\":\"x\"}", &kind, &rec, &err);
	ok(r == 0 && kind == TS_CALL_NEW && rec.index == 1 && strcmp(rec.key, "k:build") == 0,
	   "a keyed call takes the next index: 1 (%s)", err.msg);
	ts_call_rec_clear(&rec);
	r = ts_runlog_call_begin(l, id, "k:build", "write_file",
				 "{\"content\":\"x\",\"path\":\"a\"}", &kind, &rec, &err);
	ok(r == 0 && kind == TS_CALL_RETRY && rec.index == 1 && rec.attempts == 2 && !rec.completed,
	   "begun again before completing: RETRY, attempt 2 (%s)", err.msg);
	ts_call_rec_clear(&rec);
	r = ts_runlog_call_begin(l, id, "k:build", "write_file",
				 "{\"content\":\"x\",\"path\":\"a\"}", &kind, &rec, &err);
	ok(r == 0 && kind == TS_CALL_RETRY && rec.attempts == 3, "and again: attempt 3");
	ts_call_rec_clear(&rec);
	ok(ts_runlog_call_complete(l, id, 1, "{\"ok\":true}", &err) == 0, "complete call 1");
	r = ts_runlog_call_begin(l, id, "k:build", "write_file",
				 "{\"content\":\"x\",\"path\":\"a\"}", &kind, &rec, &err);
	ok(r == 0 && kind == TS_CALL_REPLAY && rec.attempts == 3 &&
		   strcmp(rec.result, "{\"ok\":true}") == 0,
	   "after completing: REPLAY, attempts stay 3");
	ts_call_rec_clear(&rec);

	/* divergence */
	r = ts_runlog_call_begin(l, id, "p:0", "bash", "{\"command\":\"pwd\",\"timeout\":5}", &kind,
				 &rec, &err);
	ok(r == -EILSEQ && !rec.key, "p:0 with other arguments: -EILSEQ");
	diag("%s", err.msg);
	ok(strstr(err.msg, "call 0 (key `p:0`)") && strstr(err.msg, "{\"command\":\"ls\"") &&
		   strstr(err.msg, "{\"command\":\"pwd\""),
	   "the message names call 0 and both arguments");
	r = ts_runlog_call_begin(l, id, "p:0", "read_file", "{\"command\":\"ls\",\"timeout\":5}",
				 &kind, &rec, &err);
	ok(r == -EILSEQ && strstr(err.msg, "`bash`") && strstr(err.msg, "`read_file`"),
	   "p:0 with another tool: -EILSEQ naming both tools: %s", err.msg);
	{
		/* long arguments that differ near their end: the message shows where */
		size_t len = 4000;
		char *a = malloc(len + 64), *b = malloc(len + 64);

		snprintf(a, len + 64, "{\"content\":\"%0*d END-A\"}", (int)len, 0);
		snprintf(b, len + 64, "{\"content\":\"%0*d END-B\"}", (int)len, 0);
		r = ts_runlog_call_begin(l, id, "k:long", "write_file", a, &kind, &rec, &err);
		ts_call_rec_clear(&rec);
		r = r < 0 ? r
			  : ts_runlog_call_begin(l, id, "k:long", "write_file", b, &kind, &rec,
						 &err);
		ok(r == -EILSEQ && strstr(err.msg, "END-A") && strstr(err.msg, "END-B") &&
			   strstr(err.msg, "…") && strlen(err.msg) < sizeof(err.msg) - 1,
		   "4 KiB arguments differing at the end: the message is bounded (%zu bytes) and "
		   "shows the difference",
		   strlen(err.msg));
		diag("%s", err.msg);
		free(a);
		free(b);
	}
	ok(ts_runlog_run_get(l, id, &run, &err) == 0 && run.n_calls == 3,
	   "divergences record nothing: the run has 3 calls (%s)", err.msg);
	ts_run_rec_clear(&run);

	/* appended keys follow the index */
	r = ts_runlog_call_begin(l, id, NULL, "bash", "{\"command\":\"true\"}", &kind, &rec, &err);
	ok(r == 0 && kind == TS_CALL_NEW && rec.index == 3 && strcmp(rec.key, "p:3") == 0,
	   "the next appended call: index 3, key p:3 (%s)", err.msg);
	ts_call_rec_clear(&rec);
	r = ts_runlog_call_begin(l, id, "p:9", "bash", "{\"command\":\"x\"}", &kind, &rec, &err);
	ok(r == 0 && kind == TS_CALL_NEW && rec.index == 4 && strcmp(rec.key, "p:9") == 0,
	   "an unseen position key p:9 is a new call at index 4 (%s)", err.msg);
	ts_call_rec_clear(&rec);
	r = ts_runlog_call_begin(l, id, NULL, "bash", "{}", &kind, &rec, &err);
	ok(r == 0 && rec.index == 5 && strcmp(rec.key, "p:5") == 0, "append: index 5, key p:5");
	ts_call_rec_clear(&rec);
	for (int i = 0; i < 3; i++) {
		r = ts_runlog_call_begin(l, id, NULL, "bash", "{}", &kind, &rec, &err);
		ts_call_rec_clear(&rec);
	}
	r = ts_runlog_call_begin(l, id, NULL, "bash", "{}", &kind, &rec, &err);
	ok(r == -EEXIST && strstr(err.msg, "p:9"),
	   "an append whose key p:9 was taken by another call: -EEXIST (%s)", err.msg);

	/* call_list */
	r = ts_runlog_call_list(l, id, 0, &calls, &n, &err);
	ok(r == 0 && n == 9, "call_list: 9 calls (%zu; %s)", n, err.msg);
	if (r == 0 && n == 9) {
		bool in_order = true;

		for (size_t i = 0; i < n; i++)
			in_order = in_order && calls[i].index == i;
		ok(in_order && calls[0].completed && calls[1].completed && !calls[2].completed &&
			   calls[1].attempts == 3 && strcmp(calls[1].tool, "write_file") == 0 &&
			   strcmp(calls[4].key, "p:9") == 0 && !calls[3].result,
		   "in index order, with their state");
	} else {
		skip(1, "no list");
	}
	ts_call_recs_free(calls, n);
	r = ts_runlog_call_list(l, id, 7, &calls, &n, &err);
	ok(r == 0 && n == 2 && calls[0].index == 7, "call_list from 7: 2 calls");
	ts_call_recs_free(calls, n);
	r = ts_runlog_call_list(l, "r0000000000000ff", 0, &calls, &n, &err);
	ok(r == -ENOENT && n == 0, "call_list of an unknown run: -ENOENT (%s)", err.msg);

	/* finished and unknown runs */
	r = ts_runlog_call_begin(l, "r0000000000000ff", NULL, "bash", "{}", &kind, &rec, &err);
	ok(r == -ENOENT, "begin on an unknown run: -ENOENT (%s)", err.msg);
	ok(ts_runlog_run_finish(l, id, &err) == 0, "finish the run");
	r = ts_runlog_call_begin(l, id, NULL, "bash", "{}", &kind, &rec, &err);
	ok(r == -ESTALE, "begin on a finished run: -ESTALE (%s)", err.msg);
	r = ts_runlog_call_begin(l, id, "p:0", "bash", "{\"command\":\"ls\",\"timeout\":5}", &kind,
				 &rec, &err);
	ok(r == -ESTALE, "even a replay: -ESTALE");
	ts_runlog_close(l);
}

static void test_bounds(void)
{
	struct ts_runlog *l = NULL;
	struct ts_error err = { 0 };
	struct ts_call_rec rec = { 0 };
	enum ts_call_kind kind = 0;
	char id[TS_RUN_ID_LEN + 1], key[600], hash[64];
	char *big;
	int r;

	if (ts_runlog_open(db_path("bounds.db"), &l, &err) < 0 || new_run(l, id) < 0) {
		skip(1, "cannot open the log");
		return;
	}
	big = big_json_string((8U << 20) + 1);
	r = ts_runlog_call_begin(l, id, NULL, "write_file", big, &kind, &rec, &err);
	ok(r == -E2BIG && strstr(err.msg, "8 MiB"), "arguments of 8 MiB + 1 byte: -E2BIG, %s",
	   err.msg);
	free(big);
	big = big_json_string(8U << 20);
	r = ts_runlog_call_begin(l, id, NULL, "write_file", big, &kind, &rec, &err);
	ok(r == 0 && kind == TS_CALL_NEW, "arguments of exactly 8 MiB are taken (%s)", err.msg);
	ts_call_rec_clear(&rec);
	r = ts_runlog_call_complete(l, id, 0, big, &err);
	ok(r == 0, "a result of exactly 8 MiB is taken (%s)", err.msg);
	free(big);
	big = big_json_string((8U << 20) + 1);
	r = ts_runlog_call_complete(l, id, 0, big, &err);
	ok(r == -E2BIG, "a result of 8 MiB + 1: -E2BIG (%s)", err.msg);
	free(big);

	memset(key, 'x', sizeof(key));
	memcpy(key, "k:", 2);
	key[513] = '\0';
	r = ts_runlog_call_begin(l, id, key, "bash", "{}", &kind, &rec, &err);
	ok(r == -E2BIG, "a key of 513 bytes: -E2BIG (%s)", err.msg);
	key[512] = '\0';
	r = ts_runlog_call_begin(l, id, key, "bash", "{}", &kind, &rec, &err);
	ok(r == 0 && kind == TS_CALL_NEW, "a key of 512 bytes is taken (%s)", err.msg);
	ts_call_rec_clear(&rec);
	static const char *const bad_keys[] = { "x:1",	"k:",	"p:",	  "p:01",
						"p:1a", "p:-1", "k:a\nb", "p:12345678901234567890",
						"plain" };
	for (size_t i = 0; i < sizeof(bad_keys) / sizeof(bad_keys[0]); i++) {
		r = ts_runlog_call_begin(l, id, bad_keys[i], "bash", "{}", &kind, &rec, &err);
		ok(r == -EINVAL && !strchr(err.msg, '\n'), "key %zu is refused: %s", i, err.msg);
	}
	r = ts_runlog_call_begin(l, id, NULL, "ba sh", "{}", &kind, &rec, &err);
	ok(r == -EINVAL, "a tool name with a space: -EINVAL (%s)", err.msg);
	r = ts_runlog_call_begin(l, id, NULL, "bash", "{\"a\":1,\"a\":2}", &kind, &rec, &err);
	ok(r == -EINVAL, "arguments with a duplicate key: -EINVAL (%s)", err.msg);
	r = ts_runlog_call_begin(l, id, NULL, "bash", NULL, &kind, &rec, &err);
	ok(r == -EINVAL, "no arguments: -EINVAL (%s)", err.msg);

	big = malloc(4098);
	memset(big, 'p', 4097);
	big[4097] = '\0';
	r = ts_runlog_seen_set(l, id, big, "abc", &err);
	ok(r == -E2BIG, "a seen path of 4097 bytes: -E2BIG (%s)", err.msg);
	big[4096] = '\0';
	r = ts_runlog_seen_set(l, id, big, "abc", &err);
	ok(r == 0 && ts_runlog_seen_get(l, id, big, hash, sizeof(hash), &err) == 0 &&
		   strcmp(hash, "abc") == 0,
	   "a seen path of 4096 bytes is taken (%s)", err.msg);
	free(big);
	ts_runlog_close(l);
}

static void test_events_seen(void)
{
	struct ts_runlog *l = NULL;
	struct ts_error err = { 0 };
	struct ts_call_rec rec = { 0 };
	struct ts_run_event *ev = NULL;
	enum ts_call_kind kind = 0;
	char id[TS_RUN_ID_LEN + 1], hash[40];
	size_t n = 0;
	int r;

	if (ts_runlog_open(db_path("events.db"), &l, &err) < 0 || new_run(l, id) < 0) {
		skip(1, "cannot open the log");
		return;
	}
	ts_runlog_call_begin(l, id, NULL, "bash", "{}", &kind, &rec, &err);
	ts_call_rec_clear(&rec);
	r = ts_runlog_event(l, id, 0, "approval", "{\"decision\":\"allow\",\"by\":\"tty\"}", &err);
	ok(r == 0, "an event of call 0 (%s)", err.msg);
	r = ts_runlog_event(l, id, UINT64_MAX, "sandbox.rebuilt", "{\"sandbox\":\"abc\"}", &err);
	ok(r == 0, "an event of no call (%s)", err.msg);
	r = ts_runlog_event(l, id, 5, "approval", "{}", &err);
	ok(r == -ENOENT && strstr(err.msg, "no call 5"),
	   "an event of an unknown call: -ENOENT (%s)", err.msg);
	r = ts_runlog_event(l, "r0000000000000aa", UINT64_MAX, "x", "{}", &err);
	ok(r == -ENOENT, "an event of an unknown run: -ENOENT (%s)", err.msg);
	r = ts_runlog_event(l, id, UINT64_MAX, "x", "nope", &err);
	ok(r == -EINVAL, "event data that is not JSON: -EINVAL (%s)", err.msg);
	r = ts_runlog_event(l, id, UINT64_MAX, "a type", "{}", &err);
	ok(r == -EINVAL, "an event type with a space: -EINVAL (%s)", err.msg);
	r = ts_runlog_event_list(l, id, &ev, &n, &err);
	ok(r == 0 && n == 2 && ev[0].seq == 0 && ev[0].call == 0 &&
		   strcmp(ev[0].type, "approval") == 0 &&
		   strcmp(ev[0].data, "{\"decision\":\"allow\",\"by\":\"tty\"}") == 0 &&
		   ev[1].seq == 1 && ev[1].call == UINT64_MAX && ev[1].ms > 0,
	   "event_list: both in order, call none as UINT64_MAX (%s)", err.msg);
	ts_run_events_free(ev, n);
	r = ts_runlog_event_list(l, "r0000000000000aa", &ev, &n, &err);
	ok(r == -ENOENT && n == 0, "event_list of an unknown run: -ENOENT");

	r = ts_runlog_seen_get(l, id, "src/a.c", hash, sizeof(hash), &err);
	ok(r == -ENOENT && hash[0] == '\0', "seen_get of a file never seen: -ENOENT, \"\"");
	ok(ts_runlog_seen_set(l, id, "src/a.c", "0123456789abcdef0123456789abcdef", &err) == 0 &&
		   ts_runlog_seen_get(l, id, "src/a.c", hash, sizeof(hash), &err) == 0 &&
		   strcmp(hash, "0123456789abcdef0123456789abcdef") == 0,
	   "seen_set then seen_get (%s)", err.msg);
	ok(ts_runlog_seen_set(l, id, "src/a.c", "ffff", &err) == 0 &&
		   ts_runlog_seen_get(l, id, "src/a.c", hash, sizeof(hash), &err) == 0 &&
		   strcmp(hash, "ffff") == 0,
	   "seen_set replaces the hash");
	r = ts_runlog_seen_get(l, id, "src/a.c", hash, 4, &err);
	ok(r == -ENOBUFS, "a buffer too small for the hash: -ENOBUFS (%s)", err.msg);
	ok(ts_runlog_seen_set(l, id, "src/a.c", "", &err) == 0 &&
		   ts_runlog_seen_get(l, id, "src/a.c", hash, sizeof(hash), &err) == -ENOENT,
	   "seen_set \"\" forgets the file");
	r = ts_runlog_seen_set(l, "r0000000000000aa", "x", "ab", &err);
	ok(r == -ENOENT, "seen_set on an unknown run: -ENOENT (%s)", err.msg);
	r = ts_runlog_seen_set(l, id, "x", "a b", &err);
	ok(r == -EINVAL, "a hash with a space: -EINVAL (%s)", err.msg);
	r = ts_runlog_seen_set(l, id, "", "ab", &err);
	ok(r == -EINVAL, "an empty path: -EINVAL (%s)", err.msg);
	ts_runlog_close(l);
}

/* Which commits ask for an fsync: counted by the wrapping VFS (counting_install). */
static void test_syncs(void)
{
	struct ts_runlog *l = NULL;
	struct ts_error err = { 0 };
	struct ts_call_rec rec = { 0 };
	enum ts_call_kind kind = 0;
	char id[TS_RUN_ID_LEN + 1];
	unsigned w, d;
	int r;

	if (!counting.real) {
		skip(7, "the counting VFS could not be installed");
		return;
	}
	if (ts_runlog_open(db_path("sync.db"), &l, &err) < 0) {
		skip(7, "cannot open the log");
		return;
	}
	counting.wal_syncs = counting.db_syncs = 0;
	r = new_run(l, id);
	ok(r == 0 && counting.wal_syncs == 1, "a new run: one fsync of the WAL (%u)",
	   counting.wal_syncs);
	for (int i = 0; i < 3; i++) {
		counting.wal_syncs = counting.db_syncs = 0;
		r = ts_runlog_call_begin(l, id, NULL, "bash", "{\"command\":\"ls\"}", &kind, &rec,
					 &err);
		w = counting.wal_syncs;
		d = counting.db_syncs;
		ts_call_rec_clear(&rec);
		counting.wal_syncs = counting.db_syncs = 0;
		r = r < 0 ? r : ts_runlog_call_complete(l, id, (uint64_t)i, "{\"ok\":1}", &err);
		ok(r == 0 && w == 0 && d == 0 && counting.wal_syncs == 1 && counting.db_syncs == 0,
		   "call %d: `started` commits without an fsync (%u, %u), `completed` with one of "
		   "the WAL (%u, %u)",
		   i, w, d, counting.wal_syncs, counting.db_syncs);
	}
	counting.wal_syncs = counting.db_syncs = 0;
	r = ts_runlog_call_begin(l, id, "k:r", "bash", "{}", &kind, &rec, &err);
	ts_call_rec_clear(&rec);
	r = r < 0 ? r : ts_runlog_call_begin(l, id, "k:r", "bash", "{}", &kind, &rec, &err);
	ok(r == 0 && kind == TS_CALL_RETRY && counting.wal_syncs == 0,
	   "a retry's `started` record: no fsync (%u)", counting.wal_syncs);
	ts_call_rec_clear(&rec);
	counting.wal_syncs = counting.db_syncs = 0;
	r = ts_runlog_event(l, id, 0, "approval", "{}", &err);
	r = r < 0 ? r : ts_runlog_seen_set(l, id, "a", "ab", &err);
	ok(r == 0 && counting.wal_syncs == 0 && counting.db_syncs == 0,
	   "an event and a seen row: no fsync (%u)", counting.wal_syncs);
	counting.wal_syncs = counting.db_syncs = 0;
	r = ts_runlog_run_set_sandbox(l, id, "abc", &err);
	r = r < 0 ? r : ts_runlog_run_finish(l, id, &err);
	ok(r == 0 && counting.wal_syncs == 2, "set_sandbox and finish: one fsync each (%u)",
	   counting.wal_syncs);
	ts_runlog_close(l);
}

/* --- processes --- */

/* N children append M calls each through their own handles; every index is taken once. */
static void test_concurrent(void)
{
	enum {
		N = 4,
		M = 40
	};
	struct ts_runlog *l = NULL;
	struct ts_error err = { 0 };
	struct ts_call_rec *calls = NULL;
	const char *path = db_path("concurrent.db");
	char id[TS_RUN_ID_LEN + 1];
	pid_t pids[N];
	int fds[2], status, failed = 0, news = 0, others = 0;
	size_t n = 0;

	if (ts_runlog_open(path, &l, &err) < 0 || new_run(l, id) < 0 || pipe(fds) < 0) {
		skip(3, "cannot open the log");
		return;
	}
	ts_runlog_close(l);
	for (int c = 0; c < N; c++) {
		pids[c] = fork();
		if (pids[c] == 0) {
			struct ts_runlog *cl = NULL;
			struct ts_call_rec rec;
			enum ts_call_kind kind;
			char args[64], res[64], k;

			close(fds[0]);
			if (ts_runlog_open(path, &cl, &err) < 0)
				_exit(2);
			for (int i = 0; i < M; i++) {
				snprintf(args, sizeof(args), "{\"child\":%d,\"i\":%d}", c, i);
				if (ts_runlog_call_begin(cl, id, NULL, "bash", args, &kind, &rec,
							 &err) < 0 ||
				    kind != TS_CALL_NEW)
					_exit(3);
				snprintf(res, sizeof(res), "{\"index\":%llu}",
					 (unsigned long long)rec.index);
				if (ts_runlog_call_complete(cl, id, rec.index, res, &err) < 0)
					_exit(4);
				ts_call_rec_clear(&rec);
			}
			/* all at once on one key: exactly one of them is NEW */
			if (ts_runlog_call_begin(cl, id, "k:same", "bash", "{}", &kind, &rec,
						 &err) < 0)
				_exit(5);
			k = kind == TS_CALL_NEW ? 'N' : 'o';
			if (write(fds[1], &k, 1) != 1)
				_exit(6);
			ts_call_rec_clear(&rec);
			ts_runlog_close(cl);
			_exit(0);
		}
	}
	close(fds[1]);
	for (int c = 0; c < N; c++)
		if (pids[c] < 0 || waitpid(pids[c], &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			failed++;
	for (char k; read(fds[0], &k, 1) == 1;)
		k == 'N' ? news++ : others++;
	close(fds[0]);
	ok(failed == 0, "%d processes appended %d calls each, every begin NEW (%d failed)", N, M,
	   failed);
	if (ts_runlog_open(path, &l, &err) < 0 ||
	    ts_runlog_call_list(l, id, 0, &calls, &n, &err) < 0) {
		skip(2, "cannot list");
		ts_runlog_close(l);
		return;
	}
	{
		/* the k:same call lands wherever the first child to get there put it */
		bool good = n == N * M + 1;
		int same = 0;
		char key[32], res[64];

		for (size_t i = 0; good && i < n; i++) {
			if (strcmp(calls[i].key, "k:same") == 0) {
				same++;
				good = calls[i].index == i;
				continue;
			}
			snprintf(key, sizeof(key), "p:%zu", i);
			snprintf(res, sizeof(res), "{\"index\":%zu}", i);
			good = calls[i].index == i && strcmp(calls[i].key, key) == 0 &&
			       calls[i].completed && strcmp(calls[i].result, res) == 0 &&
			       calls[i].attempts == 1;
			if (!good)
				diag("call %zu: index %llu key %s result %s attempts %u", i,
				     (unsigned long long)calls[i].index, calls[i].key,
				     calls[i].result ? calls[i].result : "(none)",
				     calls[i].attempts);
		}
		ok(good && same == 1,
		   "%zu calls: indexes 0..%d each once, key p:<index>, completed by its taker", n,
		   N * M);
	}
	ok(news == 1 && others == N - 1,
	   "one key begun by %d processes at once: one NEW, %d retries (%d, %d)", N, N - 1, news,
	   others);
	ts_call_recs_free(calls, n);
	ts_runlog_close(l);
}

/*
 * A child begins a call and is killed (SIGKILL) before completing it: the parent's begin
 * is a RETRY. One killed after completing: a REPLAY. One killed inside an open write
 * transaction: nothing of it is seen, and its lock does not hold anyone up.
 */
static void test_crash(void)
{
	struct ts_runlog *l = NULL;
	struct ts_error err = { 0 };
	struct ts_call_rec rec = { 0 };
	enum ts_call_kind kind = 0;
	const char *path = db_path("crash.db");
	char id[TS_RUN_ID_LEN + 1];
	int r;

	if (ts_runlog_open(path, &l, &err) < 0 || new_run(l, id) < 0) {
		skip(4, "cannot open the log");
		return;
	}
	ts_runlog_close(l);
	for (int mode = 0; mode < 3; mode++) {
		int fds[2], status;
		pid_t pid;
		char c = 0;

		if (pipe(fds) < 0)
			return;
		pid = fork();
		if (pid == 0) {
			struct ts_runlog *cl = NULL;

			close(fds[0]);
			if (mode < 2) {
				if (ts_runlog_open(path, &cl, &err) < 0 ||
				    ts_runlog_call_begin(cl, id, mode ? "k:done" : "k:crash",
							 "bash", "{\"command\":\"sleep 9\"}", &kind,
							 &rec, &err) < 0)
					_exit(2);
				if (mode == 1 && ts_runlog_call_complete(cl, id, rec.index,
									 "{\"exit\":0}", &err) < 0)
					_exit(3);
			} else {
				sqlite3 *db;

				if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, "unix") ||
				    sqlite3_exec(db,
						 "BEGIN IMMEDIATE; INSERT INTO calls (run, idx, key,"
						 " tool, args, started_ms) SELECT id, 99, 'k:half',"
						 " 'bash', '{}', 1 FROM runs",
						 NULL, NULL, NULL))
					_exit(4);
			}
			if (write(fds[1], "x", 1) != 1)
				_exit(5);
			pause();
			_exit(0);
		}
		close(fds[1]);
		r = (int)read(fds[0], &c, 1);
		close(fds[0]);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		if (r != 1 || !WIFSIGNALED(status)) {
			ok(0, "child %d got as far as its kill (status %d)", mode, status);
			continue;
		}
		if (ts_runlog_open(path, &l, &err) < 0) {
			ok(0, "reopen after the kill: %s", err.msg);
			continue;
		}
		if (mode == 0) {
			r = ts_runlog_call_begin(l, id, "k:crash", "bash",
						 "{\"command\":\"sleep 9\"}", &kind, &rec, &err);
			ok(r == 0 && kind == TS_CALL_RETRY && rec.attempts == 2 && !rec.completed,
			   "killed between started and completed: the next begin is a RETRY, attempt "
			   "2 (%s)",
			   err.msg);
		} else if (mode == 1) {
			r = ts_runlog_call_begin(l, id, "k:done", "bash",
						 "{\"command\":\"sleep 9\"}", &kind, &rec, &err);
			ok(r == 0 && kind == TS_CALL_REPLAY &&
				   strcmp(rec.result, "{\"exit\":0}") == 0,
			   "killed after completed: the next begin is a REPLAY (%s)", err.msg);
		} else {
			time_t t0 = time(NULL);

			r = ts_runlog_call_begin(l, id, "k:half", "bash", "{}", &kind, &rec, &err);
			ok(r == 0 && kind == TS_CALL_NEW && rec.index == 2 && time(NULL) - t0 < 3,
			   "killed inside a write transaction: its row is not there, its lock is "
			   "gone (NEW at index %llu; %s)",
			   (unsigned long long)rec.index, err.msg);
		}
		ts_call_rec_clear(&rec);
		ts_runlog_close(l);
		l = NULL;
	}
	ok(sql_int(path, "SELECT count(*) FROM calls") == 3, "three calls recorded, none twice");
}

int main(void)
{
	char tmpl[] = "/tmp/test-runlog.XXXXXX";
	int r;

	plan(0);
	if (!mkdtemp(tmpl)) {
		printf("1..0 # SKIP mkdtemp: %s\n", strerror(errno));
		return 0;
	}
	snprintf(base, sizeof(base), "%s", tmpl);
	r = counting_install();
	ok(r == 0, "a VFS counting fsyncs wraps the default one");
	test_open_and_runs();
	test_open_default();
	test_calls();
	test_bounds();
	test_events_seen();
	test_syncs();
	test_concurrent();
	test_crash();
	{
		char cmd[400];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
		if (system(cmd) != 0)
			diag("could not remove %s", base);
	}
	return done();
}
