/* SPDX-License-Identifier: Apache-2.0 */
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "ctl.h"
#include "ctlclient.h"
#include "hostcheck.h"
#include "idmap-plan.h"
#include "launch.h"
#include "oci-store.h"
#include "paths.h"
#include "idcopy.h"
#include "snapshot.h"
#include "syscall.h"
#include "util.h"

#define TS_STOP_WAIT_MS 5000
/* how long init may take to answer HELLO; it serves from a poll loop, so a slow answer
 * means a stuck or hostile init */
#define TS_ANSWER_MS 10000

/* What create was asked, resolved (env values taken from the host now), as JSON: start
 * rebuilds the same sandbox from it. */
static char *spec_json(const struct ts_create_opts *o, const char *ws, bool own_ws, const char *pin,
		       json_t *layers)
{
	json_t *spec = json_object(), *env = json_array();
	char *out;

	for (char **e = o->env; e && *e; e++) {
		if (strchr(*e, '=')) {
			json_array_append_new(env, json_string(*e));
		} else {
			const char *v = getenv(*e);
			char *kv;

			if (!v || asprintf(&kv, "%s=%s", *e, v) < 0)
				continue;
			json_array_append_new(env, json_string(kv));
			free(kv);
		}
	}
	json_object_set_new(spec, "image", o->image ? json_string(o->image) : json_null());
	/* an image of the store: its layers as they are now, whatever becomes of the name */
	if (pin)
		json_object_set_new(spec, "image_pin", json_loads(pin, 0, NULL));
	json_object_set_new(spec, "policy",
			    o->policy_file ? json_string(o->policy_file) : json_null());
	json_object_set_new(spec, "env", env);
	json_object_set_new(spec, "user", json_string(o->as_root ? "root" : "user"));
	if (o->with_root)
		json_object_set_new(spec, "root_ids", json_true());
	if (o->sudo)
		json_object_set_new(spec, "sudo", json_true());
	if (o->protected_patterns && o->protected_patterns[0]) {
		json_t *pp = json_array();
		for (char **q = o->protected_patterns; *q; q++)
			json_array_append_new(pp, json_string(*q));
		json_object_set_new(spec, "protected", pp);
	}
	if (o->network)
		json_object_set_new(spec, "network", json_true());
	if (o->net_allow && o->net_allow[0]) {
		json_t *na = json_array();

		for (char **q = o->net_allow; *q; q++)
			json_array_append_new(na, json_string(*q));
		json_object_set_new(spec, "net_allow", na);
		json_object_set_new(spec, "network", json_true());
	}
	json_object_set_new(spec, "memory", json_integer((json_int_t)o->memory_bytes));
	json_object_set_new(spec, "pids", json_integer((json_int_t)o->pids));
	json_object_set_new(spec, "cpus", json_real(o->cpus));
	json_object_set_new(spec, "workspace", json_string(ws));
	json_object_set_new(spec, "own_workspace", json_boolean(own_ws));
	if (layers)
		json_object_set(spec, "snapshots", layers);
	out = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(spec);
	return out;
}

int ts_sandbox_spec_add_env(struct ts_sandbox_rec *rec, char *const *env, struct ts_error *err)
{
	json_error_t jerr;
	json_t *spec = json_loads(rec->spec ? rec->spec : "{}", 0, &jerr), *arr;
	char *text;

	if (!json_is_object(spec)) {
		json_decref(spec);
		return ts_err(err, -EINVAL, "sandbox `%s`: its recorded spec is no JSON object",
			      rec->id);
	}
	arr = json_object_get(spec, "env");
	if (!json_is_array(arr)) {
		arr = json_array();
		json_object_set_new(spec, "env", arr);
	}
	for (char *const *e = env; e && *e; e++) {
		const char *eq = strchr(*e, '=');

		if (!eq || !ts_policy_env_name_valid(*e, (size_t)(eq - *e))) {
			json_decref(spec);
			return ts_err(err, -EINVAL,
				      "invalid environment variable `%.80s`: want NAME=VALUE with "
				      "NAME matching [A-Za-z_][A-Za-z0-9_]*",
				      *e);
		}
		json_array_append_new(arr, json_string(*e));
	}
	text = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(spec);
	if (!text)
		return ts_err(err, -ENOMEM, "out of memory");
	free(rec->spec);
	rec->spec = text;
	return 0;
}

/* UTF-8 (as JSON needs) without control characters: what `ls` prints as it is. */
static bool printable_utf8(const char *s, size_t len)
{
	json_t *j = json_stringn(s, len);

	json_decref(j);
	if (!j)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

bool ts_label_valid(const char *kv, char *why, size_t len)
{
	const char *eq = strchr(kv, '=');
	size_t klen = eq ? (size_t)(eq - kv) : 0;

	if (!eq || klen == 0)
		snprintf(why, len, "want KEY=VALUE");
	else if (klen > TS_LABEL_KEY_MAX || strlen(eq + 1) > TS_LABEL_VALUE_MAX)
		snprintf(why, len, "KEY is at most %d bytes and VALUE at most %d", TS_LABEL_KEY_MAX,
			 TS_LABEL_VALUE_MAX);
	else if (!printable_utf8(kv, klen) || !printable_utf8(eq + 1, strlen(eq + 1)))
		snprintf(why, len, "KEY and VALUE must be UTF-8 without control characters");
	else
		return true;
	return false;
}

static char *labels_json(char **labels, struct ts_error *err)
{
	json_t *obj = json_object();
	char *out;

	for (char **l = labels; l && *l; l++) {
		const char *eq = strchr(*l, '=');
		char key[TS_LABEL_KEY_MAX + 1], why[128];

		if (!ts_label_valid(*l, why, sizeof(why)) ||
		    snprintf(key, sizeof(key), "%.*s", (int)(eq - *l), *l) < 0 ||
		    json_object_set_new(obj, key, json_string(eq + 1)) < 0) {
			json_decref(obj);
			ts_err(err, -EINVAL, "bad label `%s`: %s", *l, why);
			return NULL;
		}
	}
	out = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(obj);
	return out;
}

/* Was the sandbox created with `--user root`? */
static bool spec_user_root(json_t *spec)
{
	const char *user = json_string_value(json_object_get(spec, "user"));

	return user && !strcmp(user, "root");
}

/* Does it have a root inside (`--user root`, or asked for one: E2B's templates)? */
static bool spec_with_root(json_t *spec)
{
	return spec_user_root(spec) || json_is_true(json_object_get(spec, "root_ids"));
}

/* The run options and policy a record's spec describes. */
static int opts_from_spec(const struct ts_sandbox_rec *rec, struct ts_run_opts *o,
			  struct ts_policy *pol, struct ts_paths *paths, char *image,
			  size_t image_len, char **pin, char (*snap_layers)[4096],
			  struct ts_error *err)
{
	json_error_t jerr;
	json_t *spec = json_loads(rec->spec ? rec->spec : "{}", 0, &jerr), *v;
	char defpol[4200];
	size_t i;
	int r;

	if (!spec)
		return ts_err(err, -EINVAL, "sandbox `%s`: bad recorded spec: %s", rec->id,
			      jerr.text);
	memset(o, 0, sizeof(*o));
	r = ts_paths_init(paths, err);
	if (r < 0)
		goto out;
	snprintf(defpol, sizeof(defpol), "%s/default.yaml", paths->policy_dir);
	if (access(defpol, F_OK) == 0 && (r = ts_policy_load(pol, defpol, err)) < 0)
		goto out;
	v = json_object_get(spec, "policy");
	if (json_is_string(v) && (r = ts_policy_load(pol, json_string_value(v), err)) < 0)
		goto out;
	json_array_foreach(json_object_get(spec, "env"), i, v) {
		if (json_is_string(v) &&
		    (r = ts_policy_add_env(pol, json_string_value(v), err)) < 0)
			goto out;
	}
	json_array_foreach(json_object_get(spec, "protected"), i, v) {
		if (json_is_string(v) &&
		    (r = ts_policy_add_protected(pol, json_string_value(v), err)) < 0)
			goto out;
	}
	v = json_object_get(spec, "memory");
	if (json_integer_value(v) > 0)
		pol->memory_bytes = (unsigned long long)json_integer_value(v);
	v = json_object_get(spec, "pids");
	if (json_integer_value(v) > 0)
		pol->pids = (unsigned long long)json_integer_value(v);
	v = json_object_get(spec, "cpus");
	if (json_number_value(v) > 0)
		pol->cpus = json_number_value(v);
	/* the timeout of a policy bounds `run`; a durable sandbox has its ttl instead */
	pol->timeout_ms = 0;
	v = json_object_get(spec, "image");
	if (json_is_string(v)) {
		snprintf(image, image_len, "%s", json_string_value(v));
		o->image = image;
		v = json_object_get(spec, "image_pin");
		if (json_is_object(v)) {
			*pin = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
			if (!*pin) {
				r = ts_err(err, -ENOMEM, "out of memory");
				goto out;
			}
			o->image_pin = *pin;
		}
	}
	o->as_root = spec_user_root(spec);
	o->with_root = spec_with_root(spec);
	/* asked for at create (the backend's `sudo`): over whatever the policy files say */
	if (json_is_true(json_object_get(spec, "sudo")))
		pol->sudo = true;
	if (json_is_true(json_object_get(spec, "network")))
		pol->network = true;
	json_array_foreach(json_object_get(spec, "net_allow"), i, v) {
		char why[200];

		if (!json_is_string(v))
			continue;
		r = ts_policy_add_net_allow(pol, json_string_value(v), why, sizeof(why));
		if (r < 0) {
			ts_err(err, r, "sandbox `%s`: network.allow `%.300s`: %s", rec->id,
			       json_string_value(v), why);
			goto out;
		}
	}
	if ((r = ts_policy_check_network(pol, err)) < 0)
		goto out;
	if (json_is_false(json_object_get(spec, "own_workspace")))
		o->workspace = rec->workspace;
	if (snap_layers && (r = ts_snapshot_layer_dirs(paths, rec->spec, "snapshots", snap_layers,
						       &o->n_snap_layers, err)) < 0)
		goto out;
	o->snap_layers = o->n_snap_layers ? snap_layers : NULL;
	o->policy = pol;
	o->durable_id = rec->id;
	o->paths = paths;
	r = 0;
out:
	json_decref(spec);
	return r;
}

static void remove_cgroups(const struct ts_sandbox_rec *rec)
{
	char name[32];

	snprintf(name, sizeof(name), "ts-%s", rec->id);
	ts_cgroup_remove(name);
}

bool ts_sandbox_running(struct ts_sandbox_rec *rec)
{
	if (rec->init_pid > 0 && ts_proc_alive(rec->init_pid, rec->init_start))
		return true;
	snprintf(rec->state, sizeof(rec->state), "stopped");
	rec->init_pid = 0;
	return false;
}

/* SHUTDOWN, and its OK (init answers before it ends everything). */
static void send_shutdown(struct ts_ctl_client *c)
{
	struct ts_ctl_msg m = { 0 }, reply = { 0 };
	struct ts_error ignore;

	ts_ctl_msg_init(&m, TS_CTL_SHUTDOWN, 0);
	if (ts_ctl_client_call(c, &m, TS_CTL_OK, &reply, &ignore) == 0)
		ts_ctl_msg_free(&reply);
	ts_ctl_msg_free(&m);
}

/*
 * An init that serves the sandbox's control socket although none is on record: its starter
 * was killed between the helper's report and the store update. It is asked to end
 * everything (SHUTDOWN) and waited for until the socket no longer answers.
 */
static void end_unrecorded_init(const struct ts_sandbox_rec *rec)
{
	struct ts_ctl_client *c = NULL;
	struct ts_error ignore;

	if (ts_ctl_client_connect(rec->dir, rec->id, TS_ANSWER_MS, &c, &ignore) < 0)
		return;
	send_shutdown(c);
	ts_ctl_client_free(c);
	for (int i = 0; i < (TS_STOP_WAIT_MS + 2500) / 20; i++) {
		if (ts_ctl_client_connect(rec->dir, rec->id, TS_ANSWER_MS, &c, &ignore) < 0)
			return;
		ts_ctl_client_free(c);
		usleep(20000);
	}
}

/*
 * Starts of one sandbox are serialised by an exclusive flock(2) on its directory: two
 * CLIs starting it at once (exec, start, cp) would otherwise build two inits around the
 * same files. The fd is close-on-exec, so the lock ends with this process's hold of it.
 */
static int lock_dir(const struct ts_sandbox_rec *rec, struct ts_error *err)
{
	int fd;

	if (mkdir(rec->dir, 0700) < 0 && errno != EEXIST)
		return ts_err_errno(err, -errno, "create `%s`", rec->dir);
	fd = open(rec->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return ts_err_errno(err, -errno, "open `%s`", rec->dir);
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR) {
			int r = ts_err_errno(err, -errno, "lock `%s`", rec->dir);

			close(fd);
			return r;
		}
	return fd;
}

int ts_sandbox_start(struct ts_store *st, struct ts_sandbox_rec *rec,
		     const struct ts_run_hooks *hooks, struct ts_error *err)
{
	_cleanup_close_ int lock = -EBADF;
	struct ts_sandbox_rec fresh;
	struct ts_run_opts o;
	struct ts_policy pol;
	struct ts_paths paths;
	char image[4096], snap_layers[TS_SNAP_MAX_CHAIN][4096];
	_cleanup_free_ char *pin = NULL;
	pid_t init = 0;
	int r;

	if (ts_sandbox_running(rec))
		return 0;
	lock = lock_dir(rec, err);
	if (lock < 0)
		return ts_err_prefix(err, lock, "start `%s`", rec->id);
	/* whoever held the lock before us may have started it */
	if (ts_store_get(st, rec->id, &fresh, err) == 0) {
		ts_sandbox_rec_free(rec);
		*rec = fresh;
		if (ts_sandbox_running(rec))
			return 0;
	}
	ts_err_clear(err);
	end_unrecorded_init(rec);
	/* left by an init that died (kill -9, OOM, reboot): the name is about to be reused */
	remove_cgroups(rec);
	ts_policy_init(&pol);
	r = opts_from_spec(rec, &o, &pol, &paths, image, sizeof(image), &pin, snap_layers, err);
	o.hooks = hooks;
	if (r >= 0)
		r = ts_launch_durable(&o, &init, err);
	ts_policy_free(&pol);
	if (r < 0)
		return ts_err_prefix(err, r, "start `%s`", rec->id);
	rec->init_pid = init;
	rec->init_start = ts_proc_start_time(init);
	rec->started_ms = rec->last_activity_ms = ts_realtime_ms();
	snprintf(rec->state, sizeof(rec->state), "running");
	return ts_store_update(st, rec, err);
}

/*
 * A create from a snapshot: its image and pin become the sandbox's, its layers the spec's
 * `snapshots`. Its directory is held with a shared flock (snap_lock) until the record is
 * in, so that a `snapshot rm` meanwhile does not remove it.
 */
static int use_snapshot(struct ts_store *st, const struct ts_paths *paths, const char *ref,
			struct ts_snapshot *snap, char *image, size_t image_len, char **pin,
			json_t **layers, int *snap_lock, struct ts_error *err)
{
	char dir[4200];
	json_t *spec, *v;
	int r = ts_snapshot_get(st, ref, snap, err);

	if (r < 0)
		return r;
	snprintf(dir, sizeof(dir), "%s/snapshots/%s", paths->root, snap->id);
	*snap_lock = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*snap_lock < 0 || flock(*snap_lock, LOCK_SH) < 0)
		return ts_err_errno(err, -errno, "snapshot `%s`: open `%s`", snap->id, dir);
	spec = json_loads(snap->spec, 0, NULL);
	if (!spec)
		return ts_err(err, -EBADMSG, "snapshot `%s`: bad recorded spec", snap->id);
	v = json_object_get(spec, "image");
	image[0] = '\0';
	if (json_is_string(v))
		snprintf(image, image_len, "%s", json_string_value(v));
	v = json_object_get(spec, "image_pin");
	if (json_is_object(v))
		*pin = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
	*layers = json_incref(json_object_get(spec, "layers"));
	json_decref(spec);
	if (!json_is_array(*layers))
		return ts_err(err, -EBADMSG, "snapshot `%s`: no layers recorded", snap->id);
	return 0;
}

/* The snapshot's workspace into the new sandbox's own, before its first start. */
static int restore_workspace(const struct ts_paths *paths, const struct ts_sandbox_rec *rec,
			     const struct ts_snapshot *snap, struct ts_error *err)
{
	_cleanup_close_ int fd = -EBADF;

	if (mkdir(rec->dir, 0700) < 0 && errno != EEXIST)
		return ts_err_errno(err, -errno, "create `%s`", rec->dir);
	if (mkdir(rec->workspace, 0755) < 0)
		return ts_err_errno(err, -errno, "create `%s`", rec->workspace);
	fd = open(rec->workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return ts_err_errno(err, -errno, "open `%s`", rec->workspace);
	return ts_snapshot_copy_workspace(paths, snap, rec->spec, fd, err);
}

static int create_rec(const struct ts_create_opts *o, struct ts_sandbox_rec *rec,
		      struct ts_error *err)
{
	struct ts_paths paths;
	_cleanup_(ts_store_closep) struct ts_store *st = NULL;
	_cleanup_(ts_snapshot_freep) struct ts_snapshot snap = { 0 };
	struct ts_create_opts oo = *o;
	char ws[4096], snap_image[4096];
	bool own_ws = !o->workspace;
	_cleanup_free_ char *pin = NULL;
	_cleanup_close_ int pin_lock = -EBADF, snap_lock = -EBADF;
	json_t *layers = NULL;
	int r;

	memset(rec, 0, sizeof(*rec));
	r = ts_paths_init(&paths, err);
	if (r < 0)
		return r;
	r = ts_id_new(rec->id, err);
	if (r < 0)
		return r;
	if (o->name)
		snprintf(rec->name, sizeof(rec->name), "%s", o->name);
	if (ts_path_join(rec->dir, sizeof(rec->dir), paths.root, rec->id) < 0)
		return ts_err(err, -ENAMETOOLONG, "sandbox path too long");
	if (o->workspace) {
		if (!realpath(o->workspace, ws))
			return ts_err_errno(err, -errno, "workspace `%s`", o->workspace);
	} else {
		if (ts_path_join(ws, sizeof(ws), rec->dir, "workspace") < 0)
			return ts_err(err, -ENAMETOOLONG, "workspace path too long");
	}
	snprintf(rec->workspace, sizeof(rec->workspace), "%s", ws);
	r = ts_store_open(&st, paths.root, err);
	if (r < 0)
		return r;
	if (o->snapshot) {
		r = use_snapshot(st, &paths, o->snapshot, &snap, snap_image, sizeof(snap_image),
				 &pin, &layers, &snap_lock, err);
		oo.image = snap_image[0] ? snap_image : NULL;
	} else if (o->image && o->image[0] != '/') {
		/* the store's lock stays shared until the record is in (ts_oci_pin) */
		r = ts_oci_pin(paths.root, o->image, &pin, &pin_lock, err);
	}
	if (r < 0) {
		json_decref(layers);
		return r;
	}
	rec->spec = spec_json(&oo, ws, own_ws, pin, layers);
	json_decref(layers);
	rec->labels = labels_json(o->labels, err);
	if (!rec->spec || !rec->labels)
		return rec->labels ? ts_err(err, -ENOMEM, "build spec") : -EINVAL;
	rec->created_ms = rec->last_activity_ms = ts_realtime_ms();
	rec->ttl_ms = o->ttl_ms < 0 ? TS_DEFAULT_TTL_MS : o->ttl_ms;
	rec->ttl_absolute = o->ttl_absolute;
	rec->owner_pid = o->owner_pid;
	rec->owner_start = o->owner_pid ? ts_proc_start_time(o->owner_pid) : 0;
	if (o->owner_pid && !rec->owner_start)
		return ts_err(err, -ESRCH, "owner process %d does not exist", (int)o->owner_pid);
	snprintf(rec->state, sizeof(rec->state), "stopped");
	r = ts_store_insert(st, rec, err);
	if (r < 0)
		return r;
	if (pin_lock >= 0)
		close(TAKE_FD(pin_lock));
	if (snap_lock >= 0)
		close(TAKE_FD(snap_lock));
	/* a --workspace of the user's is theirs: the snapshot's is not copied over it */
	r = o->snapshot && own_ws ? restore_workspace(&paths, rec, &snap, err) : 0;
	if (r >= 0)
		r = ts_sandbox_start(st, rec, o->hooks, err);
	if (r < 0) {
		/* as if never attempted: the record and what start made go again */
		struct ts_error ignore;
		char sub[4200];

		ts_store_delete(st, rec->id, &ignore);
		if (own_ws) {
			ts_rm_rf_at(AT_FDCWD, rec->dir);
		} else {
			static const char *const parts[] = { "upper", "work", "run", "logs" };

			for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
				snprintf(sub, sizeof(sub), "%s/%s", rec->dir, parts[i]);
				ts_rm_rf_at(AT_FDCWD, sub);
			}
			rmdir(rec->dir);
		}
		return r;
	}
	return 0;
}

int ts_sandbox_create(const struct ts_create_opts *o, struct ts_sandbox_rec *rec,
		      struct ts_error *err)
{
	int r = create_rec(o, rec, err);

	/* nothing of a sandbox that was never made stays with the caller */
	if (r < 0)
		ts_sandbox_rec_free(rec);
	return r;
}

/* Wait until the process behind pidfd is gone, up to ms. True when gone. */
static bool wait_gone(int pidfd, int ms)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return poll(&p, 1, ms) > 0;
}

int ts_sandbox_stop(struct ts_store *st, struct ts_sandbox_rec *rec, unsigned grace_ms,
		    struct ts_error *err)
{
	_cleanup_close_ int pidfd = -EBADF;
	int r;

	if (!ts_sandbox_running(rec)) {
		end_unrecorded_init(rec);
		return ts_store_update(st, rec, err);
	}
	/* a pidfd first, then the start-time check again: from here on the pid cannot be
	 * recycled under us (RT-09) */
	pidfd = ts_pidfd_open(rec->init_pid, 0);
	if (pidfd < 0 || !ts_proc_alive(rec->init_pid, rec->init_start)) {
		ts_sandbox_running(rec);
		return ts_store_update(st, rec, err);
	}
	{
		struct ts_ctl_client *c = NULL;
		struct ts_error ignore;

		/* init takes no signal as a request (server.c): one that does not answer
		 * is killed, and its namespace with it */
		if (ts_ctl_client_connect(rec->dir, rec->id, TS_ANSWER_MS, &c, &ignore) == 0) {
			send_shutdown(c);
			ts_ctl_client_free(c);
		} else {
			ts_pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
		}
	}
	/* init gives its processes a grace period itself; past ours, kill the namespace */
	if (!wait_gone(pidfd, (int)grace_ms + 2500)) {
		ts_pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
		if (!wait_gone(pidfd, TS_STOP_WAIT_MS))
			return ts_err(err, -ETIMEDOUT, "sandbox `%s`: init %d does not die",
				      rec->id, (int)rec->init_pid);
	}
	rec->init_pid = 0;
	rec->init_start = 0;
	snprintf(rec->state, sizeof(rec->state), "stopped");
	remove_cgroups(rec);
	r = ts_store_update(st, rec, err);
	return r;
}

int ts_sandbox_check_root(struct ts_sandbox_rec *rec, struct ts_error *err)
{
	json_t *spec;
	struct ts_idmap_plan plan;
	bool spec_root;
	int r;

	/* The plan is decided by who starts the sandbox (the owner of the state root, the
	 * same as now) and its spec, so the one of a running sandbox is the one it got:
	 * asking never needs a start, and the answer is the same in both states. */
	spec = json_loads(rec->spec ? rec->spec : "{}", 0, NULL);
	/* a sudo sandbox gets a root too (launch.c); one asked for by a policy file is not
	 * seen here */
	spec_root = spec && (spec_with_root(spec) || json_is_true(json_object_get(spec, "sudo")));
	json_decref(spec);
	r = ts_idmap_plan(&plan, spec_root, err);
	if (r < 0)
		return r;
	if (!plan.has_root)
		return ts_err(err, -EPERM,
			      "sandbox `%s` has no root to run as: its user namespace has one id "
			      "(mapping mode `%s`); a sandbox has a root when created by root, or "
			      "with `--user root` and subordinate ids (see `toren-sandbox doctor`)",
			      rec->id, plan.mode);
	return 0;
}

bool ts_sandbox_own_workspace(const struct ts_sandbox_rec *rec)
{
	char own[4200];
	json_t *spec;
	bool r;

	snprintf(own, sizeof(own), "%s/workspace", rec->dir);
	if (strcmp(own, rec->workspace) != 0)
		return false;
	spec = json_loads(rec->spec ? rec->spec : "{}", 0, NULL);
	r = spec && !json_is_false(json_object_get(spec, "own_workspace"));
	json_decref(spec);
	return r;
}

static void warnf(ts_sandbox_warn_fn warn, void *ud, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void warnf(ts_sandbox_warn_fn warn, void *ud, const char *fmt, ...)
{
	char msg[8400];
	va_list ap;

	if (!warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	warn(ud, msg);
}

static bool exists_at(int dfd, const char *name)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Remove dfd/name without following links (files of subordinate ids through the helper,
 * idcopy.h); say what failed. true when gone. */
static bool remove_at(const char *helper, int dfd, const char *dir, const char *name,
		      ts_sandbox_warn_fn warn, void *ud)
{
	int r = ts_idcopy_remove(helper, dfd, name, NULL);

	if (r < 0) {
		warnf(warn, ud, "remove `%s/%s`: %s", dir, name, strerror(-r));
		return false;
	}
	return true;
}

int ts_sandbox_remove(struct ts_store *st, const struct ts_paths *paths,
		      const struct ts_sandbox_rec *rec, bool purge, ts_sandbox_warn_fn warn,
		      void *ud, struct ts_error *err)
{
	static const char *const always[] = { "run", "logs", "work" };
	_cleanup_close_ int rootfd = -EBADF, dfd = -EBADF;
	char expect[4200];
	bool own_ws = ts_sandbox_own_workspace(rec), ok = true;
	int r;

	r = ts_store_delete(st, rec->id, err);
	if (r < 0)
		return r;
	snprintf(expect, sizeof(expect), "%s/%s", paths->root, rec->id);
	if (strcmp(expect, rec->dir) != 0)
		return ts_err(err, -EINVAL,
			      "%s: recorded directory `%s` is not `%s`: its files are left alone",
			      rec->id, rec->dir, expect);
	if (purge && !own_ws)
		warnf(warn, ud,
		      "%s: kept workspace `%s`: it was given with --workspace, not made for the "
		      "sandbox",
		      rec->id, rec->workspace);
	rootfd = open(paths->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd >= 0)
		dfd = openat(rootfd, rec->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		if (errno == ENOENT)
			return 0;
		return ts_err_errno(err, -errno, "open `%s`", rec->dir);
	}
	for (size_t i = 0; i < ELEMENTSOF(always); i++)
		ok &= remove_at(paths->helper, dfd, rec->dir, always[i], warn, ud);
	if (purge) {
		ok &= remove_at(paths->helper, dfd, rec->dir, "upper", warn, ud);
		if (own_ws)
			ok &= remove_at(paths->helper, dfd, rec->dir, "workspace", warn, ud);
	} else {
		bool upper = exists_at(dfd, "upper"), ws = own_ws && exists_at(dfd, "workspace");

		if (upper || ws)
			warnf(warn, ud, "%s: kept %s%s%s in `%s` (--purge removes %s)", rec->id,
			      ws ? "its workspace" : "", ws && upper ? " and " : "",
			      upper ? "its upper layer" : "", rec->dir,
			      ws && upper ? "them" : "it");
	}
	/* Gone when empty; what was kept keeps it. */
	if (unlinkat(rootfd, rec->id, AT_REMOVEDIR) < 0 && errno != ENOTEMPTY && errno != EEXIST &&
	    errno != ENOENT) {
		warnf(warn, ud, "remove `%s`: %s", rec->dir, strerror(errno));
		ok = false;
	}
	return ok ? 0 : ts_err(err, -EIO, "`%s`: some files could not be removed", rec->dir);
}
