/* SPDX-License-Identifier: Apache-2.0 */
#include "treeargs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "../lib/protect.h"
#include "util.h"

static int parse_u64(const char *opt, const char *s, uint64_t *ret, struct ts_error *err)
{
	unsigned long long v;

	if (ts_parse_ull(s, &v) < 0)
		return ts_err(err, -EINVAL, "%s: bad number `%s`", opt, s);
	*ret = v;
	return 0;
}

static int parse_map(struct ts_helper_ctx *ctx, const char *opt, const char *s,
		     struct ts_error *err)
{
	struct ts_idmap_line *l = opt[2] == 'u' ? ctx->uid_map : ctx->gid_map;
	size_t *n = opt[2] == 'u' ? &ctx->n_uid_map : &ctx->n_gid_map;
	unsigned long long in, out, cnt;
	char tail;

	if (*n >= TS_HELPER_MAX_IDMAP)
		return ts_err(err, -E2BIG, "too many id map lines (at most %d)",
			      TS_HELPER_MAX_IDMAP);
	if (sscanf(s, "%llu %llu %llu%c", &in, &out, &cnt, &tail) != 3 || cnt == 0 ||
	    in + cnt > 0xffffffffULL || out + cnt > 0xffffffffULL)
		return ts_err(err, -EINVAL, "bad id map `%s`: want `INSIDE OUTSIDE COUNT`", s);
	l[(*n)++] = (struct ts_idmap_line){ in, out, cnt };
	return 0;
}

/* A basename pattern, as the policy takes them (policy.c): what fnmatch sees here. */
static int parse_pattern(struct ts_tree_args *a, char *s, struct ts_error *err)
{
	if (a->n_patterns >= TS_TREE_MAX_PATTERNS)
		return ts_err(err, -E2BIG, "--scan-protected: too many patterns (at most %d)",
			      TS_TREE_MAX_PATTERNS);
	if (!s[0] || strchr(s, '/') || strlen(s) > NAME_MAX)
		return ts_err(err, -EINVAL,
			      "--scan-protected: bad pattern `%.64s`: want a basename pattern", s);
	a->patterns[a->n_patterns++] = s;
	return 0;
}

/* An option of the copy only, or of the scan only, on the other's line. */
static bool copy_only(const char *a)
{
	return !strcmp(a, "--remove") || !strcmp(a, "--max-bytes") || !strcmp(a, "--used-bytes") ||
	       !strcmp(a, "--used-entries") || !strcmp(a, "--owner");
}

static bool scan_only(const char *a)
{
	return !strcmp(a, "--pattern") || !strcmp(a, "--aliases");
}

int ts_treeargs_parse(int argc, char **argv, struct ts_helper_ctx *ctx, struct ts_tree_args *a,
		      struct ts_error *err)
{
	const char *mode;
	unsigned long long in, out;
	char tail;
	bool scan;
	int r;

	memset(ctx, 0, sizeof(*ctx));
	ctx->seccomp_fd = ctx->sync_fd = ctx->control_fd = ctx->logs_fd = -EBADF;
	ctx->net.proxy_fd = -EBADF;
	memset(a, 0, sizeof(*a));
	if (argc < 2 || (strcmp(argv[1], "--copy-tree") && strcmp(argv[1], "--scan-protected")))
		return ts_err(err, -EINVAL, "want `--copy-tree` or `--scan-protected` first");
	mode = argv[1];
	scan = !strcmp(mode, "--scan-protected");
	a->mode = scan ? TS_TREE_SCAN : TS_TREE_COPY;
	for (int i = 2; i < argc; i++) {
		const char *o = argv[i];

		if ((scan && copy_only(o)) || (!scan && scan_only(o)))
			return ts_err(err, -EINVAL, "%s: option `%s` is not one of this mode", mode,
				      o);
		if (!strcmp(o, "--newidmap")) {
			ctx->newidmap = true;
			continue;
		}
		if (!strcmp(o, "--remove")) {
			a->mode = TS_TREE_REMOVE;
			continue;
		}
		if (!strcmp(o, "--aliases")) {
			a->scan_flags |= TS_PROTECT_ALIASES;
			continue;
		}
		if (i + 1 >= argc)
			return ts_err(err, -EINVAL, "%s: option `%s` needs an argument", mode, o);
		if (!strcmp(o, "--max-bytes"))
			r = parse_u64(o, argv[++i], &a->copy.max_bytes, err);
		else if (!strcmp(o, "--max-entries"))
			r = parse_u64(o, argv[++i], scan ? &a->max_entries : &a->copy.max_entries,
				      err);
		else if (!strcmp(o, "--used-bytes"))
			r = parse_u64(o, argv[++i], &a->copy.bytes, err);
		else if (!strcmp(o, "--used-entries"))
			r = parse_u64(o, argv[++i], &a->copy.entries, err);
		else if (!strcmp(o, "--pattern"))
			r = parse_pattern(a, argv[++i], err);
		else if (!strcmp(o, "--owner")) {
			i++;
			if (sscanf(argv[i], "%llu:%llu%c", &in, &out, &tail) != 2 ||
			    in > 0xfffffffeULL || out > 0xfffffffeULL)
				return ts_err(err, -EINVAL, "bad owner `%s`: want `UID:GID`",
					      argv[i]);
			a->copy.set_owner = true;
			a->copy.owner_uid = (uint32_t)in;
			a->copy.owner_gid = (uint32_t)out;
			r = 0;
		} else if (!strcmp(o, "--uid-map") || !strcmp(o, "--gid-map"))
			r = parse_map(ctx, o, argv[++i], err);
		else
			return ts_err(err, -EINVAL, "%s: unknown option `%s`", mode, o);
		if (r < 0)
			return r;
	}
	if (ctx->n_uid_map == 0 || ctx->n_gid_map == 0)
		return ts_err(err, -EINVAL, "%s: --uid-map and --gid-map are required", mode);
	/* the worker becomes root of the namespace: there must be one */
	if (!ts_helper_id_mapped(ctx->uid_map, ctx->n_uid_map, 0) ||
	    !ts_helper_id_mapped(ctx->gid_map, ctx->n_gid_map, 0))
		return ts_err(err, -EINVAL, "%s: the maps need id 0 inside", mode);
	if (scan) {
		/* the walk is bounded as the caller's own is (protect.h) */
		if (a->max_entries == 0)
			return ts_err(err, -EINVAL, "--scan-protected: --max-entries is required");
		if (a->n_patterns == 0 && !(a->scan_flags & TS_PROTECT_ALIASES))
			return ts_err(err, -EINVAL,
				      "--scan-protected: nothing to look for (no --pattern, no "
				      "--aliases)");
		return 0;
	}
	/* ids of the namespace: an owner outside the maps is no id the copier may give */
	if (a->copy.set_owner &&
	    (!ts_helper_id_mapped(ctx->uid_map, ctx->n_uid_map, a->copy.owner_uid) ||
	     !ts_helper_id_mapped(ctx->gid_map, ctx->n_gid_map, a->copy.owner_gid)))
		return ts_err(err, -EINVAL, "--copy-tree: --owner %u:%u is not mapped by the maps",
			      (unsigned)a->copy.owner_uid, (unsigned)a->copy.owner_gid);
	if (a->copy.set_owner && a->mode == TS_TREE_REMOVE)
		return ts_err(err, -EINVAL, "--copy-tree: --owner and --remove exclude each other");
	return 0;
}
