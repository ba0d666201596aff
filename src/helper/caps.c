/* SPDX-License-Identifier: Apache-2.0 */
#include "caps.h"

#include <errno.h>
#include <sys/capability.h>
#include <sys/prctl.h>

#include "cleanup.h"

static const cap_value_t setid_caps[] = { CAP_SETUID, CAP_SETGID, CAP_SETPCAP, CAP_KILL };

static bool is_setid_cap(cap_value_t c)
{
	for (size_t i = 0; i < ELEMENTSOF(setid_caps); i++)
		if (setid_caps[i] == c)
			return true;
	return false;
}

int ts_caps_drop_bounding(bool keep_setid, struct ts_error *err)
{
	/* cap_max_bits() is the kernel's count, so capabilities newer than our headers are
	 * dropped too. */
	for (cap_value_t c = 0; c < (cap_value_t)cap_max_bits(); c++) {
		if (keep_setid && is_setid_cap(c))
			continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return ts_err_errno(err, -errno, "drop capability %d from the bounding set",
					    (int)c);
	}
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

int ts_caps_keep_setid(struct ts_error *err)
{
	cap_t caps = cap_init();
	int r = 0;

	if (!caps)
		return ts_err_errno(err, -errno, "allocate capability state");
	if (cap_set_flag(caps, CAP_PERMITTED, ELEMENTSOF(setid_caps), setid_caps, CAP_SET) < 0 ||
	    cap_set_flag(caps, CAP_EFFECTIVE, ELEMENTSOF(setid_caps), setid_caps, CAP_SET) < 0 ||
	    cap_set_flag(caps, CAP_INHERITABLE, ELEMENTSOF(setid_caps), setid_caps, CAP_SET) < 0)
		r = ts_err_errno(err, -errno, "build capability state");
	else if (cap_set_proc(caps) < 0)
		r = ts_err_errno(err, -errno,
				 "keep CAP_SETUID, CAP_SETGID, CAP_SETPCAP and CAP_KILL");
	cap_free(caps);
	for (size_t i = 0; r == 0 && i < ELEMENTSOF(setid_caps); i++)
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, setid_caps[i], 0, 0) < 0)
			r = ts_err_errno(err, -errno, "raise ambient capability %d",
					 (int)setid_caps[i]);
	return r;
}
