/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox ps [--json] ID: the processes started through the runtime. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "backend.h"
#include "cli.h"
#include "commands.h"
#include "util.h"

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 125;
}

/* argv joined, made safe for a terminal (it comes from inside). */
static void command_line(char **argv, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (char **a = argv; a && *a && used < len; a++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? " " : "", *a);
	ts_sanitize_text(buf);
}

static json_t *strv_json(char **v)
{
	json_t *a = json_array();

	for (char **p = v; p && *p; p++)
		json_array_append_new(a, json_string(*p));
	return a;
}

int ts_subcmd_ps(int argc, char **argv)
{
	struct ts_backend *b = NULL;
	struct ts_sb *sb = NULL;
	struct ts_error err = { 0 };
	struct ts_proc_entry *list = NULL;
	const char *ref = NULL;
	bool json = false;
	size_t n = 0;
	int code = 0, r;

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
	if (ts_cli_backend("ps", &b) < 0)
		return 1;
	r = ts_sb_lookup(b, ref, &sb, &err);
	if (r == 0)
		r = ts_cmd_list(sb, &list, &n, &err);
	if (r < 0) {
		if (r == -ENOTCONN)
			fprintf(stderr, "toren-sandbox ps: sandbox `%s` is stopped\n", ref);
		else
			ts_cli_error("ps", &err);
		code = 1;
		goto out;
	}
	if (json) {
		json_t *arr = json_array();

		for (size_t i = 0; i < n; i++) {
			char cmd[4096];
			json_t *o;

			command_line(list[i].argv, cmd, sizeof(cmd));
			o = json_pack("{s:I, s:i, s:s, s:I, s:I, s:s, s:b, s:b, s:s}", "id",
				      (json_int_t)list[i].proc, "pid", (int)list[i].pid, "state",
				      list[i].running ? "running" : "exited", "started_ms",
				      (json_int_t)list[i].started_ms, "ended_ms",
				      (json_int_t)list[i].ended_ms, "command", cmd, "background",
				      (int)list[i].background, "pty", (int)list[i].pty, "user",
				      list[i].user ? list[i].user : "?");
			json_object_set_new(o, "args", strv_json(list[i].argv));
			json_object_set_new(o, "envs", strv_json(list[i].envs));
			json_object_set_new(o, "cwd",
					    list[i].cwd ? json_string(list[i].cwd) : json_null());
			json_object_set_new(o, "tag",
					    list[i].tag ? json_string(list[i].tag) : json_null());
			if (!list[i].running) {
				json_object_set_new(o, "exit_code",
						    json_integer(exit_code(list[i].status)));
				json_object_set_new(o, "timed_out",
						    json_boolean(list[i].timed_out));
			}
			json_array_append_new(arr, o);
		}
		json_dumpf(arr, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(arr);
	} else {
		printf("%-6s %-7s %-5s %-8s %-5s %-12s %-16s %s\n", "PROC", "PID", "USER", "STATE",
		       "EXIT", "TAG", "CWD", "COMMAND");
		for (size_t i = 0; i < n; i++) {
			char exitbuf[16] = "-", cmd[4096], tag[64], cwd[256];

			if (!list[i].running)
				snprintf(exitbuf, sizeof(exitbuf), "%d",
					 list[i].timed_out ? 124 : exit_code(list[i].status));
			command_line(list[i].argv, cmd, sizeof(cmd));
			snprintf(tag, sizeof(tag), "%s", list[i].tag ? list[i].tag : "-");
			snprintf(cwd, sizeof(cwd), "%s", list[i].cwd ? list[i].cwd : "-");
			ts_sanitize_text(tag);
			ts_sanitize_text(cwd);
			printf("%-6llu %-7d %-5s %-8s %-5s %-12s %-16s %s\n",
			       (unsigned long long)list[i].proc, (int)list[i].pid,
			       list[i].user ? list[i].user : "?",
			       list[i].running ? "running" : "exited", exitbuf, tag, cwd, cmd);
		}
	}
out:
	ts_proc_entries_free(list, n);
	ts_sb_close(sb);
	ts_backend_free(b);
	return code;
}
