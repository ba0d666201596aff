/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workspace paths: what an agent names is resolved component by component, the way the
 * kernel would, asking the sandbox (ts_file_stat, which does not follow the last
 * component: lstat) at each step, so that a symlink planted in the workspace (by `bash`,
 * by a cloned repository) that leads out of it is refused instead of followed. The
 * resolved path holds no symlink and no `..`; protected patterns are matched on it.
 *
 * The sandbox may change a component between this walk and the operation that follows
 * (`bash` runs concurrently): the backend's own resolution then still keeps the
 * operation inside the sandbox's root and never writes through a final symlink, so the
 * most such a race reaches is another file of the sandbox's own user.
 */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "tools-internal.h"

#define TS_WS_SYMLINKS_MAX 40 /* as the kernel's MAXSYMLINKS */

/* Is abs the workspace or below it? *rest: what follows the workspace, without slashes. */
static bool inside(const char *ws, const char *abs, const char **rest)
{
	size_t wl = strlen(ws);

	if (strcmp(ws, "/") == 0)
		wl = 0;
	else if (strncmp(abs, ws, wl) != 0 || (abs[wl] != '\0' && abs[wl] != '/'))
		return false;
	abs += wl;
	while (*abs == '/')
		abs++;
	*rest = abs;
	return true;
}

/* The pattern a component of rel matches, or NULL. */
static const char *protected_by(const struct ts_toolbox *t, const char *rel, char *comp,
				size_t comp_len)
{
	const char *p = rel;

	while (*p) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n == 0)
			break;
		if (n < comp_len) {
			memcpy(comp, p, n);
			comp[n] = '\0';
			/* flags 0: a leading dot is an ordinary character, so `*.pem` also
			 * matches `.secret.pem` */
			for (size_t i = 0; i < t->n_protected; i++)
				if (fnmatch(t->protected_patterns[i], comp, 0) == 0)
					return t->protected_patterns[i];
		}
		p += n;
	}
	return NULL;
}

bool ts_ws_protected(const struct ts_toolbox *t, const char *rel)
{
	char comp[NAME_MAX + 1];

	return protected_by(t, rel, comp, sizeof(comp)) != NULL;
}

static bool machinery(enum ts_be_code c)
{
	switch (c) {
	case TS_BE_NOT_FOUND:
	case TS_BE_INVALID_ARGUMENT:
	case TS_BE_PERMISSION:
	case TS_BE_NOT_ENOUGH_SPACE:
	case TS_BE_ALREADY_EXISTS:
	case TS_BE_COMMAND_EXIT:
		return false;
	default:
		return true;
	}
}

int ts_ws_fail(struct ts_toolbox *t, int r, const char *what, const char *rel,
	       struct ts_tool_result *res, struct ts_error *err)
{
	int e = err && err->code ? err->code : -r;
	enum ts_be_code c = ts_be_code(&(struct ts_error){ .code = e });
	char msg[sizeof(err->msg)];

	snprintf(msg, sizeof(msg), "%s", err ? err->msg : "");
	if (e == EFBIG) {
		ts_err_clear(err);
		return ts_tool_fail(res, "too_large",
				    "%s `%s`: larger than the file tools take (%u MiB); use bash "
				    "(head, sed -n, split) for it",
				    what, rel, TS_TOOL_FILE_MAX >> 20);
	}
	if (machinery(c))
		return r < 0 ? r : -e;
	if (c == TS_BE_NOT_FOUND) {
		/* the sandbox itself may be what is missing (e2b: a 404 for a sandbox that
		 * ended): ask it before blaming the file */
		struct ts_sb_info info = { 0 };
		struct ts_error e2 = { 0 };
		int q = ts_sb_info(t->sb, &info, &e2);

		ts_sb_info_clear(&info);
		if (q < 0 && (ts_be_code(&e2) == TS_BE_NOT_FOUND || machinery(ts_be_code(&e2)))) {
			if (err)
				*err = e2;
			return q;
		}
		ts_err_clear(err);
		return ts_tool_fail(res, "not_found",
				    "%s `%s`: no such file or directory in the workspace `%s`; "
				    "check the path (it is relative to the workspace)",
				    what, rel, t->workspace);
	}
	ts_err_clear(err);
	switch (e) {
	case EISDIR:
		return ts_tool_fail(res, "is_directory",
				    "%s `%s`: it is a directory; name a file in it%s", what, rel,
				    t->version >= 2 ? " (find lists them)" : "");
	case ENOTDIR:
		return ts_tool_fail(res, "not_a_directory",
				    "%s `%s`: a component of the path is a file, not a directory",
				    what, rel);
	case ELOOP:
		return ts_tool_fail(res, "invalid_argument",
				    "%s `%s`: %s; name the file the link points to", what, rel,
				    msg);
	}
	switch (c) {
	case TS_BE_PERMISSION:
		return ts_tool_fail(res, "permission_denied",
				    "%s `%s`: %s; the tools run as the sandbox's user, who may not "
				    "do this",
				    what, rel, msg);
	case TS_BE_NOT_ENOUGH_SPACE:
		return ts_tool_fail(res, "no_space",
				    "%s `%s`: the sandbox has no space left (%s); free some "
				    "(remove build output, caches) and try again",
				    what, rel, msg);
	case TS_BE_ALREADY_EXISTS:
		return ts_tool_fail(res, "already_exists", "%s `%s`: %s", what, rel, msg);
	default:
		return ts_tool_fail(res, "invalid_argument", "%s `%s`: %s", what, rel, msg);
	}
}

/* Append component c (n bytes) to done ("" or "a/b"). */
static int push(char *done, size_t cap, const char *c, size_t n)
{
	size_t l = strlen(done);

	if (l + 1 + n + 1 > cap)
		return -ENAMETOOLONG;
	if (l)
		done[l++] = '/';
	memcpy(done + l, c, n);
	done[l + n] = '\0';
	return 0;
}

static void pop(char *done)
{
	char *s = strrchr(done, '/');

	if (s)
		*s = '\0';
	else
		done[0] = '\0';
}

/* rest becomes head + "/" + rest (head first: a symlink's target is walked before what
 * followed the link). */
static int prepend(char *rest, size_t cap, const char *head)
{
	size_t hl = strlen(head), rl = strlen(rest);

	if (hl + 1 + rl + 1 > cap)
		return -ENAMETOOLONG;
	memmove(rest + hl + 1, rest, rl + 1);
	memcpy(rest, head, hl);
	rest[hl] = '/';
	return 0;
}

int ts_ws_resolve(struct ts_toolbox *t, const char *rel, unsigned flags, char **abs, char **rel_out,
		  struct ts_tool_result *res, struct ts_error *err)
{
	/* the walk: rest is still to go, done is resolved (real directories only, so `..`
	 * is its parent, as the kernel's) */
	char rest[2 * PATH_MAX], done[PATH_MAX], full[PATH_MAX + 64];
	const char *p = rel;
	unsigned links = 0;
	bool missing = false;
	struct ts_error scratch = { 0 };
	int r;

	if (!err)
		err = &scratch;
	*abs = NULL;
	if (rel_out)
		*rel_out = NULL;
	if (!rel || (!rel[0] && !(flags & TS_WS_DIR)))
		return ts_tool_fail(res, "invalid_argument",
				    "the path is empty: name a file relative to the workspace `%s`",
				    t->workspace),
		       1;
	if (strlen(rel) >= PATH_MAX)
		return ts_tool_fail(res, "invalid_argument", "the path is longer than %d bytes",
				    PATH_MAX - 1),
		       1;
	if (rel[0] == '/' && !inside(t->workspace, rel, &p))
		return ts_tool_fail(res, "escape",
				    "`%s` is outside the workspace `%s`: the file tools work only "
				    "inside it; give a path relative to it",
				    rel, t->workspace),
		       1;
	snprintf(rest, sizeof(rest), "%s", p);
	done[0] = '\0';
	while (rest[0]) {
		char *c = rest;
		size_t n;

		while (*c == '/')
			c++;
		n = strcspn(c, "/");
		if (n == 0) {
			rest[0] = '\0';
			break;
		}
		char comp[NAME_MAX + 1];
		if (n > NAME_MAX)
			return ts_tool_fail(res, "invalid_argument",
					    "`%s`: a component is longer than %d bytes", rel,
					    NAME_MAX),
			       1;
		memcpy(comp, c, n);
		comp[n] = '\0';
		memmove(rest, c + n, strlen(c + n) + 1);
		if (strcmp(comp, ".") == 0)
			continue;
		if (strcmp(comp, "..") == 0) {
			if (!done[0])
				return ts_tool_fail(
					       res, "escape",
					       "`%s` leads out of the workspace `%s` (`..` above "
					       "its root%s); the file tools work only inside it",
					       rel, t->workspace,
					       links ? ", through a symlink" : ""),
				       1;
			pop(done);
			/* what is below a missing directory is missing, its parent is not */
			missing = false;
			continue;
		}
		if (push(done, sizeof(done), comp, n) < 0)
			return ts_tool_fail(res, "invalid_argument", "`%s`: the path is too long",
					    rel),
			       1;
		if (missing)
			continue;
		snprintf(full, sizeof(full), "%s/%s", strcmp(t->workspace, "/") ? t->workspace : "",
			 done);
		_cleanup_(ts_be_entry_clear) struct ts_be_entry e = { 0 };
		r = ts_file_stat(t->sb, full, t->user, &e, err);
		if (r < 0 && ts_be_code(err) == TS_BE_NOT_FOUND && err->code == ENOENT) {
			/* a new file, or a new directory of one (writes create parents); the
			 * sandbox is asked when the operation finds it really missing */
			ts_err_clear(err);
			missing = true;
			continue;
		}
		if (r < 0) {
			r = ts_ws_fail(t, r, "resolve", done, res, err);
			return r < 0 ? r : 1;
		}
		bool more = rest[strspn(rest, "/")] != '\0';
		if (e.type == TS_BE_SYMLINK) {
			const char *target = e.symlink_target ? e.symlink_target : "";
			const char *in;

			if (++links > TS_WS_SYMLINKS_MAX)
				return ts_tool_fail(
					       res, "invalid_argument",
					       "`%s`: more than %d symlinks on the way; name the "
					       "file itself",
					       rel, TS_WS_SYMLINKS_MAX),
				       1;
			if (!target[0])
				return ts_tool_fail(res, "invalid_argument",
						    "`%s`: `%s` is a symlink with an empty target",
						    rel, done),
				       1;
			pop(done);
			if (target[0] == '/') {
				if (!inside(t->workspace, target, &in))
					return ts_tool_fail(
						       res, "escape",
						       "`%s`: `%s` is a symlink to `%s`, outside the "
						       "workspace `%s`; the file tools do not follow "
						       "links out of it",
						       rel, comp, target, t->workspace),
					       1;
				done[0] = '\0';
				target = in;
			}
			if (target[0] && prepend(rest, sizeof(rest), target) < 0)
				return ts_tool_fail(
					       res, "invalid_argument",
					       "`%s`: the path is too long once its symlinks are "
					       "followed",
					       rel),
				       1;
			continue;
		}
		if (e.type != TS_BE_DIR && more)
			return ts_tool_fail(res, "not_a_directory",
					    "`%s`: `%s` is a file, not a directory", rel, done),
			       1;
	}
	if (!done[0] && !(flags & TS_WS_DIR))
		return ts_tool_fail(res, "is_directory",
				    "`%s` is the workspace directory itself; name a file in it",
				    rel),
		       1;
	if (flags & TS_WS_WRITE) {
		char comp[NAME_MAX + 1];
		const char *pat = protected_by(t, done, comp, sizeof(comp));

		if (pat)
			return ts_tool_fail(res, "protected",
					    "`%s` is protected (`%s` matches `%s`): it can be read "
					    "but no tool may write it; leave it as it is, or ask "
					    "the user to change it",
					    done, comp, pat),
			       1;
	}
	_cleanup_free_ char *a = NULL, *o = strdup(done);
	if (!o || asprintf(&a, "%s%s%s", t->workspace,
			   done[0] && strcmp(t->workspace, "/") ? "/" : "", done) < 0)
		return ts_err(err, -ENOMEM, "out of memory");
	*abs = TAKE_PTR(a);
	if (rel_out)
		*rel_out = TAKE_PTR(o);
	return 0;
}
