/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tool-driver ID: the toolbox on sandbox ID (local backend) without the runner, for the
 * live tests (tests/live/tools-files.py with TS_TOOL_DRIVER). One call per input line,
 * {"tool", "args", "version" (default 2), "run" (remember hashes between such calls, as
 * a run does)}; one output line each: the result {"is_error", "text", "data"} with
 * "exit" 0 or 1 as `toren-sandbox tool` would exit, or {"exit": 2, "error"} when the
 * machinery failed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "policy.h"
#include "toolbox.h"

static int forget_get(void *u, const char *path, char *hash, size_t len, struct ts_error *err)
{
	(void)u, (void)path, (void)hash, (void)len, (void)err;
	return -ENOENT; /* never seen */
}

static int forget_set(void *u, const char *path, const char *hash, struct ts_error *err)
{
	(void)u, (void)path, (void)hash, (void)err;
	return 0;
}

int main(int argc, char **argv)
{
	struct ts_error err = { 0 };
	struct ts_backend *b = NULL;
	struct ts_sb *sb = NULL;
	struct ts_toolbox *tb[3] = { NULL }; /* v1, v2, v2 remembering */
	struct ts_policy pol = { 0 };
	char *line = NULL;
	size_t cap = 0;

	if (argc != 2) {
		fputs("usage: tool-driver ID\n", stderr);
		return 2;
	}
	/* the protected patterns the runner uses: the default policy's */
	if (ts_policy_load(&pol, TS_SOURCE_POLICYDIR "/default.yaml", &err) < 0) {
		fprintf(stderr, "tool-driver: %s\n", err.msg);
		return 2;
	}
	if (ts_backend_open("local", &b, &err) < 0 ||
	    ts_sb_connect(b, argv[1], -1, &sb, &err) < 0) {
		fprintf(stderr, "tool-driver: %s\n", err.msg);
		return 2;
	}
	for (int i = 0; i < 3; i++) {
		struct ts_toolbox_opts o = {
			.sb = sb,
			.version = i == 0 ? 1 : 2,
			.protected_patterns = pol.protected_patterns,
			.n_protected = pol.n_protected,
		};
		if (i < 2)
			o.memory = (struct ts_tool_memory){ forget_get, forget_set, NULL };
		if (ts_toolbox_new(&o, &tb[i], &err) < 0) {
			fprintf(stderr, "tool-driver: %s\n", err.msg);
			return 2;
		}
	}
	while (getline(&line, &cap, stdin) > 0) {
		json_t *req = json_loads(line, 0, NULL), *out;
		const char *tool = json_string_value(json_object_get(req, "tool"));
		json_t *args = json_object_get(req, "args");
		json_int_t v = json_integer_value(json_object_get(req, "version"));
		int k = v == 1 ? 0 : json_is_true(json_object_get(req, "run")) ? 2 : 1;
		struct ts_tool_result res = { 0 };

		ts_err_clear(&err);
		if (!tool || !args) {
			out = json_pack("{s:i, s:s}", "exit", 2, "error", "bad request");
		} else if (ts_toolbox_call(tb[k], tool, args, &res, &err) < 0) {
			out = json_pack("{s:i, s:s, s:s}", "exit", 2, "error", err.msg, "code",
					ts_be_code_name(ts_be_code(&err)));
		} else {
			out = ts_tool_result_to_json(&res);
			json_object_set_new(out, "exit", json_integer(res.is_error ? 1 : 0));
		}
		char *s = out ? json_dumps(out, JSON_COMPACT) : NULL;
		printf("%s\n", s ? s : "{\"exit\":2,\"error\":\"out of memory\"}");
		fflush(stdout);
		free(s);
		json_decref(out);
		json_decref(req);
		ts_tool_result_clear(&res);
	}
	free(line);
	for (int i = 0; i < 3; i++)
		ts_toolbox_free(tb[i]);
	ts_sb_close(sb);
	ts_backend_free(b);
	return 0;
}
