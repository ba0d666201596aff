/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "cidr.h"
#include "error.h"
#include "hostpat.h"

/*
 * The sandbox policy: a YAML file (libyaml), documented in toren-sandbox-policy(5).
 *
 *   version: 1
 *   limits:
 *     memory: 512M        # bytes with K/M/G suffix
 *     pids: 256
 *     cpus: 1.5
 *     timeout: 30s        # run: kill the tree after this long (0 = none)
 *     nofile: 1024        # RLIMIT_NOFILE
 *     fsize: 1G           # RLIMIT_FSIZE
 *   env:                  # allow-list: NAME copies the host value, NAME=VALUE sets it
 *     - GIT_AUTHOR_NAME
 *     - PIP_INDEX_URL=http://127.0.0.1:3141
 *   ro_binds:             # extra read-only binds, host path -> sandbox path
 *     - { src: /opt/tools, dst: /opt/tools }
 *   protected:            # basename glob patterns (fnmatch), matched in the workspace
 *     - .env
 *     - "*.pem"
 *   seccomp: /path/to/profile.json   # relative paths resolve against the policy file
 *   network: true         # egress (pasta/slirp4netns), never to private ranges; or
 *   network:              # the same with rules by address prefix
 *     allow: [10.1.0.0/16]   # routable through the blocked ranges
 *     deny: [203.0.113.0/24]
 *   network:              # or by name: only these, through the sandbox's HTTP proxy
 *     allow: [api.github.com, "*.example.com", "git.example.org:8443"]
 *
 * Unknown keys and bad values are errors naming the file, line and key.
 */

/* network allow and deny entries, each, over all policy files */
#define TS_POLICY_MAX_NET_RULES 64

/* env entries per policy file: the sandbox's whole environment is at most 4096 */
#define TS_POLICY_MAX_ENV 1024

struct ts_bind {
	char *src;
	char *dst;
	char *origin; /* "`FILE`:LINE" of the entry, for messages about it later */
};

struct ts_policy {
	unsigned long long memory_bytes; /* 0: unset */
	unsigned long long pids;	 /* 0: unset */
	double cpus;			 /* 0: unset */
	unsigned long long timeout_ms;	 /* 0: unset */
	unsigned long long nofile;	 /* 0: unset */
	unsigned long long fsize;	 /* 0: unset */
	/* budgets of the sandbox's user namespace; 0: unset (half of the caller's) */
	unsigned long long inotify_instances, inotify_watches;
	char **env; /* NAME or NAME=VALUE entries */
	size_t n_env;
	struct ts_bind *ro_binds;
	size_t n_ro_binds;
	char **protected_patterns;
	size_t n_protected;
	char *seccomp_profile; /* absolute path or NULL for the default */
	bool sudo;    /* a sudo that asks init (durable sandboxes with a root; default off) */
	bool network; /* egress (default off: only `lo`) */
	struct ts_cidr net_allow[TS_POLICY_MAX_NET_RULES], net_deny[TS_POLICY_MAX_NET_RULES];
	size_t n_net_allow, n_net_deny;
	/* allow entries that are names (hostpat.h): the sandbox's way out is then the name
	 * proxy alone, and net_allow stays empty (ts_policy_check_network) */
	struct ts_hostpat net_names[TS_POLICY_MAX_NET_RULES];
	size_t n_net_names;
};

/*
 * Check one address entry of `network` (an `allow` entry that is no name, every `deny`
 * entry): an IPv4 or IPv6 prefix. A name in `deny` is refused (deny takes addresses).
 * IPv6 entries decide where the sandbox has IPv6 egress (the helper's ctx->net.ipv6).
 * 0 or -EINVAL with why (a message without the entry's origin).
 */
int ts_policy_parse_net_entry(const char *s, bool allow, struct ts_cidr *ret, char *why,
			      size_t why_len);

/*
 * Append one `network.allow` entry (policy files, --net-allow, an E2B body's allowOut):
 * an address prefix as ts_policy_parse_net_entry, or a host name or `*.suffix` pattern
 * with an optional :PORT (hostpat.h). Sets network. 0, -EINVAL with why, or -E2BIG.
 */
int ts_policy_add_net_allow(struct ts_policy *p, const char *s, char *why, size_t why_len);

/*
 * Names and address allows do not mix: with a name the proxy is the sandbox's only way
 * out, where an address rule would mean nothing. 0, or -EINVAL with err saying so.
 */
int ts_policy_check_network(const struct ts_policy *p, struct ts_error *err);

/*
 * The rules for limit values, one place for policy files and command-line flags alike.
 * Each returns 0, -EINVAL (not a value of that kind), -ERANGE (too small) or -EOVERFLOW
 * (too large); TS_POLICY_WANT_* say what a good value looks like, for error messages,
 * after ts_policy_too_large(r) ("too large; " for -EOVERFLOW, else "").
 */
#define TS_POLICY_WANT_MEMORY "a size of at least 4M, like 512M"
#define TS_POLICY_WANT_PIDS "an integer from 2 to 4194304"
#define TS_POLICY_WANT_CPUS "a number from 0.01 to 1024, like 1.5"
const char *ts_policy_too_large(int r);
int ts_policy_parse_memory(const char *s, unsigned long long *ret);
int ts_policy_parse_pids(const char *s, unsigned long long *ret);
int ts_policy_parse_cpus(const char *s, double *ret);

/* Zero p. */
void ts_policy_init(struct ts_policy *p);

/* Free everything p owns and zero it. Accepts a zeroed p. */
void ts_policy_free(struct ts_policy *p);
/* For `_cleanup_(ts_policy_freep) struct ts_policy p = { 0 };` (a zeroed policy is an
 * initialised one). */
static inline void ts_policy_freep(struct ts_policy *p)
{
	ts_policy_free(p);
}

/*
 * Parse the YAML policy at path and merge it into p: scalars replace, lists append.
 * Returns 0, or -EINVAL with err like "`policy.yaml`:7: unknown key `memroy` in `limits`",
 * or another -errno when the file cannot be read. p is unchanged on error.
 */
int ts_policy_load(struct ts_policy *p, const char *path, struct ts_error *err);

/* Append one env allow-list entry (NAME or NAME=VALUE). Validates NAME. 0 or -errno. */
/* Is s[0..len) an environment variable name, [A-Za-z_][A-Za-z0-9_]*? */
bool ts_policy_env_name_valid(const char *s, size_t len);
int ts_policy_add_env(struct ts_policy *p, const char *entry, struct ts_error *err);

/* Append one protected pattern. 0 or -errno. */
int ts_policy_add_protected(struct ts_policy *p, const char *pattern, struct ts_error *err);
