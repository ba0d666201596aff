/* SPDX-License-Identifier: Apache-2.0 */
/* The backend interface's dispatch, selection, error classes and blocking helpers. */
#include "backend-impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "util.h"

static const char *const valid_names = "auto, local, e2b, none";

int ts_backend_open(const char *name, struct ts_backend **ret, struct ts_error *err)
{
	_cleanup_free_ struct ts_backend *b = calloc(1, sizeof(*b));
	int r;

	if (!b)
		return ts_err(err, -ENOMEM, "out of memory");
	if (!name || !*name)
		name = getenv("TOREN_SANDBOX");
	if (!name || !*name)
		name = "auto";
	if (!strcmp(name, "auto"))
		name = getenv("E2B_API_KEY") && *getenv("E2B_API_KEY") ? "e2b" : "local";
	if (!strcmp(name, "local"))
		r = ts_backend_local_open(b, err);
	else if (!strcmp(name, "none"))
		r = ts_backend_none_open(b, "the `none` backend was chosen", err);
	else if (!strcmp(name, "e2b"))
		r = ts_backend_e2b_open(b, err);
	else if (!strcmp(name, "docker"))
		return ts_err(err, -EINVAL,
			      "there is no `docker` backend: toren-sandbox runs sandboxes itself, "
			      "with no daemon; use `local` (valid backends: %s)",
			      valid_names);
	else
		return ts_err(err, -EINVAL, "unknown backend `%.64s`: valid backends are %s", name,
			      valid_names);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(b);
	return 0;
}

void ts_backend_free(struct ts_backend *b)
{
	if (!b)
		return;
	if (b->ops && b->ops->free)
		b->ops->free(b);
	free(b);
}

const char *ts_backend_warning(struct ts_backend *b)
{
	return b->ops->warning ? b->ops->warning(b) : "";
}

void ts_backend_on_warning(struct ts_backend *b, ts_be_note_fn fn, void *userdata)
{
	b->warn = fn;
	b->warn_userdata = userdata;
}

const char *ts_backend_name(const struct ts_backend *b)
{
	return b->ops->name;
}

/* --- errors ------------------------------------------------------------------------ */

enum ts_be_code ts_be_code(const struct ts_error *err)
{
	/* err->code is a positive errno (error.h); a negative one is taken as well */
	switch (err->code < 0 ? -err->code : err->code) {
	case 0:
		return TS_BE_OK;
	case ENOENT:
	case ESRCH:
		return TS_BE_NOT_FOUND;
	case EINVAL:
	case E2BIG:
	case ENAMETOOLONG:
	case ENOTDIR:
	case EISDIR:
	case ELOOP:
		return TS_BE_INVALID_ARGUMENT;
	case ETIMEDOUT:
	case ETIME:
		return TS_BE_TIMEOUT;
	case ENOSPC:
	case EDQUOT:
		return TS_BE_NOT_ENOUGH_SPACE;
	case EKEYREJECTED:
	case EKEYEXPIRED:
		return TS_BE_AUTHENTICATION;
	case EPERM:
	case EACCES:
	case EROFS:
		return TS_BE_PERMISSION;
	case EAGAIN:
	case EMFILE:
	case ENFILE:
	case EUSERS:
		return TS_BE_RATE_LIMIT;
	case EEXIST:
	case ENOTEMPTY:
	case EALREADY: /* ts_sb_pause of a paused sandbox (E2B: 409) */
	case EBUSY:    /* a resume while a snapshot holds the pause, a name being given */
		return TS_BE_ALREADY_EXISTS;
	case ECONNREFUSED:
	case ECONNRESET:
	case EPIPE:
	case ENOTCONN:
	case EHOSTDOWN:
		return TS_BE_UNAVAILABLE;
	case EOPNOTSUPP:
	case ENOSYS:
		return TS_BE_UNIMPLEMENTED;
	case ENOPKG:
	case ENOEXEC:
		return TS_BE_TEMPLATE;
	case ECHILD: /* ts_be_run: the command's non-zero exit */
		return TS_BE_COMMAND_EXIT;
	default:
		return TS_BE_INTERNAL;
	}
}

const char *ts_be_code_name(enum ts_be_code code)
{
	static const char *const names[] = {
		[TS_BE_OK] = "ok",
		[TS_BE_NOT_FOUND] = "not_found",
		[TS_BE_INVALID_ARGUMENT] = "invalid_argument",
		[TS_BE_TIMEOUT] = "deadline_exceeded",
		[TS_BE_COMMAND_EXIT] = "command_exit",
		[TS_BE_NOT_ENOUGH_SPACE] = "not_enough_space",
		[TS_BE_AUTHENTICATION] = "unauthenticated",
		[TS_BE_PERMISSION] = "permission_denied",
		[TS_BE_RATE_LIMIT] = "resource_exhausted",
		[TS_BE_ALREADY_EXISTS] = "already_exists",
		[TS_BE_UNAVAILABLE] = "unavailable",
		[TS_BE_UNIMPLEMENTED] = "unimplemented",
		[TS_BE_TEMPLATE] = "template",
		[TS_BE_INTERNAL] = "internal",
	};

	return (size_t)code < sizeof(names) / sizeof(names[0]) && names[code] ? names[code]
									      : "internal";
}

/* --- sandboxes --------------------------------------------------------------------- */

static int new_sb(struct ts_backend *b, struct ts_sb **ret, struct ts_error *err)
{
	struct ts_sb *sb = calloc(1, sizeof(*sb));

	if (!sb)
		return ts_err(err, -ENOMEM, "out of memory");
	sb->ops = b->ops;
	sb->b = b;
	*ret = sb;
	return 0;
}

int ts_sb_create(struct ts_backend *b, const struct ts_sb_create_opts *o, struct ts_sb **ret,
		 struct ts_error *err)
{
	struct ts_sb *sb = NULL;
	int r = new_sb(b, &sb, err);

	if (r < 0)
		return r;
	r = b->ops->sb_create(b, o, sb, err);
	if (r < 0) {
		free(sb);
		return r;
	}
	*ret = sb;
	return 0;
}

static int connect_sb(struct ts_backend *b, const char *id, long long timeout_ms, bool start,
		      struct ts_sb **ret, struct ts_error *err)
{
	struct ts_sb *sb = NULL;
	int r = new_sb(b, &sb, err);

	if (r < 0)
		return r;
	r = b->ops->sb_connect(b, id, timeout_ms, start, sb, err);
	if (r < 0) {
		free(sb);
		return r;
	}
	*ret = sb;
	return 0;
}

int ts_sb_connect(struct ts_backend *b, const char *id, long long timeout_ms, struct ts_sb **ret,
		  struct ts_error *err)
{
	return connect_sb(b, id, timeout_ms, true, ret, err);
}

int ts_sb_lookup(struct ts_backend *b, const char *id, struct ts_sb **ret, struct ts_error *err)
{
	return connect_sb(b, id, -1, false, ret, err);
}

int ts_sb_kill(struct ts_backend *b, const char *id, struct ts_error *err)
{
	struct ts_sb *sb = NULL;
	int r = ts_sb_lookup(b, id, &sb, err);

	/* E2B's kill: gone, with what was made for it */
	if (r == 0)
		r = ts_sb_remove(sb, TS_SB_REMOVE_FORCE | TS_SB_REMOVE_PURGE, NULL, NULL, err);
	ts_sb_close(sb);
	return r;
}

int ts_sb_remove(struct ts_sb *sb, unsigned flags, ts_be_warn_fn warn, void *userdata,
		 struct ts_error *err)
{
	return sb->ops->sb_remove(sb, flags, warn, userdata, err);
}

int ts_backend_reap(struct ts_backend *b, bool dry_run, bool (*stop_early)(void), ts_reap_fn fn,
		    void *userdata, unsigned *failed, struct ts_error *err)
{
	*failed = 0;
	if (!b->ops->reap)
		return ts_err(err, -EOPNOTSUPP,
			      "backend `%s` ends its sandboxes itself: there is nothing to reap",
			      b->ops->name);
	return b->ops->reap(b, dry_run, stop_early, fn, userdata, failed, err);
}

int ts_sb_list(struct ts_backend *b, const struct ts_sb_list_opts *o, struct ts_sb_info **ret,
	       size_t *n, char **next_token, struct ts_error *err)
{
	*ret = NULL;
	*n = 0;
	*next_token = NULL;
	return b->ops->sb_list(b, o, ret, n, next_token, err);
}

void ts_sb_info_clear(struct ts_sb_info *i)
{
	for (size_t k = 0; k < i->n_metadata; k++)
		free(i->metadata[k]);
	free(i->metadata);
	free(i->workspace);
	free(i->details);
	i->metadata = NULL;
	i->workspace = i->details = NULL;
	i->n_metadata = 0;
}

void ts_sb_infos_free(struct ts_sb_info *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		ts_sb_info_clear(&v[i]);
	free(v);
}

const char *ts_sb_id(const struct ts_sb *sb)
{
	return sb->id;
}

int ts_sb_info(struct ts_sb *sb, struct ts_sb_info *ret, struct ts_error *err)
{
	memset(ret, 0, sizeof(*ret));
	return sb->ops->sb_info(sb, ret, err);
}

int ts_sb_set_timeout(struct ts_sb *sb, long long ms, struct ts_error *err)
{
	if (ms < 0 || ms > TS_SB_TIMEOUT_MAX_MS)
		return ts_err(err, -EINVAL, "timeout of %lld ms: want 0 (none) to %lld ms", ms,
			      TS_SB_TIMEOUT_MAX_MS);
	return sb->ops->sb_set_timeout(sb, ms, err);
}

int ts_sb_reissue(struct ts_sb *sb, const struct ts_sb_create_opts *o, struct ts_error *err)
{
	/* < 0: the default a create has (as ts_sb_create) */
	if (o->timeout_ms > TS_SB_TIMEOUT_MAX_MS)
		return ts_err(err, -EINVAL, "timeout of %lld ms: want 0 (none) to %lld ms",
			      o->timeout_ms, TS_SB_TIMEOUT_MAX_MS);
	if (!sb->ops->sb_reissue)
		return ts_err(err, -EOPNOTSUPP, "the %s backend cannot hand out a started sandbox",
			      sb->ops->name);
	return sb->ops->sb_reissue(sb, o, err);
}

int ts_sb_start(struct ts_sb *sb, struct ts_error *err)
{
	return sb->ops->sb_start(sb, err);
}

int ts_sb_stop(struct ts_sb *sb, struct ts_error *err)
{
	return sb->ops->sb_stop(sb, err);
}

int ts_sb_pause(struct ts_sb *sb, struct ts_error *err)
{
	if (!sb->ops->sb_pause)
		return ts_err(err, -EOPNOTSUPP, "backend `%s` cannot pause a sandbox",
			      sb->ops->name);
	return sb->ops->sb_pause(sb, err);
}

int ts_sb_snapshot(struct ts_sb *sb, const struct ts_snap_create_opts *o, struct ts_snap_info *ret,
		   struct ts_error *err)
{
	memset(ret, 0, sizeof(*ret));
	if (!sb->ops->sb_snapshot)
		return ts_err(err, -EOPNOTSUPP, "backend `%s` has no snapshots", sb->ops->name);
	return sb->ops->sb_snapshot(sb, o, ret, err);
}

int ts_backend_snapshots(struct ts_backend *b, struct ts_snap_info **ret, size_t *n,
			 struct ts_error *err)
{
	*ret = NULL;
	*n = 0;
	if (!b->ops->snap_list)
		return ts_err(err, -EOPNOTSUPP, "backend `%s` has no snapshots", b->ops->name);
	return b->ops->snap_list(b, ret, n, err);
}

int ts_backend_snapshot_delete(struct ts_backend *b, const char *ref, struct ts_error *err)
{
	if (!b->ops->snap_delete)
		return ts_err(err, -EOPNOTSUPP, "backend `%s` has no snapshots", b->ops->name);
	return b->ops->snap_delete(b, ref, err);
}

int ts_sb_resume(struct ts_sb *sb, struct ts_error *err)
{
	if (!sb->ops->sb_resume)
		return ts_err(err, -EOPNOTSUPP, "backend `%s` cannot resume a sandbox",
			      sb->ops->name);
	return sb->ops->sb_resume(sb, err);
}

int ts_sb_check_user(struct ts_sb *sb, const char *user, struct ts_error *err)
{
	return sb->ops->sb_check_user ? sb->ops->sb_check_user(sb, user, err) : 0;
}

int ts_sb_is_running(struct ts_sb *sb, bool *running, struct ts_error *err)
{
	*running = false;
	if (!sb->ops->sb_is_running)
		return ts_err(err, -EOPNOTSUPP, "the %s backend cannot probe a sandbox",
			      sb->ops->name);
	return sb->ops->sb_is_running(sb, running, err);
}

int ts_sb_metrics(struct ts_backend *b, const char *id, long long start_ms, long long end_ms,
		  struct ts_sb_metric **ret, size_t *n, struct ts_error *err)
{
	*ret = NULL;
	*n = 0;
	if (!id || !*id)
		return ts_err(err, -EINVAL, "metrics of which sandbox?");
	if (start_ms < 0 || end_ms < 0 || (end_ms && end_ms < start_ms))
		return ts_err(err, -EINVAL, "a metrics window of %lld to %lld ms", start_ms,
			      end_ms);
	if (!b->ops->sb_metrics)
		return ts_err(err, -EOPNOTSUPP, "the %s backend keeps no metrics", b->ops->name);
	return b->ops->sb_metrics(b, id, start_ms, end_ms, ret, n, err);
}

int ts_cmd_log_read(struct ts_sb *sb, uint64_t proc, uint64_t offset, void *buf, size_t len,
		    size_t *got, struct ts_error *err)
{
	*got = 0;
	if (!sb->ops->cmd_log_read)
		return ts_err(err, -EOPNOTSUPP, "backend `%s` keeps no logs of processes",
			      sb->ops->name);
	return sb->ops->cmd_log_read(sb, proc, offset, buf, len, got, err);
}

void ts_sb_close(struct ts_sb *sb)
{
	if (!sb)
		return;
	if (sb->ops->sb_close)
		sb->ops->sb_close(sb);
	free(sb);
}

/* --- commands ---------------------------------------------------------------------- */

int ts_cmd_start(struct ts_sb *sb, const struct ts_cmd_opts *o, struct ts_cmd **ret, pid_t *ret_pid,
		 uint64_t *ret_proc, struct ts_error *err)
{
	struct ts_cmd *c = calloc(1, sizeof(*c));
	pid_t pid = 0;
	uint64_t proc = 0;
	int r;

	if (ret)
		*ret = NULL;
	if (!c)
		return ts_err(err, -ENOMEM, "out of memory");
	if (!o->argv || !o->argv[0]) {
		free(c);
		return ts_err(err, -EINVAL, "no command to run");
	}
	c->ops = sb->ops;
	r = sb->ops->cmd_start(sb, o, c, &pid, &proc, err);
	if (r < 0) {
		free(c);
		return r;
	}
	c->pid = pid;
	if (ret_pid)
		*ret_pid = pid;
	if (ret_proc)
		*ret_proc = proc;
	if (o->detach || !ret) {
		ts_cmd_close(c);
		return 0;
	}
	*ret = c;
	return 0;
}

int ts_cmd_connect(struct ts_sb *sb, const struct ts_proc_sel *p, struct ts_cmd **ret,
		   struct ts_error *err)
{
	struct ts_cmd *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return ts_err(err, -ENOMEM, "out of memory");
	c->ops = sb->ops;
	c->pid = p->pid;
	r = sb->ops->cmd_connect(sb, p, c, err);
	if (r < 0) {
		free(c);
		return r;
	}
	*ret = c;
	return 0;
}

int ts_cmd_fd(const struct ts_cmd *c)
{
	return c->ops->cmd_fd(c);
}

short ts_cmd_events(const struct ts_cmd *c)
{
	return c->ops->cmd_events(c);
}

int ts_cmd_step(struct ts_cmd *c, struct ts_cmd_event *ev, struct ts_error *err)
{
	int r;

	if (c->ended)
		return ts_err(err, -EPIPE, "the process's stream has ended");
	r = c->ops->cmd_step(c, ev, err);
	if (r > 0 && ev->type == TS_CMD_EV_END)
		c->ended = true;
	if (r > 0 && ev->type == TS_CMD_EV_START)
		c->pid = ev->pid;
	return r;
}

pid_t ts_cmd_pid(const struct ts_cmd *c)
{
	return c->pid;
}

void ts_cmd_close(struct ts_cmd *c)
{
	if (!c)
		return;
	c->ops->cmd_close(c);
	free(c);
}

int ts_cmd_input(struct ts_cmd *c, const void *data, size_t len, struct ts_error *err)
{
	return c->ops->cmd_input(c, data, len, false, err);
}

int ts_cmd_input_close(struct ts_cmd *c, struct ts_error *err)
{
	return c->ops->cmd_input(c, NULL, 0, true, err);
}

int ts_cmd_signal_self(struct ts_cmd *c, int sig, struct ts_error *err)
{
	return c->ops->cmd_signal_self(c, sig, err);
}

int ts_cmd_resize_self(struct ts_cmd *c, unsigned cols, unsigned rows, struct ts_error *err)
{
	return c->ops->cmd_resize_self(c, cols, rows, err);
}

size_t ts_cmd_input_pending(const struct ts_cmd *c)
{
	return c->ops->cmd_input_pending(c);
}

int ts_cmd_list(struct ts_sb *sb, struct ts_proc_entry **ret, size_t *n, struct ts_error *err)
{
	*ret = NULL;
	*n = 0;
	return sb->ops->cmd_list(sb, ret, n, err);
}

static void strv_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

void ts_proc_entries_free(struct ts_proc_entry *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		strv_free(v[i].argv);
		strv_free(v[i].envs);
		free(v[i].cwd);
		free(v[i].tag);
		free(v[i].user);
	}
	free(v);
}

int ts_cmd_signal(struct ts_sb *sb, const struct ts_proc_sel *p, int sig, struct ts_error *err)
{
	return sb->ops->cmd_signal(sb, p, sig, err);
}

int ts_cmd_send_stdin(struct ts_sb *sb, const struct ts_proc_sel *p, const void *data, size_t len,
		      struct ts_error *err)
{
	return sb->ops->cmd_send_stdin(sb, p, data, len, false, err);
}

int ts_cmd_close_stdin(struct ts_sb *sb, const struct ts_proc_sel *p, struct ts_error *err)
{
	return sb->ops->cmd_send_stdin(sb, p, NULL, 0, true, err);
}

int ts_cmd_resize(struct ts_sb *sb, const struct ts_proc_sel *p, unsigned cols, unsigned rows,
		  struct ts_error *err)
{
	return sb->ops->cmd_resize(sb, p, cols, rows, err);
}

/* --- files ------------------------------------------------------------------------- */

void ts_be_entry_clear(struct ts_be_entry *e)
{
	free(e->name);
	free(e->path);
	free(e->symlink_target);
	for (size_t i = 0; e->metadata && e->metadata[i]; i++)
		free(e->metadata[i]);
	free(e->metadata);
	memset(e, 0, sizeof(*e));
}

void ts_be_entries_free(struct ts_be_entry *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		ts_be_entry_clear(&v[i]);
	free(v);
}

int ts_file_stat(struct ts_sb *sb, const char *path, const char *user, struct ts_be_entry *ret,
		 struct ts_error *err)
{
	memset(ret, 0, sizeof(*ret));
	return sb->ops->file_stat(sb, path, user, ret, err);
}

int ts_file_exists(struct ts_sb *sb, const char *path, const char *user, bool *ret,
		   struct ts_error *err)
{
	struct ts_be_entry e;
	int r = ts_file_stat(sb, path, user, &e, err);

	*ret = r == 0;
	ts_be_entry_clear(&e);
	if (r == -ENOENT) {
		ts_err_clear(err);
		return 0;
	}
	return r < 0 ? r : 0;
}

int ts_file_list(struct ts_sb *sb, const char *path, unsigned depth, const char *user,
		 struct ts_be_entry **ret, size_t *n, struct ts_error *err)
{
	*ret = NULL;
	*n = 0;
	if (depth < 1)
		depth = 1;
	return sb->ops->file_list(sb, path, depth, user, ret, n, err);
}

int ts_file_mkdir(struct ts_sb *sb, const char *path, const char *user, bool *created,
		  struct ts_error *err)
{
	return ts_file_mkdir_mode(sb, path, user, 0755, created, err);
}

int ts_file_mkdir_mode(struct ts_sb *sb, const char *path, const char *user, unsigned mode,
		       bool *created, struct ts_error *err)
{
	bool made = false;
	int r = sb->ops->file_mkdir(sb, path, user, mode & 0777, &made, err);

	if (created)
		*created = made;
	return r;
}

int ts_file_remove(struct ts_sb *sb, const char *path, const char *user, struct ts_error *err)
{
	return sb->ops->file_remove(sb, path, user, err);
}

int ts_file_set_metadata(struct ts_sb *sb, const char *path, const char *user,
			 const struct ts_kv *kv, size_t n, struct ts_error *err)
{
	if (!sb->ops->file_set_metadata)
		return ts_err(err, -EOPNOTSUPP, "backend `%s` keeps no file metadata",
			      sb->ops->name);
	return sb->ops->file_set_metadata(sb, path, user, kv, n, err);
}

int ts_file_rename(struct ts_sb *sb, const char *from, const char *to, const char *user,
		   struct ts_error *err)
{
	return sb->ops->file_rename(sb, from, to, user, err);
}

static int xfer_start(struct ts_sb *sb, const char *path, const char *user, bool write, int mode,
		      struct ts_xfer **ret, struct ts_error *err)
{
	struct ts_xfer *x = calloc(1, sizeof(*x));
	int r;

	if (!x)
		return ts_err(err, -ENOMEM, "out of memory");
	x->ops = sb->ops;
	x->write = write;
	r = sb->ops->xfer_start(sb, path, user, write, mode, x, err);
	if (r < 0) {
		free(x);
		return r;
	}
	*ret = x;
	return 0;
}

int ts_xfer_read_start(struct ts_sb *sb, const char *path, const char *user, struct ts_xfer **ret,
		       struct ts_error *err)
{
	return xfer_start(sb, path, user, false, -1, ret, err);
}

int ts_xfer_write_start(struct ts_sb *sb, const char *path, const char *user, int mode,
			struct ts_xfer **ret, struct ts_error *err)
{
	return xfer_start(sb, path, user, true, mode, ret, err);
}

int ts_xfer_fd(const struct ts_xfer *x)
{
	return x->ops->xfer_fd(x);
}

short ts_xfer_events(const struct ts_xfer *x)
{
	return x->ops->xfer_events(x);
}

int ts_xfer_step(struct ts_xfer *x, const uint8_t **data, size_t *len, struct ts_error *err)
{
	*data = NULL;
	*len = 0;
	return x->ops->xfer_step(x, data, len, err);
}

int ts_xfer_push(struct ts_xfer *x, const void *data, size_t len, struct ts_error *err)
{
	return x->ops->xfer_push(x, data, len, false, err);
}

int ts_xfer_finish(struct ts_xfer *x, struct ts_error *err)
{
	return x->ops->xfer_push(x, NULL, 0, true, err);
}

void ts_xfer_close(struct ts_xfer *x)
{
	if (!x)
		return;
	x->ops->xfer_close(x);
	free(x);
}

/* Wait for x to be ready, up to TS_BE_REPLY_MS of silence. */
static int xfer_wait(struct ts_xfer *x, struct ts_error *err)
{
	struct pollfd p = { .fd = ts_xfer_fd(x), .events = ts_xfer_events(x) };
	int r = poll(&p, 1, TS_BE_REPLY_MS);

	if (r < 0)
		return errno == EINTR ? 0 : ts_err_errno(err, -errno, "poll");
	if (r == 0)
		return ts_err(err, -ETIMEDOUT, "the sandbox did not answer in %d s",
			      TS_BE_REPLY_MS / 1000);
	return 0;
}

int ts_file_read(struct ts_sb *sb, const char *path, const char *user, uint8_t **ret, size_t *len,
		 size_t max, struct ts_error *err)
{
	struct ts_xfer *x = NULL;
	uint8_t *buf = NULL;
	size_t n = 0;
	int r = ts_xfer_read_start(sb, path, user, &x, err);

	*ret = NULL;
	*len = 0;
	while (r >= 0) {
		const uint8_t *d;
		size_t l;

		r = ts_xfer_step(x, &d, &l, err);
		if (r == 2)
			break;
		if (r == 1) {
			uint8_t *grown;

			if (n + l > max) {
				r = ts_err(err, -EFBIG, "`%s` is larger than %zu bytes", path, max);
				break;
			}
			grown = realloc(buf, n + l + 1);
			if (!grown) {
				r = ts_err(err, -ENOMEM, "out of memory");
				break;
			}
			buf = grown;
			memcpy(buf + n, d, l);
			n += l;
		} else if (r == 0) {
			r = xfer_wait(x, err);
		}
	}
	if (x)
		ts_xfer_close(x);
	if (r < 0) {
		free(buf);
		return r;
	}
	if (!buf && !(buf = malloc(1)))
		return ts_err(err, -ENOMEM, "out of memory");
	buf[n] = '\0';
	*ret = buf;
	*len = n;
	return 0;
}

static int path_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* envd refuses a request naming a path twice (400): so does every backend. Sorted, not
 * compared pairwise: n is the caller's. */
static int twice(const struct ts_file_data *files, size_t n, struct ts_error *err)
{
	_cleanup_free_ const char **v = n > 1 ? calloc(n, sizeof(*v)) : NULL;

	if (n < 2)
		return 0;
	if (!v)
		return ts_err(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		v[i] = files[i].path;
	qsort(v, n, sizeof(*v), path_cmp);
	for (size_t i = 1; i < n; i++)
		if (!strcmp(v[i], v[i - 1]))
			return ts_err(err, -EINVAL, "`%.200s` is given twice", v[i]);
	return 0;
}

int ts_file_write_many(struct ts_sb *sb, const struct ts_file_data *files, size_t n,
		       const char *user, size_t *done, struct ts_error *err)
{
	size_t k = 0;
	int r = 0;

	if (done)
		*done = 0;
	if ((r = twice(files, n, err)) < 0)
		return r;
	if (n && sb->ops->file_write_many)
		return sb->ops->file_write_many(sb, files, n, user, done, err);
	for (; k < n && r == 0; k++)
		if ((r = ts_file_write(sb, files[k].path, user, files[k].data, files[k].len,
				       files[k].mode, err)) < 0)
			break;
	if (done)
		*done = k;
	return r;
}

int ts_file_write(struct ts_sb *sb, const char *path, const char *user, const void *data,
		  size_t len, int mode, struct ts_error *err)
{
	struct ts_xfer *x = NULL;
	size_t off = 0;
	bool finished = false;
	int r = ts_xfer_write_start(sb, path, user, mode, &x, err);

	while (r >= 0) {
		const uint8_t *d;
		size_t l;

		while (off < len &&
		       (r = ts_xfer_push(x, (const uint8_t *)data + off,
					 len - off > 65536 ? 65536 : len - off, err)) == 0)
			off += len - off > 65536 ? 65536 : len - off;
		if (r == -EAGAIN) {
			ts_err_clear(err);
			r = 0;
		}
		if (r < 0)
			break;
		if (off == len && !finished) {
			r = ts_xfer_finish(x, err);
			if (r < 0)
				break;
			finished = true;
		}
		r = ts_xfer_step(x, &d, &l, err);
		if (r == 2) {
			r = 0;
			break;
		}
		if (r == 0)
			r = xfer_wait(x, err);
	}
	if (x)
		ts_xfer_close(x);
	return r;
}

int ts_watch_start(struct ts_sb *sb, const char *path, bool recursive, const char *user,
		   struct ts_watch **ret, struct ts_error *err)
{
	struct ts_watch *w = calloc(1, sizeof(*w));
	int r;

	if (!w)
		return ts_err(err, -ENOMEM, "out of memory");
	w->ops = sb->ops;
	r = sb->ops->watch_start(sb, path, recursive, user, w, err);
	if (r < 0) {
		free(w);
		return r;
	}
	*ret = w;
	return 0;
}

int ts_watch_fd(const struct ts_watch *w)
{
	return w->ops->watch_fd(w);
}

int ts_watch_step(struct ts_watch *w, struct ts_watch_event *ev, struct ts_error *err)
{
	return w->ops->watch_step(w, ev, err);
}

void ts_watch_close(struct ts_watch *w)
{
	if (!w)
		return;
	w->ops->watch_close(w);
	free(w);
}

/* --- blocking helpers -------------------------------------------------------------- */

void ts_run_result_clear(struct ts_run_result *r)
{
	free(r->out);
	free(r->errout);
	memset(r, 0, sizeof(*r));
}

int ts_cmd_wait_event(struct ts_cmd *c, struct ts_cmd_event *ev, int timeout_ms,
		      struct ts_error *err)
{
	long long deadline = timeout_ms < 0 ? -1 : (long long)ts_now_ms() + timeout_ms;

	for (;;) {
		struct pollfd p = { .fd = ts_cmd_fd(c), .events = ts_cmd_events(c) };
		int r = ts_cmd_step(c, ev, err), wait = -1;

		if (r != 0)
			return r < 0 ? r : 0;
		if (deadline >= 0) {
			long long left = deadline - (long long)ts_now_ms();

			if (left <= 0)
				return ts_err(err, -ETIMEDOUT, "no event in %d ms", timeout_ms);
			wait = (int)left;
		}
		if (poll(&p, 1, wait) < 0 && errno != EINTR)
			return ts_err_errno(err, -errno, "poll");
	}
}

static int append(uint8_t **buf, size_t *len, size_t max, const uint8_t *d, size_t l)
{
	uint8_t *grown;

	if (*len >= max)
		return 0;
	if (l > max - *len)
		l = max - *len;
	grown = realloc(*buf, *len + l + 1);
	if (!grown)
		return -ENOMEM;
	*buf = grown;
	memcpy(*buf + *len, d, l);
	*len += l;
	(*buf)[*len] = '\0';
	return 0;
}

int ts_be_run(struct ts_sb *sb, const struct ts_cmd_opts *o, ts_be_output_fn on_output,
	      void *userdata, bool capture, size_t capture_max, struct ts_run_result *ret,
	      struct ts_error *err)
{
	struct ts_cmd *c = NULL;
	struct ts_cmd_opts opts = *o;
	int r;

	memset(ret, 0, sizeof(*ret));
	opts.detach = false;
	r = ts_cmd_start(sb, &opts, &c, NULL, NULL, err);
	if (r < 0)
		return r;
	for (;;) {
		struct ts_cmd_event ev;

		r = ts_cmd_wait_event(c, &ev, -1, err);
		if (r < 0)
			break;
		if (ev.type == TS_CMD_EV_END) {
			ret->exit_code = ev.exit_code;
			ret->signal = ev.signal;
			ret->timed_out = ev.timed_out;
			break;
		}
		if (ev.type == TS_CMD_EV_START)
			continue;
		if (on_output)
			on_output(userdata, ev.type, ev.data, ev.len);
		if (capture && ev.type == TS_CMD_EV_STDERR)
			r = append(&ret->errout, &ret->err_len, capture_max, ev.data, ev.len);
		else if (capture)
			r = append(&ret->out, &ret->out_len, capture_max, ev.data, ev.len);
		if (r < 0) {
			ts_err(err, r, "out of memory");
			break;
		}
	}
	ts_cmd_close(c);
	if (r < 0)
		ts_run_result_clear(ret);
	return r < 0 ? r : 0;
}
