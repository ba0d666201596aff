/* SPDX-License-Identifier: Apache-2.0 */
#include "agent.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "cleanup.h"
#include "util.h"
#include "yamlwalk.h"

/* An agent file is a short hand-written file; the caps bound what a hostile one costs. */
#define AGENT_MAX_BYTES (1024 * 1024)
#define AGENT_MAX_LIST 1024 /* entries of `env` and of `protected` */
#define NAME_MAX_LEN 64
#define IMAGE_NAME_MAX_LEN 255 /* E2B's template ids, ts_sb_info's template_id[256] */
#define PATTERN_MAX_LEN 255    /* a basename: NAME_MAX */
#define URL_MAX_LEN 2048

#define WANT_NAME                                                                                  \
	"a name of 1 to 64 letters, digits, `.`, `_` and `-`, starting with a letter or digit"
#define WANT_TIMEOUT "a duration like 30s, 5m or 2h, or 0 for none"

struct loader {
	struct ts_yaml y;
	struct ts_agent *a;
	size_t cap_env, cap_protected;
};

static const char *const top_keys[] = { "name", "sandbox" };

enum {
	K_IMAGE,
	K_BACKEND,
	K_NETWORK,
	K_APPROVAL,
	K_ENV,
	K_TOOLS,
	K_PROTECTED,
	K_POLICY,
	K_TIMEOUT,
	K_CHANNEL,
};
static const char *const sandbox_keys[] = {
	[K_IMAGE] = "image",	     [K_BACKEND] = "backend", [K_NETWORK] = "network",
	[K_APPROVAL] = "approval",   [K_ENV] = "env",	      [K_TOOLS] = "tools",
	[K_PROTECTED] = "protected", [K_POLICY] = "policy",   [K_TIMEOUT] = "timeout",
	[K_CHANNEL] = "channel",
};
static const char *const approval_keys[] = { "bash", "write" };
static const char *const channel_keys[] = { "webhook", "outbox" };
static const char *const backends[] = { "local", "e2b", "auto" };

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void ts_agent_free(struct ts_agent *a)
{
	if (!a)
		return;
	free(a->path);
	free(a->name);
	free(a->image);
	free(a->backend);
	strv_free(a->env, a->n_env);
	strv_free(a->protected_patterns, a->n_protected);
	free(a->policy);
	free(a->webhook_url);
	free(a->outbox_dir);
	memset(a, 0, sizeof(*a));
}

/* The defaults every agent starts from, sandbox aside. */
static int init_defaults(struct ts_agent *a)
{
	memset(a, 0, sizeof(*a));
	a->name = strdup("agent");
	a->env = calloc(1, sizeof(*a->env));
	a->protected_patterns = calloc(1, sizeof(*a->protected_patterns));
	a->tools = 2;
	a->approve_bash = TS_APPROVAL_ALWAYS;
	a->approve_write = TS_APPROVAL_NEVER;
	a->timeout_ms = -1;
	if (!a->name || !a->env || !a->protected_patterns) {
		ts_agent_free(a);
		return -ENOMEM;
	}
	return 0;
}

int ts_agent_default(struct ts_agent *a, struct ts_error *err)
{
	if (init_defaults(a) < 0)
		return ts_err(err, -ENOMEM, "agent configuration: out of memory");
	a->sandbox = true;
	return 0;
}

/* Append s (owned) to the NULL-terminated vector *v of *n entries. */
static int push(char ***v, size_t *n, size_t *cap, char *s)
{
	if (*n + 1 >= *cap) {
		size_t ncap = *cap < 8 ? 8 : *cap * 2;
		char **nv = reallocarray(*v, ncap, sizeof(**v));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = s;
	(*v)[*n] = NULL;
	return 0;
}

static bool contains(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i], s))
			return true;
	return false;
}

/* A scalar value for key, not empty: `key: ""` is as missing as `key:`. */
static int value(struct loader *l, const char *key, const char **ret)
{
	int r = ts_yaml_scalar(&l->y, key, ret);

	if (r == 0 && !(*ret)[0])
		return ts_yaml_err(&l->y, &l->y.key_mark, -EINVAL, "missing value for `%s`", key);
	return r;
}

static int invalid(struct loader *l, const char *s, const char *key, const char *want)
{
	char b[TS_YAML_SHOW_MAX + 4];

	return ts_yaml_err(&l->y, &l->y.ev.start_mark, -EINVAL,
			   "invalid value `%s` for `%s`: expected %s",
			   ts_yaml_show(b, s, strlen(s)), key, want);
}

static int set_string(struct loader *l, char **field, const char *s)
{
	char *dup = strdup(s);

	if (!dup)
		return ts_yaml_nomem(&l->y);
	free(*field);
	*field = dup;
	return 0;
}

static bool name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > NAME_MAX_LEN)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9');

		if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
			return false;
	}
	return true;
}

static int parse_name(struct loader *l)
{
	const char *s = NULL;
	int r = value(l, "name", &s);

	if (r < 0)
		return r;
	if (!name_valid(s))
		return invalid(l, s, "name", WANT_NAME);
	return set_string(l, &l->a->name, s);
}

/* Printable ASCII without spaces: what a name or URL may carry into a log or a request. */
static bool graphic(const char *s)
{
	for (; *s; s++)
		if (*s <= 0x20 || *s >= 0x7f)
			return false;
	return true;
}

/* A name the backend knows (a registry reference like ghcr.io/org/app:1 included), or a
 * path (starting with `/` or `.`): an image directory, relative ones beside the agent
 * file. */
static int parse_image(struct loader *l)
{
	const char *s = NULL;
	char *abs = NULL;
	int r = value(l, "sandbox.image", &s);

	if (r < 0)
		return r;
	if (s[0] != '/' && s[0] != '.') {
		if (strlen(s) > IMAGE_NAME_MAX_LEN || !graphic(s))
			return invalid(l, s, "sandbox.image",
				       "an image name of at most 255 printable characters without "
				       "spaces, or a path");
		return set_string(l, &l->a->image, s);
	}
	r = ts_yaml_path(&l->y, "sandbox.image", s, &abs);
	if (r < 0)
		return r;
	free(l->a->image);
	l->a->image = abs;
	return 0;
}

static int parse_backend(struct loader *l)
{
	const char *s = NULL;
	int r = value(l, "sandbox.backend", &s);

	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(backends); i++)
		if (!strcmp(s, backends[i]))
			return set_string(l, &l->a->backend, s);
	return invalid(l, s, "sandbox.backend", "local, e2b or auto");
}

static int approval_value(struct loader *l, const char *key, enum ts_approval *ret)
{
	const char *s = NULL;
	int r = value(l, key, &s);

	if (r < 0)
		return r;
	if (!strcmp(s, "always"))
		*ret = TS_APPROVAL_ALWAYS;
	else if (!strcmp(s, "never"))
		*ret = TS_APPROVAL_NEVER;
	else
		return invalid(l, s, key, "always or never");
	return 0;
}

/* `approval: X` is `approval: {bash: X}`: writes wait only when named. */
static int parse_approval(struct loader *l)
{
	struct ts_yaml *y = &l->y;
	unsigned seen = 0;
	int r;

	if (y->ev.type == YAML_SCALAR_EVENT)
		return approval_value(l, "sandbox.approval", &l->a->approve_bash);
	if (y->ev.type != YAML_MAPPING_START_EVENT)
		return ts_yaml_err(y, &y->key_mark, -EINVAL,
				   "expected always, never or a mapping for `sandbox.approval`, "
				   "got %s",
				   ts_yaml_kind(&y->ev));
	for (;;) {
		size_t idx = 0;

		r = ts_yaml_next(y);
		if (r < 0)
			return r;
		if (y->ev.type == YAML_MAPPING_END_EVENT)
			return 0;
		r = ts_yaml_key(y, approval_keys, ELEMENTSOF(approval_keys), "sandbox.approval",
				&seen, &idx);
		if (r < 0)
			return r;
		r = ts_yaml_next(y);
		if (r < 0)
			return r;
		r = approval_value(l, idx == 0 ? "sandbox.approval.bash" : "sandbox.approval.write",
				   idx == 0 ? &l->a->approve_bash : &l->a->approve_write);
		if (r < 0)
			return r;
	}
}

/* The runtime's own credentials: a sandbox that saw them could act as its owner. */
static bool runtime_credential(const char *name)
{
	return !strcmp(name, "E2B_API_KEY") || !strcmp(name, "E2B_ACCESS_TOKEN") ||
	       !strncmp(name, "TOREN_SANDBOX", strlen("TOREN_SANDBOX"));
}

static int env_item(struct ts_yaml *y, void *userdata)
{
	struct loader *l = userdata;
	struct ts_agent *a = l->a;
	char b[TS_YAML_SHOW_MAX + 4];
	const char *s = NULL, *eq;
	char *dup;
	int r;

	r = value(l, "sandbox.env", &s);
	if (r < 0)
		return r;
	eq = strchr(s, '=');
	/* Quote only the name: the rest may be a secret someone meant to hand over. */
	if (eq)
		return ts_yaml_err(y, &y->ev.start_mark, -EINVAL,
				   "`%s=...` in `sandbox.env`: list variable names only; the value "
				   "comes from the host's environment",
				   ts_yaml_show(b, s, (size_t)(eq - s)));
	if (!ts_env_name_valid(s))
		return ts_yaml_err(y, &y->ev.start_mark, -EINVAL,
				   "invalid name `%s` in `sandbox.env`: expected a variable name "
				   "matching [A-Za-z_][A-Za-z0-9_]*, at most 255 characters",
				   ts_yaml_show(b, s, strlen(s)));
	if (runtime_credential(s))
		return ts_yaml_err(
			y, &y->ev.start_mark, -EINVAL,
			"`%s` in `sandbox.env` is a credential of toren-sandbox itself "
			"(E2B_API_KEY, E2B_ACCESS_TOKEN and TOREN_SANDBOX* never reach a "
			"sandbox): remove it",
			s);
	if (contains(a->env, a->n_env, s))
		return ts_yaml_err(y, &y->ev.start_mark, -EINVAL,
				   "duplicate name `%s` in `sandbox.env`", s);
	if (a->n_env >= AGENT_MAX_LIST)
		return ts_yaml_err(y, &y->ev.start_mark, -EINVAL,
				   "more than %d entries in `sandbox.env`", AGENT_MAX_LIST);
	dup = strdup(s);
	if (!dup || push(&a->env, &a->n_env, &l->cap_env, dup) < 0) {
		free(dup);
		return ts_yaml_nomem(y);
	}
	return 0;
}

static int protected_item(struct ts_yaml *y, void *userdata)
{
	struct loader *l = userdata;
	struct ts_agent *a = l->a;
	char b[TS_YAML_SHOW_MAX + 4];
	const char *s = NULL;
	char *dup;
	int r;

	/* An empty quoted pattern gets the same message as a missing one. */
	if (y->ev.type == YAML_SCALAR_EVENT && y->ev.data.scalar.length == 0)
		return ts_yaml_err(y, &y->ev.start_mark, -EINVAL,
				   "empty pattern in `sandbox.protected`");
	r = ts_yaml_scalar(y, "sandbox.protected", &s);
	if (r < 0)
		return r;
	if (strchr(s, '/'))
		return ts_yaml_err(y, &y->ev.start_mark, -EINVAL,
				   "invalid pattern `%s` in `sandbox.protected`: patterns match "
				   "basenames and cannot contain `/`",
				   ts_yaml_show(b, s, strlen(s)));
	if (strlen(s) > PATTERN_MAX_LEN)
		return ts_yaml_err(y, &y->ev.start_mark, -EINVAL,
				   "invalid pattern `%s` in `sandbox.protected`: longer than %d "
				   "bytes, and a basename never is",
				   ts_yaml_show(b, s, strlen(s)), PATTERN_MAX_LEN);
	if (contains(a->protected_patterns, a->n_protected, s))
		return ts_yaml_err(y, &y->ev.start_mark, -EINVAL,
				   "duplicate pattern `%s` in `sandbox.protected`",
				   ts_yaml_show(b, s, strlen(s)));
	if (a->n_protected >= AGENT_MAX_LIST)
		return ts_yaml_err(y, &y->ev.start_mark, -EINVAL,
				   "more than %d entries in `sandbox.protected`", AGENT_MAX_LIST);
	dup = strdup(s);
	if (!dup || push(&a->protected_patterns, &a->n_protected, &l->cap_protected, dup) < 0) {
		free(dup);
		return ts_yaml_nomem(y);
	}
	return 0;
}

static int parse_tools(struct loader *l)
{
	const char *s = NULL;
	int r = value(l, "sandbox.tools", &s);

	if (r < 0)
		return r;
	if (strcmp(s, "1") && strcmp(s, "2"))
		return invalid(l, s, "sandbox.tools", "1 or 2 (the tool-set version)");
	l->a->tools = (unsigned)(s[0] - '0');
	return 0;
}

static int parse_path(struct loader *l, const char *key, char **field)
{
	const char *s = NULL;
	char *abs = NULL;
	int r = value(l, key, &s);

	if (r < 0)
		return r;
	r = ts_yaml_path(&l->y, key, s, &abs);
	if (r < 0)
		return r;
	free(*field);
	*field = abs;
	return 0;
}

static int parse_timeout(struct loader *l)
{
	unsigned long long ms = 0;
	const char *s = NULL;
	int r = value(l, "sandbox.timeout", &s);

	if (r < 0)
		return r;
	/* no sign, no blank: ts_parse_duration_ms would take what strtod takes */
	r = s[0] >= '0' && s[0] <= '9' ? ts_parse_duration_ms(s, &ms) : -EINVAL;
	if (r == 0 && ms > (unsigned long long)TS_SB_TIMEOUT_MAX_MS)
		r = -EOVERFLOW;
	if (r < 0) {
		char b[TS_YAML_SHOW_MAX + 4];

		return ts_yaml_err(&l->y, &l->y.ev.start_mark, -EINVAL,
				   "invalid value `%s` for `sandbox.timeout`: %sexpected %s",
				   ts_yaml_show(b, s, strlen(s)),
				   r == -EOVERFLOW ? "too large (ten years at most); " : "",
				   WANT_TIMEOUT);
	}
	l->a->timeout_ms = (long long)ms;
	return 0;
}

/* http:// or https://, a host, and nothing a request line or a log could trip over. */
static bool url_valid(const char *s)
{
	size_t skip;

	if (!strncasecmp(s, "http://", 7))
		skip = 7;
	else if (!strncasecmp(s, "https://", 8))
		skip = 8;
	else
		return false;
	return strlen(s) <= URL_MAX_LEN && graphic(s) && s[skip] && !strchr("/?#", s[skip]);
}

static int parse_channel(struct loader *l)
{
	struct ts_yaml *y = &l->y;
	struct ts_agent *a = l->a;
	yaml_mark_t at = y->key_mark;
	unsigned seen = 0;
	bool empty;
	int r;

	r = ts_yaml_expect(y, "sandbox.channel", YAML_MAPPING_START_EVENT, &empty);
	if (r < 0)
		return r;
	for (; !empty;) {
		const char *s = NULL;
		size_t idx = 0;

		r = ts_yaml_next(y);
		if (r < 0)
			return r;
		if (y->ev.type == YAML_MAPPING_END_EVENT)
			break;
		r = ts_yaml_key(y, channel_keys, ELEMENTSOF(channel_keys), "sandbox.channel", &seen,
				&idx);
		if (r < 0)
			return r;
		if (seen == 3)
			return ts_yaml_err(y, &y->ev.start_mark, -EINVAL,
					   "`sandbox.channel` takes one of `webhook` and `outbox`, "
					   "not both");
		r = ts_yaml_next(y);
		if (r < 0)
			return r;
		if (idx == 1) {
			r = parse_path(l, "sandbox.channel.outbox", &a->outbox_dir);
		} else {
			r = value(l, "sandbox.channel.webhook", &s);
			if (r == 0 && !url_valid(s))
				r = invalid(l, s, "sandbox.channel.webhook",
					    "an http:// or https:// URL with a host, at most 2048 "
					    "printable characters without spaces");
			if (r == 0)
				r = set_string(l, &a->webhook_url, s);
		}
		if (r < 0)
			return r;
	}
	if (!seen)
		return ts_yaml_err(y, &at, -EINVAL,
				   "`sandbox.channel` needs `webhook` (a URL) or `outbox` (a "
				   "directory)");
	return 0;
}

static int parse_sandbox_key(struct loader *l, size_t idx)
{
	struct ts_agent *a = l->a;

	switch (idx) {
	case K_IMAGE:
		return parse_image(l);
	case K_BACKEND:
		return parse_backend(l);
	case K_NETWORK:
		return ts_yaml_bool(&l->y, "sandbox.network", &a->network);
	case K_APPROVAL:
		return parse_approval(l);
	case K_ENV:
		return ts_yaml_each(&l->y, "sandbox.env", env_item, l);
	case K_TOOLS:
		return parse_tools(l);
	case K_PROTECTED:
		return ts_yaml_each(&l->y, "sandbox.protected", protected_item, l);
	case K_POLICY:
		return parse_path(l, "sandbox.policy", &a->policy);
	case K_TIMEOUT:
		return parse_timeout(l);
	default:
		return parse_channel(l);
	}
}

/* `sandbox`: true, false, or a mapping (a sandbox with those settings). */
static int parse_sandbox(struct loader *l)
{
	struct ts_yaml *y = &l->y;
	const yaml_event_t *ev = &y->ev;
	char b[TS_YAML_SHOW_MAX + 4];
	unsigned seen = 0;
	int r;

	if (ev->type == YAML_SCALAR_EVENT) {
		const char *s = (const char *)ev->data.scalar.value;

		if (ts_yaml_is_null(ev))
			return ts_yaml_err(y, &y->key_mark, -EINVAL,
					   "missing value for `sandbox`: expected true, false or a "
					   "mapping");
		if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		    (!strcmp(s, "true") || !strcmp(s, "false"))) {
			l->a->sandbox = !strcmp(s, "true");
			return 0;
		}
		return ts_yaml_err(y, &ev->start_mark, -EINVAL,
				   "invalid value `%s` for `sandbox`: expected true or false "
				   "(unquoted), or a mapping",
				   ts_yaml_show(b, s, ev->data.scalar.length));
	}
	if (ev->type != YAML_MAPPING_START_EVENT)
		return ts_yaml_err(y, &y->key_mark, -EINVAL,
				   "expected true, false or a mapping for `sandbox`, got %s",
				   ts_yaml_kind(ev));
	l->a->sandbox = true;
	for (;;) {
		size_t idx = 0;

		r = ts_yaml_next(y);
		if (r < 0)
			return r;
		if (y->ev.type == YAML_MAPPING_END_EVENT)
			return 0;
		r = ts_yaml_key(y, sandbox_keys, ELEMENTSOF(sandbox_keys), "sandbox", &seen, &idx);
		if (r < 0)
			return r;
		r = ts_yaml_next(y);
		if (r < 0)
			return r;
		r = parse_sandbox_key(l, idx);
		if (r < 0)
			return r;
	}
}

static int parse_top(struct ts_yaml *y, void *userdata)
{
	struct loader *l = userdata;
	unsigned seen = 0;
	int r;

	for (;;) {
		size_t idx = 0;

		r = ts_yaml_next(y);
		if (r < 0)
			return r;
		if (y->ev.type == YAML_MAPPING_END_EVENT)
			return 0;
		r = ts_yaml_key(y, top_keys, ELEMENTSOF(top_keys), NULL, &seen, &idx);
		if (r < 0)
			return r;
		r = ts_yaml_next(y);
		if (r < 0)
			return r;
		r = idx == 0 ? parse_name(l) : parse_sandbox(l);
		if (r < 0)
			return r;
	}
}

/* The file's own path, absolute (what a run records), without resolving links. */
static int absolute(const char *path, char **ret)
{
	_cleanup_free_ char *cwd = NULL;

	if (path[0] == '/') {
		*ret = strdup(path);
		return *ret ? 0 : -ENOMEM;
	}
	cwd = getcwd(NULL, 0);
	if (!cwd)
		return -errno;
	while (path[0] == '.' && path[1] == '/')
		path += 2 + strspn(path + 2, "/");
	if (asprintf(ret, "%s/%s", cwd, path) < 0) {
		*ret = NULL;
		return -ENOMEM;
	}
	return 0;
}

int ts_agent_load(const char *path, struct ts_agent *a, struct ts_error *err)
{
	_cleanup_(ts_agent_freep) struct ts_agent t = { 0 };
	_cleanup_free_ char *buf = NULL;
	struct loader l = { .a = &t };
	size_t len = 0;
	int r;

	memset(a, 0, sizeof(*a));
	r = ts_yaml_read_file(path, AGENT_MAX_BYTES, &buf, &len, err);
	if (r < 0)
		return r;
	if (init_defaults(&t) < 0)
		return ts_err(err, -ENOMEM, "`%s`: out of memory", path);
	r = absolute(path, &t.path);
	if (r < 0)
		return ts_err_errno(err, r, "`%s`: resolve its path", path);
	r = ts_yaml_init(&l.y, path, buf, len, err);
	if (r == 0)
		r = ts_yaml_document(&l.y, parse_top, &l);
	ts_yaml_done(&l.y);
	if (r < 0)
		return r;
	*a = t;
	memset(&t, 0, sizeof(t));
	return 0;
}

/* A string as JSON; bytes that are not UTF-8 (a path from getcwd may have them) become
 * `?`, so the record stays valid JSON. */
static json_t *jstr(const char *s)
{
	_cleanup_free_ char *copy = NULL;
	json_t *j;

	if (!s)
		return json_null();
	j = json_string(s);
	if (j)
		return j;
	copy = strdup(s);
	if (!copy)
		return NULL;
	for (char *c = copy; *c; c++)
		if ((unsigned char)*c >= 0x80)
			*c = '?';
	return json_string(copy);
}

static json_t *jstrv(char *const *v, size_t n)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < n; i++)
		if (json_array_append_new(arr, jstr(v[i])) < 0) {
			json_decref(arr);
			return NULL;
		}
	return arr;
}

static const char *approval_name(enum ts_approval v)
{
	return v == TS_APPROVAL_NEVER ? "never" : "always";
}

char *ts_agent_to_json(const struct ts_agent *a)
{
	json_t *o = json_object(), *channel;
	char *text;
	int bad = 0;

	if (!o)
		return NULL;
	if (a->webhook_url)
		channel = json_pack("{s:o}", "webhook", jstr(a->webhook_url));
	else if (a->outbox_dir)
		channel = json_pack("{s:o}", "outbox", jstr(a->outbox_dir));
	else
		channel = json_null();
	/* json_object_set_new takes (and on failure frees) the value; a NULL one fails */
	bad |= json_object_set_new(o, "path", jstr(a->path));
	bad |= json_object_set_new(o, "name", jstr(a->name));
	bad |= json_object_set_new(o, "sandbox", json_boolean(a->sandbox));
	bad |= json_object_set_new(o, "image", jstr(a->image));
	bad |= json_object_set_new(o, "backend", jstr(a->backend));
	bad |= json_object_set_new(o, "network", json_boolean(a->network));
	bad |= json_object_set_new(o, "approval",
				   json_pack("{s:s,s:s}", "bash", approval_name(a->approve_bash),
					     "write", approval_name(a->approve_write)));
	bad |= json_object_set_new(o, "env", jstrv(a->env, a->n_env));
	bad |= json_object_set_new(o, "tools", json_integer(a->tools));
	bad |= json_object_set_new(o, "protected", jstrv(a->protected_patterns, a->n_protected));
	bad |= json_object_set_new(o, "policy", jstr(a->policy));
	bad |= json_object_set_new(o, "timeout_ms", json_integer(a->timeout_ms));
	bad |= json_object_set_new(o, "channel", channel);
	text = bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return text;
}
