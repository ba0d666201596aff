// SPDX-License-Identifier: Apache-2.0
/*
 * serve.db: E2B's view of each sandbox (meta.h). The envd access tokens are kept in the
 * clear: E2B hands them out again (getInfo) and envd signs URLs with them; the file is
 * owner-only like state.db (sqldb.c), in the owner-only state root.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta.h"
#include "sqldb.h"
#include "util.h"

struct ts_meta {
	struct ts_sqldb db;
};

static const char *const migrations[] = {
	"CREATE TABLE sandboxes ("
	"  id TEXT PRIMARY KEY,"
	"  template_id TEXT NOT NULL,"
	"  client_id TEXT NOT NULL,"
	"  envd_token TEXT NOT NULL,"
	"  traffic_token TEXT NOT NULL,"
	"  create_body TEXT NOT NULL,"
	"  auto_pause INTEGER NOT NULL,"
	"  paused INTEGER NOT NULL,"
	"  created_ms INTEGER NOT NULL)",
	/* metrics samples, gone with their sandbox's record */
	"CREATE TABLE metrics ("
	"  id TEXT NOT NULL,"
	"  ts_ms INTEGER NOT NULL,"
	"  cpu_count INTEGER NOT NULL,"
	"  cpu_pct REAL NOT NULL,"
	"  mem_used INTEGER NOT NULL,"
	"  mem_total INTEGER NOT NULL,"
	"  mem_cache INTEGER NOT NULL,"
	"  disk_used INTEGER NOT NULL,"
	"  disk_total INTEGER NOT NULL,"
	"  cpu_ns INTEGER NOT NULL,"
	"  PRIMARY KEY (id, ts_ms));"
	"CREATE TRIGGER metrics_gone AFTER DELETE ON sandboxes"
	"  BEGIN DELETE FROM metrics WHERE id = old.id; END",
};

void ts_meta_sb_clear(struct ts_meta_sb *m)
{
	free(m->create_body);
	memset(m, 0, sizeof(*m));
}

int ts_meta_open(const char *state_root, struct ts_meta **ret, struct ts_error *err)
{
	struct ts_meta *m = calloc(1, sizeof(*m));
	char path[4200];
	int r;

	if (!m)
		return ts_err(err, -ENOMEM, "serve.db");
	if (snprintf(path, sizeof(path), "%s/serve.db", state_root) >= (int)sizeof(path)) {
		free(m);
		return ts_err(err, -ENAMETOOLONG, "state root path too long");
	}
	r = ts_sqldb_open(&m->db, path, err);
	if (r >= 0)
		r = ts_sqldb_migrate(&m->db, migrations, ELEMENTSOF(migrations), err);
	if (r < 0) {
		ts_sqldb_close(&m->db);
		free(m);
		return r;
	}
	*ret = m;
	return 0;
}

void ts_meta_close(struct ts_meta *m)
{
	if (!m)
		return;
	ts_sqldb_close(&m->db);
	free(m);
}

int ts_meta_put(struct ts_meta *m, const struct ts_meta_sb *sb, struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = ts_sqldb_prepare(&m->db, &st,
				 "INSERT OR REPLACE INTO sandboxes (id, template_id, client_id, "
				 "envd_token, traffic_token, create_body, auto_pause, paused, "
				 "created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
				 err);
	int rc;

	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, sb->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, sb->template_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, sb->client_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, sb->envd_token, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, sb->traffic_token, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, sb->create_body ? sb->create_body : "{}", -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 7, sb->auto_pause);
	sqlite3_bind_int(st, 8, sb->paused);
	sqlite3_bind_int64(st, 9, sb->created_ms);
	rc = ts_sqldb_step(st);
	if (rc != SQLITE_DONE)
		return ts_sqldb_err(&m->db, err, rc, "store sandbox");
	return 0;
}

static int row(sqlite3_stmt *st, struct ts_meta_sb *out)
{
	const char *body = (const char *)sqlite3_column_text(st, 5);

	memset(out, 0, sizeof(*out));
	snprintf(out->id, sizeof(out->id), "%s", (const char *)sqlite3_column_text(st, 0));
	snprintf(out->template_id, sizeof(out->template_id), "%s",
		 (const char *)sqlite3_column_text(st, 1));
	snprintf(out->client_id, sizeof(out->client_id), "%s",
		 (const char *)sqlite3_column_text(st, 2));
	snprintf(out->envd_token, sizeof(out->envd_token), "%s",
		 (const char *)sqlite3_column_text(st, 3));
	snprintf(out->traffic_token, sizeof(out->traffic_token), "%s",
		 (const char *)sqlite3_column_text(st, 4));
	out->create_body = strdup(body ? body : "{}");
	out->auto_pause = sqlite3_column_int(st, 6);
	out->paused = sqlite3_column_int(st, 7);
	out->created_ms = sqlite3_column_int64(st, 8);
	return out->create_body ? 0 : -ENOMEM;
}

#define META_COLUMNS                                                                               \
	"id, template_id, client_id, envd_token, traffic_token, create_body, auto_pause, "         \
	"paused, created_ms"

int ts_meta_get(struct ts_meta *m, const char *id, struct ts_meta_sb *ret, struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = ts_sqldb_prepare(&m->db, &st,
				 "SELECT " META_COLUMNS " FROM sandboxes WHERE id = ?1", err);
	int rc;

	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	rc = ts_sqldb_step(st);
	if (rc == SQLITE_DONE)
		return ts_err(err, -ENOENT, "sandbox `%s` is not known to serve", id);
	if (rc != SQLITE_ROW)
		return ts_sqldb_err(&m->db, err, rc, "read sandbox");
	if (row(st, ret) < 0)
		return ts_err(err, -ENOMEM, "read sandbox");
	return 0;
}

int ts_meta_delete(struct ts_meta *m, const char *id, struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = ts_sqldb_prepare(&m->db, &st, "DELETE FROM sandboxes WHERE id = ?1", err);
	int rc;

	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	rc = ts_sqldb_step(st);
	return rc == SQLITE_DONE ? 0 : ts_sqldb_err(&m->db, err, rc, "delete sandbox");
}

int ts_meta_set_paused(struct ts_meta *m, const char *id, bool paused, struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = ts_sqldb_prepare(&m->db, &st, "UPDATE sandboxes SET paused = ?2 WHERE id = ?1",
				 err);
	int rc;

	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, paused);
	rc = ts_sqldb_step(st);
	if (rc != SQLITE_DONE)
		return ts_sqldb_err(&m->db, err, rc, "update sandbox");
	if (sqlite3_changes(m->db.db) == 0)
		return ts_err(err, -ENOENT, "sandbox `%s` is not known to serve", id);
	return 0;
}

void ts_meta_sbs_free(struct ts_meta_sb *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		ts_meta_sb_clear(&v[i]);
	free(v);
}

int ts_meta_list(struct ts_meta *m, struct ts_meta_sb **ret, size_t *n, struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	struct ts_meta_sb *v = NULL;
	size_t count = 0;
	int r = ts_sqldb_prepare(&m->db, &st,
				 "SELECT " META_COLUMNS " FROM sandboxes ORDER BY created_ms", err);
	int rc;

	if (r < 0)
		return r;
	while ((rc = ts_sqldb_step(st)) == SQLITE_ROW) {
		struct ts_meta_sb *nv = realloc(v, (count + 1) * sizeof(*v));

		if (!nv || row(st, &nv[count]) < 0) {
			if (nv)
				count++;
			ts_meta_sbs_free(nv ? nv : v, count);
			return ts_err(err, -ENOMEM, "list sandboxes");
		}
		v = nv;
		count++;
	}
	if (rc != SQLITE_DONE) {
		ts_meta_sbs_free(v, count);
		return ts_sqldb_err(&m->db, err, rc, "list sandboxes");
	}
	*ret = v;
	*n = count;
	return 0;
}

/* --- metrics samples ------------------------------------------------------------------ */

int ts_meta_metric_add(struct ts_meta *m, const char *id, const struct ts_metric *s,
		       struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL, *trim = NULL;
	int r = ts_sqldb_prepare(&m->db, &st,
				 "INSERT OR REPLACE INTO metrics (id, ts_ms, cpu_count, cpu_pct, "
				 "mem_used, mem_total, mem_cache, disk_used, disk_total, cpu_ns) "
				 "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
				 err);
	int rc;

	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, s->ts_ms);
	sqlite3_bind_int64(st, 3, s->cpu_count);
	sqlite3_bind_double(st, 4, s->cpu_pct);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)s->mem_used);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)s->mem_total);
	sqlite3_bind_int64(st, 7, (sqlite3_int64)s->mem_cache);
	sqlite3_bind_int64(st, 8, (sqlite3_int64)s->disk_used);
	sqlite3_bind_int64(st, 9, (sqlite3_int64)s->disk_total);
	sqlite3_bind_int64(st, 10, (sqlite3_int64)s->cpu_ns);
	rc = ts_sqldb_step(st);
	if (rc != SQLITE_DONE)
		return ts_sqldb_err(&m->db, err, rc, "store a metrics sample");
	/* bounded: the newest TS_META_METRICS_KEEP stay */
	r = ts_sqldb_prepare(&m->db, &trim,
			     "DELETE FROM metrics WHERE id = ?1 AND ts_ms <= (SELECT ts_ms FROM "
			     "metrics WHERE id = ?1 ORDER BY ts_ms DESC LIMIT 1 OFFSET ?2)",
			     err);
	if (r < 0)
		return r;
	sqlite3_bind_text(trim, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_int(trim, 2, TS_META_METRICS_KEEP);
	rc = ts_sqldb_step(trim);
	return rc == SQLITE_DONE ? 0 : ts_sqldb_err(&m->db, err, rc, "trim metrics samples");
}

static void metric_row(sqlite3_stmt *st, struct ts_metric *out)
{
	memset(out, 0, sizeof(*out));
	out->ts_ms = sqlite3_column_int64(st, 0);
	out->cpu_count = (unsigned)sqlite3_column_int64(st, 1);
	out->cpu_pct = sqlite3_column_double(st, 2);
	out->mem_used = (uint64_t)sqlite3_column_int64(st, 3);
	out->mem_total = (uint64_t)sqlite3_column_int64(st, 4);
	out->mem_cache = (uint64_t)sqlite3_column_int64(st, 5);
	out->disk_used = (uint64_t)sqlite3_column_int64(st, 6);
	out->disk_total = (uint64_t)sqlite3_column_int64(st, 7);
	out->cpu_ns = (uint64_t)sqlite3_column_int64(st, 8);
}

#define METRIC_COLUMNS                                                                             \
	"ts_ms, cpu_count, cpu_pct, mem_used, mem_total, mem_cache, disk_used, disk_total, cpu_ns"

int ts_meta_metrics(struct ts_meta *m, const char *id, long long from_ms, long long to_ms,
		    struct ts_metric **ret, size_t *n, struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	struct ts_metric *v = NULL;
	size_t count = 0;
	int r = ts_sqldb_prepare(&m->db, &st,
				 "SELECT " METRIC_COLUMNS " FROM metrics WHERE id = ?1 AND ts_ms "
				 ">= ?2 AND ts_ms <= ?3 ORDER BY ts_ms",
				 err);
	int rc;

	*ret = NULL;
	*n = 0;
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, from_ms);
	sqlite3_bind_int64(st, 3, to_ms);
	while ((rc = ts_sqldb_step(st)) == SQLITE_ROW && count < TS_META_METRICS_KEEP) {
		struct ts_metric *nv = realloc(v, (count + 1) * sizeof(*v));

		if (!nv) {
			free(v);
			return ts_err(err, -ENOMEM, "read metrics samples");
		}
		v = nv;
		metric_row(st, &v[count++]);
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		free(v);
		return ts_sqldb_err(&m->db, err, rc, "read metrics samples");
	}
	*ret = v;
	*n = count;
	return 0;
}

int ts_meta_metric_last(struct ts_meta *m, const char *id, struct ts_metric *ret,
			struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = ts_sqldb_prepare(&m->db, &st,
				 "SELECT " METRIC_COLUMNS
				 " FROM metrics WHERE id = ?1 ORDER BY ts_ms DESC LIMIT 1",
				 err);
	int rc;

	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	rc = ts_sqldb_step(st);
	if (rc == SQLITE_DONE)
		return ts_err(err, -ENOENT, "no metrics of sandbox `%s`", id);
	if (rc != SQLITE_ROW)
		return ts_sqldb_err(&m->db, err, rc, "read metrics samples");
	metric_row(st, ret);
	return 0;
}
