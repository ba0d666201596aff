/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox ps [--json] ID: the processes started through the runtime. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "procs.h"
#include "sandbox.h"

/* The sandbox's two users by name; anything else (an older init: unknown) as `?`. */
static const char *user_name(uint64_t uid)
{
	return uid == 0 ? "root" : uid == 1000 ? "user" : "?";
}

int ts_cmd_ps(int argc, char **argv)
{
	struct ts_store *st;
	struct ts_sandbox_rec rec;
	struct ts_error err = { 0 };
	struct ts_proc_info *list = NULL;
	const char *ref = NULL;
	bool json = false;
	size_t n = 0;
	int conn, code = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			puts("usage: toren-sandbox ps [--json] ID\n\n"
			     "      --json  one JSON array\n"
			     "  -h, --help  show this help");
			return 0;
		} else if (!ref && argv[i][0] != '-')
			ref = argv[i];
		else {
			fprintf(stderr, "toren-sandbox ps: unexpected `%s`\n", argv[i]);
			return 2;
		}
	}
	if (!ref) {
		fprintf(stderr, "usage: toren-sandbox ps [--json] ID\n");
		return 2;
	}
	if (ts_cli_lookup("ps", ref, &st, &rec) < 0)
		return 1;
	if (!ts_sandbox_running(&rec)) {
		fprintf(stderr, "toren-sandbox ps: sandbox `%s` is stopped\n", rec.id);
		code = 1;
		goto out;
	}
	conn = ts_sandbox_connect(&rec, &err);
	if (conn < 0 || ts_procs_list(conn, &list, &n, &err) < 0) {
		ts_cli_error("ps", &err);
		code = 1;
		if (conn >= 0)
			close(conn);
		goto out;
	}
	close(conn);
	if (json) {
		json_t *arr = json_array();

		for (size_t i = 0; i < n; i++) {
			json_t *o = json_pack("{s:I, s:i, s:s, s:I, s:I, s:s, s:b}", "id",
					      (json_int_t)list[i].proc, "pid", (int)list[i].pid,
					      "state", list[i].running ? "running" : "exited",
					      "started_ms", (json_int_t)list[i].started_ms,
					      "ended_ms", (json_int_t)list[i].ended_ms, "command",
					      list[i].command, "background",
					      (int)((list[i].flags & 2) != 0));

			json_object_set_new(o, "user", json_string(user_name(list[i].uid)));
			if (!list[i].running)
				json_object_set_new(
					o, "exit_code",
					json_integer(ts_procs_exit_code(list[i].status)));
			json_array_append_new(arr, o);
		}
		json_dumpf(arr, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(arr);
	} else {
		printf("%-6s %-7s %-5s %-8s %-5s %s\n", "PROC", "PID", "USER", "STATE", "EXIT",
		       "COMMAND");
		for (size_t i = 0; i < n; i++) {
			char exitbuf[16] = "-";

			if (!list[i].running)
				snprintf(exitbuf, sizeof(exitbuf), "%d",
					 ts_procs_exit_code(list[i].status));
			/* the command line comes from inside: no control characters to the tty */
			for (char *c = list[i].command; *c; c++)
				if ((unsigned char)*c < 0x20 || *c == 0x7f)
					*c = '?';
			printf("%-6llu %-7d %-5s %-8s %-5s %s\n", (unsigned long long)list[i].proc,
			       (int)list[i].pid, user_name(list[i].uid),
			       list[i].running ? "running" : "exited", exitbuf, list[i].command);
		}
	}
	free(list);
out:
	ts_sandbox_rec_free(&rec);
	ts_store_close(st);
	return code;
}
