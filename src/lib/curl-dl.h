/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * libcurl, loaded with dlopen(3) on first use (dlib.h): linked, it maps some 35 libraries
 * (TLS, Kerberos, LDAP, SSH, HTTP/2, ...) into every run of the CLI, which costs a
 * `toren-sandbox exec` more than the exec itself (bench/RESULTS.md). The headers are
 * compiled against as usual; the functions are called through this table.
 */
#include <curl/curl.h>

#include "error.h"

#define TS_CURL_SONAME "libcurl.so.4"
#define TS_CURL_PACKAGE "libcurl4"

/* The libcurl functions the project calls, each named as curl's without `curl_`. */
struct ts_curl {
	void *dl;
	__typeof__(curl_global_init) *global_init;
	__typeof__(curl_easy_init) *easy_init;
	__typeof__(curl_easy_setopt) *easy_setopt;
	__typeof__(curl_easy_getinfo) *easy_getinfo;
	__typeof__(curl_easy_perform) *easy_perform;
	__typeof__(curl_easy_cleanup) *easy_cleanup;
	__typeof__(curl_easy_strerror) *easy_strerror;
	__typeof__(curl_easy_escape) *easy_escape;
	__typeof__(curl_easy_pause) *easy_pause;
	__typeof__(curl_free) *free;
	__typeof__(curl_slist_append) *slist_append;
	__typeof__(curl_slist_free_all) *slist_free_all;
	__typeof__(curl_multi_init) *multi_init;
	__typeof__(curl_multi_setopt) *multi_setopt;
	__typeof__(curl_multi_add_handle) *multi_add_handle;
	__typeof__(curl_multi_remove_handle) *multi_remove_handle;
	__typeof__(curl_multi_cleanup) *multi_cleanup;
	__typeof__(curl_multi_socket_action) *multi_socket_action;
	__typeof__(curl_multi_info_read) *multi_info_read;
	__typeof__(curl_multi_assign) *multi_assign;
	__typeof__(curl_share_init) *share_init;
	__typeof__(curl_share_setopt) *share_setopt;
	__typeof__(curl_share_cleanup) *share_cleanup;
	__typeof__(curl_mime_init) *mime_init;
	__typeof__(curl_mime_addpart) *mime_addpart;
	__typeof__(curl_mime_name) *mime_name;
	__typeof__(curl_mime_data) *mime_data;
	__typeof__(curl_mime_data_cb) *mime_data_cb;
	__typeof__(curl_mime_filename) *mime_filename;
	__typeof__(curl_mime_type) *mime_type;
	__typeof__(curl_mime_free) *mime_free;
	__typeof__(curl_url) *url;
	__typeof__(curl_url_set) *url_set;
	__typeof__(curl_url_get) *url_get;
	__typeof__(curl_url_cleanup) *url_cleanup;
};

/*
 * The process's libcurl, loaded and curl_global_init'ed on the first call from any thread,
 * the same table on every later one; NULL with -ENOPKG in err (naming the soname and the
 * package to install) when it cannot be loaded. Never unloaded.
 */
const struct ts_curl *ts_curl_load(struct ts_error *err);

/* Load soname into *C (no global init, no cache): ts_curl_load's work, apart for its test.
 * 0, or -ENOPKG with a message. */
int ts_curl_open(const char *soname, struct ts_curl *C, struct ts_error *err);

/*
 * curl_easy_setopt and curl_easy_getinfo through the table, keeping curl's compile-time
 * checks of the argument's type (curl/typecheck-gcc.h): its macro of the same name expands
 * as usual and ends in a call of `curl_easy_setopt`, which a local pointer of that name,
 * set from the table, shadows. No reference to libcurl's symbol is left. GCC reports the
 * checks only with -Wsystem-headers: tests/unit/check-curl-types.py builds with it.
 */
#define TS_CURL_NOSHADOW_                                                                          \
	_Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wshadow\"")
#define TS_CURL_SHADOW_END_ _Pragma("GCC diagnostic pop")
#define ts_curl_setopt(C, handle, opt, val)                                                        \
	__extension__({                                                                            \
		TS_CURL_NOSHADOW_                                                                  \
		CURLcode (*const curl_easy_setopt)(CURL *, CURLoption, ...) = (C)->easy_setopt;    \
		TS_CURL_SHADOW_END_                                                                \
		curl_easy_setopt(handle, opt, val);                                                \
	})
#define ts_curl_getinfo(C, handle, info, arg)                                                      \
	__extension__({                                                                            \
		TS_CURL_NOSHADOW_                                                                  \
		CURLcode (*const curl_easy_getinfo)(CURL *, CURLINFO, ...) = (C)->easy_getinfo;    \
		TS_CURL_SHADOW_END_                                                                \
		curl_easy_getinfo(handle, info, arg);                                              \
	})
