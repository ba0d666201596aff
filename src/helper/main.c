/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toren-sandbox-helper: builds one sandbox and executes its PID 1 in it.
 *
 * This file only sequences; each kernel concern lives in its own file. The order is the
 * security argument, so it is spelled out here:
 *
 *  parent (host)                         child (new user/mount/pid/net/uts/ipc ns)
 *  -------------                         ---------------------------------------
 *  check the maps never name host root
 *  copy init into a sealed memfd
 *  clone(NEWUSER|NEWNS|NEWPID|...) --->  (setuid mode: dumpable, "ready"); wait for "go"
 *  write uid/gid maps
 *  create cgroups, move the child in
 *  egress: fork the keeper; it starts
 *    pasta/slirp4netns, which joins the
 *    child's user+net ns and makes its tap
 *  send "go"                      --->   open every host source as an fd
 *  (names: after "go", the child sends
 *  the proxy's socket; fork the keeper,
 *  which starts the proxy with it; "go")
 *                                        become the setup ids; non-dumpable
 *                                        new cgroup ns; open the user namespace budgets
 *                                        build the mount tree; pivot_root; set the budgets
 *                                        hostname; `lo` up; names: listen on
 *                                          127.0.0.1:3128, send it, wait for "go";
 *                                          egress: the interface,
 *                                          routes, netfilter rules (net.h); setsid
 *                                        close every fd but 0-2 (+ control fd 3)
 *                                        drop bounding/ambient caps; final ids; clear caps
 *                                        (--init-setid: keep the four of ts_caps_keep_setid)
 *                                        no_new_privs; seccomp (it forbids mount); rlimits
 *  wait for EOF on the sync socket <---  execveat(init memfd) closes it (CLOEXEC)
 *  report to the caller (+ pidfd of init)
 *  forward signals, wait for init, exit with its status, remove cgroups
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caps.h"
#include "cgroup.h"
#include "cleanup.h"
#include "copytree.h"
#include "helper.h"
#include "idmap.h"
#include "idmount.h"
#include "mount.h"
#include "net.h"
#include "netcount.h"
#include "netproc.h"
#include "ns.h"
#include "proc.h"
#include "seccomp.h"
#include "setuid.h"
#include "sync.h"
#include "ucount.h"
#include "syscall.h"
#include "util.h"

/* Signals a caller sends to the sandbox; forwarded to init, which forwards them to the
 * program's process group. */
static const int forwarded_signals[] = { SIGINT,  SIGTERM,  SIGHUP,  SIGQUIT, SIGUSR1,
					 SIGUSR2, SIGWINCH, SIGCONT, SIGTSTP };

/* The ids the child uses while it builds the sandbox: the sandbox's `user`, so that what
 * the kernel creates on its behalf in the upper layer and the overlay work directory
 * (work/work, index) belongs to the caller on the host and can be removed without
 * privilege. Capabilities in the new namespace, not the uid, are what setup needs. */
static void setup_ids(const struct ts_helper_ctx *ctx, uid_t *uid, gid_t *gid)
{
	*uid = 1000;
	*gid = 1000;
	if (ts_helper_id_mapped(ctx->uid_map, ctx->n_uid_map, 1000))
		return;
	/* no 1000 inside: the program's own ids */
	*uid = ctx->uid;
	*gid = ctx->gid;
}

static int move_high(int *fd, struct ts_error *err)
{
	int n;

	if (*fd < 0)
		return 0;
	n = fcntl(*fd, F_DUPFD_CLOEXEC, 10);
	if (n < 0)
		return ts_err_errno(err, -errno, "move fd %d", *fd);
	close(*fd);
	*fd = n;
	return 0;
}

/*
 * The kernel clears the parent-death signal whenever our effective or file-system ids
 * change, which setting the sandbox's ids does when they map to another host id (a
 * sandbox started by root): set it again after each change, then make sure the helper did
 * not die in between (its end of the sync socket is open until we execute init).
 */
static int rearm_parent_death(const struct ts_helper_ctx *ctx, int sync_sock, struct ts_error *err)
{
	struct pollfd p = { .fd = sync_sock, .events = POLLRDHUP };

	if (ctx->detach)
		return 0;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		return ts_err_errno(err, -errno, "set parent-death signal");
	if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
		return ts_err(err, -ESRCH, "the helper is gone");
	return 0;
}

static int child_main(struct ts_helper_ctx *ctx, struct ts_mount_state *st, int sync_sock,
		      int prog_fd, bool setuid_mode, struct ts_error *err)
{
	int keep[3] = { sync_sock, prog_fd, ctx->seccomp_fd }, pass[2];
	struct ts_ucount_files budgets;
	size_t n_pass = 0;
	uid_t uid;
	gid_t gid;
	int r;

	/* Die with the helper: a sandbox never outlives the process that answers for it
	 * (unless --detach, where init is re-parented on purpose). */
	if (!ctx->detach && prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		return ts_err_errno(err, -errno, "set parent-death signal");
	/* A helper started setuid is non-dumpable, and so is this child: its /proc files
	 * would then belong to root and the parent, now the caller again, could not write
	 * our id maps. We hold capabilities only in our own new namespaces here, no more
	 * than a rootless user namespace gives; we go non-dumpable again right after. */
	if (setuid_mode) {
		if (prctl(PR_SET_DUMPABLE, 1) < 0)
			return ts_err_errno(err, -errno, "make the child dumpable for its id maps");
		r = ts_sync_send_ready(sync_sock);
		if (r < 0)
			return ts_err_errno(err, r, "tell the helper we are ready");
	}
	r = ts_sync_wait_go(sync_sock);
	if (r < 0)
		return ts_err(err, r, "helper gave up before setup");
	/* Host sources are opened here, in our copy of the host's mount namespace, still with
	 * the caller's credentials and before anything is mounted: mounts can only be cloned
	 * from the namespace one is in, and nothing mounted later can redirect them. */
	r = ts_mount_open_sources(ctx, st, err);
	if (r < 0)
		return r;

	setup_ids(ctx, &uid, &gid);
	r = ts_proc_set_ids(uid, gid, err);
	if (r < 0)
		return r;
	r = rearm_parent_death(ctx, sync_sock, err);
	if (r < 0)
		return r;
	/* From here on, other processes of the same user cannot ptrace us or open our
	 * /proc files (the maps are written, so the parent no longer needs them). */
	if (prctl(PR_SET_DUMPABLE, 0) < 0)
		return ts_err_errno(err, -errno, "make the helper non-dumpable");
	r = ts_ns_enter_cgroup(err);
	if (r < 0)
		return r;
	r = ts_ucount_open(ctx, &budgets, err);
	if (r < 0)
		return r;
	st->uid = ctx->uid;
	st->gid = ctx->gid;
	/* Modes given with --perms are exact while building; the program starts with 022. */
	umask(0);
	r = ts_mount_build(ctx, st, err);
	umask(022);
	if (r < 0)
		return r;
	/* every namespace the sandbox gets exists now (ucount.h) */
	r = ts_ucount_write(ctx, &budgets, err);
	if (r < 0)
		return r;
	if (ctx->hostname && sethostname(ctx->hostname, strlen(ctx->hostname)) < 0)
		return ts_err_errno(err, -errno, "set hostname");
	r = ts_net_loopback_up(err);
	if (r < 0)
		return r;
	/* names: the proxy outside gets a socket of this namespace, the one way out; init
	 * does not start before the proxy runs */
	if (ctx->net.mode == TS_NET_PROXY) {
		int lfd = ts_net_proxy_listen(err);

		if (lfd < 0)
			return lfd;
		r = ts_sync_send_fd(sync_sock, lfd);
		close(lfd);
		if (r < 0)
			return ts_err_errno(err, r, "hand the proxy its socket");
		r = ts_sync_wait_go(sync_sock);
		if (r < 0)
			return ts_err(err, r, "the name proxy did not start");
	}
	/* still with CAP_NET_ADMIN of our user namespace, which nothing inside keeps */
	r = ts_net_egress_setup(ctx, err);
	if (r < 0)
		return r;
	if (ctx->chdir && chdir(ctx->chdir) < 0)
		return ts_err_errno(err, -errno, "chdir to `%s`", ctx->chdir);
	/* A new session: no controlling terminal, so TIOCSTI on an inherited tty cannot
	 * push input to the host's shell (CVE-2017-5226). */
	if (setsid() < 0)
		return ts_err_errno(err, -errno, "setsid");
	pass[n_pass] = ctx->control_fd;
	n_pass += ctx->control_fd >= 0;
	pass[n_pass] = ctx->logs_fd;
	n_pass += ctx->control_fd >= 0 && ctx->logs_fd >= 0;
	r = ts_proc_close_fds(pass, n_pass, keep, ctx->seccomp_fd >= 0 ? 3 : 2, err);
	if (r < 0)
		return r;
	r = ts_caps_drop_bounding(ctx->init_setid, err);
	if (r < 0)
		return r;
	r = ts_proc_set_ids(ctx->uid, ctx->gid, err);
	if (r < 0)
		return r;
	r = rearm_parent_death(ctx, sync_sock, err);
	if (r < 0)
		return r;
	r = ctx->init_setid ? ts_caps_keep_setid(err) : ts_caps_clear(err);
	if (r < 0)
		return r;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return ts_err_errno(err, -errno, "set no_new_privs");
	if (ctx->seccomp_fd >= 0) {
		r = ts_seccomp_load_fd(ctx->seccomp_fd, err);
		if (r < 0)
			return r;
	}
	/* Limits last: an address-space limit must not starve our own setup (a sanitizer
	 * runtime maps terabytes of shadow), and nothing below allocates. */
	r = ts_proc_set_rlimits(ctx, err);
	if (r < 0)
		return r;
	/* the program was opened by its host path already; inside it gets a neutral name */
	if (ctx->argv0)
		ctx->argv[0] = (char *)ctx->argv0;
	return ts_proc_exec(prog_fd, ctx->argv, ctx->envp, err);
}

#if defined(__SANITIZE_ADDRESS__)
/* Sanitizer builds (CI): leak checking at exit would ptrace the helper, which is
 * non-dumpable in setuid mode, and would change its exit status. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}
#endif

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return TS_HELPER_EXIT_SETUP;
}

/* Forward signals to init until it exits; returns its wait status. */
static int supervise(pid_t child, int pidfd)
{
	_cleanup_close_ int sfd = -EBADF;
	sigset_t mask;
	int status = 0;

	sigemptyset(&mask);
	for (size_t i = 0; i < ELEMENTSOF(forwarded_signals); i++)
		sigaddset(&mask, forwarded_signals[i]);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);

	for (;;) {
		struct pollfd pfd[2] = { { .fd = pidfd, .events = POLLIN },
					 { .fd = sfd, .events = POLLIN } };
		pid_t w = waitpid(child, &status, WNOHANG);

		if (w == child)
			return status;
		if (w < 0 && errno != EINTR)
			return TS_HELPER_EXIT_SETUP << 8; /* ECHILD: we never saw init end */
		if (poll(pfd, sfd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR)
			return 0;
		if (sfd >= 0 && (pfd[1].revents & POLLIN)) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo != SIGCHLD)
				ts_pidfd_send_signal(pidfd, (int)si.ssi_signo, NULL, 0);
		}
	}
}

static void fail(const struct ts_helper_ctx *ctx, const struct ts_error *err)
{
	fprintf(stderr, "toren-sandbox-helper: %s\n", err->msg);
	if (ctx->sync_fd >= 0)
		ts_sync_report(ctx->sync_fd, err->code ? err->code : EIO, 0, -1, err);
}

int main(int argc, char **argv)
{
	struct ts_helper_ctx ctx;
	struct ts_mount_state st = { .rootfd = -EBADF, .devnull_fd = -EBADF, .mask_fd = -EBADF };
	struct ts_error err = { 0 };
	int sp[2] = { -EBADF, -EBADF }, pidfd = -EBADF, prog_fd = -EBADF, status, r;
	bool setuid_mode;
	pid_t child;

	/* our caller's ignored or blocked signals are not the sandbox's, and an ignored
	 * SIGCHLD would leave nothing to wait for */
	ts_signals_reset();
	/* a mode of its own, no sandbox: read a running one's connection counters */
	if (argc == 4 && !strcmp(argv[1], "--net-counters")) {
		if (ts_netcount_print(argv[2], argv[3], &err) < 0) {
			fprintf(stderr, "toren-sandbox-helper: %s\n", err.msg);
			return TS_HELPER_EXIT_SETUP;
		}
		return 0;
	}
	/* other modes of their own: copy a sandbox's tree, or find its protected paths, as
	 * root of its id mapping */
	if (argc >= 2 && (!strcmp(argv[1], "--copy-tree") || !strcmp(argv[1], "--scan-protected")))
		return ts_copytree_main(argc, argv);
	r = ts_helper_parse_args(&ctx, argc, argv, &err);
	if (r < 0) {
		fail(&ctx, &err);
		return TS_HELPER_EXIT_SETUP;
	}
	/* Standard streams are the one set of fds that reaches the sandbox from outside: a
	 * directory there would be a way out of its root. */
	for (int fd = 0; fd < 3; fd++) {
		r = ts_stdio_fd_safe(fd);
		if (r == -EISDIR) {
			ts_err(&err, r, "fd %d is a directory; refusing to hand it to the sandbox",
			       fd);
			fail(&ctx, &err);
			return TS_HELPER_EXIT_SETUP;
		}
		if (r < 0 && fcntl(fd, F_GETFL) >= 0) {
			ts_err(&err, r,
			       "fd %d is an O_PATH descriptor; refusing to hand it to the "
			       "sandbox",
			       fd);
			fail(&ctx, &err);
			return TS_HELPER_EXIT_SETUP;
		}
	}
	/* First thing after parsing (which only reads argv): stop being root. */
	r = ts_setuid_enter(&ctx, &setuid_mode, &err);
	if (r < 0) {
		fail(&ctx, &err);
		return TS_HELPER_EXIT_SETUP;
	}
	if ((r = move_high(&ctx.sync_fd, &err)) < 0 || (r = move_high(&ctx.seccomp_fd, &err)) < 0 ||
	    (r = move_high(&ctx.control_fd, &err)) < 0 || (r = move_high(&ctx.logs_fd, &err)) < 0) {
		fail(&ctx, &err);
		return TS_HELPER_EXIT_SETUP;
	}
	if (ctx.die_with_parent && !ctx.detach) {
		pid_t parent = getppid();

		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			return TS_HELPER_EXIT_SETUP;
	}
	/* before the clone: the new namespace would otherwise wait for this too; the host's
	 * addresses are this namespace's, the child's will be its own */
	if ((r = ts_idmap_check(&ctx, &err)) < 0 ||
	    (ctx.net.mode != TS_NET_NONE && ctx.net.mode != TS_NET_PROXY &&
	     (r = ts_netproc_host_addrs(&ctx, &err)) < 0)) {
		fail(&ctx, &err);
		return TS_HELPER_EXIT_SETUP;
	}
	if ((r = ts_proc_open_program(ctx.argv[0], ctx.uid_map, ctx.n_uid_map, &prog_fd, &err)) <
		    0 ||
	    (r = move_high(&prog_fd, &err)) < 0) {
		fail(&ctx, &err);
		return TS_HELPER_EXIT_SETUP;
	}
	/* id-mapped binds are made here, by the host's root: the child has no privilege over
	 * the host's file systems (idmount.h) */
	if ((r = ts_idmount_prepare(&ctx, &err)) < 0 ||
	    (r = ts_idmount_prepare_lowers(&ctx, &err)) < 0) {
		fail(&ctx, &err);
		return TS_HELPER_EXIT_SETUP;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		ts_err_errno(&err, -errno, "socketpair");
		fail(&ctx, &err);
		return TS_HELPER_EXIT_SETUP;
	}
	if (move_high(&sp[1], &err) < 0) {
		fail(&ctx, &err);
		return TS_HELPER_EXIT_SETUP;
	}

	/* The rlimits the kernel also counts per user namespace: the new namespace's budget
	 * is our soft limit at the clone (ts_proc_ns_rlimits) */
	if ((r = ts_proc_ns_rlimits(&ctx, &err)) < 0) {
		fail(&ctx, &err);
		return TS_HELPER_EXIT_SETUP;
	}
	/* setuid mode: CAP_SYS_ADMIN is effective for this one call (setuid.h) */
	if (setuid_mode && (r = ts_setuid_raise(&err)) < 0) {
		fail(&ctx, &err);
		return TS_HELPER_EXIT_SETUP;
	}
	child = ts_ns_clone(&pidfd, &err);
	if (child < 0) {
		struct ts_error ignore = { 0 };

		if (setuid_mode)
			ts_setuid_leave(&ignore);
		fail(&ctx, &err);
		return TS_HELPER_EXIT_SETUP;
	}
	if (child == 0) {
		close(sp[0]);
		r = child_main(&ctx, &st, sp[1], prog_fd, setuid_mode, &err);
		ts_sync_send_error(sp[1], &err);
		_exit(TS_HELPER_EXIT_SETUP);
	}
	close(sp[1]);
	if (setuid_mode && (r = ts_setuid_leave(&err)) < 0) {
		kill(child, SIGKILL);
		fail(&ctx, &err);
		return TS_HELPER_EXIT_SETUP;
	}

	/* Only a setuid helper must wait for the child to make itself dumpable; otherwise
	 * the maps are written while the child is still starting up. */
	r = setuid_mode ? ts_sync_wait_ready(sp[0], &err) : 0;
	if (r >= 0)
		r = ts_idmap_apply(child, &ctx, &err);
	if (r >= 0)
		r = ts_cgroup_setup(&ctx.cgroup, child, &err);
	/* egress: the program joins the child's namespaces while it waits for "go" (the
	 * maps are written, it is still dumpable); its tap device exists before the child
	 * configures it */
	if (r >= 0 && ctx.net.mode != TS_NET_NONE && ctx.net.mode != TS_NET_PROXY)
		r = ts_netproc_start(&ctx, child, pidfd, &err);
	ts_sync_send_go(sp[0], r < 0 ? 'x' : 'g');
	/* names: the child's socket for the proxy, then a second "go" once it runs */
	if (r >= 0 && ctx.net.mode == TS_NET_PROXY) {
		r = ts_sync_recv_fd(sp[0], &err);
		if (r >= 0) {
			ctx.net.proxy_fd = r;
			r = ts_netproc_start(&ctx, child, pidfd, &err);
			close(ctx.net.proxy_fd);
			ctx.net.proxy_fd = -EBADF;
			ts_sync_send_go(sp[0], r < 0 ? 'x' : 'g');
		}
	}
	if (r >= 0)
		r = ts_sync_wait_child(sp[0], &err);
	close(sp[0]);
	if (r < 0) {
		fail(&ctx, &err);
		while (waitpid(child, &status, 0) < 0 && errno == EINTR)
			;
		ts_netproc_wait(&ctx);
		ts_cgroup_cleanup(&ctx.cgroup);
		return TS_HELPER_EXIT_SETUP;
	}
	if (ctx.sync_fd >= 0) {
		r = ts_sync_report(ctx.sync_fd, 0, child, pidfd, NULL);
		close(ctx.sync_fd);
		/* A detached sandbox nobody heard of would run unrecorded: its caller is gone
		 * (killed while it waited), so the sandbox goes too. */
		if (r < 0 && ctx.detach) {
			ts_pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
			while (waitpid(child, &status, 0) < 0 && errno == EINTR)
				;
			ts_cgroup_cleanup(&ctx.cgroup);
			return TS_HELPER_EXIT_SETUP;
		}
	}
	if (ctx.detach)
		return 0;
	status = supervise(child, pidfd);
	ts_netproc_wait(&ctx);
	ts_cgroup_cleanup(&ctx.cgroup);
	ts_helper_ctx_free(&ctx);
	return exit_code(status);
}
