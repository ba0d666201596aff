/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by the toolkit's files (tool-*.c): the toolbox, the tool table, result builders,
 * workspace paths and line tags. Not for use outside src/runner. */
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "toolbox.h"

/* Bounds (documented in toren-sandbox-tools(7)). */
#define TS_TOOL_FILE_MAX (16U << 20)		/* the largest file read_file and edit_file take */
#define TS_TOOL_TEXT_MAX (256U << 10)		/* the largest text a result carries */
#define TS_TOOL_BASH_OUT_MAX (32U << 10)	/* foreground bash: head + tail kept */
#define TS_TOOL_BASH_TIMEOUT_MS (120 * 1000ULL) /* foreground bash's default */
#define TS_TOOL_BASH_TIMEOUT_MAX_MS (3600 * 1000ULL) /* the longest it may ask */
#define TS_TOOL_LIST_MAX 1000			     /* find's and grep's results */
#define TS_TOOL_TAG_LEN 3			     /* hex characters of a line tag */
#define TS_TOOL_SNIFF 8192	    /* the first part of a file that must be UTF-8 (else binary) */
#define TS_TOOL_EXEC_GRACE_MS 15000 /* past its timeout, how long a command may take to end */
#define TS_TOOL_KILL_GRACE_MS 5000  /* after a kill, how long its end may take to come */

struct ts_toolbox {
	struct ts_sb *sb;
	unsigned version;
	char *workspace; /* no trailing slash */
	char *user;	 /* NULL: the default */
	char **protected_patterns;
	size_t n_protected;
	struct ts_kv *envs;
	size_t n_envs;
	char *webhook_url, *outbox_dir;
	struct ts_tool_memory memory;
	json_t *seen;	  /* the in-memory memory: path -> hash */
	uint64_t bg_next; /* background processes started by this toolbox */
};

typedef int (*ts_tool_fn)(struct ts_toolbox *t, json_t *args, struct ts_tool_result *res,
			  struct ts_error *err);

struct ts_tool_def {
	const char *name;
	unsigned since; /* the first tool-set version that has it */
	bool writes;
	const char *description;
	const char *schema; /* the JSON Schema of its arguments (an object) */
	ts_tool_fn fn;
};

/* One per tool file. */
extern const struct ts_tool_def ts_tool_bash, ts_tool_bash_output, ts_tool_bash_stop,
	ts_tool_bash_list;				    /* tool-bash.c */
extern const struct ts_tool_def ts_tool_read_file;	    /* tool-read.c */
extern const struct ts_tool_def ts_tool_write_file;	    /* tool-write.c */
extern const struct ts_tool_def ts_tool_edit_file;	    /* tool-edit.c */
extern const struct ts_tool_def ts_tool_find, ts_tool_grep; /* tool-search.c */
extern const struct ts_tool_def ts_tool_send_file;	    /* tool-send.c */

/*
 * Results. ts_tool_fail: a tool error with code ("invalid_argument", "not_found",
 * "protected", "stale", "ambiguous", "binary", "too_large", "timeout", "escape",
 * "no_channel", ...) and a message saying what to do next; returns 0 so that a tool can
 * `return ts_tool_fail(...)`. ts_tool_ok: success with data (stolen; may be NULL: {})
 * and text.
 */
int ts_tool_fail(struct ts_tool_result *res, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int ts_tool_ok(struct ts_tool_result *res, json_t *data, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* ts_tool_ok with text taken as is (may hold NULs? no: text is a C string). */
int ts_tool_ok_text(struct ts_tool_result *res, json_t *data, char *text /* stolen */);

/*
 * Arguments, checked against the tool's contract: ts_tool_args_check refuses arguments
 * the tool does not have (a tool error naming them and the tool's arguments). The getters
 * fill *ret (default when absent) and return 0, or fill res with an invalid_argument
 * error and return 1 (a wrong type, a required one missing).
 */
int ts_tool_args_check(const struct ts_tool_def *d, json_t *args, struct ts_tool_result *res);
int ts_tool_arg_str(json_t *args, const char *name, bool required, const char **ret,
		    struct ts_tool_result *res);
int ts_tool_arg_int(json_t *args, const char *name, long long min, long long max, long long dflt,
		    long long *ret, struct ts_tool_result *res);
int ts_tool_arg_bool(json_t *args, const char *name, bool dflt, bool *ret,
		     struct ts_tool_result *res);

/* --- workspace paths (wspath.c) --- */

#define TS_WS_WRITE (1U << 0) /* the tool will write it: protected paths refused */
#define TS_WS_DIR (1U << 1)   /* a directory is wanted (find, grep: "" is the root) */
/*
 * Resolve rel (workspace-relative; an absolute path is taken when inside the workspace)
 * to an absolute path inside the sandbox with every symlink of it resolved, which must
 * stay inside the workspace; the last component may be missing (a new file). 0 with abs
 * and, in *rel_out (may be NULL), the resolved path relative to the workspace ("" for
 * the root); 1 with res filled (escape, protected, invalid_argument); -errno when the
 * sandbox could not be asked.
 */
int ts_ws_resolve(struct ts_toolbox *t, const char *rel, unsigned flags, char **abs, char **rel_out,
		  struct ts_tool_result *res, struct ts_error *err);
/*
 * A backend error r of a file operation (what: "read", "write", ...) on the workspace path
 * rel: 0 with res filled when the file is at fault (not_found, permission_denied,
 * is_directory, too_large, no_space, ...), or r with err kept when the sandbox is (it is
 * gone, stopped, does not answer).
 */
int ts_ws_fail(struct ts_toolbox *t, int r, const char *what, const char *rel,
	       struct ts_tool_result *res, struct ts_error *err);
/* Does a workspace-relative path match a protected pattern (any component's basename)? */
bool ts_ws_protected(const struct ts_toolbox *t, const char *rel);

/* --- line tags (linetag.c) --- */

/* The tag of one line (without its newline): TS_TOOL_TAG_LEN lowercase hex + NUL. */
void ts_linetag(const char *line, size_t len, char out[TS_TOOL_TAG_LEN + 1]);
/* The hash a run remembers of a whole file's content (hex, NUL-terminated, 33 bytes). */
void ts_content_hash(const void *data, size_t len, char out[33]);
/* "N:tag" (or "N:tag|text", as read_file shows it; "0:" names the start) into *line and
 * tag (lowercase; "" for "0:"). 0, or -EINVAL / -ERANGE. */
int ts_linetag_parse(const char *ref, size_t *line, char tag[TS_TOOL_TAG_LEN + 1]);
/* Binary for the file tools: a NUL byte anywhere, or bytes that are not UTF-8 in the first
 * TS_TOOL_SNIFF bytes. */
bool ts_text_binary(const void *data, size_t len);
/* Print up to max bytes of s to f (cut at a character, with a marker saying so), bytes that
 * are not UTF-8 as U+FFFD; returns how many were replaced. */
size_t ts_text_print(FILE *f, const char *s, size_t len, size_t max);
/* ts_text_print of line n (1-based) as "N:tag|text\n" (the tag of the whole line). */
size_t ts_linetag_print(FILE *f, size_t n, const char *line, size_t len, size_t max);

/* --- edits (tool-edit.c) --- */

/*
 * edit_file's work on content (len bytes) without a sandbox: args are the call's
 * arguments (path, old_string/new_string/replace_all or edits), stale says the file
 * changed since this run last read or wrote it. 0 with the new content in *out (free;
 * NUL-terminated) and res the success result; 1 with res a tool error (nothing to
 * write); -ENOMEM.
 */
int ts_edit_apply(unsigned version, const char *path, const char *content, size_t len, json_t *args,
		  bool stale, char **out, size_t *out_len, struct ts_tool_result *res);

/* --- memory --- */
int ts_toolbox_seen_get(struct ts_toolbox *t, const char *path, char *hash, size_t len,
			struct ts_error *err);
int ts_toolbox_seen_set(struct ts_toolbox *t, const char *path, const char *hash,
			struct ts_error *err);

/* --- globs and .gitignore rules (gitignore.c) --- */

#define TS_GLOB_MAX 4096	     /* the longest glob (a longer one is -E2BIG) */
#define TS_GITIGNORE_RULES_MAX 10000 /* rules of one .gitignore file (-E2BIG past it) */

/*
 * A glob as gitignore(5) has them: `*` and `?` do not match `/`, `[...]` (`!` or `^`
 * negates; never `/`), `\` escapes, and `**` as a whole path component (leading, in the
 * middle or trailing) matches any number of directories; any other `**` is a `*`.
 * Matching is linear in the pattern times the path. ts_glob_compile: 0, -E2BIG, -ENOMEM.
 */
struct ts_glob;
int ts_glob_compile(const char *pat, size_t len, struct ts_glob **ret);
bool ts_glob_match(const struct ts_glob *g, const char *s, size_t len);
void ts_glob_free(struct ts_glob *g);

/*
 * .gitignore rules, matched against workspace-relative paths. Files are added parents
 * first (the root's, then deeper ones: a deeper file's rules override); base is the
 * directory of the file ("" for the root). The syntax of gitignore(5): `#` comments,
 * `!` negation, a trailing `/` for directories only, a leading or middle `/` anchors to
 * base, else the pattern matches a name at any depth below base. ts_gitignore_add: 0,
 * -E2BIG (too many rules in one file), -ENOMEM.
 */
struct ts_gitignore;
struct ts_gitignore *ts_gitignore_new(void);
void ts_gitignore_free(struct ts_gitignore *gi);
int ts_gitignore_add(struct ts_gitignore *gi, const char *base, const char *text, size_t len);
size_t ts_gitignore_count(const struct ts_gitignore *gi);
/* Is path ignored: itself, or a directory it is in whose path is longer than skip bytes
 * (the directory searched: what was asked for explicitly is searched)? */
bool ts_gitignore_ignored(const struct ts_gitignore *gi, const char *path, bool is_dir,
			  size_t skip);

/* --- processes and their text (tool-bash.c) --- */

/* Bytes as a valid UTF-8 C string (malloc'd; NULL: out of memory): every NUL and every
 * byte that is not part of a valid sequence becomes U+FFFD; *replaced (may be NULL)
 * counts them. */
char *ts_tool_utf8(const void *data, size_t len, size_t *replaced);
/* The length of data without a UTF-8 sequence cut at its end. */
size_t ts_tool_utf8_prefix(const void *data, size_t len);

/* Told each piece of a command's output; false: enough, the command is killed. */
typedef bool (*ts_tool_out_fn)(void *userdata, enum ts_cmd_event_type stream, const uint8_t *data,
			       size_t len);
/*
 * Run argv in the sandbox as t->user in cwd (NULL: the workspace), stdin /dev/null, with
 * t's variables when with_envs, its whole process group killed at timeout_ms; output to
 * fn (may be NULL). 0 with ret's exit_code, signal and timed_out (nothing captured) and
 * *stopped (may be NULL) true when fn asked for the kill; -errno when the sandbox failed
 * (-ENOENT: no such program).
 */
int ts_tool_exec(struct ts_toolbox *t, char *const *argv, const char *cwd,
		 unsigned long long timeout_ms, bool with_envs, ts_tool_out_fn fn, void *userdata,
		 struct ts_run_result *ret, bool *stopped, struct ts_error *err);
/* The wait of ts_tool_exec, for a command started otherwise (c borrowed; name for
 * messages): its output to fn until its end, killed at deadline (ts_now_ms) or when fn
 * asks, then TS_TOOL_KILL_GRACE_MS for its end. */
int ts_tool_wait(struct ts_cmd *c, const char *name, unsigned long long deadline, ts_tool_out_fn fn,
		 void *userdata, struct ts_run_result *ret, bool *stopped, struct ts_error *err);
