/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the helper tells its caller over --sync-fd (a SOCK_SEQPACKET socket): exactly one
 * report, once the sandbox is running (init has been executed) or has failed to start.
 * On success the report carries a pidfd of init as SCM_RIGHTS, so the caller can signal
 * and wait for the sandbox without pid-reuse races.
 */
#include <stdint.h>

#include "error.h"

#define TS_HELPER_PROTO_VERSION 1

struct ts_helper_report {
	uint32_t version; /* TS_HELPER_PROTO_VERSION */
	int32_t status;	  /* 0: running; otherwise a positive errno value */
	int32_t pid;	  /* init's pid in the caller's pid namespace, when running */
	uint32_t reserved;
	struct ts_error err; /* why it failed, when status != 0 */
};
