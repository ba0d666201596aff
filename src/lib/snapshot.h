/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Snapshots: read-only copies of a durable sandbox's file system, restorable as templates
 * (E2B's createSnapshot, fork). A snapshot is $ROOT/snapshots/<id>/ holding `upper/` (a
 * copy of the sandbox's overlay upper layer) and `workspace/` (a copy of its own
 * workspace; one given with --workspace is not copied), and a row of the table
 * `snapshots` in state.db: id, names, source sandbox, spec (the source's image and
 * image_pin, and `layers`: this snapshot's id over the chain of snapshots the source was
 * itself restored from), created ms, size.
 *
 * A sandbox restored from one gets each layer's `upper/` as a read-only overlay lower
 * layer over its image's (top first), its own fresh upper, and a copy of the snapshot's
 * workspace. Deleting a snapshot removes its record; its directory goes when no sandbox
 * record and no other snapshot's chain names it (else the next delete sweeps it).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "paths.h"
#include "store.h"

#define TS_SNAP_ID_LEN 17   /* "snap-" + 12 lowercase hex */
#define TS_SNAP_MAX_CHAIN 8 /* layers of one snapshot (its own + those it came from) */
#define TS_SNAP_MAX_NAMES 16
#define TS_SNAP_DEFAULT_MAX_BYTES (16ULL << 30)
#define TS_SNAP_DEFAULT_MAX_ENTRIES 2000000ULL

struct ts_snapshot {
	char id[TS_SNAP_ID_LEN + 1];
	char names[TS_SNAP_MAX_NAMES][TS_NAME_MAX];
	size_t n_names;
	char source[16];	 /* the sandbox it was taken of (it may be gone) */
	char *spec;		 /* JSON: image, image_pin, layers [ids, top first], workspace */
	long long created_ms;	 /* CLOCK_REALTIME */
	unsigned long long size; /* bytes of file contents copied */
};

struct ts_snapshot_opts {
	const char *name;     /* NULL: none; moved here from any snapshot that had it */
	uint64_t max_bytes;   /* 0: TS_SNAP_DEFAULT_MAX_BYTES */
	uint64_t max_entries; /* 0: TS_SNAP_DEFAULT_MAX_ENTRIES */
	bool internal;	      /* a fork's: a name-less record the caller deletes */
};

void ts_snapshot_free(struct ts_snapshot *s);
static inline void ts_snapshot_freep(struct ts_snapshot *s)
{
	ts_snapshot_free(s);
}
void ts_snapshots_free(struct ts_snapshot *v, size_t n);

/* Is ref shaped like a snapshot id ("snap-" + 12 hex)? */
bool ts_snapshot_id_valid(const char *ref);

/*
 * Take a snapshot of the sandbox rec (running: paused with init's PAUSE while the copy
 * runs and resumed after, also on failure; stopped: copied as it is) in the sandbox's id
 * mapping (a sandbox with subordinate ids through the helper, idcopy.h). -ENOSPC / -E2BIG
 * past the limits (nothing stays behind), -EINVAL for a bad name (one starting with
 * `snap-`, the generated ids' prefix, too) or a chain longer than TS_SNAP_MAX_CHAIN,
 * -EBUSY when another snapshot being taken claims the same name. The copy goes to
 * `snapshots/.tmp-<id>/`, flocked from its creation until it is renamed into place and
 * recorded (under the store's lock `snapshots/.lock`, which every sweep holds), and the
 * name is claimed by a flocked `snapshots/.name-<name>` meanwhile; what a killed one left
 * behind, no longer locked, goes with the next snapshot or delete. 0 with *ret filled
 * (free with ts_snapshot_free).
 */
int ts_snapshot_create(struct ts_store *st, const struct ts_paths *paths,
		       struct ts_sandbox_rec *rec, const struct ts_snapshot_opts *o,
		       struct ts_snapshot *ret, struct ts_error *err);

/* Every snapshot, oldest first. */
int ts_snapshot_list(struct ts_store *st, struct ts_snapshot **ret, size_t *n,
		     struct ts_error *err);

/* By exact id or by one of its names. -ENOENT ("no snapshot `x`"). */
int ts_snapshot_get(struct ts_store *st, const char *ref, struct ts_snapshot *ret,
		    struct ts_error *err);

/*
 * Delete the record of ref (id or name) and remove the directories of snapshots that no
 * record refers to any more (sandboxes restored from them, other snapshots' chains), and
 * the leftovers of snapshots killed while copying.
 * -ENOENT when there is no such snapshot.
 */
int ts_snapshot_delete(struct ts_store *st, const struct ts_paths *paths, const char *ref,
		       struct ts_error *err);

/*
 * The `upper/` directory of each snapshot id in the array spec.key (a snapshot's `layers`,
 * a restored sandbox's `snapshots`), top first, into dirs (n at most TS_SNAP_MAX_CHAIN)
 * after checking that each exists. 0 with n = 0 when there is no such array.
 */
int ts_snapshot_layer_dirs(const struct ts_paths *paths, const char *spec, const char *key,
			   char dirs[][4096], size_t *n, struct ts_error *err);

/* Copy snapshot s's workspace (when it has one) into the directory dst_fd, in the id
 * mapping of the sandbox whose recorded spec is dst_spec (idcopy.h). 0 when it has none. */
int ts_snapshot_copy_workspace(const struct ts_paths *paths, const struct ts_snapshot *s,
			       const char *dst_spec, int dst_fd, struct ts_error *err);
