/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* A growable NULL-terminated vector of owned strings (argv/envp building). */
struct ts_strv {
	char **v;
	size_t n, cap;
};

/* Append a copy of s. 0 or -ENOMEM. */
int ts_strv_push(struct ts_strv *sv, const char *s);

/* Append a formatted string. 0 or -ENOMEM. */
int ts_strv_pushf(struct ts_strv *sv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Free all strings and the vector; leaves sv empty. */
void ts_strv_clear(struct ts_strv *sv);
/* For `_cleanup_(ts_strv_freep) struct ts_strv sv = { 0 };`. */
static inline void ts_strv_freep(struct ts_strv *sv)
{
	ts_strv_clear(sv);
}

/* Quote s for a POSIX shell into buf (single quotes). 0 or -ENAMETOOLONG. */
int ts_shell_quote(const char *s, char *buf, size_t len);
