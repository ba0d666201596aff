/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/*
 * What the host gives us, checked without privileges and without creating namespaces
 * (only the helper does that). `doctor` prints every check; `run` calls the preflight
 * and fails fast with the same message and fix.
 */

enum ts_check_level {
	TS_CHECK_OK,
	TS_CHECK_INFO,
	TS_CHECK_WARN,
	TS_CHECK_FAIL
};

struct ts_check {
	const char *name;
	enum ts_check_level level;
	char detail[512];
	char fix[512];
};

#define TS_MAX_CHECKS 24

/* Run every static host check. Returns the number of checks written to out. */
size_t ts_hostcheck_all(struct ts_check *out, size_t max);

/* The checks a sandbox cannot start without; -EPERM with message and fix on failure. */
int ts_hostcheck_preflight(struct ts_error *err);

/*
 * Can we put limits for `controller` ("memory", "pids", "cpu") into a cgroup of our own?
 * True when a writable v1 hierarchy for it, or a v2 cgroup of ours with the controller
 * enabled, exists. why (if not NULL) says what was found.
 */
bool ts_cgroup_delegated(const char *controller, char *why, size_t len);

/*
 * Remove the cgroups the helper made for a sandbox (`toren-sandbox/<name>` under our own
 * cgroup in each hierarchy), once its last process is gone: a detached sandbox's helper
 * is not there to do it, and a killed helper could not. Best effort; absent is fine.
 */
void ts_cgroup_remove(const char *name);
