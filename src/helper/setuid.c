/* SPDX-License-Identifier: Apache-2.0 */
#include "setuid.h"

#include <errno.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "caps.h"

static int check_request(const struct ts_helper_ctx *ctx, uid_t ruid, gid_t rgid,
			 struct ts_error *err)
{
	if (ctx->cgroup.name)
		return ts_err(err, -EPERM, "setuid mode: --cgroup is not allowed");
	for (size_t i = 0; i < ctx->n_ops; i++)
		if (ctx->ops[i].map_uid >= 0)
			return ts_err(err, -EPERM, "setuid mode: --bind-owner is not allowed");
	if (ctx->newidmap)
		return 0; /* newuidmap/newgidmap check /etc/subuid and /etc/subgid themselves */
	if (ctx->n_uid_map != 1 || ctx->uid_map[0].outside != ruid || ctx->uid_map[0].count != 1)
		return ts_err(err, -EPERM,
			      "setuid mode: only your own uid (%u) may be mapped, as one id",
			      (unsigned)ruid);
	if (ctx->n_gid_map != 1 || ctx->gid_map[0].outside != rgid || ctx->gid_map[0].count != 1)
		return ts_err(err, -EPERM,
			      "setuid mode: only your own gid (%u) may be mapped, as one id",
			      (unsigned)rgid);
	return 0;
}

int ts_setuid_enter(const struct ts_helper_ctx *ctx, bool *active, struct ts_error *err)
{
	uid_t ruid = getuid(), euid = geteuid();
	gid_t rgid = getgid();
	cap_value_t keep = CAP_SYS_ADMIN;
	cap_t caps;
	int r;

	*active = false;
	if (ruid == euid && rgid == getegid())
		return 0;
	*active = true;
	if (euid != 0)
		return ts_err(err, -EPERM, "setuid to a user other than root is not supported");
	/* Become the caller, keeping the permitted set across the uid change only for as
	 * long as it takes to trim it to the one capability. */
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 || setresgid(rgid, rgid, rgid) < 0 ||
	    setresuid(ruid, ruid, ruid) < 0 || prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		return ts_err_errno(err, -errno, "setuid mode: drop to the caller's ids");
	caps = cap_init();
	if (!caps)
		return ts_err_errno(err, -errno, "setuid mode: capability state");
	/* permitted only: raised for the clone alone (ts_setuid_raise) */
	if (cap_set_flag(caps, CAP_PERMITTED, 1, &keep, CAP_SET) < 0 || cap_set_proc(caps) < 0) {
		r = ts_err_errno(err, -errno, "setuid mode: keep CAP_SYS_ADMIN only");
		cap_free(caps);
		return r;
	}
	cap_free(caps);
	/* Checked after the drop, so that even a refused request ran unprivileged. */
	return check_request(ctx, ruid, rgid, err);
}

int ts_setuid_raise(struct ts_error *err)
{
	cap_value_t admin = CAP_SYS_ADMIN;
	cap_t caps = cap_get_proc();
	int r = 0;

	if (!caps || cap_set_flag(caps, CAP_EFFECTIVE, 1, &admin, CAP_SET) < 0 ||
	    cap_set_proc(caps) < 0)
		r = ts_err_errno(err, -errno, "setuid mode: raise CAP_SYS_ADMIN for the clone");
	cap_free(caps);
	return r;
}

int ts_setuid_leave(struct ts_error *err)
{
	return ts_caps_clear(err);
}
