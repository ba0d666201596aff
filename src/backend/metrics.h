/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The numbers of E2B's SandboxMetric for a local sandbox, measured from the host: CPU
 * time and memory from the sandbox's own cgroup (`toren-sandbox/ts-<id>`, made when it
 * has limits), else summed over its processes in /proc (init and every descendant); the
 * disk used by its upper layer and workspace. Nothing here asks the sandbox: a paused
 * or busy sandbox is measured the same, and what runs inside cannot forge the numbers.
 */
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

#define TS_METRICS_MAX_PROCS 4096   /* processes summed per sandbox */
#define TS_METRICS_MAX_FILES 200000 /* directory entries walked for diskUsed */

struct ts_metric {
	long long ts_ms; /* CLOCK_REALTIME ms of the sample */
	unsigned cpu_count;
	double cpu_pct; /* of cpu_count CPUs, since the previous sample */
	uint64_t mem_used, mem_total, mem_cache, disk_used, disk_total; /* bytes */
	uint64_t cpu_ns; /* CPU time used so far (the next sample's percent counts from it) */
};

/*
 * Measure the sandbox `id` whose init is host pid init_pid; dirs (NULL-terminated, may be
 * NULL) are the host directories whose disk use counts, the first also giving diskTotal.
 * prev (may be NULL: cpu_pct 0) is the previous sample. 0, or -ESRCH when init is gone.
 */
int ts_metrics_measure(pid_t init_pid, const char *id, const char *const *dirs,
		       const struct ts_metric *prev, long long now_ms, struct ts_metric *out,
		       struct ts_error *err);

/* This host's online CPUs and memory (bytes): what a sandbox without limits may use. */
unsigned ts_metrics_host_cpus(void);
uint64_t ts_metrics_host_memory(void);
