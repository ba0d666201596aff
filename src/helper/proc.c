/* SPDX-License-Identifier: Apache-2.0 */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "syscall.h"

static bool owner_mapped(const struct ts_idmap_line *map, size_t n, uid_t uid)
{
	for (size_t i = 0; i < n; i++)
		if (uid >= map[i].outside && uid - map[i].outside < map[i].count)
			return true;
	return false;
}

int ts_proc_open_program(const char *path, const struct ts_idmap_line *ctx_uid_map,
			 size_t n_uid_map, int *ret_fd, struct ts_error *err)
{
	_cleanup_close_ int in = -EBADF, mfd = -EBADF;
	struct stat st;
	off_t off = 0;

	in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return ts_err_errno(err, -errno, "open program `%s`", path);
	if (fstat(in, &st) < 0)
		return ts_err_errno(err, -errno, "stat program `%s`", path);
	if (!S_ISREG(st.st_mode) || st.st_size > 64 * 1024 * 1024)
		return ts_err(err, -EINVAL, "program `%s` is not a regular file of sane size",
			      path);
	/* A file that no id of the sandbox owns and that is not group- or world-writable
	 * (installed, or root's build tree under a root-range sandbox): nothing inside
	 * could change it, so it runs as it is, shared by every sandbox. Otherwise (the
	 * caller's own build tree, the caller being `user` inside) a sealed copy runs. */
	if (!owner_mapped(ctx_uid_map, n_uid_map, st.st_uid) && !(st.st_mode & 022)) {
		*ret_fd = TAKE_FD(in);
		return 0;
	}
	mfd = memfd_create("toren-sandbox-init", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return ts_err_errno(err, -errno, "memfd for `%s`", path);
	while (off < st.st_size) {
		ssize_t n = sendfile(mfd, in, NULL, (size_t)(st.st_size - off));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return ts_err_errno(err, n < 0 ? -errno : -EIO, "copy program `%s`", path);
		off += n;
	}
	if (fchmod(mfd, 0555) < 0 ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0)
		return ts_err_errno(err, -errno, "seal program copy");
	*ret_fd = TAKE_FD(mfd);
	return 0;
}

int ts_proc_set_ids(uid_t uid, gid_t gid, struct ts_error *err)
{
	/* EPERM: /proc/self/setgroups is "deny" (rootless single mapping); the inherited
	 * supplementary groups then stay, unmapped (shown as nogroup). */
	if (setgroups(0, NULL) < 0 && errno != EPERM)
		return ts_err_errno(err, -errno, "drop supplementary groups");
	if (setresgid(gid, gid, gid) < 0)
		return ts_err_errno(err, -errno, "setresgid(%u)", (unsigned)gid);
	if (setresuid(uid, uid, uid) < 0)
		return ts_err_errno(err, -errno, "setresuid(%u)", (unsigned)uid);
	return 0;
}

int ts_proc_set_rlimits(const struct ts_helper_ctx *ctx, struct ts_error *err)
{
	for (size_t i = 0; i < ctx->n_rlimits; i++)
		if (setrlimit(ctx->rlimits[i].resource, &ctx->rlimits[i].value) < 0)
			return ts_err_errno(err, -errno, "setrlimit %d", ctx->rlimits[i].resource);
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

int ts_proc_ns_rlimits(const struct ts_helper_ctx *ctx, struct ts_error *err)
{
	for (size_t i = 0; i < ctx->n_rlimits; i++) {
		int res = ctx->rlimits[i].resource;

		if (res != RLIMIT_SIGPENDING && res != RLIMIT_MSGQUEUE)
			continue;
		if (setrlimit(res, &ctx->rlimits[i].value) < 0)
			return ts_err_errno(err, -errno, "setrlimit %d before the namespaces", res);
	}
	return 0;
}

int ts_proc_close_fds(const int *pass, size_t n_pass, const int *keep, size_t n_keep,
		      struct ts_error *err)
{
	int sorted[8];
	unsigned int next;

	if (n_keep > ELEMENTSOF(sorted) || n_pass > 8)
		return ts_err(err, -E2BIG, "too many fds to keep");
	/* The caller moved every fd here to 10 and above, so these dup2s clobber nothing we
	 * still need. dup2 leaves the new fd inheritable: it is for the program. */
	for (size_t i = 0; i < n_pass; i++)
		if (dup2(pass[i], TS_HELPER_CONTROL_FD + (int)i) < 0)
			return ts_err_errno(err, -errno, "pass fd %d as %d", pass[i],
					    TS_HELPER_CONTROL_FD + (int)i);
	memcpy(sorted, keep, n_keep * sizeof(int));
	qsort(sorted, n_keep, sizeof(int), cmp_int);
	/* Everything else goes: an inherited directory fd would be a way out of the new
	 * root (CVE-2024-21626). */
	next = TS_HELPER_CONTROL_FD + (unsigned int)n_pass;
	for (size_t i = 0; i < n_keep; i++) {
		if (sorted[i] < (int)next)
			continue;
		if ((unsigned)sorted[i] > next &&
		    ts_close_range(next, (unsigned)sorted[i] - 1, 0) < 0)
			return ts_err_errno(err, -errno, "close inherited fds");
		next = (unsigned)sorted[i] + 1;
	}
	if (ts_close_range(next, UINT_MAX, 0) < 0)
		return ts_err_errno(err, -errno, "close inherited fds");
	return 0;
}

int ts_proc_exec(int prog_fd, char **argv, char **envp, struct ts_error *err)
{
	static char *empty[] = { NULL };

	execveat(prog_fd, "", argv, envp ? envp : empty, AT_EMPTY_PATH);
	return ts_err_errno(err, -errno, "execute `%s`", argv[0]);
}
