/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One toolkit call on a sandbox of the local backend, with the toolbox's options given
 * directly (a channel for send_file without an agent configuration):
 *
 *   tools-driver [--webhook URL | --outbox DIR] [--version N] SANDBOX TOOL JSON
 *
 * Prints {"is_error", "text", "data"}; exit 0, 1 on a tool error, 2 when the machinery
 * failed. For tests and debugging.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "toolbox.h"

int main(int argc, char **argv)
{
	const char *webhook = NULL, *outbox = NULL;
	unsigned version = 2;
	int i = 1;

	for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
		if (strcmp(argv[i], "--webhook") == 0)
			webhook = argv[i + 1];
		else if (strcmp(argv[i], "--outbox") == 0)
			outbox = argv[i + 1];
		else if (strcmp(argv[i], "--version") == 0)
			version = (unsigned)atoi(argv[i + 1]);
		else
			break;
	}
	if (argc - i != 3) {
		fprintf(stderr, "usage: tools-driver [--webhook URL | --outbox DIR] [--version N] "
				"SANDBOX TOOL JSON\n");
		return 2;
	}
	struct ts_error err = { 0 };
	struct ts_backend *b = NULL;
	struct ts_sb *sb = NULL;
	struct ts_toolbox *t = NULL;
	struct ts_tool_result res = { 0 };
	json_error_t jerr;
	json_t *args = json_loads(argv[i + 2], 0, &jerr);
	int r;

	if (!args) {
		fprintf(stderr, "tools-driver: bad JSON: %s\n", jerr.text);
		return 2;
	}
	r = ts_backend_open("local", &b, &err);
	if (r == 0)
		r = ts_sb_connect(b, argv[i], -1, &sb, &err);
	struct ts_toolbox_opts o = {
		.sb = sb,
		.version = version,
		.protected_patterns = (char *const *)ts_tool_default_protected,
		.webhook_url = webhook,
		.outbox_dir = outbox,
	};
	while (r == 0 && ts_tool_default_protected[o.n_protected])
		o.n_protected++;
	if (r == 0)
		r = ts_toolbox_new(&o, &t, &err);
	if (r == 0)
		r = ts_toolbox_call(t, argv[i + 1], args, &res, &err);
	if (r < 0) {
		fprintf(stderr, "tools-driver: %s\n", err.msg);
	} else {
		json_t *j = ts_tool_result_to_json(&res);
		char *s = j ? json_dumps(j, 0) : NULL;
		printf("%s\n", s ? s : "null");
		free(s);
		json_decref(j);
	}
	int rc = r < 0 ? 2 : res.is_error ? 1 : 0;
	ts_tool_result_clear(&res);
	ts_toolbox_free(t);
	ts_sb_close(sb);
	ts_backend_free(b);
	json_decref(args);
	return rc;
}
