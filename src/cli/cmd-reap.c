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

#include <jansson.h>

#include "cleanup.h"
#include "cli.h"
#include "commands.h"
#include "runner.h"
#include "util.h"

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

static bool stop_early(void)
{
	return quit;
}

struct sweep {
	bool dry_run;
	json_t *actions; /* --json */
};

static void on_action(void *userdata, const struct ts_reap_action *a)
{
	struct sweep *w = userdata;

	if (w->actions) {
		json_t *j = json_object();

		json_object_set_new(j, "id", json_string(a->id));
		json_object_set_new(j, "name", a->name[0] ? json_string(a->name) : json_null());
		json_object_set_new(j, "action", json_string(w->dry_run ? "would-stop" : "stop"));
		json_object_set_new(j, "reason", json_string(a->reason));
		json_object_set_new(j, "detail", json_string(a->detail));
		json_object_set_new(j, "ttl_ms", json_integer(a->ttl_ms));
		if (!strcmp(a->reason, "idle"))
			json_object_set_new(j, "idle_ms", json_integer(a->amount_ms));
		if (!strcmp(a->reason, "absolute"))
			json_object_set_new(j, "age_ms", json_integer(a->amount_ms));
		if (!strcmp(a->reason, "owner"))
			json_object_set_new(j, "owner_pid", json_integer(a->owner_pid));
		json_object_set_new(j, "ok", json_boolean(w->dry_run || a->stopped));
		if (a->err)
			json_object_set_new(j, "error", json_string(a->err->msg));
		json_array_append_new(w->actions, j);
		return;
	}
	if (a->err)
		ts_cli_error("reap", a->err);
	else if (w->dry_run)
		printf("would stop %s (%s)\n", a->id, a->detail);
	else
		printf("stopped %s (%s)\n", a->id, a->detail);
	fflush(stdout);
}

/* One sweep over every sandbox. Returns the number of failures. */
static int sweep(bool dry_run, bool json)
{
	_cleanup_(ts_backend_freep) struct ts_backend *b = NULL;
	struct sweep w = { .dry_run = dry_run, .actions = json ? json_array() : NULL };
	struct ts_error err = { 0 };
	unsigned failed = 0, run_failed = 0;

	/* a backend per sweep: no file stays open between sweeps, and a replaced or
	 * repaired state.db is picked up */
	if (ts_cli_backend("reap", &b) < 0 ||
	    ts_backend_reap(b, dry_run, stop_early, on_action, &w, &failed, &err) < 0) {
		if (err.code)
			ts_cli_error("reap", &err);
		json_decref(w.actions);
		return 1;
	}
	/* then the agent runs' sandboxes: finished runs and orphans (runner.h) */
	if (ts_runner_reap_default(b, dry_run, on_action, &w, &run_failed, &err) < 0) {
		ts_cli_error("reap", &err);
		failed++;
	}
	failed += run_failed;
	if (ts_backend_warning(b)[0])
		fprintf(stderr, "toren-sandbox reap: warning: %s\n", ts_backend_warning(b));
	if (json && ts_cli_print_json(w.actions, true) < 0)
		failed++;
	json_decref(w.actions);
	return (int)failed;
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
	unsigned long long loop_ms = 0;
	sigset_t block, old;
	bool dry_run = false, json = false;
	int c;

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

	if (!loop_ms)
		return sweep(dry_run, json) ? 1 : 0;

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

		sweep(dry_run, json);
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
