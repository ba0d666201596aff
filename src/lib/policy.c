/* SPDX-License-Identifier: Apache-2.0 */
#include "policy.h"

#include <errno.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "util.h"
#include "yamlwalk.h"

/* A policy is a short hand-written file; the cap bounds what a hostile one can cost. */
#define POLICY_MAX_BYTES (1024 * 1024)
/* Below a few MiB the kernel OOM-kills the sandbox's init before it can report. */
#define MEMORY_MIN (4ULL << 20)
/* PID_MAX_LIMIT on 64-bit kernels: pids.max above it means nothing. */
#define PIDS_MAX 4194304ULL
#define CPUS_MIN 0.01
#define CPUS_MAX 1024.0
/* RLIMIT_NOFILE above fs.nr_open fails at setrlimit() time; INT_MAX bounds the fd type. */
#define NOFILE_MAX ((unsigned long long)INT_MAX)
#define SHOW_MAX TS_YAML_SHOW_MAX /* the buffer of ts_yaml_show */

enum {
	SET_MEMORY = 1 << 0,
	SET_PIDS = 1 << 1,
	SET_CPUS = 1 << 2,
	SET_TIMEOUT = 1 << 3,
	SET_NOFILE = 1 << 4,
	SET_FSIZE = 1 << 5,
	SET_INOTIFY_INSTANCES = 1 << 6,
	SET_INOTIFY_WATCHES = 1 << 7,
	SET_SUDO = 1 << 8,
	SET_NETWORK = 1 << 9,
};

struct loader {
	struct ts_yaml y;
	struct ts_policy *p; /* the temporary, merged into the caller's policy on success */
	unsigned set;	     /* SET_* flags: which scalars this file gave */
	size_t cap_env, cap_binds, cap_protected;
};

void ts_policy_init(struct ts_policy *p)
{
	memset(p, 0, sizeof(*p));
}

void ts_policy_free(struct ts_policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_env; i++)
		free(p->env[i]);
	free(p->env);
	for (size_t i = 0; i < p->n_ro_binds; i++) {
		free(p->ro_binds[i].src);
		free(p->ro_binds[i].dst);
		free(p->ro_binds[i].origin);
	}
	free(p->ro_binds);
	for (size_t i = 0; i < p->n_protected; i++)
		free(p->protected_patterns[i]);
	free(p->protected_patterns);
	free(p->seccomp_profile);
	ts_policy_init(p);
}

bool ts_policy_env_name_valid(const char *s, size_t len)
{
	if (len == 0 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return false;
	}
	return true;
}

/* Length of the NAME part of "NAME" or "NAME=VALUE". */
static size_t env_name_len(const char *entry)
{
	const char *eq = strchr(entry, '=');

	return eq ? (size_t)(eq - entry) : strlen(entry);
}

static bool has_dotdot(const char *path)
{
	const char *c = path;

	while (*c) {
		size_t n;

		while (*c == '/')
			c++;
		n = strcspn(c, "/");
		if (n == 2 && c[0] == '.' && c[1] == '.')
			return true;
		c += n;
	}
	return false;
}

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t ncap;
	void *nv;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 8;
	nv = reallocarray(*v, ncap, size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

static bool starts_digit(const char *s)
{
	return s[0] >= '0' && s[0] <= '9';
}

const char *ts_policy_too_large(int r)
{
	return r == -EOVERFLOW ? "too large; " : "";
}

int ts_policy_parse_memory(const char *s, unsigned long long *ret)
{
	int r = starts_digit(s) ? ts_parse_size(s, ret) : -EINVAL;

	return r == 0 && *ret < MEMORY_MIN ? -ERANGE : r;
}

int ts_policy_parse_pids(const char *s, unsigned long long *ret)
{
	int r = starts_digit(s) ? ts_parse_ull(s, ret) : -EINVAL;

	/* init and the command are two processes already */
	if (r == 0 && *ret > PIDS_MAX)
		return -EOVERFLOW;
	return r == 0 && *ret < 2 ? -ERANGE : r;
}

/* "1", "1.5", "0.25": no sign, exponent, hex, inf or nan. */
int ts_policy_parse_cpus(const char *s, double *ret)
{
	const char *c = s;
	char *end;
	double v;

	while (*c >= '0' && *c <= '9')
		c++;
	if (c == s)
		return -EINVAL;
	if (*c == '.') {
		const char *f = ++c;

		while (*c >= '0' && *c <= '9')
			c++;
		if (c == f)
			return -EINVAL;
	}
	if (*c)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	/* the kernel's smallest CFS quota is 1 ms per 100 ms period */
	if (!errno && !*end && v > CPUS_MAX)
		return -EOVERFLOW;
	if (errno || *end || !(v >= CPUS_MIN))
		return -ERANGE;
	*ret = v;
	return 0;
}

static const char *const limit_keys[] = {
	"memory",	  "pids", "cpus", "timeout", "nofile", "fsize", "inotify_instances",
	"inotify_watches"
};

static int parse_limit(struct loader *l, size_t idx)
{
	struct ts_policy *p = l->p;
	const char *name = limit_keys[idx];
	unsigned long long v = 0;
	const char *s = NULL, *want;
	char b[SHOW_MAX + 4];
	int r;

	r = ts_yaml_scalar(&l->y, name, &s);
	if (r < 0)
		return r;
	r = starts_digit(s) ? 0 : -EINVAL;
	switch (idx) {
	case 0:
		want = TS_POLICY_WANT_MEMORY;
		if (r == 0)
			r = ts_policy_parse_memory(s, &v);
		p->memory_bytes = v;
		l->set |= SET_MEMORY;
		break;
	case 1:
		want = TS_POLICY_WANT_PIDS;
		if (r == 0)
			r = ts_policy_parse_pids(s, &v);
		p->pids = v;
		l->set |= SET_PIDS;
		break;
	case 2:
		want = TS_POLICY_WANT_CPUS;
		if (r == 0)
			r = ts_policy_parse_cpus(s, &p->cpus);
		l->set |= SET_CPUS;
		break;
	case 3:
		want = "a duration like 30s, 5m or 2h, or 0 for none";
		if (r == 0)
			r = ts_parse_duration_ms(s, &v);
		p->timeout_ms = v;
		l->set |= SET_TIMEOUT;
		break;
	case 4:
		want = "an integer from 1 to 2147483647";
		if (r == 0)
			r = ts_parse_ull(s, &v);
		if (r == 0 && v > NOFILE_MAX)
			r = -EOVERFLOW;
		if (r == 0 && v < 1)
			r = -ERANGE;
		p->nofile = v;
		l->set |= SET_NOFILE;
		break;
	case 5:
		want = "a size above 0, like 1G";
		if (r == 0)
			r = ts_parse_size(s, &v);
		if (r == 0 && v < 1)
			r = -ERANGE;
		p->fsize = v;
		l->set |= SET_FSIZE;
		break;
	default:
		/* the kernel's sysctls take an int */
		want = "an integer from 1 to 2147483647";
		if (r == 0)
			r = ts_parse_ull(s, &v);
		if (r == 0 && v > INT_MAX)
			r = -EOVERFLOW;
		if (r == 0 && v < 1)
			r = -ERANGE;
		if (idx == 6) {
			p->inotify_instances = v;
			l->set |= SET_INOTIFY_INSTANCES;
		} else {
			p->inotify_watches = v;
			l->set |= SET_INOTIFY_WATCHES;
		}
		break;
	}
	if (r < 0)
		return ts_yaml_err(&l->y, &l->y.ev.start_mark, -EINVAL,
				   "invalid value `%s` for `%s`: %sexpected %s",
				   ts_yaml_show(b, s, strlen(s)), name, ts_policy_too_large(r),
				   want);
	return 0;
}

static int parse_limits(struct loader *l)
{
	unsigned seen = 0;
	bool empty;
	int r;

	r = ts_yaml_expect(&l->y, "limits", YAML_MAPPING_START_EVENT, &empty);
	if (r < 0 || empty)
		return r;
	for (;;) {
		size_t idx = 0;

		r = ts_yaml_next(&l->y);
		if (r < 0)
			return r;
		if (l->y.ev.type == YAML_MAPPING_END_EVENT)
			return 0;
		r = ts_yaml_key(&l->y, limit_keys, ELEMENTSOF(limit_keys), "limits", &seen, &idx);
		if (r < 0)
			return r;
		r = ts_yaml_next(&l->y);
		if (r < 0)
			return r;
		r = parse_limit(l, idx);
		if (r < 0)
			return r;
	}
}

static int env_item(struct ts_yaml *y, void *userdata)
{
	struct loader *l = userdata;
	struct ts_policy *p = l->p;
	char b[SHOW_MAX + 4];
	const char *s = NULL;
	char *dup;
	size_t n;
	int r;

	r = ts_yaml_scalar(y, "env", &s);
	if (r < 0)
		return r;
	if (p->n_env >= TS_POLICY_MAX_ENV)
		return ts_yaml_err(y, &y->ev.start_mark, -EINVAL, "more than %d entries in `env`",
				   TS_POLICY_MAX_ENV);
	/* Quote only the name: the value may be a secret (a token in an index URL). */
	n = env_name_len(s);
	if (!ts_policy_env_name_valid(s, n))
		return ts_yaml_err(
			y, &y->ev.start_mark, -EINVAL,
			"invalid name `%s` in `env`: expected NAME or NAME=VALUE with NAME "
			"matching [A-Za-z_][A-Za-z0-9_]*",
			ts_yaml_show(b, s, n));
	if (grow((void **)&p->env, &l->cap_env, p->n_env, sizeof(*p->env)) < 0)
		return ts_yaml_nomem(y);
	dup = strdup(s);
	if (!dup)
		return ts_yaml_nomem(y);
	p->env[p->n_env++] = dup;
	return 0;
}

static int protected_item(struct ts_yaml *y, void *userdata)
{
	struct loader *l = userdata;
	struct ts_policy *p = l->p;
	char b[SHOW_MAX + 4];
	const char *s = NULL;
	char *dup;
	int r;

	/* An empty quoted pattern gets the same message as a missing one. */
	if (y->ev.type == YAML_SCALAR_EVENT && y->ev.data.scalar.length == 0)
		return ts_yaml_err(y, &y->ev.start_mark, -EINVAL, "empty pattern in `protected`");
	r = ts_yaml_scalar(y, "protected", &s);
	if (r < 0)
		return r;
	if (strchr(s, '/'))
		return ts_yaml_err(
			y, &y->ev.start_mark, -EINVAL,
			"invalid pattern `%s` in `protected`: patterns match basenames and "
			"cannot contain `/`",
			ts_yaml_show(b, s, strlen(s)));
	if (grow((void **)&p->protected_patterns, &l->cap_protected, p->n_protected,
		 sizeof(*p->protected_patterns)) < 0)
		return ts_yaml_nomem(y);
	dup = strdup(s);
	if (!dup)
		return ts_yaml_nomem(y);
	p->protected_patterns[p->n_protected++] = dup;
	return 0;
}

static int bind_path(struct loader *l, const char *name, bool is_dst, char **ret)
{
	char b[SHOW_MAX + 4];
	const char *s = NULL, *why = NULL;
	int r;

	r = ts_yaml_scalar(&l->y, name, &s);
	if (r < 0)
		return r;
	if (s[0] != '/')
		why = "must be an absolute path";
	else if (strlen(s) >= PATH_MAX)
		why = "path too long";
	else if (is_dst && has_dotdot(s))
		why = "must not contain `..` components";
	else if (is_dst && s[strspn(s, "/")] == '\0')
		why = "cannot be `/`";
	if (why)
		return ts_yaml_err(&l->y, &l->y.ev.start_mark, -EINVAL,
				   "invalid value `%s` for `%s` in `ro_binds`: %s",
				   ts_yaml_show(b, s, strlen(s)), name, why);
	*ret = strdup(s);
	return *ret ? 0 : ts_yaml_nomem(&l->y);
}

static int bind_item(struct ts_yaml *y, void *userdata)
{
	struct loader *l = userdata;
	static const char *const keys[] = { "src", "dst" };
	struct ts_policy *p = l->p;
	yaml_mark_t start = y->ev.start_mark;
	_cleanup_free_ char *src = NULL, *dst = NULL, *origin = NULL;
	unsigned seen = 0;
	int r;

	if (y->ev.type != YAML_MAPPING_START_EVENT)
		return ts_yaml_err(y, &start, -EINVAL,
				   "expected a mapping with `src` and `dst` for a "
				   "`ro_binds` entry, got %s",
				   ts_yaml_kind(&y->ev));
	for (;;) {
		size_t idx = 0;

		r = ts_yaml_next(y);
		if (r < 0)
			return r;
		if (y->ev.type == YAML_MAPPING_END_EVENT)
			break;
		r = ts_yaml_key(y, keys, ELEMENTSOF(keys), "ro_binds", &seen, &idx);
		if (r < 0)
			return r;
		r = ts_yaml_next(y);
		if (r < 0)
			return r;
		r = bind_path(l, keys[idx], idx == 1, idx == 0 ? &src : &dst);
		if (r < 0)
			return r;
	}
	if (!src || !dst)
		return ts_yaml_err(y, &start, -EINVAL, "missing `%s` in `ro_binds` entry",
				   !src ? "src" : "dst");
	if (grow((void **)&p->ro_binds, &l->cap_binds, p->n_ro_binds, sizeof(*p->ro_binds)) < 0 ||
	    asprintf(&origin, "`%s`:%zu", y->path, start.line + 1) < 0)
		return ts_yaml_nomem(y);
	p->ro_binds[p->n_ro_binds].src = TAKE_PTR(src);
	p->ro_binds[p->n_ro_binds].dst = TAKE_PTR(dst);
	p->ro_binds[p->n_ro_binds].origin = TAKE_PTR(origin);
	p->n_ro_binds++;
	return 0;
}

/* A relative seccomp path names a file beside the policy, wherever the caller runs. */
static int parse_seccomp(struct loader *l)
{
	struct ts_policy *p = l->p;
	const char *s = NULL;
	char *abs = NULL;
	int r;

	r = ts_yaml_scalar(&l->y, "seccomp", &s);
	if (r < 0)
		return r;
	r = ts_yaml_path(&l->y, "seccomp", s, &abs);
	if (r < 0)
		return r;
	free(p->seccomp_profile);
	p->seccomp_profile = abs;
	return 0;
}

static const char *const top_keys[] = {
	"version", "limits", "env", "ro_binds", "protected", "seccomp", "sudo", "network",
};

int ts_policy_parse_net_entry(const char *s, bool allow, struct ts_cidr *ret, char *why,
			      size_t why_len)
{
	/* IPv4 and IPv6 alike: where IPv6 does not leave, its entries have nothing to
	 * decide */
	if (ts_cidr_parse(s, ret) == 0)
		return 0;
	if (ts_cidr_looks_like_name(s))
		snprintf(why, why_len,
			 allow ? "not an address prefix (names: ts_policy_add_net_allow)"
			       : "`deny` takes address prefixes only, like 192.0.2.0/24 (to keep a "
				 "name out, leave it off `allow`)");
	else
		snprintf(why, why_len,
			 "not an address prefix: want ADDR or ADDR/LEN with the host bits zero, "
			 "like 10.1.0.0/16");
	return -EINVAL;
}

int ts_policy_add_net_allow(struct ts_policy *p, const char *s, char *why, size_t why_len)
{
	struct ts_cidr c;
	char hw[160];
	int r;

	if (p->n_net_allow >= TS_POLICY_MAX_NET_RULES ||
	    p->n_net_names >= TS_POLICY_MAX_NET_RULES) {
		snprintf(why, why_len, "too many entries (at most %d of each kind)",
			 TS_POLICY_MAX_NET_RULES);
		return -E2BIG;
	}
	if (ts_cidr_parse(s, &c) == 0) {
		r = ts_policy_parse_net_entry(s, true, &c, why, why_len);
		if (r < 0)
			return r;
		p->net_allow[p->n_net_allow++] = c;
	} else if (ts_hostpat_parse(s, &p->net_names[p->n_net_names], hw, sizeof(hw)) == 0) {
		p->n_net_names++;
	} else if (ts_cidr_looks_like_name(s)) {
		snprintf(why, why_len, "not a host name or name pattern: %s", hw);
		return -EINVAL;
	} else {
		snprintf(why, why_len,
			 "not an address prefix (ADDR or ADDR/LEN with the host bits zero, like "
			 "10.1.0.0/16) nor a host name");
		return -EINVAL;
	}
	p->network = true;
	return 0;
}

int ts_policy_check_network(const struct ts_policy *p, struct ts_error *err)
{
	char a[TS_CIDR_STRLEN], n[TS_HOSTPAT_STRLEN];

	if (!p->n_net_names || !p->n_net_allow)
		return 0;
	return ts_err(err, -EINVAL,
		      "`network.allow` has both host names (`%s`) and address prefixes (`%s`): "
		      "with names the sandbox's only way out is its HTTP proxy, which connects "
		      "to names only; give names or addresses, not both",
		      ts_hostpat_format(&p->net_names[0], n, sizeof(n)),
		      ts_cidr_format(&p->net_allow[0], a, sizeof(a)));
}

static int net_list(struct loader *l, bool allow)
{
	struct ts_policy *p = l->p;
	const char *name = allow ? "allow" : "deny";
	struct ts_cidr *list = allow ? p->net_allow : p->net_deny;
	size_t *n = allow ? &p->n_net_allow : &p->n_net_deny;
	char b[SHOW_MAX + 4], why[160];
	bool empty;
	int r;

	r = ts_yaml_expect(&l->y, name, YAML_SEQUENCE_START_EVENT, &empty);
	if (r < 0 || empty)
		return r;
	for (;;) {
		const char *s = NULL;

		r = ts_yaml_next(&l->y);
		if (r < 0)
			return r;
		if (l->y.ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		r = ts_yaml_scalar(&l->y, name, &s);
		if (r < 0)
			return r;
		if (allow) {
			r = ts_policy_add_net_allow(p, s, why, sizeof(why));
			if (r == -E2BIG)
				return ts_yaml_err(&l->y, &l->y.ev.start_mark, -E2BIG,
						   "too many entries in `network.allow` (at most "
						   "%d addresses and %d names)",
						   TS_POLICY_MAX_NET_RULES,
						   TS_POLICY_MAX_NET_RULES);
			if (r < 0)
				return ts_yaml_err(&l->y, &l->y.ev.start_mark, -EINVAL,
						   "invalid entry `%s` in `network.allow`: %s",
						   ts_yaml_show(b, s, strlen(s)), why);
			continue;
		}
		if (*n >= TS_POLICY_MAX_NET_RULES)
			return ts_yaml_err(&l->y, &l->y.ev.start_mark, -E2BIG,
					   "too many entries in `network.%s` (at most %d)", name,
					   TS_POLICY_MAX_NET_RULES);
		if (ts_policy_parse_net_entry(s, allow, &list[*n], why, sizeof(why)) < 0)
			return ts_yaml_err(&l->y, &l->y.ev.start_mark, -EINVAL,
					   "invalid entry `%s` in `network.%s`: %s",
					   ts_yaml_show(b, s, strlen(s)), name, why);
		(*n)++;
	}
}

/* `network`: true, false, or a mapping with `allow` and `deny` (which means true) */
static int parse_network(struct loader *l)
{
	static const char *const keys[] = { "allow", "deny" };
	unsigned seen = 0;
	char b[SHOW_MAX + 4];
	int r;

	if (l->y.ev.type == YAML_SCALAR_EVENT) {
		const char *s = (const char *)l->y.ev.data.scalar.value;

		if (l->y.ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
		    (strcmp(s, "true") && strcmp(s, "false")))
			return ts_yaml_err(
				&l->y, &l->y.ev.start_mark, -EINVAL,
				"invalid value `%s` for `network`: expected true, false or a "
				"mapping with `allow` and `deny`",
				ts_yaml_show(b, s, strlen(s)));
		l->p->network = !strcmp(s, "true");
		l->set |= SET_NETWORK;
		return 0;
	}
	if (l->y.ev.type != YAML_MAPPING_START_EVENT)
		return ts_yaml_err(&l->y, &l->y.ev.start_mark, -EINVAL,
				   "expected true, false or a mapping for `network`, got %s",
				   ts_yaml_kind(&l->y.ev));
	for (;;) {
		size_t idx = 0;

		r = ts_yaml_next(&l->y);
		if (r < 0)
			return r;
		if (l->y.ev.type == YAML_MAPPING_END_EVENT)
			break;
		r = ts_yaml_key(&l->y, keys, ELEMENTSOF(keys), "network", &seen, &idx);
		if (r < 0)
			return r;
		r = ts_yaml_next(&l->y);
		if (r < 0)
			return r;
		r = net_list(l, idx == 0);
		if (r < 0)
			return r;
	}
	l->p->network = true;
	l->set |= SET_NETWORK;
	return 0;
}

/* `sudo`: a plain `true` or `false`, nothing YAML 1.1 would also read as one (yes, on) */
static int parse_sudo(struct loader *l)
{
	int r = ts_yaml_bool(&l->y, "sudo", &l->p->sudo);

	if (r == 0)
		l->set |= SET_SUDO;
	return r;
}

static int parse_top(struct ts_yaml *y, void *userdata)
{
	struct loader *l = userdata;
	unsigned seen = 0;
	char b[SHOW_MAX + 4];
	const char *s = NULL;
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
		switch (idx) {
		case 0:
			r = ts_yaml_scalar(y, "version", &s);
			if (r == 0 && strcmp(s, "1"))
				r = ts_yaml_err(y, &y->ev.start_mark, -EINVAL,
						"unsupported value `%s` for `version`: expected 1",
						ts_yaml_show(b, s, strlen(s)));
			break;
		case 1:
			r = parse_limits(l);
			break;
		case 2:
			r = ts_yaml_each(y, "env", env_item, l);
			break;
		case 3:
			r = ts_yaml_each(y, "ro_binds", bind_item, l);
			break;
		case 4:
			r = ts_yaml_each(y, "protected", protected_item, l);
			break;
		case 6:
			r = parse_sudo(l);
			break;
		case 7:
			r = parse_network(l);
			break;
		default:
			r = parse_seccomp(l);
			break;
		}
		if (r < 0)
			return r;
	}
}

/* Move t into p: scalars t set replace, lists append. Either all of it or nothing. */
static int merge(struct ts_policy *p, struct ts_policy *t, unsigned set)
{
	if (p->n_net_allow + t->n_net_allow > TS_POLICY_MAX_NET_RULES ||
	    p->n_net_deny + t->n_net_deny > TS_POLICY_MAX_NET_RULES ||
	    p->n_net_names + t->n_net_names > TS_POLICY_MAX_NET_RULES)
		return -E2BIG;
	if ((p->n_net_names || t->n_net_names) && (p->n_net_allow || t->n_net_allow))
		return -EXDEV;
	/* Grow first; a failed realloc leaves p's contents as they were. */
	if (t->n_env) {
		char **v = reallocarray(p->env, p->n_env + t->n_env, sizeof(*v));
		if (!v)
			return -ENOMEM;
		p->env = v;
	}
	if (t->n_ro_binds) {
		struct ts_bind *v =
			reallocarray(p->ro_binds, p->n_ro_binds + t->n_ro_binds, sizeof(*v));
		if (!v)
			return -ENOMEM;
		p->ro_binds = v;
	}
	if (t->n_protected) {
		char **v = reallocarray(p->protected_patterns, p->n_protected + t->n_protected,
					sizeof(*v));
		if (!v)
			return -ENOMEM;
		p->protected_patterns = v;
	}
	if (t->n_env)
		memcpy(p->env + p->n_env, t->env, t->n_env * sizeof(*t->env));
	p->n_env += t->n_env;
	t->n_env = 0;
	if (t->n_ro_binds)
		memcpy(p->ro_binds + p->n_ro_binds, t->ro_binds,
		       t->n_ro_binds * sizeof(*t->ro_binds));
	p->n_ro_binds += t->n_ro_binds;
	t->n_ro_binds = 0;
	if (t->n_protected)
		memcpy(p->protected_patterns + p->n_protected, t->protected_patterns,
		       t->n_protected * sizeof(*t->protected_patterns));
	p->n_protected += t->n_protected;
	t->n_protected = 0;
	if (set & SET_MEMORY)
		p->memory_bytes = t->memory_bytes;
	if (set & SET_PIDS)
		p->pids = t->pids;
	if (set & SET_CPUS)
		p->cpus = t->cpus;
	if (set & SET_TIMEOUT)
		p->timeout_ms = t->timeout_ms;
	if (set & SET_NOFILE)
		p->nofile = t->nofile;
	if (set & SET_FSIZE)
		p->fsize = t->fsize;
	if (set & SET_INOTIFY_INSTANCES)
		p->inotify_instances = t->inotify_instances;
	if (set & SET_SUDO)
		p->sudo = t->sudo;
	if (set & SET_NETWORK)
		p->network = t->network;
	memcpy(p->net_allow + p->n_net_allow, t->net_allow,
	       t->n_net_allow * sizeof(t->net_allow[0]));
	p->n_net_allow += t->n_net_allow;
	memcpy(p->net_deny + p->n_net_deny, t->net_deny, t->n_net_deny * sizeof(t->net_deny[0]));
	p->n_net_deny += t->n_net_deny;
	memcpy(p->net_names + p->n_net_names, t->net_names,
	       t->n_net_names * sizeof(t->net_names[0]));
	p->n_net_names += t->n_net_names;
	if (set & SET_INOTIFY_WATCHES)
		p->inotify_watches = t->inotify_watches;
	if (t->seccomp_profile) {
		free(p->seccomp_profile);
		p->seccomp_profile = TAKE_PTR(t->seccomp_profile);
	}
	return 0;
}

int ts_policy_load(struct ts_policy *p, const char *path, struct ts_error *err)
{
	_cleanup_free_ char *buf = NULL;
	struct ts_policy t;
	struct loader l = { .p = &t };
	size_t len = 0;
	int r;

	r = ts_yaml_read_file(path, POLICY_MAX_BYTES, &buf, &len, err);
	if (r < 0)
		return r;
	ts_policy_init(&t);
	r = ts_yaml_init(&l.y, path, buf, len, err);
	if (r == 0)
		r = ts_yaml_document(&l.y, parse_top, &l);
	ts_yaml_done(&l.y);
	if (r == 0) {
		r = merge(p, &t, l.set);
		if (r == -E2BIG)
			ts_err(err, r,
			       "`%s`: too many `network` entries over all policy files (at most %d "
			       "of each)",
			       path, TS_POLICY_MAX_NET_RULES);
		else if (r == -EXDEV) {
			struct ts_policy both;

			/* the message of the one check, for the two lists together */
			ts_policy_init(&both);
			both.net_names[0] = p->n_net_names ? p->net_names[0] : t.net_names[0];
			both.net_allow[0] = p->n_net_allow ? p->net_allow[0] : t.net_allow[0];
			both.n_net_names = both.n_net_allow = 1;
			r = ts_policy_check_network(&both, err);
			ts_err_prefix(err, r, "`%s`", path);
		} else if (r < 0)
			ts_yaml_nomem(&l.y);
	}
	ts_policy_free(&t);
	return r;
}

int ts_policy_add_env(struct ts_policy *p, const char *entry, struct ts_error *err)
{
	size_t n = env_name_len(entry);
	char b[SHOW_MAX + 4];
	char **v, *dup;

	if (!ts_policy_env_name_valid(entry, n))
		return ts_err(err, -EINVAL,
			      "invalid environment variable name `%s`: expected NAME or NAME=VALUE "
			      "with NAME matching [A-Za-z_][A-Za-z0-9_]*",
			      ts_yaml_show(b, entry, n));
	dup = strdup(entry);
	if (!dup)
		return ts_err(err, -ENOMEM, "out of memory");
	v = reallocarray(p->env, p->n_env + 1, sizeof(*v));
	if (!v) {
		free(dup);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	p->env = v;
	p->env[p->n_env++] = dup;
	return 0;
}

int ts_policy_add_protected(struct ts_policy *p, const char *pattern, struct ts_error *err)
{
	char b[SHOW_MAX + 4];
	char **v, *dup;

	if (!pattern[0])
		return ts_err(err, -EINVAL, "empty protected pattern");
	if (strchr(pattern, '/'))
		return ts_err(err, -EINVAL,
			      "invalid protected pattern `%s`: patterns match basenames and cannot "
			      "contain `/`",
			      ts_yaml_show(b, pattern, strlen(pattern)));
	dup = strdup(pattern);
	if (!dup)
		return ts_err(err, -ENOMEM, "out of memory");
	v = reallocarray(p->protected_patterns, p->n_protected + 1, sizeof(*v));
	if (!v) {
		free(dup);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	p->protected_patterns = v;
	p->protected_patterns[p->n_protected++] = dup;
	return 0;
}
