// SPDX-License-Identifier: Apache-2.0
/*
 * serve's process: opens the backend and serve.db, listens, runs the loop until SIGINT or
 * SIGTERM, and keeps the cache of sandbox entries every module reads (server.h).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cleanup.h"
#include "connect.h"
#include "control.h"
#include "paths.h"
#include "pool.h"
#include "pulls.h"
#include "runs.h"
#include "server.h"
#include "tokens.h"
#include "envd-fs.h"
#include "util.h"

/* --- the sandbox cache ------------------------------------------------------------------- */

static void entry_free(struct ts_srv_sb *e)
{
	ts_sb_close(e->sb);
	ts_meta_sb_clear(&e->meta);
	free(e);
}

struct ts_srv_sb *ts_srv_sb_ref(struct ts_srv_sb *e)
{
	e->refs++;
	return e;
}

void ts_srv_sb_unref(struct ts_srv_sb *e)
{
	if (e && --e->refs == 0)
		entry_free(e);
}

int ts_srv_refresh(struct ts_srv *srv, struct ts_srv_sb *e, struct ts_error *err)
{
	struct ts_sb_info info;
	struct ts_error ignore;
	int r;

	/* a fresh handle: the old one's record may be stale (another process changed it) */
	struct ts_sb *sb = NULL;

	r = ts_sb_lookup(srv->be, e->id, &sb, err);
	if (r < 0) {
		if (r == -ENOENT)
			ts_srv_forget(srv, e->id);
		return r;
	}
	r = ts_sb_info(sb, &info, err);
	if (r < 0) {
		ts_sb_close(sb);
		return r;
	}
	/* a warm pool member is nobody's until handed out: unknown to every route */
	if (ts_pool_member(&info)) {
		ts_sb_info_clear(&info);
		ts_sb_close(sb);
		ts_srv_forget(srv, e->id);
		return ts_err(err, -ENOENT, "sandbox `%.80s` not found", e->id);
	}
	ts_sb_close(e->sb);
	e->sb = sb;
	e->end_at = info.end_at_ms;
	ts_meta_sb_clear(&e->meta);
	e->has_meta = ts_meta_get(srv->meta, e->id, &e->meta, &ignore) == 0;
	e->running = info.state == TS_SB_RUNNING && !(e->has_meta && e->meta.paused);
	ts_sb_info_clear(&info);
	return 0;
}

int ts_srv_sandbox(struct ts_srv *srv, const char *id, struct ts_srv_sb **ret, struct ts_error *err)
{
	struct ts_srv_sb *e;
	int r;

	for (e = srv->sbs; e; e = e->next)
		if (!strcmp(e->id, id)) {
			*ret = e;
			return 0;
		}
	if (!id[0] || strlen(id) >= sizeof(e->id))
		return ts_err(err, -ENOENT, "sandbox `%.80s` not found", id);
	e = calloc(1, sizeof(*e));
	if (!e)
		return ts_err(err, -ENOMEM, "sandbox entry");
	snprintf(e->id, sizeof(e->id), "%s", id);
	e->refs = 1;
	r = ts_srv_refresh(srv, e, err);
	if (r < 0) {
		entry_free(e);
		return r;
	}
	/* the backend may know it by a name or prefix too: serve answers only to the id */
	if (strcmp(ts_sb_id(e->sb), id)) {
		entry_free(e);
		return ts_err(err, -ENOENT, "sandbox `%.80s` not found", id);
	}
	e->next = srv->sbs;
	srv->sbs = e;
	*ret = e;
	return 0;
}

int ts_srv_adopt(struct ts_srv *srv, struct ts_sb *sb, const struct ts_meta_sb *m,
		 const struct ts_sb_info *info, struct ts_srv_sb **ret, struct ts_error *err)
{
	struct ts_srv_sb *e = calloc(1, sizeof(*e));

	if (e && m && m->create_body && !(e->meta.create_body = strdup(m->create_body))) {
		free(e);
		e = NULL;
	}
	if (!e) {
		ts_sb_close(sb);
		return ts_err(err, -ENOMEM, "sandbox entry");
	}
	snprintf(e->id, sizeof(e->id), "%s", ts_sb_id(sb));
	/* an entry left from before (a stale one of the same id) is nobody's now */
	ts_srv_forget(srv, e->id);
	e->refs = 1;
	e->sb = sb;
	e->end_at = info->end_at_ms;
	if (m) {
		char *body = e->meta.create_body;

		e->meta = *m;
		e->meta.create_body = body;
		e->has_meta = true;
	}
	e->running = info->state == TS_SB_RUNNING && !(e->has_meta && e->meta.paused);
	e->next = srv->sbs;
	srv->sbs = e;
	*ret = e;
	return 0;
}

void ts_srv_forget(struct ts_srv *srv, const char *id)
{
	for (struct ts_srv_sb **pe = &srv->sbs; *pe; pe = &(*pe)->next) {
		struct ts_srv_sb *e = *pe;

		if (strcmp(e->id, id))
			continue;
		*pe = e->next;
		e->next = NULL;
		e->gone = true;
		ts_srv_sb_unref(e);
		return;
	}
}

bool ts_srv_serving(const struct ts_srv *srv, const struct ts_srv_sb *e)
{
	return !e->gone && e->running && (e->end_at == 0 || e->end_at > ts_realtime_ms());
}

/* --- replies -------------------------------------------------------------------------- */

unsigned ts_srv_http_status(enum ts_be_code code)
{
	switch (code) {
	case TS_BE_OK:
		return 200;
	case TS_BE_NOT_FOUND:
		return 404;
	case TS_BE_INVALID_ARGUMENT:
	case TS_BE_COMMAND_EXIT:
		return 400;
	case TS_BE_AUTHENTICATION:
		return 401;
	case TS_BE_PERMISSION:
		return 403;
	case TS_BE_ALREADY_EXISTS:
		return 409;
	case TS_BE_RATE_LIMIT:
		return 429;
	case TS_BE_UNIMPLEMENTED:
		return 501;
	case TS_BE_UNAVAILABLE:
		return 503;
	case TS_BE_TIMEOUT:
		return 504;
	case TS_BE_NOT_ENOUGH_SPACE:
		return 507;
	case TS_BE_TEMPLATE:
		return 400;
	case TS_BE_INTERNAL:
		break;
	}
	return 500;
}

int ts_srv_reply_error(struct ts_req *r, unsigned status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* the message may quote what the client sent, in any bytes */
	return ts_req_reply_json(r, status,
				 json_pack("{s:i, s:o}", "code", (int)status, "message",
					   ts_pj_text(msg)));
}

/* --- the process ------------------------------------------------------------------------- */

struct serve_signals {
	struct ts_loop *loop;
	int fd;
	struct ts_loop_fd *watch;
};

static void on_signal(void *userdata, short revents)
{
	struct serve_signals *s = userdata;
	struct signalfd_siginfo si;

	while (read(s->fd, &si, sizeof(si)) == sizeof(si))
		if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM)
			ts_loop_quit(s->loop);
}

static void fallback_not_found(void *ctx, struct ts_req *r)
{
	ts_srv_reply_error(r, 404, "no route for %s %s", ts_req_method(r), ts_req_path(r));
}

int ts_serve(const struct ts_serve_opts *o, struct ts_error *err)
{
	/* the modules' tables, in match order; each module adds itself here */
	const struct ts_route *const control_tables[] = { ts_control_routes, ts_v1_routes, NULL };
	const struct ts_route *const envd_tables[] = { ts_envd_process_routes, ts_envd_fs_routes,
						       ts_envd_files_routes, NULL };
	struct ts_srv srv = { .opts = o };
	struct serve_signals sig = { .fd = -1 };
	struct ts_paths paths;
	sigset_t mask;
	int r;

	signal(SIGPIPE, SIG_IGN);
	r = ts_paths_init(&paths, err);
	if (r < 0)
		return r;
	r = ts_tokens_load(o->tokens_file, &srv.tokens, err);
	if (r < 0)
		return r;
	r = ts_backend_open(o->backend ? o->backend : "local", &srv.be, err);
	if (r < 0) {
		ts_tokens_free(srv.tokens);
		return r;
	}
	ts_backend_on_warning(srv.be, o->warn, o->userdata);
	r = ts_meta_open(paths.root, &srv.meta, err);
	if (r < 0)
		goto out;
	r = ts_loop_new(&srv.loop, err);
	if (r < 0)
		goto out;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sig.loop = srv.loop;
	sig.fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sig.fd < 0) {
		r = ts_err_errno(err, -errno, "signalfd");
		goto out;
	}
	sig.watch = ts_loop_add_fd(srv.loop, sig.fd, POLLIN, on_signal, &sig);
	r = ts_control_start(&srv, err);
	if (r < 0)
		goto out;
	r = ts_runs_new(&srv, &srv.runs, err);
	if (r < 0)
		goto out;
	srv.root = paths.root;
	if (!strcmp(ts_backend_name(srv.be), "local") &&
	    (r = ts_pulls_new(srv.loop, paths.root, o->pull_max_bytes, &srv.pulls, err)) < 0)
		goto out;
	if (o->pool && o->pool[0] && strcmp(ts_backend_name(srv.be), "local") != 0) {
		r = ts_err(err, -EOPNOTSUPP, "`--pool` needs the local backend, not `%s`",
			   ts_backend_name(srv.be));
		goto out;
	}
	/* also without --pool: a dead serve's members on this state root are removed */
	if (!strcmp(ts_backend_name(srv.be), "local") &&
	    (r = ts_pool_new(o->pool, "local", paths.root, o->warn, o->userdata, &srv.pool, err)) <
		    0)
		goto out;

	r = ts_http_listen(srv.loop, o->listen, o->listen_fd, control_tables, fallback_not_found,
			   &srv, &srv.control, err);
	if (r < 0)
		goto out;
	r = ts_http_listen(srv.loop, o->envd_listen, o->envd_fd, envd_tables, fallback_not_found,
			   &srv, &srv.envd, err);
	if (r < 0)
		goto out;
	if (o->socket) {
		char addr[4200];

		snprintf(addr, sizeof(addr), "unix:%s", o->socket);
		r = ts_http_listen(srv.loop, addr, -1, control_tables, fallback_not_found, &srv,
				   &srv.unix_control, err);
		if (r < 0)
			goto out;
	}
	/* without tokens anyone who can connect may run code: only this machine's users */
	if (ts_tokens_empty(srv.tokens) &&
	    (!ts_http_listener_local(srv.control) || !ts_http_listener_local(srv.envd))) {
		r = ts_err(err, -EPERM,
			   "refusing to listen on `%s` / `%s` without access tokens: anyone who "
			   "can reach it could run code; listen on loopback or configure tokens",
			   ts_http_listener_addr(srv.control), ts_http_listener_addr(srv.envd));
		goto out;
	}
	if (o->ready)
		o->ready(o->userdata, ts_http_listener_addr(srv.control),
			 ts_http_listener_addr(srv.envd));
	r = ts_loop_run(srv.loop, err);
out:
	/* before the listeners: they answer the requests they deferred */
	ts_runs_free(srv.runs);
	ts_pulls_free(srv.pulls);
	ts_control_stop(&srv);
	ts_http_listener_free(srv.unix_control);
	ts_http_listener_free(srv.envd);
	ts_http_listener_free(srv.control);
	ts_envd_fs_free(&srv);
	while (srv.sbs)
		ts_srv_forget(&srv, srv.sbs->id);
	ts_pool_free(srv.pool, srv.be);
	ts_loop_del_fd(sig.watch);
	if (sig.fd >= 0)
		close(sig.fd);
	ts_loop_free(srv.loop);
	ts_meta_close(srv.meta);
	ts_backend_free(srv.be);
	ts_tokens_free(srv.tokens);
	return r;
}
