/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * An agent's configuration: the YAML file of toren-sandbox.yaml(5), parsed with libyaml.
 *
 *   name: builder
 *   sandbox: true            # or false, or a mapping:
 *   # sandbox:
 *   #   image: host          # an image the backend knows (local image, E2B template)
 *   #   backend: local       # local | e2b (default: $TOREN_SANDBOX, else auto)
 *   #   network: false
 *   #   approval: always     # always | never, or { bash: always, write: never }
 *   #   env: [MY_APP_DB_URL] # the host variables the sandbox may see, by name
 *   #   tools: 2             # tool-set version (1: bash, read_file, write_file, edit_file)
 *   #   protected: ["*.key"] # more basename patterns that no tool may write
 *   #   policy: policy.yaml  # a sandbox policy (relative to this file)
 *   #   timeout: 30m         # the sandbox's idle timeout
 *   #   channel:             # where send_file delivers (one of them)
 *   #     webhook: http://127.0.0.1:8080/hook
 *   #     outbox: ./outbox
 *
 * Unknown keys and bad values are errors naming the file, line and key
 * ("`agent.yaml`:4: unknown key `imgae` in `sandbox`").
 */
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

enum ts_approval {
	TS_APPROVAL_ALWAYS = 0, /* every call waits for the approver (bash's default) */
	TS_APPROVAL_NEVER,	/* runs without asking (the default for writes) */
};

struct ts_agent {
	char *path; /* the file it was read from, or NULL for the built-in default */
	char *name;
	bool sandbox;  /* false: `sandbox: false` (no sandbox: the runner refuses) */
	char *image;   /* NULL: the backend's default */
	char *backend; /* NULL: the default choice (ts_backend_open(NULL)) */
	bool network;  /* stored; egress arrives with the network issue */
	enum ts_approval approve_bash, approve_write;
	char **env; /* variable names, NULL-terminated (never NULL after load) */
	size_t n_env;
	unsigned tools;		   /* 1 or 2 */
	char **protected_patterns; /* NULL-terminated; added to the built-in ones */
	size_t n_protected;
	char *policy;	      /* absolute path or NULL */
	long long timeout_ms; /* < 0: the backend's default */
	char *webhook_url;    /* send_file's channel, or NULL */
	char *outbox_dir;     /* absolute path or NULL */
};

/* The configuration of `sandbox: true` and nothing else (name "agent"). */
int ts_agent_default(struct ts_agent *a, struct ts_error *err);
/* Parse path into *a (zeroed first). 0, or -EINVAL with err naming file, line and key, or
 * the -errno of reading it. *a is empty on error. */
int ts_agent_load(const char *path, struct ts_agent *a, struct ts_error *err);
/* The configuration as JSON text (malloc'd; what a run records), or NULL on ENOMEM. */
char *ts_agent_to_json(const struct ts_agent *a);
void ts_agent_free(struct ts_agent *a);
static inline void ts_agent_freep(struct ts_agent *a)
{
	ts_agent_free(a);
}
