/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toren-sandbox logs [-f] ID PROC: the output of a background process, as the backend
 * keeps it (local: $ROOT/<id>/logs/PROC.log, also after the client that started it went
 * away, and after the sandbox stopped). -f follows it until the process has exited.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "cli.h"
#include "commands.h"
#include "util.h"

enum proc_state {
	PROC_RUNNING,
	PROC_ENDED,
	SANDBOX_GONE
};

static enum proc_state proc_state(struct ts_sb *sb, unsigned long long proc)
{
	struct ts_error err;
	struct ts_proc_entry *list = NULL;
	enum proc_state state = PROC_ENDED;
	size_t n = 0;

	if (ts_cmd_list(sb, &list, &n, &err) < 0)
		return SANDBOX_GONE;
	for (size_t i = 0; i < n; i++)
		if (list[i].proc == proc && list[i].running)
			state = PROC_RUNNING;
	ts_proc_entries_free(list, n);
	return state;
}

/* Print what the log holds from *off on. */
static int copy_out(struct ts_sb *sb, unsigned long long proc, uint64_t *off, struct ts_error *err)
{
	char buf[65536];

	for (;;) {
		size_t got;
		int r = ts_cmd_log_read(sb, proc, *off, buf, sizeof(buf), &got, err);

		if (r < 0)
			return r;
		if (got == 0)
			return 0;
		if (ts_write_all(STDOUT_FILENO, buf, got) < 0)
			return -EPIPE;
		*off += got;
	}
}

int ts_subcmd_logs(int argc, char **argv)
{
	struct ts_backend *b = NULL;
	struct ts_sb *sb = NULL;
	struct ts_error err = { 0 };
	const char *args[2] = { 0 };
	unsigned long long proc;
	bool follow = false;
	size_t n_args = 0;
	uint64_t off = 0;
	int code = 0, r;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--follow"))
			follow = true;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			puts("usage: toren-sandbox logs [-f] ID PROC\n\n"
			     "  -f, --follow  keep printing until the process has exited\n"
			     "  -h, --help    show this help");
			return 0;
		} else if (n_args < 2 && argv[i][0] != '-')
			args[n_args++] = argv[i];
		else {
			fprintf(stderr, "toren-sandbox logs: unexpected `%s`\n", argv[i]);
			return 2;
		}
	}
	if (n_args != 2) {
		fprintf(stderr, "usage: toren-sandbox logs [-f] ID PROC\n");
		return 2;
	}
	if (ts_parse_ull(args[1], &proc) < 0 || proc == 0) {
		fprintf(stderr, "toren-sandbox logs: bad process id `%s`\n", args[1]);
		return 2;
	}
	if (ts_cli_backend("logs", &b) < 0)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	r = ts_sb_lookup(b, args[0], &sb, &err);
	while (r == 0) {
		enum proc_state ps;

		r = copy_out(sb, proc, &off, &err);
		if (r < 0 || !follow)
			break;
		ps = proc_state(sb, proc);
		if (ps != PROC_RUNNING) {
			r = copy_out(sb, proc, &off, &err); /* what came before the exit */
			if (ps == SANDBOX_GONE) {
				fprintf(stderr,
					"toren-sandbox logs: sandbox `%s` stopped while following "
					"process %llu\n",
					ts_sb_id(sb), proc);
				code = 1;
			}
			break;
		}
		usleep(100000);
	}
	if (r < 0 && r != -EPIPE) {
		ts_cli_error("logs", &err);
		code = 1;
	}
	ts_sb_close(sb);
	ts_backend_free(b);
	return code;
}
