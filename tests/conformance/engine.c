/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The conformance engine: executes the scenarios of scenarios.c through backend.h alone
 * (nothing of a backend's own), so that every runner gives the same list the same
 * meaning. See conformance.h. This part: strings, generated data, checks, the loop.
 */
#include "engine.h"

#include <errno.h>
#include <fnmatch.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"

static const char *const op_names[] = {
	[C_SB_CREATE] = "sb_create",
	[C_SB_CONNECT] = "sb_connect",
	[C_SB_LOOKUP] = "sb_lookup",
	[C_SB_KILL] = "sb_kill",
	[C_SB_LIST] = "sb_list",
	[C_SB_INFO] = "sb_info",
	[C_SB_SET_TIMEOUT] = "sb_set_timeout",
	[C_SB_STOP] = "sb_stop",
	[C_SB_START] = "sb_start",
	[C_SB_CHECK_USER] = "sb_check_user",
	[C_SB_PAUSE] = "sb_pause",
	[C_SB_RESUME] = "sb_resume",
	[C_SB_EXPIRE] = "sb_expire",
	[C_SB_CLOSE] = "sb_close",
	[C_RUN] = "run",
	[C_START] = "start",
	[C_CONNECT] = "connect",
	[C_WAIT_OUTPUT] = "wait_output",
	[C_WAIT_END] = "wait_end",
	[C_DETACH] = "detach",
	[C_STDIN] = "stdin",
	[C_STDIN_CLOSE] = "stdin_close",
	[C_INPUT] = "input",
	[C_INPUT_CLOSE] = "input_close",
	[C_SIGNAL] = "signal",
	[C_SIGNAL_SELF] = "signal_self",
	[C_RESIZE] = "resize",
	[C_RESIZE_SELF] = "resize_self",
	[C_PROCS] = "procs",
	[C_LOG_READ] = "log_read",
	[C_INPUT_PENDING0] = "input_pending",
	[C_WRITE] = "write",
	[C_READ] = "read",
	[C_XFER_ABANDON] = "xfer_abandon",
	[C_STAT] = "stat",
	[C_EXISTS] = "exists",
	[C_LIST] = "list",
	[C_MKDIR] = "mkdir",
	[C_REMOVE] = "remove",
	[C_RENAME] = "rename",
	[C_WATCH] = "watch",
	[C_WATCH_EXPECT] = "watch_expect",
	[C_WATCH_CLOSE] = "watch_close",
	[C_WAIT_QUIET] = "wait_quiet",
	[C_OPEN] = "open",
	[C_UNAUTHENTICATED] = "unauthenticated",
	[C_CODE] = "code",
	[C_SNAPSHOT] = "snapshot",
	[C_SB_RUNNING] = "sb_running",
	[C_SB_METRICS] = "sb_metrics",
	[C_WRITE_MANY] = "write_many",
	[C_SNAP_DELETE] = "snap_delete",
	[C_SLEEP] = "sleep",
};

static const char *op_name(enum conf_op op)
{
	return (size_t)op < sizeof(op_names) / sizeof(op_names[0]) && op_names[op] ? op_names[op]
										   : "?";
}

const char *conf_cap_name(unsigned cap)
{
	static const char *const names[] = { "backlog",	   "stop",  "proc-id",	   "proc-log",
					     "no-timeout", "root",  "credentials", "modes",
					     "proc-user",  "pause", "snapshot" };

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (cap & (1U << i))
			return names[i];
	return "?";
}

long long conf_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long conf_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

__attribute__((format(printf, 2, 3))) int conf_fail(struct conf *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	return -1;
}

/* --- strings and data --------------------------------------------------------------- */

/* s with ${RUN}, ${ID:n} and ${PID:n} replaced, into out (static per call site's buf). */
const char *conf_expand(struct conf *c, const char *s, char *out, size_t len)
{
	size_t o = 0;

	if (!s)
		return NULL;
	while (*s && o + 1 < len) {
		const char *v = NULL;
		char num[32];
		int slot;

		if (!strncmp(s, "${RUN}", 6)) {
			v = c->run;
			s += 6;
		} else if (sscanf(s, "${ID:%d}", &slot) == 1 && slot >= 0 && slot < CONF_SLOTS) {
			v = c->id[slot];
			s = strchr(s, '}') + 1;
		} else if (sscanf(s, "${PID:%d}", &slot) == 1 && slot >= 0 && slot < CONF_SLOTS) {
			snprintf(num, sizeof(num), "%d", (int)c->pid[slot]);
			v = num;
			s = strchr(s, '}') + 1;
		} else if (sscanf(s, "${SNAP:%d}", &slot) == 1 && slot >= 0 && slot < CONF_SLOTS) {
			v = c->snap_id[slot];
			s = strchr(s, '}') + 1;
		} else if (sscanf(s, "${TOOLID:%d}", &slot) == 1 && slot >= 0 &&
			   slot < CONF_SLOTS) {
			v = c->tool_id[slot];
			s = strchr(s, '}') + 1;
		}
		if (v) {
			while (*v && o + 1 < len)
				out[o++] = *v++;
		} else {
			out[o++] = *s++;
		}
	}
	out[o] = '\0';
	return out;
}

/* Expanded copies of a NULL-terminated vector (free with strv_free). */
char **conf_expand_strv(struct conf *c, const char *const *v)
{
	size_t n = 0;
	char **out;

	while (v && v[n])
		n++;
	out = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; out && i < n; i++) {
		char buf[4096];

		out[i] = strdup(conf_expand(c, v[i], buf, sizeof(buf)));
	}
	return out;
}

void conf_strv_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

/* "K=V" strings as ts_kv pairs pointing into strv (both freed by the caller). */
struct ts_kv *conf_kv_of(char **strv, size_t *n)
{
	size_t k = 0;
	struct ts_kv *kv;

	while (strv && strv[k])
		k++;
	kv = calloc(k + 1, sizeof(*kv));
	for (size_t i = 0; kv && i < k; i++) {
		char *eq = strchr(strv[i], '=');

		if (eq)
			*eq = '\0';
		kv[i] = (struct ts_kv){ strv[i], eq ? eq + 1 : "" };
	}
	*n = k;
	return kv;
}

/* The bytes of a content kind (free). */
uint8_t *conf_gen(struct conf *c, enum conf_data d, size_t size, const char *text, size_t *len)
{
	char tbuf[4096];
	uint8_t *b;

	switch (d) {
	case D_TEXT:
		conf_expand(c, text ? text : "", tbuf, sizeof(tbuf));
		*len = strlen(tbuf);
		b = malloc(*len + 1);
		if (b)
			memcpy(b, tbuf, *len + 1);
		return b;
	case D_BYTES:
		*len = size;
		b = malloc(size + 1);
		for (size_t i = 0; b && i < size; i++)
			b[i] = (uint8_t)((i + i / 256) & 0xff);
		return b;
	case D_SEQ8:
		*len = size * 8;
		b = malloc(*len + 1);
		for (size_t i = 0; b && i < size; i++) {
			char line[32];

			snprintf(line, sizeof(line), "%07zu\n", i % 10000000);
			memcpy(b + i * 8, line, 8);
		}
		return b;
	default:
		*len = 0;
		return calloc(1, 1);
	}
}

/* Where a and b first differ (or the shorter length). */
size_t conf_first_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
	size_t i = 0;

	while (i < n && a[i] == b[i])
		i++;
	return i;
}

/* got == the expected content of expect (data kind, or out as text). */
int conf_check_content(struct conf *c, const struct conf_expect *e, const uint8_t *got, size_t len,
		       const char *what)
{
	size_t want_len, d;
	uint8_t *want = conf_gen(c, e->data, e->size, e->out, &want_len);
	int r = 0;

	if (!want)
		return conf_fail(c, "out of memory");
	d = conf_first_diff(got, want, len < want_len ? len : want_len);
	if (len != want_len || d != len)
		r = conf_fail(c, "%s: %zu bytes, want %zu; first difference at byte %zu", what, len,
			      want_len, d);
	free(want);
	return r;
}

/* --- errors ------------------------------------------------------------------------- */

/*
 * The call returned r with err: is that what the step expects? 1 when it was an expected
 * error (nothing more to check), 0 for an expected success, -1 (c->why) otherwise.
 */
int conf_check_code(struct conf *c, int r, const struct ts_error *err, const struct conf_expect *e)
{
	enum ts_be_code want = e->code == TS_BE_COMMAND_EXIT ? TS_BE_OK : e->code, got;

	if (r >= 0) {
		if (e->any_error || want != TS_BE_OK)
			return conf_fail(c, "succeeded, want %s",
					 e->any_error ? "an error" : ts_be_code_name(want));
		return 0;
	}
	if (err->code != -r)
		return conf_fail(c, "returned %d, but the error says errno %d (`%s`)", r, err->code,
				 err->msg);
	got = ts_be_code(err);
	if (e->any_error && got != TS_BE_OK)
		return 1;
	if (got != want)
		return conf_fail(c, "error %s (`%s`), want %s", ts_be_code_name(got), err->msg,
				 want == TS_BE_OK ? "success" : ts_be_code_name(want));
	return 1;
}

/* --- scenarios ---------------------------------------------------------------------- */

static int step(struct conf *c, const struct conf_step *st)
{
	if (st->sb < 0 || st->sb >= CONF_SLOTS || st->h < 0 || st->h >= CONF_SLOTS || st->pid < 0 ||
	    st->pid >= CONF_SLOTS)
		return conf_fail(c, "a slot out of range");
	switch (st->op) {
	case C_SB_CREATE:
	case C_SB_CONNECT:
	case C_SB_LOOKUP:
	case C_SB_KILL:
	case C_SB_LIST:
	case C_SB_INFO:
	case C_SB_SET_TIMEOUT:
	case C_SB_STOP:
	case C_SB_START:
	case C_SB_CHECK_USER:
	case C_SB_PAUSE:
	case C_SB_RESUME:
	case C_SB_EXPIRE:
	case C_SB_CLOSE:
	case C_SB_RUNNING:
	case C_SB_METRICS:
	case C_SNAPSHOT:
	case C_SNAP_DELETE:
	case C_OPEN:
	case C_UNAUTHENTICATED:
	case C_CODE:
		return conf_sb_step(c, st);
	case C_RUN:
	case C_START:
	case C_CONNECT:
	case C_WAIT_OUTPUT:
	case C_WAIT_END:
	case C_WAIT_QUIET:
	case C_DETACH:
	case C_STDIN:
	case C_STDIN_CLOSE:
	case C_INPUT:
	case C_INPUT_CLOSE:
	case C_SIGNAL:
	case C_SIGNAL_SELF:
	case C_RESIZE:
	case C_RESIZE_SELF:
	case C_PROCS:
	case C_LOG_READ:
	case C_INPUT_PENDING0:
		return conf_cmd_step(c, st);
	case C_WRITE:
	case C_WRITE_MANY:
	case C_READ:
	case C_XFER_ABANDON:
	case C_STAT:
	case C_EXISTS:
	case C_LIST:
	case C_MKDIR:
	case C_REMOVE:
	case C_RENAME:
	case C_WATCH:
	case C_WATCH_EXPECT:
	case C_WATCH_CLOSE:
		return conf_files_step(c, st);
	case C_SLEEP:
		usleep((useconds_t)st->ms * 1000);
		return 0;
	case C_TOOL:
		return conf_tool_step(c, st);
	default:
		return conf_fail(c, "unknown step %d", (int)st->op);
	}
}

/* Everything a scenario left: its streams, watches, and the sandboxes it made. */
static void cleanup(struct conf *c)
{
	for (int i = 0; i < CONF_SLOTS; i++) {
		conf_handle_reset(&c->h[i]);
		ts_watch_close(c->w[i]);
		c->w[i] = NULL;
		conf_tool_reset(c, i);
	}
	for (int i = 0; i < CONF_SLOTS; i++) {
		struct ts_error err = { 0 };

		if (c->created[i] && ts_sb_kill(c->r->b, c->id[i], &err) < 0)
			diag("kill `%s` after the scenario: %s", c->id[i], err.msg);
		ts_sb_close(c->sb[i]);
		c->sb[i] = NULL;
		c->created[i] = false;
		c->id[i][0] = '\0';
		c->pid[i] = 0;
		c->proc[i] = 0;
		c->end_at[i] = 0;
	}
}

/* A step that never returns (a blocking call the backend never answers) ends the run with
 * a TAP line naming it, rather than in the harness's timeout. */
#define CONF_STEP_LIMIT_S 120
static char hung[512];
static size_t hung_len;

static void on_alarm(int sig)
{
	(void)sig;
	(void)!write(STDOUT_FILENO, hung, hung_len);
	_exit(1);
}

static void arm(const struct conf_scenario *s, int k)
{
	const enum conf_op op = s->steps[k].op;
	int n = snprintf(hung, sizeof(hung),
			 "not ok %d - %s: %s\n# step %d (%s) did not return in %d s\nBail out! a "
			 "step hangs\n",
			 tap_n + 1, s->name, s->what, k + 1, op_name(op), CONF_STEP_LIMIT_S);

	hung_len = n < 0 ? 0 : (size_t)n < sizeof(hung) ? (size_t)n : sizeof(hung) - 1;
	alarm(CONF_STEP_LIMIT_S);
}

static bool selected(const char *name, char **filters, size_t n)
{
	if (n == 0)
		return true;
	for (size_t i = 0; i < n; i++)
		if (fnmatch(filters[i], name, 0) == 0)
			return true;
	return false;
}

int conf_run(struct conf_runner *r, char **filters, size_t n_filters)
{
	static struct conf c;
	unsigned char raw[6];

	memset(&c, 0, sizeof(c));
	c.r = r;
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		memset(raw, 0x5a, sizeof(raw));
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(c.run + 2 * i, 3, "%02x", raw[i]);
	plan(0);
	diag("backend `%s` (%s), run %s", ts_backend_name(r->b), r->name, c.run);
	/* a process that ends while we write to it must not end us */
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	for (size_t i = 0; i < conf_n_scenarios; i++) {
		const struct conf_scenario *s = &conf_scenarios[i];
		unsigned missing = s->needs & ~r->caps, extra = s->lacks & r->caps;
		char why[128];
		int k = 0, res = 0;

		if (!selected(s->name, filters, n_filters))
			continue;
		if (missing || extra) {
			snprintf(why, sizeof(why), "backend `%s` %s `%s`", r->name,
				 missing ? "lacks" : "has",
				 conf_cap_name(missing ? missing : extra));
			skip_case(why, "%s: %s", s->name, s->what);
			continue;
		}
		c.why[0] = '\0';
		for (; s->steps[k].op != C_END; k++) {
			c.why[0] = '\0';
			arm(s, k);
			res = step(&c, &s->steps[k]);
			alarm(0);
			if (res < 0)
				break;
		}
		if (res < 0) {
			ok(0, "%s: %s", s->name, s->what);
			diag("step %d (%s): %s", k + 1, op_name(s->steps[k].op), c.why);
		} else {
			ok(1, "%s: %s", s->name, s->what);
		}
		cleanup(&c);
	}
	return done();
}
