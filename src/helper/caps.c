/* SPDX-License-Identifier: Apache-2.0 */
#include "caps.h"

#include <errno.h>
#include <sys/capability.h>
#include <sys/prctl.h>

int ts_caps_drop_bounding(struct ts_error *err)
{
	/* cap_max_bits() is the kernel's count, so capabilities newer than our headers are
	 * dropped too. */
	for (cap_value_t c = 0; c < (cap_value_t)cap_max_bits(); c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return ts_err_errno(err, -errno, "drop capability %d from the bounding set",
					    (int)c);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return ts_err_errno(err, -errno, "clear ambient capabilities");
	return 0;
}

int ts_caps_clear(struct ts_error *err)
{
	cap_t caps = cap_init(); /* all sets empty */
	int r = 0;

	if (!caps)
		return ts_err_errno(err, -errno, "allocate capability state");
	if (cap_set_proc(caps) < 0)
		r = ts_err_errno(err, -errno, "clear capabilities");
	cap_free(caps);
	if (r == 0 && prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL)
		r = ts_err_errno(err, -errno, "clear ambient capabilities");
	return r;
}
