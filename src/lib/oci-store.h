/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The local image store, $ROOT/images/oci/:
 *   index.json            names: NAME -> {digest (of the manifest), config, layers, source}
 *   blobs/sha256/<hex>    the manifests and configs, as imported (content-addressed)
 *   layers/sha256/<key>/  each layer unpacked once (oci-layer.h); <key> is the chain of the
 *                         verified layer digests below and including it
 *                         (sha256(parent-key + " " + layer-digest)), so a layer's directory
 *                         (whose opaque directories depend on the layers below) is shared
 *                         only by images with the same layers under it
 *   tmp/                  work in progress: a layer is unpacked into tmp/ and renamed into
 *                         layers/ when complete, so a killed import leaves no half layer in
 *                         use (only a tmp/ entry, removed by the next import or prune)
 *   lock                  flock(2): imports, builds' imports, rm and prune take it
 *                         exclusively; a durable sandbox's pin (ts_oci_pin) and a
 *                         sandbox's use of an image (ts_oci_use) shared
 * prune keeps what a name, a durable sandbox's pin (state.db, spec `image_pin`) or a running
 * sandbox (a shared flock on each layer directory it stacks) uses, and any tmp/ entry
 * someone holds a flock on (a build in progress, ts_oci_workdir).
 * Every blob is checked against its sha256 digest (and its size) before use, and each
 * layer, decompressed, against its config's diff_id: a mismatch is refused. The layer blobs are not kept once unpacked.
 */
#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define TS_OCI_MAX_LAYERS 14 /* the helper stacks at most 16 lower layers */

/* Is s a usable image name ([A-Za-z0-9] then [A-Za-z0-9._:/@+-], at most 255, no `..`)? */
bool ts_oci_name_valid(const char *s);

/*
 * Import src as name: `oci:DIR[:REF]` (an OCI image layout; REF picks the manifest by its
 * org.opencontainers.image.ref.name, else the layout's only one; an index picks linux and
 * this machine's architecture) or `docker-archive:FILE` (a `docker save` tarball). An
 * existing name is replaced. Each layer may unpack to at most max_bytes (0: 16 GiB),
 * else the import fails with -EFBIG. warn gets each neutralised entry of a layer. The
 * manifest's digest goes to digest (72 bytes). 0 or -errno.
 */
int ts_oci_import(const char *root, const char *src, const char *name, uint64_t max_bytes,
		  void (*warn)(void *userdata, const char *msg), void *userdata, char *digest,
		  size_t len, struct ts_error *err);

enum ts_oci_phase {
	TS_OCI_PHASE_WAIT,     /* another import or pull holds the store */
	TS_OCI_PHASE_MANIFEST, /* asking the registry for the manifest */
	TS_OCI_PHASE_DOWNLOAD, /* layers coming */
	TS_OCI_PHASE_UNPACK,   /* a layer downloaded, being checked and unpacked */
	TS_OCI_PHASE_DONE,
};

struct ts_oci_progress {
	enum ts_oci_phase phase;
	size_t layers, layers_done, layers_cached; /* cached: unpacked before, not fetched */
	uint64_t bytes_total, bytes_done;	   /* of the layers that are fetched */
};

struct ts_oci_pull_opts {
	bool insecure;	       /* plain http to a registry that is not on a loopback address */
	const char *auth_file; /* NULL: oci-registry.h's search */
	bool no_credentials;   /* send none (serve's pulls for API callers) */
	uint64_t max_bytes;    /* per layer unpacked, as for an import */
	/* the most the layers still to fetch may weigh, as their descriptors state it, checked
	 * against the manifest before any layer is downloaded: more is -EFBIG (0: no limit) */
	uint64_t max_download;
	/* warn and progress are called from the pull's threads (its layers download and
	 * unpack in threads of their own), never two at once */
	void (*warn)(void *userdata, const char *msg);
	/* often (draw at most a few times a second) */
	void (*progress)(void *userdata, const struct ts_oci_progress *p);
	void *userdata;
	/* set by another thread to give the pull up: a download ends within about a second,
	 * a wait for a lock within 0.1 s, and the pull returns -ECANCELED leaving nothing, as
	 * any failed pull (NULL: never) */
	const atomic_bool *cancel;
};

/*
 * Pull the image reference ref (oci-ref.h) from its registry as name (NULL: ref as
 * given): the manifest (an index: linux and this machine's architecture), its config
 * and the layers not unpacked yet — a layer the store has (the same digests below it) is
 * not downloaded again. Every blob is verified as an import's. The layers are downloaded
 * and unpacked as they come, two at once, without the store's lock (taken to install them
 * and record the name); pulls of one reference take turns, so a second pull of the same
 * image waits for the first and then fetches only the manifest. 0 or -errno (-ENOENT: the
 * registry has no such image).
 */
int ts_oci_pull(const char *root, const char *ref, const char *name,
		const struct ts_oci_pull_opts *o, char *digest, size_t len, struct ts_error *err);

/*
 * Import the uncompressed tar file tar (a root file system, e.g. mmdebstrap's) as the
 * one-layer image name: its layer unpacked as any image layer (oci-layer.h), a config
 * (this architecture, linux, PATH, created_by in its history) and a manifest made for it;
 * source is what `image ls` shows. An existing name is replaced. 0 or -errno.
 */
int ts_oci_import_tar(const char *root, const char *tar, const char *name, const char *source,
		      const char *created_by, uint64_t max_bytes,
		      void (*warn)(void *userdata, const char *msg), void *userdata, char *digest,
		      size_t len, struct ts_error *err);

/*
 * A new work directory tmp/PREFIX-<random> of the store (path: its absolute path), held
 * through the returned fd of its file `.lock` with an exclusive flock(2): no sweep (import,
 * prune) removes it until that fd and every copy of it (in child processes too) are
 * closed; afterwards it is a leftover they remove. The fd or -errno.
 */
int ts_oci_workdir(const char *root, const char *prefix, char *path, size_t len,
		   struct ts_error *err);

/* [{name, digest, layers, size, source}] of the store's images, sorted by name. */
int ts_oci_list(const char *root, json_t **ret, struct ts_error *err);

/* {name, digest, source, manifest, config, layers: [{digest, key, path, size}]}. -ENOENT
 * for an unknown name. */
int ts_oci_inspect(const char *root, const char *name, json_t **ret, struct ts_error *err);

/*
 * The Env of name's config, as "NAME=VALUE\0" entries in buf (*used bytes): at most 64,
 * valid names only, without HOME, USER, LOGNAME and TERM (the sandbox's user model sets
 * those). 0 or -errno.
 */
int ts_oci_env(const char *root, const char *name, char *buf, size_t len, size_t *used,
	       struct ts_error *err);

/* Does the store have an image called name? */
bool ts_oci_has(const char *root, const char *name);

/* Forget name (its layers stay until prune, and after it while a sandbox uses them).
 * -ENOENT for an unknown name. */
int ts_oci_rm(const char *root, const char *name, struct ts_error *err);

/* Remove the layers and blobs no name, durable sandbox or running sandbox uses, and what
 * nobody holds in tmp/. *freed: bytes on disk. */
int ts_oci_prune(const char *root, uint64_t *freed, size_t *removed, struct ts_error *err);

/* The layer directories of name, top first, into lowers (max entries). 0 or -errno. */
int ts_oci_lowers(const char *root, const char *name, char (*lowers)[4096], size_t max, size_t *n,
		  struct ts_error *err);

/*
 * Pin the image name for a durable sandbox: *ret (malloc'ed) is the JSON text {name,
 * digest, config, layers: [{digest, key}]} to record in its spec; prune keeps what a pin
 * names, so the sandbox keeps its layers after `image rm`. *lock is the store's lock held
 * shared: close it once the pin is in state.db (a prune waits for it, and then sees the
 * pin). 0 or -errno (-ENOENT: no such image).
 */
int ts_oci_pin(const char *root, const char *name, char **ret, int *lock, struct ts_error *err);

/* An image to stack, filled by ts_oci_use: the caller gives the arrays and their sizes. */
struct ts_oci_use {
	char (*lowers)[4096]; /* the layer directories, top first */
	size_t max, n;
	char *env; /* its config's Env, as ts_oci_env */
	size_t env_len, env_used;
	int *hold; /* max entries: each layer directory, flock'ed shared (NULL: not held) */
	size_t n_hold;
};

/*
 * The layers and Env of the image name, or of pin (ts_oci_pin's text; wins over the name,
 * which is then only shown), resolved under the store's lock taken shared. With u->hold,
 * each layer directory stays open with a shared flock(2) that prune respects until
 * ts_oci_use_release. 0 or -errno.
 */
int ts_oci_use(const char *root, const char *name, const char *pin, struct ts_oci_use *u,
	       struct ts_error *err);
void ts_oci_use_release(struct ts_oci_use *u);
