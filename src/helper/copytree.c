/* SPDX-License-Identifier: Apache-2.0 */
#include "copytree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/protect.h"
#include "../lib/treecopy.h"
#include "cleanup.h"
#include "helper.h"
#include "idmap.h"
#include "ns.h"
#include "proc.h"
#include "setuid.h"
#include "sync.h"
#include "treeargs.h"
#include "util.h"

#define COPY_SRC_FD 3
#define COPY_DST_FD 4

/* What the child sends back once the work ended: its counters (a scan: paths found in
 * entries) and its error. */
struct copy_result {
	struct ts_error err;
	uint64_t bytes, entries;
};

/* fd 3 is the caller's open directory; fd 4 its destination directory (a copy) or where
 * the paths go (a scan, open for writing); anything else is a misuse. */
static int check_fds(enum ts_tree_mode mode, struct ts_error *err)
{
	for (int fd = COPY_SRC_FD; fd <= (mode == TS_TREE_REMOVE ? COPY_SRC_FD : COPY_DST_FD);
	     fd++) {
		struct stat st;
		int fl;

		if (fd == COPY_DST_FD && mode == TS_TREE_SCAN) {
			fl = fcntl(fd, F_GETFL);
			if (fl < 0 || fstat(fd, &st) < 0 || S_ISDIR(st.st_mode) ||
			    (fl & O_ACCMODE) == O_RDONLY || (fl & O_PATH))
				return ts_err(err, -EBADF,
					      "--scan-protected: fd %d is not open for writing",
					      fd);
		} else if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode))
			return ts_err(err, -EBADF, "%s: fd %d is not an open directory",
				      mode == TS_TREE_SCAN ? "--scan-protected" : "--copy-tree",
				      fd);
		if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
			return ts_err_errno(err, -errno, "fd %d", fd);
	}
	return 0;
}

/* --remove: empty the directory open as fd 3 (its owner removes it, and fd 3, itself) */
static int empty_dir(struct ts_error *err)
{
	DIR *d;
	struct dirent *de;
	int fd = fcntl(COPY_SRC_FD, F_DUPFD_CLOEXEC, 10), r = 0, k;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return ts_err_errno(err, -errno, "--remove: read fd %d", COPY_SRC_FD);
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    (k = ts_rm_rf_at(COPY_SRC_FD, de->d_name)) < 0 && !r)
			r = ts_err_errno(err, k, "--remove: remove `%s`", de->d_name);
	closedir(d);
	return r;
}

/* --scan-protected: the protected paths of fd 3, each with its NUL, written to fd 4 */
static void scan_protected(const struct ts_tree_args *a, uint64_t *n_found, struct ts_error *err)
{
	char **found = NULL;
	size_t n = 0;

	if (ts_protect_scan(COPY_SRC_FD, a->patterns, a->n_patterns, a->max_entries, a->scan_flags,
			    &found, &n, err) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (ts_write_all(COPY_DST_FD, found[i], strlen(found[i]) + 1) < 0) {
			ts_err_errno(err, -errno, "--scan-protected: write the paths");
			break;
		}
	*n_found = n;
	ts_strv_free(found);
}

static void child_main(int sock, bool setuid_mode, struct ts_tree_args *a)
{
	struct copy_result res = { 0 };
	int r;

	/* die with the helper; and, started setuid, be dumpable so that the parent (the
	 * caller again) may write our maps, as a sandbox's child does (main.c) */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) {
		ts_err_errno(&res.err, -errno, "set parent-death signal");
		goto out;
	}
	if (setuid_mode && (prctl(PR_SET_DUMPABLE, 1) < 0 || ts_sync_send_ready(sock) < 0)) {
		ts_err_errno(&res.err, -errno, "make the copier dumpable for its id maps");
		goto out;
	}
	r = ts_sync_wait_go(sock);
	if (r < 0) {
		ts_err(&res.err, r, "the helper gave up before the copy");
		goto out;
	}
	/* root of the namespace: its capabilities cover every file whose owner is mapped,
	 * which is every file the sandbox made; nothing outside the maps is reachable */
	if (ts_proc_set_ids(0, 0, &res.err) < 0)
		goto out;
	/* the change of ids cleared the parent-death signal: again, then make sure the helper
	 * did not die in between (its end of sock closes with it) */
	{
		struct pollfd p = { .fd = sock, .events = POLLRDHUP };

		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) {
			ts_err_errno(&res.err, -errno, "set parent-death signal");
			goto out;
		}
		if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			_exit(TS_HELPER_EXIT_SETUP);
	}
	if (prctl(PR_SET_DUMPABLE, 0) < 0) {
		ts_err_errno(&res.err, -errno, "make the copier non-dumpable");
		goto out;
	}
	umask(0);
	if (a->mode == TS_TREE_REMOVE)
		empty_dir(&res.err);
	else if (a->mode == TS_TREE_SCAN)
		scan_protected(a, &res.entries, &res.err);
	else
		ts_treecopy(COPY_SRC_FD, COPY_DST_FD, &a->copy, &res.err);
out:
	if (a->mode != TS_TREE_SCAN) {
		res.bytes = a->copy.bytes;
		res.entries = a->copy.entries;
	}
	if (send(sock, &res, sizeof(res), MSG_NOSIGNAL) < 0)
		_exit(TS_HELPER_EXIT_SETUP);
	_exit(0);
}

static int fail(const struct ts_error *err)
{
	int code = err->code > 0 && err->code < TS_HELPER_EXIT_SETUP ? err->code : EIO;

	fprintf(stderr, "toren-sandbox-helper: %s\n", err->msg);
	return code;
}

/* The caller reads our stdout (idcopy.c): once it is gone, the pipe has no reader. */
static bool caller_gone(void)
{
	struct pollfd p = { .fd = STDOUT_FILENO };

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLERR | POLLHUP));
}

int ts_copytree_main(int argc, char **argv)
{
	struct ts_helper_ctx ctx;
	struct ts_tree_args a;
	struct ts_error err = { 0 };
	struct copy_result res = { 0 };
	int sp[2] = { -EBADF, -EBADF }, pidfd = -EBADF, status, r;
	bool setuid_mode;
	ssize_t n;
	pid_t child;

	if (ts_treeargs_parse(argc, argv, &ctx, &a, &err) < 0) {
		fail(&err);
		return TS_HELPER_EXIT_SETUP;
	}
	/* First thing after parsing (which only reads argv), as for a sandbox: setuid, the
	 * caller's ids and CAP_SYS_ADMIN (permitted) only, and maps the caller may ask for
	 * (own id, or subordinate ids newuidmap checks) */
	if (ts_setuid_enter(&ctx, &setuid_mode, &err) < 0 || check_fds(a.mode, &err) < 0 ||
	    ts_idmap_check(&ctx, &err) < 0) {
		fail(&err);
		return TS_HELPER_EXIT_SETUP;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		ts_err_errno(&err, -errno, "socketpair");
		fail(&err);
		return TS_HELPER_EXIT_SETUP;
	}
	if (setuid_mode && ts_setuid_raise(&err) < 0) {
		fail(&err);
		return TS_HELPER_EXIT_SETUP;
	}
	child = ts_ns_clone_user(&pidfd, &err);
	if (setuid_mode && child != 0) {
		struct ts_error e2 = { 0 };

		if (ts_setuid_leave(&e2) < 0 && child > 0) {
			kill(child, SIGKILL);
			fail(&e2);
			return TS_HELPER_EXIT_SETUP;
		}
	}
	if (child < 0) {
		fail(&err);
		return TS_HELPER_EXIT_SETUP;
	}
	if (child == 0) {
		close(sp[0]);
		child_main(sp[1], setuid_mode, &a);
	}
	close(sp[1]);
	/* die with the caller (the copier dies with us): a snapshot killed while copying must
	 * not go on writing into a directory it no longer holds locked. Set after the last
	 * change of our ids, which clears it; a caller gone before that closed our stdout. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || caller_gone()) {
		kill(child, SIGKILL);
		while (waitpid(child, &status, 0) < 0 && errno == EINTR)
			;
		return TS_HELPER_EXIT_SETUP;
	}
	r = setuid_mode ? ts_sync_wait_ready(sp[0], &err) : 0;
	if (r >= 0)
		r = ts_idmap_apply(child, &ctx, &err);
	ts_sync_send_go(sp[0], r < 0 ? 'x' : 'g');
	n = recv(sp[0], &res, sizeof(res), 0);
	close(sp[0]);
	close(pidfd);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (r < 0) {
		fail(&err);
		return TS_HELPER_EXIT_SETUP;
	}
	if (n != (ssize_t)sizeof(res)) {
		ts_err(&err, -EIO, "%s: the worker ended without a result (status %d)", argv[1],
		       status);
		fail(&err);
		return TS_HELPER_EXIT_SETUP;
	}
	res.err.msg[sizeof(res.err.msg) - 1] = '\0';
	if (res.err.code)
		return fail(&res.err);
	if (a.mode == TS_TREE_SCAN)
		printf("paths %" PRIu64 "\n", res.entries);
	else
		printf("entries %" PRIu64 " bytes %" PRIu64 "\n", res.entries, res.bytes);
	return fflush(stdout) == 0 ? 0 : EIO;
}
