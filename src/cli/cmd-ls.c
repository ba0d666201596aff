/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox ls [--json] [--label KEY=VALUE]...: every durable sandbox, state checked
 * live. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "cli.h"
#include "commands.h"
#include "sandbox.h"

#define MAX_LABELS 64

enum {
	COL_ID,
	COL_NAME,
	COL_STATE,
	COL_CREATED,
	COL_IDLE,
	COL_TTL,
	COL_WS,
	COL_LABELS,
	N_COLS
};

static void usage(FILE *f)
{
	fputs("usage: toren-sandbox ls [--json] [--label KEY=VALUE]...\n"
	      "\n"
	      "      --json             a JSON array with every field of every sandbox\n"
	      "      --label KEY=VALUE  only sandboxes with this label; repeatable (all must match)\n"
	      "  -h, --help             show this help\n",
	      f);
}

/* A table cell: what a path or label holds is the user's, so control characters are
 * shown as `?` and never reach the terminal. */
static char *cell(const char *s)
{
	char *c = strdup(s);

	for (char *p = c; p && *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return c;
}

static char *labels_cell(const char *labels)
{
	json_t *j = json_loads(labels ? labels : "{}", 0, NULL), *v;
	const char *k;
	char *out = NULL, *c;
	size_t len = 0;
	bool first = true;
	FILE *f = open_memstream(&out, &len);

	if (!f) {
		json_decref(j);
		return NULL;
	}
	json_object_foreach(j, k, v) {
		fprintf(f, "%s%s=%s", first ? "" : ",", k, json_string_value(v));
		first = false;
	}
	fclose(f);
	json_decref(j);
	if (!out || !out[0]) {
		free(out);
		return strdup("-");
	}
	c = cell(out);
	free(out);
	return c;
}

static void row_cells(const struct ts_sandbox_rec *rec, const struct ts_admin_live *live,
		      long long now, char *cells[N_COLS])
{
	char buf[64], ttl[64];

	cells[COL_ID] = strdup(rec->id);
	cells[COL_NAME] = strdup(rec->name[0] ? rec->name : "-");
	cells[COL_STATE] = strdup(live->running ? "running" : "stopped");
	ts_admin_fmt_duration(buf, sizeof(buf), now - rec->created_ms);
	strcat(buf, " ago");
	cells[COL_CREATED] = strdup(buf);
	if (live->running)
		ts_admin_fmt_duration(buf, sizeof(buf), ts_admin_idle_ms(rec, live, now));
	else
		snprintf(buf, sizeof(buf), "-");
	cells[COL_IDLE] = strdup(buf);
	if (rec->ttl_ms > 0) {
		ts_admin_fmt_duration(ttl, sizeof(ttl), rec->ttl_ms);
		if (rec->ttl_absolute)
			strcat(ttl, " abs");
	} else {
		snprintf(ttl, sizeof(ttl), "none");
	}
	cells[COL_TTL] = strdup(ttl);
	cells[COL_WS] = cell(rec->workspace);
	cells[COL_LABELS] = labels_cell(rec->labels);
}

int ts_subcmd_ls(int argc, char **argv)
{
	enum {
		O_JSON = 256,
		O_LABEL
	};
	static const struct option longopts[] = { { "json", no_argument, NULL, O_JSON },
						  { "label", required_argument, NULL, O_LABEL },
						  { "help", no_argument, NULL, 'h' },
						  {} };
	static const char *const heads[N_COLS] = { "ID",   "NAME", "STATE",	"CREATED",
						   "IDLE", "TTL",  "WORKSPACE", "LABELS" };
	struct ts_paths paths;
	struct ts_store *st = NULL;
	struct ts_sandbox_rec *recs = NULL;
	struct ts_error err = { 0 };
	char *filters[MAX_LABELS];
	char *(*cells)[N_COLS] = NULL;
	size_t n_filters = 0, n = 0, n_shown = 0, width[N_COLS];
	bool json = false;
	long long now;
	json_t *arr = NULL;
	int c, r, status = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case O_JSON:
			json = true;
			break;
		case O_LABEL:
			if (!ts_cli_label_ok("ls", optarg))
				return 2;
			if (n_filters == MAX_LABELS) {
				fprintf(stderr, "toren-sandbox ls: at most %d --label\n",
					MAX_LABELS);
				return 2;
			}
			filters[n_filters++] = optarg;
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
		fprintf(stderr, "toren-sandbox ls: unexpected argument `%s`\n", argv[optind]);
		return 2;
	}

	if (ts_admin_open("ls", &paths, &st) < 0)
		return 1;
	r = ts_store_list(st, &recs, &n, &err);
	if (r < 0) {
		ts_cli_error("ls", &err);
		goto out;
	}
	if (ts_store_warning(st)[0])
		fprintf(stderr, "toren-sandbox ls: warning: %s\n", ts_store_warning(st));

	now = ts_store_now_ms();
	if (json)
		arr = json_array();
	else
		cells = calloc(n + 1, sizeof(*cells));
	if (json ? !arr : !cells) {
		fputs("toren-sandbox ls: out of memory\n", stderr);
		goto out;
	}
	for (size_t k = 0; k < N_COLS; k++) {
		if (!json)
			cells[0][k] = strdup(heads[k]);
		width[k] = strlen(heads[k]);
	}
	for (size_t i = 0; i < n; i++) {
		struct ts_admin_live live;

		if (!ts_admin_labels_match(recs[i].labels, filters, n_filters))
			continue;
		ts_admin_probe(&recs[i], true, &live);
		now = ts_store_now_ms();
		if (json) {
			json_array_append_new(arr, ts_admin_rec_json(&recs[i], &live, now));
			continue;
		}
		n_shown++;
		row_cells(&recs[i], &live, now, cells[n_shown]);
	}
	if (json) {
		status = ts_admin_print_json(arr, false) < 0 ? 1 : 0;
		goto out;
	}
	for (size_t i = 0; i <= n_shown; i++)
		for (size_t k = 0; k < N_COLS; k++)
			if (cells[i][k] && strlen(cells[i][k]) > width[k])
				width[k] = strlen(cells[i][k]);
	for (size_t i = 0; i <= n_shown; i++)
		for (size_t k = 0; k < N_COLS; k++) {
			const char *s = cells[i][k] ? cells[i][k] : "?";

			if (k + 1 < N_COLS)
				printf("%-*s  ", (int)width[k], s);
			else
				printf("%s\n", s);
		}
	status = fflush(stdout) == EOF ? 1 : 0;
out:
	if (cells)
		for (size_t i = 0; i <= n_shown; i++)
			for (size_t k = 0; k < N_COLS; k++)
				free(cells[i][k]);
	free(cells);
	json_decref(arr);
	ts_sandbox_recs_free(recs, n);
	ts_store_close(st);
	return status;
}
