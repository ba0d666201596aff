/* SPDX-License-Identifier: Apache-2.0 */
/* toren-sandbox stop ID...: end init (and with it every process); files stay. */
#include "cli.h"
#include "commands.h"

int ts_subcmd_stop(int argc, char **argv)
{
	return ts_cli_each(argc, argv, "stop", ts_sb_stop);
}
