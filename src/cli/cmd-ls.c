/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox ls [--json] [--label KEY=VALUE]...: every sandbox, state checked live. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "cli.h"
#include "commands.h"
#include "sbstatus.h"
#include "store.h"
#include "util.h"

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

/* A table cell: what a path or label holds is the user's, made safe for a terminal. */
static char *cell(const char *s)
{
	char *c = strdup(s ? s : "-");

	if (c)
		ts_sanitize_text(c);
	return c;
}

static char *labels_cell(const struct ts_sb_info *i)
{
	char *out = NULL, *c;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	for (size_t k = 0; k < i->n_metadata; k++)
		fprintf(f, "%s%s", k ? "," : "", i->metadata[k]);
	fclose(f);
	c = cell(out && out[0] ? out : "-");
	free(out);
	return c;
}

static void row_cells(const struct ts_sb_info *i, long long now, char *cells[N_COLS])
{
	char buf[64], ttl[64];
	bool running = i->state != TS_SB_STOPPED;

	cells[COL_ID] = strdup(i->id);
	cells[COL_NAME] = cell(i->name[0] ? i->name : "-");
	cells[COL_STATE] = strdup(i->state == TS_SB_PAUSED ? "paused"
				  : running		   ? "running"
							   : "stopped");
	ts_fmt_duration(buf, sizeof(buf), now - i->created_ms);
	strcat(buf, " ago");
	cells[COL_CREATED] = strdup(buf);
	if (running)
		ts_fmt_duration(buf, sizeof(buf), (long long)i->idle_ms);
	else
		snprintf(buf, sizeof(buf), "-");
	cells[COL_IDLE] = strdup(buf);
	if (i->timeout_ms > 0) {
		ts_fmt_duration(ttl, sizeof(ttl), i->timeout_ms);
		if (i->timeout_absolute)
			strcat(ttl, " abs");
	} else {
		snprintf(ttl, sizeof(ttl), "none");
	}
	cells[COL_TTL] = strdup(ttl);
	cells[COL_WS] = cell(i->workspace);
	cells[COL_LABELS] = labels_cell(i);
}

/* Every page of the listing. */
static int list_all(struct ts_backend *b, const struct ts_sb_list_opts *base,
		    struct ts_sb_info **ret, size_t *n, struct ts_error *err)
{
	struct ts_sb_list_opts o = *base;
	char *token = NULL;

	*ret = NULL;
	*n = 0;
	for (;;) {
		struct ts_sb_info *page, *all;
		size_t np;
		char *next = NULL;
		int r;

		o.next_token = token;
		r = ts_sb_list(b, &o, &page, &np, &next, err);
		free(token);
		token = next;
		if (r < 0) {
			free(token);
			return r;
		}
		all = realloc(*ret, (*n + np + 1) * sizeof(*all));
		if (!all) {
			ts_sb_infos_free(page, np);
			free(token);
			return ts_err(err, -ENOMEM, "out of memory");
		}
		memcpy(all + *n, page, np * sizeof(*all));
		free(page);
		*ret = all;
		*n += np;
		if (!token)
			return 0;
	}
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
	_cleanup_(ts_backend_freep) struct ts_backend *b = NULL;
	struct ts_sb_info *infos = NULL;
	struct ts_error err = { 0 };
	static char keys[MAX_LABELS][128];
	struct ts_kv filters[MAX_LABELS];
	struct ts_sb_list_opts o = { .live = true };
	char *(*cells)[N_COLS] = NULL;
	size_t n = 0, width[N_COLS];
	bool json = false;
	long long now;
	json_t *arr = NULL;
	int c, status = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case O_JSON:
			json = true;
			break;
		case O_LABEL:
			if (!ts_cli_label_ok("ls", optarg))
				return 2;
			if (o.n_metadata == MAX_LABELS) {
				fprintf(stderr, "toren-sandbox ls: at most %d --label\n",
					MAX_LABELS);
				return 2;
			}
			snprintf(keys[o.n_metadata], sizeof(keys[0]), "%.*s",
				 (int)(strchr(optarg, '=') - optarg), optarg);
			filters[o.n_metadata].key = keys[o.n_metadata];
			filters[o.n_metadata++].value = strchr(optarg, '=') + 1;
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
	o.metadata = filters;
	if (ts_cli_backend("ls", &b) < 0)
		return 1;
	if (list_all(b, &o, &infos, &n, &err) < 0) {
		ts_cli_error("ls", &err);
		return 1;
	}
	if (ts_backend_warning(b)[0])
		fprintf(stderr, "toren-sandbox ls: warning: %s\n", ts_backend_warning(b));

	now = ts_realtime_ms();
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
	/* oldest first: the backend lists newest first */
	for (size_t i = 0; i < n; i++) {
		const struct ts_sb_info *in = &infos[n - 1 - i];

		if (json) {
			json_t *j = in->details ? json_loads(in->details, 0, NULL) : NULL;

			json_array_append_new(arr, j ? j : json_object());
			continue;
		}
		row_cells(in, now, cells[i + 1]);
	}
	if (json) {
		status = ts_cli_print_json(arr, false) < 0 ? 1 : 0;
		goto out;
	}
	for (size_t i = 0; i <= n; i++)
		for (size_t k = 0; k < N_COLS; k++)
			if (cells[i][k] && strlen(cells[i][k]) > width[k])
				width[k] = strlen(cells[i][k]);
	for (size_t i = 0; i <= n; i++)
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
		for (size_t i = 0; i <= n; i++)
			for (size_t k = 0; k < N_COLS; k++)
				free(cells[i][k]);
	free(cells);
	json_decref(arr);
	ts_sb_infos_free(infos, n);
	return status;
}
