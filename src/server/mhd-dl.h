/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * libmicrohttpd, loaded with dlopen(3) when serve first listens (src/lib/dlib.h): linked,
 * it and its TLS libraries are mapped into every run of the CLI, serve or not. The header
 * is compiled against as usual; the functions are called through this table.
 */
#include <microhttpd.h>

#include "error.h"

#define TS_MHD_SONAME "libmicrohttpd.so.12"
#define TS_MHD_PACKAGE "libmicrohttpd12"

/* The libmicrohttpd functions serve calls, each named as MHD's without `MHD_`. */
struct ts_mhd {
	void *dl;
	__typeof__(MHD_start_daemon) *start_daemon;
	__typeof__(MHD_stop_daemon) *stop_daemon;
	__typeof__(MHD_run) *run;
	__typeof__(MHD_get_timeout) *get_timeout;
	__typeof__(MHD_get_daemon_info) *get_daemon_info;
	__typeof__(MHD_get_connection_info) *get_connection_info;
	__typeof__(MHD_suspend_connection) *suspend_connection;
	__typeof__(MHD_resume_connection) *resume_connection;
	__typeof__(MHD_lookup_connection_value) *lookup_connection_value;
	__typeof__(MHD_get_connection_values) *get_connection_values;
	__typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
	__typeof__(MHD_create_response_from_buffer_with_free_callback)
		*create_response_from_buffer_with_free_callback;
	__typeof__(MHD_create_response_from_callback) *create_response_from_callback;
	__typeof__(MHD_add_response_header) *add_response_header;
	__typeof__(MHD_queue_response) *queue_response;
	__typeof__(MHD_destroy_response) *destroy_response;
	__typeof__(MHD_create_post_processor) *create_post_processor;
	__typeof__(MHD_post_process) *post_process;
	__typeof__(MHD_destroy_post_processor) *destroy_post_processor;
};

/* The process's libmicrohttpd, loaded on the first call, the same table on every later
 * one; NULL with -ENOPKG in err (naming the soname and the package) when it cannot be
 * loaded. Never unloaded. */
const struct ts_mhd *ts_mhd_load(struct ts_error *err);

/* Load soname into *M (no cache): ts_mhd_load's work, apart for its test. 0 or -ENOPKG. */
int ts_mhd_open(const char *soname, struct ts_mhd *M, struct ts_error *err);
