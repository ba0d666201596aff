/* SPDX-License-Identifier: Apache-2.0 */
/* PLACEHOLDER: replaced by its implementation. */
#include "tools-internal.h"
static int todo(struct ts_toolbox *t, json_t *a, struct ts_tool_result *r, struct ts_error *e)
{
	return ts_tool_fail(r, "unimplemented", "not yet");
}
const struct ts_tool_def ts_tool_find = {
	"find", 2, false, "", "{\"type\":\"object\",\"properties\":{}}", todo
};
const struct ts_tool_def ts_tool_grep = {
	"grep", 2, false, "", "{\"type\":\"object\",\"properties\":{}}", todo
};
