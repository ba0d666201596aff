/* SPDX-License-Identifier: Apache-2.0 */
#include "mhd-dl.h"

#include <errno.h>
#include <pthread.h>

#include "cleanup.h"
#include "dlib.h"

#define SYM(field)                                                                                 \
	{                                                                                          \
		"MHD_" #field, (void **)&M->field                                                  \
	}

int ts_mhd_open(const char *soname, struct ts_mhd *M, struct ts_error *err)
{
	const struct ts_dlsym syms[] = {
		SYM(start_daemon),
		SYM(stop_daemon),
		SYM(run),
		SYM(get_timeout),
		SYM(get_daemon_info),
		SYM(get_connection_info),
		SYM(suspend_connection),
		SYM(resume_connection),
		SYM(lookup_connection_value),
		SYM(get_connection_values),
		SYM(create_response_from_buffer),
		SYM(create_response_from_buffer_with_free_callback),
		SYM(create_response_from_callback),
		SYM(add_response_header),
		SYM(queue_response),
		SYM(destroy_response),
		SYM(create_post_processor),
		SYM(post_process),
		SYM(destroy_post_processor),
	};

	M->dl = ts_dlib_open(soname, TS_MHD_PACKAGE, syms, ELEMENTSOF(syms), err);
	return M->dl ? 0 : -ENOPKG;
}

/*
 * The one table of the process. A global, against the house rule, because what it caches
 * is process-global (the library is mapped once per process) and every listener shares it.
 * Written only inside pthread_once, read-only after.
 */
static struct {
	pthread_once_t once;
	struct ts_mhd table;
	struct ts_error err;
	int r;
} loaded = { .once = PTHREAD_ONCE_INIT };

static void load_once(void)
{
	loaded.r = ts_mhd_open(TS_MHD_SONAME, &loaded.table, &loaded.err);
}

const struct ts_mhd *ts_mhd_load(struct ts_error *err)
{
	pthread_once(&loaded.once, load_once);
	if (loaded.r < 0) {
		if (err)
			*err = loaded.err;
		return NULL;
	}
	return &loaded.table;
}
