/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The host side of egress, in the helper's parent: the program that carries the
 * sandbox's packets out (pasta, else slirp4netns) and the keeper that owns it.
 *
 * The helper stays the only code that builds namespaces: the egress program only joins
 * the child's user and network namespaces (by its pid, while the child waits for "go"
 * and is still dumpable) and makes the tap device there; the child itself then
 * configures that interface and the firewall (net.h) before it drops its capabilities.
 *
 * Lifetime: the keeper, a process of its own forked by the parent (it outlives a
 * --detach helper), starts the program with PR_SET_PDEATHSIG (it dies with the keeper)
 * and waits on init's pidfd; when init exits it kills the program and exits itself. So
 * the program lives exactly as long as the sandbox, one-shot or durable, and every start
 * of a durable sandbox starts a new one.
 */
#include <sys/types.h>

#include "error.h"
#include "helper.h"

/* Read the host's own addresses (this network namespace's, before the clone) into
 * ctx->net.host: the egress program would connect to them on the host. 0 or -errno. */
int ts_netproc_host_addrs(struct ts_helper_ctx *ctx, struct ts_error *err);

/*
 * Fork the keeper; it starts the egress program for the namespaces of child (whose pidfd
 * is pidfd) and reports when the program is ready (its tap device exists) or why it
 * failed. Returns 0 once ready (ctx->net.keeper set), or -errno with err naming the
 * program and what it said.
 */
int ts_netproc_start(struct ts_helper_ctx *ctx, pid_t child, int pidfd, struct ts_error *err);

/* After init has exited (not --detach): wait up to 5 s for the keeper, which kills the
 * program and exits. */
void ts_netproc_wait(struct ts_helper_ctx *ctx);
