/* SPDX-License-Identifier: Apache-2.0 */
/* PLACEHOLDER: replaced by its implementation. */
#include "tools-internal.h"
void ts_linetag(const char *line, size_t len, char out[TS_TOOL_TAG_LEN + 1])
{
	out[0] = 0;
}
void ts_content_hash(const void *data, size_t len, char out[33])
{
	out[0] = 0;
}
