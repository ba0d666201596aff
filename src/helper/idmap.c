/* SPDX-License-Identifier: Apache-2.0 */
#include "idmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "util.h"

/*
 * Does any outside range of l include the id that is 0 of our parent namespace? Reads our
 * own map once: a line "IN OUT N" says our IN..IN+N-1 are the parent's OUT..OUT+N-1, so
 * the parent's 0 is our IN where OUT is 0. In the initial namespace the map is "0 0
 * 4294967295".
 */
static int check_lines(const char *what, const char *self_map, const struct ts_idmap_line *l,
		       size_t n, struct ts_error *err)
{
	_cleanup_free_ char *buf = NULL;
	char *line, *save = NULL;
	int r;

	r = ts_read_file_at(AT_FDCWD, self_map, 65536, &buf, NULL);
	if (r < 0)
		return ts_err_errno(err, r, "read `%s`", self_map);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long in, out, cnt;

		if (sscanf(line, "%lu %lu %lu", &in, &out, &cnt) != 3 || out != 0)
			continue;
		for (size_t i = 0; i < n; i++)
			if (in >= l[i].outside && in - l[i].outside < l[i].count)
				return ts_err(err, -EPERM,
					      "%s map `%lu %lu %lu` would map the host's root into "
					      "the sandbox; refusing",
					      what, l[i].inside, l[i].outside, l[i].count);
	}
	return 0;
}

static int write_map(int procfd, const char *file, const struct ts_idmap_line *l, size_t n,
		     struct ts_error *err)
{
	char buf[TS_HELPER_MAX_IDMAP * 40] = "";
	size_t len = 0;
	int r;

	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%lu %lu %lu\n", l[i].inside,
					l[i].outside, l[i].count);
	r = ts_write_file_at(procfd, file, buf);
	if (r < 0)
		return ts_err_errno(err, r, "write `%s` of the sandbox", file);
	return 0;
}

static int run_newidmap(const char *tool, pid_t pid, const struct ts_idmap_line *l, size_t n,
			struct ts_error *err)
{
	static const char *const dirs[] = { "/usr/bin/", "/bin/", "/usr/sbin/", "/usr/local/bin/" };
	char path[64], pidbuf[16], nums[TS_HELPER_MAX_IDMAP * 3][16];
	char *argv[2 + TS_HELPER_MAX_IDMAP * 3 + 1];
	char *envp[] = { NULL };
	size_t k = 0;
	pid_t child;
	int status;

	path[0] = '\0';
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		snprintf(path, sizeof(path), "%s%s", dirs[i], tool);
		if (access(path, X_OK) == 0)
			break;
		path[0] = '\0';
	}
	if (!path[0])
		return ts_err(err, -ENOENT,
			      "`%s` not found: install the `uidmap` package or run without "
			      "subordinate ids",
			      tool);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	argv[k++] = path;
	argv[k++] = pidbuf;
	for (size_t i = 0; i < n; i++) {
		snprintf(nums[3 * i], 16, "%lu", l[i].inside);
		snprintf(nums[3 * i + 1], 16, "%lu", l[i].outside);
		snprintf(nums[3 * i + 2], 16, "%lu", l[i].count);
		argv[k++] = nums[3 * i];
		argv[k++] = nums[3 * i + 1];
		argv[k++] = nums[3 * i + 2];
	}
	argv[k] = NULL;
	child = fork();
	if (child < 0)
		return ts_err_errno(err, -errno, "fork for `%s`", tool);
	if (child == 0) {
		execve(path, argv, envp);
		_exit(127);
	}
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return ts_err_errno(err, -errno, "wait for `%s`", tool);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return ts_err(err, -EPERM,
			      "`%s` failed (status %d): check /etc/subuid and /etc/subgid", path,
			      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	return 0;
}

int ts_idmap_check(const struct ts_helper_ctx *ctx, struct ts_error *err)
{
	int r = check_lines("uid", "/proc/self/uid_map", ctx->uid_map, ctx->n_uid_map, err);

	return r < 0 ? r
		     : check_lines("gid", "/proc/self/gid_map", ctx->gid_map, ctx->n_gid_map, err);
}

int ts_idmap_apply(pid_t pid, const struct ts_helper_ctx *ctx, struct ts_error *err)
{
	_cleanup_close_ int procfd = -EBADF;
	char path[64];
	int r;

	if (ctx->newidmap) {
		r = run_newidmap("newuidmap", pid, ctx->uid_map, ctx->n_uid_map, err);
		if (r < 0)
			return r;
		return run_newidmap("newgidmap", pid, ctx->gid_map, ctx->n_gid_map, err);
	}

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	procfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (procfd < 0)
		return ts_err_errno(err, -errno, "open `%s`", path);
	/* Without CAP_SETGID over the parent namespace the kernel only accepts a gid map
	 * once setgroups(2) is disabled for the namespace (CVE-2014-8989: dropping a group
	 * could otherwise grant access). As root, keep setgroups so the child can drop the
	 * supplementary groups it inherited (root's group 0 among them). */
	if (getuid() != 0) {
		r = ts_write_file_at(procfd, "setgroups", "deny");
		if (r < 0 && r != -ENOENT)
			return ts_err_errno(err, r, "write `setgroups` of the sandbox");
	}
	r = write_map(procfd, "uid_map", ctx->uid_map, ctx->n_uid_map, err);
	if (r < 0)
		return r;
	return write_map(procfd, "gid_map", ctx->gid_map, ctx->n_gid_map, err);
}
