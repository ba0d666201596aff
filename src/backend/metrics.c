// SPDX-License-Identifier: Apache-2.0
/* SandboxMetric numbers of a local sandbox, read from the host (metrics.h). */
#include "metrics.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "util.h"

#define METRICS_DEPTH_MAX 64

static void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

unsigned ts_metrics_host_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (unsigned)n : 1;
}

uint64_t ts_metrics_host_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);

	return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}

/* A small file's first line into buf; 0 or -errno. */
static int read_line(const char *path, char *buf, size_t len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int read_u64(const char *path, uint64_t *ret)
{
	char buf[64], *end;
	int r = read_line(path, buf, sizeof(buf));

	if (r < 0)
		return r;
	errno = 0;
	*ret = strtoull(buf, &end, 10);
	return errno || end == buf ? -EINVAL : 0;
}

/* "key value" lines of a cgroup stat file: the value of key. */
static int stat_field(const char *path, const char *key, uint64_t *ret)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char line[256];
	size_t klen = strlen(key);

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ' ')
			return sscanf(line + klen + 1, "%lu", ret) == 1 ? 0 : -EINVAL;
	return -ENOENT;
}

/*
 * The directory of the sandbox's own cgroup for controller ctrl ("" for the v2 hierarchy)
 * as init's /proc/PID/cgroup names it, when it is the helper's `toren-sandbox/ts-<id>`:
 * a cgroup shared with anything else would measure more than the sandbox.
 */
static int own_cgroup(pid_t init_pid, const char *id, const char *ctrl, char *buf, size_t len)
{
	char path[64], line[1024], leaf[96];
	_cleanup_fclose_ FILE *f = NULL;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)init_pid);
	snprintf(leaf, sizeof(leaf), "/toren-sandbox/ts-%s", id);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *ctrls = strchr(line, ':'), *cg;
		size_t cl, ll = strlen(leaf);

		if (!ctrls || !(cg = strchr(++ctrls, ':')))
			continue;
		*cg++ = '\0';
		cg[strcspn(cg, "\n")] = '\0';
		cl = strlen(cg);
		if (cl < ll || strcmp(cg + cl - ll, leaf) != 0)
			continue;
		if (*ctrl ? !strstr(ctrls, ctrl) : *ctrls != '\0')
			continue;
		/* v2 is at /sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host */
		if (!*ctrl) {
			snprintf(buf, len, "/sys/fs/cgroup%s", cg);
			if (access(buf, F_OK) != 0)
				snprintf(buf, len, "/sys/fs/cgroup/unified%s", cg);
		} else {
			snprintf(buf, len, "/sys/fs/cgroup/%s%s", ctrl, cg);
		}
		return access(buf, F_OK) == 0 ? 0 : -ENOENT;
	}
	return -ENOENT;
}

/* CPU and memory from the sandbox's cgroups; false when it has none of its own. */
static bool from_cgroup(pid_t init_pid, const char *id, struct ts_metric *m)
{
	char dir[1200], path[1300];
	uint64_t v;
	bool cpu = false, mem = false;

	if (own_cgroup(init_pid, id, "cpuacct", dir, sizeof(dir)) == 0) {
		snprintf(path, sizeof(path), "%s/cpuacct.usage", dir);
		cpu = read_u64(path, &m->cpu_ns) == 0;
	}
	if (own_cgroup(init_pid, id, "memory", dir, sizeof(dir)) == 0) {
		snprintf(path, sizeof(path), "%s/memory.usage_in_bytes", dir);
		mem = read_u64(path, &m->mem_used) == 0;
		snprintf(path, sizeof(path), "%s/memory.limit_in_bytes", dir);
		if (read_u64(path, &v) == 0 && v < m->mem_total)
			m->mem_total = v;
		snprintf(path, sizeof(path), "%s/memory.stat", dir);
		if (stat_field(path, "cache", &v) == 0)
			m->mem_cache = v;
	}
	if (own_cgroup(init_pid, id, "", dir, sizeof(dir)) == 0) {
		snprintf(path, sizeof(path), "%s/cpu.stat", dir);
		if (!cpu && stat_field(path, "usage_usec", &v) == 0) {
			m->cpu_ns = v * 1000;
			cpu = true;
		}
		snprintf(path, sizeof(path), "%s/memory.current", dir);
		if (!mem && read_u64(path, &m->mem_used) == 0) {
			mem = true;
			snprintf(path, sizeof(path), "%s/memory.max", dir);
			if (read_u64(path, &v) == 0 && v < m->mem_total)
				m->mem_total = v;
			snprintf(path, sizeof(path), "%s/memory.stat", dir);
			if (stat_field(path, "file", &v) == 0)
				m->mem_cache = v;
		}
	}
	return cpu && mem;
}

/* utime + stime + cutime + cstime (ticks) and resident/shared pages of one process. */
static int proc_usage(pid_t pid, uint64_t *ticks, uint64_t *rss, uint64_t *shared)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st, cut, cst, size, res, shr;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	r = read_line(path, buf, sizeof(buf));
	if (r < 0)
		return r;
	/* the command name may hold anything, ')' included: the fields follow the last one */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu",
			 &ut, &st, &cut, &cst) != 4)
		return -EINVAL;
	*ticks = ut + st + cut + cst;
	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	if (read_line(path, buf, sizeof(buf)) == 0 &&
	    sscanf(buf, "%llu %llu %llu", &size, &res, &shr) == 3) {
		*rss = res;
		*shared = shr;
	}
	return 0;
}

/* init and its descendants (breadth first, bounded), from /proc/PID/task/TID/children. */
static size_t descendants(pid_t init_pid, pid_t *pids, size_t max)
{
	size_t n = 0;

	pids[n++] = init_pid;
	for (size_t i = 0; i < n && n < max; i++) {
		char path[64];
		_cleanup_(closedirp) DIR *d = NULL;
		struct dirent *de;

		snprintf(path, sizeof(path), "/proc/%d/task", (int)pids[i]);
		d = opendir(path);
		while (d && (de = readdir(d)) && n < max) {
			char cpath[128], line[4096], *tok, *save = NULL;

			if (de->d_name[0] == '.')
				continue;
			snprintf(cpath, sizeof(cpath), "/proc/%d/task/%.20s/children", (int)pids[i],
				 de->d_name);
			if (read_line(cpath, line, sizeof(line)) < 0)
				continue;
			for (tok = strtok_r(line, " ", &save); tok && n < max;
			     tok = strtok_r(NULL, " ", &save))
				pids[n++] = (pid_t)atoi(tok);
		}
	}
	return n;
}

static void from_proc(pid_t init_pid, struct ts_metric *m)
{
	_cleanup_free_ pid_t *pids = calloc(TS_METRICS_MAX_PROCS, sizeof(pid_t));
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	uint64_t ticks = 0, rss = 0, shared = 0;
	size_t n;

	if (!pids)
		return;
	n = descendants(init_pid, pids, TS_METRICS_MAX_PROCS);
	for (size_t i = 0; i < n; i++) {
		uint64_t t = 0, r = 0, s = 0;

		if (proc_usage(pids[i], &t, &r, &s) == 0) {
			ticks += t;
			rss += r;
			shared += s;
		}
	}
	m->cpu_ns = tck > 0 ? ticks * (1000000000ULL / (uint64_t)tck) : 0;
	m->mem_used = rss * (uint64_t)page;
	m->mem_cache = shared * (uint64_t)page;
}

/* Blocks used below dirfd, never following links nor leaving the file system. */
static void disk_walk(int dirfd, dev_t dev, unsigned depth, size_t *budget, uint64_t *used)
{
	_cleanup_(closedirp) DIR *d = fdopendir(dirfd);
	struct dirent *de;

	if (!d) {
		close(dirfd);
		return;
	}
	while ((de = readdir(d)) && *budget) {
		struct stat st;
		int fd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		(*budget)--;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		*used += (uint64_t)st.st_blocks * 512;
		if (!S_ISDIR(st.st_mode) || st.st_dev != dev || depth >= METRICS_DEPTH_MAX)
			continue;
		fd = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			disk_walk(fd, dev, depth + 1, budget, used);
	}
}

static void from_disk(const char *const *dirs, struct ts_metric *m)
{
	size_t budget = TS_METRICS_MAX_FILES;

	for (size_t i = 0; dirs && dirs[i]; i++) {
		int fd = open(dirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct statvfs vfs;
		struct stat st;

		if (fd < 0)
			continue;
		if (i == 0 && fstatvfs(fd, &vfs) == 0)
			m->disk_total = (uint64_t)vfs.f_blocks * vfs.f_frsize;
		if (fstat(fd, &st) < 0) {
			close(fd);
			continue;
		}
		disk_walk(fd, st.st_dev, 0, &budget, &m->disk_used);
	}
}

int ts_metrics_measure(pid_t init_pid, const char *id, const char *const *dirs,
		       const struct ts_metric *prev, long long now_ms, struct ts_metric *out,
		       struct ts_error *err)
{
	char path[64];

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/%d", (int)init_pid);
	if (init_pid <= 0 || access(path, F_OK) != 0)
		return ts_err(err, -ESRCH, "sandbox `%s` has no init to measure", id);
	out->ts_ms = now_ms;
	out->cpu_count = ts_metrics_host_cpus();
	out->mem_total = ts_metrics_host_memory();
	if (!from_cgroup(init_pid, id, out))
		from_proc(init_pid, out);
	from_disk(dirs, out);
	if (prev && prev->ts_ms > 0 && now_ms > prev->ts_ms && out->cpu_ns >= prev->cpu_ns) {
		double busy = (double)(out->cpu_ns - prev->cpu_ns) / 1e6; /* ms */
		double pct = busy * 100.0 / (double)(now_ms - prev->ts_ms) / out->cpu_count;

		out->cpu_pct = pct < 0 ? 0 : pct > 100 ? 100 : pct;
	}
	return 0;
}
