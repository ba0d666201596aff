/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* An agent configuration given as text (serve's POST /v1/runs, a run's recorded
 * configuration) rather than as a file: parsed by ts_agent_load (agent.h). */
#include <stddef.h>

#include "agent.h"
#include "error.h"

#define TS_AGENT_TEXT_MAX (1U << 20) /* bytes of a configuration given as text */

/*
 * Parse text (YAML, or JSON, which is YAML too) of len bytes into *a, as ts_agent_load
 * parses a file. name is what messages call it ("`agent_yaml`:4: unknown key ..."); a->path
 * is NULL. The text is written to a private temporary file (0600 in a 0700 directory of
 * $TMPDIR, else /tmp) that is gone when this returns, so a relative path in it (policy,
 * outbox) names nothing that lasts: give absolute ones. 0; -EINVAL (a NUL byte, or as
 * ts_agent_load), -E2BIG past TS_AGENT_TEXT_MAX, or the -errno of the temporary file.
 */
int ts_agent_load_text(const char *text, size_t len, const char *name, struct ts_agent *a,
		       struct ts_error *err);
