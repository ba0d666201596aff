/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Check the compiled default profile against the intended policy table (intended.txt):
 * every line must hold for every listed argument value and for random values in the
 * arguments it leaves open, and every syscall number the table does not mention must be
 * denied. The program checked is the exact BPF the helper would load, run in a simulator
 * (test-seccomp-live shows the simulator agrees with the kernel). Also exports the
 * pseudo-filter code and checks the bad-arch action in it.
 *
 * usage: test-seccomp-intended PROFILE.json INTENDED.txt
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cleanup.h"
#include "seccomp-compile.h"
#include "sim.h"
#include "tap.h"
#include "util.h"

#define NR_LIMIT 1024
#define X32_BIT 0x40000000U
#define MAX_RANGES 64

struct range {
	uint64_t lo, hi;
};

struct argset {
	bool given;
	size_t n;
	struct range r[MAX_RANGES];
};

struct line {
	unsigned int lineno;
	char name[64];
	int nr;
	uint32_t arch;
	bool all_numbers; /* x32:* and i386:* */
	bool x32;
	uint32_t want;
	struct argset args[6];
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	/* xorshift64*: fixed seed, so a failure reproduces. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

/* Values that tend to break comparisons: small, 32-bit edges, high-bit garbage. */
static uint64_t random_arg(void)
{
	switch (rng() % 7) {
	case 0:
		return 0;
	case 1:
		return rng() % 65;
	case 2:
		return (uint32_t)rng();
	case 3:
		return rng();
	case 4:
		return 0xffffffffULL;
	case 5:
		return ~0ULL;
	default:
		return (rng() << 32) | (rng() % 65);
	}
}

static int parse_u64(const char *s, uint64_t *ret)
{
	char *end;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	*ret = strtoull(s, &end, 0);
	if (errno || *end)
		return -EINVAL;
	return 0;
}

static int parse_argset(char *s, struct argset *set)
{
	char *save = NULL;

	set->given = true;
	set->n = 0;
	for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *dots = strstr(tok, "..");
		struct range *r;

		if (set->n == MAX_RANGES)
			return -E2BIG;
		r = &set->r[set->n++];
		if (dots) {
			*dots = '\0';
			if (parse_u64(tok, &r->lo) < 0 || parse_u64(dots + 2, &r->hi) < 0 ||
			    r->hi < r->lo)
				return -EINVAL;
		} else if (parse_u64(tok, &r->lo) < 0)
			return -EINVAL;
		else
			r->hi = r->lo;
	}
	return set->n ? 0 : -EINVAL;
}

static int parse_action(const char *s, uint32_t *ret)
{
	if (strcmp(s, "ALLOW") == 0)
		*ret = SECCOMP_RET_ALLOW;
	else if (strcmp(s, "EPERM") == 0)
		*ret = SECCOMP_RET_ERRNO | EPERM;
	else if (strcmp(s, "ENOSYS") == 0)
		*ret = SECCOMP_RET_ERRNO | ENOSYS;
	else if (strcmp(s, "EAFNOSUPPORT") == 0)
		*ret = SECCOMP_RET_ERRNO | EAFNOSUPPORT;
	else if (strcmp(s, "KILL_PROCESS") == 0)
		*ret = SECCOMP_RET_KILL_PROCESS;
	else
		return -EINVAL;
	return 0;
}

/* Returns 1 for a checkable line, 0 for a syscall this architecture lacks, or -EINVAL. */
static int parse_line(char *text, unsigned int lineno, struct line *l)
{
	char *save = NULL, *name, *action, *tok, *at;

	memset(l, 0, sizeof(*l));
	l->lineno = lineno;
	l->arch = sim_native_audit_arch();
	name = strtok_r(text, " \t", &save);
	action = strtok_r(NULL, " \t", &save);
	if (!name || !action || strlen(name) >= sizeof(l->name) || parse_action(action, &l->want))
		return -EINVAL;
	snprintf(l->name, sizeof(l->name), "%s", name);

	while ((tok = strtok_r(NULL, " \t", &save))) {
		unsigned int idx;

		if (tok[0] != 'a' || tok[1] < '0' || tok[1] > '5' || tok[2] != '=')
			return -EINVAL;
		idx = (unsigned int)(tok[1] - '0');
		if (l->args[idx].given || parse_argset(tok + 3, &l->args[idx]) < 0)
			return -EINVAL;
	}

	if (strcmp(name, "x32:*") == 0) {
#if defined(__x86_64__)
		l->all_numbers = l->x32 = true;
		return 1;
#else
		return 0;
#endif
	}
	if (strcmp(name, "i386:*") == 0) {
		l->all_numbers = true;
		l->arch = AUDIT_ARCH_I386;
		return 1;
	}
	at = strchr(name, '@');
	if (at)
		*at = '\0';
	l->nr = seccomp_syscall_resolve_name(name);
	if (l->nr == __NR_SCMP_ERROR && at) {
		uint64_t v;

		if (parse_u64(at + 1, &v) < 0 || v >= NR_LIMIT)
			return -EINVAL;
		l->nr = (int)v;
	}
	return l->nr >= 0 ? 1 : 0;
}

struct walk {
	const struct sim_prog *prog;
	const struct line *l;
	unsigned int randoms;
	unsigned long checked;
	bool failed;
	char why[256];
};

static void check_data(struct walk *w, struct seccomp_data *d)
{
	uint32_t ret = 0;
	char got[32];

	w->checked++;
	if (w->failed)
		return;
	if (sim_run(w->prog, d, &ret) < 0 || ret != w->l->want) {
		w->failed = true;
		snprintf(w->why, sizeof(w->why),
			 "nr %d arch 0x%x args 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx: %s",
			 d->nr, d->arch, (unsigned long long)d->args[0],
			 (unsigned long long)d->args[1], (unsigned long long)d->args[2],
			 (unsigned long long)d->args[3], (unsigned long long)d->args[4],
			 (unsigned long long)d->args[5], sim_action_str(ret, got, sizeof(got)));
	}
}

/* All combinations of the given argument values; open arguments zero, then random. */
static void walk_args(struct walk *w, struct seccomp_data *d, unsigned int idx)
{
	const struct argset *set;

	if (w->failed)
		return;
	if (idx == 6) {
		struct seccomp_data copy = *d;

		check_data(w, &copy);
		for (unsigned int k = 0; k < w->randoms; k++) {
			for (unsigned int i = 0; i < 6; i++)
				if (!w->l->args[i].given)
					copy.args[i] = random_arg();
			check_data(w, &copy);
		}
		return;
	}
	set = &w->l->args[idx];
	if (!set->given) {
		d->args[idx] = 0;
		walk_args(w, d, idx + 1);
		return;
	}
	for (size_t i = 0; i < set->n; i++) {
		for (uint64_t v = set->r[i].lo;; v++) {
			d->args[idx] = v;
			walk_args(w, d, idx + 1);
			if (v == set->r[i].hi || w->failed)
				break;
		}
	}
}

static uint64_t combinations(const struct line *l)
{
	uint64_t n = 1;

	for (unsigned int i = 0; i < 6; i++) {
		uint64_t k = 0;

		if (!l->args[i].given)
			continue;
		for (size_t j = 0; j < l->args[i].n; j++)
			k += l->args[i].r[j].hi - l->args[i].r[j].lo + 1;
		n *= k;
	}
	return n;
}

static void check_line(const struct sim_prog *prog, const struct line *l, bool *listed)
{
	struct walk w = { .prog = prog, .l = l };
	struct seccomp_data d = { .arch = l->arch };
	uint64_t n = combinations(l);

	if (n > 4000000) {
		ok(false, "line %u: %s: %llu combinations, too many to check", l->lineno, l->name,
		   (unsigned long long)n);
		return;
	}
	w.randoms = n > 10000 ? 1 : 4;
	if (l->all_numbers) {
		for (int nr = 0; nr < NR_LIMIT && !w.failed; nr++) {
			d.nr = (int)((unsigned int)nr | (l->x32 ? X32_BIT : 0));
			walk_args(&w, &d, 0);
		}
	} else {
		d.nr = l->nr;
		walk_args(&w, &d, 0);
		if (l->nr < NR_LIMIT && l->arch == sim_native_audit_arch())
			listed[l->nr] = true;
	}
	ok(!w.failed, "line %u: %s (%lu cases)", l->lineno, l->name, w.checked);
	if (w.failed)
		diag("  %s", w.why);
}

/* Anything intended.txt does not mention must be denied, whatever the arguments. */
static void check_unlisted(const struct sim_prog *prog, const bool *listed)
{
	unsigned int eperm = 0, enosys = 0, bad = 0;

	for (int nr = 0; nr < NR_LIMIT; nr++) {
		struct seccomp_data d = { .nr = nr, .arch = sim_native_audit_arch() };
		uint32_t first = 0;

		if (listed[nr])
			continue;
		for (unsigned int k = 0; k < 17; k++) {
			uint32_t ret = 0;
			char got[32];

			if (sim_run(prog, &d, &ret) < 0 ||
			    (ret != (SECCOMP_RET_ERRNO | EPERM) &&
			     ret != (SECCOMP_RET_ERRNO | ENOSYS)) ||
			    (k > 0 && ret != first)) {
				char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);

				diag("  %s (nr %d) is %s but not in intended.txt",
				     name ? name : "?", nr, sim_action_str(ret, got, sizeof(got)));
				free(name);
				bad++;
				break;
			}
			first = ret;
			for (unsigned int i = 0; i < 6; i++)
				d.args[i] = random_arg();
		}
		if (first == (SECCOMP_RET_ERRNO | EPERM))
			eperm++;
		else if (first == (SECCOMP_RET_ERRNO | ENOSYS))
			enosys++;
	}
	ok(bad == 0, "every syscall number not in intended.txt is denied (%u EPERM, %u ENOSYS)",
	   eperm, enosys);
}

static void check_pfc(const char *profile)
{
	_cleanup_close_ int fd = memfd_create("pfc", MFD_CLOEXEC);
	_cleanup_free_ char *text = NULL;
	struct ts_error err = { 0 };
	int r;

	r = fd < 0 ? -errno : ts_seccomp_export_pfc(profile, 0, fd, &err);
	if (r == 0) {
		char path[64];

		/* A fresh open of the memfd starts at offset 0. */
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		r = ts_read_file_at(AT_FDCWD, path, 16U << 20, &text, NULL);
		if (r < 0)
			ts_err_errno(&err, r, "read back the pseudo-filter code");
	}
	if (!ok(r == 0 && text, "export the pseudo-filter code")) {
		diag("%s", err.msg);
		return;
	}
	ok(strstr(text, "# invalid architecture action\naction KILL_PROCESS;") != NULL,
	   "pseudo-filter code kills foreign architectures");
}

int main(int argc, char **argv)
{
	_cleanup_fclose_ FILE *f = NULL;
	struct ts_error err = { 0 };
	struct sim_prog prog = { 0 };
	bool listed[NR_LIMIT] = { false };
	char buf[4096];
	unsigned int lineno = 0;
	int r;

	plan(0);
	if (argc != 3) {
		fprintf(stderr, "usage: %s PROFILE.json INTENDED.txt\n", argv[0]);
		return 2;
	}
	r = sim_compile(argv[1], &prog, &err);
	if (!ok(r == 0, "compile `%s`", argv[1])) {
		diag("%s", err.msg);
		return done();
	}
	f = fopen(argv[2], "re");
	if (!ok(f != NULL, "open `%s`", argv[2]))
		return done();

	while (fgets(buf, sizeof(buf), f)) {
		struct line l;
		char *hash = strchr(buf, '#'), *p = buf;

		lineno++;
		if (hash)
			*hash = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			continue;
		r = parse_line(p, lineno, &l);
		if (r < 0)
			ok(false, "line %u: cannot parse", lineno);
		else if (r == 0)
			skip_case("not on this architecture", "line %u: %s", lineno, l.name);
		else
			check_line(&prog, &l, listed);
	}
	check_unlisted(&prog, listed);
	check_pfc(argv[1]);
	sim_prog_free(&prog);
	return done();
}
