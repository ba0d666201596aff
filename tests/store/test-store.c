/* SPDX-License-Identifier: Apache-2.0 */
/* The sandbox store (src/lib/store.c) against a temporary state root. TAP. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "tap.h"
#include "util.h"

static char base[256];

static void mkroot(char *root, size_t len, const char *name)
{
	snprintf(root, len, "%s/%s", base, name);
	ts_mkdir_p(AT_FDCWD, root, 0700);
}

static void fill(struct ts_sandbox_rec *r, const char *id, const char *name, long long created)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", id);
	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->dir, sizeof(r->dir), "/state/%s", id);
	snprintf(r->workspace, sizeof(r->workspace), "/state/%s/workspace", id);
	r->spec = (char *)"{\"image\":null,\"env\":[\"A=1\"]}";
	r->labels = (char *)"{\"team\":\"x\"}";
	r->created_ms = created;
	r->last_activity_ms = created;
	r->ttl_ms = 1800000;
	snprintf(r->state, sizeof(r->state), "stopped");
}

static int sql(const char *root, const char *stmt)
{
	char path[512];
	sqlite3 *db;
	int rc;

	snprintf(path, sizeof(path), "%s/state.db", root);
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	sqlite3_busy_timeout(db, 5000);
	rc = sqlite3_exec(db, stmt, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc == SQLITE_OK ? 0 : -1;
}

static long long sql_int(const char *root, const char *query)
{
	char path[512];
	sqlite3 *db;
	sqlite3_stmt *st;
	long long v = -1;

	snprintf(path, sizeof(path), "%s/state.db", root);
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	if (sqlite3_prepare_v2(db, query, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return v;
}

static void test_names(void)
{
	char longname[80];

	ok(ts_store_name_valid("web"), "`web` is a valid name");
	ok(ts_store_name_valid("Web-1.x_y"), "letters, digits, `-._` are allowed");
	ok(ts_store_name_valid("1234567890abc"),
	   "13 hex digits are a valid name (longer than an id)");
	ok(!ts_store_name_valid("abc123"),
	   "a short all-hex name is refused (would shadow a prefix)");
	ok(!ts_store_name_valid("ABC"), "upper-case hex is refused as well");
	ok(!ts_store_name_valid("a"), "`a` (a one-digit prefix) is refused");
	ok(!ts_store_name_valid(""), "the empty name is refused");
	ok(!ts_store_name_valid("-x"), "a name starting with `-` is refused");
	ok(!ts_store_name_valid("a b") && !ts_store_name_valid("x/y") &&
		   !ts_store_name_valid("x\xc3\xa9"),
	   "space, slash and non-ASCII are refused in names");
	memset(longname, 'x', 63);
	longname[63] = '\0';
	ok(ts_store_name_valid(longname), "a 63-character name is valid");
	longname[63] = 'x';
	longname[64] = '\0';
	ok(!ts_store_name_valid(longname), "a 64-character name is refused");

	ok(ts_store_ref_valid("abc") && ts_store_ref_valid("my-box.1"), "plain refs are valid");
	ok(!ts_store_ref_valid("") && !ts_store_ref_valid("../x") && !ts_store_ref_valid("a;b") &&
		   !ts_store_ref_valid(NULL),
	   "empty, path-like and shell-ish refs are refused");
	memset(longname, 'x', 65);
	longname[65] = '\0';
	ok(!ts_store_ref_valid(longname), "a 65-character ref is refused");
}

static void test_crud(void)
{
	struct ts_store *s = NULL;
	struct ts_sandbox_rec a, b, c, got = { 0 };
	struct ts_sandbox_rec *list = NULL;
	struct ts_error err = { 0 };
	char root[300];
	size_t n = 0;
	long long before;
	int r;

	mkroot(root, sizeof(root), "crud");
	r = ts_store_open(&s, root, &err);
	ok(r == 0, "open a new store %s", err.msg);
	if (r < 0)
		return;
	ok(sql_int(root, "PRAGMA user_version") == 2,
	   "schema version is recorded (2: the snapshots table)");
	ok(sql_int(root, "SELECT count(*) FROM snapshots") == 0,
	   "the snapshots table exists and is empty");
	ok(sql_int(root, "SELECT count(*) FROM pragma_journal_mode WHERE journal_mode = 'wal'") ==
		   1,
	   "the database is in WAL mode");

	fill(&a, "aaaa00000001", "alpha", 300);
	fill(&b, "aaaa00000002", "", 100);
	fill(&c, "bbbb00000003", "gamma", 200);
	b.spec = NULL;
	b.labels = NULL;
	ok(ts_store_insert(s, &a, &err) == 0 && ts_store_insert(s, &b, &err) == 0 &&
		   ts_store_insert(s, &c, &err) == 0,
	   "insert three records (%s)", err.msg);

	r = ts_store_get(s, "aaaa00000001", &got, &err);
	ok(r == 0 && !strcmp(got.id, "aaaa00000001") && !strcmp(got.name, "alpha") &&
		   got.created_ms == 300 && got.ttl_ms == 1800000 &&
		   !strcmp(got.state, "stopped") && !strcmp(got.dir, "/state/aaaa00000001") &&
		   strstr(got.spec, "A=1") && strstr(got.labels, "team"),
	   "get by full id returns every field");
	ts_sandbox_rec_free(&got);
	r = ts_store_get(s, "gamma", &got, &err);
	ok(r == 0 && !strcmp(got.id, "bbbb00000003"), "get by name");
	ts_sandbox_rec_free(&got);
	r = ts_store_get(s, "bbbb", &got, &err);
	ok(r == 0 && !strcmp(got.id, "bbbb00000003"), "get by a unique id prefix");
	ts_sandbox_rec_free(&got);
	r = ts_store_get(s, "BBBB0", &got, &err);
	ok(r == 0 && !strcmp(got.id, "bbbb00000003"), "an upper-case prefix matches too");
	ts_sandbox_rec_free(&got);
	r = ts_store_get(s, "aaaa00000002", &got, &err);
	ok(r == 0 && got.name[0] == '\0' && !strcmp(got.spec, "{}") && !strcmp(got.labels, "{}"),
	   "an unnamed record with no spec reads back \"\" and {}");
	ts_sandbox_rec_free(&got);

	r = ts_store_get(s, "aaaa", &got, &err);
	ok(r == -ENOTUNIQ && strstr(err.msg, "matches 2 sandboxes") &&
		   strstr(err.msg, "aaaa00000001") && strstr(err.msg, "aaaa00000002"),
	   "an ambiguous prefix fails with ENOTUNIQ naming the matches (%s)", err.msg);
	r = ts_store_get(s, "cccc", &got, &err);
	ok(r == -ENOENT && !strcmp(err.msg, "no sandbox `cccc`"), "an unknown prefix: %s", err.msg);
	r = ts_store_get(s, "cccc00000000", &got, &err);
	ok(r == -ENOENT, "an unknown full id fails with ENOENT");
	r = ts_store_get(s, "nosuch", &got, &err);
	ok(r == -ENOENT && !strcmp(err.msg, "no sandbox `nosuch`"), "an unknown name: %s", err.msg);
	r = ts_store_get(s, "../etc", &got, &err);
	ok(r == -EINVAL && strstr(err.msg, "bad sandbox reference"), "a bad reference: %s",
	   err.msg);
	r = ts_store_get(s, "a\x1b[2Jb", &got, &err);
	ok(r == -EINVAL && !strchr(err.msg, '\x1b'),
	   "a reference with control characters is refused and not echoed raw");

	/* Uniqueness and validation on write. */
	r = ts_store_insert(s, &a, &err);
	ok(r == -EEXIST && strstr(err.msg, "aaaa00000001"), "a taken id: %s", err.msg);
	fill(&got, "cccc00000004", "alpha", 400);
	r = ts_store_insert(s, &got, &err);
	ok(r == -EEXIST && strstr(err.msg, "named `alpha`"), "a taken name: %s", err.msg);
	fill(&got, "cccc00000004", "beef", 400);
	ok(ts_store_insert(s, &got, &err) == -EINVAL, "an all-hex name is refused on insert");
	fill(&got, "cccc0000000Z", "", 400);
	ok(ts_store_insert(s, &got, &err) == -EINVAL, "a malformed id is refused on insert");
	fill(&got, "cccc00000004", "", 400);
	got.labels = (char *)"{\"k\": 1}";
	ok(ts_store_insert(s, &got, &err) == -EINVAL, "labels with a non-string value: %s",
	   err.msg);
	got.labels = NULL;
	got.spec = (char *)"{not json";
	ok(ts_store_insert(s, &got, &err) == -EINVAL, "a spec that is not JSON: %s", err.msg);
	memset(&got, 0, sizeof(got));

	/* Update. */
	snprintf(a.state, sizeof(a.state), "running");
	snprintf(a.name, sizeof(a.name), "alpha2");
	a.init_pid = 4242;
	a.init_start = 123456789012ULL;
	a.owner_pid = 77;
	a.owner_start = 5;
	a.ttl_absolute = true;
	ok(ts_store_update(s, &a, &err) == 0, "update a record (%s)", err.msg);
	r = ts_store_get(s, "alpha2", &got, &err);
	ok(r == 0 && !strcmp(got.state, "running") && got.init_pid == 4242 &&
		   got.init_start == 123456789012ULL && got.owner_pid == 77 &&
		   got.owner_start == 5 && got.ttl_absolute,
	   "the update reads back, under its new name");
	ts_sandbox_rec_free(&got);
	ok(ts_store_get(s, "alpha", &got, &err) == -ENOENT, "the old name is gone");
	snprintf(a.name, sizeof(a.name), "gamma");
	r = ts_store_update(s, &a, &err);
	ok(r == -EEXIST && strstr(err.msg, "gamma"), "renaming onto a taken name: %s", err.msg);
	snprintf(a.name, sizeof(a.name), "alpha2");
	fill(&got, "dddd00000009", "", 1);
	ok(ts_store_update(s, &got, &err) == -ENOENT, "updating a missing record: ENOENT");
	memset(&got, 0, sizeof(got));

	/* List: oldest first. */
	r = ts_store_list(s, &list, &n, &err);
	ok(r == 0 && n == 3 && !strcmp(list[0].id, "aaaa00000002") &&
		   !strcmp(list[1].id, "bbbb00000003") && !strcmp(list[2].id, "aaaa00000001"),
	   "list returns every record, oldest first");
	ok(r == 0 && ts_store_warning(s)[0] == '\0', "no warning when every row is sound");
	ts_sandbox_recs_free(list, n);

	/* Touch. */
	before = ts_realtime_ms();
	ok(ts_store_touch(s, "bbbb00000003", &err) == 0, "touch");
	r = ts_store_get(s, "bbbb00000003", &got, &err);
	ok(r == 0 && got.last_activity_ms >= before && got.last_activity_ms <= ts_realtime_ms(),
	   "touch sets last_activity_ms to now");
	got.last_activity_ms = before + 3600000;
	ts_store_update(s, &got, &err);
	ts_store_touch(s, "bbbb00000003", &err);
	ts_sandbox_rec_free(&got);
	r = ts_store_get(s, "bbbb00000003", &got, &err);
	ok(r == 0 && got.last_activity_ms == before + 3600000, "touch never moves activity back");
	ts_sandbox_rec_free(&got);
	ok(ts_store_touch(s, "eeee00000000", &err) == -ENOENT, "touch of a missing id: ENOENT");

	/* Delete. */
	ok(ts_store_delete(s, "bbbb00000003", &err) == 0, "delete");
	ok(ts_store_get(s, "gamma", &got, &err) == -ENOENT, "a deleted record is gone");
	r = ts_store_delete(s, "bbbb00000003", &err);
	ok(r == -ENOENT && strstr(err.msg, "no sandbox"), "deleting twice: %s", err.msg);
	r = ts_store_get(s, "aaaa", &got, &err);
	ok(r == -ENOTUNIQ, "the other records are untouched");
	ts_store_close(s);

	/* Reopen: nothing is lost, no migration runs twice. */
	r = ts_store_open(&s, root, &err);
	ok(r == 0, "reopen (%s)", err.msg);
	if (r == 0) {
		r = ts_store_list(s, &list, &n, &err);
		ok(r == 0 && n == 2, "records survive a reopen");
		ts_sandbox_recs_free(list, n);
		ts_store_close(s);
	} else {
		skip(1, "reopen failed");
	}
}

#define WRITERS 8
#define PER_WRITER 50

static int writer(const char *root, int w)
{
	struct ts_store *s = NULL;
	struct ts_sandbox_rec rec, got;
	struct ts_error err = { 0 };
	char id[16];

	if (ts_store_open(&s, root, &err) < 0) {
		fprintf(stderr, "writer %d: open: %s\n", w, err.msg);
		return 1;
	}
	for (int i = 0; i < PER_WRITER; i++) {
		snprintf(id, sizeof(id), "%04x%08x", w, i);
		fill(&rec, id, "", ts_realtime_ms());
		if (i % 2)
			snprintf(rec.name, sizeof(rec.name), "w%d-%d", w, i);
		if (ts_store_insert(s, &rec, &err) < 0)
			goto fail;
		snprintf(rec.state, sizeof(rec.state), "running");
		rec.init_pid = i + 1;
		if (ts_store_update(s, &rec, &err) < 0 || ts_store_touch(s, id, &err) < 0)
			goto fail;
		if (ts_store_get(s, id, &got, &err) < 0)
			goto fail;
		ts_sandbox_rec_free(&got);
	}
	ts_store_close(s);
	return 0;
fail:
	fprintf(stderr, "writer %d: %s (errno %d)\n", w, err.msg, err.code);
	ts_store_close(s);
	return 1;
}

static void test_concurrency(void)
{
	struct ts_store *s = NULL;
	struct ts_sandbox_rec *list = NULL;
	struct ts_error err = { 0 };
	char root[300];
	pid_t pids[WRITERS];
	size_t n = 0;
	int failed = 0, running = 0, status, r;

	/* A fresh root: the schema is created by racing openers too. */
	mkroot(root, sizeof(root), "concurrent");
	for (int w = 0; w < WRITERS; w++) {
		pids[w] = fork();
		if (pids[w] == 0)
			_exit(writer(root, w));
	}
	for (int w = 0; w < WRITERS; w++)
		if (waitpid(pids[w], &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			failed++;
	ok(failed == 0, "%d processes x %d inserts/updates/touches: no error surfaces (%d failed)",
	   WRITERS, PER_WRITER, failed);
	if (ts_store_open(&s, root, &err) < 0) {
		ok(0, "open after the writers: %s", err.msg);
		return;
	}
	r = ts_store_list(s, &list, &n, &err);
	ok(r == 0 && n == WRITERS * PER_WRITER, "all %d records are present (%zu)",
	   WRITERS * PER_WRITER, n);
	for (size_t i = 0; i < n; i++)
		running += !strcmp(list[i].state, "running") && list[i].init_pid > 0;
	ok(running == WRITERS * PER_WRITER, "every update landed");
	ts_sandbox_recs_free(list, n);
	ts_store_close(s);
}

static void test_corrupt(void)
{
	struct ts_store *s = NULL;
	struct ts_sandbox_rec a, got = { 0 }, *list = NULL;
	struct ts_error err = { 0 };
	char root[300];
	size_t n = 0;
	int r;

	mkroot(root, sizeof(root), "corrupt");
	if (ts_store_open(&s, root, &err) < 0) {
		ok(0, "open: %s", err.msg);
		return;
	}
	fill(&a, "aaaa00000001", "good", 1);
	ts_store_insert(s, &a, &err);
	fill(&a, "aaaa00000002", "", 2);
	ts_store_insert(s, &a, &err);
	fill(&a, "aaaa00000003", "", 3);
	ts_store_insert(s, &a, &err);
	fill(&a, "aaaa00000004", "", 4);
	ts_store_insert(s, &a, &err);
	fill(&a, "aaaa00000005", "", 5);
	ts_store_insert(s, &a, &err);
	/* Break rows behind the store's back: NULL text, bad JSON, a text time, a bad id. */
	ok(sql(root, "UPDATE sandboxes SET dir = NULL WHERE id = 'aaaa00000002';"
		     "UPDATE sandboxes SET spec = '{bad' WHERE id = 'aaaa00000003';"
		     "UPDATE sandboxes SET created_ms = 'soon' WHERE id = 'aaaa00000004';"
		     "UPDATE sandboxes SET id = 'XYZ' WHERE id = 'aaaa00000005';") == 0,
	   "corrupt four rows with sqlite directly");

	r = ts_store_list(s, &list, &n, &err);
	ok(r == 0 && n == 1 && !strcmp(list[0].id, "aaaa00000001"),
	   "list skips the corrupt rows and returns the sound one (n=%zu)", n);
	ok(strstr(ts_store_warning(s), "4 corrupt sandbox records") &&
		   strstr(ts_store_warning(s), "sandboxes_quarantine"),
	   "and says so: %s", ts_store_warning(s));
	ts_sandbox_recs_free(list, n);
	ok(sql_int(root, "SELECT count(*) FROM sandboxes_quarantine") == 4 &&
		   sql_int(root, "SELECT count(*) FROM sandboxes") == 1,
	   "the corrupt rows were moved to sandboxes_quarantine");
	ok(sql_int(root, "SELECT count(*) FROM sandboxes_quarantine WHERE reason IS NOT NULL "
			 "AND quarantined_ms > 0 AND created_ms = 'soon'") == 1,
	   "quarantined rows keep their columns verbatim, with a reason and a time");

	/* get() on a corrupt row. */
	fill(&a, "bbbb00000001", "", 10);
	ts_store_insert(s, &a, &err);
	sql(root, "UPDATE sandboxes SET labels = '[1,2]' WHERE id = 'bbbb00000001'");
	r = ts_store_get(s, "bbbb", &got, &err);
	ok(r == -EBADMSG && strstr(err.msg, "corrupt") && strstr(err.msg, "labels"),
	   "get of a corrupt record fails with EBADMSG: %s", err.msg);
	r = ts_store_get(s, "bbbb00000001", &got, &err);
	ok(r == -ENOENT, "and the record is then gone from the table");
	ts_store_close(s);

	/* A newer schema than ours is refused, not rewritten. */
	mkroot(root, sizeof(root), "newer");
	ok(ts_store_open(&s, root, &err) == 0, "open");
	ts_store_close(s);
	sql(root, "PRAGMA user_version = 99");
	r = ts_store_open(&s, root, &err);
	ok(r == -EPROTONOSUPPORT && strstr(err.msg, "99"), "a newer schema is refused: %s",
	   err.msg);
	ok(sql_int(root, "PRAGMA user_version") == 99, "and left as it was");

	/* A file that is not a database. */
	mkroot(root, sizeof(root), "garbage");
	{
		char path[400];
		int fd;

		snprintf(path, sizeof(path), "%s/state.db", root);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			for (int i = 0; i < 64; i++)
				ts_write_all(fd, "this is not an sqlite database, no. ", 36);
			close(fd);
		}
	}
	r = ts_store_open(&s, root, &err);
	ok(r < 0 && strstr(err.msg, "state.db"), "a garbage state.db gives an error: %s", err.msg);
	if (r == 0)
		ts_store_close(s);
}

static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] ? p[2] : '?';
}

static void test_proc(void)
{
	unsigned long long st, self;
	pid_t child, zombie;
	int pfd[2], status;
	char c;

	self = ts_proc_start_time(getpid());
	ok(self > 0 && ts_proc_alive(getpid(), self), "this process is alive with its start time");
	ok(!ts_proc_alive(0, 0) && !ts_proc_alive(-1, 0), "pid 0 and -1 are never alive");

	/* A child whose comm holds spaces and parentheses. */
	if (pipe(pfd) < 0)
		return;
	child = fork();
	if (child == 0) {
		prctl(PR_SET_NAME, "x) 1 2 (y z)");
		if (write(pfd[1], "r", 1) < 0)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	if (read(pfd[0], &c, 1) != 1)
		c = 0;
	close(pfd[0]);
	st = ts_proc_start_time(child);
	ok(st >= self && st < self + 100000,
	   "start time of a child named `x) 1 2 (y z)` parses (%llu)", st);
	ok(ts_proc_alive(child, st), "the child is alive");
	ok(ts_proc_alive(child, 0), "start 0 means any start time");
	ok(!ts_proc_alive(child, st + 1), "a different start time (pid reuse) is not alive");
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	ok(!ts_proc_alive(child, st) && ts_proc_start_time(child) == 0,
	   "a dead, reaped child is not alive and has no start time");

	zombie = fork();
	if (zombie == 0)
		_exit(0);
	for (int i = 0; i < 500 && proc_state(zombie) != 'Z'; i++)
		usleep(2000);
	ok(proc_state(zombie) == 'Z' && !ts_proc_alive(zombie, 0), "a zombie is not alive");
	waitpid(zombie, &status, 0);
}

/* The database is the owner's alone: new files 0600, wider ones narrowed on open. */
static void test_modes(void)
{
	char root[300], db[320], wal[330];
	struct ts_store *st = NULL;
	struct ts_error err = { 0 };
	struct stat sb;
	mode_t old = umask(022);

	mkroot(root, sizeof(root), "modes");
	snprintf(db, sizeof(db), "%s/state.db", root);
	snprintf(wal, sizeof(wal), "%s/state.db-wal", root);
	ok(ts_store_open(&st, root, &err) == 0, "open a new store (%s)", err.msg);
	ts_store_close(st);
	ok(stat(db, &sb) == 0 && (sb.st_mode & 0777) == 0600,
	   "a new state.db is 0600 under umask 022");
	ok(stat(wal, &sb) == 0 && (sb.st_mode & 0777) == 0600, "... and its -wal too");
	chmod(db, 0644);
	chmod(wal, 0644);
	ok(ts_store_open(&st, root, &err) == 0, "open a 0644 store (%s)", err.msg);
	ts_store_close(st);
	ok(stat(db, &sb) == 0 && (sb.st_mode & 0777) == 0600,
	   "a 0644 state.db is narrowed to 0600");
	ok(stat(wal, &sb) == 0 && (sb.st_mode & 0777) == 0600, "... and its -wal too");
	umask(old);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(base, sizeof(base), "%s/ts-store-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
	if (!mkdtemp(base)) {
		printf("1..0 # SKIP mkdtemp: %s\n", strerror(errno));
		return 0;
	}
	plan(81);
	test_names();
	test_crud();
	test_concurrency();
	test_corrupt();
	test_proc();
	test_modes();
	ts_rm_rf_at(AT_FDCWD, base);
	return exit_status();
}
