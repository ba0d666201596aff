/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What E2B's Go side (envd) puts on the wire, for both ends of it here: serve speaking as
 * envd (src/server) and the e2b backend reading envd (src/backend).
 */
#include <stddef.h>
#include <stdint.h>

/* Standard base64 with padding, NUL-terminated (free()); *ret_len (may be NULL) its
 * length. NULL when out of memory. */
char *ts_base64_encode(const void *p, size_t n, size_t *ret_len);
/*
 * As Go's protojson decodes bytes: the URL-safe alphabet when the text has '-' or '_',
 * else the standard one; padded when its length is a multiple of 4, else unpadded.
 * 0 with *ret (free()) and *n, -EINVAL, -ENOMEM.
 */
int ts_base64_decode(const char *s, size_t len, uint8_t **ret, size_t *n);

/* Go's syscall.Signal.String() on Linux ("killed"), NULL for a number it has no name for. */
const char *ts_go_signal_name(int sig);
/* The signal of a Go process state's text ("signal: killed" -> SIGKILL), 0 when none. */
int ts_go_signal_parse(const char *status);
