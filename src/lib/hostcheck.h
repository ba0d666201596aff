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

/* Egress programs, in the order they are preferred. */
enum ts_net_backend {
	TS_NET_BACKEND_NONE,
	TS_NET_BACKEND_PASTA,
	TS_NET_BACKEND_SLIRP4NETNS,
};

/*
 * Which program `network: true` uses: pasta, else slirp4netns, looked up in /usr/bin,
 * /usr/sbin, /bin, /usr/local/bin (never $PATH: the helper executes it for every
 * sandbox). $TOREN_SANDBOX_NETWORK_BACKEND (`pasta`, `slirp4netns`) asks for one of
 * them. Fills path (absolute) and returns the backend, or TS_NET_BACKEND_NONE.
 */
enum ts_net_backend ts_hostcheck_net_backend(char *path, size_t len);

/* The backend's program name ("pasta", "slirp4netns", "none"). */
const char *ts_hostcheck_net_backend_name(enum ts_net_backend b);

/*
 * Can this process open /dev/net/tun, as the egress program must (it runs as us)?
 * 0, or -errno with err saying what is wrong and the fix (Debian's mode 0666, a udev
 * rule).
 */
int ts_hostcheck_tun(struct ts_error *err);
