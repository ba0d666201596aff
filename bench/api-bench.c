/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toren-bench-api: the backend interface measured in process (issue 8, "Speed").
 *
 *   toren-bench-api latency -n ROUNDS [-w WARMUP] -o OUT.csv [-x CMDFILE] [-s IN:HOST] ID
 *   toren-bench-api stream -n ROUNDS [-w WARMUP] -o OUT.csv [-m MIB,...] ID
 *   toren-bench-api runs -k COUNT [-b BYTES | -c CMD] ID
 *   toren-bench-api create -n ROUNDS [-w WARMUP] -o OUT.csv
 *
 * latency: in every round, one run of each row, round r starting with row r mod K (as
 * bench/timer.c interleaves; the rows share the machine's slow and fast phases):
 *   host posix_spawn /bin/true   posix_spawn + waitpid on the host: the reference
 *   api commands.run /bin/true   ts_be_run on a handle connected once (ts_sb_connect)
 *   api run, missing program     the same with a program that does not exist: both round
 *                                trips, init's fork and a failed execve, no command run
 *   ctl connect + HELLO          connect to the control socket and HELLO, nothing else
 *   ctl SPAWN on one connection  SPAWN (attached) + wait for EXITED on a connection
 *                                opened once: what run would cost with no per-command
 *                                connect and HELLO (the protocol allows it today)
 *   + the commands of CMDFILE    `LABEL<TAB>ARGV` lines, spawned as the reference is
 *                                (nsenter, the CLI's exec, crun exec: bench/run-api.sh)
 *   -s IN:HOST adds `api commands.run IN` and `host posix_spawn HOST` (the same static
 *   binary inside and outside: how the ratio depends on the command's own exec).
 *
 * stream: throughput of a process's stdout through init (rows per size in MiB):
 *   background + attach N MiB    started in the background with a log (as `exec -d`),
 *                                the handle closed, then attached again by its process id
 *                                (ts_cmd_connect) before it writes: `sh -c 'read x; exec
 *                                head -c N /dev/zero'`, released through its stdin. Time
 *                                from the first byte to END; every byte is counted and
 *                                the offsets are checked to be contiguous.
 *   api run N MiB                ts_be_run of `head -c N /dev/zero`, counting the bytes
 *                                in the output callback: from the call to its return.
 *
 * runs: COUNT runs of /bin/true (or with -b, of `head -c BYTES /dev/zero`; with -c, of CMD
 * split at spaces), untimed: to leave finished processes in init's table for the
 * idle-memory part, or as many processes at once for bench/run-serve.sh's throughput.
 *
 * create: a sandbox made in process as `toren-sandbox serve` makes one for E2B's
 * Sandbox.create() (ts_sb_create, a 600 s timeout counted from creation), its first
 * ts_be_run of `/bin/bash -l -c true` (what the SDK's commands.run('true') starts) on the
 * handle create returned, then ts_sb_kill as serve's DELETE does; rows:
 *   api create                   ts_sb_create
 *   api first run                ts_be_run on the new sandbox
 *   api create + first run       both
 *   api kill                     ts_sb_kill (stop and remove)
 * (bench/run-serve.sh: the backend's part of serve's create path, in the same run).
 *
 * OUT.csv is bench/timer.c's: label,round,ns,status; stream rows add a bytes column.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "cleanup.h"
#include "ctl.h"
#include "ctlclient.h"
#include "paths.h"

extern char **environ;

#define MAX_ROWS 32
#define MAX_ARGS 64

enum row_kind {
	ROW_HOST_SPAWN,	  /* argv on the host, posix_spawn + waitpid */
	ROW_API_RUN,	  /* ts_be_run of argv inside */
	ROW_API_MISSING,  /* ts_be_run of a missing program: -ENOENT expected */
	ROW_CTL_HELLO,	  /* ts_ctl_client_connect + free */
	ROW_CTL_PERSIST,  /* SPAWN + EXITED on the one connection opened at the start */
	ROW_BG_ATTACH,	  /* stream: background, detach, attach, release, count */
	ROW_API_RUN_SINK, /* stream: ts_be_run, bytes counted in the callback */
};

struct row {
	char label[128];
	enum row_kind kind;
	char *argv[MAX_ARGS];
	char **envp;		  /* host rows: NULL, or environ with the row's NAME=VALUE words */
	unsigned long long bytes; /* stream rows: expected output */
};

struct bench {
	struct ts_backend *b;
	struct ts_sb *sb;
	char dir[4200]; /* the sandbox's directory: $ROOT/<id> */
	struct ts_ctl_client *persist;
	int null_fd, err_fd;
	struct row rows[MAX_ROWS];
	int n_rows;
};

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *what, const struct ts_error *err)
{
	fprintf(stderr, "toren-bench-api: %s: %s\n", what, err ? err->msg : strerror(errno));
	exit(2);
}

static struct row *add_row(struct bench *B, enum row_kind kind, const char *label)
{
	struct row *r;

	if (B->n_rows >= MAX_ROWS) {
		fprintf(stderr, "toren-bench-api: too many rows\n");
		exit(2);
	}
	r = &B->rows[B->n_rows++];
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	snprintf(r->label, sizeof(r->label), "%s", label);
	return r;
}

/* Words separated by spaces, or by US (0x1f) when a word has a space (bench/timer.c). */
static void split(char *s, char **out)
{
	const char *sep = strchr(s, '\x1f') ? "\x1f" : " ";
	int n = 0;

	for (char *tok = strtok(s, sep); tok && n < MAX_ARGS - 1; tok = strtok(NULL, sep))
		out[n++] = tok;
	out[n] = NULL;
}

/*
 * Leading NAME=VALUE words set variables for that command alone (a second state root
 * for a build of another commit), without an env(1) exec in the measured path.
 */
static void take_env(struct row *r)
{
	size_t n = 0, k = 0, skip = 0;

	while (r->argv[skip] && strchr(r->argv[skip], '=') && r->argv[skip][0] != '/')
		skip++;
	if (!skip)
		return;
	while (environ[n])
		n++;
	r->envp = calloc(n + skip + 1, sizeof(char *));
	for (size_t i = 0; i < skip; i++)
		r->envp[k++] = r->argv[i];
	for (size_t i = 0; i < n; i++) {
		size_t len = strcspn(environ[i], "=");
		bool overridden = false;

		for (size_t j = 0; j < skip; j++)
			overridden |= !strncmp(r->argv[j], environ[i], len) &&
				      r->argv[j][len] == '=';
		if (!overridden)
			r->envp[k++] = environ[i];
	}
	memmove(r->argv, r->argv + skip, (MAX_ARGS - skip) * sizeof(char *));
}

static void add_cmdfile(struct bench *B, const char *path)
{
	char line[8192];
	FILE *f = fopen(path, "r");

	if (!f)
		die(path, NULL);
	while (fgets(line, sizeof(line), f)) {
		char *tab;
		struct row *r;

		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#' || !(tab = strchr(line, '\t')))
			continue;
		*tab = '\0';
		r = add_row(B, ROW_HOST_SPAWN, line);
		split(strdup(tab + 1), r->argv);
		take_env(r);
	}
	fclose(f);
}

/* posix_spawn + waitpid, stdin and stdout on /dev/null (bench/timer.c's measurement). */
static int host_spawn(struct bench *B, char **argv, char **envp)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int st, r;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, B->null_fd, 0);
	posix_spawn_file_actions_adddup2(&fa, B->null_fd, 1);
	posix_spawn_file_actions_adddup2(&fa, B->err_fd, 2);
	r = posix_spawn(&pid, argv[0], &fa, NULL, argv, envp ? envp : environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0)
		return 127;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 127;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int api_run(struct bench *B, char **argv, bool missing_ok)
{
	struct ts_cmd_opts o = { .argv = argv };
	struct ts_run_result res;
	struct ts_error err = { 0 };
	int r = ts_be_run(B->sb, &o, NULL, NULL, false, 0, &res, &err);

	if (missing_ok)
		return r == -ENOENT ? 0 : (r < 0 ? 1 : 2);
	if (r < 0) {
		fprintf(stderr, "toren-bench-api: run: %s\n", err.msg);
		return 125;
	}
	r = res.exit_code >= 0 ? res.exit_code : 128 + res.signal;
	ts_run_result_clear(&res);
	return r;
}

static int ctl_hello(struct bench *B)
{
	struct ts_ctl_client *c = NULL;
	struct ts_error err = { 0 };

	if (ts_ctl_client_connect(B->dir, "bench", TS_CTL_REPLY_MS, &c, &err) < 0) {
		fprintf(stderr, "toren-bench-api: hello: %s\n", err.msg);
		return 1;
	}
	ts_ctl_client_free(c);
	return 0;
}

/* SPAWN {ARG, FLAGS=ATTACH} on the persistent connection; wait for SPAWNED and EXITED. */
static int ctl_persist_run(struct bench *B, char **argv)
{
	struct ts_ctl_client *c = B->persist;
	struct ts_ctl_msg m = { 0 }, reply = { 0 };
	struct ts_error err = { 0 };
	uint64_t st = 0;
	uint32_t id;
	int r = 0;

	ts_ctl_msg_init(&m, TS_CTL_SPAWN, 0);
	for (char **a = argv; *a && r == 0; a++)
		r = ts_ctl_put_str(&m, TS_T_ARG, *a);
	if (r == 0)
		r = ts_ctl_put_u64(&m, TS_T_FLAGS, TS_SPAWN_ATTACH);
	if (r == 0)
		r = ts_ctl_client_call(c, &m, TS_CTL_SPAWNED, &reply, &err);
	id = m.id;
	ts_ctl_msg_free(&m);
	if (r < 0) {
		fprintf(stderr, "toren-bench-api: spawn: %s\n", err.msg);
		return 125;
	}
	ts_ctl_msg_free(&reply);
	for (;;) {
		r = ts_ctl_client_wait(c, &reply, TS_CTL_REPLY_MS, &err);
		if (r < 0) {
			fprintf(stderr, "toren-bench-api: wait: %s\n", err.msg);
			return 125;
		}
		if (reply.id == id && reply.type == TS_CTL_EXITED)
			break;
		ts_ctl_msg_free(&reply);
	}
	ts_ctl_get_u64(&reply, TS_T_STATUS, &st);
	ts_ctl_msg_free(&reply);
	return WIFEXITED((int)st) ? WEXITSTATUS((int)st) : 128 + WTERMSIG((int)st);
}

struct sink {
	unsigned long long bytes;
};

static void count_output(void *userdata, enum ts_cmd_event_type stream, const uint8_t *data,
			 size_t len)
{
	struct sink *s = userdata;

	if (stream == TS_CMD_EV_STDOUT)
		s->bytes += len;
}

static int api_run_sink(struct bench *B, struct row *row, unsigned long long *got)
{
	struct sink s = { 0 };
	struct ts_cmd_opts o = { .argv = row->argv };
	struct ts_run_result res;
	struct ts_error err = { 0 };
	int r = ts_be_run(B->sb, &o, count_output, &s, false, 0, &res, &err);

	*got = s.bytes;
	if (r < 0) {
		fprintf(stderr, "toren-bench-api: run: %s\n", err.msg);
		return 125;
	}
	r = res.exit_code;
	ts_run_result_clear(&res);
	return r != 0 ? r : s.bytes == row->bytes ? 0 : 3;
}

/*
 * Background, detach, attach, release, count. *ns is from the first byte to END (the
 * stream's own rate, without sh's exec of head); 0 when no byte came.
 */
static int bg_attach(struct bench *B, struct row *row, long long *ns, unsigned long long *got)
{
	struct ts_cmd_opts o = {
		.argv = row->argv, .stdin_open = true, .log = true, .detach = true
	};
	struct ts_error err = { 0 };
	struct ts_proc_sel sel = { 0 };
	struct ts_cmd *c = NULL;
	unsigned long long next = 0;
	long long t_first = 0;
	bool ordered = true;
	int status = 125, r;
	pid_t pid;

	*ns = 0;
	*got = 0;
	r = ts_cmd_start(B->sb, &o, NULL, &pid, &sel.proc, &err);
	if (r == 0)
		r = ts_cmd_connect(B->sb, &sel, &c, &err);
	if (r == 0)
		r = ts_cmd_send_stdin(B->sb, &sel, "\n", 1, &err);
	if (r < 0) {
		fprintf(stderr, "toren-bench-api: background: %s\n", err.msg);
		ts_cmd_close(c);
		return 125;
	}
	for (;;) {
		struct ts_cmd_event ev;

		r = ts_cmd_wait_event(c, &ev, 60000, &err);
		if (r < 0) {
			fprintf(stderr, "toren-bench-api: attach: %s\n", err.msg);
			break;
		}
		if (ev.type == TS_CMD_EV_STDOUT) {
			if (!t_first)
				t_first = now_ns();
			if (ev.offset != next)
				ordered = false;
			next = ev.offset + ev.len;
			*got += ev.len;
		} else if (ev.type == TS_CMD_EV_END) {
			if (t_first)
				*ns = now_ns() - t_first;
			status = ev.exit_code >= 0 ? ev.exit_code : 128 + ev.signal;
			break;
		}
	}
	ts_cmd_close(c);
	if (status == 0 && (!ordered || *got != row->bytes))
		status = 3;
	return status;
}

static void setup(struct bench *B, const char *id)
{
	struct ts_error err = { 0 };
	struct ts_paths p;

	if (ts_backend_open("local", &B->b, &err) < 0)
		die("backend", &err);
	if (ts_sb_connect(B->b, id, -1, &B->sb, &err) < 0)
		die("connect", &err);
	if (ts_paths_init(&p, &err) < 0)
		die("paths", &err);
	if (ts_path_join(B->dir, sizeof(B->dir), p.root, ts_sb_id(B->sb)) < 0)
		die("path too long", NULL);
	B->null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	B->err_fd = dup(2);
}

static char **words(const char *s)
{
	char **v = calloc(MAX_ARGS, sizeof(char *));

	split(strdup(s), v);
	return v;
}

static void set_argv(struct row *r, char **v)
{
	for (int i = 0; i < MAX_ARGS && v[i]; i++)
		r->argv[i] = v[i];
}

static int run_latency(struct bench *B, int n, int warmup, const char *out)
{
	FILE *o = fopen(out, "w");

	if (!o)
		die(out, NULL);
	fprintf(o, "label,round,ns,status\n");
	for (int r = -warmup; r < n; r++) {
		for (int j = 0; j < B->n_rows; j++) {
			struct row *row = &B->rows[(((r % B->n_rows) + B->n_rows) % B->n_rows + j) %
						   B->n_rows];
			long long t0 = now_ns(), t1;
			int st;

			switch (row->kind) {
			case ROW_HOST_SPAWN:
				st = host_spawn(B, row->argv, row->envp);
				break;
			case ROW_API_RUN:
				st = api_run(B, row->argv, false);
				break;
			case ROW_API_MISSING:
				st = api_run(B, row->argv, true);
				break;
			case ROW_CTL_HELLO:
				st = ctl_hello(B);
				break;
			case ROW_CTL_PERSIST:
				st = ctl_persist_run(B, row->argv);
				break;
			default:
				st = 2;
			}
			t1 = now_ns();
			if (r >= 0)
				fprintf(o, "\"%s\",%d,%lld,%d\n", row->label, r, t1 - t0, st);
		}
	}
	fclose(o);
	return 0;
}

static int run_stream(struct bench *B, int n, int warmup, const char *out)
{
	FILE *o = fopen(out, "w");

	if (!o)
		die(out, NULL);
	fprintf(o, "label,round,ns,status,bytes\n");
	for (int r = -warmup; r < n; r++) {
		for (int j = 0; j < B->n_rows; j++) {
			struct row *row = &B->rows[(((r % B->n_rows) + B->n_rows) % B->n_rows + j) %
						   B->n_rows];
			unsigned long long got = 0;
			long long ns = 0, t0 = now_ns();
			int st;

			if (row->kind == ROW_BG_ATTACH) {
				st = bg_attach(B, row, &ns, &got);
			} else {
				st = api_run_sink(B, row, &got);
				ns = now_ns() - t0;
			}
			if (r >= 0)
				fprintf(o, "\"%s\",%d,%lld,%d,%llu\n", row->label, r, ns, st, got);
			if (st != 0)
				fprintf(stderr,
					"toren-bench-api: `%s`: status %d, %llu of %llu bytes\n",
					row->label, st, got, row->bytes);
		}
	}
	fclose(o);
	return 0;
}

static int run_create(int n, int warmup, const char *out)
{
	_cleanup_(ts_backend_freep) struct ts_backend *b = NULL;
	struct ts_error err = { 0 };
	char **argv = words("/bin/bash -l -c true");
	FILE *o = fopen(out, "w");

	if (!o)
		die(out, NULL);
	if (ts_backend_open("local", &b, &err) < 0)
		die("backend", &err);
	fprintf(o, "label,round,ns,status\n");
	for (int r = -warmup; r < n; r++) {
		struct ts_sb_create_opts co = { .timeout_ms = 600000, .timeout_absolute = true };
		struct ts_cmd_opts ro = { .argv = argv };
		struct ts_run_result res;
		struct ts_sb *sb = NULL;
		char id[64];
		long long t0, t1, t2, t3;
		int st = 0;

		t0 = now_ns();
		if (ts_sb_create(b, &co, &sb, &err) < 0)
			die("create", &err);
		t1 = now_ns();
		if (ts_be_run(sb, &ro, NULL, NULL, false, 0, &res, &err) < 0)
			die("first run", &err);
		t2 = now_ns();
		st = res.exit_code;
		ts_run_result_clear(&res);
		snprintf(id, sizeof(id), "%s", ts_sb_id(sb));
		ts_sb_close(sb);
		t3 = now_ns();
		if (ts_sb_kill(b, id, &err) < 0)
			die("kill", &err);
		if (r >= 0) {
			long long t4 = now_ns();

			fprintf(o, "\"api create\",%d,%lld,0\n", r, t1 - t0);
			fprintf(o, "\"api first run\",%d,%lld,%d\n", r, t2 - t1, st);
			fprintf(o, "\"api create + first run\",%d,%lld,%d\n", r, t2 - t0, st);
			fprintf(o, "\"api kill\",%d,%lld,0\n", r, t4 - t3);
		}
	}
	fclose(o);
	return 0;
}

static void usage(void)
{
	fputs("usage: toren-bench-api latency -n ROUNDS [-w WARMUP] -o OUT.csv [-x CMDFILE] "
	      "[-s IN:HOST] ID\n"
	      "       toren-bench-api stream -n ROUNDS [-w WARMUP] -o OUT.csv [-m MIB,...] ID\n"
	      "       toren-bench-api runs -k COUNT [-b BYTES | -c CMD] ID\n"
	      "       toren-bench-api create -n ROUNDS [-w WARMUP] -o OUT.csv\n",
	      stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	static struct bench B;
	const char *mode, *out = NULL, *cmdfile = NULL, *statics = NULL, *sizes = "1,64";
	const char *run_cmd = NULL;
	int n = 30, warmup = 3, k = 0, opt;
	unsigned long long bytes = 0;

	if (argc < 2)
		usage();
	mode = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "n:w:o:x:s:m:k:b:c:")) != -1) {
		switch (opt) {
		case 'n':
			n = atoi(optarg);
			break;
		case 'w':
			warmup = atoi(optarg);
			break;
		case 'o':
			out = optarg;
			break;
		case 'x':
			cmdfile = optarg;
			break;
		case 's':
			statics = optarg;
			break;
		case 'm':
			sizes = optarg;
			break;
		case 'k':
			k = atoi(optarg);
			break;
		case 'b':
			bytes = strtoull(optarg, NULL, 10);
			break;
		case 'c':
			run_cmd = optarg;
			break;
		default:
			usage();
		}
	}
	if (!strcmp(mode, "create")) {
		if (!out || n < 1 || optind != argc)
			usage();
		return run_create(n, warmup, out);
	}
	if (optind + 1 != argc)
		usage();
	setup(&B, argv[optind]);

	if (!strcmp(mode, "runs")) {
		char cmd[64];
		char **v;

		snprintf(cmd, sizeof(cmd), "/usr/bin/head -c %llu /dev/zero", bytes);
		v = run_cmd ? words(run_cmd) : bytes ? words(cmd) : words("/bin/true");
		for (int i = 0; i < k; i++)
			if (api_run(&B, v, false) != 0)
				return 1;
		return 0;
	}
	if (!out || n < 1)
		usage();
	if (!strcmp(mode, "latency")) {
		struct ts_error err = { 0 };

		set_argv(add_row(&B, ROW_HOST_SPAWN, "host posix_spawn /bin/true"),
			 words("/bin/true"));
		set_argv(add_row(&B, ROW_API_RUN, "api commands.run /bin/true"),
			 words("/bin/true"));
		set_argv(add_row(&B, ROW_API_MISSING, "api run, missing program"),
			 words("/nonexistent/true"));
		add_row(&B, ROW_CTL_HELLO, "ctl connect + HELLO");
		set_argv(add_row(&B, ROW_CTL_PERSIST, "ctl SPAWN on one connection /bin/true"),
			 words("/bin/true"));
		if (statics) {
			char *s = strdup(statics), *colon = strchr(s, ':'), label[160];

			if (!colon)
				usage();
			*colon = '\0';
			snprintf(label, sizeof(label), "api commands.run static true");
			set_argv(add_row(&B, ROW_API_RUN, label), words(s));
			snprintf(label, sizeof(label), "host posix_spawn static true");
			set_argv(add_row(&B, ROW_HOST_SPAWN, label), words(colon + 1));
		}
		if (cmdfile)
			add_cmdfile(&B, cmdfile);
		if (ts_ctl_client_connect(B.dir, "bench", TS_CTL_REPLY_MS, &B.persist, &err) < 0)
			die("persistent connection", &err);
		return run_latency(&B, n, warmup, out);
	}
	if (!strcmp(mode, "stream")) {
		char *s = strdup(sizes), *save = NULL;

		/* strtok_r: words() below splits with strtok */
		for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			unsigned long long mib = strtoull(tok, NULL, 10);
			char label[128], cmd[256];
			struct row *r;

			snprintf(label, sizeof(label), "background + attach %llu MiB", mib);
			snprintf(cmd, sizeof(cmd),
				 "/bin/sh\x1f-c\x1fread x; exec head -c %llu /dev/zero", mib << 20);
			r = add_row(&B, ROW_BG_ATTACH, label);
			set_argv(r, words(cmd));
			r->bytes = mib << 20;
			snprintf(label, sizeof(label), "api run head -c %llu MiB", mib);
			snprintf(cmd, sizeof(cmd), "/usr/bin/head -c %llu /dev/zero", mib << 20);
			r = add_row(&B, ROW_API_RUN_SINK, label);
			set_argv(r, words(cmd));
			r->bytes = mib << 20;
		}
		return run_stream(&B, n, warmup, out);
	}
	usage();
	return 2;
}
