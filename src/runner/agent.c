/* SPDX-License-Identifier: Apache-2.0 */
/* PLACEHOLDER: replaced by its implementation. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "agent.h"
int ts_agent_default(struct ts_agent *a, struct ts_error *err)
{
	*a = (struct ts_agent){ .name = strdup("agent"),
				.sandbox = true,
				.tools = 2,
				.approve_write = TS_APPROVAL_NEVER,
				.timeout_ms = -1,
				.env = calloc(1, sizeof(char *)) };
	return 0;
}
int ts_agent_load(const char *path, struct ts_agent *a, struct ts_error *err)
{
	return ts_err(err, -ENOSYS, "not yet");
}
char *ts_agent_to_json(const struct ts_agent *a)
{
	return strdup("{}");
}
void ts_agent_free(struct ts_agent *a)
{
	free(a->name);
	free(a->env);
	*a = (struct ts_agent){ 0 };
}
