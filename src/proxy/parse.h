/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the name proxy reads from the sandbox, parsed without side effects (the unit
 * tests and the fuzz corpus link this file alone): the request head of a connection and
 * the TLS ClientHello that follows a CONNECT.
 */
#include <stdbool.h>
#include <stddef.h>

#include "hostpat.h"

/* A request head is at most this long, its terminating empty line included. */
#define TS_PROXY_HEAD_MAX 16384
/* The handshake message of a ClientHello is at most this long (over its records). */
#define TS_PROXY_HELLO_MAX 16384

enum ts_proxy_req_kind {
	TS_PROXY_REQ_CONNECT,  /* CONNECT host:port HTTP/1.x */
	TS_PROXY_REQ_ABSOLUTE, /* METHOD http://host[:port]/... HTTP/1.x (plain HTTP) */
};

struct ts_proxy_req {
	enum ts_proxy_req_kind kind;
	char host[TS_HOSTNAME_MAX + 1]; /* normalised (hostpat.h) */
	unsigned port;
};

/*
 * The length of the head at the start of buf (through its "\r\n\r\n"), 0 while it is
 * incomplete, -E2BIG when none ends within TS_PROXY_HEAD_MAX bytes.
 */
long ts_proxy_head_len(const char *buf, size_t len);

/*
 * Parse the request line of a complete head. 0, or -EINVAL with why (one line for a 400
 * or 403 answer): not HTTP/1.x, not a proxy request (origin-form), a target that is no
 * host name (an address literal is refused: the list has names only), a bad port.
 */
int ts_proxy_parse_request(const char *head, size_t len, struct ts_proxy_req *req, char *why,
			   size_t why_len);

struct ts_tls_hello {
	bool has_sni; /* a server_name extension with a host_name */
	bool ech;     /* an encrypted_client_hello extension (the real name is hidden) */
	char sni[256];
	size_t sni_len; /* bytes of sni, not NUL-terminated on the wire; sni is */
};

/* Whether the first byte a client sent after CONNECT starts a TLS handshake record. */
bool ts_proxy_is_tls(const unsigned char *buf, size_t len);

/*
 * Parse the ClientHello at the start of buf (TLS records of type handshake; the message
 * may span several). 0 with out filled, -EAGAIN when more bytes are needed, -EINVAL when
 * it is malformed or not a ClientHello, -E2BIG past TS_PROXY_HELLO_MAX.
 */
int ts_proxy_parse_hello(const unsigned char *buf, size_t len, struct ts_tls_hello *out);
