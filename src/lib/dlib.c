/* SPDX-License-Identifier: Apache-2.0 */
#include "dlib.h"

#include <dlfcn.h>
#include <errno.h>

void *ts_dlib_open(const char *soname, const char *package, const struct ts_dlsym *syms, size_t n,
		   struct ts_error *err)
{
	void *dl = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	if (!dl) {
		ts_err(err, -ENOPKG, "cannot load %s (%s); install the %s package", soname,
		       dlerror(), package);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		*syms[i].slot = dlsym(dl, syms[i].name);
		if (!*syms[i].slot) {
			ts_err(err, -ENOPKG, "%s has no `%s`; install a newer %s package", soname,
			       syms[i].name, package);
			dlclose(dl);
			return NULL;
		}
	}
	return dl;
}
