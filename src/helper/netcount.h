/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * `toren-sandbox-helper --net-counters PID START`: the connection counters of a running
 * sandbox's egress (nft.h), read from outside for `inspect`. nf_tables answers only a
 * process with CAP_NET_ADMIN over the sandbox's network namespace, and only from inside
 * it, so this joins the user and network namespaces of PID (the sandbox's init, started at
 * START: /proc/PID/stat's field 22, checked through a pidfd against pid reuse) — with the
 * caller's own ids and nothing more: in setuid mode every privilege is dropped first, so
 * the kernel's rule (CAP_SYS_ADMIN in the target user namespace, which the owner of that
 * namespace has) is the only permission. Nothing is executed there; the process stays in
 * the host's pid namespace, where nothing inside the sandbox can name it, and is not
 * dumpable.
 */
#include <sys/types.h>

#include "error.h"

/* Print `connections_ipv4 N` and `connections_ipv6 N` lines to stdout. 0 or -errno (-ENOENT:
 * the sandbox has no egress). */
int ts_netcount_print(const char *pid, const char *start, struct ts_error *err);
