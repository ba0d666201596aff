/* SPDX-License-Identifier: Apache-2.0 */
#include "strv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int grow(struct ts_strv *sv)
{
	char **v;
	size_t cap;

	if (sv->n + 2 <= sv->cap)
		return 0;
	cap = sv->cap ? sv->cap * 2 : 32;
	v = realloc(sv->v, cap * sizeof(char *));
	if (!v)
		return -ENOMEM;
	sv->v = v;
	sv->cap = cap;
	return 0;
}

int ts_strv_push(struct ts_strv *sv, const char *s)
{
	char *c;

	if (grow(sv) < 0 || !(c = strdup(s)))
		return -ENOMEM;
	sv->v[sv->n++] = c;
	sv->v[sv->n] = NULL;
	return 0;
}

int ts_strv_pushf(struct ts_strv *sv, const char *fmt, ...)
{
	va_list ap;
	char *c;
	int r;

	if (grow(sv) < 0)
		return -ENOMEM;
	va_start(ap, fmt);
	r = vasprintf(&c, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	sv->v[sv->n++] = c;
	sv->v[sv->n] = NULL;
	return 0;
}

void ts_strv_clear(struct ts_strv *sv)
{
	for (size_t i = 0; i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
	sv->v = NULL;
	sv->n = sv->cap = 0;
}

int ts_shell_quote(const char *s, char *buf, size_t len)
{
	size_t o = 0;
	bool plain = *s != '\0';

	for (const char *p = s; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%_+=:,./-",
			    *p))
			plain = false;
	if (plain) {
		if (strlen(s) >= len)
			return -ENAMETOOLONG;
		memcpy(buf, s, strlen(s) + 1);
		return 0;
	}
	if (o + 1 >= len)
		return -ENAMETOOLONG;
	buf[o++] = '\'';
	for (const char *p = s; *p; p++) {
		if (*p == '\'') {
			if (o + 4 >= len)
				return -ENAMETOOLONG;
			memcpy(buf + o, "'\\''", 4);
			o += 4;
		} else {
			if (o + 1 >= len)
				return -ENAMETOOLONG;
			buf[o++] = *p;
		}
	}
	if (o + 2 >= len)
		return -ENAMETOOLONG;
	buf[o++] = '\'';
	buf[o] = '\0';
	return 0;
}
