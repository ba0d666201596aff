/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcurl and libmicrohttpd loaded with dlopen (src/lib/curl-dl.h, src/server/mhd-dl.h):
 * a library that is not there, or lacks a function, is a typed error naming what to
 * install, never a crash; the real ones load, once per process whatever the threads, and
 * work through their tables.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "curl-dl.h"
#include "dlib.h"
#include "mhd-dl.h"
#include "tap.h"

#define THREADS 8

static void *load_curl(void *arg)
{
	return (void *)ts_curl_load(NULL);
}

int main(void)
{
	struct ts_error err = { 0 };
	struct ts_curl C;
	struct ts_mhd M;
	const struct ts_curl *c1, *c2;
	const struct ts_mhd *m1;
	pthread_t th[THREADS];
	void *got[THREADS];
	bool same = true;
	void *nosym = NULL;
	void *dl;
	CURL *h;
	char *esc;

	plan(13);
	ok(ts_curl_open("libcurl-no-such.so.4", &C, &err) == -ENOPKG && err.code == ENOPKG,
	   "a missing libcurl: -ENOPKG (%s)", err.msg);
	ok(strstr(err.msg, "libcurl-no-such.so.4") &&
		   strstr(err.msg, "install the libcurl4 package"),
	   "the message names the soname and the package to install");
	ts_err_clear(&err);
	ok(ts_mhd_open("libmicrohttpd-no-such.so.12", &M, &err) == -ENOPKG && err.code == ENOPKG &&
		   strstr(err.msg, "libmicrohttpd-no-such.so.12") &&
		   strstr(err.msg, "libmicrohttpd12"),
	   "a missing libmicrohttpd: -ENOPKG naming soname and package (%s)", err.msg);
	ts_err_clear(&err);
	dl = ts_dlib_open("libc.so.6", "libc6",
			  &(const struct ts_dlsym){ "ts_no_such_function", &nosym }, 1, &err);
	ok(!dl && err.code == ENOPKG && strstr(err.msg, "ts_no_such_function"),
	   "a library without a function we need: -ENOPKG naming it (%s)", err.msg);

	ts_err_clear(&err);
	c1 = ts_curl_load(&err);
	ok(c1 && c1->dl && c1->easy_setopt && c1->url_cleanup, "libcurl loads (%s)",
	   c1 ? "" : err.msg);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, load_curl, NULL);
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], &got[i]);
		same = same && got[i] == c1;
	}
	c2 = ts_curl_load(NULL);
	ok(same && c2 == c1, "every thread and every later call gets the same table");
	if (!c1) {
		skip(3, "libcurl did not load");
	} else {
		h = c1->easy_init();
		ok(h && ts_curl_setopt(c1, h, CURLOPT_NOSIGNAL, 1L) == CURLE_OK,
		   "a handle, and an option set through the table");
		esc = h ? c1->easy_escape(h, "a b/c", 0) : NULL;
		ok(esc && !strcmp(esc, "a%20b%2Fc"), "curl_easy_escape through the table (%s)",
		   esc ? esc : "NULL");
		c1->free(esc);
		ok(ts_curl_setopt(c1, h, CURLOPT_URL, "http://127.0.0.1:1/") == CURLE_OK &&
			   ts_curl_setopt(c1, h, CURLOPT_CONNECTTIMEOUT_MS, 2000L) == CURLE_OK &&
			   c1->easy_perform(h) == CURLE_COULDNT_CONNECT,
		   "a transfer runs (refused on a closed port)");
		c1->easy_cleanup(h);
	}

	ts_err_clear(&err);
	m1 = ts_mhd_load(&err);
	ok(m1 && m1->start_daemon && m1->destroy_post_processor, "libmicrohttpd loads (%s)",
	   m1 ? "" : err.msg);
	ok(m1 && ts_mhd_load(NULL) == m1, "the same table on a later call");
	if (!m1) {
		skip(2, "libmicrohttpd did not load");
	} else {
		struct MHD_Response *r =
			m1->create_response_from_buffer(2, (void *)"{}", MHD_RESPMEM_PERSISTENT);

		ok(r != NULL, "a response made through the table");
		ok(r && m1->add_response_header(r, "X-A", "b") == MHD_YES,
		   "a header added through the table");
		if (r)
			m1->destroy_response(r);
	}
	return done();
}
