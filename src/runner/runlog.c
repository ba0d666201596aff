/* SPDX-License-Identifier: Apache-2.0 */
/* PLACEHOLDER: replaced by its implementation. */
#include <errno.h>
#include "runlog.h"
int ts_runlog_open(const char *path, struct ts_runlog **ret, struct ts_error *err)
{
	return ts_err(err, ENOSYS, "not yet");
}
