/* SPDX-License-Identifier: Apache-2.0 */
#include "copytree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/treecopy.h"
#include "cleanup.h"
#include "helper.h"
#include "idmap.h"
#include "ns.h"
#include "proc.h"
#include "setuid.h"
#include "sync.h"
#include "util.h"

#define COPY_SRC_FD 3
#define COPY_DST_FD 4

/* What the child sends back once the copy ended: its counters and its error. */
struct copy_result {
	struct ts_error err;
	uint64_t bytes, entries;
};

static int parse_u64(const char *opt, const char *s, uint64_t *ret, struct ts_error *err)
{
	unsigned long long v;

	if (ts_parse_ull(s, &v) < 0)
		return ts_err(err, -EINVAL, "%s: bad number `%s`", opt, s);
	*ret = v;
	return 0;
}

static int parse_args(int argc, char **argv, struct ts_helper_ctx *ctx, struct ts_treecopy *c,
		      bool *remove, struct ts_error *err)
{
	unsigned long long in, out, cnt;
	char tail;
	int r;

	memset(ctx, 0, sizeof(*ctx));
	ctx->seccomp_fd = ctx->sync_fd = ctx->control_fd = ctx->logs_fd = -EBADF;
	ctx->net.proxy_fd = -EBADF;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--newidmap")) {
			ctx->newidmap = true;
			continue;
		}
		if (!strcmp(a, "--remove")) {
			*remove = true;
			continue;
		}
		if (i + 1 >= argc)
			return ts_err(err, -EINVAL, "--copy-tree: option `%s` needs an argument",
				      a);
		if (!strcmp(a, "--max-bytes"))
			r = parse_u64(a, argv[++i], &c->max_bytes, err);
		else if (!strcmp(a, "--max-entries"))
			r = parse_u64(a, argv[++i], &c->max_entries, err);
		else if (!strcmp(a, "--used-bytes"))
			r = parse_u64(a, argv[++i], &c->bytes, err);
		else if (!strcmp(a, "--used-entries"))
			r = parse_u64(a, argv[++i], &c->entries, err);
		else if (!strcmp(a, "--owner")) {
			i++;
			if (sscanf(argv[i], "%llu:%llu%c", &in, &out, &tail) != 2 ||
			    in > 0xfffffffeULL || out > 0xfffffffeULL)
				return ts_err(err, -EINVAL, "bad owner `%s`: want `UID:GID`",
					      argv[i]);
			c->set_owner = true;
			c->owner_uid = (uint32_t)in;
			c->owner_gid = (uint32_t)out;
			r = 0;
		} else if (!strcmp(a, "--uid-map") || !strcmp(a, "--gid-map")) {
			struct ts_idmap_line *l = a[2] == 'u' ? ctx->uid_map : ctx->gid_map;
			size_t *n = a[2] == 'u' ? &ctx->n_uid_map : &ctx->n_gid_map;

			i++;
			if (*n >= TS_HELPER_MAX_IDMAP)
				return ts_err(err, -E2BIG, "too many id map lines (at most %d)",
					      TS_HELPER_MAX_IDMAP);
			if (sscanf(argv[i], "%llu %llu %llu%c", &in, &out, &cnt, &tail) != 3 ||
			    cnt == 0 || in + cnt > 0xffffffffULL || out + cnt > 0xffffffffULL)
				return ts_err(err, -EINVAL,
					      "bad id map `%s`: want `INSIDE OUTSIDE COUNT`",
					      argv[i]);
			l[(*n)++] = (struct ts_idmap_line){ in, out, cnt };
			r = 0;
		} else
			return ts_err(err, -EINVAL, "--copy-tree: unknown option `%s`", a);
		if (r < 0)
			return r;
	}
	if (ctx->n_uid_map == 0 || ctx->n_gid_map == 0)
		return ts_err(err, -EINVAL, "--copy-tree: --uid-map and --gid-map are required");
	/* the copier becomes root of the namespace: there must be one */
	if (!ts_helper_id_mapped(ctx->uid_map, ctx->n_uid_map, 0) ||
	    !ts_helper_id_mapped(ctx->gid_map, ctx->n_gid_map, 0))
		return ts_err(err, -EINVAL, "--copy-tree: the maps need id 0 inside");
	/* ids of the namespace: an owner outside the maps is no id the copier may give */
	if (c->set_owner && (!ts_helper_id_mapped(ctx->uid_map, ctx->n_uid_map, c->owner_uid) ||
			     !ts_helper_id_mapped(ctx->gid_map, ctx->n_gid_map, c->owner_gid)))
		return ts_err(err, -EINVAL, "--copy-tree: --owner %u:%u is not mapped by the maps",
			      (unsigned)c->owner_uid, (unsigned)c->owner_gid);
	if (c->set_owner && *remove)
		return ts_err(err, -EINVAL, "--copy-tree: --owner and --remove exclude each other");
	return 0;
}

/* The fds are the caller's open directories; anything else is a misuse. */
static int check_dirs(bool remove, struct ts_error *err)
{
	for (int fd = COPY_SRC_FD; fd <= (remove ? COPY_SRC_FD : COPY_DST_FD); fd++) {
		struct stat st;

		if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode))
			return ts_err(err, -EBADF, "--copy-tree: fd %d is not an open directory",
				      fd);
		if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
			return ts_err_errno(err, -errno, "--copy-tree: fd %d", fd);
	}
	return 0;
}

/* --remove: empty the directory open as fd 3 (its owner removes it, and fd 3, itself) */
static int empty_dir(struct ts_error *err)
{
	DIR *d;
	struct dirent *de;
	int fd = fcntl(COPY_SRC_FD, F_DUPFD_CLOEXEC, 10), r = 0, k;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return ts_err_errno(err, -errno, "--remove: read fd %d", COPY_SRC_FD);
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    (k = ts_rm_rf_at(COPY_SRC_FD, de->d_name)) < 0 && !r)
			r = ts_err_errno(err, k, "--remove: remove `%s`", de->d_name);
	closedir(d);
	return r;
}

static void child_main(int sock, bool setuid_mode, bool remove, struct ts_treecopy *c)
{
	struct copy_result res = { 0 };
	int r;

	/* die with the helper; and, started setuid, be dumpable so that the parent (the
	 * caller again) may write our maps, as a sandbox's child does (main.c) */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) {
		ts_err_errno(&res.err, -errno, "set parent-death signal");
		goto out;
	}
	if (setuid_mode && (prctl(PR_SET_DUMPABLE, 1) < 0 || ts_sync_send_ready(sock) < 0)) {
		ts_err_errno(&res.err, -errno, "make the copier dumpable for its id maps");
		goto out;
	}
	r = ts_sync_wait_go(sock);
	if (r < 0) {
		ts_err(&res.err, r, "the helper gave up before the copy");
		goto out;
	}
	/* root of the namespace: its capabilities cover every file whose owner is mapped,
	 * which is every file the sandbox made; nothing outside the maps is reachable */
	if (ts_proc_set_ids(0, 0, &res.err) < 0)
		goto out;
	if (prctl(PR_SET_DUMPABLE, 0) < 0) {
		ts_err_errno(&res.err, -errno, "make the copier non-dumpable");
		goto out;
	}
	umask(0);
	if (remove)
		empty_dir(&res.err);
	else
		ts_treecopy(COPY_SRC_FD, COPY_DST_FD, c, &res.err);
out:
	res.bytes = c->bytes;
	res.entries = c->entries;
	if (send(sock, &res, sizeof(res), MSG_NOSIGNAL) < 0)
		_exit(TS_HELPER_EXIT_SETUP);
	_exit(0);
}

static int fail(const struct ts_error *err)
{
	int code = err->code > 0 && err->code < TS_HELPER_EXIT_SETUP ? err->code : EIO;

	fprintf(stderr, "toren-sandbox-helper: %s\n", err->msg);
	return code;
}

int ts_copytree_main(int argc, char **argv)
{
	struct ts_helper_ctx ctx;
	struct ts_treecopy c = { 0 };
	struct ts_error err = { 0 };
	struct copy_result res = { 0 };
	int sp[2] = { -EBADF, -EBADF }, pidfd = -EBADF, status, r;
	bool setuid_mode, remove = false;
	ssize_t n;
	pid_t child;

	if (parse_args(argc, argv, &ctx, &c, &remove, &err) < 0) {
		fail(&err);
		return TS_HELPER_EXIT_SETUP;
	}
	/* First thing after parsing (which only reads argv), as for a sandbox: setuid, the
	 * caller's ids and CAP_SYS_ADMIN (permitted) only, and maps the caller may ask for
	 * (own id, or subordinate ids newuidmap checks) */
	if (ts_setuid_enter(&ctx, &setuid_mode, &err) < 0 || check_dirs(remove, &err) < 0 ||
	    ts_idmap_check(&ctx, &err) < 0) {
		fail(&err);
		return TS_HELPER_EXIT_SETUP;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		ts_err_errno(&err, -errno, "socketpair");
		fail(&err);
		return TS_HELPER_EXIT_SETUP;
	}
	if (setuid_mode && ts_setuid_raise(&err) < 0) {
		fail(&err);
		return TS_HELPER_EXIT_SETUP;
	}
	child = ts_ns_clone_user(&pidfd, &err);
	if (setuid_mode && child != 0) {
		struct ts_error e2 = { 0 };

		if (ts_setuid_leave(&e2) < 0 && child > 0) {
			kill(child, SIGKILL);
			fail(&e2);
			return TS_HELPER_EXIT_SETUP;
		}
	}
	if (child < 0) {
		fail(&err);
		return TS_HELPER_EXIT_SETUP;
	}
	if (child == 0) {
		close(sp[0]);
		child_main(sp[1], setuid_mode, remove, &c);
	}
	close(sp[1]);
	r = setuid_mode ? ts_sync_wait_ready(sp[0], &err) : 0;
	if (r >= 0)
		r = ts_idmap_apply(child, &ctx, &err);
	ts_sync_send_go(sp[0], r < 0 ? 'x' : 'g');
	n = recv(sp[0], &res, sizeof(res), 0);
	close(sp[0]);
	close(pidfd);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (r < 0) {
		fail(&err);
		return TS_HELPER_EXIT_SETUP;
	}
	if (n != (ssize_t)sizeof(res)) {
		ts_err(&err, -EIO, "--copy-tree: the copier ended without a result (status %d)",
		       status);
		fail(&err);
		return TS_HELPER_EXIT_SETUP;
	}
	res.err.msg[sizeof(res.err.msg) - 1] = '\0';
	if (res.err.code)
		return fail(&res.err);
	printf("entries %" PRIu64 " bytes %" PRIu64 "\n", res.entries, res.bytes);
	return fflush(stdout) == 0 ? 0 : EIO;
}
