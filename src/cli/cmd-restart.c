/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox restart ID...: stop, then start around the same workspace. */
#include "cli.h"
#include "commands.h"
#include "sandbox.h"

#define TS_STOP_GRACE_MS 2000

static int restart(struct ts_store *st, struct ts_sandbox_rec *rec, struct ts_error *err)
{
	int r = ts_sandbox_stop(st, rec, TS_STOP_GRACE_MS, err);

	return r < 0 ? r : ts_sandbox_start(st, rec, err);
}

int ts_subcmd_restart(int argc, char **argv)
{
	return ts_cli_each(argc, argv, "restart", restart);
}
