/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox stop ID...: end init (and with it every process); files stay. */
#include "cli.h"
#include "commands.h"
#include "sandbox.h"

#define TS_STOP_GRACE_MS 2000

static int stop(struct ts_store *st, struct ts_sandbox_rec *rec, struct ts_error *err)
{
	return ts_sandbox_stop(st, rec, TS_STOP_GRACE_MS, err);
}

int ts_subcmd_stop(int argc, char **argv)
{
	return ts_cli_each(argc, argv, "stop", stop);
}
