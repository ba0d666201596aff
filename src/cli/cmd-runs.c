/* SPDX-License-Identifier: Apache-2.0 */
/* PLACEHOLDER: replaced by its implementation. */
#include <stdio.h>
#include "commands.h"
int ts_subcmd_runs(int argc, char **argv)
{
	fputs("toren-sandbox runs: not yet\n", stderr);
	return 2;
}
