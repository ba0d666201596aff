// SPDX-License-Identifier: Apache-2.0
/*
 * SC: the syscall surface (security-cases.md §A, §B.1).
 *
 * Where the kernel itself would also answer EPERM (a capability check), the case adds
 * an argument the kernel rejects *before* its permission check (bad pointer, bad
 * flags). Without our filter that call gives EFAULT or EINVAL, with it EPERM: so the
 * verdict depends on the filter, not on the capabilities the host happens to deny.
 * Any call that can change state is made with arguments that are harmless even if it
 * were allowed (too-long hostname, unknown kexec flags, bad magic for reboot).
 */
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/io_uring.h>
#include <linux/kcmp.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>
#include <linux/vm_sockets.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <netinet/in.h>
#include <linux/netlink.h>
#include <linux/if_ether.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef SYS_lsm_get_self_attr
#define SYS_lsm_get_self_attr 459
#define SYS_lsm_set_self_attr 460
#define SYS_lsm_list_modules 461
#endif
#ifndef FAN_CLASS_NOTIF
#define FAN_CLASS_NOTIF 0
#endif

static long sys(long nr, long a, long b, long c, long d, long e)
{
	return syscall(nr, a, b, c, d, e, 0L);
}

PROBE_CASE(sc01_keyring)
{
	char buf[256];
	CTL(r, "fgetxattr(-1)", fgetxattr(-1, "user.x", NULL, 0), EBADF);

	errno = 0;
	long k = syscall(SYS_add_key, "user", "yard", "x", 1L, (long)KEY_SPEC_SESSION_KEYRING);
	expect_err(r, "add_key", k, errno, ERRS(EPERM));
	if (k > 0) /* never leave a key in the host user's session keyring */
		syscall(SYS_keyctl, (long)KEYCTL_INVALIDATE, k);
	TRY(r, "keyctl(GET_KEYRING_ID,@u)",
	    syscall(SYS_keyctl, (long)KEYCTL_GET_KEYRING_ID, (long)KEY_SPEC_USER_KEYRING, 0L),
	    EPERM);
	/* Without the filter an unknown operation is EOPNOTSUPP: decisive. */
	TRY(r, "keyctl(bad op)", syscall(SYS_keyctl, 0x7fffL, 0L, 0L), EPERM);
	TRY(r, "request_key", syscall(SYS_request_key, "user", "yard-x", NULL, 0L), EPERM);

	const char *files[] = { "/proc/keys", "/proc/key-users" };
	for (size_t i = 0; i < 2; i++) {
		ssize_t n = read_file(files[i], buf, sizeof(buf));
		if (n > 0)
			res_fail(r, "%s readable with %zd bytes", files[i], n);
		else
			res_note(r, "%s=%s", files[i], n == 0 ? "empty" : en((int)-n));
	}
}

static int do_unshare_userns(void *arg)
{
	(void)arg;
	return unshare(CLONE_NEWUSER) == 0 ? 0 : errno;
}

static int do_unshare_cmd(void *arg)
{
	(void)arg;
	int fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	execl("/usr/bin/unshare", "unshare", "-Ur", "/bin/true", (char *)NULL);
	return 127;
}

/* A wait status as text: exit:N or sig:NAME. */
static void status_str(int st, char *out, size_t size)
{
	if (st < 0)
		snprintf(out, size, "%s", en(-st));
	else if (WIFEXITED(st))
		snprintf(out, size, "exit:%d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(out, size, "sig:%s", sigabbrev_np(WTERMSIG(st)) ?: "?");
	else
		snprintf(out, size, "?%d", st);
}

PROBE_CASE(sc02_userns)
{
	char buf[64], s[32];
	/* Control: clone without namespace flags (what fork does) is allowed. */
	errno = 0;
	long pid = sys(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (pid == 0)
		syscall(SYS_exit_group, 0);
	control_ok(r, "clone(SIGCHLD)", pid, errno);
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);

	int st = run_child(do_unshare_userns, NULL, 5);
	if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == EPERM)
		res_note(r, "unshare(NEWUSER)=EPERM");
	else {
		status_str(st, s, sizeof(s));
		res_fail(r, "unshare(NEWUSER)=%s(want EPERM)",
			 st >= 0 && WIFEXITED(st) ? en(WEXITSTATUS(st)) : s);
	}

	errno = 0;
	pid = sys(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0)
		syscall(SYS_exit_group, 0);
	expect_err(r, "clone(NEWUSER)", pid, errno, ERRS(EPERM));
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);

	/* clone3 must be ENOSYS (flags behind a pointer); without a filter size 0 is EINVAL. */
	TRY(r, "clone3(NULL,0)", syscall(SYS_clone3, NULL, 0L), ENOSYS);
	struct {
		unsigned long long flags, pidfd, child_tid, parent_tid, exit_signal, stack,
			stack_size, tls;
	} ca = { .flags = CLONE_NEWUSER, .exit_signal = SIGCHLD };
	errno = 0;
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0)
		syscall(SYS_exit_group, 0);
	expect_err(r, "clone3(NEWUSER)", pid, errno, ERRS(ENOSYS));
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);

	if (access("/usr/bin/unshare", X_OK) == 0) {
		st = run_child(do_unshare_cmd, NULL, 10);
		status_str(st, s, sizeof(s));
		if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) != 0)
			res_note(r, "unshare-Ur=%s", s);
		else
			res_fail(r, "unshare-Ur=%s(want failure)", s);
	} else {
		res_note(r, "unshare-Ur=absent");
	}
	if (read_file("/proc/sys/user/max_user_namespaces", buf, sizeof(buf)) > 0)
		res_note(r, "max_user_namespaces=%ld", strtol(buf, NULL, 10));
}

PROBE_CASE(sc03_namespaces)
{
	static const struct {
		const char *name;
		int flag;
	} f[] = {
		{ "NEWNS", CLONE_NEWNS },     { "NEWNET", CLONE_NEWNET },
		{ "NEWPID", CLONE_NEWPID },   { "NEWIPC", CLONE_NEWIPC },
		{ "NEWUTS", CLONE_NEWUTS },   { "NEWCGROUP", CLONE_NEWCGROUP },
		{ "NEWTIME", CLONE_NEWTIME },
	};
	char what[40];
	int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	control_ok(r, "open(ns/net)", fd, errno);
	/* unshare and setns are denied unconditionally: unshare(0) is a no-op without it. */
	TRY(r, "unshare(0)", unshare(0), EPERM);
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		snprintf(what, sizeof(what), "unshare(%s)", f[i].name);
		TRY(r, what, unshare(f[i].flag), EPERM);
	}
	TRY(r, "setns(-1)", setns(-1, 0), EPERM);
	if (fd >= 0) {
		TRY(r, "setns(ns/net)", setns(fd, 0), EPERM);
		TRY(r, "setns(ns/net,NEWNET)", setns(fd, CLONE_NEWNET), EPERM);
		close(fd);
	}
}

PROBE_CASE(sc04_mount)
{
	char before[16384], after[16384];
	struct mount_attr {
		unsigned long long attr_set, attr_clr, propagation, userns_fd;
	} attr = { 0 };
	struct statfs_buf {
		char b[256];
	} sfs;

	ssize_t nb = read_file("/proc/self/mountinfo", before, sizeof(before));
	control_ok(r, "read(mountinfo)", nb, nb < 0 ? (int)-nb : 0);
	CTL(r, "fstatfs(-1)", syscall(SYS_fstatfs, -1L, &sfs), EBADF);
	mkdir("/tmp/yard-m", 0700);

	TRY(r, "mount(tmpfs)", mount("none", "/tmp/yard-m", "tmpfs", 0, NULL), EPERM);
	/* A bad target pointer is EFAULT before the capability check: decisive. */
	TRY(r, "mount(bad ptr)", mount("none", (const char *)1, "tmpfs", 0, NULL), EPERM);
	TRY(r, "umount2(/proc,DETACH)", umount2("/proc", MNT_DETACH), EPERM);
	TRY(r, "umount2(bad flags)", umount2("/proc", 0x7fff0000), EPERM);
	TRY(r, "pivot_root", syscall(SYS_pivot_root, ".", "."), EPERM);
	errno = 0;
	long fd = syscall(SYS_fsopen, "tmpfs", 0L);
	expect_err(r, "fsopen", fd, errno, ERRS(EPERM));
	if (fd >= 0)
		close((int)fd);
	TRY(r, "fsconfig", syscall(SYS_fsconfig, -1L, 0L, NULL, NULL, 0L), EPERM);
	TRY(r, "fsmount", syscall(SYS_fsmount, -1L, 0L, 0L), EPERM);
	TRY(r, "fspick", syscall(SYS_fspick, AT_FDCWD, "/", 0L), EPERM);
	errno = 0;
	fd = syscall(SYS_open_tree, AT_FDCWD, "/", (long)OPEN_TREE_CLONE);
	expect_err(r, "open_tree(CLONE)", fd, errno, ERRS(EPERM));
	if (fd >= 0)
		close((int)fd);
	TRY(r, "open_tree(bad flags)", syscall(SYS_open_tree, -1L, "x", 0x7fffffffL), EPERM);
	TRY(r, "move_mount", syscall(SYS_move_mount, -1L, "", -1L, "", 0L), EPERM);
	TRY(r, "mount_setattr(bad flags)",
	    syscall(SYS_mount_setattr, -1L, "", 0x7fffffffL, &attr, sizeof(attr)), EPERM);
	TRY(r, "mount_setattr(/,RDONLY)",
	    syscall(SYS_mount_setattr, AT_FDCWD, "/tmp", 0L, &attr, sizeof(attr)), EPERM);

	ssize_t na = read_file("/proc/self/mountinfo", after, sizeof(after));
	if (nb >= 0 && na >= 0 && (na != nb || memcmp(before, after, (size_t)na) != 0))
		res_fail(r, "mountinfo changed");
	else
		res_note(r, "mountinfo unchanged");
	rmdir("/tmp/yard-m");
}

PROBE_CASE(sc05_io_uring)
{
	struct io_uring_params p;
	char buf[32];
	memset(&p, 0, sizeof(p));
	CTL(r, "epoll_create1(-1)", epoll_create1(-1), EINVAL);
	/* Without the filter this is EFAULT on these machines (io_uring_disabled=0). */
	TRY(r, "io_uring_setup(1,NULL)", syscall(SYS_io_uring_setup, 1L, NULL), EPERM, ENOSYS);
	errno = 0;
	long fd = syscall(SYS_io_uring_setup, 8L, &p);
	expect_err(r, "io_uring_setup(8,&p)", fd, errno, ERRS(EPERM, ENOSYS));
	if (fd >= 0)
		close((int)fd);
	TRY(r, "io_uring_enter(-1)", sys(SYS_io_uring_enter, -1, 0, 0, 0, 0), EPERM, ENOSYS);
	TRY(r, "io_uring_register(-1)", sys(SYS_io_uring_register, -1, 0, 0, 0, 0), EPERM, ENOSYS);
	if (read_file("/proc/sys/kernel/io_uring_disabled", buf, sizeof(buf)) > 0)
		res_note(r, "io_uring_disabled=%ld", strtol(buf, NULL, 10));
}

PROBE_CASE(sc06_bpf)
{
	CTL(r, "read(-1)", read(-1, NULL, 0), EBADF);
	/* Pointer 1 with a small size: EFAULT when allowed, before any permission check. */
	TRY(r, "bpf(PROG_LOAD,ptr1)", syscall(SYS_bpf, (long)BPF_PROG_LOAD, (void *)1, 8L), EPERM);
	TRY(r, "bpf(MAP_CREATE,ptr1)", syscall(SYS_bpf, (long)BPF_MAP_CREATE, (void *)1, 8L),
	    EPERM);
	TRY(r, "bpf(PROG_LOAD,NULL,0)", syscall(SYS_bpf, (long)BPF_PROG_LOAD, NULL, 0L), EPERM);
}

PROBE_CASE(sc07_perf)
{
	struct perf_event_attr a;
	CTL(r, "read(-1)", read(-1, NULL, 0), EBADF);
	/* Copying the attr fails with EFAULT before the paranoid check when allowed. */
	TRY(r, "perf_event_open(ptr1)", sys(SYS_perf_event_open, 1, 0, -1, -1, 0), EPERM);
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.disabled = 1;
	errno = 0;
	long fd = sys(SYS_perf_event_open, (long)&a, 0, -1, -1, 0);
	expect_err(r, "perf_event_open(sw,self)", fd, errno, ERRS(EPERM));
	if (fd >= 0)
		close((int)fd);
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_CPU_CYCLES;
	errno = 0;
	fd = sys(SYS_perf_event_open, (long)&a, 0, -1, -1, 0);
	expect_err(r, "perf_event_open(cycles,self)", fd, errno, ERRS(EPERM));
	if (fd >= 0)
		close((int)fd);
}

PROBE_CASE(sc08_userfaultfd)
{
	CTL(r, "read(-1)", read(-1, NULL, 0), EBADF);
	/* USER_MODE_ONLY passes the sysctl check; the unknown bit then gives EINVAL. */
	TRY(r, "userfaultfd(USER_MODE_ONLY|bad)",
	    syscall(SYS_userfaultfd, (long)(UFFD_USER_MODE_ONLY | 0x40000000)), EPERM);
	errno = 0;
	long fd = syscall(SYS_userfaultfd, (long)(UFFD_USER_MODE_ONLY | O_CLOEXEC));
	expect_err(r, "userfaultfd(USER_MODE_ONLY)", fd, errno, ERRS(EPERM));
	if (fd >= 0)
		close((int)fd);
	fd = syscall(SYS_userfaultfd, (long)O_CLOEXEC);
	expect_err(r, "userfaultfd(O_CLOEXEC)", fd, errno, ERRS(EPERM));
	if (fd >= 0)
		close((int)fd);
	TRY(r, "open(/dev/userfaultfd)", open("/dev/userfaultfd", O_RDWR | O_CLOEXEC), ENOENT);
}

PROBE_CASE(sc09_privileged)
{
	char longname[80];
	memset(longname, 'x', sizeof(longname));

	CTL(r, "read(-1)", read(-1, NULL, 0), EBADF);
	TRY(r, "init_module", sys(SYS_init_module, 0, 0, (long)"", 0, 0), EPERM);
	TRY(r, "finit_module", sys(SYS_finit_module, -1, (long)"", 0, 0, 0), EPERM);
	TRY(r, "delete_module", sys(SYS_delete_module, (long)"yard_none", O_NONBLOCK, 0, 0, 0),
	    EPERM);
	/* Unknown kexec flag bit 0x100: EINVAL even with CAP_SYS_BOOT. */
	TRY(r, "kexec_load", sys(SYS_kexec_load, 0, 0, 0, 0x100, 0), EPERM);
	TRY(r, "kexec_file_load", sys(SYS_kexec_file_load, -1, -1, 0, 0, 0x100), EPERM);
	/* Magic 0: EINVAL even with CAP_SYS_BOOT. */
	TRY(r, "reboot(CAD_OFF,bad magic)", sys(SYS_reboot, 0, 0, LINUX_REBOOT_CMD_CAD_OFF, 0, 0),
	    EPERM);
	TRY(r, "swapon", sys(SYS_swapon, 0, 0, 0, 0, 0), EPERM);
	TRY(r, "swapoff", sys(SYS_swapoff, 0, 0, 0, 0, 0), EPERM);
	TRY(r, "acct(ptr1)", sys(SYS_acct, 1, 0, 0, 0, 0), EPERM);
	/* quotactl without a device is ENODEV when allowed: decisive. */
	TRY(r, "quotactl", sys(SYS_quotactl, 0, 0, 0, 0, 0), EPERM);
	TRY(r, "quotactl_fd", sys(SYS_quotactl_fd, -1, 0, 0, 0, 0), EPERM);
	TRY(r, "syslog(SIZE_BUFFER)", sys(SYS_syslog, 10, 0, 0, 0, 0), EPERM);
	TRY(r, "vhangup", sys(SYS_vhangup, 0, 0, 0, 0, 0), EPERM);
	/* 80 bytes > __NEW_UTS_LEN: EINVAL even with CAP_SYS_ADMIN, so never a real change. */
	TRY(r, "sethostname", sys(SYS_sethostname, (long)longname, sizeof(longname), 0, 0, 0),
	    EPERM);
	TRY(r, "setdomainname", sys(SYS_setdomainname, (long)longname, sizeof(longname), 0, 0, 0),
	    EPERM);
	TRY(r, "iopl(3)", sys(SYS_iopl, 3, 0, 0, 0, 0), EPERM);
	TRY(r, "ioperm", sys(SYS_ioperm, 0x80, 1, 1, 0, 0), EPERM);
	errno = 0;
	long fd = sys(SYS_fanotify_init, FAN_CLASS_NOTIF, O_RDONLY, 0, 0, 0);
	expect_err(r, "fanotify_init", fd, errno, ERRS(EPERM));
	if (fd >= 0)
		close((int)fd);
	TRY(r, "lookup_dcookie", sys(SYS_lookup_dcookie, 0, 0, 0, 0, 0), EPERM, ENOSYS);
	/* Deviation from the table (issue 7, finding 16): reading the policy and resetting
	 * one's own to MPOL_DEFAULT are allowed (libnuma, hwloc, a JVM with UseNUMA). */
	CTL_OK(r, "get_mempolicy", sys(SYS_get_mempolicy, 0, 0, 0, 0, 0));
	CTL_OK(r, "set_mempolicy(DEFAULT)", sys(SYS_set_mempolicy, 0, 0, 0, 0, 0));
	/* MPOL_BIND with no nodes: EINVAL when allowed, so never a real change. */
	TRY(r, "set_mempolicy(BIND)", sys(SYS_set_mempolicy, 2, 0, 0, 0, 0), EPERM);
	TRY(r, "mbind", sys(SYS_mbind, 0, 0, 0, 0, 0), EPERM);
	TRY(r, "migrate_pages", sys(SYS_migrate_pages, 0, 0, 0, 0, 0), EPERM);
	TRY(r, "move_pages", sys(SYS_move_pages, 0, 0, 0, 0, 0), EPERM);
	TRY(r, "lsm_list_modules", sys(SYS_lsm_list_modules, 0, 1, 0, 0, 0), EPERM, ENOSYS);
	TRY(r, "lsm_get_self_attr", sys(SYS_lsm_get_self_attr, 0, 0, 1, 0, 0), EPERM, ENOSYS);
	TRY(r, "uselib", sys(SYS_uselib, 0, 0, 0, 0, 0), EPERM, ENOSYS);
	TRY(r, "ustat", sys(SYS_ustat, 0, 0, 0, 0, 0), EPERM, ENOSYS);
	TRY(r, "sysfs", sys(SYS_sysfs, 0, 0, 0, 0, 0), EPERM, ENOSYS);
	/* Numbers beyond the table: ENOSYS so runtimes fall back (§A.3.1). */
	TRY(r, "syscall(1000)", sys(1000, 0, 0, 0, 0, 0), ENOSYS);
}

PROBE_CASE(sc10_handles)
{
	union {
		struct file_handle fh;
		unsigned char raw[sizeof(struct file_handle) + 128];
	} h;
	int mnt_id;
	h.fh.handle_bytes = 128;
	errno = 0;
	long rc = name_to_handle_at(AT_FDCWD, "/", &h.fh, &mnt_id, 0);
	if (rc == -1 && errno == EOPNOTSUPP)
		res_note(r, "ctl:name_to_handle_at(/)=EOPNOTSUPP");
	else
		control_ok(r, "name_to_handle_at(/)", rc, errno);

	/* On 6.18 copying the handle precedes the capability check: EFAULT when allowed. */
	TRY(r, "open_by_handle_at(ptr1)", open_by_handle_at(AT_FDCWD, (void *)1, O_RDONLY), EPERM);
	int root = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rc == 0) {
		errno = 0;
		long fd = open_by_handle_at(root, &h.fh, O_RDONLY);
		expect_err(r, "open_by_handle_at(own /)", fd, errno, ERRS(EPERM));
		if (fd >= 0)
			close((int)fd);
	}
	/* Shocker: ext4 FILEID_INO32_GEN handle of inode 2 (the root of a host fs). */
	h.fh.handle_bytes = 8;
	h.fh.handle_type = 1;
	static const unsigned int ino_gen[2] = { 2, 0 };
	memcpy(h.raw + offsetof(struct file_handle, f_handle), ino_gen, sizeof(ino_gen));
	errno = 0;
	long fd = open_by_handle_at(root, &h.fh, O_RDONLY);
	expect_err(r, "open_by_handle_at(ino 2)", fd, errno, ERRS(EPERM));
	if (fd >= 0)
		close((int)fd);
	if (root >= 0)
		close(root);
}

static pid_t probe_main_pid(void)
{
	return getppid();
}

PROBE_CASE(sc11_tracing)
{
	pid_t pids[512];
	size_t n = proc_pids(pids, 512);
	pid_t self = getpid(), main_pid = probe_main_pid();
	char what[96], buf[64];
	long remote = 0x400000;

	errno = 0;
	long pfd = syscall(SYS_pidfd_open, (long)self, 0L);
	control_ok(r, "pidfd_open(self)", pfd, errno);
	/* ptrace is a policy choice (§A.2); record which one the filter made. */
	errno = 0;
	long prc = ptrace(PTRACE_SEIZE, 0, NULL, NULL);
	res_note(r, "ptrace-policy=%s", prc == -1 && errno == EPERM ? "denied" : "allowed");
	/* kcmp and pidfd_getfd are denied (§A.2): on ourselves they would succeed. */
	TRY(r, "kcmp(self)", syscall(SYS_kcmp, (long)self, (long)self, (long)KCMP_FILE, 0L, 0L),
	    EPERM);
	if (pfd >= 0) {
		errno = 0;
		long dfd = syscall(SYS_pidfd_getfd, pfd, 0L, 0L);
		expect_err(r, "pidfd_getfd(self)", dfd, errno, ERRS(EPERM));
		if (dfd >= 0)
			close((int)dfd);
		TRY(r, "process_madvise(self)", sys(SYS_process_madvise, pfd, 0, 0, 0, 0), EPERM);
		close((int)pfd);
	}

	size_t targets = 0;
	for (size_t i = 0; i < n && i < 512; i++) {
		pid_t p = pids[i];
		if (p == self || p == main_pid)
			continue;
		targets++;
		snprintf(what, sizeof(what), "ptrace(SEIZE,%d)", p);
		/* SEIZE does the same permission check as ATTACH without stopping the target. */
		TRY(r, what, ptrace(PTRACE_SEIZE, p, NULL, NULL), EPERM, ESRCH);
		struct iovec lio = { buf, 1 }, rio = { (void *)remote, 1 };
		snprintf(what, sizeof(what), "process_vm_readv(%d)", p);
		TRY(r, what, process_vm_readv(p, &lio, 1, &rio, 1, 0), EPERM, ESRCH);
		snprintf(what, sizeof(what), "kcmp(%d)", p);
		TRY(r, what, syscall(SYS_kcmp, (long)self, (long)p, (long)KCMP_FILE, 0L, 0L), EPERM,
		    ESRCH);
		errno = 0;
		long tfd = syscall(SYS_pidfd_open, (long)p, 0L);
		if (tfd >= 0) {
			snprintf(what, sizeof(what), "pidfd_getfd(%d)", p);
			errno = 0;
			long dfd = syscall(SYS_pidfd_getfd, tfd, 0L, 0L);
			expect_err(r, what, dfd, errno, ERRS(EPERM, ESRCH));
			if (dfd >= 0)
				close((int)dfd);
			close((int)tfd);
		}
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/mem", p);
		snprintf(what, sizeof(what), "open(%s)", path);
		TRY(r, what, open(path, O_RDONLY | O_CLOEXEC), EACCES, EPERM, ENOENT);
		snprintf(path, sizeof(path), "/proc/%d/environ", p);
		snprintf(what, sizeof(what), "open(%s)", path);
		TRY(r, what, open(path, O_RDONLY | O_CLOEXEC), EACCES, EPERM, ENOENT);
	}
	res_note(r, "targets=%zu", targets);
}

PROBE_CASE(sc12_personality)
{
	errno = 0;
	long cur = syscall(SYS_personality, 0xffffffffL);
	control_ok(r, "personality(query)", cur, errno);
	TRY(r, "personality(READ_IMPLIES_EXEC)", syscall(SYS_personality, (long)READ_IMPLIES_EXEC),
	    EPERM);
	TRY(r, "personality(ADDR_NO_RANDOMIZE)", syscall(SYS_personality, (long)ADDR_NO_RANDOMIZE),
	    EPERM);
	errno = 0;
	long now = syscall(SYS_personality, 0xffffffffL);
	if (now != cur)
		res_fail(r, "personality changed %#lx -> %#lx", cur, now);
}

/* i386 entry from a 64-bit process. Arguments must fit in 32 bits. */
static long int80(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
	return ret;
}

static int int80_getppid(void *arg)
{
	(void)arg;
	return int80(64, 0, 0, 0) == (long)getppid() ? 0 : 1;
}

struct int80_call {
	long nr, a, b, c;
};

static unsigned int socketcall_args[3] = { AF_ALG, SOCK_SEQPACKET, 0 };

/* exit 0: filtered (-EPERM/-ENOSYS); 1: the call went through. */
static int int80_try(void *arg)
{
	const struct int80_call *c = arg;
	long ret = int80(c->nr, c->a, c->b, c->c);
	return ret == -EPERM || ret == -ENOSYS ? 0 : 1;
}

static int x32_keyctl(void *arg)
{
	(void)arg;
	long ret = syscall(0x40000000L | SYS_keyctl, (long)KEYCTL_GET_KEYRING_ID,
			   (long)KEY_SPEC_USER_KEYRING, 0L);
	return ret == -1 && (errno == EPERM || errno == ENOSYS) ? 0 : 1;
}

static bool abi_verdict(struct probe_res *r, const char *what, int st)
{
	char s[32];
	status_str(st, s, sizeof(s));
	if (st >= 0 && ((WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS) ||
			(WIFEXITED(st) && WEXITSTATUS(st) == 0))) {
		res_note(r, "%s=%s", what, WIFEXITED(st) ? "EPERM|ENOSYS" : s);
		return true;
	}
	res_fail(r, "%s=%s(want SIGSYS or EPERM/ENOSYS)", what,
		 WIFEXITED(st) && WEXITSTATUS(st) == 1 ? "went-through" : s);
	return false;
}

PROBE_CASE(sc13_abi)
{
	char s[32];
	/* x32 numbers do not need IA32 emulation: always tested. */
	abi_verdict(r, "x32 keyctl", run_child(x32_keyctl, NULL, 5));

	int st = run_child(int80_getppid, NULL, 5);
	status_str(st, s, sizeof(s));
	bool sigsys = st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS;
	if (!(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0) && !sigsys) {
		if (!r->failed)
			res_skip(r,
				 "int $0x80 control (i386 getppid) gave %s: the i386 ABI is not "
				 "usable from a 64-bit process here",
				 s);
		return;
	}
	res_note(r, "ctl:int80 getppid=%s", sigsys ? "SIGSYS(filter kills non-native arch)" : "OK");
	struct int80_call calls[] = {
		{ 310, CLONE_NEWUSER, 0, 0 },				  /* unshare */
		{ 288, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0 }, /* keyctl */
		{ 21, 0, 0, 0 },					  /* mount */
		{ 102, 1, (long)(unsigned long)socketcall_args, 0 },	  /* socketcall */
	};
	const char *names[] = { "i386 unshare", "i386 keyctl", "i386 mount",
				"i386 socket(AF_ALG)" };
	for (size_t i = 0; i < 4; i++)
		abi_verdict(r, names[i], run_child(int80_try, &calls[i], 5));
}

PROBE_CASE(sc14_ioctl_oracle)
{
	struct winsize ws;
	char c = '#';
	int tioclinux_arg = 3;
	CTL(r, "ioctl(-1,TIOCGWINSZ)", ioctl(-1, TIOCGWINSZ, &ws), EBADF);
	/* Filtered calls never reach the fd lookup: EPERM, not EBADF. */
	TRY(r, "ioctl(-1,TIOCSTI)", syscall(SYS_ioctl, -1L, (long)TIOCSTI, &c), EPERM);
	TRY(r, "ioctl(-1,TIOCSTI|1<<32)", syscall(SYS_ioctl, -1L, (long)TIOCSTI | (1L << 32), &c),
	    EPERM);
	TRY(r, "ioctl(-1,TIOCSTI|~0<<32)",
	    syscall(SYS_ioctl, -1L, (long)(0xffffffff00000000UL | TIOCSTI), &c), EPERM);
	TRY(r, "ioctl(-1,TIOCLINUX)", syscall(SYS_ioctl, -1L, (long)TIOCLINUX, &tioclinux_arg),
	    EPERM);
	TRY(r, "ioctl(-1,TIOCLINUX|1<<32)",
	    syscall(SYS_ioctl, -1L, (long)TIOCLINUX | (1L << 32), &tioclinux_arg), EPERM);
}

static void sock_try(struct probe_res *r, const char *what, int dom, int type, int proto,
		     const int *errs)
{
	errno = 0;
	int s = socket(dom, type, proto);
	expect_err(r, what, s, errno, errs);
	if (s >= 0)
		close(s); /* never connected */
}

static void sock_ok(struct probe_res *r, const char *what, int dom, int type, int proto)
{
	errno = 0;
	int s = socket(dom, type, proto);
	control_ok(r, what, s, errno);
	if (s >= 0)
		close(s);
}

PROBE_CASE(sc15_sockets)
{
	const int *deny = ERRS(EPERM, EAFNOSUPPORT);
	const int *deny_nl = ERRS(EPERM, EAFNOSUPPORT, EPROTONOSUPPORT);
	sock_ok(r, "AF_UNIX", AF_UNIX, SOCK_STREAM, 0);
	sock_ok(r, "AF_INET/STREAM", AF_INET, SOCK_STREAM, 0);
	sock_ok(r, "AF_INET/DGRAM", AF_INET, SOCK_DGRAM, 0);
	sock_ok(r, "AF_INET6/STREAM", AF_INET6, SOCK_STREAM, 0);
	sock_ok(r, "NETLINK_ROUTE", AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

	sock_try(r, "AF_VSOCK/STREAM", AF_VSOCK, SOCK_STREAM, 0, deny);
	sock_try(r, "AF_VSOCK/DGRAM", AF_VSOCK, SOCK_DGRAM | SOCK_CLOEXEC, 0, deny);
	sock_try(r, "AF_ALG", AF_ALG, SOCK_SEQPACKET, 0, deny);
	sock_try(r, "AF_PACKET/RAW", AF_PACKET, SOCK_RAW, htons(ETH_P_ALL), deny);
	sock_try(r, "AF_PACKET/DGRAM|CLOEXEC", AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC,
		 htons(ETH_P_ALL), deny);
	sock_try(r, "AF_INET/RAW/ICMP", AF_INET, SOCK_RAW, IPPROTO_ICMP, deny);
	sock_try(r, "AF_INET/RAW|NONBLOCK|CLOEXEC", AF_INET,
		 SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_RAW, deny);
	sock_try(r, "AF_INET6/RAW/ICMPV6", AF_INET6, SOCK_RAW, IPPROTO_ICMPV6, deny);
	sock_try(r, "NETLINK_KOBJECT_UEVENT", AF_NETLINK, SOCK_RAW, NETLINK_KOBJECT_UEVENT,
		 deny_nl);
	sock_try(r, "NETLINK_AUDIT", AF_NETLINK, SOCK_RAW, NETLINK_AUDIT, deny_nl);
	sock_try(r, "NETLINK_NETFILTER", AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER, deny_nl);
	sock_try(r, "NETLINK_GENERIC", AF_NETLINK, SOCK_DGRAM, NETLINK_GENERIC, deny_nl);
	sock_try(r, "NETLINK_SOCK_DIAG", AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG,
		 deny_nl);
}

PROBE_CASE(sc16_clock)
{
	struct timespec now;
	struct timeval tv;
	struct timex tx;
	CTL_OK(r, "clock_gettime", clock_gettime(CLOCK_REALTIME, &now));
	/* Reading the clock state is allowed by Docker's profile; denying it is stricter. */
	memset(&tx, 0, sizeof(tx));
	errno = 0;
	res_note(r, "adjtimex(read)=%s(policy)",
		 syscall(SYS_adjtimex, &tx) >= 0 ? "OK" : en(errno));
	/* A bad pointer is EFAULT before the CAP_SYS_TIME check: decisive. */
	TRY(r, "clock_settime(ptr1)", syscall(SYS_clock_settime, (long)CLOCK_REALTIME, (void *)1),
	    EPERM);
	clock_gettime(CLOCK_REALTIME, &now);
	TRY(r, "clock_settime(now)", syscall(SYS_clock_settime, (long)CLOCK_REALTIME, &now), EPERM);
	TRY(r, "settimeofday(ptr1)", syscall(SYS_settimeofday, (void *)1, NULL), EPERM);
	gettimeofday(&tv, NULL);
	TRY(r, "settimeofday(now)", syscall(SYS_settimeofday, &tv, NULL), EPERM);
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_OFFSET;
	TRY(r, "adjtimex(ADJ_OFFSET)", syscall(SYS_adjtimex, &tx), EPERM);
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_OFFSET;
	TRY(r, "clock_adjtime(ADJ_OFFSET)", syscall(SYS_clock_adjtime, (long)CLOCK_REALTIME, &tx),
	    EPERM);
}

/* Check one /proc/<x>/status for an intact filter. */
static void filter_status(struct probe_res *r, const char *who, pid_t pid)
{
	char sc[32] = "", nnp[32] = "", nf[32] = "";
	int e1 = proc_status(pid, "Seccomp", sc, sizeof(sc));
	int e2 = proc_status(pid, "NoNewPrivs", nnp, sizeof(nnp));
	int e3 = proc_status(pid, "Seccomp_filters", nf, sizeof(nf));
	if (e1 || e2 || e3) {
		res_fail(r, "%s: status unreadable (%s)", who, en(-(e1 ?: e2 ?: e3)));
		return;
	}
	if (strcmp(sc, "2") || strcmp(nnp, "1") || strtol(nf, NULL, 10) < 1)
		res_fail(r, "%s: Seccomp=%s NoNewPrivs=%s filters=%s", who, sc, nnp, nf);
	else
		res_note(r, "%s:ok(filters=%s)", who, nf);
}

static void *thread_status(void *arg)
{
	filter_status(arg, "thread", -1);
	return NULL;
}

/* fork, then fork+execve the probe in `--status` mode; parse its line. */
static void exec_status(struct probe_ctx *ctx, struct probe_res *r)
{
	int p[2];
	char line[512] = "";
	if (pipe(p) < 0) {
		res_fail(r, "pipe: %s", en(errno));
		return;
	}
	pid_t c = fork();
	if (c == 0) {
		pid_t g = fork();
		if (g == 0) {
			dup2(p[1], 1);
			close(p[0]);
			execl("/proc/self/exe", ctx->self, "--status", (char *)NULL);
			_exit(127);
		}
		int st = 0;
		waitpid(g, &st, 0);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 126);
	}
	close(p[1]);
	ssize_t n = read(p[0], line, sizeof(line) - 1);
	close(p[0]);
	waitpid(c, NULL, 0);
	if (n <= 0) {
		res_fail(r, "exec grandchild: no status");
		return;
	}
	line[n] = '\0';
	line[strcspn(line, "\n")] = '\0';
	if (!strstr(line, "Seccomp=2 ") || !strstr(line, "NoNewPrivs=1 ") ||
	    strstr(line, "Seccomp_filters=0 "))
		res_fail(r, "exec grandchild: %s", line);
	else
		res_note(r, "exec-grandchild:ok");
}

PROBE_CASE(sc17_filter)
{
	pthread_t t;
	char nf_before[32] = "", nf_after[32] = "";
	filter_status(r, "self", 0);
	filter_status(r, "probe", getppid());
	filter_status(r, "pid1", 1);
	if (pthread_create(&t, NULL, thread_status, r) == 0)
		pthread_join(t, NULL);
	else
		res_fail(r, "pthread_create failed");
	exec_status(ctx, r);

	/* Stacking an allow-all filter must not loosen anything: the strictest result wins. */
	struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_fprog prog = { 1, allow };
	proc_status(0, "Seccomp_filters", nf_before, sizeof(nf_before));
	errno = 0;
	long rc = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
	res_note(r, "allow-all filter load=%s", rc == 0 ? "OK" : en(errno));
	proc_status(0, "Seccomp_filters", nf_after, sizeof(nf_after));
	res_note(r, "filters %s->%s", nf_before, nf_after);
	errno = 0;
	long k = syscall(SYS_add_key, "user", "yard", "x", 1L, (long)KEY_SPEC_SESSION_KEYRING);
	expect_err(r, "after:add_key", k, errno, ERRS(EPERM));
	if (k > 0)
		syscall(SYS_keyctl, (long)KEYCTL_INVALIDATE, k);
	TRY(r, "after:keyctl(bad op)", syscall(SYS_keyctl, 0x7fffL, 0L, 0L), EPERM);
	TRY(r, "after:mount(bad ptr)", mount("none", (const char *)1, "tmpfs", 0, NULL), EPERM);
	TRY(r, "after:io_uring_setup", syscall(SYS_io_uring_setup, 1L, NULL), EPERM, ENOSYS);
}
