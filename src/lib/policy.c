/* SPDX-License-Identifier: Apache-2.0 */
#include "policy.h"

#include <errno.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "cleanup.h"
#include "util.h"

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
/* Longest value quoted back in an error message. */
#define SHOW_MAX 64

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
	yaml_parser_t parser;
	yaml_event_t ev;
	bool have_ev;
	const char *path;
	const char *buf;
	size_t len;
	struct ts_policy *p;  /* the temporary, merged into the caller's policy on success */
	unsigned set;	      /* SET_* flags: which scalars this file gave */
	yaml_mark_t key_mark; /* the key (or list entry) whose value is being parsed */
	size_t cap_env, cap_binds, cap_protected;
	struct ts_error *err;
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

/* Quote a value from the file into an error message: printable ASCII only, bounded. */
static const char *show(char buf[static SHOW_MAX + 4], const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len && i < SHOW_MAX; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (i < len) {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

static bool env_name_valid(const char *s, size_t len)
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

static int lerr(struct loader *l, const yaml_mark_t *m, int r, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int lerr(struct loader *l, const yaml_mark_t *m, int r, const char *fmt, ...)
{
	char msg[sizeof(l->err->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ts_err(l->err, r, "`%s`:%zu: %s", l->path, m->line + 1, msg);
	return r;
}

static int nomem(struct loader *l)
{
	return ts_err(l->err, -ENOMEM, "`%s`: out of memory", l->path);
}

static int syntax_error(struct loader *l)
{
	const yaml_parser_t *y = &l->parser;
	size_t line = y->problem_mark.line + 1;

	if (y->error == YAML_MEMORY_ERROR)
		return nomem(l);
	/* The reader (encoding errors) reports a byte offset, not a mark. */
	if (y->error == YAML_READER_ERROR) {
		line = 1;
		for (size_t i = 0; i < y->problem_offset && i < l->len; i++)
			line += l->buf[i] == '\n';
	}
	return ts_err(l->err, -EINVAL, "`%s`:%zu: invalid yaml: %s%s%s", l->path, line,
		      y->problem ? y->problem : "syntax error", y->context ? " " : "",
		      y->context ? y->context : "");
}

static int next(struct loader *l)
{
	if (l->have_ev) {
		yaml_event_delete(&l->ev);
		l->have_ev = false;
	}
	if (!yaml_parser_parse(&l->parser, &l->ev))
		return syntax_error(l);
	l->have_ev = true;
	/* Refusing aliases keeps every value where its line number says it is, and rules
	 * out exponential expansion ("billion laughs"). */
	if (l->ev.type == YAML_ALIAS_EVENT)
		return lerr(l, &l->ev.start_mark, -EINVAL, "aliases are not supported");
	/* an anchor is only ever there for an alias: refused alike, as the man page says */
	if ((l->ev.type == YAML_SCALAR_EVENT && l->ev.data.scalar.anchor) ||
	    (l->ev.type == YAML_SEQUENCE_START_EVENT && l->ev.data.sequence_start.anchor) ||
	    (l->ev.type == YAML_MAPPING_START_EVENT && l->ev.data.mapping_start.anchor))
		return lerr(l, &l->ev.start_mark, -EINVAL, "anchors are not supported");
	return 0;
}

static const char *kind(const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		return "a scalar";
	case YAML_SEQUENCE_START_EVENT:
		return "a sequence";
	case YAML_MAPPING_START_EVENT:
		return "a mapping";
	default:
		return "something else";
	}
}

static bool is_null(const yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;

	if (ev->type != YAML_SCALAR_EVENT || ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	return !strcmp(v, "") || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	       !strcmp(v, "NULL");
}

/*
 * The current event as a non-empty scalar value for key, without NUL bytes. A wrong type
 * or a missing value is reported at the key's line: a block collection's own mark is its
 * first child's, and an empty value has none worth showing.
 */
static int scalar(struct loader *l, const char *key, const char **ret)
{
	const yaml_event_t *ev = &l->ev;

	if (ev->type != YAML_SCALAR_EVENT)
		return lerr(l, &l->key_mark, -EINVAL, "expected a scalar for `%s`, got %s", key,
			    kind(ev));
	if (is_null(ev))
		return lerr(l, &l->key_mark, -EINVAL, "missing value for `%s`", key);
	if (strlen((const char *)ev->data.scalar.value) != ev->data.scalar.length)
		return lerr(l, &ev->start_mark, -EINVAL, "NUL byte in the value of `%s`", key);
	*ret = (const char *)ev->data.scalar.value;
	return 0;
}

/*
 * The current event is a key of the mapping named ctx (NULL at top level). Set *ret to
 * its index in keys; unknown and repeated keys are errors. seen tracks repeats.
 */
static int key(struct loader *l, const char *const *keys, size_t n_keys, const char *ctx,
	       unsigned *seen, size_t *ret)
{
	const yaml_event_t *ev = &l->ev;
	char b[SHOW_MAX + 4];
	const char *k;
	size_t len;

	if (ev->type != YAML_SCALAR_EVENT)
		return lerr(l, &ev->start_mark, -EINVAL, "expected a scalar key%s%s%s, got %s",
			    ctx ? " in `" : "", ctx ? ctx : "", ctx ? "`" : "", kind(ev));
	k = (const char *)ev->data.scalar.value;
	len = ev->data.scalar.length;
	for (size_t i = 0; i < n_keys; i++) {
		if (len != strlen(keys[i]) || memcmp(k, keys[i], len))
			continue;
		if (*seen & (1U << i))
			return lerr(l, &ev->start_mark, -EINVAL, "duplicate key `%s`%s%s%s",
				    keys[i], ctx ? " in `" : "", ctx ? ctx : "", ctx ? "`" : "");
		*seen |= 1U << i;
		*ret = i;
		l->key_mark = ev->start_mark;
		return 0;
	}
	return lerr(l, &ev->start_mark, -EINVAL, "unknown key `%s`%s%s%s", show(b, k, len),
		    ctx ? " in `" : "", ctx ? ctx : "", ctx ? "`" : "");
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

	r = scalar(l, name, &s);
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
		return lerr(l, &l->ev.start_mark, -EINVAL,
			    "invalid value `%s` for `%s`: %sexpected %s", show(b, s, strlen(s)),
			    name, ts_policy_too_large(r), want);
	return 0;
}

/* Expect a mapping (or null, meaning empty) for key; *empty says which. */
static int expect_container(struct loader *l, const char *name, yaml_event_type_t type, bool *empty)
{
	*empty = is_null(&l->ev);
	if (*empty || l->ev.type == type)
		return 0;
	return lerr(l, &l->key_mark, -EINVAL, "expected %s for `%s`, got %s",
		    type == YAML_MAPPING_START_EVENT ? "a mapping" : "a sequence", name,
		    kind(&l->ev));
}

static int parse_limits(struct loader *l)
{
	unsigned seen = 0;
	bool empty;
	int r;

	r = expect_container(l, "limits", YAML_MAPPING_START_EVENT, &empty);
	if (r < 0 || empty)
		return r;
	for (;;) {
		size_t idx = 0;

		r = next(l);
		if (r < 0)
			return r;
		if (l->ev.type == YAML_MAPPING_END_EVENT)
			return 0;
		r = key(l, limit_keys, ELEMENTSOF(limit_keys), "limits", &seen, &idx);
		if (r < 0)
			return r;
		r = next(l);
		if (r < 0)
			return r;
		r = parse_limit(l, idx);
		if (r < 0)
			return r;
	}
}

/* Call item() for each entry of the sequence (or null) at the current event. */
static int each_entry(struct loader *l, const char *name, int (*item)(struct loader *l))
{
	bool empty;
	int r;

	r = expect_container(l, name, YAML_SEQUENCE_START_EVENT, &empty);
	if (r < 0 || empty)
		return r;
	for (;;) {
		r = next(l);
		if (r < 0)
			return r;
		if (l->ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		l->key_mark = l->ev.start_mark;
		r = item(l);
		if (r < 0)
			return r;
	}
}

static int env_item(struct loader *l)
{
	struct ts_policy *p = l->p;
	char b[SHOW_MAX + 4];
	const char *s = NULL;
	char *dup;
	size_t n;
	int r;

	r = scalar(l, "env", &s);
	if (r < 0)
		return r;
	if (p->n_env >= TS_POLICY_MAX_ENV)
		return lerr(l, &l->ev.start_mark, -EINVAL, "more than %d entries in `env`",
			    TS_POLICY_MAX_ENV);
	/* Quote only the name: the value may be a secret (a token in an index URL). */
	n = env_name_len(s);
	if (!env_name_valid(s, n))
		return lerr(l, &l->ev.start_mark, -EINVAL,
			    "invalid name `%s` in `env`: expected NAME or NAME=VALUE with NAME "
			    "matching [A-Za-z_][A-Za-z0-9_]*",
			    show(b, s, n));
	if (grow((void **)&p->env, &l->cap_env, p->n_env, sizeof(*p->env)) < 0)
		return nomem(l);
	dup = strdup(s);
	if (!dup)
		return nomem(l);
	p->env[p->n_env++] = dup;
	return 0;
}

static int protected_item(struct loader *l)
{
	struct ts_policy *p = l->p;
	char b[SHOW_MAX + 4];
	const char *s = NULL;
	char *dup;
	int r;

	/* An empty quoted pattern gets the same message as a missing one. */
	if (l->ev.type == YAML_SCALAR_EVENT && l->ev.data.scalar.length == 0)
		return lerr(l, &l->ev.start_mark, -EINVAL, "empty pattern in `protected`");
	r = scalar(l, "protected", &s);
	if (r < 0)
		return r;
	if (strchr(s, '/'))
		return lerr(l, &l->ev.start_mark, -EINVAL,
			    "invalid pattern `%s` in `protected`: patterns match basenames and "
			    "cannot contain `/`",
			    show(b, s, strlen(s)));
	if (grow((void **)&p->protected_patterns, &l->cap_protected, p->n_protected,
		 sizeof(*p->protected_patterns)) < 0)
		return nomem(l);
	dup = strdup(s);
	if (!dup)
		return nomem(l);
	p->protected_patterns[p->n_protected++] = dup;
	return 0;
}

static int bind_path(struct loader *l, const char *name, bool is_dst, char **ret)
{
	char b[SHOW_MAX + 4];
	const char *s = NULL, *why = NULL;
	int r;

	r = scalar(l, name, &s);
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
		return lerr(l, &l->ev.start_mark, -EINVAL,
			    "invalid value `%s` for `%s` in `ro_binds`: %s", show(b, s, strlen(s)),
			    name, why);
	*ret = strdup(s);
	return *ret ? 0 : nomem(l);
}

static int bind_item(struct loader *l)
{
	static const char *const keys[] = { "src", "dst" };
	struct ts_policy *p = l->p;
	yaml_mark_t start = l->ev.start_mark;
	_cleanup_free_ char *src = NULL, *dst = NULL, *origin = NULL;
	unsigned seen = 0;
	int r;

	if (l->ev.type != YAML_MAPPING_START_EVENT)
		return lerr(l, &start, -EINVAL,
			    "expected a mapping with `src` and `dst` for a "
			    "`ro_binds` entry, got %s",
			    kind(&l->ev));
	for (;;) {
		size_t idx = 0;

		r = next(l);
		if (r < 0)
			return r;
		if (l->ev.type == YAML_MAPPING_END_EVENT)
			break;
		r = key(l, keys, ELEMENTSOF(keys), "ro_binds", &seen, &idx);
		if (r < 0)
			return r;
		r = next(l);
		if (r < 0)
			return r;
		r = bind_path(l, keys[idx], idx == 1, idx == 0 ? &src : &dst);
		if (r < 0)
			return r;
	}
	if (!src || !dst)
		return lerr(l, &start, -EINVAL, "missing `%s` in `ro_binds` entry",
			    !src ? "src" : "dst");
	if (grow((void **)&p->ro_binds, &l->cap_binds, p->n_ro_binds, sizeof(*p->ro_binds)) < 0 ||
	    asprintf(&origin, "`%s`:%zu", l->path, start.line + 1) < 0)
		return nomem(l);
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
	_cleanup_free_ char *cwd = NULL;
	const char *s = NULL, *slash;
	char *abs;
	int r, n;

	r = scalar(l, "seccomp", &s);
	if (r < 0)
		return r;
	if (s[0] == '/') {
		abs = strdup(s);
	} else {
		slash = strrchr(l->path, '/');
		if (l->path[0] != '/') {
			cwd = getcwd(NULL, 0);
			if (!cwd)
				return ts_err_errno(l->err, -errno, "`%s`: resolve `seccomp`",
						    l->path);
		}
		while (s[0] == '.' && s[1] == '/')
			s += 2 + strspn(s + 2, "/");
		n = asprintf(&abs, "%s%s%.*s/%s", cwd ? cwd : "", cwd && slash ? "/" : "",
			     slash ? (int)(slash - l->path) : 0, l->path, s);
		if (n < 0)
			abs = NULL;
	}
	if (!abs)
		return nomem(l);
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
	if (ts_cidr_parse(s, ret) == 0) {
		if (allow && ret->family == AF_INET6) {
			snprintf(why, why_len,
				 "IPv6 egress is not supported yet (IPv6 does not "
				 "leave a sandbox at all)");
			return -EINVAL;
		}
		return 0;
	}
	if (ts_cidr_looks_like_name(s))
		snprintf(why, why_len,
			 "name-based allow-lists are not supported yet: give address prefixes "
			 "like 192.0.2.0/24");
	else
		snprintf(why, why_len,
			 "not an address prefix: want ADDR or ADDR/LEN with the host bits zero, "
			 "like 10.1.0.0/16");
	return -EINVAL;
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

	r = expect_container(l, name, YAML_SEQUENCE_START_EVENT, &empty);
	if (r < 0 || empty)
		return r;
	for (;;) {
		const char *s = NULL;

		r = next(l);
		if (r < 0)
			return r;
		if (l->ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		r = scalar(l, name, &s);
		if (r < 0)
			return r;
		if (*n >= TS_POLICY_MAX_NET_RULES)
			return lerr(l, &l->ev.start_mark, -E2BIG,
				    "too many entries in `network.%s` (at most %d)", name,
				    TS_POLICY_MAX_NET_RULES);
		if (ts_policy_parse_net_entry(s, allow, &list[*n], why, sizeof(why)) < 0)
			return lerr(l, &l->ev.start_mark, -EINVAL,
				    "invalid entry `%s` in `network.%s`: %s", show(b, s, strlen(s)),
				    name, why);
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

	if (l->ev.type == YAML_SCALAR_EVENT) {
		const char *s = (const char *)l->ev.data.scalar.value;

		if (l->ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
		    (strcmp(s, "true") && strcmp(s, "false")))
			return lerr(l, &l->ev.start_mark, -EINVAL,
				    "invalid value `%s` for `network`: expected true, false or a "
				    "mapping with `allow` and `deny`",
				    show(b, s, strlen(s)));
		l->p->network = !strcmp(s, "true");
		l->set |= SET_NETWORK;
		return 0;
	}
	if (l->ev.type != YAML_MAPPING_START_EVENT)
		return lerr(l, &l->ev.start_mark, -EINVAL,
			    "expected true, false or a mapping for `network`, got %s",
			    kind(&l->ev));
	for (;;) {
		size_t idx = 0;

		r = next(l);
		if (r < 0)
			return r;
		if (l->ev.type == YAML_MAPPING_END_EVENT)
			break;
		r = key(l, keys, ELEMENTSOF(keys), "network", &seen, &idx);
		if (r < 0)
			return r;
		r = next(l);
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
	char b[SHOW_MAX + 4];
	const char *s = NULL;
	int r = scalar(l, "sudo", &s);

	if (r < 0)
		return r;
	if (l->ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return lerr(l, &l->ev.start_mark, -EINVAL,
			    "quoted value for `sudo`: expected true or false, unquoted");
	if (strcmp(s, "true") && strcmp(s, "false"))
		return lerr(l, &l->ev.start_mark, -EINVAL,
			    "invalid value `%s` for `sudo`: expected true or false",
			    show(b, s, strlen(s)));
	l->p->sudo = !strcmp(s, "true");
	l->set |= SET_SUDO;
	return 0;
}

static int parse_top(struct loader *l)
{
	unsigned seen = 0;
	char b[SHOW_MAX + 4];
	const char *s = NULL;
	int r;

	for (;;) {
		size_t idx = 0;

		r = next(l);
		if (r < 0)
			return r;
		if (l->ev.type == YAML_MAPPING_END_EVENT)
			return 0;
		r = key(l, top_keys, ELEMENTSOF(top_keys), NULL, &seen, &idx);
		if (r < 0)
			return r;
		r = next(l);
		if (r < 0)
			return r;
		switch (idx) {
		case 0:
			r = scalar(l, "version", &s);
			if (r == 0 && strcmp(s, "1"))
				r = lerr(l, &l->ev.start_mark, -EINVAL,
					 "unsupported value `%s` for `version`: expected 1",
					 show(b, s, strlen(s)));
			break;
		case 1:
			r = parse_limits(l);
			break;
		case 2:
			r = each_entry(l, "env", env_item);
			break;
		case 3:
			r = each_entry(l, "ro_binds", bind_item);
			break;
		case 4:
			r = each_entry(l, "protected", protected_item);
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

static int parse_stream(struct loader *l)
{
	int r;

	r = next(l); /* STREAM-START */
	if (r < 0)
		return r;
	r = next(l);
	if (r < 0)
		return r;
	if (l->ev.type == YAML_STREAM_END_EVENT)
		return 0; /* no document at all: only comments or nothing */
	r = next(l);	  /* the root node after DOCUMENT-START */
	if (r < 0)
		return r;
	if (l->ev.type == YAML_MAPPING_START_EVENT)
		r = parse_top(l);
	else if (!is_null(&l->ev))
		r = lerr(l, &l->ev.start_mark, -EINVAL,
			 "expected a mapping at the top level, got %s", kind(&l->ev));
	if (r < 0)
		return r;
	r = next(l); /* DOCUMENT-END */
	if (r < 0)
		return r;
	r = next(l);
	if (r < 0)
		return r;
	if (l->ev.type != YAML_STREAM_END_EVENT)
		return lerr(l, &l->ev.start_mark, -EINVAL, "only one yaml document is allowed");
	return 0;
}

static int read_policy(const char *path, char **ret, size_t *ret_len, struct ts_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap;
	struct stat st;

	/* O_NONBLOCK: a FIFO in place of the policy must not hang the caller. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return ts_err_errno(err, -errno, "open `%s`", path);
	if (fstat(fd, &st) < 0)
		return ts_err_errno(err, -errno, "stat `%s`", path);
	if (S_ISDIR(st.st_mode))
		return ts_err_errno(err, -EISDIR, "read `%s`", path);
	if (!S_ISREG(st.st_mode))
		return ts_err(err, -EINVAL, "read `%s`: not a regular file", path);
	if (st.st_size > POLICY_MAX_BYTES)
		return ts_err(err, -EFBIG, "read `%s`: larger than the 1 MiB limit", path);
	/* st_size may be 0 (procfs) or stale: read to EOF, bounded. */
	cap = (size_t)st.st_size + 1 < 4096 ? 4096 : (size_t)st.st_size + 1;
	buf = malloc(cap);
	if (!buf)
		return ts_err(err, -ENOMEM, "read `%s`: out of memory", path);
	for (;;) {
		ssize_t n;

		if (len + 1 >= cap) {
			char *nb;

			if (cap >= POLICY_MAX_BYTES + 2)
				return ts_err(err, -EFBIG, "read `%s`: larger than the 1 MiB limit",
					      path);
			cap = cap * 2 > POLICY_MAX_BYTES + 2 ? POLICY_MAX_BYTES + 2 : cap * 2;
			nb = realloc(buf, cap);
			if (!nb)
				return ts_err(err, -ENOMEM, "read `%s`: out of memory", path);
			buf = nb;
		}
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return ts_err_errno(err, -errno, "read `%s`", path);
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > POLICY_MAX_BYTES)
		return ts_err(err, -EFBIG, "read `%s`: larger than the 1 MiB limit", path);
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

/* Move t into p: scalars t set replace, lists append. Either all of it or nothing. */
static int merge(struct ts_policy *p, struct ts_policy *t, unsigned set)
{
	if (p->n_net_allow + t->n_net_allow > TS_POLICY_MAX_NET_RULES ||
	    p->n_net_deny + t->n_net_deny > TS_POLICY_MAX_NET_RULES)
		return -E2BIG;
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
	struct loader l = { .path = path, .p = &t, .err = err };
	size_t len = 0;
	int r;

	r = read_policy(path, &buf, &len, err);
	if (r < 0)
		return r;
	ts_policy_init(&t);
	if (!yaml_parser_initialize(&l.parser))
		return nomem(&l);
	l.buf = buf;
	l.len = len;
	yaml_parser_set_input_string(&l.parser, (const unsigned char *)buf, len);
	r = parse_stream(&l);
	if (l.have_ev)
		yaml_event_delete(&l.ev);
	yaml_parser_delete(&l.parser);
	if (r == 0) {
		r = merge(p, &t, l.set);
		if (r == -E2BIG)
			ts_err(err, r,
			       "`%s`: too many `network` entries over all policy files (at most %d "
			       "of each)",
			       path, TS_POLICY_MAX_NET_RULES);
		else if (r < 0)
			nomem(&l);
	}
	ts_policy_free(&t);
	return r;
}

int ts_policy_add_env(struct ts_policy *p, const char *entry, struct ts_error *err)
{
	size_t n = env_name_len(entry);
	char b[SHOW_MAX + 4];
	char **v, *dup;

	if (!env_name_valid(entry, n))
		return ts_err(err, -EINVAL,
			      "invalid environment variable name `%s`: expected NAME or NAME=VALUE "
			      "with NAME matching [A-Za-z_][A-Za-z0-9_]*",
			      show(b, entry, n));
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
			      show(b, pattern, strlen(pattern)));
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
