/* SPDX-License-Identifier: Apache-2.0 */
/* read_file: a text file of the workspace, a window of its lines, tagged (version 2). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "tools-internal.h"

#define READ_LIMIT_DEFAULT 2000
#define READ_LIMIT_MAX 100000
#define READ_LINE_MAX 2000 /* bytes of one line shown; its tag covers the whole line */

static int read_file(struct ts_toolbox *t, json_t *args, struct ts_tool_result *res,
		     struct ts_error *err)
{
	struct ts_error scratch = { 0 };
	const char *path;
	long long offset, limit;
	_cleanup_free_ char *abs = NULL, *rel = NULL;
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	char hash[33];
	int r;

	if (!err)
		err = &scratch;
	if (ts_tool_arg_str(args, "path", true, &path, res) ||
	    ts_tool_arg_int(args, "offset", 1, 1LL << 40, 1, &offset, res) ||
	    ts_tool_arg_int(args, "limit", 1, READ_LIMIT_MAX, READ_LIMIT_DEFAULT, &limit, res))
		return 0;
	r = ts_ws_resolve(t, path, 0, &abs, &rel, res, err);
	if (r != 0)
		return r < 0 ? r : 0;
	r = ts_file_read(t->sb, abs, t->user, &buf, &len, TS_TOOL_FILE_MAX, err);
	if (r < 0)
		return ts_ws_fail(t, r, "read_file", rel, res, err);
	if (ts_text_binary(buf, len))
		return ts_tool_fail(
			res, "binary",
			"`%s` is a binary file (%zu bytes: it holds NUL bytes or is not "
			"UTF-8 text); read_file shows text only: inspect it with bash "
			"(`file`, `xxd | head`)",
			rel, len);
	ts_content_hash(buf, len, hash);
	r = ts_toolbox_seen_set(t, rel, hash, err);
	if (r < 0)
		return r;

	const char *s = (const char *)buf, *end = s + len;
	size_t total = 0;
	for (const char *q = s; q < end; total++) {
		const char *nl = memchr(q, '\n', (size_t)(end - q));
		q = nl ? nl + 1 : end;
	}
	json_t *data = json_pack("{s:s, s:I, s:I, s:s}", "path", rel, "lines", (json_int_t)total,
				 "size", (json_int_t)len, "hash", hash);
	if (!data)
		return ts_err(err, -ENOMEM, "out of memory");
	if (total == 0) {
		json_object_set_new(data, "start", json_integer(0));
		json_object_set_new(data, "end", json_integer(0));
		json_object_set_new(data, "more", json_false());
		return ts_tool_ok(res, data, "`%s` is empty (0 lines)", rel);
	}
	if ((size_t)offset > total) {
		json_decref(data);
		return ts_tool_fail(res, "invalid_argument",
				    "offset %lld is past the end of `%s`, which has %zu line%s; "
				    "give an offset from 1 to %zu",
				    offset, rel, total, total == 1 ? "" : "s", total);
	}

	_cleanup_free_ char *text = NULL;
	size_t text_len = 0, n = 0, last = 0, cut = 0, bad_lines = 0;
	_cleanup_fclose_ FILE *f = open_memstream(&text, &text_len);
	if (!f) {
		json_decref(data);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	for (const char *q = s; q < end && n < (size_t)offset - 1 + (size_t)limit;) {
		const char *nl = memchr(q, '\n', (size_t)(end - q));
		size_t l = (size_t)((nl ? nl : end) - q);

		n++;
		if (n >= (size_t)offset) {
			/* the result stays within what a tool result may carry: the rest is
			 * there to read on with offset */
			if (n > (size_t)offset && ftello(f) > (off_t)(TS_TOOL_TEXT_MAX - 16384))
				break;
			size_t bad = t->version >= 2 ? ts_linetag_print(f, n, q, l, READ_LINE_MAX)
						     : ts_text_print(f, q, l, READ_LINE_MAX);
			if (t->version < 2)
				fputc('\n', f);
			bad_lines += bad > 0;
			cut += l > READ_LINE_MAX;
			last = n;
		}
		q = nl ? nl + 1 : end;
	}
	bool more = last < total;
	json_object_set_new(data, "start", json_integer(offset));
	json_object_set_new(data, "end", json_integer((json_int_t)last));
	json_object_set_new(data, "more", json_boolean(more));
	if (more)
		json_object_set_new(data, "next_offset", json_integer((json_int_t)last + 1));
	if (cut)
		fprintf(f, "[%zu line%s longer than %d bytes cut (marked)%s]\n", cut,
			cut == 1 ? "" : "s", READ_LINE_MAX,
			t->version >= 2 ? "; their tags cover the whole line" : "");
	if (bad_lines)
		fprintf(f, "[%zu line%s hold bytes that are not UTF-8, shown as U+FFFD; %s]\n",
			bad_lines, bad_lines == 1 ? "" : "s",
			t->version >= 2 ? "edit such lines by their tags"
					: "old_string cannot match those bytes");
	if (more)
		fprintf(f, "[lines %lld-%zu of %zu; read on with offset %zu]\n", offset, last,
			total, last + 1);
	else if (t->version >= 2)
		fprintf(f, "[lines %lld-%zu of %zu: end of file]\n", offset, last, total);
	if (fclose(f) != 0) {
		f = NULL;
		json_decref(data);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	f = NULL;
	return ts_tool_ok_text(res, data, TAKE_PTR(text));
}

const struct ts_tool_def ts_tool_read_file = {
	.name = "read_file",
	.since = 1,
	.writes = false,
	.description =
		"Read a text file of the workspace. Version 2 shows each line as `N:tag|text`: N "
		"is the 1-based line number and tag a 3-character hash of the line's content; "
		"edit_file takes these `N:tag` references to address lines (copy them exactly). "
		"Shows at most `limit` lines (default 2000) from line `offset` (default 1), and "
		"about 240 KiB of text; the last line says which lines were shown, of how many, "
		"and the offset to read on from. Lines longer than 2000 bytes are cut with a "
		"marker. Binary files (NUL bytes, or not UTF-8) and files over 16 MiB are "
		"refused: use bash for them. Paths are relative to the workspace (/home/user); "
		"paths leading out of it are refused. Protected files (.env, keys, credentials) "
		"can be read.",
	.schema = "{\"type\":\"object\",\"properties\":{"
		  "\"path\":{\"type\":\"string\",\"description\":\"The file, relative to the "
		  "workspace (an absolute path must be inside it)\"},"
		  "\"offset\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"The first "
		  "line to show, 1-based (default 1)\"},"
		  "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100000,"
		  "\"description\":\"How many lines to show at most (default 2000)\"}},"
		  "\"required\":[\"path\"],\"additionalProperties\":false}",
	.fn = read_file,
};
