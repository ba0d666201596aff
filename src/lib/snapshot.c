/* SPDX-License-Identifier: Apache-2.0 */
#include "snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "ctl.h"
#include "ctlclient.h"
#include "idcopy.h"
#include "oci-store.h"
#include "sandbox.h"
#include "sqldb.h"
#include "treecopy.h"
#include "util.h"

#define PAUSE_ANSWER_MS 10000
#define SNAP_COLUMNS "id, names, source, spec, created_ms, size"

void ts_snapshot_free(struct ts_snapshot *s)
{
	if (!s)
		return;
	free(s->spec);
	s->spec = NULL;
}

void ts_snapshots_free(struct ts_snapshot *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		ts_snapshot_free(&v[i]);
	free(v);
}

bool ts_snapshot_id_valid(const char *ref)
{
	if (!ref || strlen(ref) != TS_SNAP_ID_LEN || strncmp(ref, "snap-", 5) != 0)
		return false;
	for (const char *p = ref + 5; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

static int snapdir(const struct ts_paths *paths, const char *id, char *buf, size_t len)
{
	return (size_t)snprintf(buf, len, "%s/snapshots/%s", paths->root, id) >= len ? -ENAMETOOLONG
										     : 0;
}

/* The current row of a `SELECT SNAP_COLUMNS` into s; -EBADMSG for a row that is not one. */
static int row_to_snap(sqlite3_stmt *q, struct ts_snapshot *s, struct ts_error *err)
{
	const char *id = (const char *)sqlite3_column_text(q, 0);
	const char *names = (const char *)sqlite3_column_text(q, 1);
	const char *src = (const char *)sqlite3_column_text(q, 2);
	const char *spec = (const char *)sqlite3_column_text(q, 3);
	json_t *j, *v;
	size_t i;

	memset(s, 0, sizeof(*s));
	if (!id || !ts_snapshot_id_valid(id) || !names || !src ||
	    strlen(src) >= sizeof(s->source) || !spec)
		return ts_err(err, -EBADMSG, "a snapshot record in state.db is malformed");
	snprintf(s->id, sizeof(s->id), "%s", id);
	snprintf(s->source, sizeof(s->source), "%s", src);
	j = json_loads(names, 0, NULL);
	json_array_foreach(j, i, v) {
		if (json_is_string(v) && s->n_names < TS_SNAP_MAX_NAMES &&
		    ts_store_name_valid(json_string_value(v)))
			snprintf(s->names[s->n_names++], TS_NAME_MAX, "%s", json_string_value(v));
	}
	json_decref(j);
	s->spec = strdup(spec);
	if (!s->spec)
		return ts_err(err, -ENOMEM, "out of memory");
	s->created_ms = sqlite3_column_int64(q, 4);
	s->size = (unsigned long long)sqlite3_column_int64(q, 5);
	return 0;
}

int ts_snapshot_list(struct ts_store *st, struct ts_snapshot **ret, size_t *n, struct ts_error *err)
{
	struct ts_sqldb *db = ts_store_sql(st);
	_cleanup_stmt_ sqlite3_stmt *q = NULL;
	struct ts_snapshot *v = NULL;
	size_t len = 0, cap = 0;
	int rc, r;

	*ret = NULL;
	*n = 0;
	r = ts_sqldb_prepare(db, &q,
			     "SELECT " SNAP_COLUMNS " FROM snapshots ORDER BY created_ms, id", err);
	if (r < 0)
		return r;
	while ((rc = ts_sqldb_step(q)) == SQLITE_ROW) {
		if (len == cap) {
			struct ts_snapshot *nv;

			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				ts_snapshots_free(v, len);
				return ts_err(err, -ENOMEM, "out of memory");
			}
			v = nv;
		}
		if ((r = row_to_snap(q, &v[len], err)) < 0) {
			ts_snapshots_free(v, len + 1);
			return r;
		}
		len++;
	}
	if (rc != SQLITE_DONE) {
		ts_snapshots_free(v, len);
		return ts_sqldb_err(db, err, rc, "list snapshots");
	}
	*ret = v;
	*n = len;
	return 0;
}

int ts_snapshot_get(struct ts_store *st, const char *ref, struct ts_snapshot *ret,
		    struct ts_error *err)
{
	struct ts_sqldb *db = ts_store_sql(st);
	_cleanup_stmt_ sqlite3_stmt *q = NULL;
	char shown[80];
	int rc, r;

	memset(ret, 0, sizeof(*ret));
	snprintf(shown, sizeof(shown), "%.64s", ref ? ref : "");
	ts_sanitize_text(shown);
	if (!ts_snapshot_id_valid(ref) && !ts_store_name_valid(ref))
		return ts_err(err, -ENOENT, "no snapshot `%s`", shown);
	r = ts_sqldb_prepare(db, &q,
			     "SELECT " SNAP_COLUMNS " FROM snapshots WHERE id = ?1 OR EXISTS "
			     "(SELECT 1 FROM json_each(snapshots.names) WHERE value = ?1) "
			     "ORDER BY created_ms DESC LIMIT 1",
			     err);
	if (r < 0)
		return r;
	sqlite3_bind_text(q, 1, ref, -1, SQLITE_TRANSIENT);
	rc = ts_sqldb_step(q);
	if (rc == SQLITE_DONE)
		return ts_err(err, -ENOENT, "no snapshot `%s`", shown);
	if (rc != SQLITE_ROW)
		return ts_sqldb_err(db, err, rc, "find snapshot");
	return row_to_snap(q, ret, err);
}

/*
 * Pause the sandbox for the copy. Where its init speaks v5 the pause is held by a
 * connection kept in *hold (ctl.h, PAUSE_HOLD): no other client's RESUME thaws it under
 * the copy, and it ends with the connection if this process dies. An older init gets a
 * PAUSE on a connection of its own (*hold NULL). -EALREADY when it is paused already (by
 * its user): then *hold holds that pause (ctl.h, HOLD) where init knows HOLD, and the
 * sandbox stays paused when *hold is closed; the copy must not resume it.
 */
static int pause_for_copy(const struct ts_sandbox_rec *rec, struct ts_ctl_client **hold,
			  struct ts_error *err)
{
	*hold = NULL;
	/* a user's RESUME between the EALREADY and the HOLD: pause it again, a few times */
	for (int tries = 0;; tries++) {
		_cleanup_(ts_ctl_client_freep) struct ts_ctl_client *c = NULL;
		_cleanup_(ts_ctl_msg_freep) struct ts_ctl_msg m = { 0 }, reply = { 0 };
		int r = ts_ctl_client_connect(rec->dir, rec->id, PAUSE_ANSWER_MS, &c, err);

		if (r < 0)
			return r;
		ts_ctl_msg_init(&m, c->version >= 5 ? TS_CTL_PAUSE_HOLD : TS_CTL_PAUSE, 0);
		r = ts_ctl_client_call(c, &m, TS_CTL_OK, &reply, err);
		if (r != -EALREADY || c->version < 5) {
			if (r >= 0 && c->version >= 5)
				*hold = TAKE_PTR(c);
			return r;
		}
		ts_ctl_msg_free(&m);
		ts_ctl_msg_free(&reply);
		ts_err_clear(err);
		ts_ctl_msg_init(&m, TS_CTL_HOLD, 0);
		r = ts_ctl_client_call(c, &m, TS_CTL_OK, &reply, err);
		if (r >= 0) {
			*hold = TAKE_PTR(c);
			return -EALREADY;
		}
		if (r == -EOPNOTSUPP) { /* an init from before HOLD: no hold */
			ts_err_clear(err);
			return -EALREADY;
		}
		if (r != -EINVAL || tries == 2)
			return r;
		ts_err_clear(err);
	}
}

/* RESUME on the holding connection (ctl.h, PAUSE_HOLD). */
static int resume_held(struct ts_ctl_client *c, struct ts_error *err)
{
	_cleanup_(ts_ctl_msg_freep) struct ts_ctl_msg m = { 0 }, reply = { 0 };

	ts_ctl_msg_init(&m, TS_CTL_RESUME, 0);
	return ts_ctl_client_call(c, &m, TS_CTL_OK, &reply, err);
}

/* PAUSE or RESUME through the control socket. */
static int pause_resume(const struct ts_sandbox_rec *rec, bool pause, struct ts_error *err)
{
	_cleanup_(ts_ctl_client_freep) struct ts_ctl_client *c = NULL;
	_cleanup_(ts_ctl_msg_freep) struct ts_ctl_msg m = { 0 }, reply = { 0 };
	int r = ts_ctl_client_connect(rec->dir, rec->id, PAUSE_ANSWER_MS, &c, err);

	if (r < 0)
		return r;
	ts_ctl_msg_init(&m, pause ? TS_CTL_PAUSE : TS_CTL_RESUME, 0);
	return ts_ctl_client_call(c, &m, TS_CTL_OK, &reply, err);
}

/* The new snapshot's spec: the source's image fields, its chain under the new id, and
 * whether its files may belong to subordinate ids (for a restore, idcopy.h). */
static char *snap_spec(const char *id, json_t *src, bool workspace, bool subids,
		       struct ts_error *err)
{
	json_t *spec = json_object(), *layers = json_array(), *v;
	size_t i;
	char *out = NULL;

	json_array_append_new(layers, json_string(id));
	json_array_foreach(json_object_get(src, "snapshots"), i, v)
		if (json_is_string(v))
			json_array_append(layers, v);
	if (json_array_size(layers) > TS_SNAP_MAX_CHAIN) {
		ts_err(err, -EINVAL,
		       "the sandbox was restored from a chain of %zu snapshots: a snapshot of it "
		       "would have more than %d layers",
		       json_array_size(layers) - 1, TS_SNAP_MAX_CHAIN);
		goto out;
	}
	v = json_object_get(src, "image");
	json_object_set(spec, "image", json_is_string(v) ? v : json_null());
	if (json_is_object(json_object_get(src, "image_pin")))
		json_object_set(spec, "image_pin", json_object_get(src, "image_pin"));
	json_object_set(spec, "layers", layers);
	json_object_set_new(spec, "workspace", json_boolean(workspace));
	json_object_set_new(spec, "subids", json_boolean(subids));
	out = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
	if (!out)
		ts_err(err, -ENOMEM, "out of memory");
out:
	json_decref(layers);
	json_decref(spec);
	return out;
}

/* Copy rec->dir/name into tmpfd/name (an empty directory when the source has none). */
static int copy_part(const struct ts_paths *paths, const struct ts_sandbox_rec *rec, int tmpfd,
		     const char *name, struct ts_treecopy *c, struct ts_error *err)
{
	_cleanup_close_ int sfd = -EBADF, srcdir = -EBADF, dfd = -EBADF;
	int r;

	if (mkdirat(tmpfd, name, 0700) < 0)
		return ts_err_errno(err, -errno, "create snapshot `%s`", name);
	dfd = openat(tmpfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return ts_err_errno(err, -errno, "open snapshot `%s`", name);
	srcdir = open(rec->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (srcdir < 0)
		return ts_err_errno(err, -errno, "open `%s`", rec->dir);
	sfd = openat(srcdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0)
		return errno == ENOENT ? 0
				       : ts_err_errno(err, -errno, "open `%s/%s`", rec->dir, name);
	/* in the sandbox's id mapping: its files may belong to subordinate ids (idcopy.h) */
	r = ts_idcopy_tree(paths->helper, rec->spec, sfd, dfd, c, err);
	return r < 0 ? ts_err_prefix(err, r, "copy %s of `%s`", name, rec->id) : 0;
}

/* Move name from every other snapshot's names (a name is one snapshot's at a time). */
static int take_name(struct ts_sqldb *db, const char *name, struct ts_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *q = NULL;
	int rc, r;

	r = ts_sqldb_prepare(db, &q,
			     "UPDATE snapshots SET names = (SELECT json_group_array(value) FROM "
			     "json_each(snapshots.names) WHERE value <> ?1) WHERE EXISTS (SELECT 1 "
			     "FROM json_each(snapshots.names) WHERE value = ?1)",
			     err);
	if (r < 0)
		return r;
	sqlite3_bind_text(q, 1, name, -1, SQLITE_TRANSIENT);
	rc = ts_sqldb_step(q);
	return rc == SQLITE_DONE ? 0 : ts_sqldb_err(db, err, rc, "move snapshot name");
}

static int insert_snap(struct ts_store *st, const struct ts_snapshot *s, struct ts_error *err)
{
	struct ts_sqldb *db = ts_store_sql(st);
	_cleanup_stmt_ sqlite3_stmt *q = NULL;
	json_t *names = json_array();
	_cleanup_free_ char *ntext = NULL;
	int rc, r;

	for (size_t i = 0; i < s->n_names; i++)
		json_array_append_new(names, json_string(s->names[i]));
	ntext = json_dumps(names, JSON_COMPACT);
	json_decref(names);
	if (!ntext)
		return ts_err(err, -ENOMEM, "out of memory");
	if ((r = ts_sqldb_begin_write(db, err)) < 0)
		return r;
	for (size_t i = 0; i < s->n_names; i++)
		if ((r = take_name(db, s->names[i], err)) < 0)
			goto fail;
	if ((r = ts_sqldb_prepare(db, &q,
				  "INSERT INTO snapshots (" SNAP_COLUMNS
				  ") VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
				  err)) < 0)
		goto fail;
	sqlite3_bind_text(q, 1, s->id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(q, 2, ntext, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(q, 3, s->source, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(q, 4, s->spec, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(q, 5, s->created_ms);
	sqlite3_bind_int64(q, 6, (sqlite3_int64)s->size);
	rc = ts_sqldb_step(q);
	if (rc != SQLITE_DONE) {
		r = ts_sqldb_err(db, err, rc, "record snapshot");
		goto fail;
	}
	return ts_sqldb_commit(db, err);
fail:
	ts_sqldb_rollback(db);
	return r;
}

/*
 * The snapshot store's lock, `snapshots/.lock`: held while a snapshot's temporary directory
 * is made and locked, while it is renamed into place and recorded, and while a sweep looks
 * for what to remove. A sweeper therefore sees a snapshot directory either with its flock
 * held (being copied: left alone) or with its record in, never half made. Blocking:
 * nothing is copied while it is held. The fd, or -errno with err.
 */
static int store_lock(int snapsfd, struct ts_error *err)
{
	_cleanup_close_ int fd = openat(snapsfd, ".lock",
					O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);

	if (fd < 0)
		return ts_err_errno(err, -errno, "open the snapshots' lock");
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return ts_err_errno(err, -errno, "lock the snapshots' lock");
	return TAKE_FD(fd);
}

/* A leftover of a killed snapshot: `.tmp-snap-<hex>` (its copy) or `.name-<name>` (the
 * claim on its name). */
static bool leftover_name(const char *n)
{
	return (!strncmp(n, ".tmp-", 5) && ts_snapshot_id_valid(n + 5)) ||
	       (!strncmp(n, ".name-", 6) && ts_store_name_valid(n + 6));
}

/*
 * Remove the leftovers of snapshots killed while copying: those whose flock nobody holds
 * (a snapshot being taken holds both of its own from their creation to its end). Called
 * with the store lock held, so none is between its creation and its flock.
 */
static void sweep_leftovers(const struct ts_paths *paths, int snapsfd)
{
	DIR *d = fdopendir(fcntl(snapsfd, F_DUPFD_CLOEXEC, 3));
	struct dirent *de;

	if (!d)
		return;
	rewinddir(d); /* the dup shares fd's offset, which an earlier walk left at the end */
	while ((de = readdir(d))) {
		_cleanup_close_ int e = -EBADF;
		bool dir = de->d_name[1] == 't';

		if (!leftover_name(de->d_name))
			continue;
		e = openat(snapsfd, de->d_name,
			   (dir ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_NOFOLLOW | O_NOCTTY |
				   O_NONBLOCK | O_CLOEXEC);
		if (e < 0 || flock(e, LOCK_EX | LOCK_NB) < 0)
			continue;
		if (dir)
			ts_idcopy_remove(paths->helper, snapsfd, de->d_name, NULL);
		else
			unlinkat(snapsfd, de->d_name, 0);
	}
	closedir(d);
}

/*
 * Claim name for the snapshot being taken: `.name-<name>` flocked until it is recorded.
 * -EBUSY while another snapshot being taken claims it (one of two snapshots given the
 * same name at once fails, rather than the name going to whichever ends last). Called
 * with the store lock held (which orders the file's removal against its opening).
 */
static int claim_name(int snapsfd, const char *name, struct ts_error *err)
{
	char fn[TS_NAME_MAX + 8];
	_cleanup_close_ int fd = -EBADF;

	snprintf(fn, sizeof(fn), ".name-%s", name);
	fd = openat(snapsfd, fn, O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
	if (fd < 0)
		return ts_err_errno(err, -errno, "claim snapshot name `%s`", name);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK
			       ? ts_err(err, -EBUSY,
					"snapshot name `%s` is being given to another snapshot being "
					"taken now",
					name)
			       : ts_err_errno(err, -errno, "lock snapshot name `%s`", name);
	return TAKE_FD(fd);
}

int ts_snapshot_create(struct ts_store *st, const struct ts_paths *paths,
		       struct ts_sandbox_rec *rec, const struct ts_snapshot_opts *o,
		       struct ts_snapshot *ret, struct ts_error *err)
{
	struct ts_treecopy c = {
		.max_bytes = o->max_bytes ? o->max_bytes : TS_SNAP_DEFAULT_MAX_BYTES,
		.max_entries = o->max_entries ? o->max_entries : TS_SNAP_DEFAULT_MAX_ENTRIES,
	};
	_cleanup_close_ int rootfd = -EBADF, snapsfd = -EBADF, tmpfd = -EBADF, srclock = -EBADF,
			    lock = -EBADF, namefd = -EBADF;
	char sub[12 + 1], tmpname[64], namefile[TS_NAME_MAX + 8] = "";
	bool own_ws = ts_sandbox_own_workspace(rec), paused = false;
	_cleanup_(ts_ctl_client_freep) struct ts_ctl_client *hold = NULL;
	json_t *spec;
	int r, r2;

	memset(ret, 0, sizeof(*ret));
	if (o->name && !ts_store_name_valid(o->name))
		return ts_err(err, -EINVAL,
			      "bad snapshot name `%.64s`: 1-63 of [A-Za-z0-9_.-], starting with a "
			      "letter or digit, not only hex digits when 12 or shorter",
			      o->name);
	/* the generated ids' prefix: a name `snap-...` could be taken for one (or be one) */
	if (o->name && !strncmp(o->name, "snap-", 5))
		return ts_err(err, -EINVAL,
			      "bad snapshot name `%s`: `snap-` starts the snapshots' generated ids",
			      o->name);
	if (o->name && (!strcmp(o->name, "base") || ts_oci_has(paths->root, o->name)))
		return ts_err(err, -EEXIST,
			      "snapshot name `%s` is a template already (an image of the store or "
			      "`base`): a snapshot may not shadow it",
			      o->name);
	spec = json_loads(rec->spec ? rec->spec : "{}", 0, NULL);
	if (!spec)
		return ts_err(err, -EINVAL, "sandbox `%s`: bad recorded spec", rec->id);
	if ((r = ts_id_new(sub, err)) < 0)
		goto out_spec;
	snprintf(ret->id, sizeof(ret->id), "snap-%s", sub);
	snprintf(ret->source, sizeof(ret->source), "%s", rec->id);
	if (o->name)
		snprintf(ret->names[ret->n_names++], TS_NAME_MAX, "%s", o->name);
	ret->spec = snap_spec(ret->id, spec, own_ws, ts_idcopy_subids(rec->spec), err);
	if (!ret->spec) {
		/* ts_error holds the positive errno */
		r = err && err->code > 0 ? -err->code : -EINVAL;
		goto out_spec;
	}
	rootfd = open(paths->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		r = ts_err_errno(err, -errno, "open `%s`", paths->root);
		goto out_spec;
	}
	if (mkdirat(rootfd, "snapshots", 0700) < 0 && errno != EEXIST) {
		r = ts_err_errno(err, -errno, "create `%s/snapshots`", paths->root);
		goto out_spec;
	}
	snapsfd = openat(rootfd, "snapshots", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (snapsfd < 0) {
		r = ts_err_errno(err, -errno, "open `%s/snapshots`", paths->root);
		goto out_spec;
	}
	if ((lock = store_lock(snapsfd, err)) < 0) {
		r = lock;
		goto out_spec;
	}
	sweep_leftovers(paths, snapsfd);
	if (o->name) {
		if ((namefd = claim_name(snapsfd, o->name, err)) < 0) {
			r = namefd;
			goto out_spec;
		}
		snprintf(namefile, sizeof(namefile), ".name-%s", o->name);
	}
	/* built under a temporary name and renamed: a failed snapshot leaves nothing; flocked
	 * from its creation to its record, so no sweep takes it for a killed one's */
	snprintf(tmpname, sizeof(tmpname), ".tmp-%s", ret->id);
	if (mkdirat(snapsfd, tmpname, 0700) < 0) {
		r = ts_err_errno(err, -errno, "create `%s/snapshots/%s`", paths->root, tmpname);
		goto out_name;
	}
	tmpfd = openat(snapsfd, tmpname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tmpfd < 0 || flock(tmpfd, LOCK_EX | LOCK_NB) < 0) {
		r = ts_err_errno(err, -errno, "open `%s/snapshots/%s`", paths->root, tmpname);
		goto fail;
	}
	/* the copy runs without the store lock: other snapshots, deletes and sweeps go on */
	close(TAKE_FD(lock));
	/* one snapshot of a sandbox at a time, and no start of a stopped one meanwhile (start
	 * takes the same lock, sandbox.c): else a second one would find it paused and never
	 * resume it, or a start would change the upper layer under the copy */
	srclock = open(rec->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (srclock < 0 || flock(srclock, LOCK_EX) < 0) {
		r = ts_err_errno(err, -errno, "lock `%s`", rec->dir);
		goto fail;
	}
	/* a consistent copy: nothing of the sandbox runs while it is made (as E2B pauses) */
	if (ts_sandbox_running(rec)) {
		r = pause_for_copy(rec, &hold, err);
		if (r == -EALREADY) {
			/* paused by its user: stays so (hold, if any, keeps it so meanwhile) */
			ts_err_clear(err);
		} else if (r < 0) {
			ts_err_prefix(err, r, "pause `%s` for the snapshot", rec->id);
			goto fail;
		} else {
			paused = true;
		}
	}
	r = copy_part(paths, rec, tmpfd, "upper", &c, err);
	if (r >= 0 && own_ws)
		r = copy_part(paths, rec, tmpfd, "workspace", &c, err);
	if (paused) {
		struct ts_error rerr = { 0 };

		r2 = hold ? resume_held(hold, &rerr) : pause_resume(rec, false, &rerr);
		if (r2 < 0 && r >= 0) {
			r = ts_err(err, r2, "resume `%s` after the snapshot: %s", rec->id,
				   rerr.msg);
		}
	}
	if (r < 0)
		goto fail;
	ret->size = c.bytes;
	ret->created_ms = ts_realtime_ms();
	/* renamed and recorded under the store lock: a sweep sees both or neither */
	if ((lock = store_lock(snapsfd, err)) < 0) {
		r = lock;
		goto fail;
	}
	if (renameat(snapsfd, tmpname, snapsfd, ret->id) < 0) {
		r = ts_err_errno(err, -errno, "rename snapshot into `%s/snapshots/%s`", paths->root,
				 ret->id);
		goto fail;
	}
	r = insert_snap(st, ret, err);
	if (r < 0) {
		ts_idcopy_remove(paths->helper, snapsfd, ret->id, NULL);
		goto out_name;
	}
	if (namefile[0])
		unlinkat(snapsfd, namefile, 0);
	json_decref(spec);
	return 0;
fail:
	/* still flocked by tmpfd: no sweep removes it under us */
	ts_idcopy_remove(paths->helper, snapsfd, tmpname, NULL);
out_name:
	if (namefile[0]) {
		if (lock < 0)
			lock = store_lock(snapsfd, NULL);
		if (lock >= 0)
			unlinkat(snapsfd, namefile, 0);
	}
out_spec:
	json_decref(spec);
	ts_snapshot_free(ret);
	return r;
}

/* Add the snapshot ids in arr (a JSON array) to the set. */
static void refer(json_t *set, json_t *arr)
{
	size_t i;
	json_t *v;

	json_array_foreach(arr, i, v)
		if (json_is_string(v))
			json_object_set_new(set, json_string_value(v), json_true());
}

/*
 * The ids of every snapshot some record refers to: every recorded snapshot itself,
 * sandboxes restored from one, chains. A record whose spec does not parse could refer to
 * any of them: then -EBADMSG, and the caller sweeps nothing (a snapshot is lost only when
 * we know nothing needs it).
 */
static int referenced(struct ts_store *st, json_t *set, struct ts_error *err)
{
	struct ts_sandbox_rec *recs = NULL;
	struct ts_snapshot *snaps = NULL;
	size_t n = 0, ns = 0;
	int r = ts_store_list(st, &recs, &n, err);

	if (r < 0)
		return r;
	for (size_t i = 0; i < n && r == 0; i++) {
		json_t *spec = json_loads(recs[i].spec ? recs[i].spec : "{}", 0, NULL);

		if (!json_is_object(spec))
			r = ts_err(err, -EBADMSG, "sandbox `%s`: its spec does not parse",
				   recs[i].id);
		refer(set, json_object_get(spec, "snapshots"));
		json_decref(spec);
	}
	ts_sandbox_recs_free(recs, n);
	if (r < 0 || (r = ts_snapshot_list(st, &snaps, &ns, err)) < 0)
		return r;
	for (size_t i = 0; i < ns && r == 0; i++) {
		json_t *spec = json_loads(snaps[i].spec ? snaps[i].spec : "", 0, NULL);

		json_object_set_new(set, snaps[i].id, json_true());
		if (!json_is_object(spec))
			r = ts_err(err, -EBADMSG, "snapshot `%s`: its spec does not parse",
				   snaps[i].id);
		refer(set, json_object_get(spec, "layers"));
		json_decref(spec);
	}
	ts_snapshots_free(snaps, ns);
	return r;
}

/* Remove the snapshot directories nothing refers to (with the store lock held). */
static void sweep(const struct ts_paths *paths, int fd, json_t *keep)
{
	DIR *d;
	struct dirent *de;

	d = fdopendir(fcntl(fd, F_DUPFD_CLOEXEC, 3));
	if (!d)
		return;
	rewinddir(d); /* the dup shares fd's offset, which an earlier walk left at the end */
	while ((de = readdir(d))) {
		_cleanup_close_ int e = -EBADF;

		if (!ts_snapshot_id_valid(de->d_name) || json_object_get(keep, de->d_name))
			continue;
		/* a create from it holds it shared until its record is in */
		e = openat(fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (e < 0 || flock(e, LOCK_EX | LOCK_NB) < 0)
			continue;
		/* files of subordinate ids go through the helper (idcopy.h) */
		ts_idcopy_remove(paths->helper, fd, de->d_name, NULL);
	}
	closedir(d);
}

int ts_snapshot_delete(struct ts_store *st, const struct ts_paths *paths, const char *ref,
		       struct ts_error *err)
{
	_cleanup_(ts_snapshot_freep) struct ts_snapshot s = { 0 };
	_cleanup_stmt_ sqlite3_stmt *q = NULL;
	struct ts_sqldb *db = ts_store_sql(st);
	_cleanup_close_ int fd = -EBADF, lock = -EBADF;
	char dir[4200];
	json_t *keep;
	int rc, r = ts_snapshot_get(st, ref, &s, err);

	if (r < 0)
		return r;
	if ((r = ts_sqldb_prepare(db, &q, "DELETE FROM snapshots WHERE id = ?1", err)) < 0)
		return r;
	sqlite3_bind_text(q, 1, s.id, -1, SQLITE_TRANSIENT);
	rc = ts_sqldb_step(q);
	if (rc != SQLITE_DONE)
		return ts_sqldb_err(db, err, rc, "delete snapshot record");
	if (sqlite3_changes(db->db) == 0)
		return ts_err(err, -ENOENT, "no snapshot `%s`", s.id);
	keep = json_object();
	snprintf(dir, sizeof(dir), "%s/snapshots", paths->root);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* the records are read under the store lock: a snapshot renamed into place has its
	 * record in by then, one being copied holds its flock (ts_snapshot_create) */
	if (fd >= 0 && (lock = store_lock(fd, err)) >= 0 && referenced(st, keep, err) == 0) {
		sweep(paths, fd, keep);
		sweep_leftovers(paths, fd);
	}
	/* the record is gone either way; a directory kept is swept by a later delete */
	ts_err_clear(err);
	json_decref(keep);
	return 0;
}

int ts_snapshot_layer_dirs(const struct ts_paths *paths, const char *spec, const char *key,
			   char dirs[][4096], size_t *n, struct ts_error *err)
{
	json_t *j = json_loads(spec ? spec : "{}", 0, NULL), *v;
	size_t i;
	int r = 0;

	*n = 0;
	json_array_foreach(json_object_get(j, key), i, v) {
		struct stat sb;
		const char *id = json_string_value(v);

		if (*n >= TS_SNAP_MAX_CHAIN || !ts_snapshot_id_valid(id)) {
			r = ts_err(err, -EINVAL, "bad snapshot layer list");
			break;
		}
		if ((size_t)snprintf(dirs[*n], 4096, "%s/snapshots/%s/upper", paths->root, id) >=
		    4096) {
			r = ts_err(err, -ENAMETOOLONG, "snapshot path too long");
			break;
		}
		if (lstat(dirs[*n], &sb) < 0 || !S_ISDIR(sb.st_mode)) {
			r = ts_err_errno(err, -errno ?: -ENOTDIR, "snapshot layer `%s`", dirs[*n]);
			break;
		}
		(*n)++;
	}
	json_decref(j);
	return r;
}

int ts_snapshot_copy_workspace(const struct ts_paths *paths, const struct ts_snapshot *s,
			       const char *dst_spec, int dst_fd, struct ts_error *err)
{
	/* bounded like the snapshot was: its workspace is part of what it counted (a tree
	 * changed under the state root since cannot make a restore fill the disk) */
	struct ts_treecopy c = {
		.max_bytes = s->size ? s->size : 1,
		.max_entries = TS_SNAP_DEFAULT_MAX_ENTRIES,
	};
	char dir[4200];
	_cleanup_close_ int fd = -EBADF;
	json_t *spec = json_loads(s->spec ? s->spec : "{}", 0, NULL);
	/* recorded since issue 9; an older snapshot may hold them */
	bool subids = !json_is_false(json_object_get(spec, "subids"));
	int r;

	json_decref(spec);
	if ((r = snapdir(paths, s->id, dir, sizeof(dir) - 16)) < 0)
		return ts_err(err, r, "snapshot path too long");
	strcat(dir, "/workspace");
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : ts_err_errno(err, -errno, "open `%s`", dir);
	r = ts_idcopy_restore(paths->helper, subids, dst_spec, fd, dst_fd, &c, err);
	return r < 0 ? ts_err_prefix(err, r, "copy the workspace of snapshot `%s`", s->id) : 0;
}
