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

#include "config.h"
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

	r = ts_self_dir(self_dir, sizeof(self_dir));
	if (r < 0)
		return ts_err_errno(err, r, "find our own executable");
	if ((r = find_binary(p->helper, sizeof(p->helper), self_dir, "toren-sandbox-helper", err)) <
		    0 ||
	    (r = find_binary(p->init, sizeof(p->init), self_dir, "toren-sandbox-init", err)) < 0)
		return r;
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
	return 0;
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
