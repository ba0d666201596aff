/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What a one-shot `run` leaves when it is killed (kill -9, OOM, a reboot) before it can
 * clean up: its $ROOT/<id>/ (a fresh workspace, an upper layer) and its cgroups ts-<id>.
 * Before it creates either, a run claims the id in $ROOT/oneshot/<id> with its pid and
 * start time; it releases the claim when it has removed what it made. The next `run`
 * (and `reap`) removes what belongs to a claim whose process no longer runs — checked
 * by pid and start time together, never by age. Durable sandboxes and `run --keep` make
 * no claim and are never touched.
 */
#include "error.h"

/* Claim id for this process. 0 or -errno with err. */
int ts_leftovers_claim(const char *root, const char *id, struct ts_error *err);

/* Drop the claim (what it covered is gone, or is kept on purpose). */
void ts_leftovers_release(const char *root, const char *id);

/*
 * Remove $ROOT/<id>/ and cgroups ts-<id> of every claim whose process is gone, then the
 * claim. Never follows a symlink; only plain ids. Returns how many were removed.
 */
int ts_leftovers_sweep(const char *root);
