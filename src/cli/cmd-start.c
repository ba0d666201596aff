/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox start ID...: rebuild stopped sandboxes around their workspace. */
#include "cli.h"
#include "commands.h"

int ts_subcmd_start(int argc, char **argv)
{
	return ts_cli_each(argc, argv, "start", ts_sb_start);
}
