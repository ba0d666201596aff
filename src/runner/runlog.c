/* SPDX-License-Identifier: Apache-2.0 */
/* PLACEHOLDER: replaced by its implementation. */
#include <errno.h>
#include "runlog.h"
int ts_runlog_open(const char *path, struct ts_runlog **ret, struct ts_error *err)
{
	return ts_err(err, ENOSYS, "not yet");
}
/* PLACEHOLDER */
int ts_runlog_run_get(struct ts_runlog *l, const char *id, struct ts_run_rec *ret,
		      struct ts_error *err)
{
	return ts_err(err, -ENOSYS, "x");
}
int ts_runlog_run_set_sandbox(struct ts_runlog *l, const char *id, const char *s,
			      struct ts_error *err)
{
	return ts_err(err, -ENOSYS, "x");
}
int ts_runlog_run_set_workspace(struct ts_runlog *l, const char *id, const char *s,
				struct ts_error *err)
{
	return ts_err(err, -ENOSYS, "x");
}
int ts_runlog_run_new(struct ts_runlog *l, const char *agent_json, const char *agent_path,
		      const char *backend, const char *workspace, char id_out[TS_RUN_ID_LEN + 1],
		      struct ts_error *err)
{
	return ts_err(err, -ENOSYS, "x");
}
int ts_runlog_event(struct ts_runlog *l, const char *run, uint64_t call, const char *type,
		    const char *data, struct ts_error *err)
{
	return ts_err(err, -ENOSYS, "x");
}
int ts_runlog_seen_get(struct ts_runlog *l, const char *run, const char *path, char *hash,
		       size_t len, struct ts_error *err)
{
	return -ENOENT;
}
int ts_runlog_seen_set(struct ts_runlog *l, const char *run, const char *path, const char *hash,
		       struct ts_error *err)
{
	return 0;
}
int ts_runlog_call_begin(struct ts_runlog *l, const char *run, const char *key, const char *tool,
			 const char *args, enum ts_call_kind *kind, struct ts_call_rec *rec,
			 struct ts_error *err)
{
	return ts_err(err, -ENOSYS, "x");
}
int ts_runlog_call_complete(struct ts_runlog *l, const char *run, uint64_t index,
			    const char *result, struct ts_error *err)
{
	return ts_err(err, -ENOSYS, "x");
}
void ts_run_rec_clear(struct ts_run_rec *r)
{
}
void ts_call_rec_clear(struct ts_call_rec *c)
{
}
int ts_runlog_open_default(struct ts_runlog **ret, struct ts_error *err)
{
	return ts_err(err, -ENOSYS, "x");
}
void ts_runlog_close(struct ts_runlog *l)
{
}
int ts_runlog_run_list(struct ts_runlog *l, struct ts_run_rec **ret, size_t *n, struct ts_error *err) { return ts_err(err, -ENOSYS, "x"); }
int ts_runlog_run_finish(struct ts_runlog *l, const char *id, struct ts_error *err) { return ts_err(err, -ENOSYS, "x"); }
int ts_runlog_call_list(struct ts_runlog *l, const char *run, uint64_t from, struct ts_call_rec **ret, size_t *n, struct ts_error *err) { return ts_err(err, -ENOSYS, "x"); }
int ts_runlog_event_list(struct ts_runlog *l, const char *run, struct ts_run_event **ret, size_t *n, struct ts_error *err) { return ts_err(err, -ENOSYS, "x"); }
void ts_run_recs_free(struct ts_run_rec *v, size_t n) { }
void ts_call_recs_free(struct ts_call_rec *v, size_t n) { }
void ts_run_events_free(struct ts_run_event *v, size_t n) { }
