/* SPDX-License-Identifier: Apache-2.0 */
/* write_file: create or replace a whole file of the workspace, atomically. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "tools-internal.h"

static int write_file(struct ts_toolbox *t, json_t *args, struct ts_tool_result *res,
		      struct ts_error *err)
{
	struct ts_error scratch = { 0 };
	const char *path, *content;
	_cleanup_free_ char *abs = NULL, *rel = NULL;
	char hash[33];
	bool created;
	int r;

	if (!err)
		err = &scratch;
	if (ts_tool_arg_str(args, "path", true, &path, res) ||
	    ts_tool_arg_str(args, "content", true, &content, res))
		return 0;
	size_t len = strlen(content);
	if (len > TS_TOOL_FILE_MAX)
		return ts_tool_fail(
			res, "too_large",
			"the content is %zu bytes, more than write_file takes (%u MiB); "
			"write it in parts with bash, or generate it in the sandbox",
			len, TS_TOOL_FILE_MAX >> 20);
	r = ts_ws_resolve(t, path, TS_WS_WRITE, &abs, &rel, res, err);
	if (r != 0)
		return r < 0 ? r : 0;
	{
		_cleanup_(ts_be_entry_clear) struct ts_be_entry e = { 0 };

		r = ts_file_stat(t->sb, abs, t->user, &e, err);
		if (r == 0 && e.type == TS_BE_DIR)
			return ts_tool_fail(res, "is_directory",
					    "`%s` is a directory; write_file writes a file: name a "
					    "file in it",
					    rel);
		if (r < 0 && err->code != ENOENT)
			return ts_ws_fail(t, r, "write_file", rel, res, err);
		created = r < 0;
		ts_err_clear(err);
	}
	/* the backend writes atomically (the file appears complete or not at all) and
	 * creates missing parent directories; an existing file keeps its mode */
	r = ts_file_write(t->sb, abs, t->user, content, len, -1, err);
	if (r < 0)
		return ts_ws_fail(t, r, "write_file", rel, res, err);
	ts_content_hash(content, len, hash);
	r = ts_toolbox_seen_set(t, rel, hash, err);
	if (r < 0)
		return r;
	size_t lines = 0;
	for (const char *q = content; *q;) {
		const char *nl = strchr(q, '\n');
		q = nl ? nl + 1 : q + strlen(q);
		lines++;
	}
	json_t *data = json_pack("{s:s, s:I, s:I, s:b, s:s}", "path", rel, "bytes", (json_int_t)len,
				 "lines", (json_int_t)lines, "created", created, "hash", hash);
	if (!data)
		return ts_err(err, -ENOMEM, "out of memory");
	return ts_tool_ok(res, data, "%s `%s`: %zu byte%s, %zu line%s written",
			  created ? "created" : "replaced", rel, len, len == 1 ? "" : "s", lines,
			  lines == 1 ? "" : "s");
}

const struct ts_tool_def ts_tool_write_file = {
	.name = "write_file",
	.since = 1,
	.writes = true,
	.description =
		"Create a file of the workspace, or replace its whole content. Missing parent "
		"directories are created; the file is replaced atomically (it never appears half "
		"written) and an existing file keeps its permissions. For a change to part of a "
		"file, use edit_file. At most 16 MiB of UTF-8 text. Paths are relative to the "
		"workspace (/home/user); paths leading out of it are refused, and protected "
		"files (.env, private keys, credential files: any path with a component "
		"matching a protected pattern) are never written.",
	.schema = "{\"type\":\"object\",\"properties\":{"
		  "\"path\":{\"type\":\"string\",\"description\":\"The file, relative to the "
		  "workspace (an absolute path must be inside it)\"},"
		  "\"content\":{\"type\":\"string\",\"description\":\"The file's whole new "
		  "content\"}},"
		  "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}",
	.fn = write_file,
};
