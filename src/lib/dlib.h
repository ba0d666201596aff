/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * An optional shared library, loaded with dlopen(3) on first use and its functions
 * resolved by name into typed slots (curl-dl.h, src/server/mhd-dl.h): a command that never
 * uses it never maps it, nor the dozens of libraries it needs, whose loading and
 * constructors are a large part of a short command's run time.
 */
#include <stddef.h>

#include "error.h"

struct ts_dlsym {
	const char *name;
	void **slot;
};

/*
 * dlopen soname (RTLD_NOW | RTLD_LOCAL) and fill every slot of syms. The handle, or NULL
 * with -ENOPKG in err naming the soname, dlerror() and the Debian package to install.
 */
void *ts_dlib_open(const char *soname, const char *package, const struct ts_dlsym *syms, size_t n,
		   struct ts_error *err);
