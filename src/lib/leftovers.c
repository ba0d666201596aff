/* SPDX-License-Identifier: Apache-2.0 */
#include "leftovers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "hostcheck.h"
#include "paths.h"
#include "procinfo.h"
#include "util.h"

#define CLAIMS "oneshot"

static bool plain_id(const char *s)
{
	if (strlen(s) != TS_ID_LEN)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

static int open_claims(const char *root, bool create)
{
	_cleanup_close_ int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int fd;

	if (rfd < 0)
		return -errno;
	if (create && mkdirat(rfd, CLAIMS, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(rfd, CLAIMS, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int ts_leftovers_claim(const char *root, const char *id, struct ts_error *err)
{
	_cleanup_close_ int cfd = -EBADF, fd = -EBADF;
	char line[64];
	int r;

	cfd = open_claims(root, true);
	if (cfd < 0)
		return ts_err_errno(err, cfd, "create `%s/" CLAIMS "`", root);
	fd = openat(cfd, id, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return ts_err_errno(err, -errno, "claim `%s/" CLAIMS "/%s`", root, id);
	snprintf(line, sizeof(line), "%d %llu\n", (int)getpid(), ts_proc_start_time(getpid()));
	r = ts_write_all(fd, line, strlen(line));
	if (r < 0) {
		unlinkat(cfd, id, 0);
		return ts_err_errno(err, r, "claim `%s/" CLAIMS "/%s`", root, id);
	}
	return 0;
}

void ts_leftovers_release(const char *root, const char *id)
{
	_cleanup_close_ int cfd = open_claims(root, false);

	if (cfd >= 0)
		unlinkat(cfd, id, 0);
}

/* What the run of id made: the fresh workspace goes with the whole directory; next to a
 * workspace of the caller's, only the upper layer and its work directory. */
static void remove_sandbox(int rfd, const char *id)
{
	_cleanup_close_ int dfd = openat(rfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char cg[8 + TS_ID_LEN];

	snprintf(cg, sizeof(cg), "ts-%s", id);
	ts_cgroup_remove(cg);
	if (dfd < 0)
		return;
	if (faccessat(dfd, "workspace", F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		ts_rm_rf_at(rfd, id);
		return;
	}
	ts_rm_rf_at(dfd, "upper");
	ts_rm_rf_at(dfd, "work");
	unlinkat(rfd, id, AT_REMOVEDIR);
}

int ts_leftovers_sweep(const char *root)
{
	_cleanup_close_ int rfd = -EBADF, cfd = -EBADF;
	struct dirent *de;
	DIR *d;
	int removed = 0;

	cfd = open_claims(root, false);
	if (cfd < 0)
		return 0;
	rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = rfd >= 0 ? fdopendir(TAKE_FD(cfd)) : NULL;
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		_cleanup_free_ char *line = NULL;
		unsigned long long start = 0;
		int pid = 0;

		if (!plain_id(de->d_name))
			continue;
		if (ts_read_file_at(dirfd(d), de->d_name, 64, &line, NULL) < 0 ||
		    sscanf(line, "%d %llu", &pid, &start) != 2 || pid <= 0 || start == 0)
			continue; /* being written, or not ours to judge */
		if (ts_proc_alive(pid, start))
			continue;
		remove_sandbox(rfd, de->d_name);
		unlinkat(dirfd(d), de->d_name, 0);
		removed++;
	}
	closedir(d);
	return removed;
}
