/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The agent toolkit: bash, read_file, write_file, edit_file (tool-set version 1) and
 * find, grep, bash_output, bash_stop, bash_list, send_file (version 2, the default), on
 * one connected sandbox, through the backend interface only: every tool behaves the same
 * on every backend.
 *
 * Argument names are a contract (agents are prompted with them): unknown arguments and
 * arguments of the wrong type are tool errors. Paths are relative to the workspace (the
 * user's home in the sandbox, /home/user); `..`, absolute paths outside it and symlinks
 * that leave it are refused. Protected paths (basename patterns) may be read but never
 * written by any tool.
 *
 * A tool's outcome is a struct ts_tool_result: the text an agent reads and a structured
 * JSON object; is_error marks a tool error (bad arguments, a missing file, a stale edit,
 * a protected path...), whose text says what to do next. A call returns -errno only when
 * the machinery failed (the sandbox is gone or does not answer): the runner then rebuilds
 * or reconnects the sandbox.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "backend.h"
#include "error.h"

struct ts_toolbox;

#define TS_TOOLS_VERSION_MAX 2 /* the newest tool-set version */

/* What the file tools remember between calls: the content hash of a file as last read or
 * written (get: 0 with hash, -ENOENT when never). NULL get: kept in the toolbox's memory. */
struct ts_tool_memory {
	int (*get)(void *userdata, const char *path, char *hash, size_t len, struct ts_error *err);
	int (*set)(void *userdata, const char *path, const char *hash, struct ts_error *err);
	void *userdata;
};

struct ts_toolbox_opts {
	struct ts_sb *sb;      /* borrowed; ts_toolbox_set_sandbox swaps it */
	unsigned version;      /* tool-set version: 1 or 2 */
	const char *workspace; /* absolute, inside the sandbox; NULL: /home/user */
	const char *user;      /* NULL: the sandbox's default user */
	char *const
		*protected_patterns; /* every pattern (the runner: its policies and the agent's) */
	size_t n_protected;
	const struct ts_kv *envs; /* the variables bash may see (the allow-list's values) */
	size_t n_envs;
	const char *webhook_url; /* send_file's channel (at most one of the two), or NULL */
	const char *outbox_dir;	 /* a host directory */
	struct ts_tool_memory memory;
};

struct ts_tool_result {
	bool is_error;
	char *text;   /* what the agent reads */
	json_t *data; /* the structured result; on error {"error": CODE, "message": TEXT} */
};
void ts_tool_result_clear(struct ts_tool_result *r);
/* The result as one JSON object {"is_error", "text", "data"} (what the event log keeps),
 * and back. */
json_t *ts_tool_result_to_json(const struct ts_tool_result *r);
int ts_tool_result_from_json(const json_t *j, struct ts_tool_result *r, struct ts_error *err);

int ts_toolbox_new(const struct ts_toolbox_opts *o, struct ts_toolbox **ret, struct ts_error *err);
void ts_toolbox_free(struct ts_toolbox *t);
static inline void ts_toolbox_freep(struct ts_toolbox **t)
{
	ts_toolbox_free(*t);
}
/* The sandbox was rebuilt or reconnected: calls go to sb from now on (borrowed). */
void ts_toolbox_set_sandbox(struct ts_toolbox *t, struct ts_sb *sb);

/* Is name a tool of version v? */
bool ts_tool_known(unsigned version, const char *name);
/* Does the tool change files (gated by `approval: {write: always}`)? bash is not: it is
 * gated by `approval: {bash: ...}`. */
bool ts_tool_writes(const char *name);
/* [{"name", "description", "inputSchema"}, ...] of version v (new reference). */
json_t *ts_toolbox_schemas(unsigned version);

/*
 * Call tool name with args (a JSON object; borrowed). 0 with *res filled (a tool error
 * included); -errno when the sandbox could not be reached (err says why; ts_be_code(err)
 * is TS_BE_NOT_FOUND or TS_BE_UNAVAILABLE when it is gone or stopped).
 */
int ts_toolbox_call(struct ts_toolbox *t, const char *name, json_t *args,
		    struct ts_tool_result *res, struct ts_error *err);
