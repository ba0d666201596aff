/* SPDX-License-Identifier: Apache-2.0 */
#include "upper.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

/* chown what the walk just created, through its parent fd, never following a link */
static int own(int dfd, const char *name, bool chown_to_set, uid_t uid, gid_t gid)
{
	if (!chown_to_set)
		return 0;
	return fchownat(dfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

int ts_upper_mount_point(int upper_fd, const char *dst, bool dir, bool chown_to_set, uid_t uid,
			 gid_t gid, struct ts_error *err)
{
	_cleanup_close_ int cur = -EBADF;
	char buf[4096], *comp, *next, *save = NULL;
	int r;

	if (strlen(dst) >= sizeof(buf))
		return ts_err(err, -ENAMETOOLONG, "mount point `%s`: too long", dst);
	snprintf(buf, sizeof(buf), "%s", dst);
	cur = fcntl(upper_fd, F_DUPFD_CLOEXEC, 3);
	if (cur < 0)
		return ts_err_errno(err, -errno, "mount point `%s`", dst);
	for (comp = strtok_r(buf, "/", &save); comp; comp = next) {
		bool last;
		int fd;

		next = strtok_r(NULL, "/", &save);
		last = next == NULL;
		if (!strcmp(comp, ".") || !strcmp(comp, ".."))
			return ts_err(err, -EINVAL, "mount point `%s`: `%s` component", dst, comp);
		if (last && !dir) {
			fd = openat(cur, comp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				    0644);
			if (fd >= 0) {
				close(fd);
				r = own(cur, comp, chown_to_set, uid, gid);
				return r < 0 ? ts_err_errno(err, r, "chown mount point `%s`", dst)
					     : 0;
			}
			if (errno == EEXIST) {
				struct stat st;

				if (fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				    S_ISREG(st.st_mode))
					return 0;
				return ts_err(
					err, S_ISLNK(st.st_mode) ? -ELOOP : -EEXIST,
					"mount point `%s` in the upper layer is not a regular "
					"file (a symlink is never followed)",
					dst);
			}
			return ts_err_errno(err, -errno, "create mount point `%s`", dst);
		}
		fd = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT) {
			bool made = mkdirat(cur, comp, 0755) == 0;

			if (!made && errno != EEXIST)
				return ts_err_errno(err, -errno, "create mount point `%s`", dst);
			if (made && (r = own(cur, comp, chown_to_set, uid, gid)) < 0)
				return ts_err_errno(err, r, "chown mount point `%s`", dst);
			fd = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (fd < 0 && (errno == ELOOP || errno == ENOTDIR))
			return ts_err(
				err, -ELOOP,
				"mount point `%s`: `%s` in the upper layer is a symlink or not "
				"a directory; refusing to follow it",
				dst, comp);
		if (fd < 0)
			return ts_err_errno(err, -errno, "mount point `%s`", dst);
		close(cur);
		cur = fd;
	}
	return 0;
}
