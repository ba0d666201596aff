/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <sys/types.h>

#include "error.h"

/* The namespaces every sandbox gets at clone time. The cgroup namespace is entered later,
 * by the child, once the parent has moved it into its cgroups (its root is then the
 * sandbox's own cgroup). */
#define TS_NS_CLONE_FLAGS                                                                          \
	(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC)

/*
 * fork() into new namespaces: returns 0 in the child, the child's pid in the parent
 * (with *pidfd set, CLONE_PIDFD), or -errno. The child is PID 1 of its pid namespace.
 */
pid_t ts_ns_clone(int *pidfd, struct ts_error *err);

/* As ts_ns_clone, into a new user namespace only (--copy-tree, copytree.h). */
pid_t ts_ns_clone_user(int *pidfd, struct ts_error *err);

/* In the child: enter a new cgroup namespace rooted at the current cgroup. */
int ts_ns_enter_cgroup(struct ts_error *err);
