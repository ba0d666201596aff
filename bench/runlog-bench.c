/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toren-bench-runlog: the event log's cost per tool call (ts_runlog_call_begin +
 * ts_runlog_call_complete) against one plain sqlite commit of a similar row in WAL mode with
 * synchronous=FULL, in a database beside it (same directory, same file system), in
 * interleaved rounds. bench/run-runlog.sh runs it; see bench/README.md ("The event log").
 *
 * usage: toren-bench-runlog -d DIR [-n ROUNDS] [-w WARMUP] [-s RESULT_BYTES] -o OUT.csv
 *        toren-bench-runlog -d DIR -m runlog|plain -n CALLS   (no timing: for strace)
 *        toren-bench-runlog -V                                 (sqlite's version)
 *
 * Rows (OUT.csv: label,round,ns,status, as bench/timer.c writes, for bench/stats.py):
 *   `plain FULL commit`       one INSERT (autocommit) of a completed call's row into a table
 *                             with the columns and keys of `calls`: the floor of one durable
 *                             write per call
 *   `runlog call`             begin (appended, NEW) + complete of one call
 *   `runlog begin`            the begin of that call alone (its `started` commit)
 *   `runlog complete`         the complete of that call alone
 *   `plain INSERT+UPDATE FULL` the same two records each committed with FULL: what the log
 *                             would cost with a sync per record
 * Round r runs the three sets starting with set r mod 3.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runlog.h"
#include "sqldb.h"

struct bench {
	struct ts_runlog *log;
	struct ts_sqldb plain;
	sqlite3_stmt *ins, *upd;
	char run[TS_RUN_ID_LEN + 1];
	char *result;
	unsigned long long plain_idx;
};

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static const char *ARGS = "{\"command\":\"make -j4 test\",\"timeout\":120}";

static int setup(struct bench *b, const char *dir, size_t result_bytes)
{
	struct ts_error err = { 0 };
	char path[4096];
	size_t n;

	snprintf(path, sizeof(path), "%s/runs.db", dir);
	if (ts_runlog_open(path, &b->log, &err) < 0 ||
	    ts_runlog_run_new(b->log, "{\"name\":\"bench\"}", "", "local", dir, b->run, &err) < 0)
		goto fail;
	snprintf(path, sizeof(path), "%s/plain.db", dir);
	if (ts_sqldb_open(&b->plain, path, &err) < 0 ||
	    ts_sqldb_exec(
		    &b->plain,
		    "CREATE TABLE IF NOT EXISTS calls (run TEXT NOT NULL, idx INTEGER NOT NULL,"
		    " key TEXT NOT NULL, tool TEXT NOT NULL, args TEXT NOT NULL, result TEXT,"
		    " attempts INTEGER NOT NULL, started_ms INTEGER NOT NULL,"
		    " completed_ms INTEGER NOT NULL, PRIMARY KEY (run, idx), UNIQUE (run, key))",
		    &err) < 0 ||
	    ts_sqldb_prepare(
		    &b->plain, &b->ins,
		    "INSERT INTO calls VALUES (?1, ?2, 'p:' || ?2, 'bash', ?3, ?4, 1, ?5, ?6)",
		    &err) < 0 ||
	    ts_sqldb_prepare(&b->plain, &b->upd,
			     "UPDATE calls SET result = ?3, completed_ms = ?4 WHERE run = ?1 AND"
			     " idx = ?2",
			     &err) < 0)
		goto fail;
	/* a result like a short `bash` one: {"exit_code":0,"stdout":"xxx..."} */
	n = result_bytes < 40 ? 40 : result_bytes;
	b->result = malloc(n + 1);
	if (!b->result)
		return -ENOMEM;
	snprintf(b->result, n + 1, "{\"exit_code\":0,\"stdout\":\"%0*d\"}", (int)(n - 27), 0);
	return 0;
fail:
	fprintf(stderr, "toren-bench-runlog: %s\n", err.msg);
	return -1;
}

static int runlog_call(struct bench *b, long long *t_begin, long long *t_complete)
{
	struct ts_error err = { 0 };
	struct ts_call_rec rec;
	enum ts_call_kind kind;
	long long t0 = now_ns(), t1;
	int r;

	r = ts_runlog_call_begin(b->log, b->run, NULL, "bash", ARGS, &kind, &rec, &err);
	t1 = now_ns();
	if (r == 0)
		r = ts_runlog_call_complete(b->log, b->run, rec.index, b->result, &err);
	*t_begin = t1 - t0;
	*t_complete = now_ns() - t1;
	ts_call_rec_clear(&rec);
	if (r < 0)
		fprintf(stderr, "toren-bench-runlog: %s\n", err.msg);
	return r;
}

static int step(struct bench *b, sqlite3_stmt *st)
{
	int rc = ts_sqldb_step(st);

	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		fprintf(stderr, "toren-bench-runlog: %s\n", sqlite3_errmsg(b->plain.db));
		return -1;
	}
	return 0;
}

/* One INSERT of the completed row (completed: with its result) in autocommit. */
static int plain_insert(struct bench *b, bool with_result)
{
	long long ms = (long long)time(NULL) * 1000;

	sqlite3_bind_text(b->ins, 1, b->run, -1, SQLITE_STATIC);
	sqlite3_bind_int64(b->ins, 2, (long long)b->plain_idx);
	sqlite3_bind_text(b->ins, 3, ARGS, -1, SQLITE_STATIC);
	if (with_result)
		sqlite3_bind_text(b->ins, 4, b->result, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(b->ins, 4);
	sqlite3_bind_int64(b->ins, 5, ms);
	sqlite3_bind_int64(b->ins, 6, with_result ? ms : 0);
	return step(b, b->ins);
}

static int plain_update(struct bench *b)
{
	sqlite3_bind_text(b->upd, 1, b->run, -1, SQLITE_STATIC);
	sqlite3_bind_int64(b->upd, 2, (long long)b->plain_idx);
	sqlite3_bind_text(b->upd, 3, b->result, -1, SQLITE_STATIC);
	sqlite3_bind_int64(b->upd, 4, (long long)time(NULL) * 1000);
	return step(b, b->upd);
}

int main(int argc, char **argv)
{
	struct bench b = { 0 };
	const char *dir = NULL, *out = NULL, *mode = NULL;
	long rounds = 2000, warmup = 100, result_bytes = 200;
	FILE *o = NULL;
	int c;

	while ((c = getopt(argc, argv, "d:n:w:s:o:m:V")) != -1) {
		switch (c) {
		case 'V':
			printf("%s\n", sqlite3_libversion());
			return 0;
		case 'd':
			dir = optarg;
			break;
		case 'n':
			rounds = strtol(optarg, NULL, 10);
			break;
		case 'w':
			warmup = strtol(optarg, NULL, 10);
			break;
		case 's':
			result_bytes = strtol(optarg, NULL, 10);
			break;
		case 'o':
			out = optarg;
			break;
		case 'm':
			mode = optarg;
			break;
		default:
			return 2;
		}
	}
	if (!dir || rounds < 1 || warmup < 0 || result_bytes < 0 || result_bytes > (1L << 20) ||
	    (!out && !mode)) {
		fprintf(stderr, "usage: toren-bench-runlog -d DIR [-n ROUNDS] [-w WARMUP] "
				"[-s RESULT_BYTES] (-o OUT.csv | -m runlog|plain)\n");
		return 2;
	}
	if (setup(&b, dir, (size_t)result_bytes) < 0)
		return 1;
	if (mode) {
		/* untimed, for a syscall count of exactly `rounds` calls */
		long long t1, t2;

		for (long i = 0; i < rounds; i++) {
			if (strcmp(mode, "runlog") == 0 ? runlog_call(&b, &t1, &t2) < 0
							: plain_insert(&b, true) < 0)
				return 1;
			b.plain_idx++;
		}
		return 0;
	}
	o = fopen(out, "w");
	if (!o) {
		fprintf(stderr, "toren-bench-runlog: open `%s`: %s\n", out, strerror(errno));
		return 1;
	}
	fprintf(o, "label,round,ns,status\n");
	for (long r = -warmup; r < rounds; r++) {
		long long t[5] = { 0 };

		for (int k = 0; k < 3; k++) {
			long long t0 = now_ns();

			switch ((k + (r < 0 ? 0 : r)) % 3) {
			case 0:
				if (plain_insert(&b, true) < 0)
					return 1;
				t[0] = now_ns() - t0;
				b.plain_idx++;
				break;
			case 1:
				if (runlog_call(&b, &t[2], &t[3]) < 0)
					return 1;
				t[1] = t[2] + t[3];
				break;
			case 2:
				if (plain_insert(&b, false) < 0 || plain_update(&b) < 0)
					return 1;
				t[4] = now_ns() - t0;
				b.plain_idx++;
				break;
			}
		}
		if (r < 0)
			continue;
		fprintf(o, "\"plain FULL commit\",%ld,%lld,0\n", r, t[0]);
		fprintf(o, "\"runlog call\",%ld,%lld,0\n", r, t[1]);
		fprintf(o, "\"runlog begin\",%ld,%lld,0\n", r, t[2]);
		fprintf(o, "\"runlog complete\",%ld,%lld,0\n", r, t[3]);
		fprintf(o, "\"plain INSERT+UPDATE FULL\",%ld,%lld,0\n", r, t[4]);
	}
	fclose(o);
	sqlite3_finalize(b.ins);
	sqlite3_finalize(b.upd);
	ts_sqldb_close(&b.plain);
	ts_runlog_close(b.log);
	free(b.result);
	return 0;
}
