/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ts_agent_load, ts_agent_default, ts_agent_to_json, ts_agent_free: every key of
 * toren-sandbox.yaml(5), the defaults, relative paths resolved beside the agent file,
 * every error class (errno, file, exact line, key), the bounds, and the JSON record.
 * Files are written to a temporary directory, removed at the end.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "tap.h"

static char dir[] = "/tmp/ts-agent-test-XXXXXX";

static char *path_of(const char *name)
{
	char *s;

	if (asprintf(&s, "%s/%s", dir, name) < 0)
		abort();
	return s;
}

static char *write_file(const char *name, const char *text, size_t len)
{
	char *path = path_of(name);
	FILE *f = fopen(path, "w");

	if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0)
		abort();
	return path;
}

static int load_text(const char *text, struct ts_agent *a, struct ts_error *err, char **path)
{
	*path = write_file("agent.yaml", text, strlen(text));
	return ts_agent_load(*path, a, err);
}

static bool zeroed(const struct ts_agent *a)
{
	static const struct ts_agent zero;

	return !memcmp(a, &zero, sizeof(zero));
}

struct bad {
	const char *what;
	const char *yaml;
	unsigned line;
	const char *needle; /* the key (or the phrase) the message must name */
};

static const struct bad bad_cases[] = {
	{ "unknown top-level key", "name: a\nnmae: b\n", 2, "unknown key `nmae`" },
	{ "unknown key in sandbox", "sandbox:\n  network: false\n  imgae: host\n", 3,
	  "unknown key `imgae` in `sandbox`" },
	{ "unknown key in approval", "sandbox:\n  approval:\n    bsh: never\n", 3,
	  "unknown key `bsh` in `sandbox.approval`" },
	{ "unknown key in channel", "sandbox:\n  channel:\n    mail: a@b\n", 3,
	  "unknown key `mail` in `sandbox.channel`" },
	{ "duplicate top-level key", "name: a\nsandbox: true\nname: b\n", 3,
	  "duplicate key `name`" },
	{ "duplicate sandbox key", "sandbox:\n  tools: 1\n  tools: 2\n", 3,
	  "duplicate key `tools` in `sandbox`" },
	{ "duplicate approval key", "sandbox:\n  approval: {bash: never, bash: always}\n", 2,
	  "duplicate key `bash` in `sandbox.approval`" },
	{ "non-scalar key", "? [a]\n: 1\n", 1, "expected a scalar key" },
	{ "name: a mapping", "name:\n  x: 1\n", 1, "expected a scalar for `name`, got a mapping" },
	{ "name: null", "name:\nsandbox: true\n", 1, "missing value for `name`" },
	{ "name with a space", "name: my agent\n", 1, "invalid value `my agent` for `name`" },
	{ "name starting with `-`", "name: -x\n", 1, "invalid value `-x` for `name`" },
	{ "name of 65 characters",
	  "name: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n", 1,
	  "for `name`: expected a name of 1 to 64" },
	{ "sandbox: a sequence", "sandbox:\n  - true\n", 1,
	  "expected true, false or a mapping for `sandbox`, got a sequence" },
	{ "sandbox: null", "sandbox:\n", 1, "missing value for `sandbox`" },
	{ "sandbox: yes", "name: a\nsandbox: yes\n", 2, "invalid value `yes` for `sandbox`" },
	{ "sandbox: quoted true", "sandbox: \"true\"\n", 1, "invalid value `true` for `sandbox`" },
	{ "image: a mapping", "sandbox:\n  image: {a: 1}\n", 2,
	  "expected a scalar for `sandbox.image`, got a mapping" },
	{ "image with a space", "sandbox:\n  image: \"my image\"\n", 2,
	  "invalid value `my image` for `sandbox.image`" },
	{ "backend: docker", "sandbox:\n  backend: docker\n", 2,
	  "invalid value `docker` for `sandbox.backend`: expected local, e2b or auto" },
	{ "network: yes", "sandbox:\n  network: yes\n", 2,
	  "invalid value `yes` for `sandbox.network`: expected true or false" },
	{ "network: quoted", "sandbox:\n  network: 'false'\n", 2,
	  "quoted value for `sandbox.network`" },
	{ "approval: sometimes", "sandbox:\n  approval: sometimes\n", 2,
	  "invalid value `sometimes` for `sandbox.approval`: expected always or never" },
	{ "approval.write: maybe", "sandbox:\n  approval:\n    bash: never\n    write: maybe\n", 4,
	  "invalid value `maybe` for `sandbox.approval.write`" },
	{ "approval: a sequence", "sandbox:\n  approval: [always]\n", 2,
	  "expected always, never or a mapping for `sandbox.approval`, got a sequence" },
	{ "approval: null", "sandbox:\n  approval:\n", 2, "missing value for `sandbox.approval`" },
	{ "env: a scalar", "sandbox:\n  env: HOME\n", 2,
	  "expected a sequence for `sandbox.env`, got a scalar" },
	{ "env: a bad name", "sandbox:\n  env:\n    - HOME\n    - 1X\n", 4,
	  "invalid name `1X` in `sandbox.env`" },
	{ "env: NAME=VALUE", "sandbox:\n  env: [HOME, \"TOKEN=hunter2\"]\n", 2,
	  "`TOKEN=...` in `sandbox.env`: list variable names only" },
	{ "env: a mapping entry", "sandbox:\n  env:\n    - {A: 1}\n", 3,
	  "expected a scalar for `sandbox.env`, got a mapping" },
	{ "env: E2B_API_KEY", "sandbox:\n  env:\n    - E2B_API_KEY\n", 3,
	  "`E2B_API_KEY` in `sandbox.env` is a credential of toren-sandbox itself" },
	{ "env: E2B_ACCESS_TOKEN", "sandbox:\n  env: [E2B_ACCESS_TOKEN]\n", 2,
	  "`E2B_ACCESS_TOKEN` in `sandbox.env` is a credential" },
	{ "env: TOREN_SANDBOX", "sandbox:\n  env: [A, TOREN_SANDBOX]\n", 2,
	  "`TOREN_SANDBOX` in `sandbox.env` is a credential" },
	{ "env: TOREN_SANDBOX_STATE", "sandbox:\n  env:\n\n    - TOREN_SANDBOX_STATE\n", 4,
	  "`TOREN_SANDBOX_STATE` in `sandbox.env` is a credential" },
	{ "env: a duplicate", "sandbox:\n  env:\n    - A\n    - B\n    - A\n", 5,
	  "duplicate name `A` in `sandbox.env`" },
	{ "tools: 3", "sandbox:\n  tools: 3\n", 2,
	  "invalid value `3` for `sandbox.tools`: expected 1 or 2" },
	{ "tools: two", "sandbox:\n  tools: two\n", 2, "invalid value `two` for `sandbox.tools`" },
	{ "tools: 02", "sandbox:\n  tools: 02\n", 2, "invalid value `02` for `sandbox.tools`" },
	{ "protected: a mapping", "sandbox:\n  protected: {a: b}\n", 2,
	  "expected a sequence for `sandbox.protected`, got a mapping" },
	{ "protected: a slash", "sandbox:\n  protected:\n    - \"*.key\"\n    - a/b\n", 4,
	  "invalid pattern `a/b` in `sandbox.protected`" },
	{ "protected: empty", "sandbox:\n  protected: [\"\"]\n", 2,
	  "empty pattern in `sandbox.protected`" },
	{ "protected: a duplicate", "sandbox:\n  protected: [x, y, x]\n", 2,
	  "duplicate pattern `x` in `sandbox.protected`" },
	{ "policy: null", "sandbox:\n  policy: ~\n", 2, "missing value for `sandbox.policy`" },
	{ "policy: a sequence", "sandbox:\n  policy: [a]\n", 2,
	  "expected a scalar for `sandbox.policy`, got a sequence" },
	{ "timeout: 5x", "sandbox:\n  timeout: 5x\n", 2,
	  "invalid value `5x` for `sandbox.timeout`: expected a duration" },
	{ "timeout: -1", "sandbox:\n  timeout: -1\n", 2,
	  "invalid value `-1` for `sandbox.timeout`" },
	{ "timeout: 20 years", "sandbox:\n  timeout: 175200h\n", 2,
	  "`sandbox.timeout`: too large" },
	{ "timeout: 0.0001", "sandbox:\n  timeout: 0.0001\n", 2,
	  "invalid value `0.0001` for `sandbox.timeout`" },
	{ "channel: a scalar", "sandbox:\n  channel: ./outbox\n", 2,
	  "expected a mapping for `sandbox.channel`, got a scalar" },
	{ "channel: null", "sandbox:\n  tools: 2\n  channel:\n", 3,
	  "`sandbox.channel` needs `webhook` (a URL) or `outbox`" },
	{ "channel: empty", "sandbox:\n  channel: {}\n", 2, "`sandbox.channel` needs `webhook`" },
	{ "channel: both",
	  "sandbox:\n  channel:\n    webhook: http://127.0.0.1:1/h\n    outbox: o\n", 4,
	  "`sandbox.channel` takes one of `webhook` and `outbox`, not both" },
	{ "webhook: ftp://", "sandbox:\n  channel:\n    webhook: ftp://127.0.0.1/x\n", 3,
	  "invalid value `ftp://127.0.0.1/x` for `sandbox.channel.webhook`" },
	{ "webhook: no host", "sandbox:\n  channel:\n    webhook: http:///x\n", 3,
	  "for `sandbox.channel.webhook`: expected an http:// or https:// URL" },
	{ "webhook: a space", "sandbox:\n  channel:\n    webhook: \"http://a/b c\"\n", 3,
	  "for `sandbox.channel.webhook`" },
	{ "outbox: null", "sandbox:\n  channel:\n    outbox:\n", 3,
	  "missing value for `sandbox.channel.outbox`" },
	{ "image: empty", "sandbox:\n  image: \"\"\n", 2, "missing value for `sandbox.image`" },
	{ "policy: empty", "sandbox:\n  policy: ''\n", 2, "missing value for `sandbox.policy`" },
	{ "outbox: empty", "sandbox:\n  channel:\n    outbox: \"\"\n", 3,
	  "missing value for `sandbox.channel.outbox`" },
	{ "name: empty", "name: ''\n", 1, "missing value for `name`" },
	{ "env: an empty name", "sandbox:\n  env:\n    - \"\"\n", 3,
	  "missing value for `sandbox.env`" },
	{ "a NUL byte", "sandbox:\n  image: \"a\\0b\"\n", 2,
	  "NUL byte in the value of `sandbox.image`" },
	{ "two documents", "sandbox: true\n---\nsandbox: false\n", 2, "one yaml document" },
	{ "a sequence at the top", "- sandbox\n", 1, "expected a mapping at the top level" },
	{ "a scalar at the top", "sandbox\n", 1,
	  "expected a mapping at the top level, got a scalar" },
	{ "a syntax error", "sandbox: true\n]\n", 2, "invalid yaml" },
	{ "an anchor", "sandbox: &s\n  tools: 1\n", 1, "anchors are not supported" },
	{ "an alias", "name: a\nsandbox: *s\n", 2, "aliases are not supported" },
};

static void test_bad(const struct bad *c)
{
	struct ts_error err = { 0 };
	struct ts_agent a;
	char want[PATH_MAX + 32], *path;
	int r;

	memset(&a, 0x5a, sizeof(a));
	r = load_text(c->yaml, &a, &err, &path);
	snprintf(want, sizeof(want), "`%s`:%u: ", path, c->line);
	ok(r == -EINVAL && err.code == EINVAL && strstr(err.msg, want) == err.msg &&
		   strstr(err.msg, c->needle) && zeroed(&a),
	   "%s: %d, \"%s\"", c->what, r, err.msg);
	ts_agent_free(&a);
	free(path);
}

static const char full_yaml[] = "# every key\n"
				"name: builder\n"
				"sandbox:\n"
				"  image: host\n"
				"  backend: local\n"
				"  network: true\n"
				"  approval: { bash: never, write: always }\n"
				"  env: [MY_APP_DB_URL, _X1]\n"
				"  tools: 1\n"
				"  protected:\n"
				"    - \"*.key\"\n"
				"    - secrets.txt\n"
				"  policy: policy.yaml\n"
				"  timeout: 30m\n"
				"  channel:\n"
				"    webhook: https://127.0.0.1:8080/hook?x=1\n";

static void test_full(void)
{
	struct ts_error err = { 0 };
	struct ts_agent a;
	char *path, *policy = path_of("policy.yaml");
	int r;

	r = load_text(full_yaml, &a, &err, &path);
	ok(r == 0, "every key loads: %s", r ? err.msg : "ok");
	ok(a.path && !strcmp(a.path, path), "path: %s", a.path);
	ok(a.name && !strcmp(a.name, "builder"), "name: builder");
	ok(a.sandbox, "sandbox: a mapping is a sandbox");
	ok(a.image && !strcmp(a.image, "host"), "image: a name stays a name");
	ok(a.backend && !strcmp(a.backend, "local"), "backend: local");
	ok(a.network, "network: true");
	ok(a.approve_bash == TS_APPROVAL_NEVER && a.approve_write == TS_APPROVAL_ALWAYS,
	   "approval: {bash: never, write: always}");
	ok(a.n_env == 2 && a.env && !strcmp(a.env[0], "MY_APP_DB_URL") &&
		   !strcmp(a.env[1], "_X1") && !a.env[2],
	   "env: two names in order, NULL-terminated");
	ok(a.tools == 1, "tools: 1");
	ok(a.n_protected == 2 && !strcmp(a.protected_patterns[0], "*.key") &&
		   !strcmp(a.protected_patterns[1], "secrets.txt") && !a.protected_patterns[2],
	   "protected: two patterns, NULL-terminated");
	ok(a.policy && !strcmp(a.policy, policy), "policy resolves beside the file: %s", a.policy);
	ok(a.timeout_ms == 30 * 60 * 1000, "timeout: 30m is %lld ms", a.timeout_ms);
	ok(a.webhook_url && !strcmp(a.webhook_url, "https://127.0.0.1:8080/hook?x=1") &&
		   !a.outbox_dir,
	   "channel: webhook");
	ts_agent_free(&a);
	ok(zeroed(&a), "ts_agent_free zeroes");
	ts_agent_free(&a);
	free(path);
	free(policy);
}

static bool is_default_sandbox(const struct ts_agent *a)
{
	return a->name && !strcmp(a->name, "agent") && a->sandbox && !a->image && !a->backend &&
	       !a->network && a->approve_bash == TS_APPROVAL_ALWAYS &&
	       a->approve_write == TS_APPROVAL_NEVER && a->env && !a->env[0] && !a->n_env &&
	       a->tools == 2 && a->protected_patterns && !a->protected_patterns[0] &&
	       !a->n_protected && !a->policy && a->timeout_ms == -1 && !a->webhook_url &&
	       !a->outbox_dir;
}

static void test_defaults(void)
{
	struct ts_error err = { 0 };
	struct ts_agent a, d;
	char *path, *ja, *jd;
	int r;

	r = ts_agent_default(&d, &err);
	ok(r == 0 && is_default_sandbox(&d) && !d.path,
	   "ts_agent_default: name agent, tools 2, bash always, write never, timeout -1, "
	   "empty env");

	r = load_text("sandbox: true\n", &a, &err, &path);
	ok(r == 0 && is_default_sandbox(&a), "`sandbox: true` is the default: %s",
	   r ? err.msg : "ok");
	free(a.path);
	a.path = NULL;
	ja = ts_agent_to_json(&a);
	jd = ts_agent_to_json(&d);
	ok(ja && jd && !strcmp(ja, jd), "their records match but for the path: %s", ja);
	free(ja);
	free(jd);
	ts_agent_free(&a);
	free(path);

	r = load_text("sandbox: {}\n", &a, &err, &path);
	ok(r == 0 && is_default_sandbox(&a), "`sandbox: {}` is the default too");
	ts_agent_free(&a);
	free(path);

	r = load_text("name: n\nsandbox: false\n", &a, &err, &path);
	ok(r == 0 && !a.sandbox && !strcmp(a.name, "n") && a.tools == 2 && a.env && !a.env[0],
	   "`sandbox: false` parses: no sandbox, defaults otherwise");
	ts_agent_free(&a);
	free(path);

	r = load_text("# nothing\n", &a, &err, &path);
	ok(r == 0 && !a.sandbox && !strcmp(a.name, "agent"),
	   "a file of comments: name agent, no sandbox (%s)", r ? err.msg : "ok");
	ts_agent_free(&a);
	free(path);

	r = load_text("name: only-a-name\n", &a, &err, &path);
	ok(r == 0 && !a.sandbox, "without `sandbox` there is no sandbox");
	ts_agent_free(&a);
	free(path);

	r = load_text("sandbox:\n  env:\n  protected: ~\n", &a, &err, &path);
	ok(r == 0 && a.sandbox && a.env && !a.n_env && a.protected_patterns && !a.n_protected,
	   "null lists are empty lists: %s", r ? err.msg : "ok");
	ts_agent_free(&a);
	free(path);
	ts_agent_free(&d);
}

static void test_values(void)
{
	static const struct {
		const char *yaml;
		enum ts_approval bash, write;
	} approvals[] = {
		{ "sandbox:\n  approval: never\n", TS_APPROVAL_NEVER, TS_APPROVAL_NEVER },
		{ "sandbox:\n  approval: always\n", TS_APPROVAL_ALWAYS, TS_APPROVAL_NEVER },
		{ "sandbox:\n  approval: {write: always}\n", TS_APPROVAL_ALWAYS,
		  TS_APPROVAL_ALWAYS },
		{ "sandbox:\n  approval:\n    bash: never\n", TS_APPROVAL_NEVER,
		  TS_APPROVAL_NEVER },
		{ "sandbox:\n  approval: {bash: always, write: always}\n", TS_APPROVAL_ALWAYS,
		  TS_APPROVAL_ALWAYS },
	};
	static const struct {
		const char *value;
		long long ms;
	} timeouts[] = {
		{ "30s", 30000 }, { "5m", 300000 }, { "1h", 3600000 },
		{ "0", 0 },	  { "90", 90000 },  { "1.5", 1500 },
	};
	static const char *const backends[] = { "local", "e2b", "auto" };
	struct ts_error err = { 0 };
	struct ts_agent a;
	char *path, yaml[256];
	int r;

	for (size_t i = 0; i < sizeof(approvals) / sizeof(approvals[0]); i++) {
		r = load_text(approvals[i].yaml, &a, &err, &path);
		ok(r == 0 && a.approve_bash == approvals[i].bash &&
			   a.approve_write == approvals[i].write,
		   "approval %zu: bash %d write %d", i, a.approve_bash, a.approve_write);
		ts_agent_free(&a);
		free(path);
	}
	for (size_t i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++) {
		snprintf(yaml, sizeof(yaml), "sandbox:\n  timeout: %s\n", timeouts[i].value);
		r = load_text(yaml, &a, &err, &path);
		ok(r == 0 && a.timeout_ms == timeouts[i].ms, "timeout %s is %lld ms (%s)",
		   timeouts[i].value, a.timeout_ms, r ? err.msg : "ok");
		ts_agent_free(&a);
		free(path);
	}
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		snprintf(yaml, sizeof(yaml), "sandbox:\n  backend: %s\n", backends[i]);
		r = load_text(yaml, &a, &err, &path);
		ok(r == 0 && a.backend && !strcmp(a.backend, backends[i]), "backend %s",
		   backends[i]);
		ts_agent_free(&a);
		free(path);
	}
	r = load_text("sandbox:\n  network: false\n  tools: 2\n", &a, &err, &path);
	ok(r == 0 && !a.network && a.tools == 2, "network false, tools 2");
	ts_agent_free(&a);
	free(path);
	r = load_text("name: A.b_c-9\nsandbox: false\n", &a, &err, &path);
	ok(r == 0 && !strcmp(a.name, "A.b_c-9"), "name with `.`, `_`, `-`: %s", r ? err.msg : "ok");
	ts_agent_free(&a);
	free(path);
	r = load_text("sandbox:\n  channel:\n    webhook: http://127.0.0.1:8080/hook\n", &a, &err,
		      &path);
	ok(r == 0 && !strcmp(a.webhook_url, "http://127.0.0.1:8080/hook") && !a.outbox_dir,
	   "webhook: http:// too");
	ts_agent_free(&a);
	free(path);
}

static void test_paths(void)
{
	struct ts_error err = { 0 };
	struct ts_agent a;
	char *path, *want, cwd[PATH_MAX], old[PATH_MAX];
	int r;

	r = load_text("sandbox:\n  policy: ./p/../policy.yaml\n  image: ./rootfs\n"
		      "  channel:\n    outbox: out\n",
		      &a, &err, &path);
	want = path_of("p/../policy.yaml");
	ok(r == 0 && a.policy && !strcmp(a.policy, want), "`./p/../policy.yaml`: %s", a.policy);
	free(want);
	want = path_of("rootfs");
	ok(r == 0 && a.image && !strcmp(a.image, want), "an image with a `/` is a path: %s",
	   a.image);
	free(want);
	want = path_of("out");
	ok(r == 0 && a.outbox_dir && !strcmp(a.outbox_dir, want) && !a.webhook_url,
	   "outbox resolves beside the file: %s", a.outbox_dir);
	free(want);
	ts_agent_free(&a);
	free(path);

	r = load_text("sandbox:\n  policy: /etc/toren/p.yaml\n  channel: {outbox: /var/out}\n", &a,
		      &err, &path);
	ok(r == 0 && !strcmp(a.policy, "/etc/toren/p.yaml") && !strcmp(a.outbox_dir, "/var/out"),
	   "absolute paths stay as they are");
	ts_agent_free(&a);
	free(path);

	/* A relative agent path: everything comes out absolute all the same. */
	free(write_file("rel.yaml", "sandbox:\n  policy: pol.yaml\n", 27));
	r = -1;
	if (getcwd(old, sizeof(old)) && chdir(dir) == 0 && getcwd(cwd, sizeof(cwd))) {
		r = ts_agent_load("./rel.yaml", &a, &err);
		if (chdir(old) < 0)
			abort();
	}
	if (asprintf(&want, "%s/pol.yaml", cwd) < 0)
		abort();
	ok(r == 0 && a.policy && !strcmp(a.policy, want), "relative agent file: policy `%s`",
	   a.policy);
	free(want);
	if (asprintf(&want, "%s/rel.yaml", cwd) < 0)
		abort();
	ok(r == 0 && a.path && !strcmp(a.path, want), "relative agent file: path `%s`", a.path);
	free(want);
	ts_agent_free(&a);
}

static void test_json(void)
{
	struct ts_error err = { 0 };
	struct ts_agent a;
	json_error_t jerr;
	json_t *j = NULL, *v;
	char *path, *text, *policy = path_of("policy.yaml"), *outbox = path_of("ob");
	int r;

	r = load_text(full_yaml, &a, &err, &path);
	text = r == 0 ? ts_agent_to_json(&a) : NULL;
	if (text)
		j = json_loads(text, 0, &jerr);
	ok(j && json_is_object(j), "to_json is a JSON object: %s", text ? text : "(null)");
	ok(j && json_object_size(j) == 13, "13 fields");
	ok(j && !strcmp(json_string_value(json_object_get(j, "path")) ?: "", path), "path");
	ok(j && !strcmp(json_string_value(json_object_get(j, "name")) ?: "", "builder"), "name");
	ok(j && json_is_true(json_object_get(j, "sandbox")), "sandbox");
	ok(j && !strcmp(json_string_value(json_object_get(j, "image")) ?: "", "host"), "image");
	ok(j && !strcmp(json_string_value(json_object_get(j, "backend")) ?: "", "local"),
	   "backend");
	ok(j && json_is_true(json_object_get(j, "network")), "network");
	v = j ? json_object_get(j, "approval") : NULL;
	ok(v && !strcmp(json_string_value(json_object_get(v, "bash")) ?: "", "never") &&
		   !strcmp(json_string_value(json_object_get(v, "write")) ?: "", "always"),
	   "approval");
	v = j ? json_object_get(j, "env") : NULL;
	ok(json_array_size(v) == 2 &&
		   !strcmp(json_string_value(json_array_get(v, 0)) ?: "", "MY_APP_DB_URL") &&
		   !strcmp(json_string_value(json_array_get(v, 1)) ?: "", "_X1"),
	   "env");
	ok(j && json_integer_value(json_object_get(j, "tools")) == 1, "tools");
	v = j ? json_object_get(j, "protected") : NULL;
	ok(json_array_size(v) == 2 &&
		   !strcmp(json_string_value(json_array_get(v, 0)) ?: "", "*.key"),
	   "protected");
	ok(j && !strcmp(json_string_value(json_object_get(j, "policy")) ?: "", policy), "policy");
	ok(j && json_integer_value(json_object_get(j, "timeout_ms")) == 1800000, "timeout_ms");
	v = j ? json_object_get(j, "channel") : NULL;
	ok(json_object_size(v) == 1 &&
		   !strcmp(json_string_value(json_object_get(v, "webhook")) ?: "",
			   "https://127.0.0.1:8080/hook?x=1"),
	   "channel: {webhook}");
	json_decref(j);
	j = NULL;
	free(text);
	ts_agent_free(&a);
	free(path);

	r = load_text("sandbox:\n  channel: {outbox: ob}\n", &a, &err, &path);
	text = r == 0 ? ts_agent_to_json(&a) : NULL;
	if (text)
		j = json_loads(text, 0, &jerr);
	v = j ? json_object_get(j, "channel") : NULL;
	ok(json_object_size(v) == 1 &&
		   !strcmp(json_string_value(json_object_get(v, "outbox")) ?: "", outbox),
	   "channel: {outbox}: %s", text);
	ok(j && json_is_null(json_object_get(j, "image")) &&
		   json_is_null(json_object_get(j, "backend")) &&
		   json_is_null(json_object_get(j, "policy")) &&
		   json_integer_value(json_object_get(j, "timeout_ms")) == -1 &&
		   json_array_size(json_object_get(j, "env")) == 0,
	   "unset fields are null, -1, []");
	json_decref(j);
	free(text);
	ts_agent_free(&a);
	free(path);

	r = ts_agent_default(&a, &err);
	text = r == 0 ? ts_agent_to_json(&a) : NULL;
	ok(text && strstr(text, "\"path\":null") && strstr(text, "\"channel\":null"),
	   "the default's record: %s", text);
	free(text);
	ts_agent_free(&a);
	free(policy);
	free(outbox);
}

static void test_bounds(void)
{
	struct ts_error err = { 0 };
	struct ts_agent a;
	char *path, *buf, want[PATH_MAX + 32];
	size_t len = 0, cap = 64 * 1024;
	int r;

	/* 1024 env names load, 1025 do not */
	buf = malloc(cap);
	if (!buf)
		abort();
	len = (size_t)snprintf(buf, cap, "sandbox:\n  env:\n");
	for (int i = 0; i < 1024; i++)
		len += (size_t)snprintf(buf + len, cap - len, "    - V%d\n", i);
	path = write_file("env.yaml", buf, len);
	r = ts_agent_load(path, &a, &err);
	ok(r == 0 && a.n_env == 1024 && a.env[1024] == NULL, "1024 env names: %s",
	   r ? err.msg : "ok");
	ts_agent_free(&a);
	len += (size_t)snprintf(buf + len, cap - len, "    - V1024\n");
	free(path);
	path = write_file("env.yaml", buf, len);
	r = ts_agent_load(path, &a, &err);
	snprintf(want, sizeof(want), "`%s`:1027: ", path);
	ok(r == -EINVAL && strstr(err.msg, want) &&
		   strstr(err.msg, "more than 1024 entries in `sandbox.env`"),
	   "1025 env names: %s", err.msg);
	free(path);

	len = (size_t)snprintf(buf, cap, "sandbox:\n  protected:\n");
	for (int i = 0; i <= 1024; i++)
		len += (size_t)snprintf(buf + len, cap - len, "    - p%d\n", i);
	path = write_file("prot.yaml", buf, len);
	r = ts_agent_load(path, &a, &err);
	ok(r == -EINVAL && strstr(err.msg, "more than 1024 entries in `sandbox.protected`"),
	   "1025 protected patterns: %s", err.msg);
	free(path);
	free(buf);

	/* exactly 1 MiB loads, one byte more is refused */
	cap = 1024 * 1024 + 1;
	buf = malloc(cap);
	if (!buf)
		abort();
	memset(buf, ' ', cap);
	memcpy(buf, "sandbox: true\n#", 15);
	buf[cap - 2] = '\n';
	path = write_file("big.yaml", buf, cap - 1);
	r = ts_agent_load(path, &a, &err);
	ok(r == 0 && a.sandbox, "exactly 1 MiB: %s", r ? err.msg : "ok");
	ts_agent_free(&a);
	free(path);
	buf[cap - 1] = '\n';
	path = write_file("big.yaml", buf, cap);
	memset(&a, 0x5a, sizeof(a));
	r = ts_agent_load(path, &a, &err);
	ok(r == -EFBIG && strstr(err.msg, "1 MiB") && strstr(err.msg, path) && zeroed(&a),
	   "1 MiB + 1: %s", err.msg);
	free(path);
	free(buf);

	path = path_of("missing.yaml");
	r = ts_agent_load(path, &a, &err);
	ok(r == -ENOENT && strstr(err.msg, path) && zeroed(&a), "a missing file: %s", err.msg);
	free(path);
	r = ts_agent_load(dir, &a, &err);
	ok(r == -EISDIR, "a directory: %s", err.msg);
	path = path_of("fifo");
	if (mkfifo(path, 0600) == 0) {
		r = ts_agent_load(path, &a, &err);
		ok(r == -EINVAL && strstr(err.msg, "not a regular file"),
		   "a FIFO, without hanging: %s", err.msg);
		unlink(path);
	} else {
		skip(1, "mkfifo failed");
	}
	free(path);
}

static void test_no_secret_quoted(void)
{
	struct ts_error err = { 0 };
	struct ts_agent a;
	char *path;
	int r = load_text("sandbox:\n  env: [\"TOKEN=hunter2\"]\n", &a, &err, &path);

	ok(r == -EINVAL && !strstr(err.msg, "hunter2"), "an env value is never quoted: %s",
	   err.msg);
	free(path);
}

static void cleanup(void)
{
	static const char *const names[] = { "agent.yaml", "rel.yaml", "env.yaml", "prot.yaml",
					     "big.yaml" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *p = path_of(names[i]);

		unlink(p);
		free(p);
	}
	if (rmdir(dir) < 0)
		diag("rmdir `%s`: %m", dir);
}

int main(void)
{
	plan(0);
	if (!mkdtemp(dir)) {
		printf("1..0 # SKIP mkdtemp failed\n");
		return 0;
	}
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++)
		test_bad(&bad_cases[i]);
	test_full();
	test_defaults();
	test_values();
	test_paths();
	test_json();
	test_bounds();
	test_no_secret_quoted();
	cleanup();
	return done();
}
