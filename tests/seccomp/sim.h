/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Test support: compile a profile to BPF in memory, and run that exact program in a
 * classic-BPF interpreter (as libseccomp's own tests do), so a policy can be checked
 * for every syscall and argument without making the call.
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct sim_prog {
	struct sock_filter *insns;
	size_t len;
};

/* Compile profile_path with ts_seccomp_compile_to_fd into prog. 0 or -errno. */
int sim_compile(const char *profile_path, struct sim_prog *prog, struct ts_error *err);

/* The same with TS_SECCOMP_* flags. */
int sim_compile_flags(const char *profile_path, unsigned flags, struct sim_prog *prog,
		      struct ts_error *err);

/* Read a .bpf file (as the cache writes it). 0 or -errno. */
int sim_read_file(const char *path, struct sim_prog *prog);

void sim_prog_free(struct sim_prog *prog);

/*
 * Run prog on data as the kernel would. Returns 0 and stores the SECCOMP_RET_* value,
 * or -EINVAL for a program the kernel's checker would refuse or that falls off its end.
 */
int sim_run(const struct sim_prog *prog, const struct seccomp_data *data, uint32_t *ret);

/* The AUDIT_ARCH_* value of the native ABI. */
uint32_t sim_native_audit_arch(void);

/* "ALLOW", "ERRNO(1)", "KILL_PROCESS", ... for messages. */
const char *sim_action_str(uint32_t ret, char *buf, size_t len);
