/* SPDX-License-Identifier: Apache-2.0 */
#include "curl-dl.h"

#include <errno.h>
#include <pthread.h>

#include "cleanup.h"
#include "dlib.h"

#define SYM(field)                                                                                 \
	{                                                                                          \
		"curl_" #field, (void **)&C->field                                                 \
	}

int ts_curl_open(const char *soname, struct ts_curl *C, struct ts_error *err)
{
	const struct ts_dlsym syms[] = {
		SYM(global_init),      SYM(easy_init),
		SYM(easy_setopt),      SYM(easy_getinfo),
		SYM(easy_perform),     SYM(easy_cleanup),
		SYM(easy_strerror),    SYM(easy_escape),
		SYM(easy_pause),       SYM(free),
		SYM(slist_append),     SYM(slist_free_all),
		SYM(multi_init),       SYM(multi_setopt),
		SYM(multi_add_handle), SYM(multi_remove_handle),
		SYM(multi_cleanup),    SYM(multi_socket_action),
		SYM(multi_info_read),  SYM(multi_assign),
		SYM(share_init),       SYM(share_setopt),
		SYM(share_cleanup),    SYM(mime_init),
		SYM(mime_addpart),     SYM(mime_name),
		SYM(mime_data),	       SYM(mime_data_cb),
		SYM(mime_filename),    SYM(mime_type),
		SYM(mime_free),	       SYM(url),
		SYM(url_set),	       SYM(url_get),
		SYM(url_cleanup),
	};

	C->dl = ts_dlib_open(soname, TS_CURL_PACKAGE, syms, ELEMENTSOF(syms), err);
	return C->dl ? 0 : -ENOPKG;
}

/*
 * The one table of the process. A global, against the house rule, because what it caches
 * is process-global: the library is mapped once per process, and curl_global_init must run
 * once before any other curl call and not concurrently with one (serve's pulls run on
 * threads). Written only inside pthread_once, read-only after.
 */
static struct {
	pthread_once_t once;
	struct ts_curl table;
	struct ts_error err;
	int r;
} loaded = { .once = PTHREAD_ONCE_INIT };

static void load_once(void)
{
	CURLcode c;

	loaded.r = ts_curl_open(TS_CURL_SONAME, &loaded.table, &loaded.err);
	if (loaded.r < 0)
		return;
	c = loaded.table.global_init(CURL_GLOBAL_DEFAULT);
	if (c != CURLE_OK)
		loaded.r = ts_err(&loaded.err, -EIO, "curl_global_init: %s",
				  loaded.table.easy_strerror(c));
}

const struct ts_curl *ts_curl_load(struct ts_error *err)
{
	pthread_once(&loaded.once, load_once);
	if (loaded.r < 0) {
		if (err)
			*err = loaded.err;
		return NULL;
	}
	return &loaded.table;
}
