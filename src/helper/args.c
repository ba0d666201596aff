/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Command line of the helper. bubblewrap-style: each mount is one option, applied in
 * the order given, so that the line printed by `toren-sandbox run --dry-run` is the
 * whole description of the sandbox and can be pasted into a shell.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "helper.h"
#include "ucount.h"
#include "cleanup.h"
#include "util.h"

static const struct {
	const char *name;
	int resource;
} rlimit_names[] = {
	{ "as", RLIMIT_AS },
	{ "core", RLIMIT_CORE },
	{ "cpu", RLIMIT_CPU },
	{ "data", RLIMIT_DATA },
	{ "fsize", RLIMIT_FSIZE },
	{ "memlock", RLIMIT_MEMLOCK },
	{ "nofile", RLIMIT_NOFILE },
	{ "nproc", RLIMIT_NPROC },
	{ "stack", RLIMIT_STACK },
	{ "msgqueue", RLIMIT_MSGQUEUE },
	{ "sigpending", RLIMIT_SIGPENDING },
};

static int parse_fd(const char *s, int *ret, struct ts_error *err)
{
	unsigned long long v;

	if (ts_parse_ull(s, &v) < 0 || v > 65535)
		return ts_err(err, -EINVAL, "bad file descriptor `%s`", s);
	*ret = (int)v;
	return 0;
}

static int parse_idmap(const char *s, struct ts_idmap_line *lines, size_t *n, struct ts_error *err)
{
	unsigned long in, out, count;
	char tail;

	if (*n >= TS_HELPER_MAX_IDMAP)
		return ts_err(err, -E2BIG, "too many id map lines (at most %d)",
			      TS_HELPER_MAX_IDMAP);
	if (sscanf(s, "%lu %lu %lu%c", &in, &out, &count, &tail) != 3 || count == 0 ||
	    in + count < in || out + count < out || in + count > 0xffffffffUL ||
	    out + count > 0xffffffffUL)
		return ts_err(err, -EINVAL, "bad id map `%s`: want `INSIDE OUTSIDE COUNT`", s);
	lines[*n] = (struct ts_idmap_line){ in, out, count };
	(*n)++;
	return 0;
}

static int parse_rlimit(const char *s, struct ts_helper_ctx *ctx, struct ts_error *err)
{
	char name[32];
	const char *eq = strchr(s, '='), *colon;
	unsigned long long soft, hard;
	char num[32];

	if (!eq || (size_t)(eq - s) >= sizeof(name))
		return ts_err(err, -EINVAL, "bad rlimit `%s`: want `NAME=SOFT[:HARD]`", s);
	memcpy(name, s, (size_t)(eq - s));
	name[eq - s] = '\0';
	colon = strchr(eq + 1, ':');
	if (colon) {
		if ((size_t)(colon - eq - 1) >= sizeof(num))
			return ts_err(err, -EINVAL, "bad rlimit `%s`", s);
		memcpy(num, eq + 1, (size_t)(colon - eq - 1));
		num[colon - eq - 1] = '\0';
		if (ts_parse_ull(num, &soft) < 0 || ts_parse_ull(colon + 1, &hard) < 0 ||
		    soft > hard)
			return ts_err(err, -EINVAL, "bad rlimit `%s`", s);
	} else {
		if (ts_parse_ull(eq + 1, &soft) < 0)
			return ts_err(err, -EINVAL, "bad rlimit `%s`", s);
		hard = soft;
	}
	if (ctx->n_rlimits >= TS_HELPER_MAX_RLIMITS)
		return ts_err(err, -E2BIG, "too many --rlimit options");
	for (size_t i = 0; i < ELEMENTSOF(rlimit_names); i++) {
		if (strcmp(rlimit_names[i].name, name) != 0)
			continue;
		ctx->rlimits[ctx->n_rlimits].resource = rlimit_names[i].resource;
		ctx->rlimits[ctx->n_rlimits].value.rlim_cur = (rlim_t)soft;
		ctx->rlimits[ctx->n_rlimits].value.rlim_max = (rlim_t)hard;
		ctx->n_rlimits++;
		return 0;
	}
	return ts_err(err, -EINVAL, "unknown rlimit `%s`", name);
}

static int check_dest(const char *opt, const char *dest, struct ts_error *err)
{
	const char *p;

	if (dest[0] != '/')
		return ts_err(err, -EINVAL, "%s: destination `%s` is not absolute", opt, dest);
	/* Destinations are resolved inside the new root without following symlinks; a `..`
	 * component would still be legal there but never has a reason to be given. */
	for (p = dest; (p = strstr(p, "..")); p += 2)
		if ((p == dest || p[-1] == '/') && (p[2] == '/' || p[2] == '\0'))
			return ts_err(err, -EINVAL, "%s: destination `%s` has a `..` component",
				      opt, dest);
	return 0;
}

static struct ts_mount_op *add_op(struct ts_helper_ctx *ctx, enum ts_mount_kind kind)
{
	struct ts_mount_op *ops, *op;

	ops = realloc(ctx->ops, (ctx->n_ops + 1) * sizeof(*ops));
	if (!ops)
		return NULL;
	ctx->ops = ops;
	op = &ops[ctx->n_ops++];
	memset(op, 0, sizeof(*op));
	op->kind = kind;
	op->src_fd = op->upper_fd = op->work_fd = op->idmapped_fd = -EBADF;
	op->owner = op->map_uid = op->map_gid = -1;
	for (size_t i = 0; i < TS_HELPER_MAX_LOWERS; i++)
		op->lower_fds[i] = op->lower_idmapped_fds[i] = -EBADF;
	return op;
}

bool ts_helper_id_mapped(const struct ts_idmap_line *map, size_t n, unsigned long id)
{
	for (size_t i = 0; i < n; i++)
		if (map[i].inside <= id && id - map[i].inside < map[i].count)
			return true;
	return false;
}

static void usage(void)
{
	fputs("usage: toren-sandbox-helper [OPTIONS] -- PROGRAM [ARG...]\n"
	      "see toren-sandbox-helper(8)\n"
	      "options: --overlay-src DIR --overlay UPPER WORK DEST --ro-overlay DEST\n"
	      "  --bind SRC DEST --ro-bind SRC DEST --bind-fd FD DEST --tmpfs DEST\n"
	      "  --size BYTES --perms MODE\n"
	      "  --dir DEST --symlink TARGET DEST --proc DEST --dev DEST --sysfs DEST\n"
	      "  --mqueue DEST --protect DEST --remount-ro DEST\n"
	      "  --uid-map 'IN OUT COUNT' --gid-map 'IN OUT COUNT' --newidmap --uid N --gid N\n"
	      "  --hostname NAME --chdir DIR --setenv NAME VALUE\n"
	      "  --seccomp FD --sync-fd FD --control-fd FD --logs-fd FD\n"
	      "  --rlimit NAME=SOFT[:HARD] --userns-limit NAME=N\n"
	      "  --cgroup NAME --cgroup-memory BYTES\n"
	      "  --cgroup-pids N --cgroup-cpu-quota USEC --die-with-parent --detach\n"
	      "  --argv0 NAME --init-setid --owner ID --bind-owner UID:GID\n"
	      "  --net-pasta PATH --net-slirp4netns PATH --net-allow CIDR --net-deny CIDR\n"
	      "  --net-proxy PATH --net-allow-host PATTERN --net-proxy-state DIR\n"
	      "  --help --version\n",
	      stdout);
}

int ts_helper_parse_args(struct ts_helper_ctx *ctx, int argc, char **argv, struct ts_error *err)
{
	const char *pending_lowers[TS_HELPER_MAX_LOWERS];
	size_t n_pending = 0;
	unsigned long long pending_size = 0, v;
	mode_t pending_mode = 0;
	long long pending_owner = -1; /* --owner: uid (== gid) of the next --tmpfs or --dir */
	long long pending_map_uid = -1, pending_map_gid = -1; /* --bind-owner: the next bind */
	int i, r;

	memset(ctx, 0, sizeof(*ctx));
	ctx->uid = 1000;
	ctx->gid = 1000;
	ctx->seccomp_fd = ctx->sync_fd = ctx->control_fd = ctx->logs_fd = -EBADF;
	ctx->net.proxy_fd = -EBADF;

#define NEED(n)                                                                                    \
	do {                                                                                       \
		if (i + (n) >= argc)                                                               \
			return ts_err(err, -EINVAL, "option `%s` needs %d argument%s", a, (n),     \
				      (n) > 1 ? "s" : "");                                         \
	} while (0)
#define ADD(kind)                                                                                  \
	({                                                                                         \
		struct ts_mount_op *_op = add_op(ctx, (kind));                                     \
		if (!_op)                                                                          \
			return -ENOMEM;                                                            \
		_op;                                                                               \
	})

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		struct ts_mount_op *op;

		if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (!strcmp(a, "--help")) {
			usage();
			exit(0);
		} else if (!strcmp(a, "--version")) {
			puts("toren-sandbox-helper " TS_VERSION);
			exit(0);
		} else if (!strcmp(a, "--overlay-src")) {
			NEED(1);
			if (n_pending >= TS_HELPER_MAX_LOWERS)
				return ts_err(err, -E2BIG, "too many --overlay-src (at most %d)",
					      TS_HELPER_MAX_LOWERS);
			pending_lowers[n_pending++] = argv[++i];
		} else if (!strcmp(a, "--overlay") || !strcmp(a, "--ro-overlay")) {
			bool ro = !strcmp(a, "--ro-overlay");

			NEED(ro ? 1 : 3);
			if (n_pending == 0)
				return ts_err(err, -EINVAL, "`%s` without --overlay-src", a);
			op = ADD(TS_MOUNT_OVERLAY);
			if (!ro) {
				op->upper = argv[++i];
				op->work = argv[++i];
			}
			op->dest = argv[++i];
			op->ro = ro;
			memcpy(op->lowers, pending_lowers, n_pending * sizeof(pending_lowers[0]));
			op->n_lowers = n_pending;
			n_pending = 0;
		} else if (!strcmp(a, "--bind") || !strcmp(a, "--ro-bind")) {
			NEED(2);
			op = ADD(!strcmp(a, "--bind") ? TS_MOUNT_BIND : TS_MOUNT_RO_BIND);
			op->src = argv[++i];
			op->dest = argv[++i];
			if (op->src[0] != '/')
				return ts_err(err, -EINVAL, "%s: source `%s` is not absolute", a,
					      op->src);
			op->map_uid = pending_map_uid;
			op->map_gid = pending_map_gid;
			pending_map_uid = pending_map_gid = -1;
		} else if (!strcmp(a, "--bind-fd")) {
			struct stat st;
			int fd = -1;

			/* a directory the caller opened: bound as it is, never looked up again */
			NEED(2);
			if ((r = parse_fd(argv[++i], &fd, err)) < 0)
				return r;
			if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode))
				return ts_err(err, -EBADF, "--bind-fd %s: not an open directory",
					      argv[i]);
			if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
				return ts_err_errno(err, -errno, "--bind-fd %s", argv[i]);
			op = ADD(TS_MOUNT_BIND);
			op->src = argv[i];
			op->src_fd = fd;
			op->src_is_fd = true;
			op->dest = argv[++i];
			op->map_uid = pending_map_uid;
			op->map_gid = pending_map_gid;
			pending_map_uid = pending_map_gid = -1;
		} else if (!strcmp(a, "--bind-owner")) {
			unsigned long long u, g;
			char *colon;

			NEED(1);
			colon = strchr(argv[++i], ':');
			if (!colon || (*colon = '\0', ts_parse_ull(argv[i], &u) < 0) ||
			    ts_parse_ull(colon + 1, &g) < 0 || u > 0xfffffffeULL ||
			    g > 0xfffffffeULL) {
				if (colon)
					*colon = ':';
				return ts_err(err, -EINVAL, "bad --bind-owner `%s`: want UID:GID",
					      argv[i]);
			}
			*colon = ':';
			pending_map_uid = (long long)u;
			pending_map_gid = (long long)g;
		} else if (!strcmp(a, "--size")) {
			NEED(1);
			if (ts_parse_size(argv[++i], &pending_size) < 0)
				return ts_err(err, -EINVAL, "bad size `%s`", argv[i]);
		} else if (!strcmp(a, "--perms")) {
			char *end;
			unsigned long m;

			NEED(1);
			m = strtoul(argv[++i], &end, 8);
			if (*end || m > 07777 || !argv[i][0])
				return ts_err(err, -EINVAL, "bad mode `%s`", argv[i]);
			pending_mode = (mode_t)m;
		} else if (!strcmp(a, "--owner")) {
			NEED(1);
			if (ts_parse_ull(argv[++i], &v) < 0 || v > 65535)
				return ts_err(err, -EINVAL, "bad --owner `%s`", argv[i]);
			pending_owner = (long long)v;
		} else if (!strcmp(a, "--tmpfs") || !strcmp(a, "--dir")) {
			NEED(1);
			op = ADD(!strcmp(a, "--tmpfs") ? TS_MOUNT_TMPFS : TS_MOUNT_DIR);
			op->dest = argv[++i];
			op->size = pending_size;
			op->mode = pending_mode ? pending_mode : 0755;
			op->owner = pending_owner;
			pending_size = 0;
			pending_mode = 0;
			pending_owner = -1;
		} else if (!strcmp(a, "--symlink")) {
			NEED(2);
			op = ADD(TS_MOUNT_SYMLINK);
			op->src = argv[++i];
			op->dest = argv[++i];
		} else if (!strcmp(a, "--proc") || !strcmp(a, "--dev") || !strcmp(a, "--sysfs") ||
			   !strcmp(a, "--mqueue") || !strcmp(a, "--protect") ||
			   !strcmp(a, "--remount-ro")) {
			static const struct {
				const char *opt;
				enum ts_mount_kind kind;
			} simple[] = {
				{ "--proc", TS_MOUNT_PROC },
				{ "--dev", TS_MOUNT_DEV },
				{ "--sysfs", TS_MOUNT_SYSFS },
				{ "--mqueue", TS_MOUNT_MQUEUE },
				{ "--protect", TS_MOUNT_PROTECT },
				{ "--remount-ro", TS_MOUNT_REMOUNT_RO },
			};
			NEED(1);
			for (size_t k = 0; k < ELEMENTSOF(simple); k++)
				if (!strcmp(a, simple[k].opt)) {
					op = ADD(simple[k].kind);
					op->dest = argv[++i];
				}
		} else if (!strcmp(a, "--uid-map") || !strcmp(a, "--gid-map")) {
			NEED(1);
			if (a[2] == 'u')
				r = parse_idmap(argv[++i], ctx->uid_map, &ctx->n_uid_map, err);
			else
				r = parse_idmap(argv[++i], ctx->gid_map, &ctx->n_gid_map, err);
			if (r < 0)
				return r;
		} else if (!strcmp(a, "--newidmap")) {
			ctx->newidmap = true;
		} else if (!strcmp(a, "--uid") || !strcmp(a, "--gid")) {
			NEED(1);
			if (ts_parse_ull(argv[++i], &v) < 0 || v >= 0xffffffffULL)
				return ts_err(err, -EINVAL, "bad id `%s`", argv[i]);
			if (a[2] == 'u')
				ctx->uid = (uid_t)v;
			else
				ctx->gid = (gid_t)v;
		} else if (!strcmp(a, "--hostname")) {
			NEED(1);
			ctx->hostname = argv[++i];
			if (strlen(ctx->hostname) > 64 || !ctx->hostname[0])
				return ts_err(err, -EINVAL, "bad hostname `%s`", ctx->hostname);
		} else if (!strcmp(a, "--chdir")) {
			NEED(1);
			ctx->chdir = argv[++i];
		} else if (!strcmp(a, "--seccomp")) {
			NEED(1);
			if ((r = parse_fd(argv[++i], &ctx->seccomp_fd, err)) < 0)
				return r;
		} else if (!strcmp(a, "--sync-fd")) {
			NEED(1);
			if ((r = parse_fd(argv[++i], &ctx->sync_fd, err)) < 0)
				return r;
		} else if (!strcmp(a, "--control-fd")) {
			NEED(1);
			if ((r = parse_fd(argv[++i], &ctx->control_fd, err)) < 0)
				return r;
		} else if (!strcmp(a, "--logs-fd")) {
			NEED(1);
			if ((r = parse_fd(argv[++i], &ctx->logs_fd, err)) < 0)
				return r;
		} else if (!strcmp(a, "--rlimit")) {
			NEED(1);
			if ((r = parse_rlimit(argv[++i], ctx, err)) < 0)
				return r;
		} else if (!strcmp(a, "--userns-limit")) {
			NEED(1);
			if ((r = ts_ucount_parse(argv[++i], ctx, err)) < 0)
				return r;
		} else if (!strcmp(a, "--cgroup")) {
			NEED(1);
			ctx->cgroup.name = argv[++i];
			if (!ctx->cgroup.name[0] || strchr(ctx->cgroup.name, '/') ||
			    !strcmp(ctx->cgroup.name, ".") || !strcmp(ctx->cgroup.name, "..") ||
			    strlen(ctx->cgroup.name) > 64)
				return ts_err(err, -EINVAL, "bad cgroup name `%s`",
					      ctx->cgroup.name);
		} else if (!strcmp(a, "--cgroup-memory")) {
			NEED(1);
			if (ts_parse_size(argv[++i], &ctx->cgroup.memory_bytes) < 0)
				return ts_err(err, -EINVAL, "bad size `%s`", argv[i]);
		} else if (!strcmp(a, "--cgroup-pids")) {
			NEED(1);
			if (ts_parse_ull(argv[++i], &ctx->cgroup.pids) < 0)
				return ts_err(err, -EINVAL, "bad number `%s`", argv[i]);
		} else if (!strcmp(a, "--cgroup-cpu-quota")) {
			NEED(1);
			if (ts_parse_ull(argv[++i], &ctx->cgroup.cpu_quota_us) < 0)
				return ts_err(err, -EINVAL, "bad number `%s`", argv[i]);
		} else if (!strcmp(a, "--setenv")) {
			char **envp;
			size_t len;

			NEED(2);
			if (!ts_env_name_valid(argv[i + 1]))
				return ts_err(err, -EINVAL, "bad variable name `%s`", argv[i + 1]);
			if (ctx->n_env >= TS_HELPER_MAX_ENV)
				return ts_err(err, -E2BIG, "too many --setenv (at most %d)",
					      TS_HELPER_MAX_ENV);
			len = strlen(argv[i + 1]) + strlen(argv[i + 2]) + 2;
			char *entry = malloc(len);
			size_t k, nlen = strlen(argv[i + 1]);

			if (!entry)
				return -ENOMEM;
			snprintf(entry, len, "%s=%s", argv[i + 1], argv[i + 2]);
			i += 2;
			/* a later --setenv of the same name replaces the earlier one */
			for (k = 0; k < ctx->n_env; k++)
				if (!strncmp(ctx->envp[k], entry, nlen + 1))
					break;
			if (k < ctx->n_env) {
				free(ctx->envp[k]);
				ctx->envp[k] = entry;
				continue;
			}
			envp = realloc(ctx->envp, (ctx->n_env + 2) * sizeof(char *));
			if (!envp) {
				free(entry);
				return -ENOMEM;
			}
			ctx->envp = envp;
			envp[ctx->n_env] = entry;
			envp[++ctx->n_env] = NULL;
		} else if (!strcmp(a, "--net-pasta") || !strcmp(a, "--net-slirp4netns") ||
			   !strcmp(a, "--net-proxy")) {
			NEED(1);
			if (ctx->net.mode != TS_NET_NONE)
				return ts_err(
					err, -EINVAL,
					"only one of --net-pasta, --net-slirp4netns, --net-proxy");
			ctx->net.mode = !strcmp(a, "--net-proxy") ? TS_NET_PROXY
					: a[6] == 'p'		  ? TS_NET_PASTA
								  : TS_NET_SLIRP;
			ctx->net.program = argv[++i];
			if (ctx->net.program[0] != '/')
				return ts_err(err, -EINVAL, "%s: `%s` is not an absolute path", a,
					      ctx->net.program);
		} else if (!strcmp(a, "--net-allow") || !strcmp(a, "--net-deny")) {
			bool allow = a[6] == 'a';
			struct ts_cidr *list = allow ? ctx->net.allow : ctx->net.deny;
			size_t *n = allow ? &ctx->net.n_allow : &ctx->net.n_deny;

			NEED(1);
			if (*n >= TS_HELPER_MAX_NET_RULES)
				return ts_err(err, -E2BIG, "too many %s (at most %d)", a,
					      TS_HELPER_MAX_NET_RULES);
			if (ts_cidr_parse(argv[++i], &list[*n]) < 0)
				return ts_err(err, -EINVAL, "%s: `%s` is not an address prefix", a,
					      argv[i]);
			(*n)++;
		} else if (!strcmp(a, "--net-allow-host")) {
			char why[160];

			NEED(1);
			if (ctx->net.n_allow_host >= TS_HELPER_MAX_NET_RULES)
				return ts_err(err, -E2BIG, "too many %s (at most %d)", a,
					      TS_HELPER_MAX_NET_RULES);
			if (ts_hostpat_parse(argv[++i], &ctx->net.allow_host[ctx->net.n_allow_host],
					     why, sizeof(why)) < 0)
				return ts_err(err, -EINVAL, "%s: `%s`: %s", a, argv[i], why);
			ctx->net.n_allow_host++;
		} else if (!strcmp(a, "--net-proxy-state")) {
			NEED(1);
			ctx->net.proxy_state = argv[++i];
			if (ctx->net.proxy_state[0] != '/')
				return ts_err(err, -EINVAL, "%s: `%s` is not an absolute path", a,
					      ctx->net.proxy_state);
		} else if (!strcmp(a, "--argv0")) {
			NEED(1);
			ctx->argv0 = argv[++i];
		} else if (!strcmp(a, "--die-with-parent")) {
			ctx->die_with_parent = true;
		} else if (!strcmp(a, "--detach")) {
			ctx->detach = true;
		} else if (!strcmp(a, "--init-setid")) {
			ctx->init_setid = true;
		} else {
			return ts_err(err, -EINVAL, "unknown option `%s` (see --help)", a);
		}
	}
#undef NEED
#undef ADD
	if (n_pending)
		return ts_err(err, -EINVAL, "--overlay-src without a following --overlay");
	if (pending_owner >= 0)
		return ts_err(err, -EINVAL, "--owner without a following --tmpfs or --dir");
	if (pending_map_uid >= 0)
		return ts_err(err, -EINVAL, "--bind-owner without a following --bind or --bind-fd");
	if (i >= argc)
		return ts_err(err, -EINVAL, "no program given after `--`");
	ctx->argv = argv + i;
	if (ctx->n_ops == 0 || strcmp(ctx->ops[0].dest, "/") != 0)
		return ts_err(err, -EINVAL, "the first mount must be the root `/`");
	for (size_t k = 0; k < ctx->n_ops; k++)
		if ((r = check_dest("mount", ctx->ops[k].dest, err)) < 0)
			return r;
	if ((ctx->net.n_allow || ctx->net.n_deny) && ctx->net.mode == TS_NET_NONE)
		return ts_err(err, -EINVAL,
			      "--net-allow and --net-deny need --net-pasta, --net-slirp4netns or "
			      "--net-proxy");
	/* names go through the proxy, addresses through the routes: one or the other
	 * (toren-sandbox-policy(5), NETWORK) */
	if (ctx->net.mode == TS_NET_PROXY && (ctx->net.n_allow || !ctx->net.n_allow_host))
		return ts_err(err, -EINVAL,
			      "--net-proxy takes --net-allow-host (names), not --net-allow "
			      "(addresses), and at least one");
	if ((ctx->net.n_allow_host || ctx->net.proxy_state) && ctx->net.mode != TS_NET_PROXY)
		return ts_err(err, -EINVAL,
			      "--net-allow-host and --net-proxy-state need --net-proxy");
	if (ctx->logs_fd >= 0 && ctx->control_fd < 0)
		return ts_err(err, -EINVAL, "--logs-fd needs --control-fd");
	if (ctx->n_uid_map == 0 || ctx->n_gid_map == 0)
		return ts_err(err, -EINVAL, "--uid-map and --gid-map are required");
	/* Switching ids is only between root and the sandbox's user, both mapped: the
	 * capabilities it keeps are worth nothing beyond that pair. */
	if (ctx->init_setid && (!ts_helper_id_mapped(ctx->uid_map, ctx->n_uid_map, 0) ||
				!ts_helper_id_mapped(ctx->gid_map, ctx->n_gid_map, 0) ||
				!ts_helper_id_mapped(ctx->uid_map, ctx->n_uid_map, 1000) ||
				!ts_helper_id_mapped(ctx->gid_map, ctx->n_gid_map, 1000)))
		return ts_err(err, -EINVAL,
			      "--init-setid needs ids 0 and 1000 in both --uid-map and --gid-map");
	return 0;
}

void ts_helper_ctx_free(struct ts_helper_ctx *ctx)
{
	for (size_t i = 0; i < ctx->n_env; i++)
		free(ctx->envp[i]);
	free(ctx->envp);
	ctx->envp = NULL;
	ctx->n_env = 0;
	free(ctx->ops);
	ctx->ops = NULL;
	ctx->n_ops = 0;
}
