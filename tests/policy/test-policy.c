/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ts_policy_load: every field of a full policy, one fixture per error class (errno,
 * file, exact line, key), merging, and the promise that p is unchanged on error.
 * Usage: test-policy FIXTURES_DIR DEFAULT_POLICY
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy.h"
#include "tap.h"

static const char *fixtures;

struct bad {
	const char *file;
	int r;
	unsigned line;
	const char *needle; /* the key (or the phrase) the message must name */
};

static const struct bad bad_cases[] = {
	{ "bad-unknown-top.yaml", -EINVAL, 3, "unknown key `limit`" },
	{ "bad-unknown-limits.yaml", -EINVAL, 4, "unknown key `memroy` in `limits`" },
	{ "bad-memory.yaml", -EINVAL, 3, "`memory`" },
	{ "bad-memory-small.yaml", -EINVAL, 3, "`memory`" },
	{ "bad-pids-negative.yaml", -EINVAL, 4, "`pids`" },
	{ "bad-pids-huge.yaml", -EINVAL, 2, "`pids`: too large" },
	{ "bad-cpus.yaml", -EINVAL, 2, "`cpus`" },
	{ "bad-timeout.yaml", -EINVAL, 2, "`timeout`" },
	{ "bad-env-name.yaml", -EINVAL, 7, "`env`" },
	{ "bad-bind-relative.yaml", -EINVAL, 4, "`dst`" },
	{ "bad-bind-dotdot.yaml", -EINVAL, 4, "`dst`" },
	{ "bad-bind-src.yaml", -EINVAL, 2, "`src`" },
	{ "bad-bind-missing.yaml", -EINVAL, 3, "missing `dst`" },
	{ "bad-pattern-slash.yaml", -EINVAL, 3, "`protected`" },
	{ "bad-pattern-empty.yaml", -EINVAL, 3, "`protected`" },
	{ "bad-duplicate.yaml", -EINVAL, 5, "duplicate key `pids` in `limits`" },
	{ "bad-type-limits.yaml", -EINVAL, 2, "expected a mapping for `limits`" },
	{ "bad-type-pids.yaml", -EINVAL, 2, "expected a scalar for `pids`" },
	{ "bad-type-env.yaml", -EINVAL, 1, "expected a sequence for `env`" },
	{ "bad-version.yaml", -EINVAL, 1, "`version`" },
	{ "bad-syntax.yaml", -EINVAL, 4, "invalid yaml" },
	{ "bad-alias.yaml", -EINVAL, 1, "anchors are not supported" },
	{ "bad-anchor.yaml", -EINVAL, 3, "anchors are not supported" },
	{ "bad-memory-huge.yaml", -EINVAL, 2, "too large; expected" },
	{ "bad-two-docs.yaml", -EINVAL, 2, "one yaml document" },
	{ "bad-top-sequence.yaml", -EINVAL, 1, "mapping at the top level" },
	{ "bad-sudo-yes.yaml", -EINVAL, 2, "`sudo`: expected true or false" },
	{ "bad-sudo-quoted.yaml", -EINVAL, 2, "quoted value for `sudo`" },
	{ "bad-net-name.yaml", -EINVAL, 3, "`*` only as the whole first label" },
	{ "bad-net-deny-name.yaml", -EINVAL, 2, "`deny` takes address prefixes only" },
};

static char *fixture(const char *name)
{
	char *s;

	if (asprintf(&s, "%s/%s", fixtures, name) < 0)
		abort();
	return s;
}

static int load(struct ts_policy *p, const char *name, struct ts_error *err)
{
	char *path = fixture(name);
	int r = ts_policy_load(p, path, err);

	free(path);
	return r;
}

static void test_bad(const struct bad *c)
{
	char *path = fixture(c->file), want[PATH_MAX + 32];
	struct ts_error err = { 0 };
	struct ts_policy p;
	int r;

	ts_policy_init(&p);
	r = ts_policy_load(&p, path, &err);
	snprintf(want, sizeof(want), "`%s`:%u: ", path, c->line);
	ok(r == c->r && err.code == -c->r && strstr(err.msg, want) == err.msg &&
		   strstr(err.msg, c->needle),
	   "%s: %d, message \"%s\"", c->file, r, err.msg);
	ts_policy_free(&p);
	free(path);
}

static void test_full(void)
{
	struct ts_error err = { 0 };
	struct ts_policy p;
	char *want = fixture("profiles/strict.json");
	int r;

	ts_policy_init(&p);
	r = load(&p, "full.yaml", &err);
	ok(r == 0, "full.yaml loads: %s", r ? err.msg : "ok");
	ok(p.memory_bytes == 512ULL << 20, "memory 512M");
	ok(p.pids == 256, "pids 256");
	ok(p.cpus > 1.4999 && p.cpus < 1.5001, "cpus 1.5");
	ok(p.timeout_ms == 30000, "timeout 30s");
	ok(p.nofile == 1024, "nofile 1024");
	ok(p.fsize == 1ULL << 30, "fsize 1G");
	ok(p.n_env == 3 && !strcmp(p.env[0], "GIT_AUTHOR_NAME") &&
		   !strcmp(p.env[1], "PIP_INDEX_URL=http://127.0.0.1:3141") &&
		   !strcmp(p.env[2], "_UNDERSCORE_1=a=b"),
	   "env: 3 entries in order");
	ok(p.n_ro_binds == 2 && !strcmp(p.ro_binds[0].src, "/opt/tools") &&
		   !strcmp(p.ro_binds[0].dst, "/opt/tools") &&
		   !strcmp(p.ro_binds[1].src, "/usr/share/dict") &&
		   !strcmp(p.ro_binds[1].dst, "/srv/dict"),
	   "ro_binds: flow and block entries");
	ok(p.n_ro_binds == 2 && p.ro_binds[0].origin && strstr(p.ro_binds[0].origin, "`:") &&
		   p.ro_binds[1].origin && strcmp(p.ro_binds[0].origin, p.ro_binds[1].origin),
	   "ro_binds: each entry remembers its file and line");
	ok(p.n_protected == 3 && !strcmp(p.protected_patterns[0], ".env") &&
		   !strcmp(p.protected_patterns[1], "*.pem") &&
		   !strcmp(p.protected_patterns[2], "id_*"),
	   "protected: 3 patterns");
	/* fixtures is absolute (meson passes source paths), so the expectation is too. */
	ok(p.seccomp_profile && !strcmp(p.seccomp_profile, want),
	   "seccomp resolves beside the policy: %s", p.seccomp_profile);
	ok(p.sudo, "sudo: true");
	ts_policy_free(&p);
	free(want);
}

static void test_relative_path(void)
{
	struct ts_error err = { 0 };
	struct ts_policy p;
	char cwd[PATH_MAX], old[PATH_MAX], want[PATH_MAX + 32];
	int r = -1;

	ts_policy_init(&p);
	if (getcwd(old, sizeof(old)) && chdir(fixtures) == 0 && getcwd(cwd, sizeof(cwd))) {
		r = ts_policy_load(&p, "full.yaml", &err);
		if (chdir(old) < 0)
			abort();
	}
	snprintf(want, sizeof(want), "%s/profiles/strict.json", cwd);
	ok(r == 0 && p.seccomp_profile && !strcmp(p.seccomp_profile, want),
	   "relative policy path: seccomp `%s` is absolute", p.seccomp_profile);
	ts_policy_free(&p);
}

static void test_empty(void)
{
	static const char *const files[] = { "empty.yaml", "comments-only.yaml", "nulls.yaml" };

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct ts_error err = { 0 };
		struct ts_policy p;
		int r;

		ts_policy_init(&p);
		r = load(&p, files[i], &err);
		ok(r == 0 && !p.memory_bytes && !p.pids && p.cpus == 0 && !p.n_env &&
			   !p.n_ro_binds && !p.n_protected && !p.seccomp_profile,
		   "%s: all defaults (%s)", files[i], r ? err.msg : "ok");
		ts_policy_free(&p);
	}
}

static void test_merge(void)
{
	struct ts_error err = { 0 };
	struct ts_policy p;
	int r;

	ts_policy_init(&p);
	r = load(&p, "merge-a.yaml", &err);
	if (r == 0)
		r = load(&p, "merge-b.yaml", &err);
	ok(r == 0, "merge-a then merge-b: %s", r ? err.msg : "ok");
	ok(p.memory_bytes == 256ULL << 20, "memory kept from a (b does not set it)");
	ok(p.pids == 200, "pids replaced by b");
	ok(p.timeout_ms == 0, "timeout 10s replaced by b's explicit 0");
	ok(p.n_env == 2 && !strcmp(p.env[0], "A") && !strcmp(p.env[1], "B=1"), "env appends");
	ok(p.n_protected == 2 && !strcmp(p.protected_patterns[0], ".env") &&
		   !strcmp(p.protected_patterns[1], "*.key"),
	   "protected appends");
	ok(p.n_ro_binds == 1 && !strcmp(p.ro_binds[0].dst, "/b"), "ro_binds appends");
	ok(p.seccomp_profile && !strcmp(p.seccomp_profile, "/etc/toren/a.json"),
	   "seccomp kept from a");
	ts_policy_free(&p);
}

static void test_unchanged_on_error(void)
{
	struct ts_error err = { 0 };
	struct ts_policy p;
	char **env, **pat;
	int r;

	ts_policy_init(&p);
	r = load(&p, "merge-a.yaml", &err);
	env = p.env;
	pat = p.protected_patterns;
	/* bad-env-name sets pids and two good env entries before its bad one. */
	r = r ? r : load(&p, "bad-env-name.yaml", &err);
	ok(r == -EINVAL && p.pids == 100 && p.memory_bytes == 256ULL << 20 &&
		   p.timeout_ms == 10000 && p.n_env == 1 && p.env == env &&
		   !strcmp(p.env[0], "A") && p.n_protected == 1 && p.protected_patterns == pat &&
		   !p.n_ro_binds && !strcmp(p.seccomp_profile, "/etc/toren/a.json"),
	   "p unchanged after a failed load");
	ok(!strstr(err.msg, "hunter2"), "an env value is never quoted in an error");
	r = load(&p, "bad-syntax.yaml", &err);
	ok(r == -EINVAL && p.pids == 100 && p.n_env == 1, "p unchanged after a syntax error");
	ts_policy_free(&p);
}

static void test_file_errors(void)
{
	struct ts_error err = { 0 };
	struct ts_policy p;
	char path[] = "/tmp/ts-policy-XXXXXX";
	int fd, r;

	ts_policy_init(&p);
	r = load(&p, "does-not-exist.yaml", &err);
	ok(r == -ENOENT && strstr(err.msg, "does-not-exist.yaml"), "missing file: %s", err.msg);
	r = ts_policy_load(&p, fixtures, &err);
	ok(r == -EISDIR, "a directory: %s", err.msg);

	fd = mkstemp(path);
	if (fd < 0) {
		skip(2, "mkstemp failed");
		return;
	}
	/* Exactly 1 MiB of comments is accepted, one byte more is refused. */
	{
		static char block[4096];

		memset(block, ' ', sizeof(block));
		block[0] = '#';
		block[sizeof(block) - 1] = '\n';
		for (int i = 0; i < 256; i++)
			if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block))
				abort();
	}
	r = ts_policy_load(&p, path, &err);
	ok(r == 0, "exactly 1 MiB: %s", r ? err.msg : "ok");
	if (write(fd, "\n", 1) != 1)
		abort();
	r = ts_policy_load(&p, path, &err);
	ok(r == -EFBIG && strstr(err.msg, "1 MiB"), "1 MiB + 1: %s", err.msg);
	close(fd);
	unlink(path);
	ts_policy_free(&p);
}

static void test_add(void)
{
	struct ts_error err = { 0 };
	struct ts_policy p;

	ts_policy_init(&p);
	ok(ts_policy_add_env(&p, "HOME", &err) == 0 &&
		   ts_policy_add_env(&p, "_X1=a b=c", &err) == 0 && p.n_env == 2 &&
		   !strcmp(p.env[1], "_X1=a b=c"),
	   "add_env accepts NAME and NAME=VALUE");
	ok(ts_policy_add_env(&p, "1X=secret", &err) == -EINVAL && strstr(err.msg, "`1X`") &&
		   !strstr(err.msg, "secret"),
	   "add_env refuses a bad name: %s", err.msg);
	ok(ts_policy_add_env(&p, "=v", &err) == -EINVAL &&
		   ts_policy_add_env(&p, "A-B", &err) == -EINVAL && p.n_env == 2,
	   "add_env refuses an empty name and `-`");
	ok(ts_policy_add_protected(&p, "*.pem", &err) == 0 && p.n_protected == 1,
	   "add_protected accepts a glob");
	ok(ts_policy_add_protected(&p, "", &err) == -EINVAL &&
		   ts_policy_add_protected(&p, "a/b", &err) == -EINVAL && p.n_protected == 1,
	   "add_protected refuses empty and `/`");
	ts_policy_free(&p);
	ok(!p.env && !p.n_env && !p.protected_patterns, "free zeroes");
	ts_policy_free(&p);
}

static void test_default(const char *path)
{
	struct ts_error err = { 0 };
	struct ts_policy p;
	bool has_env = false, has_pem = false;
	int r;

	ts_policy_init(&p);
	r = ts_policy_load(&p, path, &err);
	for (size_t i = 0; i < p.n_protected; i++) {
		has_env |= !strcmp(p.protected_patterns[i], ".env");
		has_pem |= !strcmp(p.protected_patterns[i], "*.pem");
	}
	ok(r == 0 && has_env && has_pem && p.pids == 0,
	   "policy/default.yaml loads and protects .env and *.pem: %s", r ? err.msg : "ok");
	ts_policy_free(&p);
}

/* names in network.allow: parsed, lowercased, kept apart from address prefixes */
static void test_net_names(void)
{
	struct ts_error err = { 0 };
	struct ts_policy p;
	char buf[TS_HOSTPAT_STRLEN];
	int r;

	ts_policy_init(&p);
	r = load(&p, "net-names.yaml", &err);
	ok(r == 0 && p.network && p.n_net_names == 3 && p.n_net_allow == 0 && p.n_net_deny == 1,
	   "net-names.yaml: 3 names, 1 deny: %s", r ? err.msg : "ok");
	ok(p.n_net_names == 3 &&
		   !strcmp(ts_hostpat_format(&p.net_names[0], buf, sizeof(buf)),
			   "api.github.com") &&
		   p.net_names[1].wildcard && p.net_names[2].port == 8443,
	   "names lowercased, a wildcard, a port");
	r = load(&p, "bad-net-mix.yaml", &err);
	ok(r == -EINVAL && strstr(err.msg, "both host names") && p.n_net_names == 3 &&
		   p.n_net_allow == 0,
	   "names and addresses in one file refused, the policy unchanged: %s", err.msg);
	ts_policy_free(&p);
	ts_policy_init(&p);
	r = load(&p, "merge-a.yaml", &err);
	r = r ? r : ts_policy_add_net_allow(&p, "10.1.0.0/16", buf, sizeof(buf));
	r = r ? r : load(&p, "net-names.yaml", &err);
	ok(r == -EINVAL && strstr(err.msg, "both host names") && p.n_net_names == 0,
	   "a file's names over another's addresses refused: %s", err.msg);
	ts_policy_free(&p);
}

int main(int argc, char **argv)
{
	size_t n_bad = sizeof(bad_cases) / sizeof(bad_cases[0]);

	if (argc != 3) {
		fprintf(stderr, "usage: %s FIXTURES_DIR DEFAULT_POLICY\n", argv[0]);
		return 2;
	}
	fixtures = argv[1];
	plan((int)n_bad + 12 + 1 + 3 + 8 + 3 + 4 + 6 + 1 + 1 + 4);
	for (size_t i = 0; i < n_bad; i++)
		test_bad(&bad_cases[i]);
	test_full();
	test_relative_path();
	test_empty();
	test_merge();
	test_unchanged_on_error();
	test_file_errors();
	test_add();
	test_default(argv[2]);
	test_net_names();
	return exit_status();
}
