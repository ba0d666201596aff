/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Image references as docker and skopeo read them: [REGISTRY/]PATH[:TAG][@sha256:HEX].
 * The first component is a registry when it has a `.` or a `:` or is `localhost`; else the
 * registry is Docker Hub, whose one-component names live under `library/`. No tag and no
 * digest: `latest`.
 */
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

struct ts_oci_ref {
	char registry[256]; /* as named (`docker.io` for Docker Hub), host[:port] */
	char api_host[256]; /* where the distribution API is: registry-1.docker.io for Hub */
	char path[256];	    /* library/node */
	char tag[129];	    /* "" when only a digest is given */
	char digest[72];    /* sha256:<64 hex> or "" */
	bool loopback;	    /* localhost, 127.0.0.0/8 or [::1]: plain http, as docker does */
};

/* Parse s. -EINVAL with err saying what is wrong. */
int ts_oci_ref_parse(const char *s, struct ts_oci_ref *ref, struct ts_error *err);

/* Does s look like a registry reference rather than a local name or a path? True when it
 * has a tag, a digest or a `/`; the caller decides between the store and a pull. */
bool ts_oci_ref_looks_remote(const char *s);

/* Is host[:port] (a registry, or a URL's authority) localhost, 127.0.0.0/8 or [::1]? */
bool ts_oci_host_loopback(const char *hostport);

/* "registry/path:tag@digest" for messages and the store's `source`. */
void ts_oci_ref_format(const struct ts_oci_ref *ref, char *buf, size_t len);
