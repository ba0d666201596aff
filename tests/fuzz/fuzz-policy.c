/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for ts_policy_load. The input becomes a memfd, loaded through
 * /proc/self/fd/N like any policy file. Beyond "no crash, no leak", it checks what the
 * loader promises: an error is well formed and leaves p unchanged, a success holds only
 * validated values, and loading the same file twice appends every list.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "policy.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x)) {                                                                        \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #x);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void check_valid(const struct ts_policy *p)
{
	CHECK(p->memory_bytes == 0 || p->memory_bytes >= 4ULL << 20);
	CHECK(p->pids <= 4194304);
	CHECK(p->cpus >= 0.0 && p->cpus <= 1024.0);
	for (size_t i = 0; i < p->n_env; i++) {
		const char *e = p->env[i];

		CHECK(e[0] && e[0] != '=' && !(e[0] >= '0' && e[0] <= '9'));
		CHECK(strspn(e,
			     "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") ==
		      strcspn(e, "="));
	}
	for (size_t i = 0; i < p->n_ro_binds; i++) {
		CHECK(p->ro_binds[i].src[0] == '/');
		CHECK(p->ro_binds[i].dst[0] == '/');
		CHECK(p->ro_binds[i].dst[strspn(p->ro_binds[i].dst, "/")] != '\0');
	}
	for (size_t i = 0; i < p->n_protected; i++)
		CHECK(p->protected_patterns[i][0] && !strchr(p->protected_patterns[i], '/'));
	CHECK(!p->seccomp_profile || p->seccomp_profile[0] == '/');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ts_error err = { 0 };
	struct ts_policy p;
	char path[64];
	size_t n_env, n_binds, n_prot;
	int fd, r, r2;

	fd = memfd_create("fuzz-policy", MFD_CLOEXEC);
	CHECK(fd >= 0);
	CHECK(ts_write_all(fd, data, size) == 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);

	ts_policy_init(&p);
	r = ts_policy_load(&p, path, &err);
	if (r < 0) {
		CHECK(err.code == -r && err.msg[0]);
		CHECK(r == -EINVAL || r == -EFBIG || r == -ENOMEM);
		CHECK(r != -EINVAL || strncmp(err.msg, "`/proc/self/fd/", 15) == 0);
		CHECK(!p.n_env && !p.n_ro_binds && !p.n_protected && !p.seccomp_profile &&
		      !p.pids && !p.memory_bytes);
		goto out;
	}
	check_valid(&p);
	n_env = p.n_env;
	n_binds = p.n_ro_binds;
	n_prot = p.n_protected;
	/* The same bytes again: deterministic, and lists append. */
	r2 = ts_policy_load(&p, path, &err);
	CHECK(r2 == 0);
	CHECK(p.n_env == 2 * n_env && p.n_ro_binds == 2 * n_binds && p.n_protected == 2 * n_prot);
	for (size_t i = 0; i < n_env; i++)
		CHECK(!strcmp(p.env[i], p.env[n_env + i]));
	check_valid(&p);
out:
	ts_policy_free(&p);
	close(fd);
	return 0;
}
