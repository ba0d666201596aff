/* SPDX-License-Identifier: Apache-2.0 */
/* PLACEHOLDER: replaced by its implementation. */
#include <stdio.h>
#include "commands.h"
int ts_subcmd_mcp(int argc, char **argv)
{
	fputs("toren-sandbox mcp: not yet\n", stderr);
	return 2;
}
