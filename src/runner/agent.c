/* SPDX-License-Identifier: Apache-2.0 */
/* PLACEHOLDER: replaced by its implementation. */
#include <errno.h>
#include <stdlib.h>
#include "agent.h"
int ts_agent_default(struct ts_agent *a, struct ts_error *err)
{
	return ts_err(err, ENOSYS, "not yet");
}
int ts_agent_load(const char *path, struct ts_agent *a, struct ts_error *err)
{
	return ts_err(err, ENOSYS, "not yet");
}
char *ts_agent_to_json(const struct ts_agent *a)
{
	return NULL;
}
void ts_agent_free(struct ts_agent *a)
{
}
