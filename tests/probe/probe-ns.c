// SPDX-License-Identifier: Apache-2.0
/*
 * NS, EV, DV: namespaces, procfs, sysfs, cgroups, credentials, environment and
 * devices (security-cases.md §B.2, §B.6, §B.7).
 *
 * No case ever writes to a kernel tunable: opening for write is the test, and an fd
 * that opens is closed untouched (a broken sandbox must not become a broken host).
 */
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

extern char **environ;

/* The canary pid: from argv, else from the file the harness left in the workspace. */
static pid_t canary_pid(struct probe_ctx *ctx)
{
	char buf[32];
	if (ctx->canary_pid > 0)
		return ctx->canary_pid;
	if (read_file("yard-canary.pid", buf, sizeof(buf)) > 0)
		return (pid_t)strtol(buf, NULL, 10);
	return 0;
}

/* Does a visible /proc/<pid> belong to the host canary (argv carries the marker)? */
static bool pid_is_canary(pid_t pid, struct probe_ctx *ctx)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	ssize_t n = read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n != -ENOENT && n != -ESRCH; /* exists but unreadable: assume the worst */
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	(void)ctx;
	return strstr(buf, "sleep") != NULL; /* nothing inside runs sleep during `all` */
}

PROBE_CASE(ns01_pids)
{
	pid_t pids[1024];
	char buf[64];
	size_t n = proc_pids(pids, 1024);
	CTL_OK(r, "kill(parent,0)", kill(getppid(), 0));
	if (n < 2)
		res_fail(r, "ctl: only %zu pids visible (expected at least self and parent)", n);
	if (n > 16)
		res_fail(r, "%zu processes visible (host pid namespace?)", n);
	else
		res_note(r, "visible=%zu", n);
	/* In a pid namespace only its init has PPid 0; the host has pid 1 and kthreadd. */
	size_t roots = 0;
	for (size_t i = 0; i < n && i < 1024; i++)
		if (proc_status(pids[i], "PPid", buf, sizeof(buf)) == 0 && strcmp(buf, "0") == 0)
			roots++;
	if (roots != 1)
		res_fail(r, "%zu processes with PPid 0", roots);
	/* Our ancestry must end at pid 1 of this namespace. */
	pid_t p = getpid(), last = p;
	for (int hops = 0; p > 0 && hops < 64; hops++) {
		last = p;
		if (proc_status(p, "PPid", buf, sizeof(buf)) < 0)
			break;
		p = (pid_t)strtol(buf, NULL, 10);
	}
	if (last != 1)
		res_fail(r, "ancestry ends at pid %d, not 1", (int)last);
	if (proc_status(1, "Name", buf, sizeof(buf)) == 0)
		res_note(r, "pid1=%s", buf);
	res_note(r, "getpid=%d", (int)getpid());
	pid_t c = canary_pid(ctx);
	if (c <= 0)
		res_fail(r, "no host canary pid given");
	else if (pid_is_canary(c, ctx))
		res_fail(r, "host canary pid %d is visible", (int)c);
	else
		res_note(r, "canary pid invisible");
}

PROBE_CASE(ns02_signals)
{
	int p[2];
	CTL_OK(r, "kill(parent,0)", kill(getppid(), 0));
	errno = 0;
	long pfd = syscall(SYS_pidfd_open, (long)getppid(), 0L);
	control_ok(r, "pidfd_open(parent)", pfd, errno);
	if (pfd >= 0)
		close((int)pfd);
	if (pipe(p) < 0) {
		res_fail(r, "pipe: %s", en(errno));
		return;
	}
	CTL_OK(r, "F_SETOWN(self)", fcntl(p[0], F_SETOWN, getpid()));

	pid_t c = canary_pid(ctx);
	if (c <= 0) {
		res_fail(r, "no host canary pid given");
		return;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d", (int)c);
	if (access(path, F_OK) == 0) {
		/* Never signal it: either it is the host canary (already a failure) or one of ours. */
		if (pid_is_canary(c, ctx))
			res_fail(r, "host canary pid %d visible; not signalled", (int)c);
		else
			res_skip(r, "canary pid %d collides with a sandbox pid", (int)c);
		return;
	}
	TRY(r, "kill(canary,KILL)", kill(c, SIGKILL), ESRCH);
	TRY(r, "kill(-canary,KILL)", kill(-c, SIGKILL), ESRCH);
	TRY(r, "tgkill(canary)", syscall(SYS_tgkill, (long)c, (long)c, (long)SIGKILL), ESRCH);
	TRY(r, "pidfd_open(canary)", syscall(SYS_pidfd_open, (long)c, 0L), ESRCH);
	if (!TRY(r, "F_SETOWN(canary)", fcntl(p[1], F_SETOWN, c), ESRCH)) {
		/* It took the owner: trigger SIGIO so the host check can see any effect. */
		fcntl(p[0], F_SETFL, O_ASYNC);
		(void)!write(p[1], "x", 1);
	}
	TRY(r, "F_SETOWN(-canary)", fcntl(p[1], F_SETOWN, -c), ESRCH);
	res_note(r, "kill(-1) is run separately (--kill-all)");
}

/*
 * Open for writing and close untouched. Masking by a bind of /dev/null opens fine and
 * is harmless, so that counts as refused.
 */
static bool open_wr(struct probe_res *r, const char *path, bool quiet)
{
	errno = 0;
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == EROFS || errno == EACCES || errno == ENOENT || errno == EPERM ||
		    errno == ENOTDIR || errno == EISDIR) {
			if (!quiet)
				res_note(r, "%s=%s", path, en(errno));
			return true;
		}
		res_fail(r, "%s=%s(want EROFS|EACCES|ENOENT)", path, en(errno));
		return false;
	}
	struct stat st;
	bool masked = fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
	close(fd);
	if (masked) {
		if (!quiet)
			res_note(r, "%s=masked(/dev/null)", path);
		return true;
	}
	res_fail(r, "%s opened for writing", path);
	return false;
}

static void require_ro(struct probe_res *r, const char *path, bool absent_ok)
{
	struct statvfs sv;
	if (statvfs(path, &sv) < 0) {
		if (errno == ENOENT && absent_ok)
			res_note(r, "%s absent", path);
		else
			res_fail(r, "statvfs(%s)=%s", path, en(errno));
		return;
	}
	if (sv.f_flag & ST_RDONLY)
		res_note(r, "%s ro", path);
	else
		res_fail(r, "%s is mounted read-write", path);
}

PROBE_CASE(ns03_procsys)
{
	char buf[64];
	ssize_t n = read_file("/proc/sys/kernel/ostype", buf, sizeof(buf));
	control_ok(r, "read(ostype)", n, n < 0 ? (int)-n : 0);
	require_ro(r, "/proc/sys", false);
	open_wr(r, "/proc/sys/kernel/core_pattern", false);
	open_wr(r, "/proc/sys/vm/drop_caches", false);
	open_wr(r, "/proc/sys/kernel/sysrq", false);
	open_wr(r, "/proc/sys/kernel/modprobe", false);
	open_wr(r, "/proc/sys/fs/binfmt_misc/register", false);
	open_wr(r, "/proc/sys/kernel/hostname", false);
}

PROBE_CASE(ns04_sysrq)
{
	struct stat st;
	CTL_OK(r, "stat(/proc/self)", stat("/proc/self", &st));
	open_wr(r, "/proc/sysrq-trigger", false);
	if (stat("/proc/sysrq-trigger", &st) == 0)
		res_note(r, "sysrq-trigger mode=%o%s", st.st_mode & 07777,
			 S_ISCHR(st.st_mode) ? "(chr)" : "");
}

/* Open every regular file below dir (bounded) for writing; returns files tried. */
static size_t walk_wr(struct probe_res *r, const char *dir, const char *only, int depth,
		      size_t *budget, size_t *bad)
{
	DIR *d = opendir(dir);
	size_t tried = 0;
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d)) && *budget) {
		char path[PATH_MAX];
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (de->d_type == DT_DIR) {
			if (depth > 0)
				tried += walk_wr(r, path, only, depth - 1, budget, bad);
			continue;
		}
		if (de->d_type != DT_REG)
			continue;
		if (only && !strstr(only, de->d_name))
			continue;
		(*budget)--;
		tried++;
		if (!open_wr(r, path, true) && ++*bad > 8)
			*budget = 0;
	}
	closedir(d);
	return tried;
}

PROBE_CASE(ns05_sys)
{
	struct stat st;
	CTL_OK(r, "stat(/)", stat("/", &st));
	require_ro(r, "/sys", true);
	open_wr(r, "/sys/kernel/uevent_helper", false);
	open_wr(r, "/sys/class/net/lo/mtu", false);
	open_wr(r, "/sys/kernel/mm/transparent_hugepage/enabled", false);
	open_wr(r, "/sys/power/state", false);
	size_t budget = 20000, bad = 0;
	size_t n = walk_wr(r, "/sys/fs/cgroup", NULL, 8, &budget, &bad);
	res_note(r, "cgroupfs files tried=%zu", n);
}

static int cgroup_v1_escape(void *arg)
{
	(void)arg;
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWCGROUP) < 0)
		return errno;
	mkdir("/tmp/yard-c", 0700);
	if (mount("cgroup", "/tmp/yard-c", "cgroup", 0, "memory") < 0)
		return 100 + errno;
	/* Mounted: the vector is open. Never touch release_agent; report and leave. */
	umount2("/tmp/yard-c", MNT_DETACH);
	return 250;
}

PROBE_CASE(ns07_release_agent)
{
	struct stat st;
	CTL_OK(r, "stat(/)", stat("/", &st));
	int s = run_child(cgroup_v1_escape, NULL, 5);
	int code = s >= 0 && WIFEXITED(s) ? WEXITSTATUS(s) : -1;
	if (code == EPERM)
		res_note(r, "unshare(-UmC)=EPERM");
	else if (code > 100 && code < 250)
		res_fail(r, "unshare(-UmC)=OK mount(cgroup)=%s", en(code - 100));
	else if (code == 250)
		res_fail(r, "unshare(-UmC)=OK mount(cgroup v1 memory)=OK");
	else
		res_fail(r, "unshare(-UmC)=%s", code >= 0 ? en(code) : "crashed");
	mkdir("/tmp/yard-c2", 0700);
	TRY(r, "mount(cgroup v1)", mount("cgroup", "/tmp/yard-c2", "cgroup", 0, "memory"), EPERM);
	TRY(r, "mount(cgroup2)", mount("cgroup2", "/tmp/yard-c2", "cgroup2", 0, NULL), EPERM);
	rmdir("/tmp/yard-c2");
	size_t budget = 20000, bad = 0;
	size_t n =
		walk_wr(r, "/sys/fs/cgroup", "release_agent notify_on_release", 8, &budget, &bad);
	res_note(r, "release_agent/notify_on_release files=%zu", n);
}

PROBE_CASE(ns08_cgroup)
{
	char buf[4096], dir[PATH_MAX], path[PATH_MAX + 64];
	static const char *files[] = { "cgroup.procs",
				       "memory.limit_in_bytes",
				       "memory.max",
				       "pids.max",
				       "cpu.cfs_quota_us",
				       "cpu.max",
				       "cgroup.subtree_control",
				       "memory.oom_control",
				       "cgroup.kill",
				       "tasks" };
	ssize_t n = read_file("/proc/self/cgroup", buf, sizeof(buf));
	control_ok(r, "read(/proc/self/cgroup)", n, n < 0 ? (int)-n : 0);
	if (access("/sys/fs/cgroup", F_OK) < 0) {
		res_note(r, "/sys/fs/cgroup=%s", en(errno));
		return;
	}
	size_t tried = 0;
	for (char *line = buf; n > 0 && line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (c1 && c2) {
			*c2 = '\0';
			const char *ctrl = c1 + 1, *cg = c2 + 1;
			if (!*ctrl)
				ctrl = access("/sys/fs/cgroup/unified", F_OK) == 0 ? "unified" : "";
			if (!strncmp(ctrl, "name=", 5))
				ctrl += 5;
			for (int up = 0; up < 2; up++) {
				snprintf(dir, sizeof(dir), "/sys/fs/cgroup/%s%s", ctrl, cg);
				if (up) { /* the parent cgroup */
					char *s = strrchr(dir, '/');
					if (s && s > dir + strlen("/sys/fs/cgroup/"))
						*s = '\0';
					else
						break;
				}
				for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
					snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
					if (access(path, F_OK) < 0)
						continue;
					tried++;
					open_wr(r, path, true);
				}
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	res_note(r, "own/parent cgroup files tried=%zu", tried);
}

PROBE_CASE(ns09_propagation)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	size_t lines = 0, slaves = 0, shared = 0;
	if (!f) {
		res_fail(r, "ctl: mountinfo unreadable: %s", en(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		lines++;
		char *sep = strstr(line, " - ");
		if (sep)
			*sep = '\0';
		char *mp = line;
		for (int i = 0; i < 4 && mp; i++)
			mp = strchr(mp + 1, ' ');
		if (strstr(line, " shared:")) {
			shared++;
			if (mp && shared <= 5)
				res_fail(r, "shared mount:%.*s", (int)strcspn(mp + 1, " "), mp + 1);
		}
		if (strstr(line, " master:"))
			slaves++;
	}
	fclose(f);
	if (lines < 3)
		res_fail(r, "ctl: only %zu mounts", lines);
	res_note(r, "mounts=%zu shared=%zu slave=%zu", lines, shared, slaves);
}

PROBE_CASE(ns10_uts_ipc)
{
	struct utsname u;
	CTL_OK(r, "uname", uname(&u));
	if (ctx->host_hostname) {
		if (strcmp(u.nodename, ctx->host_hostname) == 0)
			res_fail(r, "hostname equals the host's");
		else
			res_note(r, "hostname differs");
	}
	errno = 0;
	int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	control_ok(r, "shmget(PRIVATE)", id, errno);
	if (id >= 0)
		shmctl(id, IPC_RMID, NULL);
	if (ctx->shm_key >= 0)
		TRY(r, "shmget(host key)", shmget((key_t)ctx->shm_key, 0, 0), ENOENT);
	if (ctx->sem_key >= 0)
		TRY(r, "semget(host key)", semget((key_t)ctx->sem_key, 0, 0), ENOENT);
	if (ctx->msg_key >= 0)
		TRY(r, "msgget(host key)", msgget((key_t)ctx->msg_key, 0), ENOENT);
	if (ctx->shm_name) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "/dev/shm/%s", ctx->shm_name);
		TRY(r, "host /dev/shm file", access(path, F_OK), ENOENT);
	}
	static const char *dirs[] = { "/dev/shm", "/dev/mqueue" };
	for (size_t i = 0; i < 2; i++) {
		DIR *d = opendir(dirs[i]);
		size_t n = 0;
		if (!d) {
			res_note(r, "%s=%s", dirs[i], en(errno));
			continue;
		}
		struct dirent *de;
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			n++;
			if (n <= 3)
				res_fail(r, "%s not empty: %s", dirs[i], de->d_name);
		}
		closedir(d);
		if (!n)
			res_note(r, "%s empty", dirs[i]);
	}
}

static bool same_inode(const char *a, const char *b)
{
	struct stat sa, sb;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

PROBE_CASE(ns11_chroot)
{
	char buf[PATH_MAX];
	CTL_OK(r, "chdir(/)", chdir("/"));
	/* A bad pointer is EFAULT before the CAP_SYS_CHROOT check: decisive. */
	TRY(r, "chroot(ptr1)", chroot((const char *)1), EPERM);
	mkdir("/tmp/yard-d", 0700);
	if (!TRY(r, "chroot(/tmp/yard-d)", chroot("/tmp/yard-d"), EPERM)) {
		/* The classic escape, so the detail says how far it got. */
		for (int i = 0; i < 8; i++)
			(void)!chdir("..");
		res_fail(r, "after chroot+chdir(..): cwd %s", getcwd(buf, sizeof(buf)) ?: "?");
	}
	rmdir("/tmp/yard-d");
	ssize_t n = readlink("/proc/self/root", buf, sizeof(buf) - 1);
	if (n < 0)
		res_fail(r, "readlink(/proc/self/root)=%s", en(errno));
	else if (buf[n] = '\0', strcmp(buf, "/"))
		res_fail(r, "/proc/self/root -> %s", buf);
	else
		res_note(r, "self root=/");
	n = readlink("/proc/1/root", buf, sizeof(buf) - 1);
	if (n < 0)
		res_note(r, "/proc/1/root=%s", en(errno));
	else if (buf[n] = '\0', strcmp(buf, "/"))
		res_fail(r, "/proc/1/root -> %s", buf);
	else
		res_note(r, "pid1 root=/");
	if (!same_inode("/..", "/") || !same_inode("/proc/self/root/..", "/"))
		res_fail(r, "/.. or /proc/self/root/.. is not /");
	else
		res_note(r, "/..=/");
	struct stat st;
	if (stat("/proc/1/root/..", &st) == 0 && !same_inode("/proc/1/root/..", "/"))
		res_fail(r, "/proc/1/root/.. is not /");
}

static const char *const cap_fields[] = { "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb" };

static void caps_zero(struct probe_res *r, pid_t pid, const char *who, size_t *seen)
{
	char v[64];
	for (size_t i = 0; i < 5; i++) {
		if (proc_status(pid, cap_fields[i], v, sizeof(v)) < 0)
			return; /* the process is gone */
		(*seen)++;
		if (strspn(v, "0") != strlen(v))
			res_fail(r, "%s %s=%s", who, cap_fields[i], v);
	}
}

PROBE_CASE(ns12_caps)
{
	pid_t pids[256];
	char who[32];
	size_t seen = 0, n = proc_pids(pids, 256);
	caps_zero(r, 0, "self", &seen);
	if (seen != 5)
		res_fail(r, "ctl: Cap* fields not found in /proc/self/status");
	for (size_t i = 0; i < n && i < 256; i++) {
		snprintf(who, sizeof(who), "pid%d", (int)pids[i]);
		caps_zero(r, pids[i], who, &seen);
	}
	res_note(r, "pids=%zu fields=%zu", n, seen);
	/* The bounding set, asked of the kernel rather than parsed. */
	for (int cap = 0; cap <= 40; cap++) {
		int in = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
		if (in == 1) {
			res_fail(r, "cap %d in the bounding set", cap);
			break;
		}
	}
	int s[2];
	if (pipe(s) == 0) {
		pid_t c = fork();
		if (c == 0) {
			dup2(s[1], 1);
			execl("/proc/self/exe", ctx->self, "--status", (char *)NULL);
			_exit(127);
		}
		close(s[1]);
		char line[512] = "";
		ssize_t m = read(s[0], line, sizeof(line) - 1);
		close(s[0]);
		waitpid(c, NULL, 0);
		line[m > 0 ? m : 0] = '\0';
		if (!strstr(line, "CapEff=0000000000000000") ||
		    !strstr(line, "CapBnd=0000000000000000") ||
		    !strstr(line, "CapPrm=0000000000000000") ||
		    !strstr(line, "CapAmb=0000000000000000"))
			res_fail(r, "after execve: %.*s", (int)strcspn(line, "\n"), line);
		else
			res_note(r, "after-execve:zero");
	}
}

struct idmap_line {
	long in, out, count;
};

static int read_idmap(const char *path, struct idmap_line *l, int max)
{
	char buf[1024];
	int n = 0;
	if (read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	for (char *p = buf; *p && n < max;) {
		char *end;
		l[n].in = strtol(p, &end, 10);
		if (end == p)
			break;
		l[n].out = strtol(end, &end, 10);
		l[n].count = strtol(end, &end, 10);
		n++;
		p = end;
		while (*p == '\n' || *p == ' ')
			p++;
	}
	return n;
}

/* Parse "in out count,in out count" (the CLI's own namespace map) into l. */
static int parse_parent_map(const char *s, struct idmap_line *l, int max)
{
	int n = 0;
	while (s && *s && n < max) {
		char *end;
		l[n].in = strtol(s, &end, 10);
		if (end == s)
			break;
		l[n].out = strtol(end, &end, 10);
		l[n].count = strtol(end, &end, 10);
		n++;
		s = end;
		while (*s == ',' || *s == ' ' || *s == '\n')
			s++;
	}
	return n;
}

/* Does [out, out+count) of the CLI's namespace contain host id 0? */
static bool covers_host_root(long out, long count, const char *parent)
{
	struct idmap_line p[16];
	int n = parent ? parse_parent_map(parent, p, 16) : 0;
	if (!parent)
		return out <= 0 && out + count > 0;
	for (int i = 0; i < n; i++) {
		/* the part of our range that the parent maps, and where it lands on the host */
		long lo = out > p[i].in ? out : p[i].in;
		long hi = out + count < p[i].in + p[i].count ? out + count : p[i].in + p[i].count;
		if (lo < hi && p[i].out + (lo - p[i].in) <= 0 && p[i].out + (hi - p[i].in) > 0)
			return true;
	}
	return false;
}

static void check_idmap(struct probe_res *r, struct probe_ctx *ctx, const char *path,
			const char *name, bool *single)
{
	struct idmap_line l[16];
	const char *parent = !strcmp(name, "uid_map") ? ctx->parent_uid_map : ctx->parent_gid_map;
	int n = read_idmap(path, l, 16);
	if (n <= 0) {
		res_fail(r, "%s unreadable or empty", name);
		return;
	}
	*single = n == 1 && l[0].count == 1;
	for (int i = 0; i < n; i++) {
		if (covers_host_root(l[i].out, l[i].count, parent))
			res_fail(r, "%s maps host id 0 (%ld %ld %ld)", name, l[i].in, l[i].out,
				 l[i].count);
		if (l[i].in < 0 || l[i].in + l[i].count > 65536)
			res_fail(r, "%s maps inside ids beyond 0..65535 (%ld+%ld)", name, l[i].in,
				 l[i].count);
	}
	if (*single) {
		if (l[0].in != ctx->expect_uid)
			res_fail(r, "%s single mapping of inside %ld, not %ld", name, l[0].in,
				 ctx->expect_uid);
		if (ctx->host_uid >= 0 && !strcmp(name, "uid_map") && l[0].out != ctx->host_uid)
			res_fail(r, "uid_map maps to host %ld, not the invoking uid %ld", l[0].out,
				 ctx->host_uid);
		res_note(r, "%s=%ld %ld 1", name, l[0].in, l[0].out);
	} else {
		res_note(r, "%s lines=%d", name, n);
	}
}

PROBE_CASE(ns14_idmap)
{
	char buf[32];
	bool su = false, sg = false;
	CTL_OK(r, "getgroups", getgroups(0, NULL));
	if ((long)getuid() != ctx->expect_uid || (long)getgid() != ctx->expect_uid)
		res_fail(r, "uid=%d gid=%d, want %ld", (int)getuid(), (int)getgid(),
			 ctx->expect_uid);
	check_idmap(r, ctx, "/proc/self/uid_map", "uid_map", &su);
	check_idmap(r, ctx, "/proc/self/gid_map", "gid_map", &sg);
	ssize_t n = read_file("/proc/self/setgroups", buf, sizeof(buf));
	buf[strcspn(buf, "\n")] = '\0';
	if (sg && (n < 0 || strcmp(buf, "deny")))
		res_fail(r, "single gid mapping but setgroups=%s", n < 0 ? en((int)-n) : buf);
	else
		res_note(r, "setgroups=%s", n < 0 ? en((int)-n) : buf);
	gid_t g = (gid_t)ctx->expect_uid;
	TRY(r, "setgroups", setgroups(1, &g), EPERM);
}

static bool env_allowed(struct probe_ctx *ctx, const char *name, size_t len)
{
	static const char *const base[] = { "PATH", "HOME", "USER", "TERM", "LANG" };
	for (size_t i = 0; i < 5; i++)
		if (strlen(base[i]) == len && !strncmp(base[i], name, len))
			return true;
	for (size_t i = 0; i < ctx->n_allow_env; i++)
		if (strlen(ctx->allow_env[i].name) == len &&
		    !strncmp(ctx->allow_env[i].name, name, len))
			return true;
	return false;
}

/* Search a NUL-separated blob for the secret prefix. */
static bool blob_has_secret(struct probe_ctx *ctx, const char *blob, size_t len)
{
	size_t pl = strlen(ctx->secret_prefix);
	for (size_t i = 0; i + pl <= len; i++)
		if (!memcmp(blob + i, ctx->secret_prefix, pl))
			return true;
	return false;
}

PROBE_CASE(ev01_env)
{
	static char blob[65536];
	pid_t pids[256];
	for (char **e = environ; *e; e++) {
		size_t len = strcspn(*e, "=");
		if (!env_allowed(ctx, *e, len))
			res_fail(r, "env %.*s not allowed", (int)len, *e);
		if (blob_has_secret(ctx, *e, strlen(*e)))
			res_fail(r, "env %.*s carries a host secret", (int)len, *e);
	}
	for (size_t i = 0; i < ctx->n_allow_env; i++) {
		const char *v = getenv(ctx->allow_env[i].name);
		if (!ctx->allow_env[i].value)
			continue;
		if (!v || strcmp(v, ctx->allow_env[i].value))
			res_fail(r, "ctl: --env %s not passed through", ctx->allow_env[i].name);
		else
			res_note(r, "ctl:--env %s=ok", ctx->allow_env[i].name);
	}
	if (ctx->expect_uid == 1000) {
		const char *h = getenv("HOME"), *u = getenv("USER");
		if (!h || strcmp(h, "/home/user") || !u || strcmp(u, "user"))
			res_fail(r, "HOME=%s USER=%s", h ?: "(unset)", u ?: "(unset)");
	}
	size_t n = proc_pids(pids, 256), readable = 0;
	for (size_t i = 0; i < n && i < 256; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/environ", (int)pids[i]);
		ssize_t m = read_file(path, blob, sizeof(blob));
		if (m < 0) {
			if (pids[i] == 1)
				res_note(r, "/proc/1/environ=%s", en((int)-m));
			continue;
		}
		readable++;
		if (blob_has_secret(ctx, blob, (size_t)m))
			res_fail(r, "/proc/%d/environ carries a host secret", (int)pids[i]);
		if (pids[i] == 1)
			res_note(r, "/proc/1/environ readable(%zd bytes)", m);
	}
	if (!readable)
		res_fail(r, "ctl: no /proc/*/environ readable (not even our own)");
	res_note(r, "environ files scanned=%zu", readable);
}

static void must_be_absent(struct probe_res *r, const char *path)
{
	struct stat st;
	TRY(r, path, lstat(path, &st), ENOENT, EACCES);
}

PROBE_CASE(ev03_host_files)
{
	struct stat st;
	char path[PATH_MAX], buf[8192];
	CTL_OK(r, "stat(/home/user)", stat("/home/user", &st));
	CTL_OK(r, "stat(/etc/passwd)", stat("/etc/passwd", &st));
	must_be_absent(r, "/etc/shadow");
	must_be_absent(r, "/etc/gshadow");
	must_be_absent(r, "/etc/sudoers");
	must_be_absent(r, "/var/tmp/yard-canary");
	must_be_absent(r, "/root/.ssh");
	if (ctx->canary_dir)
		must_be_absent(r, ctx->canary_dir);
	if (ctx->state_dir)
		must_be_absent(r, ctx->state_dir);
	if (ctx->host_home && strcmp(ctx->host_home, "/home/user") &&
	    strcmp(ctx->host_home, "/root")) {
		must_be_absent(r, ctx->host_home);
	}
	if (ctx->host_home) {
		static const char *const sub[] = { ".ssh",	  ".aws/credentials",
						   ".ssh/id_rsa", ".ssh/id_ed25519",
						   ".gnupg",	  ".toren" };
		for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
			snprintf(path, sizeof(path), "%s/%s", ctx->host_home, sub[i]);
			if (!strncmp(path, "/home/user/", 11))
				continue; /* that is the workspace, not the host home */
			must_be_absent(r, path);
		}
	}
	DIR *d = opendir("/root");
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				res_fail(r, "/root not empty: %s", de->d_name);
		closedir(d);
	}
	/* The synthesized passwd names root and user, never the host's accounts. */
	if (read_file("/etc/passwd", buf, sizeof(buf)) > 0) {
		size_t users = 0;
		for (char *line = buf; line && *line;) {
			char *nl = strchr(line, '\n');
			size_t len = strcspn(line, ":");
			users++;
			if (!(len == 4 && !strncmp(line, "root", 4)) &&
			    !(len == 4 && !strncmp(line, "user", 4)) &&
			    !(len == 6 && !strncmp(line, "nobody", 6)))
				res_fail(r, "/etc/passwd has %.*s", (int)len, line);
			line = nl ? nl + 1 : NULL;
		}
		res_note(r, "passwd entries=%zu", users);
	}
}

/* Fields 4 (root within the source) and the source after " - " of every mount. */
static void mountinfo_leaks(struct probe_res *r, const char *needle, const char *what)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	size_t nl = strlen(needle);
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *root = line;
		for (int i = 0; i < 3 && root; i++)
			root = strchr(root + 1, ' ');
		char *sep = strstr(line, " - ");
		const char *fields[2] = { root ? root + 1 : NULL, NULL };
		if (sep) {
			char *src = strchr(sep + 3, ' ');
			fields[1] = src ? src + 1 : NULL;
		}
		for (int i = 0; i < 2; i++) {
			if (!fields[i])
				continue;
			size_t len = strcspn(fields[i], " \n");
			for (size_t j = 0; j + nl <= len; j++)
				if (!memcmp(fields[i] + j, needle, nl) &&
				    (j + nl == len || fields[i][j + nl] == '/')) {
					res_fail(r, "mountinfo shows the host %s", what);
					fclose(f);
					return;
				}
		}
	}
	fclose(f);
}

PROBE_CASE(ev04_info)
{
	char buf[4096];
	struct utsname u;
	CTL_OK(r, "uname", uname(&u));
	res_note(r, "release=%s", u.release);
	TRY(r, "syslog(READ_ALL)", klogctl(3, buf, sizeof(buf)), EPERM);
	TRY(r, "open(/dev/kmsg)", open("/dev/kmsg", O_RDONLY | O_CLOEXEC), ENOENT);
	static const char *const masked[] = { "/proc/kcore",	  "/proc/kallsyms",
					      "/proc/keys",	  "/proc/key-users",
					      "/proc/timer_list", "/proc/sched_debug" };
	for (size_t i = 0; i < sizeof(masked) / sizeof(masked[0]); i++) {
		ssize_t n = read_file(masked[i], buf, 256);
		if (n > 0)
			res_fail(r, "%s readable (%zd bytes)", masked[i], n);
		else
			res_note(r, "%s=%s", masked[i], n == 0 ? "empty" : en((int)-n));
	}
	if (ctx->host_home && strcmp(ctx->host_home, "/"))
		mountinfo_leaks(r, ctx->host_home, "home path");
	if (ctx->host_user && strcmp(ctx->host_user, "root") && strcmp(ctx->host_user, "user")) {
		char needle[256];
		snprintf(needle, sizeof(needle), "/%s", ctx->host_user);
		mountinfo_leaks(r, needle, "user name");
	}
}

struct devent {
	const char *name;
	unsigned maj, min; /* 0,0: directory or link */
};

PROBE_CASE(dv01_dev)
{
	static const struct devent allowed[] = {
		{ "null", 1, 3 },    { "zero", 1, 5 },	 { "full", 1, 7 }, { "random", 1, 8 },
		{ "urandom", 1, 9 }, { "tty", 5, 0 },	 { "ptmx", 5, 2 }, { "pts", 0, 0 },
		{ "shm", 0, 0 },     { "mqueue", 0, 0 }, { "fd", 0, 0 },   { "stdin", 0, 0 },
		{ "stdout", 0, 0 },  { "stderr", 0, 0 },
	};
	char buf[16];
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	control_ok(r, "open(/dev/null)", fd, errno);
	if (fd >= 0) {
		CTL_OK(r, "write(/dev/null)", write(fd, "x", 1));
		close(fd);
	}
	fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		CTL_OK(r, "read(/dev/zero)", read(fd, buf, sizeof(buf)));
		close(fd);
	}
	DIR *d = opendir("/dev");
	if (!d) {
		res_fail(r, "opendir(/dev)=%s", en(errno));
		return;
	}
	struct dirent *de;
	size_t n = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		n++;
		const struct devent *a = NULL;
		for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
			if (!strcmp(allowed[i].name, de->d_name))
				a = &allowed[i];
		if (!a) {
			res_fail(r, "/dev/%s", de->d_name);
			continue;
		}
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !a->maj)
			continue;
		if (S_ISLNK(st.st_mode)) /* ptmx -> pts/ptmx */
			continue;
		if (!S_ISCHR(st.st_mode) || major(st.st_rdev) != a->maj ||
		    minor(st.st_rdev) != a->min)
			res_fail(r, "/dev/%s is %u:%u, want %u:%u", de->d_name, major(st.st_rdev),
				 minor(st.st_rdev), a->maj, a->min);
	}
	closedir(d);
	res_note(r, "/dev entries=%zu", n);
}

PROBE_CASE(dv02_mknod)
{
	static const struct {
		const char *name;
		mode_t mode;
		unsigned maj, min;
	} nodes[] = {
		{ "yard-dv02-mem", S_IFCHR | 0666, 1, 1 },
		{ "yard-dv02-vda", S_IFBLK | 0666, 254, 0 },
		{ "yard-dv02-null", S_IFCHR | 0666, 1, 3 },
	};
	if (CTL_OK(r, "mkfifo", mkfifo("yard-dv02-fifo", 0600)))
		unlink("yard-dv02-fifo");
	for (size_t i = 0; i < 3; i++) {
		char what[64];
		snprintf(what, sizeof(what), "mknod(%u:%u)", nodes[i].maj, nodes[i].min);
		if (!TRY(r, what,
			 mknod(nodes[i].name, nodes[i].mode, makedev(nodes[i].maj, nodes[i].min)),
			 EPERM))
			unlink(nodes[i].name);
	}
	TRY(r, "mknod(/tmp,1:1)", mknod("/tmp/yard-dv02-mem", S_IFCHR | 0666, makedev(1, 1)),
	    EPERM);
	unlink("/tmp/yard-dv02-mem");
}

PROBE_CASE(dv03_nodev)
{
	struct stat st;
	CTL_OK(r, "stat(/dev/null)", stat("/dev/null", &st));
	if (!ctx->devnode) {
		res_skip(r, "the harness could not prepare a device node (needs root on the host)");
		return;
	}
	if (stat(ctx->devnode, &st) < 0) {
		res_fail(r, "device node %s missing: %s", ctx->devnode, en(errno));
		return;
	}
	if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)) {
		res_fail(r, "%s is not a device inside", ctx->devnode);
		return;
	}
	errno = 0;
	int fd = open(ctx->devnode, O_RDWR | O_CLOEXEC | O_NOCTTY);
	expect_err(r, "open(host device node)", fd, errno, ERRS(EACCES, EPERM));
	if (fd >= 0)
		close(fd);
}

PROBE_CASE(dv04_devpts)
{
	struct stat pts, st;
	if (stat("/dev/pts", &pts) < 0) {
		res_fail(r, "stat(/dev/pts)=%s", en(errno));
		return;
	}
	if (ctx->host_devpts_dev >= 0) {
		if ((long)pts.st_dev == ctx->host_devpts_dev)
			res_fail(r, "/dev/pts is the host's devpts instance");
		else
			res_note(r, "private devpts");
	}
	for (int fd = 0; fd < 3; fd++)
		if (isatty(fd) && fstat(fd, &st) == 0)
			res_note(r, "fd%d tty %s", fd,
				 st.st_dev == pts.st_dev ? "from the sandbox devpts"
							 : "from outside");
	/* Control: a pty we open appears in our own instance. */
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (control_ok(r, "posix_openpt", m, errno)) {
		char *name = ptsname(m);
		if (!name || stat(name, &st) < 0 || st.st_dev != pts.st_dev)
			res_fail(r, "ctl: new pty %s not in /dev/pts", name ?: "?");
	}
	DIR *d = opendir("/dev/pts");
	size_t n = 0;
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
			    strcmp(de->d_name, "ptmx"))
				n++;
		closedir(d);
	}
	res_note(r, "ptys visible=%zu", n);
	int fd = open("/dev/pts/0", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0) {
		if (fstat(fd, &st) == 0 && st.st_dev != pts.st_dev)
			res_fail(r, "/dev/pts/0 is not from the sandbox devpts");
		close(fd);
	}
	if (m >= 0)
		close(m);
}
