/* SPDX-License-Identifier: Apache-2.0 */
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "util.h"

static int write_knob(const char *dir, const char *knob, const char *value, bool optional,
		      struct ts_error *err)
{
	char path[512];
	int r;

	snprintf(path, sizeof(path), "%s/%s", dir, knob);
	r = ts_write_file_at(AT_FDCWD, path, value);
	if (r == -ENOENT && optional)
		return 0;
	if (r < 0)
		return ts_err_errno(err, r, "write `%s` to `%s`", value, path);
	return 0;
}

/* mkdir <mount><own>/toren-sandbox/<name>; returns the leaf in plan->paths. */
static int make_leaf(struct ts_cgroup_plan *plan, const char *mount, const char *controller,
		     struct ts_error *err)
{
	char own[256], dir[256];
	int r;

	if (plan->n_paths >= ELEMENTSOF(plan->paths))
		return ts_err(err, -E2BIG, "too many cgroup hierarchies");
	r = ts_self_cgroup(controller, own, sizeof(own));
	if (r < 0)
		return ts_err_errno(err, r, "find our cgroup for `%s`",
				    controller[0] ? controller : "unified");
	if (!strcmp(own, "/"))
		own[0] = '\0';
	if ((size_t)snprintf(dir, sizeof(dir), "%s%s/toren-sandbox", mount, own) >= sizeof(dir))
		return ts_err(err, -ENAMETOOLONG, "cgroup path too long");
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return ts_err_errno(err, -errno, "create cgroup `%s`", dir);
	if (!controller[0]) {
		/* cgroup v2: the leaves' knobs exist only when the intermediate cgroup hands the
		 * controllers down (it holds no process, so it may). */
		char ctl[64];
		int k;

		snprintf(ctl, sizeof(ctl), "%s%s%s", plan->memory_bytes ? "+memory " : "",
			 plan->pids ? "+pids " : "", plan->cpu_quota_us ? "+cpu" : "");
		k = write_knob(dir, "cgroup.subtree_control", ctl, false, err);
		if (k < 0)
			return k;
	}
	if ((size_t)snprintf(plan->paths[plan->n_paths], sizeof(plan->paths[0]), "%s/%s", dir,
			     plan->name) >= sizeof(plan->paths[0]))
		return ts_err(err, -ENAMETOOLONG, "cgroup path too long");
	if (mkdir(plan->paths[plan->n_paths], 0755) < 0 && errno != EEXIST)
		return ts_err_errno(err, -errno, "create cgroup `%s`", plan->paths[plan->n_paths]);
	plan->n_paths++;
	return 0;
}

static bool is_fs(const char *path, long magic)
{
	struct statfs sfs;

	return statfs(path, &sfs) == 0 && sfs.f_type == magic;
}

static int setup_v1(struct ts_cgroup_plan *plan, pid_t pid, struct ts_error *err)
{
	char num[64], pidbuf[32];
	int r;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	if (plan->memory_bytes) {
		r = make_leaf(plan, "/sys/fs/cgroup/memory", "memory", err);
		if (r < 0)
			return r;
		snprintf(num, sizeof(num), "%llu", plan->memory_bytes);
		/* memsw must stay >= the memory limit: set memory first; memsw (when swap
		 * accounting exists) keeps swap from extending the limit. */
		if ((r = write_knob(plan->paths[plan->n_paths - 1], "memory.limit_in_bytes", num,
				    false, err)) < 0 ||
		    (r = write_knob(plan->paths[plan->n_paths - 1], "memory.memsw.limit_in_bytes",
				    num, true, err)) < 0 ||
		    (r = write_knob(plan->paths[plan->n_paths - 1], "cgroup.procs", pidbuf, false,
				    err)) < 0)
			return r;
	}
	if (plan->pids) {
		r = make_leaf(plan, "/sys/fs/cgroup/pids", "pids", err);
		if (r < 0)
			return r;
		snprintf(num, sizeof(num), "%llu", plan->pids);
		if ((r = write_knob(plan->paths[plan->n_paths - 1], "pids.max", num, false, err)) <
			    0 ||
		    (r = write_knob(plan->paths[plan->n_paths - 1], "cgroup.procs", pidbuf, false,
				    err)) < 0)
			return r;
	}
	if (plan->cpu_quota_us) {
		r = make_leaf(plan, "/sys/fs/cgroup/cpu", "cpu", err);
		if (r < 0)
			return r;
		snprintf(num, sizeof(num), "%llu", plan->cpu_quota_us);
		if ((r = write_knob(plan->paths[plan->n_paths - 1], "cpu.cfs_period_us", "100000",
				    false, err)) < 0 ||
		    (r = write_knob(plan->paths[plan->n_paths - 1], "cpu.cfs_quota_us", num, false,
				    err)) < 0 ||
		    (r = write_knob(plan->paths[plan->n_paths - 1], "cgroup.procs", pidbuf, false,
				    err)) < 0)
			return r;
	}
	return 0;
}

static int setup_v2(struct ts_cgroup_plan *plan, const char *mount, pid_t pid, struct ts_error *err)
{
	char num[64], pidbuf[32];
	const char *leaf;
	int r;

	r = make_leaf(plan, mount, "", err);
	if (r < 0)
		return r;
	leaf = plan->paths[plan->n_paths - 1];
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	if (plan->memory_bytes) {
		snprintf(num, sizeof(num), "%llu", plan->memory_bytes);
		if ((r = write_knob(leaf, "memory.max", num, false, err)) < 0 ||
		    (r = write_knob(leaf, "memory.swap.max", "0", true, err)) < 0)
			return r;
	}
	if (plan->pids) {
		snprintf(num, sizeof(num), "%llu", plan->pids);
		if ((r = write_knob(leaf, "pids.max", num, false, err)) < 0)
			return r;
	}
	if (plan->cpu_quota_us) {
		snprintf(num, sizeof(num), "%llu 100000", plan->cpu_quota_us);
		if ((r = write_knob(leaf, "cpu.max", num, false, err)) < 0)
			return r;
	}
	return write_knob(leaf, "cgroup.procs", pidbuf, false, err);
}

int ts_cgroup_setup(struct ts_cgroup_plan *plan, pid_t pid, struct ts_error *err)
{
	int r;

	if (!plan->name || (!plan->memory_bytes && !plan->pids && !plan->cpu_quota_us))
		return 0;
	if (is_fs("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC))
		r = setup_v2(plan, "/sys/fs/cgroup", pid, err);
	else if (is_fs("/sys/fs/cgroup/memory", CGROUP_SUPER_MAGIC) ||
		 is_fs("/sys/fs/cgroup/pids", CGROUP_SUPER_MAGIC))
		r = setup_v1(plan, pid, err);
	else
		r = ts_err(err, -EOPNOTSUPP, "no cgroup hierarchy found under `/sys/fs/cgroup`");
	if (r < 0)
		ts_err_prefix(err, r, "cgroup limits");
	return r;
}

void ts_cgroup_cleanup(struct ts_cgroup_plan *plan)
{
	for (size_t i = 0; i < plan->n_paths; i++) {
		/* the kernel may still be tearing down the last task: retry briefly */
		for (int tries = 0; tries < 100; tries++) {
			if (rmdir(plan->paths[i]) == 0 || errno == ENOENT)
				break;
			if (errno != EBUSY)
				break;
			usleep(1000);
		}
	}
	plan->n_paths = 0;
}
