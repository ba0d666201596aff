/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A client of one repository of an OCI distribution registry (libcurl): its manifests and
 * blobs, with the authentication registries ask for — the bearer-token flow (anonymous,
 * or with the credentials of ~/.docker/config.json / $REGISTRY_AUTH_FILE) and Basic.
 *
 * A registry on a loopback address is spoken to over plain http (as docker does for
 * localhost registries), one the caller names insecure too; every other one over https
 * with the system's certificates. Credentials are sent only over https or to a loopback
 * address, never to a redirect's other host (blob downloads are often redirected to a
 * CDN); a token realm must be https (plain http only from a loopback registry to a
 * loopback realm), and a token is taken only in token68 characters. Bodies are bounded: manifests by TS_REG_MAX_MANIFEST, blobs by the caller.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "oci-ref.h"

#define TS_REG_MAX_MANIFEST (4u << 20)

struct ts_registry;

struct ts_reg_opts {
	bool insecure;	       /* plain http for a registry that is not on a loopback address */
	const char *auth_file; /* NULL: $REGISTRY_AUTH_FILE, $DOCKER_CONFIG/config.json, then
				* ~/.docker/config.json (the first that exists) */
	bool no_credentials;   /* send none, whatever the auth file has (serve's pulls) */
	/* bytes of the current blob so far (called often: throttle the drawing) */
	void (*progress)(void *userdata, uint64_t bytes);
	void *userdata;
	/* set (by another thread) to end the transfer in flight: -ECANCELED within about a
	 * second, which is how often libcurl calls its progress callback on a stalled one */
	const atomic_bool *cancel;
	/* the same, a second flag: the caller's own (a failed pull ends its other download) */
	const atomic_bool *abort;
};

/* A client for ref's registry and repository. 0 or -errno. */
int ts_reg_open(const struct ts_oci_ref *ref, const struct ts_reg_opts *o, struct ts_registry **ret,
		struct ts_error *err);
void ts_reg_free(struct ts_registry *r);

/* A second client of from's repository (its own connection, for a download beside one of
 * from's), with from's options and the credentials or token it has, the bytes of its
 * blobs told to progress(userdata) instead, and abort (NULL: none) as its opts.abort.
 * 0 or -errno. */
int ts_reg_clone(struct ts_registry *from, void (*progress)(void *userdata, uint64_t bytes),
		 void *userdata, const atomic_bool *abort, struct ts_registry **ret,
		 struct ts_error *err);

/*
 * GET the manifest (or index) named by a tag or a `sha256:` digest: the body (malloc'ed,
 * NUL-terminated, at most TS_REG_MAX_MANIFEST) and its media type (the Content-Type, or
 * the body's own mediaType). -ENOENT when the registry has no such manifest.
 */
int ts_reg_manifest(struct ts_registry *r, const char *tag_or_digest, char **body, size_t *len,
		    char *mtype, size_t mtype_len, struct ts_error *err);

/*
 * GET the blob sha256:hex into fd (appended), at most max bytes (-EFBIG past it), its
 * sha256 computed on the way into got_hex (65 bytes) and its size into *got. The caller
 * compares them with what it expected.
 */
int ts_reg_blob(struct ts_registry *r, const char *hex, int fd, uint64_t max, char *got_hex,
		uint64_t *got, struct ts_error *err);
