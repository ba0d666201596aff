/* SPDX-License-Identifier: Apache-2.0 */
/* PLACEHOLDER: replaced by its implementation. */
#include <errno.h>
#include "tools-internal.h"
int ts_ws_resolve(struct ts_toolbox *t, const char *rel, unsigned flags, char **abs, char **rel_out,
		  struct ts_tool_result *res, struct ts_error *err)
{
	return ts_tool_fail(res, "unimplemented", "not yet"), 1;
}
bool ts_ws_protected(const struct ts_toolbox *t, const char *rel)
{
	return true;
}
