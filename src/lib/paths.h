/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>

#include "error.h"

#define TS_ID_LEN 12 /* hex characters of a sandbox id */

/* Where the runtime's files live on the host. Filled by ts_paths_init. */
struct ts_paths {
	char root[2048];       /* $TOREN_SANDBOX_ROOT or ~/.toren/sandboxes */
	char helper[4096];     /* toren-sandbox-helper */
	char init[4096];       /* toren-sandbox-init */
	char sudo[4096];       /* toren-sandbox-sudo, the sandbox's sudo; "" when absent */
	char proxy[4096];      /* toren-sandbox-proxy, the name proxy; "" when absent */
	char policy_dir[4096]; /* default policy files (seccomp/default.json, default.yaml) */
};

/*
 * Resolve the state root (created 0700 if missing), and find the helper and init next to
 * the running executable (build tree) or in the libexec directory (installed), and the
 * policy directory (source tree when running from a build tree, data dir when installed).
 * 0 or -errno.
 */
int ts_paths_init(struct ts_paths *p, struct ts_error *err);

/* A new random sandbox id: TS_ID_LEN lowercase hex characters + NUL. */
int ts_id_new(char id[TS_ID_LEN + 1], struct ts_error *err);

/* Write "%s/%s" into buf; -ENAMETOOLONG if it does not fit. */
int ts_path_join(char *buf, size_t len, const char *a, const char *b);
