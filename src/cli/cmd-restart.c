/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox restart ID...: stop, then start around the same workspace. */
#include "cli.h"
#include "commands.h"

static int restart(struct ts_sb *sb, struct ts_error *err)
{
	int r = ts_sb_stop(sb, err);

	return r < 0 ? r : ts_sb_start(sb, err);
}

int ts_subcmd_restart(int argc, char **argv)
{
	return ts_cli_each(argc, argv, "restart", restart);
}
