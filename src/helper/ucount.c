/* SPDX-License-Identifier: Apache-2.0 */
#include "ucount.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "util.h"

/* The per-user-namespace budgets this helper knows (kernel/ucount.c's user_table). */
static const char *const names[] = {
	"max_user_namespaces",	 "max_pid_namespaces",	"max_uts_namespaces",
	"max_ipc_namespaces",	 "max_net_namespaces",	"max_mnt_namespaces",
	"max_cgroup_namespaces", "max_time_namespaces", "max_inotify_instances",
	"max_inotify_watches",	 "max_fanotify_groups", "max_fanotify_marks",
};

int ts_ucount_parse(const char *s, struct ts_helper_ctx *ctx, struct ts_error *err)
{
	const char *eq = strchr(s, '=');
	unsigned long long v;

	if (ctx->n_ucounts >= TS_HELPER_MAX_UCOUNTS)
		return ts_err(err, -E2BIG, "too many --userns-limit options");
	if (!eq || ts_parse_ull(eq + 1, &v) < 0 || v > 0x7fffffffULL)
		return ts_err(err, -EINVAL, "bad --userns-limit `%s`: want `NAME=N`", s);
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (strlen(names[i]) == (size_t)(eq - s) &&
		    !strncmp(s, names[i], (size_t)(eq - s))) {
			ctx->ucounts[ctx->n_ucounts].name = names[i];
			ctx->ucounts[ctx->n_ucounts++].value = v;
			return 0;
		}
	return ts_err(err, -EINVAL, "bad --userns-limit `%s`: no such budget", s);
}

int ts_ucount_open(const struct ts_helper_ctx *ctx, struct ts_ucount_files *f, struct ts_error *err)
{
	_cleanup_close_ int dir = -EBADF;

	for (size_t i = 0; i < TS_HELPER_MAX_UCOUNTS; i++)
		f->fds[i] = -1;
	if (!ctx->n_ucounts)
		return 0;
	dir = open("/proc/sys/user", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return ts_err_errno(err, -errno, "open `/proc/sys/user`");
	for (size_t i = 0; i < ctx->n_ucounts; i++) {
		f->fds[i] = openat(dir, ctx->ucounts[i].name, O_WRONLY | O_CLOEXEC);
		if (f->fds[i] < 0 && errno != ENOENT) /* ENOENT: an older kernel */
			return ts_err_errno(err, -errno, "open `/proc/sys/user/%s`",
					    ctx->ucounts[i].name);
	}
	return 0;
}

int ts_ucount_write(const struct ts_helper_ctx *ctx, struct ts_ucount_files *f,
		    struct ts_error *err)
{
	int r = 0;

	for (size_t i = 0; i < ctx->n_ucounts; i++) {
		char v[32];

		if (f->fds[i] < 0)
			continue;
		snprintf(v, sizeof(v), "%llu\n", ctx->ucounts[i].value);
		if (r == 0 && ts_write_all(f->fds[i], v, strlen(v)) < 0)
			r = ts_err_errno(err, -errno, "set `/proc/sys/user/%s` to %llu",
					 ctx->ucounts[i].name, ctx->ucounts[i].value);
		close(f->fds[i]);
		f->fds[i] = -1;
	}
	return r;
}
