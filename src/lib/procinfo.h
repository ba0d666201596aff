/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Host processes by pid and start time: a pid alone may have been reused by the time we
 * look again, the pair never is. Used for sandboxes' inits and owners, and for the
 * owners of leftovers a killed command could not remove (one-shot directories, cp's
 * temporary files).
 */
#include <stdbool.h>
#include <sys/types.h>

/* Does the process pid still run with that start time? (pid reuse safe). A zombie is not
 * running; start 0 means "any start time". */
bool ts_proc_alive(pid_t pid, unsigned long long start);

/* Start time (clock ticks since boot, /proc/PID/stat field 22) of pid, 0 if gone. */
unsigned long long ts_proc_start_time(pid_t pid);
