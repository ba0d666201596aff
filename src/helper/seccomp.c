/* SPDX-License-Identifier: Apache-2.0 */
#include "seccomp.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "syscall.h"
#include "util.h"

/* BPF_MAXINSNS: the kernel refuses longer classic programs. */
#define TS_SECCOMP_MAX_INSNS 4096

int ts_seccomp_load_fd(int fd, struct ts_error *err)
{
	_cleanup_free_ struct sock_filter *insns = NULL;
	struct sock_fprog prog;
	struct stat st;
	int r;

	if (fstat(fd, &st) < 0)
		return ts_err_errno(err, -errno, "stat seccomp program fd %d", fd);
	if (st.st_size <= 0 || st.st_size % (off_t)sizeof(struct sock_filter) != 0 ||
	    st.st_size > (off_t)(TS_SECCOMP_MAX_INSNS * sizeof(struct sock_filter)))
		return ts_err(err, -EINVAL, "seccomp program fd %d: bad size %lld", fd,
			      (long long)st.st_size);
	insns = malloc((size_t)st.st_size);
	if (!insns)
		return -ENOMEM;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return ts_err_errno(err, -errno, "seek seccomp program fd %d", fd);
	r = ts_read_all(fd, insns, (size_t)st.st_size);
	if (r < 0)
		return ts_err_errno(err, r, "read seccomp program fd %d", fd);
	prog.len = (unsigned short)(st.st_size / (off_t)sizeof(struct sock_filter));
	prog.filter = insns;
	if (ts_seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0)
		return ts_err_errno(err, -errno, "load seccomp filter");
	return 0;
}
