/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OCI/Docker seccomp profile (JSON) to classic BPF, through libseccomp.
 *
 * libseccomp does not keep Docker's "first matching rule wins" order. It merges all rules
 * for a syscall into one decision tree, and in 2.5:
 *   - an unconditional rule replaces every conditional rule for that syscall, whatever
 *     their actions, and a conditional rule added after it is dropped with rc 0;
 *   - a rule whose action equals the default action is refused (-EACCES);
 *   - one rule may compare each argument at most once (-EINVAL).
 * A profile whose meaning would silently change under these rules ("allow ioctl" plus
 * "deny ioctl TIOCSTI") is rejected with an error that names the rules, so a profile can
 * never compile looser than it reads. Rules equal to the default action are redundant and
 * skipped, as runc does.
 */
#include "seccomp-compile.h"
#include "seccomp-setid.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <linux/filter.h>
#include <nettle/sha2.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cleanup.h"
#include "util.h"

/* Part of the cache key: bump whenever the same inputs would compile differently. */
#define TS_SECCOMP_COMPILER_VERSION "toren-seccomp-compile/1"

#define PROFILE_MAX_BYTES (4U << 20)
/*
 * Syscall numbers below this that libseccomp cannot name and our table below does not
 * know get ENOSYS instead of the default action. 1024 covers every native table in use
 * (x86_64 ends near 470, plus the x32 slots 512..547 that 64-bit callers never reach).
 */
#define NR_SCAN_LIMIT 1024
#define ARG_COUNT 6

static void scmp_ctx_freep(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}

/*
 * Syscalls newer than libseccomp 2.5.4's tables (Debian 12's copy names up to 456,
 * upstream's stops earlier). From 424 on every architecture except alpha, mips and ia64
 * shares one numbering. Consulted only when libseccomp cannot resolve a name, so a newer
 * libseccomp always wins.
 */
static const struct {
	const char *name;
	int nr;
} newer_syscalls[] = {
	{ "cachestat", 451 },	      { "fchmodat2", 452 },	   { "map_shadow_stack", 453 },
	{ "futex_wake", 454 },	      { "futex_wait", 455 },	   { "futex_requeue", 456 },
	{ "statmount", 457 },	      { "listmount", 458 },	   { "lsm_get_self_attr", 459 },
	{ "lsm_set_self_attr", 460 }, { "lsm_list_modules", 461 }, { "mseal", 462 },
	{ "setxattrat", 463 },	      { "getxattrat", 464 },	   { "listxattrat", 465 },
	{ "removexattrat", 466 },     { "open_tree_attr", 467 },   { "file_getattr", 468 },
	{ "file_setattr", 469 },
};

/* Native architectures we compile for, with the two spellings profiles use. */
static const struct arch_name {
	uint32_t token;
	const char *scmp; /* "architectures": SCMP_ARCH_* */
	const char *go;	  /* includes/excludes "arches": Go's GOARCH */
} arch_names[] = {
	{ SCMP_ARCH_X86_64, "SCMP_ARCH_X86_64", "amd64" },
	{ SCMP_ARCH_AARCH64, "SCMP_ARCH_AARCH64", "arm64" },
	{ SCMP_ARCH_PPC64LE, "SCMP_ARCH_PPC64LE", "ppc64le" },
	{ SCMP_ARCH_S390X, "SCMP_ARCH_S390X", "s390x" },
	{ SCMP_ARCH_RISCV64, "SCMP_ARCH_RISCV64", "riscv64" },
};

struct rule {
	int nr;
	uint32_t action;
	unsigned int n_args;
	struct scmp_arg_cmp args[ARG_COUNT];
	size_t index;	  /* position in syscalls[], for messages */
	const char *name; /* borrowed from the JSON tree */
};

struct compiler {
	const char *path;
	const struct arch_name *arch;
	unsigned int kver[3];
	uint32_t def_action;
	bool has_def_errno;
	unsigned int def_errno;
	struct rule *rules;
	size_t n_rules, cap_rules;
	uint8_t known[NR_SCAN_LIMIT / 8];
};

static const struct arch_name *native_arch(void)
{
	uint32_t token = seccomp_arch_native();

	for (size_t i = 0; i < ELEMENTSOF(arch_names); i++)
		if (arch_names[i].token == token)
			return &arch_names[i];
	return NULL;
}

static int newer_syscall_nr(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(newer_syscalls); i++)
		if (strcmp(newer_syscalls[i].name, name) == 0)
			return newer_syscalls[i].nr;
	return __NR_SCMP_ERROR;
}

static bool newer_syscall_known(int nr)
{
	for (size_t i = 0; i < ELEMENTSOF(newer_syscalls); i++)
		if (newer_syscalls[i].nr == nr)
			return true;
	return false;
}

/* Bitmap of the numbers below NR_SCAN_LIMIT that libseccomp or our table can name. */
static void known_syscalls(uint32_t arch, uint8_t *bitmap)
{
	memset(bitmap, 0, NR_SCAN_LIMIT / 8);
	for (int nr = 0; nr < NR_SCAN_LIMIT; nr++) {
		char *name = seccomp_syscall_resolve_num_arch(arch, nr);

		if (name || newer_syscall_known(nr))
			bitmap[nr / 8] |= (uint8_t)(1U << (nr % 8));
		free(name);
	}
}

static bool bit_test(const uint8_t *bitmap, int nr)
{
	return bitmap[nr / 8] & (1U << (nr % 8));
}

/* "6.18.44-foo" or "4.8" into up to three numbers; missing parts are 0. */
static int parse_kernel_version(const char *s, unsigned int v[3])
{
	v[0] = v[1] = v[2] = 0;
	for (int i = 0; i < 3; i++) {
		char *end;
		unsigned long n;

		if (*s < '0' || *s > '9')
			return i > 0 ? 0 : -EINVAL;
		errno = 0;
		n = strtoul(s, &end, 10);
		if (errno || n > UINT_MAX)
			return -EINVAL;
		v[i] = (unsigned int)n;
		if (*end != '.')
			return 0;
		s = end + 1;
	}
	return 0;
}

static int kernel_version_cmp(const unsigned int a[3], const unsigned int b[3])
{
	for (int i = 0; i < 3; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

static const char *rule_label(json_t *rule)
{
	json_t *v = json_object_get(rule, "names");

	if (json_is_array(v) && json_is_string(json_array_get(v, 0)))
		return json_string_value(json_array_get(v, 0));
	v = json_object_get(rule, "name");
	if (json_is_string(v))
		return json_string_value(v);
	return "?";
}

static void action_name(uint32_t action, char *buf, size_t len)
{
	switch (action & 0xffff0000U) {
	case SCMP_ACT_ALLOW:
		snprintf(buf, len, "SCMP_ACT_ALLOW");
		break;
	case SCMP_ACT_ERRNO(0):
		snprintf(buf, len, "SCMP_ACT_ERRNO(%u)", action & 0xffffU);
		break;
	case SCMP_ACT_TRACE(0):
		snprintf(buf, len, "SCMP_ACT_TRACE(%u)", action & 0xffffU);
		break;
	case SCMP_ACT_KILL_PROCESS:
		snprintf(buf, len, "SCMP_ACT_KILL_PROCESS");
		break;
	case SCMP_ACT_KILL_THREAD:
		snprintf(buf, len, "SCMP_ACT_KILL_THREAD");
		break;
	case SCMP_ACT_TRAP:
		snprintf(buf, len, "SCMP_ACT_TRAP");
		break;
	case SCMP_ACT_LOG:
		snprintf(buf, len, "SCMP_ACT_LOG");
		break;
	default:
		snprintf(buf, len, "0x%08x", action);
	}
}

/*
 * errnoRet (or, failing that, defaultErrnoRet) parameterises ERRNO and TRACE. ERRNO values
 * stop at TS_SECCOMP_MAX_ERRNO: larger ones are not errors to libc (MAX_ERRNO is 4095),
 * and libseccomp 2.5 refuses 4095 itself (as an opaque failure to create the filter).
 */
#define TS_SECCOMP_MAX_ERRNO 4094

static int parse_action(struct compiler *c, const char *what, json_t *jact, json_t *jret,
			uint32_t *ret, struct ts_error *err)
{
	const char *s;
	unsigned int data = 0;
	bool has_data = false;

	if (!json_is_string(jact))
		return ts_err(err, -EINVAL, "`%s`: %s: `action` must be a string", c->path, what);
	s = json_string_value(jact);
	if (jret && !json_is_null(jret)) {
		json_int_t v;

		if (!json_is_integer(jret))
			return ts_err(err, -EINVAL, "`%s`: %s: `errnoRet` must be an integer",
				      c->path, what);
		v = json_integer_value(jret);
		if (v < 0 || v > 0xffff)
			return ts_err(err, -ERANGE, "`%s`: %s: `errnoRet` %lld out of range",
				      c->path, what, (long long)v);
		data = (unsigned int)v;
		has_data = true;
	} else if (c->has_def_errno) {
		data = c->def_errno;
		has_data = true;
	}

	if (strcmp(s, "SCMP_ACT_ALLOW") == 0)
		*ret = SCMP_ACT_ALLOW;
	else if (strcmp(s, "SCMP_ACT_ERRNO") == 0) {
		if (!has_data)
			data = EPERM;
		if (data > TS_SECCOMP_MAX_ERRNO)
			return ts_err(err, -ERANGE, "`%s`: %s: errno %u out of range (1..%d)",
				      c->path, what, data, TS_SECCOMP_MAX_ERRNO);
		*ret = SCMP_ACT_ERRNO(data);
	} else if (strcmp(s, "SCMP_ACT_KILL") == 0 || strcmp(s, "SCMP_ACT_KILL_THREAD") == 0)
		*ret = SCMP_ACT_KILL_THREAD;
	else if (strcmp(s, "SCMP_ACT_KILL_PROCESS") == 0)
		*ret = SCMP_ACT_KILL_PROCESS;
	else if (strcmp(s, "SCMP_ACT_TRAP") == 0)
		*ret = SCMP_ACT_TRAP;
	else if (strcmp(s, "SCMP_ACT_LOG") == 0)
		*ret = SCMP_ACT_LOG;
	else if (strcmp(s, "SCMP_ACT_TRACE") == 0)
		*ret = SCMP_ACT_TRACE(data);
	else
		return ts_err(err, -EINVAL, "`%s`: %s: unknown action `%s`", c->path, what, s);
	return 0;
}

static int parse_u64(struct compiler *c, const char *what, const char *key, json_t *j,
		     uint64_t *ret, struct ts_error *err)
{
	json_int_t v;

	if (!j || json_is_null(j)) {
		*ret = 0;
		return 0;
	}
	/* jansson integers are signed 64-bit: values above 2^63-1 fail to parse at all. */
	if (!json_is_integer(j) || (v = json_integer_value(j)) < 0)
		return ts_err(err, -EINVAL, "`%s`: %s: `%s` must be a non-negative integer",
			      c->path, what, key);
	*ret = (uint64_t)v;
	return 0;
}

static int check_keys(struct compiler *c, const char *what, json_t *obj, const char *const *allowed,
		      struct ts_error *err)
{
	const char *key;
	json_t *v;

	/*
	 * Unknown keys are errors, not ignored: a misspelt "args" would otherwise turn a
	 * conditional allow into an unconditional one.
	 */
	json_object_foreach(obj, key, v) {
		bool ok = false;

		for (size_t i = 0; allowed[i]; i++)
			if (strcmp(key, allowed[i]) == 0)
				ok = true;
		if (!ok)
			return ts_err(err, -EINVAL, "`%s`: %s: unknown key `%s`", c->path, what,
				      key);
	}
	return 0;
}

static int parse_args(struct compiler *c, const char *what, json_t *jargs, struct rule *rule,
		      struct ts_error *err)
{
	static const char *const keys[] = { "index", "value", "valueTwo", "op", NULL };
	static const struct {
		const char *name;
		enum scmp_compare op;
	} ops[] = {
		{ "SCMP_CMP_NE", SCMP_CMP_NE },
		{ "SCMP_CMP_LT", SCMP_CMP_LT },
		{ "SCMP_CMP_LE", SCMP_CMP_LE },
		{ "SCMP_CMP_EQ", SCMP_CMP_EQ },
		{ "SCMP_CMP_GE", SCMP_CMP_GE },
		{ "SCMP_CMP_GT", SCMP_CMP_GT },
		{ "SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ },
	};
	bool seen[ARG_COUNT] = { false };
	size_t i;
	json_t *a;
	int r;

	rule->n_args = 0;
	if (!jargs || json_is_null(jargs))
		return 0;
	if (!json_is_array(jargs))
		return ts_err(err, -EINVAL, "`%s`: %s: `args` must be an array", c->path, what);
	if (json_array_size(jargs) > ARG_COUNT)
		return ts_err(err, -EINVAL, "`%s`: %s: more than %d argument comparisons", c->path,
			      what, ARG_COUNT);

	json_array_foreach(jargs, i, a) {
		struct scmp_arg_cmp *cmp = &rule->args[rule->n_args];
		json_t *jindex = json_object_get(a, "index"), *jop = json_object_get(a, "op");
		uint64_t value = 0, value2 = 0;
		json_int_t index;
		const char *op;
		bool found = false;

		if (!json_is_object(a))
			return ts_err(err, -EINVAL, "`%s`: %s: args[%zu] is not an object", c->path,
				      what, i);
		r = check_keys(c, what, a, keys, err);
		if (r < 0)
			return r;
		if (!json_is_integer(jindex) || (index = json_integer_value(jindex)) < 0 ||
		    index >= ARG_COUNT)
			return ts_err(err, -EINVAL, "`%s`: %s: args[%zu]: `index` must be 0..5",
				      c->path, what, i);
		/*
		 * libseccomp compares an argument once per rule; runc instead splits such a
		 * rule into one rule per comparison, which turns "a0 != 38 and a0 != 40"
		 * into "always". Refuse the ambiguity.
		 */
		if (seen[index])
			return ts_err(err, -EINVAL,
				      "`%s`: %s: argument %lld compared twice in one rule; split "
				      "it into rules that each compare it once",
				      c->path, what, (long long)index);
		seen[index] = true;
		if (!json_is_string(jop))
			return ts_err(err, -EINVAL, "`%s`: %s: args[%zu]: `op` must be a string",
				      c->path, what, i);
		op = json_string_value(jop);
		for (size_t k = 0; k < ELEMENTSOF(ops); k++) {
			if (strcmp(op, ops[k].name) == 0) {
				cmp->op = ops[k].op;
				found = true;
			}
		}
		if (!found)
			return ts_err(err, -EINVAL, "`%s`: %s: args[%zu]: unknown op `%s`", c->path,
				      what, i, op);
		r = parse_u64(c, what, "value", json_object_get(a, "value"), &value, err);
		if (r < 0)
			return r;
		r = parse_u64(c, what, "valueTwo", json_object_get(a, "valueTwo"), &value2, err);
		if (r < 0)
			return r;
		cmp->arg = (unsigned int)index;
		/* Docker's MASKED_EQ: value is the mask, valueTwo the expected result. */
		cmp->datum_a = value;
		cmp->datum_b = cmp->op == SCMP_CMP_MASKED_EQ ? value2 : 0;
		rule->n_args++;
	}
	return 0;
}

static int string_in_array(json_t *arr, const char *s, bool *ret)
{
	size_t i;
	json_t *v;

	*ret = false;
	json_array_foreach(arr, i, v) {
		if (!json_is_string(v))
			return -EINVAL;
		if (strcmp(json_string_value(v), s) == 0)
			*ret = true;
	}
	return 0;
}

/*
 * includes: every present condition must hold. excludes: any present condition that holds
 * drops the rule. We grant no capabilities, so includes.caps never holds and excludes.caps
 * never drops.
 */
static int filter_holds(struct compiler *c, const char *what, json_t *f, bool include, bool *ret,
			struct ts_error *err)
{
	static const char *const keys[] = { "arches", "caps", "minKernel", NULL };
	const char *name = include ? "includes" : "excludes";
	json_t *arches, *caps, *min;
	bool any = false, all = true;
	int r;

	*ret = include;
	if (!f || json_is_null(f))
		return 0;
	if (!json_is_object(f))
		return ts_err(err, -EINVAL, "`%s`: %s: `%s` must be an object", c->path, what,
			      name);
	r = check_keys(c, what, f, keys, err);
	if (r < 0)
		return r;

	arches = json_object_get(f, "arches");
	if (arches && !json_is_null(arches)) {
		bool a = false, b = false;

		if (!json_is_array(arches) || string_in_array(arches, c->arch->go, &a) < 0 ||
		    string_in_array(arches, c->arch->scmp, &b) < 0)
			return ts_err(err, -EINVAL, "`%s`: %s: `%s.arches` must be strings",
				      c->path, what, name);
		if (json_array_size(arches) > 0) {
			any |= a || b;
			all &= a || b;
		}
	}
	caps = json_object_get(f, "caps");
	if (caps && !json_is_null(caps)) {
		if (!json_is_array(caps))
			return ts_err(err, -EINVAL, "`%s`: %s: `%s.caps` must be an array", c->path,
				      what, name);
		if (json_array_size(caps) > 0)
			all = false;
	}
	min = json_object_get(f, "minKernel");
	if (min && !json_is_null(min)) {
		unsigned int v[3];
		bool at_least;

		if (!json_is_string(min) || parse_kernel_version(json_string_value(min), v) < 0)
			return ts_err(err, -EINVAL, "`%s`: %s: bad `%s.minKernel`", c->path, what,
				      name);
		at_least = kernel_version_cmp(c->kver, v) >= 0;
		any |= at_least;
		all &= at_least;
	}
	*ret = include ? all : any;
	return 0;
}

static int add_rule(struct compiler *c, const struct rule *rule)
{
	if (c->n_rules == c->cap_rules) {
		size_t n = c->cap_rules ? c->cap_rules * 2 : 256;
		struct rule *p = reallocarray(c->rules, n, sizeof(*p));

		if (!p)
			return -ENOMEM;
		c->rules = p;
		c->cap_rules = n;
	}
	c->rules[c->n_rules++] = *rule;
	return 0;
}

/*
 * Unknown names are skipped, as Docker does, so one profile serves several kernels and
 * architectures. Negative numbers are libseccomp's pseudo syscalls: names that exist on
 * other architectures only.
 */
static int add_named_rule(struct compiler *c, struct rule *rule, const char *name)
{
	int nr = seccomp_syscall_resolve_name_arch(c->arch->token, name);

	if (nr == __NR_SCMP_ERROR)
		nr = newer_syscall_nr(name);
	if (nr < 0)
		return 0;
	rule->nr = nr;
	rule->name = name;
	return add_rule(c, rule);
}

static int parse_rule(struct compiler *c, size_t idx, json_t *jrule, struct ts_error *err)
{
	static const char *const keys[] = { "names",   "name",	   "action",   "errnoRet", "args",
					    "comment", "includes", "excludes", NULL };
	json_t *names, *jname, *v;
	struct rule rule = { .index = idx };
	bool inc, exc;
	char what[160];
	size_t i;
	int r;

	if (!json_is_object(jrule))
		return ts_err(err, -EINVAL, "`%s`: syscalls[%zu] is not an object", c->path, idx);
	snprintf(what, sizeof(what), "syscalls[%zu] (`%s`)", idx, rule_label(jrule));
	r = check_keys(c, what, jrule, keys, err);
	if (r < 0)
		return r;

	names = json_object_get(jrule, "names");
	jname = json_object_get(jrule, "name");
	if (names && !json_is_null(names)) {
		if (!json_is_array(names))
			return ts_err(err, -EINVAL, "`%s`: %s: `names` must be an array", c->path,
				      what);
		json_array_foreach(names, i, v) {
			if (!json_is_string(v))
				return ts_err(err, -EINVAL, "`%s`: %s: `names` must be strings",
					      c->path, what);
		}
	}
	if (jname && !json_is_null(jname) && !json_is_string(jname))
		return ts_err(err, -EINVAL, "`%s`: %s: `name` must be a string", c->path, what);

	/* Validate everything before deciding whether the rule applies here. */
	r = parse_action(c, what, json_object_get(jrule, "action"),
			 json_object_get(jrule, "errnoRet"), &rule.action, err);
	if (r < 0)
		return r;
	r = parse_args(c, what, json_object_get(jrule, "args"), &rule, err);
	if (r < 0)
		return r;
	r = filter_holds(c, what, json_object_get(jrule, "includes"), true, &inc, err);
	if (r < 0)
		return r;
	r = filter_holds(c, what, json_object_get(jrule, "excludes"), false, &exc, err);
	if (r < 0)
		return r;
	if (!inc || exc)
		return 0;

	if (json_is_array(names)) {
		json_array_foreach(names, i, v) {
			r = add_named_rule(c, &rule, json_string_value(v));
			if (r < 0)
				return ts_err(err, r, "`%s`: out of memory", c->path);
		}
	}
	if (json_is_string(jname)) {
		r = add_named_rule(c, &rule, json_string_value(jname));
		if (r < 0)
			return ts_err(err, r, "`%s`: out of memory", c->path);
	}
	return 0;
}

/* The values x satisfying a range-like comparison, as at most two closed intervals. */
static unsigned int cmp_intervals(const struct scmp_arg_cmp *c, uint64_t iv[2][2])
{
	uint64_t v = c->datum_a;

	switch (c->op) {
	case SCMP_CMP_EQ:
		iv[0][0] = iv[0][1] = v;
		return 1;
	case SCMP_CMP_LT:
		if (v == 0)
			return 0;
		iv[0][0] = 0;
		iv[0][1] = v - 1;
		return 1;
	case SCMP_CMP_LE:
		iv[0][0] = 0;
		iv[0][1] = v;
		return 1;
	case SCMP_CMP_GT:
		if (v == UINT64_MAX)
			return 0;
		iv[0][0] = v + 1;
		iv[0][1] = UINT64_MAX;
		return 1;
	case SCMP_CMP_GE:
		iv[0][0] = v;
		iv[0][1] = UINT64_MAX;
		return 1;
	case SCMP_CMP_NE: {
		unsigned int n = 0;

		if (v > 0) {
			iv[n][0] = 0;
			iv[n++][1] = v - 1;
		}
		if (v < UINT64_MAX) {
			iv[n][0] = v + 1;
			iv[n++][1] = UINT64_MAX;
		}
		return n;
	}
	default:
		return 0;
	}
}

/* Can one argument value satisfy both comparisons? false only when provably not. */
static bool cmp_compatible(const struct scmp_arg_cmp *a, const struct scmp_arg_cmp *b)
{
	uint64_t ia[2][2], ib[2][2];
	unsigned int na, nb;

	if (a->op == SCMP_CMP_MASKED_EQ && b->op != SCMP_CMP_MASKED_EQ) {
		const struct scmp_arg_cmp *t = a;

		a = b;
		b = t;
	}
	if (b->op == SCMP_CMP_MASKED_EQ) {
		uint64_t m = b->datum_a, v = b->datum_b;

		if (v & ~m)
			return false; /* (x & m) == v never holds */
		if (a->op == SCMP_CMP_MASKED_EQ)
			return !(a->datum_b & ~a->datum_a) && !((a->datum_b ^ v) & a->datum_a & m);
		if (a->op == SCMP_CMP_EQ)
			return (a->datum_a & m) == v;
		if (a->op == SCMP_CMP_NE)
			return !(m == UINT64_MAX && v == a->datum_a);
		return true; /* a range against a mask: assume they meet */
	}
	na = cmp_intervals(a, ia);
	nb = cmp_intervals(b, ib);
	for (unsigned int i = 0; i < na; i++)
		for (unsigned int j = 0; j < nb; j++)
			if (ia[i][0] <= ib[j][1] && ib[j][0] <= ia[i][1])
				return true;
	return false;
}

static bool rules_may_overlap(const struct rule *a, const struct rule *b)
{
	for (unsigned int i = 0; i < a->n_args; i++)
		for (unsigned int j = 0; j < b->n_args; j++)
			if (a->args[i].arg == b->args[j].arg &&
			    !cmp_compatible(&a->args[i], &b->args[j]))
				return false;
	return true;
}

/*
 * libseccomp keeps no profile order: an unconditional rule overrides the syscall's other
 * rules, and where two conditional rules with different actions both match, its tree
 * decides. Refuse any pair of rules for one syscall that have different actions and that
 * some arguments could match both (rules equal to the default action included: they
 * say what the author meant even though they are not added).
 */
static int check_conflicts(struct compiler *c, struct ts_error *err)
{
	for (size_t i = 0; i < c->n_rules; i++) {
		const struct rule *a = &c->rules[i];

		for (size_t j = i + 1; j < c->n_rules; j++) {
			const struct rule *b = &c->rules[j];
			char an[40], bn[40];

			if (b->nr != a->nr || b->action == a->action || !rules_may_overlap(a, b))
				continue;
			action_name(a->action, an, sizeof(an));
			action_name(b->action, bn, sizeof(bn));
			return ts_err(err, -EINVAL,
				      "`%s`: syscalls[%zu] (%s) and syscalls[%zu] (%s) can both "
				      "match `%s`; libseccomp keeps no rule order, so make their "
				      "conditions exclusive",
				      c->path, a->index, an, b->index, bn, a->name);
		}
	}
	return 0;
}

static int parse_profile(struct compiler *c, json_t *root, struct ts_error *err)
{
	json_t *jdef, *jerrno, *arches, *archmap, *syscalls, *v;
	bool listed = false, any_listed = false;
	size_t i;
	int r;

	if (!json_is_object(root))
		return ts_err(err, -EINVAL, "`%s`: the profile must be a JSON object", c->path);

	jerrno = json_object_get(root, "defaultErrnoRet");
	if (jerrno && !json_is_null(jerrno)) {
		if (!json_is_integer(jerrno) || json_integer_value(jerrno) < 0 ||
		    json_integer_value(jerrno) > TS_SECCOMP_MAX_ERRNO)
			return ts_err(err, -EINVAL, "`%s`: bad `defaultErrnoRet` (want 0..%d)",
				      c->path, TS_SECCOMP_MAX_ERRNO);
		c->def_errno = (unsigned int)json_integer_value(jerrno);
		c->has_def_errno = true;
	}
	jdef = json_object_get(root, "defaultAction");
	if (!jdef)
		return ts_err(err, -EINVAL, "`%s`: missing `defaultAction`", c->path);
	r = parse_action(c, "defaultAction", jdef, NULL, &c->def_action, err);
	if (r < 0)
		return r;

	/*
	 * "architectures" (and archMap's "architecture") say which ABIs the profile was
	 * written for. We filter the native one only and kill the rest, so the one check
	 * left is that the profile claims the native ABI at all.
	 */
	arches = json_object_get(root, "architectures");
	if (arches && !json_is_null(arches)) {
		if (!json_is_array(arches) || string_in_array(arches, c->arch->scmp, &listed) < 0)
			return ts_err(err, -EINVAL, "`%s`: `architectures` must be strings",
				      c->path);
		any_listed |= json_array_size(arches) > 0;
	}
	archmap = json_object_get(root, "archMap");
	if (archmap && !json_is_null(archmap)) {
		if (!json_is_array(archmap))
			return ts_err(err, -EINVAL, "`%s`: `archMap` must be an array", c->path);
		json_array_foreach(archmap, i, v) {
			json_t *a = json_object_get(v, "architecture");

			if (!json_is_string(a))
				return ts_err(err, -EINVAL,
					      "`%s`: archMap[%zu]: `architecture` must be a string",
					      c->path, i);
			any_listed = true;
			listed |= strcmp(json_string_value(a), c->arch->scmp) == 0;
		}
	}
	if (any_listed && !listed)
		return ts_err(err, -EINVAL, "`%s`: the profile does not cover the native `%s`",
			      c->path, c->arch->scmp);

	syscalls = json_object_get(root, "syscalls");
	if (syscalls && !json_is_null(syscalls)) {
		if (!json_is_array(syscalls))
			return ts_err(err, -EINVAL, "`%s`: `syscalls` must be an array", c->path);
		json_array_foreach(syscalls, i, v) {
			r = parse_rule(c, i, v, err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int ts_seccomp_read_profile(const char *path, char **ret, size_t *ret_len, struct ts_error *err)
{
	int r = ts_read_file_at(AT_FDCWD, path, PROFILE_MAX_BYTES, ret, ret_len);

	if (r == -EFBIG)
		return ts_err(err, r, "seccomp profile `%s` is larger than %u bytes", path,
			      PROFILE_MAX_BYTES);
	if (r < 0)
		return ts_err_errno(err, r, "read seccomp profile `%s`", path);
	return 0;
}

static int build_filter(struct compiler *c, scmp_filter_ctx *ret, struct ts_error *err)
{
	_cleanup_(scmp_ctx_freep) scmp_filter_ctx ctx = NULL;
	uint8_t has_rule[NR_SCAN_LIMIT / 8] = { 0 };
	int clone3_nr, r;

	ctx = seccomp_init(c->def_action);
	if (!ctx)
		return ts_err(err, -ENOMEM, "`%s`: cannot create a seccomp filter", c->path);
	/* Real errno values from libseccomp instead of its generic -ECANCELED. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
	if (r < 0)
		return ts_err_errno(err, r, "`%s`: set SCMP_FLTATR_API_SYSRAWRC", c->path);
	/*
	 * seccomp_init() filters the native ABI only, so any other audit arch (i386 via
	 * int 0x80, whose socketcall hides its arguments) hits the bad-arch action, and
	 * libseccomp's x86_64 prologue sends x32 numbers (nr | 0x40000000) there too.
	 */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r < 0)
		return ts_err_errno(err, r, "`%s`: set the bad-arch action", c->path);
	/* The helper sets no_new_privs itself; this only affects seccomp_load(). */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (r < 0)
		return ts_err_errno(err, r, "`%s`: clear SCMP_FLTATR_CTL_NNP", c->path);
	/* A binary tree over syscall numbers: the filter runs on every syscall. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (r < 0)
		return ts_err_errno(err, r, "`%s`: set SCMP_FLTATR_CTL_OPTIMIZE", c->path);

	/* clone3's flags sit behind a pointer: ENOSYS makes libc fall back to clone. */
	clone3_nr = seccomp_syscall_resolve_name_arch(c->arch->token, "clone3");
	if (clone3_nr >= 0) {
		struct rule rule = { .nr = clone3_nr,
				     .action = SCMP_ACT_ERRNO(ENOSYS),
				     .index = SIZE_MAX,
				     .name = "clone3" };
		size_t k = 0;

		for (size_t i = 0; i < c->n_rules; i++)
			if (c->rules[i].nr != clone3_nr)
				c->rules[k++] = c->rules[i];
		c->n_rules = k;
		r = add_rule(c, &rule);
		if (r < 0)
			return ts_err(err, r, "`%s`: out of memory", c->path);
	}

	r = check_conflicts(c, err);
	if (r < 0)
		return r;

	for (size_t i = 0; i < c->n_rules; i++) {
		const struct rule *rule = &c->rules[i];

		if (rule->nr < NR_SCAN_LIMIT)
			has_rule[rule->nr / 8] |= (uint8_t)(1U << (rule->nr % 8));
		if (rule->action == c->def_action)
			continue;
		r = seccomp_rule_add_exact_array(ctx, rule->action, rule->nr, rule->n_args,
						 rule->n_args ? rule->args : NULL);
		if (r < 0)
			return ts_err_errno(err, r, "`%s`: syscalls[%zu] (`%s`): add rule", c->path,
					    rule->index, rule->name);
	}

	/*
	 * Numbers neither libseccomp nor our table can name are newer than both: ENOSYS,
	 * so libc and language runtimes take their fallback path instead of failing on
	 * EPERM (runc does the same).
	 */
	if (c->def_action != SCMP_ACT_ERRNO(ENOSYS)) {
		for (int nr = 0; nr < NR_SCAN_LIMIT; nr++) {
			if (bit_test(c->known, nr) || bit_test(has_rule, nr))
				continue;
			r = seccomp_rule_add_exact(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
			if (r < 0)
				return ts_err_errno(err, r, "`%s`: add ENOSYS rule for %d", c->path,
						    nr);
		}
	}

	*ret = TAKE_PTR(ctx);
	return 0;
}

/* Parse and build from bytes already in memory (the same bytes the cache key hashed). */
static int compile_buf(const char *path, const char *buf, size_t len, unsigned flags,
		       scmp_filter_ctx *ret, struct ts_error *err)
{
	json_auto_t *root = NULL;
	struct compiler c = { .path = path };
	struct utsname u;
	json_error_t jerr;
	int r;

	c.arch = native_arch();
	if (!c.arch)
		return ts_err(err, -EOPNOTSUPP, "seccomp: unsupported native architecture 0x%x",
			      seccomp_arch_native());
	if (uname(&u) < 0 || parse_kernel_version(u.release, c.kver) < 0)
		return ts_err(err, -EINVAL, "seccomp: cannot parse the kernel version");
	known_syscalls(c.arch->token, c.known);

	/* Duplicate keys are refused: the second "action" must not quietly win. */
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return ts_err(err, -EINVAL, "`%s:%d:%d`: %s", path, jerr.line, jerr.column,
			      jerr.text);

	r = (flags & TS_SECCOMP_GUARD_SETID) ? ts_seccomp_guard_setid(root, path, err) : 0;
	if (r >= 0)
		r = parse_profile(&c, root, err);
	if (r >= 0)
		r = build_filter(&c, ret, err);
	free(c.rules);
	return r;
}

/*
 * Export through a memfd so the size can be checked before the program is handed out: the
 * kernel refuses programs over BPF_MAXINSNS only at load time, inside the sandbox.
 */
static int export_bpf(const char *path, scmp_filter_ctx ctx, char **ret, size_t *ret_len,
		      struct ts_error *err)
{
	_cleanup_close_ int mfd = -EBADF;
	_cleanup_free_ char *prog = NULL;
	struct stat st;
	int r;

	mfd = memfd_create("ts-seccomp-bpf", MFD_CLOEXEC);
	if (mfd < 0)
		return ts_err_errno(err, -errno, "memfd_create");
	r = seccomp_export_bpf(ctx, mfd);
	if (r < 0)
		return ts_err_errno(err, r, "`%s`: export the seccomp filter", path);
	if (fstat(mfd, &st) < 0)
		return ts_err_errno(err, -errno, "fstat the exported seccomp filter");
	if (st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) != 0)
		return ts_err(err, -EIO, "`%s`: exported seccomp filter has a bad size %lld", path,
			      (long long)st.st_size);
	if (st.st_size / sizeof(struct sock_filter) > BPF_MAXINSNS)
		return ts_err(err, -E2BIG,
			      "`%s`: seccomp filter has %lld instructions, the kernel takes %d",
			      path, (long long)(st.st_size / sizeof(struct sock_filter)),
			      BPF_MAXINSNS);
	prog = malloc((size_t)st.st_size);
	if (!prog)
		return ts_err(err, -ENOMEM, "out of memory");
	if (lseek(mfd, 0, SEEK_SET) < 0)
		return ts_err_errno(err, -errno, "lseek the exported seccomp filter");
	r = ts_read_all(mfd, prog, (size_t)st.st_size);
	if (r < 0)
		return ts_err_errno(err, r, "read the exported seccomp filter");
	*ret = TAKE_PTR(prog);
	*ret_len = (size_t)st.st_size;
	return 0;
}

int ts_seccomp_compile_buf(const char *path, const char *buf, size_t len, unsigned flags,
			   char **ret, size_t *ret_len, struct ts_error *err)
{
	_cleanup_(scmp_ctx_freep) scmp_filter_ctx ctx = NULL;
	int r;

	r = compile_buf(path, buf, len, flags, &ctx, err);
	if (r < 0)
		return r;
	return export_bpf(path, ctx, ret, ret_len, err);
}

int ts_seccomp_compile_to_fd(const char *profile_path, unsigned flags, int fd, struct ts_error *err)
{
	_cleanup_free_ char *buf = NULL, *prog = NULL;
	size_t len, prog_len;
	int r;

	r = ts_seccomp_read_profile(profile_path, &buf, &len, err);
	if (r < 0)
		return r;
	r = ts_seccomp_compile_buf(profile_path, buf, len, flags, &prog, &prog_len, err);
	if (r < 0)
		return r;
	r = ts_write_all(fd, prog, prog_len);
	if (r < 0)
		return ts_err_errno(err, r, "write the seccomp filter");
	return 0;
}

int ts_seccomp_export_pfc(const char *profile_path, unsigned flags, int fd, struct ts_error *err)
{
	_cleanup_(scmp_ctx_freep) scmp_filter_ctx ctx = NULL;
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = ts_seccomp_read_profile(profile_path, &buf, &len, err);
	if (r < 0)
		return r;
	r = compile_buf(profile_path, buf, len, flags, &ctx, err);
	if (r < 0)
		return r;
	r = seccomp_export_pfc(ctx, fd);
	if (r < 0)
		return ts_err_errno(err, r, "`%s`: export the seccomp pseudo-filter", profile_path);
	return 0;
}

static void sha256_str(struct sha256_ctx *h, const char *s)
{
	/* With the terminating NUL, so ("ab", "c") and ("a", "bc") hash apart. */
	sha256_update(h, strlen(s) + 1, (const uint8_t *)s);
}

/*
 * Everything the output depends on besides the profile's bytes: this compiler, libseccomp
 * (its version and, because distributions patch tables without bumping it, the set of
 * numbers it can name), the native arch, the kernel release (includes/excludes
 * "minKernel") and the flags.
 */
int ts_seccomp_compile_fingerprint(struct sha256_ctx *h, unsigned flags, struct ts_error *err)
{
	const struct scmp_version *v = seccomp_version();
	const struct arch_name *arch = native_arch();
	uint8_t known[NR_SCAN_LIMIT / 8];
	struct utsname u;
	char tmp[64];

	if (!arch)
		return ts_err(err, -EOPNOTSUPP, "seccomp: unsupported native architecture 0x%x",
			      seccomp_arch_native());
	if (uname(&u) < 0)
		return ts_err_errno(err, -errno, "uname");
	known_syscalls(arch->token, known);

	sha256_str(h, TS_SECCOMP_COMPILER_VERSION);
	snprintf(tmp, sizeof(tmp), "libseccomp %u.%u.%u api %u", v->major, v->minor, v->micro,
		 seccomp_api_get());
	sha256_str(h, tmp);
	sha256_update(h, sizeof(known), known);
	sha256_str(h, arch->scmp);
	sha256_str(h, u.release);
	snprintf(tmp, sizeof(tmp), "flags %x", flags);
	sha256_str(h, tmp);
	return 0;
}
