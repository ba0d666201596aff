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

/*
 * The configuration a run recorded (ts_agent_to_json's object: path, name, sandbox, image,
 * backend, network, approval {bash, write}, env, tools, protected, policy, timeout_ms,
 * channel {webhook | outbox}) back into *a, so that a run resumed by another process (serve)
 * runs as it was begun. Absent members keep the defaults of ts_agent_default. 0, or -EINVAL
 * (err names the member) for a record that is not such an object, -ENOMEM.
 */
int ts_agent_from_record(const char *json, struct ts_agent *a, struct ts_error *err);
