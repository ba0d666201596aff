/* SPDX-License-Identifier: Apache-2.0 */
#include "netcount.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cleanup.h"
#include "nft.h"
#include "syscall.h"
#include "util.h"

/* The start time of pid (/proc/PID/stat field 22, clock ticks since boot). 0 or -errno. */
static int start_time(unsigned long long pid, unsigned long long *ret)
{
	_cleanup_close_ int fd = -EBADF;
	char path[64], buf[1024], *p, *end;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%llu/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n < 0 ? -errno : -ESRCH;
	buf[n] = '\0';
	/* the name (field 2) may hold spaces and parentheses: fields count from its last `)` */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return -EBADMSG;
	p += 2;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -EBADMSG;
		p++;
	}
	errno = 0;
	*ret = strtoull(p, &end, 10);
	return errno || end == p || *end != ' ' ? -EBADMSG : 0;
}

int ts_netcount_print(const char *pid_s, const char *start_s, struct ts_error *err)
{
	_cleanup_close_ int pidfd = -EBADF;
	unsigned long long pid, want, start;
	uint64_t c4 = 0, c6 = 0;
	int r;

	if (ts_parse_ull(pid_s, &pid) < 0 || pid == 0 || pid > 4194304)
		return ts_err(err, -EINVAL, "bad pid `%s`", pid_s);
	if (ts_parse_ull(start_s, &want) < 0 || want == 0)
		return ts_err(err, -EINVAL, "bad start time `%s`", start_s);
	/* setuid mode: become the caller for good (ids and capabilities) before anything */
	if (setresgid(getgid(), getgid(), getgid()) < 0 ||
	    setresuid(getuid(), getuid(), getuid()) < 0)
		return ts_err_errno(err, -errno, "drop privileges");
	if (prctl(PR_SET_DUMPABLE, 0) < 0)
		return ts_err_errno(err, -errno, "make the helper non-dumpable");
	/*
	 * A pid names a process only until it ends: the pidfd holds that one process, and
	 * the start time read after it was opened says it is the sandbox's init (had the pid
	 * been reused before, the start time is the newcomer's). Then the namespaces are
	 * joined through the pidfd, never by the pid again: a reuse after the check cannot
	 * make us count another process's namespace (an ended init: ESRCH).
	 */
	pidfd = ts_pidfd_open((pid_t)pid, 0);
	if (pidfd < 0)
		return ts_err_errno(err, -errno, "pid %llu", pid);
	r = start_time(pid, &start);
	if (r < 0)
		return ts_err_errno(err, r, "read the start time of pid %llu", pid);
	if (start != want)
		return ts_err(err, -ESRCH,
			      "pid %llu is not the sandbox's init any more (it started at %llu, "
			      "not %llu)",
			      pid, start, want);
	/* the user namespace is joined first: it gives the capabilities the network one asks
	 * for (setns(2) on a pidfd orders them so) */
	if (setns(pidfd, CLONE_NEWUSER | CLONE_NEWNET) < 0)
		return ts_err_errno(err, -errno, "join the user and network namespaces of pid %llu",
				    pid);
	r = ts_nft_read_counter(TS_NFT_COUNTER_CONN4, &c4, err);
	if (r == 0)
		r = ts_nft_read_counter(TS_NFT_COUNTER_CONN6, &c6, err);
	if (r < 0)
		return r;
	printf("%s %" PRIu64 "\n%s %" PRIu64 "\n", TS_NFT_COUNTER_CONN4, c4, TS_NFT_COUNTER_CONN6,
	       c6);
	return fflush(stdout) == 0 ? 0 : ts_err_errno(err, -errno, "write the counters");
}
