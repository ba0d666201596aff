/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox reap [--dry-run] [--loop SECONDS] [--json]: stop sandboxes past their
 * timeout and those whose owner process is gone. Never deletes anything. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "admin.h"
#include "cli.h"
#include "leftovers.h"
#include "commands.h"
#include "sandbox.h"
#include "util.h"

#define REAP_GRACE_MS 2000

static volatile sig_atomic_t quit;

static void on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

static void usage(FILE *f)
{
	fputs("usage: toren-sandbox reap [--dry-run] [--loop SECONDS] [--json]\n"
	      "\n"
	      "      --dry-run         say what would be stopped, stop nothing\n"
	      "      --loop SECONDS    sweep every SECONDS until SIGTERM or SIGINT\n"
	      "      --json            one JSON array of actions per sweep, on one line\n"
	      "  -h, --help            show this help\n",
	      f);
}

enum reason {
	R_NONE,
	R_IDLE,
	R_ABSOLUTE,
	R_OWNER
};

/* Why rec should stop now, with the numbers for the message. */
static enum reason judge(struct ts_sandbox_rec *rec, long long now, long long *amount,
			 struct ts_admin_live *live)
{
	ts_admin_probe(rec, true, live);
	if (!live->running)
		return R_NONE;
	if (rec->owner_pid > 0 && !ts_proc_alive(rec->owner_pid, rec->owner_start))
		return R_OWNER;
	if (rec->ttl_ms <= 0)
		return R_NONE;
	if (rec->ttl_absolute) {
		*amount = now - rec->created_ms;
		return *amount > rec->ttl_ms ? R_ABSOLUTE : R_NONE;
	}
	/* A client attached (an exec, a followed log) is activity, however long it lasts. */
	if (live->queried && live->attached > 0)
		return R_NONE;
	*amount = ts_admin_idle_ms(rec, live, now);
	return *amount > rec->ttl_ms ? R_IDLE : R_NONE;
}

static void describe(char *buf, size_t len, const struct ts_sandbox_rec *rec, enum reason why,
		     long long amount)
{
	char a[32], t[32];

	ts_admin_fmt_duration(a, sizeof(a), amount);
	ts_admin_fmt_duration(t, sizeof(t), rec->ttl_ms);
	switch (why) {
	case R_IDLE:
		snprintf(buf, len, "idle %s > ttl %s", a, t);
		break;
	case R_ABSOLUTE:
		snprintf(buf, len, "age %s > absolute ttl %s", a, t);
		break;
	case R_OWNER:
		snprintf(buf, len, "owner pid %d exited", (int)rec->owner_pid);
		break;
	default:
		buf[0] = '\0';
	}
}

/* One sweep over every record. Returns the number of failures. */
static int sweep(struct ts_store *st, bool dry_run, bool json)
{
	static const char *const reasons[] = { "", "idle", "absolute", "owner" };
	struct ts_sandbox_rec *recs = NULL;
	struct ts_error err = { 0 };
	json_t *actions = json ? json_array() : NULL;
	size_t n = 0;
	int failed = 0;

	if (ts_store_list(st, &recs, &n, &err) < 0) {
		ts_cli_error("reap", &err);
		json_decref(actions);
		return 1;
	}
	if (ts_store_warning(st)[0])
		fprintf(stderr, "toren-sandbox reap: warning: %s\n", ts_store_warning(st));
	for (size_t i = 0; i < n && !quit; i++) {
		struct ts_admin_live live;
		long long amount = 0, now = ts_store_now_ms();
		enum reason why = judge(&recs[i], now, &amount, &live);
		char text[128];
		bool stopped = false;

		if (why == R_NONE)
			continue;
		describe(text, sizeof(text), &recs[i], why, amount);
		if (!dry_run) {
			err = (struct ts_error){ 0 };
			stopped = ts_sandbox_stop(st, &recs[i], REAP_GRACE_MS, &err) == 0;
			if (!stopped) {
				ts_cli_error("reap", &err);
				failed++;
			}
		}
		if (json) {
			json_t *a = json_object();

			json_object_set_new(a, "id", json_string(recs[i].id));
			json_object_set_new(a, "name",
					    recs[i].name[0] ? json_string(recs[i].name)
							    : json_null());
			json_object_set_new(a, "action",
					    json_string(dry_run ? "would-stop" : "stop"));
			json_object_set_new(a, "reason", json_string(reasons[why]));
			json_object_set_new(a, "detail", json_string(text));
			json_object_set_new(a, "ttl_ms", json_integer(recs[i].ttl_ms));
			if (why == R_IDLE)
				json_object_set_new(a, "idle_ms", json_integer(amount));
			if (why == R_ABSOLUTE)
				json_object_set_new(a, "age_ms", json_integer(amount));
			if (why == R_OWNER)
				json_object_set_new(a, "owner_pid",
						    json_integer(recs[i].owner_pid));
			json_object_set_new(a, "ok", json_boolean(dry_run || stopped));
			if (!dry_run && !stopped)
				json_object_set_new(a, "error", json_string(err.msg));
			json_array_append_new(actions, a);
		} else if (dry_run) {
			printf("would stop %s (%s)\n", recs[i].id, text);
		} else if (stopped) {
			printf("stopped %s (%s)\n", recs[i].id, text);
		}
		fflush(stdout);
	}
	if (json && ts_admin_print_json(actions, true) < 0)
		failed++;
	json_decref(actions);
	ts_sandbox_recs_free(recs, n);
	return failed;
}

int ts_subcmd_reap(int argc, char **argv)
{
	enum {
		O_DRY_RUN = 256,
		O_LOOP,
		O_JSON
	};
	static const struct option longopts[] = { { "dry-run", no_argument, NULL, O_DRY_RUN },
						  { "loop", required_argument, NULL, O_LOOP },
						  { "json", no_argument, NULL, O_JSON },
						  { "help", no_argument, NULL, 'h' },
						  {} };
	struct sigaction sa = { .sa_handler = on_signal };
	struct ts_paths paths;
	struct ts_store *st = NULL;
	unsigned long long loop_ms = 0;
	sigset_t block, old;
	bool dry_run = false, json = false;
	int c, failed;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case O_DRY_RUN:
			dry_run = true;
			break;
		case O_LOOP:
			if (ts_parse_duration_ms(optarg, &loop_ms) < 0 || loop_ms < 1000 ||
			    loop_ms > 86400000ULL * 365) {
				fprintf(stderr,
					"toren-sandbox reap: bad --loop `%s`: want seconds >= 1\n",
					optarg);
				return 2;
			}
			break;
		case O_JSON:
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "toren-sandbox reap: unexpected argument `%s`\n", argv[optind]);
		return 2;
	}

	if (!loop_ms) {
		if (ts_admin_open("reap", &paths, &st) < 0)
			return 1;
		if (!dry_run)
			ts_leftovers_sweep(paths.root);
		failed = sweep(st, dry_run, json);
		ts_store_close(st);
		return failed ? 1 : 0;
	}

	/*
	 * The loop ends on SIGTERM or SIGINT, between two sandboxes or while waiting, never
	 * half-way through a stop. The signals are blocked only around the check-and-wait, so
	 * that ppoll unblocks them atomically and none arriving just before it is lost; the
	 * handler has SA_RESTART so the library calls of a sweep are not interrupted.
	 */
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	for (;;) {
		unsigned long long next = ts_now_ms() + loop_ms;

		/* A store per sweep: no file stays open between sweeps, and a replaced or
		 * repaired state.db is picked up. */
		if (ts_admin_open("reap", &paths, &st) == 0) {
			if (!dry_run)
				ts_leftovers_sweep(paths.root);
			sweep(st, dry_run, json);
			ts_store_close(st);
			st = NULL;
		}
		sigprocmask(SIG_BLOCK, &block, &old);
		while (!quit) {
			unsigned long long now = ts_now_ms();
			struct timespec ts;

			if (now >= next)
				break;
			ts.tv_sec = (time_t)((next - now) / 1000);
			ts.tv_nsec = (long)((next - now) % 1000) * 1000000L;
			if (ppoll(NULL, 0, &ts, &old) < 0 && errno != EINTR)
				break;
		}
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (quit)
			return 0;
	}
}
