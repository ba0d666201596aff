/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Load the compiled default profile in forked children (no_new_privs + seccomp, no
 * privilege needed) and probe it with the errno oracle: every call gets harmless invalid
 * arguments, so an allowed call fails with the kernel's own EBADF/EFAULT/EINVAL while a
 * filtered one returns the filter's errno. The arguments stay harmless even if the filter
 * were broken and the call reached the kernel as root. Each probe is also run through the
 * BPF simulator, so this test shows the simulator (which test-seccomp-intended relies on)
 * agrees with the kernel.
 *
 * usage: test-seccomp-live PROFILE.json
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/netlink.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "cleanup.h"
#include "sim.h"
#include "syscall.h"
#include "tap.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

/* Numbers past glibc 2.36's headers; one numbering on x86_64 and aarch64 since 424. */
#define NR_fchmodat2 452
#define NR_statmount 457
#define NR_lsm_list_modules 461
#define NR_open_tree_attr 467
#define NR_not_yet 470 /* listns in 6.19; not in libseccomp's tables or ours */

#define X32_BIT 0x40000000UL

enum {
	WANT_OK = 0,		/* returns >= 0 */
	WANT_SIGSYS = -1,	/* killed by the filter */
	WANT_NOT_FILTERED = -2, /* reaches the kernel; its answer depends on the host */
};

#define R_ALLOW SECCOMP_RET_ALLOW
#define R_EPERM (SECCOMP_RET_ERRNO | EPERM)
#define R_ENOSYS (SECCOMP_RET_ERRNO | ENOSYS)
#define R_EAFNOSUPPORT (SECCOMP_RET_ERRNO | EAFNOSUPPORT)
#define R_KILL SECCOMP_RET_KILL_PROCESS

struct check {
	const char *what;
	unsigned long nr;
	unsigned long a[6];
	int want;     /* WANT_* or a positive errno */
	uint32_t act; /* what the simulator must answer */
	bool forks;   /* a clone: the child side returns 0 and must leave at once */
};

struct outcome {
	long ret;
	int err;
	int loaded;
};

struct result {
	struct outcome o;
	int sig;
	bool got;
};

static const struct sock_fprog *the_filter;

static int load_filter(const struct sock_fprog *fp)
{
	struct rlimit no_core = { 0, 0 };

	/* A KILL_PROCESS probe must not leave a core dump behind. */
	setrlimit(RLIMIT_CORE, &no_core);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (ts_seccomp(SECCOMP_SET_MODE_FILTER, 0, (void *)fp) < 0)
		return -errno;
	return 0;
}

typedef long (*probe_fn)(const struct check *c);

static long probe_syscall(const struct check *c)
{
	return syscall((long)c->nr, c->a[0], c->a[1], c->a[2], c->a[3], c->a[4], c->a[5]);
}

/* Run fn in a child, with the filter loaded when fp is set. */
static void run_child(const struct sock_fprog *fp, probe_fn fn, const struct check *c,
		      struct result *res)
{
	int p[2], status;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return;
	}
	if (pid == 0) {
		struct outcome o = { 0 };
		int r = fp ? load_filter(fp) : 0;

		if (r < 0) {
			o.err = -r;
			(void)!write(p[1], &o, sizeof(o));
			_exit(2);
		}
		o.loaded = 1;
		errno = 0;
		o.ret = fn(c);
		o.err = errno;
		if (c->forks && o.ret == 0)
			_exit(0);
		if (c->forks && o.ret > 0)
			waitpid((pid_t)o.ret, NULL, __WALL);
		(void)!write(p[1], &o, sizeof(o));
		_exit(0);
	}
	close(p[1]);
	res->got = read(p[0], &res->o, sizeof(res->o)) == (ssize_t)sizeof(res->o);
	close(p[0]);
	if (waitpid(pid, &status, 0) == pid && WIFSIGNALED(status))
		res->sig = WTERMSIG(status);
}

static const char *errname(int e)
{
	static char buf[32];

	switch (e) {
	case 0:
		return "success";
	case EPERM:
		return "EPERM";
	case ENOSYS:
		return "ENOSYS";
	case EBADF:
		return "EBADF";
	case EFAULT:
		return "EFAULT";
	case EINVAL:
		return "EINVAL";
	case EAFNOSUPPORT:
		return "EAFNOSUPPORT";
	case ESRCH:
		return "ESRCH";
	case ENOTTY:
		return "ENOTTY";
	case ENOENT:
		return "ENOENT";
	default:
		snprintf(buf, sizeof(buf), "errno %d", e);
		return buf;
	}
}

static void describe(const struct result *res, char *buf, size_t len)
{
	if (res->sig)
		snprintf(buf, len, "killed by signal %d", res->sig);
	else if (!res->got)
		snprintf(buf, len, "no result");
	else if (!res->o.loaded)
		snprintf(buf, len, "filter not loaded: %s", errname(res->o.err));
	else if (res->o.ret >= 0)
		snprintf(buf, len, "returned %ld", res->o.ret);
	else
		snprintf(buf, len, "%s", errname(res->o.err));
}

static bool result_matches(const struct check *c, const struct result *res)
{
	if (c->want == WANT_SIGSYS)
		return res->sig == SIGSYS;
	if (res->sig || !res->got || !res->o.loaded)
		return false;
	if (c->want == WANT_OK)
		return res->o.ret >= 0;
	if (c->want == WANT_NOT_FILTERED)
		return res->o.ret >= 0 ||
		       (res->o.err != EPERM && res->o.err != ENOSYS && res->o.err != EAFNOSUPPORT);
	return res->o.ret == -1 && res->o.err == c->want;
}

static bool sim_matches(const struct sim_prog *prog, const struct check *c, uint32_t arch,
			char *buf, size_t len)
{
	struct seccomp_data d = { .nr = (int)c->nr, .arch = arch };
	uint32_t ret;

	memcpy(d.args, c->a, sizeof(d.args));
	if (sim_run(prog, &d, &ret) < 0) {
		snprintf(buf, len, "simulator rejected the program");
		return false;
	}
	sim_action_str(ret, buf, len);
	return ret == c->act;
}

static void check_one(const struct sim_prog *prog, const struct check *c)
{
	struct result res, raw;
	char got[64], sim[64], want[64];
	bool kernel_ok, sim_ok;

	run_child(the_filter, probe_syscall, c, &res);
	kernel_ok = result_matches(c, &res);
	sim_ok = sim_matches(prog, c, sim_native_audit_arch(), sim, sizeof(sim));
	describe(&res, got, sizeof(got));
	if (c->want == WANT_SIGSYS)
		snprintf(want, sizeof(want), "SIGSYS");
	else if (c->want == WANT_OK)
		snprintf(want, sizeof(want), "success");
	else if (c->want == WANT_NOT_FILTERED)
		snprintf(want, sizeof(want), "no filter errno");
	else
		snprintf(want, sizeof(want), "%s", errname(c->want));
	ok(kernel_ok && sim_ok, "%s: %s (filter %s)", c->what, got, sim);
	if (!kernel_ok)
		diag("  expected %s from the kernel", want);
	if (!sim_ok) {
		char exp[64];

		diag("  simulator says %s, expected %s", sim,
		     sim_action_str(c->act, exp, sizeof(exp)));
	}
	/* Show that the oracle discriminates: the same call without the filter. */
	if (c->want > 0 && c->act != R_ALLOW && c->want != WANT_SIGSYS) {
		run_child(NULL, probe_syscall, c, &raw);
		describe(&raw, got, sizeof(got));
		diag("  without the filter: %s", got);
	}
}

static long probe_fork(const struct check *c)
{
	pid_t pid = fork();
	int status;

	(void)c;
	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(7);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 7)
		return -1;
	return pid;
}

#if defined(__x86_64__)
/* i386 ABI entry from a 64-bit process; nr 20 is getpid there. */
static long probe_int80(const struct check *c)
{
	long r;

	(void)c;
	/* Without i386 emulation this faults: die of it quietly (sanitizers hook SIGSEGV). */
	signal(SIGSEGV, SIG_DFL);
	__asm__ volatile("int $0x80"
			 : "=a"(r)
			 : "a"(20L)
			 : "memory", "cc", "r8", "r9", "r10", "r11");
	return r;
}
#endif

int main(int argc, char **argv)
{
	const unsigned long bad = 1; /* a pointer that always faults */
	const unsigned long fd_bad = (unsigned long)-1L;
	struct ts_error err = { 0 };
	struct sim_prog prog = { 0 };
	struct sock_fprog fp;
	struct result res;
	char got[64], sim[64];
	int r;

	plan(0);
	if (argc != 2) {
		fprintf(stderr, "usage: %s PROFILE.json\n", argv[0]);
		return 2;
	}
	r = sim_compile(argv[1], &prog, &err);
	if (!ok(r == 0, "compile `%s` (%zu instructions)", argv[1], prog.len)) {
		diag("%s", err.msg);
		return done();
	}
	fp.len = (unsigned short)prog.len;
	fp.filter = prog.insns;
	the_filter = &fp;

	const struct check checks[] = {
		/* Controls: the filter lets ordinary work through. */
		{ "getpid", SYS_getpid, { 0 }, WANT_OK, R_ALLOW, false },
		{ "openat(\"/\")",
		  SYS_openat,
		  { (unsigned long)AT_FDCWD, (unsigned long)"/",
		    O_RDONLY | O_DIRECTORY | O_CLOEXEC },
		  WANT_OK,
		  R_ALLOW,
		  false },
		{ "clone(SIGCHLD) like fork", SYS_clone, { SIGCHLD }, WANT_OK, R_ALLOW, true },
		{ "ioctl(-1, TCGETS)", SYS_ioctl, { fd_bad, TCGETS }, EBADF, R_ALLOW, false },
		{ "ioctl(-1, TIOCGWINSZ)", SYS_ioctl, { fd_bad, TIOCGWINSZ }, EBADF, R_ALLOW, false },
		{ "personality(0xffffffff) query",
		  SYS_personality,
		  { 0xffffffffUL },
		  WANT_OK,
		  R_ALLOW,
		  false },
		{ "socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC)",
		  SYS_socket,
		  { AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC },
		  WANT_OK,
		  R_ALLOW,
		  false },
		{ "socket(AF_INET, SOCK_DGRAM)",
		  SYS_socket,
		  { AF_INET, SOCK_DGRAM },
		  WANT_OK,
		  R_ALLOW,
		  false },
		{ "socket(AF_INET6, SOCK_STREAM)",
		  SYS_socket,
		  { AF_INET6, SOCK_STREAM },
		  WANT_NOT_FILTERED,
		  R_ALLOW,
		  false },
		{ "socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)",
		  SYS_socket,
		  { AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE },
		  WANT_OK,
		  R_ALLOW,
		  false },
		{ "socketpair(AF_UNIX, SOCK_STREAM, 0, bad)",
		  SYS_socketpair,
		  { AF_UNIX, SOCK_STREAM, 0, bad },
		  EFAULT,
		  R_ALLOW,
		  false },
		{ "ptrace(PTRACE_CONT, 0) allowed",
		  SYS_ptrace,
		  { PTRACE_CONT, 0 },
		  ESRCH,
		  R_ALLOW,
		  false },
		{ "fchmodat2(-1, bad) allowed",
		  NR_fchmodat2,
		  { fd_bad, bad },
		  WANT_NOT_FILTERED,
		  R_ALLOW,
		  false },
		{ "seccomp(SET_MODE_FILTER, 0, bad) allowed (filters only stack)",
		  SYS_seccomp,
		  { SECCOMP_SET_MODE_FILTER, 0, bad },
		  EFAULT,
		  R_ALLOW,
		  false },

		/* SC-01 keyrings */
		{ "keyctl(GET_KEYRING_ID, USER_KEYRING)",
		  SYS_keyctl,
		  { 0, (unsigned long)-4, 0 },
		  EPERM,
		  R_EPERM,
		  false },
		{ "add_key(bad)",
		  SYS_add_key,
		  { bad, bad, bad, 1, (unsigned long)-3 },
		  EPERM,
		  R_EPERM,
		  false },
		{ "request_key(bad)", SYS_request_key, { bad, bad }, EPERM, R_EPERM, false },
		/* SC-02/03 namespaces */
		{ "unshare(CLONE_NEWUSER)", SYS_unshare, { CLONE_NEWUSER }, EPERM, R_EPERM, false },
		{ "unshare(CLONE_NEWNET)", SYS_unshare, { CLONE_NEWNET }, EPERM, R_EPERM, false },
		{ "setns(-1, 0)", SYS_setns, { fd_bad, 0 }, EPERM, R_EPERM, false },
		{ "clone(CLONE_NEWUSER|SIGCHLD)",
		  SYS_clone,
		  { CLONE_NEWUSER | SIGCHLD },
		  EPERM,
		  R_EPERM,
		  true },
		{ "clone(CLONE_NEWNS|SIGCHLD)",
		  SYS_clone,
		  { CLONE_NEWNS | SIGCHLD },
		  EPERM,
		  R_EPERM,
		  true },
		{ "clone(CLONE_NEWPID|CLONE_NEWNET|SIGCHLD)",
		  SYS_clone,
		  { CLONE_NEWPID | CLONE_NEWNET | SIGCHLD },
		  EPERM,
		  R_EPERM,
		  true },
		{ "clone3(bad, 88)", SYS_clone3, { bad, 88 }, ENOSYS, R_ENOSYS, false },
		/* SC-04 mount API */
		{ "mount(bad)", SYS_mount, { 0, bad, 0, 0, 0 }, EPERM, R_EPERM, false },
		{ "umount2(bad)", SYS_umount2, { bad, 0 }, EPERM, R_EPERM, false },
		{ "pivot_root(bad, bad)", SYS_pivot_root, { bad, bad }, EPERM, R_EPERM, false },
		{ "chroot(bad)", SYS_chroot, { bad }, EPERM, R_EPERM, false },
		{ "fsopen(bad)", SYS_fsopen, { bad, 0 }, EPERM, R_EPERM, false },
		{ "open_tree(-1, bad)", SYS_open_tree, { fd_bad, bad, 0 }, EPERM, R_EPERM, false },
		{ "move_mount(-1, bad, -1, bad)",
		  SYS_move_mount,
		  { fd_bad, bad, fd_bad, bad, 0 },
		  EPERM,
		  R_EPERM,
		  false },
		{ "mount_setattr(-1, bad)",
		  SYS_mount_setattr,
		  { fd_bad, bad, 0, bad, 32 },
		  EPERM,
		  R_EPERM,
		  false },
		{ "open_tree_attr(-1, bad)",
		  NR_open_tree_attr,
		  { fd_bad, bad, 0, bad, 32 },
		  EPERM,
		  R_EPERM,
		  false },
		/* SC-05..08 */
		{ "io_uring_setup(1, NULL)", SYS_io_uring_setup, { 1, 0 }, EPERM, R_EPERM, false },
		{ "io_uring_enter(-1)", SYS_io_uring_enter, { fd_bad }, EPERM, R_EPERM, false },
		{ "io_uring_register(-1)", SYS_io_uring_register, { fd_bad }, EPERM, R_EPERM, false },
		{ "bpf(BPF_PROG_LOAD, NULL, 0)", SYS_bpf, { 5, 0, 0 }, EPERM, R_EPERM, false },
		{ "perf_event_open(bad)",
		  SYS_perf_event_open,
		  { bad, 0, fd_bad, fd_bad, 0 },
		  EPERM,
		  R_EPERM,
		  false },
		{ "userfaultfd(~0)", SYS_userfaultfd, { ~0UL }, EPERM, R_EPERM, false },
		/* SC-09 */
		{ "init_module(bad)", SYS_init_module, { bad, 0, bad }, EPERM, R_EPERM, false },
		{ "finit_module(-1)", SYS_finit_module, { fd_bad, bad, 0 }, EPERM, R_EPERM, false },
		{ "delete_module(bad)", SYS_delete_module, { bad, 0 }, EPERM, R_EPERM, false },
		{ "kexec_load(bad flags)",
		  SYS_kexec_load,
		  { 0, 0, 0, 0xdead0000UL },
		  EPERM,
		  R_EPERM,
		  false },
		{ "reboot(bad magic)", SYS_reboot, { 0, 0, 0, 0 }, EPERM, R_EPERM, false },
		{ "swapon(bad)", SYS_swapon, { bad, 0 }, EPERM, R_EPERM, false },
		{ "acct(bad)", SYS_acct, { bad }, EPERM, R_EPERM, false },
		{ "quotactl(bad)", SYS_quotactl, { 0, bad, 0, bad }, EPERM, R_EPERM, false },
		{ "syslog(SIZE_BUFFER)", SYS_syslog, { 10, 0, 0 }, EPERM, R_EPERM, false },
		{ "sethostname(bad, 1)", SYS_sethostname, { bad, 1 }, EPERM, R_EPERM, false },
#ifdef SYS_iopl
		{ "iopl(99)", SYS_iopl, { 99 }, EPERM, R_EPERM, false },
#endif
		{ "set_mempolicy(99)", SYS_set_mempolicy, { 99, 0, 0 }, EPERM, R_EPERM, false },
		{ "migrate_pages(-1)",
		  SYS_migrate_pages,
		  { fd_bad, 0, 0, 0 },
		  EPERM,
		  R_EPERM,
		  false },
		{ "fanotify_init(~0)",
		  SYS_fanotify_init,
		  { 0xffffffffUL, 0 },
		  EPERM,
		  R_EPERM,
		  false },
		{ "lsm_list_modules(bad)",
		  NR_lsm_list_modules,
		  { bad, bad, 0 },
		  EPERM,
		  R_EPERM,
		  false },
		/* SC-10, SC-11 */
		{ "open_by_handle_at(-1, bad)",
		  SYS_open_by_handle_at,
		  { fd_bad, bad, 0 },
		  EPERM,
		  R_EPERM,
		  false },
		{ "kcmp(-1)", SYS_kcmp, { fd_bad, fd_bad, 0, 0, 0 }, EPERM, R_EPERM, false },
		{ "pidfd_getfd(-1)", SYS_pidfd_getfd, { fd_bad, 0, 0 }, EPERM, R_EPERM, false },
		{ "process_madvise(-1)",
		  SYS_process_madvise,
		  { fd_bad, 0, 0, 0, 0 },
		  EPERM,
		  R_EPERM,
		  false },
		/* SC-12 */
		{ "personality(READ_IMPLIES_EXEC)",
		  SYS_personality,
		  { 0x0400000 },
		  EPERM,
		  R_EPERM,
		  false },
		{ "personality(ADDR_NO_RANDOMIZE)",
		  SYS_personality,
		  { 0x0040000 },
		  EPERM,
		  R_EPERM,
		  false },
		/* SC-15 */
		{ "socket(AF_VSOCK, SOCK_STREAM)",
		  SYS_socket,
		  { AF_VSOCK, SOCK_STREAM },
		  EPERM,
		  R_EPERM,
		  false },
		{ "socket(AF_ALG, SOCK_SEQPACKET)",
		  SYS_socket,
		  { AF_ALG, SOCK_SEQPACKET },
		  EPERM,
		  R_EPERM,
		  false },
		{ "socket(AF_PACKET, SOCK_RAW)",
		  SYS_socket,
		  { AF_PACKET, SOCK_RAW },
		  EPERM,
		  R_EPERM,
		  false },
		{ "socket(AF_INET, SOCK_RAW, IPPROTO_ICMP)",
		  SYS_socket,
		  { AF_INET, SOCK_RAW, 1 },
		  EPERM,
		  R_EPERM,
		  false },
		{ "socket(AF_INET6, SOCK_RAW|SOCK_CLOEXEC)",
		  SYS_socket,
		  { AF_INET6, SOCK_RAW | SOCK_CLOEXEC, 58 },
		  EPERM,
		  R_EPERM,
		  false },
		{ "socket(AF_BLUETOOTH, SOCK_STREAM)",
		  SYS_socket,
		  { 31, SOCK_STREAM },
		  EPERM,
		  R_EPERM,
		  false },
		{ "socket(AF_NETLINK, SOCK_RAW, NETLINK_KOBJECT_UEVENT)",
		  SYS_socket,
		  { AF_NETLINK, SOCK_RAW, NETLINK_KOBJECT_UEVENT },
		  EAFNOSUPPORT,
		  R_EAFNOSUPPORT,
		  false },
		{ "socket(AF_NETLINK, SOCK_DGRAM, NETLINK_AUDIT)",
		  SYS_socket,
		  { AF_NETLINK, SOCK_DGRAM, NETLINK_AUDIT },
		  EAFNOSUPPORT,
		  R_EAFNOSUPPORT,
		  false },
		{ "socket(AF_VSOCK | 1<<32) high bits do not smuggle a family",
		  SYS_socket,
		  { AF_VSOCK | (1UL << 32), SOCK_STREAM },
		  EPERM,
		  R_EPERM,
		  false },
		{ "socketpair(AF_ALG)",
		  SYS_socketpair,
		  { AF_ALG, SOCK_SEQPACKET, 0, bad },
		  EPERM,
		  R_EPERM,
		  false },
		/* SC-16 */
		{ "clock_settime(CLOCK_REALTIME, bad)",
		  SYS_clock_settime,
		  { 0, bad },
		  EPERM,
		  R_EPERM,
		  false },
		{ "settimeofday(bad, NULL)", SYS_settimeofday, { bad, 0 }, EPERM, R_EPERM, false },
		{ "adjtimex(bad)", SYS_adjtimex, { bad }, EPERM, R_EPERM, false },
		{ "clock_adjtime(CLOCK_REALTIME, bad)",
		  SYS_clock_adjtime,
		  { 0, bad },
		  EPERM,
		  R_EPERM,
		  false },
		/* CVE-2019-10063: ioctl compared on the low 32 bits */
		{ "ioctl(-1, TIOCSTI)", SYS_ioctl, { fd_bad, TIOCSTI, bad }, EPERM, R_EPERM, false },
		{ "ioctl(-1, TIOCSTI | 0xffffffff00000000)",
		  SYS_ioctl,
		  { fd_bad, 0xffffffff00000000UL | TIOCSTI, bad },
		  EPERM,
		  R_EPERM,
		  false },
		{ "ioctl(-1, TIOCSTI | 1<<32)",
		  SYS_ioctl,
		  { fd_bad, (1UL << 32) | TIOCSTI, bad },
		  EPERM,
		  R_EPERM,
		  false },
		{ "ioctl(-1, TIOCLINUX)",
		  SYS_ioctl,
		  { fd_bad, TIOCLINUX, bad },
		  EPERM,
		  R_EPERM,
		  false },
		/* ENOSYS for what is newer than our tables */
		{ "syscall 1000", 1000, { 0 }, ENOSYS, R_ENOSYS, false },
		{ "syscall 470 (not in libseccomp's or our table)",
		  NR_not_yet,
		  { 0 },
		  ENOSYS,
		  R_ENOSYS,
		  false },
		{ "statmount(bad) ENOSYS, libmount falls back",
		  NR_statmount,
		  { bad, bad, 0, 0 },
		  ENOSYS,
		  R_ENOSYS,
		  false },
	/* SC-13: x32 numbers on the x86_64 audit arch */
#if defined(__x86_64__)
		{ "x32 keyctl (nr | 0x40000000)",
		  X32_BIT | SYS_keyctl,
		  { 0, (unsigned long)-4 },
		  WANT_SIGSYS,
		  R_KILL,
		  false },
		{ "x32 getpid (nr | 0x40000000)",
		  X32_BIT | SYS_getpid,
		  { 0 },
		  WANT_SIGSYS,
		  R_KILL,
		  false },
#endif
	};

	for (size_t i = 0; i < ELEMENTSOF(checks); i++)
		check_one(&prog, &checks[i]);

	/* fork() through glibc, which issues clone without namespace flags. */
	{
		const struct check c = { .what = "fork" };

		run_child(&fp, probe_fork, &c, &res);
		describe(&res, got, sizeof(got));
		ok(result_matches(&c, &res), "fork() and wait: %s", got);
	}

#if defined(__x86_64__)
	/* SC-13: the i386 ABI through int $0x80, when this kernel has it at all. */
	{
		const struct check c = { .what = "int80", .nr = 20 };
		struct seccomp_data d = { .nr = 20, .arch = AUDIT_ARCH_I386 };
		uint32_t ret = 0;

		r = sim_run(&prog, &d, &ret);
		ok(r == 0 && ret == R_KILL, "simulator: i386 getpid is KILL_PROCESS (%s)",
		   sim_action_str(ret, sim, sizeof(sim)));
		run_child(NULL, probe_int80, &c, &res);
		if (res.sig || !res.got || res.o.ret <= 0) {
			describe(&res, got, sizeof(got));
			skip_case("the control did not run: no i386 emulation here, or an outer "
				  "seccomp filter (a sandbox's) kills it",
				  "int $0x80 getpid killed (control: %s)", got);
		} else {
			run_child(&fp, probe_int80, &c, &res);
			describe(&res, got, sizeof(got));
			ok(res.sig == SIGSYS, "int $0x80 getpid killed: %s", got);
		}
	}
#endif

	sim_prog_free(&prog);
	return done();
}
