/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POST /v1/sandboxes/{id}/commands (v1.h): start a process through the backend, then feed
 * its ts_cmd handle's events from the loop into the reply: one JSON result at the end, or
 * an application/x-ndjson event stream as they happen, read from the sandbox only as fast
 * as the client takes them.
 */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cleanup.h"
#include "http.h"
#include "loop.h"
#include "server.h"
#include "tokens.h"
#include "v1.h"

#define STEPS_PER_WAKE 64 /* events handled per loop wake-up, so one stream never starves others */
#define STDIN_CHUNK (64U << 10) /* bytes of input per message to the sandbox */
/* A command stream silent this long gets a keepalive (a blank before a JSON result, a
 * {"type":"keepalive"} event in ndjson), so no idle timeout on the way cuts it. */
#define KEEPALIVE_MS 20000

struct capture {
	uint8_t *p;
	size_t n, max;
	bool truncated;
	uint8_t carry[4]; /* ndjson: an incomplete UTF-8 sequence held for the next piece */
	size_t ncarry;
};

struct run {
	struct ts_srv *srv;
	struct ts_srv_sb *e; /* a reference: the handle stays while the stream runs */
	struct ts_stream *s;
	struct ts_cmd *c;
	struct ts_loop_fd *w;
	struct ts_loop_timer *keepalive;
	long long last_write_ms;
	bool ndjson, text, ended, closed, paused;
	unsigned in_pump;
	pid_t pid;
	uint8_t *stdin_data;
	size_t stdin_len, stdin_off;
	bool stdin_close; /* close stdin once stdin_data is in */
	struct capture out, err;
	int exit_code, signal;
	bool timed_out;
};

static void run_free(struct run *run)
{
	ts_loop_del_timer(run->keepalive);
	ts_loop_del_fd(run->w);
	ts_cmd_close(run->c);
	ts_srv_sb_unref(run->e);
	free(run->stdin_data);
	free(run->out.p);
	free(run->err.p);
	free(run);
}

static void run_on_close(void *userdata, bool client_gone)
{
	struct run *run = userdata;

	/* a client that went only stops the stream: the process runs on to its timeout, as
	 * an E2B command does (the processes routes still reach it) */
	run->closed = true;
	run->s = NULL;
	if (!run->in_pump)
		run_free(run);
}

static int send_line(struct run *run, json_t *j)
{
	_cleanup_free_ char *s = NULL;

	if (!j)
		return -ENOMEM;
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!s)
		return -ENOMEM;
	/* one event a line: a JSON dump has no raw newline */
	if (ts_stream_write(run->s, s, strlen(s)) < 0 || ts_stream_write(run->s, "\n", 1) < 0)
		return -EPIPE;
	run->last_write_ms = ts_loop_now(run->srv->loop);
	return 0;
}

/* A piece of output as an ndjson event, holding back an incomplete UTF-8 tail. */
static int send_output(struct run *run, const char *type, struct capture *cap, const uint8_t *p,
		       size_t n, bool last)
{
	_cleanup_free_ uint8_t *buf = malloc(cap->ncarry + n + 1);
	size_t len = cap->ncarry + n, tail;
	const char *enc;
	json_t *d;

	if (!buf)
		return -ENOMEM;
	memcpy(buf, cap->carry, cap->ncarry);
	if (n)
		memcpy(buf + cap->ncarry, p, n);
	cap->ncarry = 0;
	tail = run->text && !last ? ts_v1_utf8_incomplete_tail(buf, len) : 0;
	if (tail && tail < len) {
		memcpy(cap->carry, buf + len - tail, tail);
		cap->ncarry = tail;
		len -= tail;
	} else if (tail) {
		memcpy(cap->carry, buf, tail);
		cap->ncarry = tail;
		return 0;
	}
	if (!len)
		return 0;
	d = ts_v1_data_json(buf, len, run->text, &enc);
	if (!d)
		return -ENOMEM;
	return send_line(run, json_pack("{s:s,s:o,s:s}", "type", type, "data", d, "encoding", enc));
}

static void capture_add(struct capture *cap, const uint8_t *p, size_t n)
{
	size_t take = n;

	if (cap->n + take > cap->max) {
		take = cap->max - cap->n;
		cap->truncated = true;
	}
	if (!take)
		return;
	if (!cap->p) {
		cap->p = malloc(cap->max + 1);
		if (!cap->p) {
			cap->truncated = true;
			return;
		}
	}
	memcpy(cap->p + cap->n, p, take);
	cap->n += take;
}

static void put_capture(json_t *j, const char *name, struct capture *cap, bool text)
{
	char key[32];
	const char *enc;
	size_t n = cap->n;

	/* a cut in the middle of a character would make the whole text look like binary */
	if (cap->truncated && text)
		n -= ts_v1_utf8_incomplete_tail(cap->p, n);
	json_object_set_new(j, name,
			    ts_v1_data_json(cap->p ? cap->p : (const uint8_t *)"", n, text, &enc));
	snprintf(key, sizeof(key), "%s_encoding", name);
	json_object_set_new(j, key, json_string(enc));
	snprintf(key, sizeof(key), "%s_truncated", name);
	json_object_set_new(j, key, json_boolean(cap->truncated));
}

static json_t *end_json(struct run *run)
{
	return json_pack("{s:s,s:i,s:i,s:o,s:b}", "type", "end", "pid", (int)run->pid, "exit_code",
			 run->exit_code, "signal",
			 run->signal ? json_integer(run->signal) : json_null(), "timed_out",
			 run->timed_out);
}

/* Finish the reply after the end (or a failure: err). The stream may close at once. */
static void run_finish(struct run *run, const struct ts_error *err)
{
	struct ts_stream *s = run->s;

	if (run->ndjson) {
		if (err)
			send_line(run, json_pack("{s:s,s:o}", "type", "error", "error",
						 json_pack("{s:s,s:s}", "code", ts_v1_be_code(err),
							   "message", err->msg)));
		else {
			send_output(run, "stdout", &run->out, NULL, 0, true);
			send_output(run, "stderr", &run->err, NULL, 0, true);
			send_line(run, end_json(run));
		}
	} else {
		json_t *j = err ? ts_v1_error_json(ts_v1_be_code(err), err->msg) : end_json(run);
		_cleanup_free_ char *text = NULL;

		if (j && !err) {
			json_object_del(j, "type");
			put_capture(j, "stdout", &run->out, run->text);
			put_capture(j, "stderr", &run->err, run->text);
		}
		text = j ? json_dumps(j, JSON_COMPACT) : NULL;
		json_decref(j);
		if (text)
			ts_stream_write(s, text, strlen(text));
	}
	run->ended = true;
	ts_stream_end(s);
}

static void run_pump(void *userdata);

static void run_on_keepalive(void *userdata)
{
	struct run *run = userdata;
	long long now = ts_loop_now(run->srv->loop);

	if (run->ended || run->closed)
		return;
	if (!run->paused && now - run->last_write_ms >= KEEPALIVE_MS) {
		/* JSON allows white space before the value; ndjson readers skip unknown types */
		if (run->ndjson)
			send_line(run, json_pack("{s:s}", "type", "keepalive"));
		else if (ts_stream_write(run->s, " ", 1) == 0)
			run->last_write_ms = now;
	}
	ts_loop_timer_set(run->keepalive, now + KEEPALIVE_MS);
}

static void run_on_drain(void *userdata)
{
	struct run *run = userdata;

	if (run->paused) {
		run->paused = false;
		run_pump(run);
	}
}

static void run_on_fd(void *userdata, short revents)
{
	run_pump(userdata);
}

/* Feed stdin, then step the command until it has nothing more or the client is full. */
static void run_pump(void *userdata)
{
	struct run *run = userdata;
	struct ts_error err = { 0 };

	run->in_pump++;
	while (run->stdin_off < run->stdin_len && !run->ended && !run->closed) {
		size_t n = run->stdin_len - run->stdin_off;
		int r = ts_cmd_input(run->c, run->stdin_data + run->stdin_off,
				     n > STDIN_CHUNK ? STDIN_CHUNK : n, &err);

		if (r == -EAGAIN)
			break;
		if (r < 0) {
			/* a process that exits without reading its input is not an error */
			run->stdin_off = run->stdin_len;
			break;
		}
		run->stdin_off += n > STDIN_CHUNK ? STDIN_CHUNK : n;
	}
	if (run->stdin_close && run->stdin_off == run->stdin_len && !run->closed) {
		ts_cmd_input_close(run->c, &err);
		run->stdin_close = false;
	}
	for (unsigned i = 0; i < STEPS_PER_WAKE && !run->ended && !run->closed; i++) {
		struct ts_cmd_event ev;
		int r;

		/* backpressure: a client that does not read stops us reading the sandbox */
		if (run->ndjson && ts_stream_pending(run->s) > TS_HTTP_STREAM_HIGH) {
			run->paused = true;
			ts_loop_mod_fd(run->w, 0);
			break;
		}
		r = ts_cmd_step(run->c, &ev, &err);
		if (r == 0)
			break;
		if (r < 0) {
			run_finish(run, &err);
			break;
		}
		switch (ev.type) {
		case TS_CMD_EV_START:
			if (ev.pid)
				run->pid = ev.pid;
			break;
		case TS_CMD_EV_STDOUT:
		case TS_CMD_EV_STDERR:
		case TS_CMD_EV_PTY: {
			struct capture *cap = ev.type == TS_CMD_EV_STDERR ? &run->err : &run->out;

			if (!run->ndjson)
				capture_add(cap, ev.data, ev.len);
			else if (send_output(run, ev.type == TS_CMD_EV_STDERR ? "stderr" : "stdout",
					     cap, ev.data, ev.len, false) < 0) {
				ts_err(&err, -ENOMEM, "out of memory");
				run_finish(run, &err);
			}
			break;
		}
		case TS_CMD_EV_END:
			run->exit_code = ev.exit_code;
			run->signal = ev.signal;
			run->timed_out = ev.timed_out;
			run_finish(run, NULL);
			break;
		}
	}
	if (!run->ended && !run->closed && !run->paused)
		ts_loop_mod_fd(run->w, ts_cmd_events(run->c));
	if (!--run->in_pump && run->closed)
		run_free(run);
}

/* The argv of a command body: cmd (through /bin/sh -c) or argv. */
static bool command_argv(struct ts_req *req, json_t *b, char ***ret)
{
	json_t *argv = json_object_get(b, "argv"), *v;
	const char *cmd;
	size_t i;

	if (!ts_v1_get_string(req, b, "cmd", &cmd))
		return false;
	if (!!cmd == !!(argv && !json_is_null(argv))) {
		ts_v1_reply_error(req, "invalid_argument", "give either `cmd` or `argv`");
		return false;
	}
	if (cmd) {
		*ret = calloc(4, sizeof(char *));
		if (!*ret) {
			ts_v1_reply_error(req, "internal", "out of memory");
			return false;
		}
		(*ret)[0] = (char *)"/bin/sh";
		(*ret)[1] = (char *)"-c";
		(*ret)[2] = (char *)cmd;
		return true;
	}
	if (!json_is_array(argv) || json_array_size(argv) == 0 ||
	    json_array_size(argv) > TS_V1_ARGV_MAX) {
		ts_v1_reply_error(req, "invalid_argument", "`argv` must be 1-%d strings",
				  TS_V1_ARGV_MAX);
		return false;
	}
	*ret = calloc(json_array_size(argv) + 1, sizeof(char *));
	if (!*ret) {
		ts_v1_reply_error(req, "internal", "out of memory");
		return false;
	}
	json_array_foreach(argv, i, v) {
		if (!json_is_string(v) || json_string_length(v) > TS_V1_STRING_MAX ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			free(*ret);
			*ret = NULL;
			ts_v1_reply_error(req, "invalid_argument",
					  "`argv` must be strings of at most %u bytes without NUL",
					  TS_V1_STRING_MAX);
			return false;
		}
		(*ret)[i] = (char *)json_string_value(v);
	}
	return true;
}

/* Does the client want the event stream: Accept: application/x-ndjson or "stream": true. */
static bool wants_stream(struct ts_req *req, json_t *b, bool *ret)
{
	const char *accept = ts_req_header(req, "Accept");

	*ret = accept && strstr(accept, "application/x-ndjson");
	return ts_v1_get_bool(req, b, "stream", ret);
}

void ts_v1_commands(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_cmd_opts o = { .timeout_ms = 60000 };
	_cleanup_free_ char **argv = NULL;
	_cleanup_free_ struct ts_kv *envs = NULL;
	_cleanup_free_ uint8_t *in = NULL;
	struct ts_error err = { 0 };
	struct ts_srv_sb *e = NULL;
	struct ts_sb *sb;
	struct run *run;
	const char *stdin_s = NULL, *stdin_b64 = NULL, *enc = NULL;
	long long timeout = 60000, max_out = TS_V1_OUTPUT_DEFAULT;
	bool ndjson = false, keep_stdin = false;
	size_t in_len = 0;
	json_t *b, *sv;
	int r;

	if (!ts_v1_authorized(srv, req, TS_SCOPE_SANDBOXES_RUN) || !(b = ts_v1_body_object(req)))
		return;
	if (!command_argv(req, b, &argv) ||
	    !ts_v1_get_kvs(req, b, "envs", true, &envs, &o.n_envs) ||
	    !ts_v1_get_string(req, b, "cwd", &o.cwd) ||
	    !ts_v1_get_string(req, b, "user", &o.user) ||
	    !ts_v1_get_string(req, b, "tag", &o.tag) ||
	    !ts_v1_get_int(req, b, "timeout_ms", 0, TS_SB_TIMEOUT_MAX_MS, &timeout) ||
	    !ts_v1_get_int(req, b, "max_output_bytes", 0, TS_V1_OUTPUT_MAX, &max_out) ||
	    !ts_v1_get_string(req, b, "encoding", &enc) ||
	    !ts_v1_get_string(req, b, "stdin_base64", &stdin_b64) || !wants_stream(req, b, &ndjson))
		return;
	if (enc && strcmp(enc, "utf-8") && strcmp(enc, "base64")) {
		ts_v1_reply_error(req, "invalid_argument", "`encoding` is `utf-8` or `base64`");
		return;
	}
	/* stdin: a string (given, then closed), or true (a pipe kept open for .../stdin) */
	sv = json_object_get(b, "stdin");
	if (json_is_boolean(sv))
		keep_stdin = json_is_true(sv);
	else if (!ts_v1_get_string(req, b, "stdin", &stdin_s))
		return;
	if (stdin_s && stdin_b64) {
		ts_v1_reply_error(req, "invalid_argument",
				  "give `stdin` or `stdin_base64`, not both");
		return;
	}
	if (stdin_b64 && ts_v1_base64_decode(stdin_b64, strlen(stdin_b64), &in, &in_len) < 0) {
		ts_v1_reply_error(req, "invalid_argument", "`stdin_base64` is not base64");
		return;
	}
	if (stdin_s) {
		in_len = strlen(stdin_s);
		in = malloc(in_len + 1);
		if (!in) {
			ts_v1_reply_error(req, "internal", "out of memory");
			return;
		}
		memcpy(in, stdin_s, in_len);
	}
	if (!(sb = ts_v1_route_sandbox(srv, req, &e)))
		return;
	o.argv = argv;
	o.envs = envs;
	o.timeout_ms = (unsigned long long)timeout;
	o.stdin_open = keep_stdin || in;

	run = calloc(1, sizeof(*run));
	if (!run) {
		ts_v1_reply_error(req, "internal", "out of memory");
		return;
	}
	run->srv = srv;
	run->e = ts_srv_sb_ref(e);
	run->ndjson = ndjson;
	run->text = !enc || !strcmp(enc, "utf-8");
	run->out.max = run->err.max = (size_t)max_out;
	run->stdin_data = TAKE_PTR(in);
	run->stdin_len = in_len;
	run->stdin_close = run->stdin_data != NULL;
	r = ts_cmd_start(sb, &o, &run->c, &run->pid, NULL, &err);
	if (r < 0) {
		run_free(run);
		ts_v1_reply_be_error(req, &err);
		return;
	}
	run->w =
		ts_loop_add_fd(srv->loop, ts_cmd_fd(run->c), ts_cmd_events(run->c), run_on_fd, run);
	if (!run->w) {
		run_free(run);
		ts_v1_reply_error(req, "internal", "cannot watch the command's stream");
		return;
	}
	/* Both forms are a stream: the status is known once the process started (any
	 * failure before is a typed error above), and a long command keeps no reply open
	 * in the HTTP layer's buffers. */
	run->s = ts_req_stream(req, 200, ndjson ? "application/x-ndjson" : "application/json",
			       run_on_close, run, &err);
	if (!run->s) {
		/* the caller hears a failure: the command it asked for does not run on */
		ts_cmd_signal_self(run->c, SIGKILL, NULL);
		run_free(run);
		ts_v1_reply_error(req, "internal", "%s", err.msg);
		return;
	}
	ts_stream_on_drain(run->s, run_on_drain);
	run->last_write_ms = ts_loop_now(srv->loop);
	run->keepalive = ts_loop_add_timer(srv->loop, run->last_write_ms + KEEPALIVE_MS,
					   run_on_keepalive, run);
	if (ndjson &&
	    send_line(run, json_pack("{s:s,s:i}", "type", "start", "pid", (int)run->pid)) < 0) {
		ts_stream_abort(run->s);
		return;
	}
	run_pump(run);
}
