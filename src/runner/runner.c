/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent runner: one agent's sandbox, toolbox, approver and (for a durable run) event
 * log, and the path of one call through them (runner.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "paths.h"
#include "policy.h"
#include "runner.h"
#include "tools-internal.h"
#include "util.h"

struct ts_runner {
	struct ts_backend *be;
	const struct ts_agent *agent;
	struct ts_runlog *log;
	const struct ts_approver *approver;
	bool append_unkeyed;
	char run_id[TS_RUN_ID_LEN + 1]; /* "" without a run */
	char sandbox_id[64];
	char *workspace; /* local: the run's host directory; NULL elsewhere */
	struct ts_sb *sb;
	struct ts_toolbox *tb;
	struct ts_policy policy; /* its protected patterns: the default policy's, the
				  * agent's policy file's and the agent's own */
	struct ts_kv *envs;	 /* the allow-list's values */
	size_t n_envs;
	uint64_t position; /* calls of this connection so far */
};

static bool is_local(const struct ts_runner *r)
{
	return strcmp(ts_backend_name(r->be), "local") == 0;
}

/* The protected patterns every tool honours: the same the kernel enforces for a local
 * sandbox (its policy's), plus the agent's own. */
static int load_patterns(struct ts_runner *r, struct ts_error *err)
{
	struct ts_paths paths;
	char defpol[4200];
	int k = ts_paths_init(&paths, err);

	if (k < 0)
		return k;
	if (snprintf(defpol, sizeof(defpol), "%s/default.yaml", paths.policy_dir) >=
	    (int)sizeof(defpol))
		return ts_err(err, -ENAMETOOLONG, "the policy directory's path is too long");
	if (access(defpol, F_OK) == 0 && (k = ts_policy_load(&r->policy, defpol, err)) < 0)
		return k;
	if (r->agent->policy && (k = ts_policy_load(&r->policy, r->agent->policy, err)) < 0)
		return k;
	for (size_t i = 0; i < r->agent->n_protected; i++)
		if ((k = ts_policy_add_protected(&r->policy, r->agent->protected_patterns[i],
						 err)) < 0)
			return k;
	return 0;
}

/* Only the variables the agent names, with the host's values; a name the host does not
 * have is left out. */
static int load_envs(struct ts_runner *r, struct ts_error *err)
{
	r->envs = calloc(r->agent->n_env + 1, sizeof(*r->envs));
	if (!r->envs)
		return ts_err(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < r->agent->n_env; i++) {
		const char *v = getenv(r->agent->env[i]);
		if (!v)
			continue;
		r->envs[r->n_envs].key = r->agent->env[i];
		r->envs[r->n_envs].value = v;
		r->n_envs++;
	}
	return 0;
}

/* local: the run's workspace, $ROOT/runs/RUN/workspace, made here (mode 0755 under a 0700
 * runs directory: the state root's rules). It outlives every sandbox of the run. */
static int make_workspace(struct ts_runner *r, struct ts_error *err)
{
	struct ts_paths paths;
	char dir[4200];
	int k = ts_paths_init(&paths, err);

	if (k < 0)
		return k;
	if (snprintf(dir, sizeof(dir), "%s/runs", paths.root) >= (int)sizeof(dir))
		return ts_err(err, -ENAMETOOLONG, "the state root's path is too long");
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return ts_err_errno(err, -errno, "mkdir `%s`", dir);
	size_t l = strlen(dir);
	if (snprintf(dir + l, sizeof(dir) - l, "/%s", r->run_id) >= (int)(sizeof(dir) - l))
		return ts_err(err, -ENAMETOOLONG, "the state root's path is too long");
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return ts_err_errno(err, -errno, "mkdir `%s`", dir);
	l = strlen(dir);
	if (snprintf(dir + l, sizeof(dir) - l, "/workspace") >= (int)(sizeof(dir) - l))
		return ts_err(err, -ENAMETOOLONG, "the state root's path is too long");
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return ts_err_errno(err, -errno, "mkdir `%s`", dir);
	r->workspace = strdup(dir);
	return r->workspace ? 0 : ts_err(err, -ENOMEM, "out of memory");
}

static int create_sandbox(struct ts_runner *r, struct ts_error *err)
{
	struct ts_kv meta[2] = { { "toren.agent", r->agent->name ? r->agent->name : "agent" },
				 { "toren.run", r->run_id } };
	struct ts_sb_create_opts o = {
		.template_id = r->agent->image,
		.envs = r->envs,
		.n_envs = r->n_envs,
		.metadata = meta,
		.n_metadata = r->run_id[0] ? 2 : 1,
		/* a run's local sandbox has no idle timeout unless the agent sets one: the run
		 * decides when it ends (`runs finish`, then reap) */
		.timeout_ms = r->agent->timeout_ms < 0 && r->run_id[0] && is_local(r)
				      ? 0
				      : r->agent->timeout_ms,
		.workspace = r->workspace,
		.policy_file = r->agent->policy,
		/* the kernel protects the agent's own patterns in bash too, as the policy's */
		.protected_patterns = r->agent->protected_patterns,
	};
	int k = ts_sb_create(r->be, &o, &r->sb, err);

	if (k < 0)
		return ts_err_prefix(err, k, "creating the agent's sandbox");
	snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", ts_sb_id(r->sb));
	return 0;
}

static int connect_sandbox(struct ts_runner *r, const char *id, struct ts_error *err)
{
	int k = ts_sb_connect(r->be, id, -1, &r->sb, err);

	if (k < 0)
		return k;
	snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", ts_sb_id(r->sb));
	return 0;
}

/* Is the connected sandbox there and running? */
static bool sandbox_alive(struct ts_runner *r)
{
	struct ts_sb_info info = { 0 };
	struct ts_error e = { 0 };
	bool ok = r->sb && ts_sb_info(r->sb, &info, &e) == 0 && info.state == TS_SB_RUNNING;

	ts_sb_info_clear(&info);
	return ok;
}

static void record_event(struct ts_runner *r, uint64_t call, const char *type, json_t *data)
{
	struct ts_error e = { 0 };
	_cleanup_free_ char *text = data ? json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	/* the event log is the record of what happened; an event that cannot be written
	 * (the disk is full) must not fail the call whose result is written next */
	if (r->log && r->run_id[0] && text)
		(void)ts_runlog_event(r->log, r->run_id, call, type, text, &e);
	json_decref(data);
}

/*
 * The run's sandbox is gone or stopped: connect again by id (a stopped local sandbox
 * starts again around its workspace; E2B: a paused one resumes), else build a new one
 * around the run's workspace (local) or a fresh one (e2b: the files were the sandbox's).
 */
static int rebuild(struct ts_runner *r, uint64_t call, const char *why, struct ts_error *err)
{
	char old[64];
	struct ts_error e = { 0 };
	int k;

	snprintf(old, sizeof(old), "%s", r->sandbox_id);
	ts_sb_close(r->sb);
	r->sb = NULL;
	if (old[0] && (k = connect_sandbox(r, old, &e)) == 0 && sandbox_alive(r)) {
		record_event(r, call, "sandbox",
			     json_pack("{s:s, s:s, s:s}", "action", "reconnected", "sandbox", old,
				       "reason", why));
		ts_toolbox_set_sandbox(r->tb, r->sb);
		return 0;
	}
	ts_sb_close(r->sb);
	r->sb = NULL;
	if ((k = create_sandbox(r, err)) < 0)
		return k;
	if ((k = ts_runlog_run_set_sandbox(r->log, r->run_id, r->sandbox_id, err)) < 0)
		return k;
	record_event(r, call, "sandbox",
		     json_pack("{s:s, s:s, s:s, s:s}", "action", "rebuilt", "from", old, "sandbox",
			       r->sandbox_id, "reason", why));
	ts_toolbox_set_sandbox(r->tb, r->sb);
	return 0;
}

static int seen_get(void *userdata, const char *path, char *hash, size_t len, struct ts_error *err)
{
	struct ts_runner *r = userdata;
	return ts_runlog_seen_get(r->log, r->run_id, path, hash, len, err);
}

static int seen_set(void *userdata, const char *path, const char *hash, struct ts_error *err)
{
	struct ts_runner *r = userdata;
	return ts_runlog_seen_set(r->log, r->run_id, path, hash, err);
}

/* The run: resumed (its sandbox connected, or rebuilt when gone) or begun. */
static int open_run(struct ts_runner *r, const struct ts_runner_opts *o, struct ts_error *err)
{
	int k;

	if (o->run_id) {
		_cleanup_(ts_run_rec_clear) struct ts_run_rec rec = { 0 };
		if ((k = ts_runlog_run_get(r->log, o->run_id, &rec, err)) < 0)
			return k;
		if (rec.finished_ms)
			return ts_err(err, -ESTALE, "run %s is finished: start a new run", rec.id);
		if (strcmp(rec.backend, ts_backend_name(r->be)) != 0)
			return ts_err(err, -EINVAL,
				      "run %s belongs to the %s backend, not %s (--backend %s)",
				      rec.id, rec.backend, ts_backend_name(r->be), rec.backend);
		snprintf(r->run_id, sizeof(r->run_id), "%s", rec.id);
		snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", rec.sandbox_id);
		if (rec.workspace[0] && !(r->workspace = strdup(rec.workspace)))
			return ts_err(err, -ENOMEM, "out of memory");
		return 0; /* connected below, with the toolbox */
	}
	_cleanup_free_ char *agent_json = ts_agent_to_json(r->agent);
	if (!agent_json)
		return ts_err(err, -ENOMEM, "out of memory");
	k = ts_runlog_run_new(r->log, agent_json, r->agent->path ? r->agent->path : "",
			      ts_backend_name(r->be), "", r->run_id, err);
	if (k < 0)
		return k;
	if (o->sandbox_id)
		snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", o->sandbox_id);
	else if (is_local(r) && (k = make_workspace(r, err)) < 0)
		return k;
	return 0;
}

int ts_runner_open(const struct ts_runner_opts *o, struct ts_runner **ret, struct ts_error *err)
{
	_cleanup_(ts_runner_freep) struct ts_runner *r = NULL;
	int k;

	if (!o->agent->sandbox)
		return ts_err(
			err, -EINVAL,
			"the agent `%s` has `sandbox: false`: its tools run only in a sandbox",
			o->agent->name ? o->agent->name : "agent");
	if (!o->log && !o->sandbox_id)
		return ts_err(err, -EINVAL, "a sandbox id or a run is needed");
	if (!(r = calloc(1, sizeof(*r))))
		return ts_err(err, -ENOMEM, "out of memory");
	r->be = o->backend;
	r->agent = o->agent;
	r->log = o->log;
	r->approver = o->approver;
	r->append_unkeyed = o->append_unkeyed;
	if ((k = load_patterns(r, err)) < 0 || (k = load_envs(r, err)) < 0)
		return k;
	if (!o->log)
		snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", o->sandbox_id);
	else if ((k = open_run(r, o, err)) < 0)
		return k;

	struct ts_toolbox_opts to = {
		.version = o->agent->tools,
		.protected_patterns = r->policy.protected_patterns,
		.n_protected = r->policy.n_protected,
		.envs = r->envs,
		.n_envs = r->n_envs,
		.webhook_url = o->agent->webhook_url,
		.outbox_dir = o->agent->outbox_dir,
	};
	if (r->log)
		to.memory = (struct ts_tool_memory){ seen_get, seen_set, r };
	if ((k = ts_toolbox_new(&to, &r->tb, err)) < 0)
		return k;

	if (r->sandbox_id[0]) {
		k = connect_sandbox(r, r->sandbox_id, err);
		/* a resumed run rebuilds a sandbox that is gone; a sandbox named for a new run
		 * must be there (the run begun for it ends at once) */
		if (k < 0 && !(o->run_id && ts_be_code(err) == TS_BE_NOT_FOUND)) {
			if (r->log && !o->run_id) {
				struct ts_error e = { 0 };
				(void)ts_runlog_run_finish(r->log, r->run_id, &e);
			}
			return ts_err_prefix(err, k, "sandbox %s", r->sandbox_id);
		}
		if (k < 0 && (k = rebuild(r, UINT64_MAX, "its sandbox was gone", err)) < 0)
			return k;
		/* a new run on a sandbox it was given records it */
		if (r->log && !o->run_id &&
		    (k = ts_runlog_run_set_sandbox(r->log, r->run_id, r->sandbox_id, err)) < 0)
			return k;
	} else {
		if ((k = create_sandbox(r, err)) < 0)
			return k;
		if ((k = ts_runlog_run_set_sandbox(r->log, r->run_id, r->sandbox_id, err)) < 0 ||
		    (r->workspace &&
		     (k = ts_runlog_run_set_workspace(r->log, r->run_id, r->workspace, err)) < 0)) {
			struct ts_error e = { 0 };
			(void)ts_sb_kill(r->be, r->sandbox_id, &e);
			return k;
		}
	}
	ts_toolbox_set_sandbox(r->tb, r->sb);
	*ret = TAKE_PTR(r);
	return 0;
}

void ts_runner_free(struct ts_runner *r)
{
	if (!r)
		return;
	ts_toolbox_free(r->tb);
	ts_sb_close(r->sb);
	ts_policy_free(&r->policy);
	free(r->envs);
	free(r->workspace);
	free(r);
}

const char *ts_runner_run_id(const struct ts_runner *r)
{
	return r->run_id;
}

const char *ts_runner_sandbox_id(const struct ts_runner *r)
{
	return r->sandbox_id;
}

unsigned ts_runner_tools_version(const struct ts_runner *r)
{
	return r->agent->tools;
}

/* One line for the approver: bash's command, a write's path. */
static const char *summary_of(const char *tool, json_t *args)
{
	const char *s = json_string_value(json_object_get(args, "command"));
	if (!s)
		s = json_string_value(json_object_get(args, "path"));
	return s ? s : tool;
}

static bool gated(const struct ts_runner *r, const char *tool)
{
	if (strcmp(tool, "bash") == 0)
		return r->agent->approve_bash == TS_APPROVAL_ALWAYS;
	return ts_tool_writes(tool) && r->agent->approve_write == TS_APPROVAL_ALWAYS;
}

/* Ask the approver; 0 with res filled on a denial (*denied), or nothing on approval. */
static int approve(struct ts_runner *r, uint64_t call, const char *tool, json_t *args,
		   const char *args_text, bool *denied, struct ts_tool_result *res,
		   struct ts_error *err)
{
	const char *kind = strcmp(tool, "bash") == 0 ? "bash" : "write";
	struct ts_approval_req q = { .run = r->run_id,
				     .call = call,
				     .tool = tool,
				     .args = args_text,
				     .summary = summary_of(tool, args) };
	_cleanup_free_ char *reason = NULL;
	bool allow = false;
	int k;

	*denied = false;
	if (!r->approver) {
		*denied = true;
		return ts_tool_fail(
			res, "approval_required",
			"%s needs approval (`approval: %s` in the agent's sandbox configuration) "
			"and no approver can be asked: set `approval: never` to run without "
			"asking, pass --approve-cmd CMD, run from a terminal, or use serve's "
			"approval queue (GET /v1/approvals)",
			tool, strcmp(kind, "bash") == 0 ? "always" : "{write: always}");
	}
	k = r->approver->ask(r->approver->userdata, &q, &allow, &reason, err);
	if (k < 0)
		return ts_err_prefix(err, k, "asking the %s approver about %s", r->approver->name,
				     tool);
	record_event(r, call, "approval",
		     json_pack("{s:s, s:s, s:b, s:s}", "tool", tool, "approver", r->approver->name,
			       "allowed", allow, "reason", reason ? reason : ""));
	if (allow)
		return 0;
	*denied = true;
	return ts_tool_fail(res, "denied", "the %s approver denied this %s call%s%s%s",
			    r->approver->name, tool, reason && *reason ? " (" : "",
			    reason ? reason : "", reason && *reason ? ")" : "");
}

/* Execute on the toolbox; with a run, a sandbox that is gone is rebuilt once. */
static int execute(struct ts_runner *r, uint64_t call, const char *tool, json_t *args,
		   struct ts_tool_result *res, struct ts_error *err)
{
	int k = ts_toolbox_call(r->tb, tool, args, res, err);

	if (k >= 0 || !r->log || sandbox_alive(r))
		return k;
	ts_tool_result_clear(res);
	struct ts_error why = *err;
	ts_err_clear(err);
	if ((k = rebuild(r, call, why.msg, err)) < 0)
		return k;
	return ts_toolbox_call(r->tb, tool, args, res, err);
}

static int call_logged(struct ts_runner *r, const char *key, const char *tool, json_t *args,
		       const char *args_text, struct ts_tool_result *res, struct ts_call_info *info,
		       struct ts_error *err)
{
	_cleanup_free_ char *keybuf = NULL;
	_cleanup_(ts_call_rec_clear) struct ts_call_rec rec = { 0 };
	enum ts_call_kind kind;
	bool denied;
	int k;

	if (key) {
		if (asprintf(&keybuf, "k:%s", key) < 0)
			return ts_err(err, -ENOMEM, "out of memory");
	} else if (!r->append_unkeyed) {
		if (asprintf(&keybuf, "p:%llu", (unsigned long long)r->position) < 0)
			return ts_err(err, -ENOMEM, "out of memory");
	}
	r->position++;
	k = ts_runlog_call_begin(r->log, r->run_id, keybuf, tool, args_text, &kind, &rec, err);
	if (k < 0)
		return k;
	info->index = rec.index;
	info->attempt = rec.attempts;
	if (kind == TS_CALL_REPLAY) {
		json_error_t jerr;
		json_t *j = json_loads(rec.result ? rec.result : "", 0, &jerr);
		if (!j)
			return ts_err(err, -EBADMSG, "run %s: call %llu's recorded result: %s",
				      r->run_id, (unsigned long long)rec.index, jerr.text);
		k = ts_tool_result_from_json(j, res, err);
		json_decref(j);
		info->replayed = true;
		return k;
	}
	if (gated(r, tool)) {
		if ((k = approve(r, rec.index, tool, args, args_text, &denied, res, err)) < 0)
			return k;
	} else {
		denied = false;
	}
	if (!denied && (k = execute(r, rec.index, tool, args, res, err)) < 0)
		return k;
	if (kind == TS_CALL_RETRY && res->data && json_is_object(res->data))
		/* at-least-once: the agent learns this call may have run before */
		json_object_set_new(res->data, "reexecuted_attempt", json_integer(rec.attempts));
	json_t *j = ts_tool_result_to_json(res);
	_cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!text)
		return ts_err(err, -ENOMEM, "out of memory");
	return ts_runlog_call_complete(r->log, r->run_id, rec.index, text, err);
}

int ts_runner_call(struct ts_runner *r, const char *key, const char *tool, json_t *args,
		   struct ts_tool_result *res, struct ts_call_info *info, struct ts_error *err)
{
	_cleanup_(json_decrefp) json_t *empty = NULL;
	_cleanup_free_ char *args_text = NULL;
	bool denied;
	int k;

	*res = (struct ts_tool_result){ 0 };
	*info = (struct ts_call_info){ .index = UINT64_MAX, .attempt = 1 };
	if (!args || json_is_null(args))
		args = empty = json_object();
	if (!ts_tool_known(r->agent->tools, tool)) {
		/* no side effect, nothing recorded; it still takes its place in the order */
		r->position++;
		return ts_toolbox_call(r->tb, tool, args, res, err);
	}
	args_text = json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	if (!args_text)
		return ts_err(err, -ENOMEM, "out of memory");
	if (r->log)
		return call_logged(r, key, tool, args, args_text, res, info, err);
	r->position++;
	if (gated(r, tool)) {
		if ((k = approve(r, UINT64_MAX, tool, args, args_text, &denied, res, err)) < 0)
			return k;
		if (denied)
			return 0;
	}
	return execute(r, UINT64_MAX, tool, args, res, err);
}
