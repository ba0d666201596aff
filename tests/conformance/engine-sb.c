/* SPDX-License-Identifier: Apache-2.0 */
/* The conformance engine: sandboxes, backends and error classes (engine.h). */
#include "engine.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

/* --- sandboxes ---------------------------------------------------------------------- */

static const char *sb_ref(struct conf *c, const struct conf_step *st, char *buf, size_t len)
{
	return st->id ? conf_expand(c, st->id, buf, len) : c->id[st->sb];
}

static void put_sb(struct conf *c, int slot, struct ts_sb *sb)
{
	ts_sb_close(c->sb[slot]);
	c->sb[slot] = sb;
	snprintf(c->id[slot], sizeof(c->id[slot]), "%s", ts_sb_id(sb));
}

int conf_need_sb(struct conf *c, int slot)
{
	return c->sb[slot] ? 0 : conf_fail(c, "no sandbox in slot %d", slot);
}

static int do_sb_create(struct conf *c, const struct conf_step *st)
{
	char tbuf[512];
	struct ts_sb_create_opts o = { .template_id =
					       conf_expand(c, st->template_id, tbuf, sizeof(tbuf)),
				       .timeout_ms = st->ms == 0  ? -1
						     : st->ms < 0 ? 0
								  : st->ms };
	char **envs = conf_expand_strv(c, st->envs), **meta = conf_expand_strv(c, st->meta);
	struct ts_kv *ekv = conf_kv_of(envs, &o.n_envs), *mkv = conf_kv_of(meta, &o.n_metadata);
	struct ts_error err = { 0 };
	struct ts_sb *sb = NULL;
	int r;

	o.envs = ekv;
	o.metadata = mkv;
	r = ts_sb_create(c->r->b, &o, &sb, &err);
	free(ekv);
	free(mkv);
	conf_strv_free(envs);
	conf_strv_free(meta);
	if ((r = conf_check_code(c, r, &err, &st->expect)) != 0)
		return r < 0 ? r : 0;
	if (!ts_sb_id(sb)[0]) {
		ts_sb_close(sb);
		return conf_fail(c, "the new sandbox has no id");
	}
	put_sb(c, st->sb, sb);
	c->created[st->sb] = true;
	return 0;
}

static int do_sb_connect(struct conf *c, const struct conf_step *st, bool lookup)
{
	struct ts_error err = { 0 };
	struct ts_sb *sb = NULL;
	char buf[256];
	const char *id = sb_ref(c, st, buf, sizeof(buf));
	int r = lookup ? ts_sb_lookup(c->r->b, id, &sb, &err)
		       : ts_sb_connect(c->r->b, id, st->ms > 0 ? st->ms : -1, &sb, &err);

	if ((r = conf_check_code(c, r, &err, &st->expect)) != 0)
		return r < 0 ? r : 0;
	if (!st->id && strcmp(ts_sb_id(sb), c->id[st->sb]) != 0) {
		r = conf_fail(c, "connected to `%s`, asked for `%s`", ts_sb_id(sb), c->id[st->sb]);
		ts_sb_close(sb);
		return r;
	}
	put_sb(c, st->sb, sb);
	return 0;
}

static int do_sb_kill(struct conf *c, const struct conf_step *st)
{
	struct ts_error err = { 0 };
	char buf[256], killed[64];
	int r;

	snprintf(killed, sizeof(killed), "%s", sb_ref(c, st, buf, sizeof(buf)));
	r = ts_sb_kill(c->r->b, killed, &err);

	if ((r = conf_check_code(c, r, &err, &st->expect)) != 0)
		return r < 0 ? r : 0;
	/* whichever slots held it hold nothing now */
	for (int i = 0; i < CONF_SLOTS; i++) {
		if (strcmp(c->id[i], killed) != 0)
			continue;
		c->created[i] = false;
		ts_sb_close(c->sb[i]);
		c->sb[i] = NULL;
	}
	return 0;
}

static int do_sb_list(struct conf *c, const struct conf_step *st)
{
	char **meta = conf_expand_strv(c, st->meta);
	struct ts_sb_list_opts o = { .running = st->running,
				     .stopped = st->stopped,
				     .paused = st->paused,
				     .limit = st->limit,
				     .next_token = st->token };
	struct ts_kv *mkv = conf_kv_of(meta, &o.n_metadata);
	char ids[64][64], *token = NULL;
	size_t n_ids = 0, want_n = 0;
	int r = 0;

	o.metadata = mkv;
	for (int page = 0; page < 64; page++) {
		struct ts_error err = { 0 };
		struct ts_sb_info *v = NULL;
		size_t n = 0;
		char *next = NULL;

		r = ts_sb_list(c->r->b, &o, &v, &n, &next, &err);
		if (st->token || r < 0) {
			r = conf_check_code(c, r, &err, &st->expect);
			r = r < 0 ? r : r == 0 ? conf_fail(c, "a bad page token was taken") : 0;
			ts_sb_infos_free(v, n);
			free(next);
			goto out;
		}
		if (st->limit && n > st->limit) {
			r = conf_fail(c, "page %d has %zu sandboxes, limit %u", page, n, st->limit);
		} else if (next && n == 0) {
			r = conf_fail(c, "page %d is empty but has a next page", page);
		}
		for (size_t i = 0; r == 0 && i < n; i++) {
			enum ts_sb_state sv = v[i].state;
			bool any = !st->running && !st->stopped && !st->paused;

			if (!any && !(sv == TS_SB_RUNNING  ? st->running
				      : sv == TS_SB_PAUSED ? st->paused
							   : st->stopped))
				r = conf_fail(c, "`%s` listed in state %d, not in the filter",
					      v[i].id, (int)v[i].state);
			else if (n_ids < 64)
				snprintf(ids[n_ids++], sizeof(ids[0]), "%s", v[i].id);
		}
		ts_sb_infos_free(v, n);
		free(token);
		token = next;
		o.next_token = token;
		if (r < 0 || !token)
			break;
	}
	if (r == 0 && token)
		r = conf_fail(c, "more than 64 pages");
	for (const int *s = st->expect.sbs; r == 0 && s && *s >= 0; s++, want_n++)
		if (want_n >= n_ids || strcmp(ids[want_n], c->id[*s]) != 0)
			r = conf_fail(c, "listed #%zu is `%s`, want `%s` (slot %d)", want_n,
				      want_n < n_ids ? ids[want_n] : "(none)", c->id[*s], *s);
	if (r == 0 && want_n != n_ids)
		r = conf_fail(c, "%zu sandboxes listed, want %zu", n_ids, want_n);
out:
	free(token);
	free(mkv);
	conf_strv_free(meta);
	return r;
}

static int do_sb_info(struct conf *c, const struct conf_step *st)
{
	const struct conf_expect *e = &st->expect;
	struct ts_sb_info i;
	struct ts_error err = { 0 };
	long long now = conf_now_ms();
	int r;

	if (conf_need_sb(c, st->sb) < 0)
		return -1;
	r = ts_sb_info(c->sb[st->sb], &i, &err);
	if ((r = conf_check_code(c, r, &err, e)) != 0)
		return r < 0 ? r : 0;
	if (strcmp(i.id, c->id[st->sb]) != 0)
		r = conf_fail(c, "info of `%s`, asked for `%s`", i.id, c->id[st->sb]);
	else if (e->state == ST_RUNNING && i.state != TS_SB_RUNNING)
		r = conf_fail(c, "state %d, want running", (int)i.state);
	else if (e->state == ST_STOPPED && i.state == TS_SB_RUNNING)
		r = conf_fail(c, "running, want stopped");
	else if (e->state == ST_PAUSED && i.state != TS_SB_PAUSED)
		r = conf_fail(c, "state %d, want paused", (int)i.state);
	else if (e->template_id && strcmp(i.template_id, e->template_id) != 0)
		r = conf_fail(c, "template `%s`, want `%s`", i.template_id, e->template_id);
	else if (e->end_in_ms < 0 && i.end_at_ms != 0)
		r = conf_fail(c, "a deadline in %lld ms, want none", i.end_at_ms - now);
	else if (e->end_in_ms > 0 && (i.end_at_ms < now + e->end_in_ms - 10000 ||
				      i.end_at_ms > now + e->end_in_ms + 2000))
		r = conf_fail(c, "the deadline is in %lld ms, want about %lld", i.end_at_ms - now,
			      e->end_in_ms);
	else if (e->end_same && i.end_at_ms != c->end_at[st->sb])
		r = conf_fail(c, "the deadline moved by %lld ms, want it unchanged",
			      i.end_at_ms - c->end_at[st->sb]);
	c->end_at[st->sb] = i.end_at_ms;
	for (const char *const *m = e->meta; r == 0 && m && *m; m++) {
		char buf[512];
		bool found = false;

		conf_expand(c, *m, buf, sizeof(buf));
		for (size_t k = 0; k < i.n_metadata; k++)
			found |= !strcmp(i.metadata[k], buf);
		if (!found)
			r = conf_fail(c, "metadata has no `%s` (%zu pairs)", buf, i.n_metadata);
	}
	ts_sb_info_clear(&i);
	return r;
}

static int do_sb_simple(struct conf *c, const struct conf_step *st)
{
	struct ts_error err = { 0 };
	struct ts_sb *sb = c->sb[st->sb];
	int r;

	if (st->op != C_SB_EXPIRE && conf_need_sb(c, st->sb) < 0)
		return -1;
	switch (st->op) {
	case C_SB_SET_TIMEOUT:
		r = ts_sb_set_timeout(sb, st->ms, &err);
		break;
	case C_SB_STOP:
		r = ts_sb_stop(sb, &err);
		break;
	case C_SB_START:
		r = ts_sb_start(sb, &err);
		break;
	case C_SB_CHECK_USER:
		r = ts_sb_check_user(sb, st->user, &err);
		break;
	case C_SB_PAUSE:
		r = ts_sb_pause(sb, &err);
		break;
	case C_SB_RESUME:
		r = ts_sb_resume(sb, &err);
		break;
	default:
		r = c->r->expire(c->r, &err);
		break;
	}
	r = conf_check_code(c, r, &err, &st->expect);
	return r < 0 ? r : 0;
}

static int do_sb_running(struct conf *c, const struct conf_step *st)
{
	struct ts_error err = { 0 };
	bool running = !st->expect.yes;
	int r;

	if (conf_need_sb(c, st->sb) < 0)
		return -1;
	r = ts_sb_is_running(c->sb[st->sb], &running, &err);
	if ((r = conf_check_code(c, r, &err, &st->expect)) != 0)
		return r < 0 ? r : 0;
	if (running != st->expect.yes)
		return conf_fail(c, "is_running says %s, want %s", running ? "yes" : "no",
				 st->expect.yes ? "yes" : "no");
	return 0;
}

/* A sample as a sandbox made in this run could have it: 0, or -1 with c->why. */
static int metric_plausible(struct conf *c, const struct ts_sb_metric *m, long long since)
{
	long long now = conf_now_ms();

	if (m->ts_ms < since - 10000 || m->ts_ms > now + 10000)
		return conf_fail(c,
				 "a sample of %lld ms ago, from outside the sandbox's life "
				 "(made %lld ms ago)",
				 now - m->ts_ms, now - since);
	if (m->cpu_count < 1 || m->cpu_count > 4096)
		return conf_fail(c, "a sample with %u CPUs", m->cpu_count);
	if (!(m->cpu_pct >= 0 && m->cpu_pct <= 100))
		return conf_fail(c, "a sample with %g %% CPU", m->cpu_pct);
	if (m->mem_total < (1U << 20) || !m->mem_used || m->mem_used > m->mem_total)
		return conf_fail(c, "a sample with %llu of %llu bytes of memory used",
				 (unsigned long long)m->mem_used, (unsigned long long)m->mem_total);
	if (!m->disk_total || m->disk_used > m->disk_total)
		return conf_fail(c, "a sample with %llu of %llu bytes of disk used",
				 (unsigned long long)m->disk_used,
				 (unsigned long long)m->disk_total);
	return 0;
}

static int do_sb_metrics(struct conf *c, const struct conf_step *st)
{
	const struct conf_expect *e = &st->expect;
	struct ts_error err = { 0 };
	char buf[256];
	const char *id = sb_ref(c, st, buf, sizeof(buf));
	long long since = conf_now_ms() - 600000, deadline = conf_mono_ms() + CONF_WAIT_MS;
	struct ts_sb_info info;

	/* a sample of a sandbox at hand is from its life: since it was made */
	if (!st->id && c->sb[st->sb] && ts_sb_info(c->sb[st->sb], &info, &err) == 0) {
		if (info.created_ms > 0)
			since = info.created_ms;
		ts_sb_info_clear(&info);
	}

	for (;;) {
		long long now = conf_now_ms();
		struct ts_sb_metric *v = NULL;
		size_t n = 0;
		int r = ts_sb_metrics(c->r->b, id, st->ms > 0 ? now - 2 * st->ms : 0,
				      st->ms > 0 ? now - st->ms : 0, &v, &n, &err);

		if ((r = conf_check_code(c, r, &err, e)) != 0)
			return r < 0 ? r : 0;
		for (size_t i = 0; r == 0 && i < n; i++)
			r = metric_plausible(c, &v[i], since);
		if (r == 0 && n)
			diag("%zu samples, the last %lld ms ago: %u CPUs at %.1f %%, memory %llu "
			     "of %llu, disk %llu of %llu bytes",
			     n, now - v[n - 1].ts_ms, v[n - 1].cpu_count, v[n - 1].cpu_pct,
			     (unsigned long long)v[n - 1].mem_used,
			     (unsigned long long)v[n - 1].mem_total,
			     (unsigned long long)v[n - 1].disk_used,
			     (unsigned long long)v[n - 1].disk_total);
		free(v);
		if (r < 0)
			return r;
		if (e->absent && n)
			return conf_fail(c, "%zu samples, want none", n);
		if (!e->yes || n)
			return 0;
		if (conf_mono_ms() > deadline)
			return conf_fail(c, "no sample in %d ms", CONF_WAIT_MS);
		usleep(250 * 1000);
	}
}

/* --- backends and error classes ----------------------------------------------------- */

/* The `none` backend: every call refused, saying how to enable one. */
static int refuses_all(struct conf *c, struct ts_backend *b)
{
	struct ts_sb_create_opts o = { .timeout_ms = -1 };
	struct ts_sb_list_opts lo = { 0 };
	struct ts_sb_info *v = NULL;
	struct ts_sb *sb = NULL;
	char *next = NULL;
	size_t n = 0;
	struct ts_error e1 = { 0 }, e2 = { 0 }, e3 = { 0 }, e4 = { 0 };
	int r1 = ts_sb_create(b, &o, &sb, &e1), r2 = ts_sb_connect(b, "x", -1, &sb, &e2),
	    r3 = ts_sb_kill(b, "x", &e3), r4 = ts_sb_list(b, &lo, &v, &n, &next, &e4);
	const struct ts_error *errs[] = { &e1, &e2, &e3, &e4 };
	const int rs[] = { r1, r2, r3, r4 };

	ts_sb_infos_free(v, n);
	free(next);
	for (int i = 0; i < 4; i++)
		if (rs[i] >= 0 || ts_be_code(errs[i]) != TS_BE_UNIMPLEMENTED || !errs[i]->msg[0])
			return conf_fail(c, "call %d of `none`: %d, %s `%s`, want unimplemented", i,
					 rs[i], ts_be_code_name(ts_be_code(errs[i])), errs[i]->msg);
	return 0;
}

static int do_open(struct conf *c, const struct conf_step *st)
{
	struct ts_error err = { 0 };
	struct ts_backend *b = NULL;
	int r = ts_backend_open(st->text, &b, &err);

	if ((r = conf_check_code(c, r, &err, &st->expect)) != 0)
		return r < 0 ? r : 0;
	if (strcmp(ts_backend_name(b), st->text) != 0)
		r = conf_fail(c, "opened `%s`, asked for `%s`", ts_backend_name(b), st->text);
	else if (!strcmp(st->text, "none"))
		r = refuses_all(c, b);
	ts_backend_free(b);
	return r;
}

static int do_unauthenticated(struct conf *c, const struct conf_step *st)
{
	struct ts_sb_list_opts lo = { 0 };
	struct ts_error err = { 0 };
	struct ts_backend *b = NULL;
	struct ts_sb_info *v = NULL;
	char *next = NULL;
	size_t n = 0;
	int r = c->r->open_unauthenticated
			? c->r->open_unauthenticated(c->r, &b, &err)
			: conf_fail(c, "the runner has no credentials to get wrong");

	if (r == 0)
		r = ts_sb_list(b, &lo, &v, &n, &next, &err);
	if (r < 0 && c->why[0])
		return -1;
	ts_sb_infos_free(v, n);
	free(next);
	ts_backend_free(b);
	r = conf_check_code(c, r, &err, &st->expect);
	return r < 0 ? r : 0;
}

static int do_code(struct conf *c, const struct conf_step *st)
{
	struct ts_error err = { .code = st->err_no };
	enum ts_be_code got = ts_be_code(&err);

	if (got != st->expect.code)
		return conf_fail(c, "errno %d is %s, want %s", st->err_no, ts_be_code_name(got),
				 ts_be_code_name(st->expect.code));
	if (st->expect.out && strcmp(ts_be_code_name(got), st->expect.out) != 0)
		return conf_fail(c, "the name of class %d is `%s`, want `%s`", (int)got,
				 ts_be_code_name(got), st->expect.out);
	return 0;
}

static int do_snapshot(struct conf *c, const struct conf_step *st)
{
	char name[128];
	struct ts_snap_create_opts o = { .name = conf_expand(c, st->text, name, sizeof(name)) };
	struct ts_snap_info info;
	struct ts_error err = { 0 };
	int r;

	if ((r = conf_need_sb(c, st->sb)) < 0)
		return r;
	r = ts_sb_snapshot(c->sb[st->sb], &o, &info, &err);
	if ((r = conf_check_code(c, r, &err, &st->expect)) != 0)
		return r < 0 ? r : 0;
	if (!info.id[0])
		return conf_fail(c, "the snapshot has no id");
	if (o.name && (info.n_names != 1 || strcmp(info.names[0], o.name) != 0))
		return conf_fail(c, "snapshot %s: names do not hold `%s`", info.id, o.name);
	snprintf(c->snap_id[st->h], sizeof(c->snap_id[0]), "%s", info.id);
	return 0;
}

static int do_snap_delete(struct conf *c, const struct conf_step *st)
{
	char buf[256];
	struct ts_error err = { 0 };
	int r = ts_backend_snapshot_delete(c->r->b, conf_expand(c, st->id, buf, sizeof(buf)), &err);

	return conf_check_code(c, r, &err, &st->expect) < 0 ? -1 : 0;
}

int conf_sb_step(struct conf *c, const struct conf_step *st)
{
	switch (st->op) {
	case C_SB_CREATE:
		return do_sb_create(c, st);
	case C_SB_CONNECT:
	case C_SB_LOOKUP:
		return do_sb_connect(c, st, st->op == C_SB_LOOKUP);
	case C_SB_KILL:
		return do_sb_kill(c, st);
	case C_SB_LIST:
		return do_sb_list(c, st);
	case C_SB_INFO:
		return do_sb_info(c, st);
	case C_SB_CLOSE:
		ts_sb_close(c->sb[st->sb]);
		c->sb[st->sb] = NULL;
		return 0;
	case C_SB_RUNNING:
		return do_sb_running(c, st);
	case C_SB_METRICS:
		return do_sb_metrics(c, st);
	case C_SNAPSHOT:
		return do_snapshot(c, st);
	case C_SNAP_DELETE:
		return do_snap_delete(c, st);
	case C_OPEN:
		return do_open(c, st);
	case C_UNAUTHENTICATED:
		return do_unauthenticated(c, st);
	case C_CODE:
		return do_code(c, st);
	default:
		return do_sb_simple(c, st);
	}
}
