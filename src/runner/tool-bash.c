/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bash (foreground and background), bash_output, bash_stop, bash_list; and the way every
 * tool runs a command in the sandbox (ts_tool_exec).
 *
 * A background process is known by what the sandbox itself keeps, never by the runner's
 * memory: its tag (toren-bash-ID) in the sandbox's process table and its files in
 * BG_DIR (ID.cmd, ID.out with stdout and stderr, ID.rc once it ended), so that another
 * runner process, after a restart, follows it the same way, on every backend (E2B keeps
 * no output of a process nobody is attached to).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>

#include "cleanup.h"
#include "tools-internal.h"
#include "util.h"

#define BG_DIR "/tmp/.toren-bash"
#define BG_TAG "toren-bash-"
#define BG_ID_MAX 32
#define BG_READ_MAX (64U << 10)	      /* bash_output: bytes per call */
#define BG_LIST_MAX 200		      /* bash_list: processes shown */
#define BG_CMD_SHOWN 300	      /* bash_list: bytes of a command shown */
#define BASH_COMMAND_MAX (256U << 10) /* a command line (one control message holds it) */
#define STOP_TERM_MS 3000	      /* bash_stop: SIGTERM, then SIGKILL after this */

static void jsonp_free(json_t **j)
{
	json_decref(*j);
}

/* --- text ---------------------------------------------------------------------------- */

char *ts_tool_utf8(const void *data, size_t len, size_t *replaced)
{
	const uint8_t *s = data;
	/* a bad byte becomes U+FFFD (3 bytes) */
	char *out = len <= (SIZE_MAX - 1) / 3 ? malloc(len * 3 + 1) : NULL;
	size_t o = 0, bad = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t n = s[i] ? ts_utf8_seq((const char *)s + i, len - i) : 0;

		if (!n) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			bad++;
			i++;
			continue;
		}
		memcpy(out + o, s + i, n);
		o += n;
		i += n;
	}
	out[o] = '\0';
	if (replaced)
		*replaced = bad;
	return out;
}

size_t ts_tool_utf8_prefix(const void *data, size_t len)
{
	const uint8_t *s = data;

	/* back over a sequence cut at the end (at most 3 bytes of one) */
	for (size_t back = 1; back <= 3 && back <= len; back++) {
		uint8_t c = s[len - back];

		if ((c & 0xc0) == 0x80)
			continue;
		size_t need = c >= 0xf0 && c <= 0xf4   ? 4
			      : c >= 0xe0 && c <= 0xef ? 3
			      : c >= 0xc2 && c <= 0xdf ? 2
						       : 1;
		if (need > back)
			return len - back;
		break;
	}
	return len;
}

/* --- running a command --------------------------------------------------------------- */

int ts_tool_wait(struct ts_cmd *c, const char *name, unsigned long long deadline, ts_tool_out_fn fn,
		 void *userdata, struct ts_run_result *ret, bool *stopped, struct ts_error *err)
{
	bool killed = false;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (stopped)
		*stopped = false;
	for (;;) {
		struct ts_cmd_event ev;
		unsigned long long now = ts_now_ms();

		if (now >= deadline) {
			/* the sandbox's own deadline did not end it: ours does */
			if (killed)
				return ts_err(err, -ETIMEDOUT,
					      "the sandbox did not report the end of `%s` after it "
					      "was killed",
					      name);
			ts_cmd_signal_self(c, SIGKILL, NULL);
			killed = true;
			ret->timed_out = true;
			deadline = now + TS_TOOL_KILL_GRACE_MS;
			continue;
		}
		r = ts_cmd_wait_event(
			c, &ev, (int)(deadline - now > INT_MAX ? INT_MAX : deadline - now), err);
		if (r == -ETIMEDOUT) {
			ts_err_clear(err);
			continue;
		}
		if (r < 0)
			return r;
		if (ev.type == TS_CMD_EV_START)
			continue;
		if (ev.type == TS_CMD_EV_END) {
			ret->exit_code = ev.exit_code;
			ret->signal = ev.signal;
			ret->timed_out = ret->timed_out || ev.timed_out;
			return 0;
		}
		if (killed || !fn || fn(userdata, ev.type, ev.data, ev.len))
			continue;
		/* enough: the whole group goes, and what it still writes is dropped */
		ts_cmd_signal_self(c, SIGKILL, NULL);
		killed = true;
		if (stopped)
			*stopped = true;
		deadline = ts_now_ms() + TS_TOOL_KILL_GRACE_MS;
	}
}

int ts_tool_exec(struct ts_toolbox *t, char *const *argv, const char *cwd,
		 unsigned long long timeout_ms, bool with_envs, ts_tool_out_fn fn, void *userdata,
		 struct ts_run_result *ret, bool *stopped, struct ts_error *err)
{
	struct ts_cmd_opts o = {
		.argv = (char **)argv,
		.envs = with_envs ? t->envs : NULL,
		.n_envs = with_envs ? t->n_envs : 0,
		.cwd = cwd ? cwd : t->workspace,
		.user = t->user,
		.timeout_ms = timeout_ms,
	};
	_cleanup_(ts_cmd_closep) struct ts_cmd *c = NULL;
	unsigned long long deadline = ts_now_ms() + timeout_ms + TS_TOOL_EXEC_GRACE_MS;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (stopped)
		*stopped = false;
	r = ts_cmd_start(t->sb, &o, &c, NULL, NULL, err);
	if (r < 0)
		return r;
	return ts_tool_wait(c, argv[0], deadline, fn, userdata, ret, stopped, err);
}

/* --- foreground: head and tail ------------------------------------------------------- */

#define HEAD_MAX (TS_TOOL_BASH_OUT_MAX / 2)
#define TAIL_MAX (TS_TOOL_BASH_OUT_MAX - HEAD_MAX)

/* The first HEAD_MAX bytes and a ring of the last TAIL_MAX: bounded whatever the output. */
struct capper {
	uint8_t head[HEAD_MAX];
	size_t head_len;
	uint8_t ring[TAIL_MAX];
	size_t ring_pos; /* the next write */
	uint64_t total;	 /* every byte, the dropped ones included */
};

static bool capper_add(void *userdata, enum ts_cmd_event_type stream, const uint8_t *data,
		       size_t len)
{
	struct capper *c = userdata;

	(void)stream;
	c->total += len;
	if (c->head_len < HEAD_MAX) {
		size_t n = len < HEAD_MAX - c->head_len ? len : HEAD_MAX - c->head_len;

		memcpy(c->head + c->head_len, data, n);
		c->head_len += n;
		data += n;
		len -= n;
	}
	if (len > TAIL_MAX) {
		data += len - TAIL_MAX;
		len = TAIL_MAX;
	}
	while (len) {
		size_t n = len < TAIL_MAX - c->ring_pos ? len : TAIL_MAX - c->ring_pos;

		memcpy(c->ring + c->ring_pos, data, n);
		c->ring_pos = (c->ring_pos + n) % TAIL_MAX;
		data += n;
		len -= n;
	}
	return true;
}

/* The text kept: everything, or head + marker + tail. *dropped says how much is not. */
static char *capper_text(const struct capper *c, uint64_t *dropped)
{
	uint64_t rest = c->total - c->head_len; /* what came after the head */
	size_t tail_len = rest < TAIL_MAX ? (size_t)rest : TAIL_MAX;
	_cleanup_free_ uint8_t *buf = malloc(HEAD_MAX + TAIL_MAX + 128);
	size_t o = 0, tail_start = 0;

	if (!buf)
		return NULL;
	*dropped = 0;
	/* the tail, in order */
	_cleanup_free_ uint8_t *tail = malloc(TAIL_MAX);
	if (!tail)
		return NULL;
	for (size_t i = 0; i < tail_len; i++)
		tail[i] = c->ring[(c->ring_pos + TAIL_MAX - tail_len + i) % TAIL_MAX];
	if (rest <= TAIL_MAX) {
		memcpy(buf, c->head, c->head_len);
		memcpy(buf + c->head_len, tail, tail_len);
		return ts_tool_utf8(buf, c->head_len + tail_len, NULL);
	}
	/* cut where a character ends (head) and starts (tail): the partial ones are dropped */
	o = ts_tool_utf8_prefix(c->head, c->head_len);
	memcpy(buf, c->head, o);
	while (tail_start < 3 && tail_start < tail_len && (tail[tail_start] & 0xc0) == 0x80)
		tail_start++;
	*dropped = c->total - o - (tail_len - tail_start);
	int m = snprintf((char *)buf + o, 128, "%s[... %" PRIu64 " bytes dropped ...]\n",
			 o && buf[o - 1] != '\n' ? "\n" : "", *dropped);
	o += (size_t)m;
	memcpy(buf + o, tail + tail_start, tail_len - tail_start);
	o += tail_len - tail_start;
	return ts_tool_utf8(buf, o, NULL);
}

static const char *const bash_argv0[] = { "bash", "/bin/sh" };

static int bash_foreground(struct ts_toolbox *t, const char *command, unsigned long long timeout_ms,
			   struct ts_tool_result *res, struct ts_error *err)
{
	_cleanup_free_ struct capper *c = calloc(1, sizeof(*c));
	struct ts_run_result rr = { 0 };
	_cleanup_free_ char *out = NULL, *text = NULL;
	uint64_t dropped = 0;
	size_t shell = 0;
	int r;

	if (!c)
		return ts_err(err, -ENOMEM, "out of memory");
	for (;; shell++) {
		char *argv[] = { (char *)bash_argv0[shell], "-c", (char *)command, NULL };

		r = ts_tool_exec(t, argv, NULL, timeout_ms, true, capper_add, c, &rr, NULL, err);
		/* a sandbox without bash runs the command with its /bin/sh */
		if (r == -ENOENT && shell + 1 < sizeof(bash_argv0) / sizeof(bash_argv0[0]) &&
		    c->total == 0) {
			ts_err_clear(err);
			continue;
		}
		break;
	}
	if (r < 0)
		return ts_err_prefix(err, r, "bash");
	out = capper_text(c, &dropped);
	if (!out)
		return ts_err(err, -ENOMEM, "out of memory");
	json_t *data = json_pack("{s:i, s:i, s:b, s:I, s:b, s:I, s:s}", "exit_code", rr.exit_code,
				 "signal", rr.signal, "timed_out", rr.timed_out, "bytes",
				 (json_int_t)c->total, "truncated", dropped > 0, "dropped",
				 (json_int_t)dropped, "shell", bash_argv0[shell]);
	if (!data)
		return ts_err(err, -ENOMEM, "out of memory");
	const char *sep = out[0] && out[strlen(out) - 1] != '\n' ? "\n" : "";
	if (rr.timed_out) {
		int n = asprintf(
			&text,
			"%s%s[timed out after %llu s: the command and its whole process "
			"group were killed; give a larger `timeout` (at most %llu s) or run "
			"it with `background: true`]",
			out, sep, timeout_ms / 1000, TS_TOOL_BASH_TIMEOUT_MAX_MS / 1000);
		if (n < 0) {
			json_decref(data);
			return ts_err(err, -ENOMEM, "out of memory");
		}
		ts_tool_fail(res, "timeout", "%s", text);
		json_object_update(res->data, data);
		json_decref(data);
		return 0;
	}
	int n = rr.signal ? asprintf(&text, "%s%s[killed by signal %d (%s)]", out, sep, rr.signal,
				     strsignal(rr.signal))
			  : asprintf(&text, "%s%s[exit code %d]", out, sep, rr.exit_code);
	if (n < 0) {
		json_decref(data);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	return ts_tool_ok_text(res, data, TAKE_PTR(text));
}

/* --- background ---------------------------------------------------------------------- */

/*
 * The wrapper of a background command (/bin/sh -c WRAP toren-bash DIR ID COMMAND): its
 * files, then the command under bash (or sh where there is none) with stdout and stderr
 * to ID.out. The command is an argument, never part of the script's text. The trap
 * makes the wrapper outlive a SIGTERM of its group long enough to record the status;
 * its own end then takes the rest of the group with it (init kills a leader's group).
 */
static const char bg_wrap[] =
	"d=$1 f=$1/$2 u=$(umask)\n"
	"umask 077\n"
	"mkdir -p \"$d\" && printf '%s\\n' \"$3\" >\"$f.cmd\" && : >\"$f.out\" || exit 125\n"
	"umask \"$u\"\n"
	"exec </dev/null >>\"$f.out\" 2>&1\n"
	"if command -v bash >/dev/null 2>&1; then sh=bash; else sh=sh; fi\n"
	"trap : TERM INT HUP\n"
	"\"$sh\" -c \"$3\"\n"
	"rc=$?\n"
	"echo \"$rc\" >\"$f.rc\"\n"
	"exit \"$rc\"\n";

static bool id_valid(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > BG_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9') ||
		      id[i] == '-'))
			return false;
	return true;
}

static int bash_background(struct ts_toolbox *t, const char *command, unsigned long long timeout_ms,
			   struct ts_tool_result *res, struct ts_error *err)
{
	uint32_t rnd = 0;
	char id[BG_ID_MAX + 1], tag[sizeof(BG_TAG) + BG_ID_MAX];
	pid_t pid = 0;
	uint64_t proc = 0;
	int r;

	/* unique across runners and restarts: what the counter does not tell apart, the
	 * random part does */
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		rnd = (uint32_t)ts_now_ms() ^ (uint32_t)getpid();
	snprintf(id, sizeof(id), "bg%" PRIu64 "-%06" PRIx32, ++t->bg_next, rnd & 0xffffff);
	snprintf(tag, sizeof(tag), BG_TAG "%s", id);
	char *argv[] = { "/bin/sh", "-c", (char *)bg_wrap, "toren-bash",
			 BG_DIR,    id,	  (char *)command, NULL };
	struct ts_cmd_opts o = {
		.argv = argv,
		.envs = t->envs,
		.n_envs = t->n_envs,
		.cwd = t->workspace,
		.user = t->user,
		.tag = tag,
		.timeout_ms = timeout_ms,
		.detach = true,
	};
	r = ts_cmd_start(t->sb, &o, NULL, &pid, &proc, err);
	if (r < 0)
		return ts_err_prefix(err, r, "bash in the background");
	json_t *data =
		json_pack("{s:s, s:i, s:s}", "id", id, "pid", (int)pid, "output", BG_DIR "/");
	if (!data)
		return ts_err(err, -ENOMEM, "out of memory");
	json_object_set_new(data, "output", json_sprintf(BG_DIR "/%s.out", id));
	return ts_tool_ok(res, data,
			  "started `%s` in the background (pid %d); follow its output with "
			  "bash_output{id: \"%s\"}, end it with bash_stop{id: \"%s\"}",
			  id, (int)pid, id, id);
}

static int tool_bash(struct ts_toolbox *t, json_t *args, struct ts_tool_result *res,
		     struct ts_error *err)
{
	const char *command;
	long long timeout_s;
	bool background;
	bool has_timeout = json_object_get(args, "timeout") &&
			   !json_is_null(json_object_get(args, "timeout"));

	if (ts_tool_arg_str(args, "command", true, &command, res) ||
	    ts_tool_arg_int(args, "timeout", 1, TS_TOOL_BASH_TIMEOUT_MAX_MS / 1000,
			    TS_TOOL_BASH_TIMEOUT_MS / 1000, &timeout_s, res) ||
	    ts_tool_arg_bool(args, "background", false, &background, res))
		return 0;
	if (background && t->version < 2)
		return ts_tool_fail(res, "invalid_argument",
				    "`background` needs tool-set version 2 (`tools: 2` in the "
				    "agent's configuration)");
	if (!command[0])
		return ts_tool_fail(res, "invalid_argument", "the argument `command` is empty");
	if (strlen(command) > BASH_COMMAND_MAX)
		return ts_tool_fail(res, "too_large",
				    "the command is %zu bytes, at most %u: put a long script in a "
				    "file with write_file and run that",
				    strlen(command), BASH_COMMAND_MAX);
	if (background)
		return bash_background(t, command,
				       has_timeout ? (unsigned long long)timeout_s * 1000 : 0, res,
				       err);
	return bash_foreground(t, command, (unsigned long long)timeout_s * 1000, res, err);
}

/* --- what the sandbox knows of background processes --------------------------------- */

struct bg_state {
	bool found;   /* in the process table or its files */
	bool running; /* per the process table */
	bool ended_known;
	int exit_code, signal; /* once ended: exit_code -1 after a signal */
	bool timed_out;
	pid_t pid;
	long long started_ms;
	char *command;
};

static void bg_state_clear(struct bg_state *s)
{
	free(s->command);
	*s = (struct bg_state){ 0 };
}

static void from_entry(struct bg_state *s, const struct ts_proc_entry *e)
{
	s->found = true;
	s->running = e->running;
	s->pid = e->pid;
	s->started_ms = e->started_ms;
	s->timed_out = e->timed_out;
	if (!e->running) {
		s->ended_known = true;
		if (WIFEXITED(e->status)) {
			s->exit_code = WEXITSTATUS(e->status);
		} else {
			s->exit_code = -1;
			s->signal = WIFSIGNALED(e->status) ? WTERMSIG(e->status) : 0;
		}
	}
	/* the wrapper's arguments: sh -c WRAP toren-bash DIR ID COMMAND */
	size_t n = 0;
	while (e->argv && e->argv[n])
		n++;
	if (n >= 7 && !s->command)
		s->command = strdup(e->argv[6]);
}

/* The process table's entry of id (the newest one with its tag). 0, or -errno. */
static int bg_lookup(struct ts_toolbox *t, const char *id, struct bg_state *s, struct ts_error *err)
{
	struct ts_proc_entry *v = NULL;
	size_t n = 0;
	char tag[sizeof(BG_TAG) + BG_ID_MAX];
	int r = ts_cmd_list(t->sb, &v, &n, err);

	if (r < 0)
		return ts_err_prefix(err, r, "list the sandbox's processes");
	snprintf(tag, sizeof(tag), BG_TAG "%s", id);
	for (size_t i = 0; i < n; i++)
		if (v[i].tag && strcmp(v[i].tag, tag) == 0 &&
		    (!s->found || v[i].started_ms >= s->started_ms)) {
			free(s->command);
			s->command = NULL;
			from_entry(s, &v[i]);
		}
	ts_proc_entries_free(v, n);
	return 0;
}

/* Collects a small command's stdout, bounded. */
struct collect {
	uint8_t *buf;
	size_t len, max;
	bool over;
};

static bool collect_add(void *userdata, enum ts_cmd_event_type stream, const uint8_t *data,
			size_t len)
{
	struct collect *c = userdata;

	if (stream != TS_CMD_EV_STDOUT)
		return true;
	if (len > c->max - c->len) {
		len = c->max - c->len;
		c->over = true;
	}
	memcpy(c->buf + c->len, data, len);
	c->len += len;
	return !c->over;
}

/* The parsed rc file's content: exit code or 128 + signal as the shell says it. */
static void from_rc(struct bg_state *s, const char *rc)
{
	char *end;
	long v = strtol(rc, &end, 10);

	if (end == rc || v < 0 || v > 255)
		return;
	s->found = true;
	s->ended_known = true;
	s->exit_code = (int)v;
}

/*
 * bash_output's reader: the output file's size, the status file and up to $3 bytes from
 * offset $2 (tail -c +N seeks; nothing is read twice).
 */
static const char bg_read[] = "f=$1/$2\n"
			      "[ -e \"$f.out\" ] || exit 3\n"
			      "wc -c <\"$f.out\"\n"
			      "if [ -e \"$f.rc\" ]; then head -c 16 \"$f.rc\"; else echo -; fi\n"
			      "tail -c +\"$3\" \"$f.out\" | head -c \"$4\"\n";

static int tool_bash_output(struct ts_toolbox *t, json_t *args, struct ts_tool_result *res,
			    struct ts_error *err)
{
	const char *id;
	long long since;
	_cleanup_(bg_state_clear) struct bg_state s = { 0 };
	struct collect c = { .max = BG_READ_MAX + 64 };
	struct ts_run_result rr;
	char start[32], limit[32];
	int r;

	if (ts_tool_arg_str(args, "id", true, &id, res) ||
	    ts_tool_arg_int(args, "since", 0, LLONG_MAX - 1, 0, &since, res))
		return 0;
	if (!id_valid(id))
		return ts_tool_fail(res, "invalid_argument",
				    "`%s` is not a background process id (bash_list lists them)",
				    id);
	r = bg_lookup(t, id, &s, err);
	if (r < 0)
		return r;
	_cleanup_free_ uint8_t *buf = malloc(c.max);
	if (!buf)
		return ts_err(err, -ENOMEM, "out of memory");
	c.buf = buf;
	snprintf(start, sizeof(start), "%lld", since + 1);
	snprintf(limit, sizeof(limit), "%u", BG_READ_MAX);
	char *argv[] = { "/bin/sh", "-c",	(char *)bg_read, "toren-bash-output",
			 BG_DIR,    (char *)id, start,		 limit,
			 NULL };
	r = ts_tool_exec(t, argv, "/", 60000, false, collect_add, &c, &rr, NULL, err);
	if (r < 0)
		return ts_err_prefix(err, r, "read the output of `%s`", id);
	if (rr.exit_code != 0) {
		if (!s.found)
			return ts_tool_fail(res, "not_found",
					    "there is no background process `%s` in this sandbox; "
					    "bash_list lists them",
					    id);
		/* started a moment ago: its wrapper has not made its files yet */
		if (s.running)
			return ts_tool_ok(res,
					  json_pack("{s:s, s:I, s:I, s:I, s:b, s:b}", "id", id,
						    "since", (json_int_t)since, "next_since",
						    (json_int_t)since, "size", (json_int_t)0,
						    "more", false, "running", true),
					  "`%s` has just started and has written nothing yet; next "
					  "since %lld",
					  id, since);
		return ts_tool_fail(res, "not_found",
				    "the output of `%s` is gone (`" BG_DIR "/%s.out` was removed)",
				    id, id);
	}
	/* "SIZE\nRC\nDATA" */
	uint8_t *nl1 = memchr(c.buf, '\n', c.len);
	uint8_t *nl2 = nl1 ? memchr(nl1 + 1, '\n', c.len - (size_t)(nl1 + 1 - c.buf)) : NULL;
	if (!nl2)
		return ts_tool_fail(res, "internal",
				    "the sandbox's answer for the output of `%s` is malformed "
				    "(are `wc`, `tail` and `head` there?)",
				    id);
	*nl1 = *nl2 = '\0';
	unsigned long long size = strtoull((char *)c.buf, NULL, 10);
	if (strcmp((char *)nl1 + 1, "-") != 0 && !s.ended_known)
		from_rc(&s, (char *)nl1 + 1);
	uint8_t *d = nl2 + 1;
	size_t got = c.len - (size_t)(d - c.buf);
	if (got > BG_READ_MAX)
		got = BG_READ_MAX;
	/* a piece ends where a character does: the next call starts at the next one */
	if (got == BG_READ_MAX)
		got = ts_tool_utf8_prefix(d, got);
	unsigned long long next = (unsigned long long)since + got;
	bool more = next < size;
	_cleanup_free_ char *out = ts_tool_utf8(d, got, NULL);
	if (!out)
		return ts_err(err, -ENOMEM, "out of memory");
	json_t *data = json_pack("{s:s, s:I, s:I, s:I, s:b, s:b}", "id", id, "since",
				 (json_int_t)since, "next_since", (json_int_t)next, "size",
				 (json_int_t)size, "more", more, "running", s.running);
	if (!data)
		return ts_err(err, -ENOMEM, "out of memory");
	if (!s.running && s.ended_known) {
		json_object_set_new(data, "exit_code", json_integer(s.exit_code));
		json_object_set_new(data, "signal", json_integer(s.signal));
		json_object_set_new(data, "timed_out", json_boolean(s.timed_out));
	} else {
		json_object_set_new(data, "exit_code", json_null());
	}
	char status[160];
	if (s.running)
		snprintf(status, sizeof(status), "still running");
	else if (!s.ended_known)
		snprintf(status, sizeof(status), "ended (how is not known: the sandbox restarted)");
	else if (s.timed_out)
		snprintf(status, sizeof(status), "ended: timed out, its process group was killed");
	else if (s.signal)
		snprintf(status, sizeof(status), "ended: killed by signal %d (%s)", s.signal,
			 strsignal(s.signal));
	else if (s.exit_code > 128 && s.exit_code < 128 + 65)
		snprintf(status, sizeof(status), "ended with exit code %d (128 + %d: %s)",
			 s.exit_code, s.exit_code - 128, strsignal(s.exit_code - 128));
	else
		snprintf(status, sizeof(status), "ended with exit code %d", s.exit_code);
	const char *sep = out[0] && out[strlen(out) - 1] != '\n' ? "\n" : "";
	if ((unsigned long long)since > size)
		return ts_tool_ok(res, data,
				  "[`since` %lld is past the end of the output (%llu bytes); %s]",
				  since, size, status);
	if (more)
		return ts_tool_ok(res, data,
				  "%s%s[bytes %lld to %llu of %llu; more output: call bash_output "
				  "with since %llu; %s]",
				  out, sep, since, next, size, next, status);
	return ts_tool_ok(res, data, "%s%s[%llu bytes in all; %s%s%llu]", out, sep, size, status,
			  s.running ? "; new output from since " : "; next since ", next);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Wait up to ms for id's end (the table is asked every 100 ms). */
static int bg_wait_end(struct ts_toolbox *t, const char *id, unsigned ms, struct bg_state *s,
		       struct ts_error *err)
{
	unsigned long long until = ts_now_ms() + ms;

	for (;;) {
		bg_state_clear(s);
		int r = bg_lookup(t, id, s, err);
		if (r < 0 || !s->running || ts_now_ms() >= until)
			return r;
		sleep_ms(100);
	}
}

static int tool_bash_stop(struct ts_toolbox *t, json_t *args, struct ts_tool_result *res,
			  struct ts_error *err)
{
	const char *id;
	_cleanup_(bg_state_clear) struct bg_state s = { 0 };
	char tag[sizeof(BG_TAG) + BG_ID_MAX];
	const char *sent = "SIGTERM";
	int r;

	if (ts_tool_arg_str(args, "id", true, &id, res))
		return 0;
	if (!id_valid(id))
		return ts_tool_fail(res, "invalid_argument",
				    "`%s` is not a background process id (bash_list lists them)",
				    id);
	r = bg_lookup(t, id, &s, err);
	if (r < 0)
		return r;
	if (!s.found)
		return ts_tool_fail(res, "not_found",
				    "no background process `%s` runs in this sandbox; bash_list "
				    "lists them",
				    id);
	if (!s.running)
		return ts_tool_ok(res,
				  json_pack("{s:s, s:b, s:b, s:n}", "id", id, "stopped", false,
					    "running", false, "signal_sent"),
				  "`%s` had ended already; bash_output{id: \"%s\"} shows its "
				  "output and end",
				  id, id);
	snprintf(tag, sizeof(tag), BG_TAG "%s", id);
	struct ts_proc_sel sel = { .tag = tag };
	/* the backend signals the whole process group: the command's children go too */
	r = ts_cmd_signal(t->sb, &sel, SIGTERM, err);
	if (r < 0 && r != -ESRCH)
		return ts_err_prefix(err, r, "signal `%s`", id);
	ts_err_clear(err);
	r = bg_wait_end(t, id, STOP_TERM_MS, &s, err);
	if (r < 0)
		return r;
	if (s.running) {
		sent = "SIGKILL";
		r = ts_cmd_signal(t->sb, &sel, SIGKILL, err);
		if (r < 0 && r != -ESRCH)
			return ts_err_prefix(err, r, "kill `%s`", id);
		ts_err_clear(err);
		r = bg_wait_end(t, id, TS_TOOL_KILL_GRACE_MS, &s, err);
		if (r < 0)
			return r;
		if (s.running)
			return ts_tool_fail(res, "internal",
					    "`%s` still runs after SIGTERM and SIGKILL; try "
					    "bash_stop again",
					    id);
	}
	json_t *data = json_pack("{s:s, s:b, s:b, s:s, s:i, s:i}", "id", id, "stopped", true,
				 "running", false, "signal_sent", sent, "exit_code", s.exit_code,
				 "signal", s.signal);
	if (s.signal)
		return ts_tool_ok(res, data,
				  "stopped `%s` with %s: its process group ended (killed by signal "
				  "%d)",
				  id, sent, s.signal);
	if (s.exit_code > 128 && s.exit_code < 128 + 65)
		return ts_tool_ok(res, data,
				  "stopped `%s` with %s: its process group ended (exit code %d: "
				  "128 + %d, %s)",
				  id, sent, s.exit_code, s.exit_code - 128,
				  strsignal(s.exit_code - 128));
	return ts_tool_ok(res, data, "stopped `%s` with %s: its process group ended (exit code %d)",
			  id, sent, s.exit_code);
}

/*
 * bash_list's reader: per ID.cmd in the directory, NUL-separated: id, its time (the
 * start), the status file and the command's first bytes.
 */
static const char bg_ls[] = "cd \"$1\" 2>/dev/null || exit 0\n"
			    "for f in *.cmd; do\n"
			    "[ -e \"$f\" ] || continue\n"
			    "i=${f%.cmd}\n"
			    "printf '%s\\0%s\\0' \"$i\" \"$(stat -c %Y \"$f\" 2>/dev/null)\"\n"
			    "head -c 16 \"$i.rc\" 2>/dev/null; printf '\\0'\n"
			    "head -c \"$2\" \"$f\"; printf '\\0'\n"
			    "done\n";

static int by_started(const void *a, const void *b)
{
	json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "started_ms"));
	json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "started_ms"));

	return x < y ? -1 : x > y;
}

static json_t *bg_entry_json(const char *id, const struct bg_state *s)
{
	json_t *j = json_pack("{s:s, s:s, s:I, s:b}", "id", id, "command",
			      s->command ? s->command : "", "started_ms", (json_int_t)s->started_ms,
			      "running", s->running);

	if (!j)
		return NULL;
	if (s->pid)
		json_object_set_new(j, "pid", json_integer(s->pid));
	if (!s->running && s->ended_known) {
		json_object_set_new(j, "exit_code", json_integer(s->exit_code));
		if (s->signal)
			json_object_set_new(j, "signal", json_integer(s->signal));
		if (s->timed_out)
			json_object_set_new(j, "timed_out", json_true());
	} else {
		json_object_set_new(j, "exit_code", json_null());
	}
	return j;
}

static int tool_bash_list(struct ts_toolbox *t, json_t *args, struct ts_tool_result *res,
			  struct ts_error *err)
{
	struct ts_proc_entry *v = NULL;
	size_t n = 0;
	struct collect c = { .max = BG_LIST_MAX * (BG_CMD_SHOWN + 128) };
	struct ts_run_result rr;
	_cleanup_(jsonp_free) json_t *byid = json_object();
	int r;

	(void)args;
	if (!byid)
		return ts_err(err, -ENOMEM, "out of memory");
	r = ts_cmd_list(t->sb, &v, &n, err);
	if (r < 0)
		return ts_err_prefix(err, r, "list the sandbox's processes");
	/* the process table first: it knows what runs */
	for (size_t i = 0; i < n; i++) {
		struct bg_state s = { 0 };
		const char *id;

		if (!v[i].tag || !ts_startswith(v[i].tag, BG_TAG))
			continue;
		id = v[i].tag + strlen(BG_TAG);
		json_t *old = json_object_get(byid, id);
		if (old && json_integer_value(json_object_get(old, "started_ms")) > v[i].started_ms)
			continue;
		from_entry(&s, &v[i]);
		json_object_set_new(byid, id, bg_entry_json(id, &s));
		bg_state_clear(&s);
	}
	ts_proc_entries_free(v, n);
	/* then the files: what ended before a restart, or left the table */
	_cleanup_free_ uint8_t *buf = malloc(c.max);
	if (!buf)
		return ts_err(err, -ENOMEM, "out of memory");
	c.buf = buf;
	char shown[16];
	snprintf(shown, sizeof(shown), "%u", BG_CMD_SHOWN);
	char *argv[] = { "/bin/sh", "-c", (char *)bg_ls, "toren-bash-list", BG_DIR, shown, NULL };
	r = ts_tool_exec(t, argv, "/", 60000, false, collect_add, &c, &rr, NULL, err);
	if (r < 0)
		return ts_err_prefix(err, r, "list `" BG_DIR "`");
	for (size_t off = 0; off < c.len;) {
		const char *f[4];
		size_t k = 0;

		for (; k < 4 && off < c.len; k++) {
			uint8_t *z = memchr(c.buf + off, '\0', c.len - off);
			if (!z)
				break;
			f[k] = (const char *)c.buf + off;
			off = (size_t)(z - c.buf) + 1;
		}
		if (k < 4)
			break; /* cut by the bound */
		if (!id_valid(f[0]))
			continue;
		json_t *have = json_object_get(byid, f[0]);
		if (have) {
			if (!json_string_length(json_object_get(have, "command")))
				json_object_set_new(have, "command", json_string(f[3]));
			continue;
		}
		struct bg_state s = { .found = true };
		s.started_ms = strtoll(f[1], NULL, 10) * 1000;
		if (f[2][0])
			from_rc(&s, f[2]);
		size_t cl = strlen(f[3]);
		while (cl && f[3][cl - 1] == '\n')
			cl--;
		s.command = ts_tool_utf8(f[3], cl, NULL);
		json_object_set_new(byid, f[0], bg_entry_json(f[0], &s));
		bg_state_clear(&s);
	}
	/* oldest first */
	size_t count = json_object_size(byid), k = 0;
	_cleanup_free_ json_t **list = calloc(count + 1, sizeof(*list));
	if (!list)
		return ts_err(err, -ENOMEM, "out of memory");
	const char *key;
	json_t *val;
	json_object_foreach(byid, key, val) {
		if (val)
			list[k++] = val;
	}
	qsort(list, k, sizeof(*list), by_started);
	json_t *arr = json_array();
	char *text = NULL;
	size_t text_len = 0;
	FILE *f = open_memstream(&text, &text_len);
	if (!arr || !f) {
		json_decref(arr);
		if (f)
			fclose(f);
		free(text);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	size_t first = k > BG_LIST_MAX ? k - BG_LIST_MAX : 0;
	if (first)
		fprintf(f, "[%zu older ones not shown]\n", first);
	for (size_t i = first; i < k; i++) {
		json_t *e = list[i];
		json_t *ec = json_object_get(e, "exit_code");
		const char *cmd = json_string_value(json_object_get(e, "command"));
		char state[64];

		json_array_append(arr, e);
		if (json_is_true(json_object_get(e, "running")))
			snprintf(state, sizeof(state), "running");
		else if (json_is_true(json_object_get(e, "timed_out")))
			snprintf(state, sizeof(state), "timed out");
		else if (json_integer_value(json_object_get(e, "signal")))
			snprintf(state, sizeof(state), "killed by signal %d",
				 (int)json_integer_value(json_object_get(e, "signal")));
		else if (json_is_integer(ec))
			snprintf(state, sizeof(state), "exit code %d", (int)json_integer_value(ec));
		else
			snprintf(state, sizeof(state), "ended");
		int cl = 0;
		while (cmd && cmd[cl] && cmd[cl] != '\n' && cl < 80)
			cl++;
		fprintf(f, "%s  %s  %.*s%s\n", json_string_value(json_object_get(e, "id")), state,
			cl, cmd ? cmd : "", cmd && cmd[cl] ? " ..." : "");
	}
	if (!k)
		fprintf(f, "no background processes (bash with `background: true` starts one)");
	fclose(f);
	return ts_tool_ok_text(res, json_pack("{s:o}", "processes", arr), text);
}

/* --- definitions --------------------------------------------------------------------- */

const struct ts_tool_def ts_tool_bash = {
	.name = "bash",
	.since = 1,
	.writes = false,
	.description =
		"Run a shell command with bash (`bash -c`; /bin/sh where the sandbox has no bash) "
		"in the workspace directory, stdin empty. Foreground: waits for the end and "
		"returns stdout and stderr interleaved in arrival order, then `[exit code N]`; a "
		"non-zero exit is a normal result, read the code. Output past 32 KiB keeps the "
		"first and last 16 KiB with a line `[... N bytes dropped ...]` between them "
		"(redirect to a file and read it with read_file or grep for more). `timeout` "
		"(seconds, default 120, at most 3600) kills the command and its whole process "
		"group, background jobs included, and is reported as a `timeout` error. With "
		"`background: true` the command starts detached and the result gives an `id` at "
		"once: bash_output{id} reads its output, bash_stop{id} ends it, bash_list lists "
		"them; a background command has no timeout unless one is given.",
	.schema = "{\"type\":\"object\",\"properties\":{"
		  "\"command\":{\"type\":\"string\",\"description\":\"the shell command line\"},"
		  "\"timeout\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":3600,"
		  "\"description\":\"seconds before the command and its process group are "
		  "killed (default 120; background: none)\"},"
		  "\"background\":{\"type\":\"boolean\",\"description\":\"start it detached and "
		  "return its id at once (tool-set version 2)\"}},"
		  "\"required\":[\"command\"],\"additionalProperties\":false}",
	.fn = tool_bash,
};

const struct ts_tool_def ts_tool_bash_output = {
	.name = "bash_output",
	.since = 2,
	.writes = false,
	.description =
		"Output (stdout and stderr interleaved) of a background process started with "
		"bash{background: true}, from byte offset `since` (default 0), at most 64 KiB per "
		"call; the result says whether it still runs or how it ended (exit code), and the "
		"`since` to pass next for the rest or for new output. The output is kept in a "
		"file in the sandbox (/tmp/.toren-bash/ID.out), so it can be read at any time "
		"while the sandbox lives.",
	.schema = "{\"type\":\"object\",\"properties\":{"
		  "\"id\":{\"type\":\"string\",\"description\":\"the id bash returned\"},"
		  "\"since\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"byte offset "
		  "to read from (default 0): the previous call's next_since\"}},"
		  "\"required\":[\"id\"],\"additionalProperties\":false}",
	.fn = tool_bash_output,
};

const struct ts_tool_def ts_tool_bash_stop = {
	.name = "bash_stop",
	.since = 2,
	.writes = false,
	.description = "End a background process and its whole process group (children "
		       "included): SIGTERM, then SIGKILL after 3 seconds if it still runs. Says "
		       "how it ended; its output stays readable with bash_output.",
	.schema = "{\"type\":\"object\",\"properties\":{"
		  "\"id\":{\"type\":\"string\",\"description\":\"the id bash returned\"}},"
		  "\"required\":[\"id\"],\"additionalProperties\":false}",
	.fn = tool_bash_stop,
};

const struct ts_tool_def ts_tool_bash_list = {
	.name = "bash_list",
	.since = 2,
	.writes = false,
	.description = "Every background process started with bash{background: true} in this "
		       "sandbox, running or ended, oldest first: id, command, start time, "
		       "whether it runs, exit code.",
	.schema = "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
	.fn = tool_bash_list,
};
