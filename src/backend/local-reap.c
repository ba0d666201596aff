/* SPDX-License-Identifier: Apache-2.0 */
/* The local backend's reap: stop what is past its timeout or whose owner is gone. */
#include "local.h"

#include "leftovers.h"
#include "sandbox.h"
#include "sbstatus.h"
#include "util.h"

#define REAP_GRACE_MS 2000

int ts_local_reap(struct ts_backend *b, bool dry_run, bool (*stop_early)(void), ts_reap_fn fn,
		  void *userdata, unsigned *failed, struct ts_error *err)
{
	struct local *l = b->impl;
	struct ts_sandbox_rec *recs = NULL;
	struct ts_store *st;
	size_t n = 0;
	int r;

	/* what killed one-shot runs left (leftovers.h): never by age alone */
	if (!dry_run)
		ts_leftovers_sweep(l->paths.root);
	r = ts_local_store(l, &st, err);
	if (r == 0)
		r = ts_store_list(st, &recs, &n, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n && !(stop_early && stop_early()); i++) {
		struct ts_sb_live live;
		struct ts_error stop_err = { 0 };
		long long amount;
		char detail[128];
		enum ts_reap_reason why = ts_sb_judge(&recs[i], ts_realtime_ms(), &live, &amount,
						      detail, sizeof(detail));
		struct ts_reap_action a = {
			.id = recs[i].id,
			.name = recs[i].name,
			.reason = ts_reap_reason_name(why),
			.detail = detail,
			.ttl_ms = recs[i].ttl_ms,
			.amount_ms = amount,
			.owner_pid = recs[i].owner_pid,
		};

		if (why == TS_REAP_NONE)
			continue;
		if (!dry_run) {
			a.stopped = ts_sandbox_stop(st, &recs[i], REAP_GRACE_MS, &stop_err) == 0;
			if (!a.stopped) {
				a.err = &stop_err;
				(*failed)++;
			}
		}
		fn(userdata, &a);
	}
	ts_sandbox_recs_free(recs, n);
	return 0;
}
