/* SPDX-License-Identifier: Apache-2.0 */
#include "netcount.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cleanup.h"
#include "nft.h"
#include "util.h"

int ts_netcount_print(const char *pid_s, struct ts_error *err)
{
	_cleanup_close_ int user = -EBADF, net = -EBADF;
	unsigned long long pid;
	uint64_t c4 = 0, c6 = 0;
	char path[64];
	int r;

	if (ts_parse_ull(pid_s, &pid) < 0 || pid == 0 || pid > 4194304)
		return ts_err(err, -EINVAL, "bad pid `%s`", pid_s);
	/* setuid mode: become the caller for good (ids and capabilities) before anything */
	if (setresgid(getgid(), getgid(), getgid()) < 0 ||
	    setresuid(getuid(), getuid(), getuid()) < 0)
		return ts_err_errno(err, -errno, "drop privileges");
	if (prctl(PR_SET_DUMPABLE, 0) < 0)
		return ts_err_errno(err, -errno, "make the helper non-dumpable");
	snprintf(path, sizeof(path), "/proc/%llu/ns/user", pid);
	user = open(path, O_RDONLY | O_CLOEXEC);
	if (user < 0)
		return ts_err_errno(err, -errno, "open `%s`", path);
	snprintf(path, sizeof(path), "/proc/%llu/ns/net", pid);
	net = open(path, O_RDONLY | O_CLOEXEC);
	if (net < 0)
		return ts_err_errno(err, -errno, "open `%s`", path);
	/* the user namespace first: it gives the capabilities the network one asks for */
	if (setns(user, CLONE_NEWUSER) < 0)
		return ts_err_errno(err, -errno, "join the user namespace of pid %llu", pid);
	if (setns(net, CLONE_NEWNET) < 0)
		return ts_err_errno(err, -errno, "join the network namespace of pid %llu", pid);
	r = ts_nft_read_counter(TS_NFT_COUNTER_CONN4, &c4, err);
	if (r == 0)
		r = ts_nft_read_counter(TS_NFT_COUNTER_CONN6, &c6, err);
	if (r < 0)
		return r;
	printf("%s %" PRIu64 "\n%s %" PRIu64 "\n", TS_NFT_COUNTER_CONN4, c4, TS_NFT_COUNTER_CONN6,
	       c6);
	return fflush(stdout) == 0 ? 0 : ts_err_errno(err, -errno, "write the counters");
}
