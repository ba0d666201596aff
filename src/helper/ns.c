/* SPDX-License-Identifier: Apache-2.0 */
#include "ns.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

static pid_t clone_with(unsigned long flags, int *pidfd, struct ts_error *err)
{
	long r;

	/* The raw syscall with a NULL stack behaves like fork(); glibc's clone() wrapper
	 * insists on a separate stack. The helper is single-threaded, so this is safe.
	 * x86_64 argument order: flags, stack, parent_tid (pidfd with CLONE_PIDFD), ... */
	r = syscall(SYS_clone, flags | CLONE_PIDFD | SIGCHLD, NULL, pidfd, NULL, NULL);
	if (r < 0) {
		int e = errno;

		if (e == EPERM || e == ENOSPC || e == EUSERS)
			return ts_err_errno(err, -e,
					    "create namespaces (are unprivileged user namespaces "
					    "enabled? run `toren-sandbox doctor`)");
		return ts_err_errno(err, -e, "create namespaces");
	}
	return (pid_t)r;
}

pid_t ts_ns_clone(int *pidfd, struct ts_error *err)
{
	return clone_with(TS_NS_CLONE_FLAGS, pidfd, err);
}

pid_t ts_ns_clone_user(int *pidfd, struct ts_error *err)
{
	return clone_with(CLONE_NEWUSER, pidfd, err);
}

int ts_ns_enter_cgroup(struct ts_error *err)
{
	if (unshare(CLONE_NEWCGROUP) < 0)
		return ts_err_errno(err, -errno, "create cgroup namespace");
	return 0;
}
