/* SPDX-License-Identifier: Apache-2.0 */
#include "paths.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"
#include "idmap-plan.h"
#include "trustpath.h"
#include "util.h"

int ts_path_join(char *buf, size_t len, const char *a, const char *b)
{
	if ((size_t)snprintf(buf, len, "%s/%s", a, b) >= len)
		return -ENAMETOOLONG;
	return 0;
}

static int find_binary(char *buf, size_t len, const char *self_dir, const char *name,
		       struct ts_error *err)
{
	if (ts_path_join(buf, len, self_dir, name) == 0 && access(buf, X_OK) == 0)
		return 0;
	if (ts_path_join(buf, len, TS_LIBEXECDIR, name) == 0 && access(buf, X_OK) == 0)
		return 0;
	return ts_err(err, -ENOENT, "`%s` not found next to `%s` nor in `%s`", name, self_dir,
		      TS_LIBEXECDIR);
}

/*
 * The state root holds what every sandbox is built from (image layers, the compiled
 * seccomp filters) and each sandbox's control socket: it must be ours alone. Someone
 * else's directory there (a TOREN_SANDBOX_ROOT in /tmp created by another user) would
 * hand them our sandboxes. As the host's root, the path to it must not be redirectable
 * by anyone else either (trustpath.h); elsewhere (an unprivileged user, `unshare -r`)
 * the directory itself must be ours and closed to others.
 */
static int check_state_root(const char *root, struct ts_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	struct stat st;

	if (ts_idmap_host_root()) {
		fd = ts_trustpath_open(root, 0, err);
		if (fd < 0)
			return ts_err_prefix(err, fd, "state root");
	} else {
		fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return ts_err_errno(err, -errno, "state root `%s`", root);
	}
	if (fstat(fd, &st) < 0)
		return ts_err_errno(err, -errno, "state root `%s`", root);
	if (st.st_uid != geteuid())
		return ts_err(err, -EPERM,
			      "state root `%s` belongs to uid %u, not to us (uid %u): another "
			      "user's directory would decide what our sandboxes run; use one "
			      "of our own (TOREN_SANDBOX_ROOT)",
			      root, (unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & 022)
		return ts_err(err, -EPERM,
			      "state root `%s` is writable by others (mode %04o): `chmod 700` it",
			      root, (unsigned)(st.st_mode & 07777));
	return 0;
}

/* The policy files decide the seccomp filter and the mounts: as the host's root, only
 * root may be able to change them or the path to them. */
static int check_policy_dir(const char *dir, struct ts_error *err)
{
	char sub[4200];

	if (!ts_idmap_host_root())
		return 0;
	ts_path_join(sub, sizeof(sub), dir, "seccomp");
	for (int i = 0; i < 2; i++) {
		int fd = ts_trustpath_open(i ? sub : dir, 0, err);

		if (fd == -ENOENT) {
			/* no policy files: whatever needs one says what is missing */
			ts_err_clear(err);
			return 0;
		}
		if (fd < 0)
			return ts_err_prefix(err, fd, "policy directory");
		close(fd);
	}
	return 0;
}

int ts_paths_init(struct ts_paths *p, struct ts_error *err)
{
	char self_dir[4096], probe[4200];
	const char *env = getenv("TOREN_SANDBOX_ROOT");
	int r;

	memset(p, 0, sizeof(*p));
	if (env && env[0]) {
		if (env[0] != '/')
			return ts_err(err, -EINVAL, "TOREN_SANDBOX_ROOT `%s` is not absolute", env);
		if ((size_t)snprintf(p->root, sizeof(p->root), "%s", env) >= sizeof(p->root))
			return ts_err(err, -ENAMETOOLONG, "TOREN_SANDBOX_ROOT too long");
	} else {
		const char *home = getenv("HOME");
		struct passwd *pw;

		if (!home || home[0] != '/') {
			pw = getpwuid(getuid());
			if (!pw)
				return ts_err(err, -ENOENT,
					      "no home directory: set TOREN_SANDBOX_ROOT");
			home = pw->pw_dir;
		}
		if ((size_t)snprintf(p->root, sizeof(p->root), "%s/.toren/sandboxes", home) >=
		    sizeof(p->root))
			return ts_err(err, -ENAMETOOLONG, "state root path too long");
	}
	r = ts_mkdir_p(AT_FDCWD, p->root, 0700);
	if (r < 0)
		return ts_err_errno(err, r, "create state root `%s`", p->root);
	r = check_state_root(p->root, err);
	if (r < 0)
		return r;

	r = ts_self_dir(self_dir, sizeof(self_dir));
	if (r < 0)
		return ts_err_errno(err, r, "find our own executable");
	if ((r = find_binary(p->helper, sizeof(p->helper), self_dir, "toren-sandbox-helper", err)) <
		    0 ||
	    (r = find_binary(p->init, sizeof(p->init), self_dir, "toren-sandbox-init", err)) < 0)
		return r;
	/* needed only by sandboxes with `sudo: true`, which fail to start without it */
	if (find_binary(p->sudo, sizeof(p->sudo), self_dir, "toren-sandbox-sudo", NULL) < 0)
		p->sudo[0] = '\0';
	/* needed only by sandboxes with names in `network.allow` */
	if (find_binary(p->proxy, sizeof(p->proxy), self_dir, "toren-sandbox-proxy", NULL) < 0)
		p->proxy[0] = '\0';
	/* TOREN_SANDBOX_POLICY_DIR wins; then, running from a build tree, the source tree's
	 * policy files (an edit is picked up without installing); else the data dir. */
	ts_path_join(probe, sizeof(probe), self_dir, "build.ninja");
	env = getenv("TOREN_SANDBOX_POLICY_DIR");
	if (env && env[0] == '/')
		snprintf(p->policy_dir, sizeof(p->policy_dir), "%s", env);
	else if (access(probe, F_OK) == 0)
		snprintf(p->policy_dir, sizeof(p->policy_dir), "%s", TS_SOURCE_POLICYDIR);
	else
		snprintf(p->policy_dir, sizeof(p->policy_dir), "%s", TS_DATADIR);
	return check_policy_dir(p->policy_dir, err);
}

int ts_id_new(char id[TS_ID_LEN + 1], struct ts_error *err)
{
	unsigned char raw[TS_ID_LEN / 2];

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return ts_err_errno(err, -errno, "getrandom");
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(id + 2 * i, 3, "%02x", raw[i]);
	return 0;
}
