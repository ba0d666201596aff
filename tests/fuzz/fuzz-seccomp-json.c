/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the OCI seccomp profile compiler (src/lib/seccomp-compile.c):
 * JSON through jansson and the profile rules to libseccomp and its BPF export. A profile
 * comes from a policy file, which need not be the user's own. The input becomes a memfd,
 * compiled through /proc/self/fd/N with ts_seccomp_compile_to_fd() into another memfd.
 *
 * Checks, beyond "no crash, no leak":
 *  - a refused profile gives a negative errno with a well-formed message, and nothing is
 *    written to the output;
 *  - an accepted one gives a program of whole struct sock_filter instructions, at most
 *    BPF_MAXINSNS, that passes the checks the kernel makes of a seccomp filter (known
 *    opcodes, aligned loads inside struct seccomp_data, jumps inside the program, scratch
 *    memory in range, a return at the end) and the kernel's own classic BPF checker
 *    (attached to a socket and detached);
 *  - run in a small BPF interpreter, the program keeps what the compiler promises for any
 *    profile: another audit arch (i386) and x32 numbers are killed (KILL_PROCESS), clone3
 *    gets ENOSYS whatever its arguments, a number below 1024 that no table names gets
 *    ENOSYS, and a number past every table gets the profile's defaultAction.
 * Inputs are capped at 64 KiB: a compile scans the syscall tables and may add a thousand
 * rules, and the cap keeps each run short.
 */
#include <errno.h>
#include <jansson.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "seccomp-compile.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x)) {                                                                        \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #x);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#define INPUT_MAX (128 * 1024)

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#define NR_CLONE3 435
#define X32_BIT 0x40000000U
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#define NR_CLONE3 435
#endif

/* Validate prog as the kernel's seccomp_check_filter() and bpf_check_classic() do. */
static void check_program(const struct sock_filter *prog, size_t n)
{
	CHECK(n > 0 && n <= BPF_MAXINSNS);
	for (size_t pc = 0; pc < n; pc++) {
		const struct sock_filter *f = &prog[pc];

		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			CHECK(f->k < sizeof(struct seccomp_data) && (f->k & 3) == 0);
			break;
		case BPF_LD | BPF_W | BPF_LEN:
		case BPF_LDX | BPF_W | BPF_LEN:
		case BPF_LD | BPF_IMM:
		case BPF_LDX | BPF_IMM:
		case BPF_MISC | BPF_TAX:
		case BPF_MISC | BPF_TXA:
		case BPF_RET | BPF_K:
		case BPF_RET | BPF_A:
		case BPF_ALU | BPF_NEG:
			break;
		case BPF_LD | BPF_MEM:
		case BPF_LDX | BPF_MEM:
		case BPF_ST:
		case BPF_STX:
			CHECK(f->k < BPF_MEMWORDS);
			break;
		case BPF_ALU | BPF_DIV | BPF_K:
		case BPF_ALU | BPF_MOD | BPF_K:
			CHECK(f->k != 0);
			break;
		case BPF_ALU | BPF_ADD | BPF_K:
		case BPF_ALU | BPF_ADD | BPF_X:
		case BPF_ALU | BPF_SUB | BPF_K:
		case BPF_ALU | BPF_SUB | BPF_X:
		case BPF_ALU | BPF_MUL | BPF_K:
		case BPF_ALU | BPF_MUL | BPF_X:
		case BPF_ALU | BPF_DIV | BPF_X:
		case BPF_ALU | BPF_MOD | BPF_X:
		case BPF_ALU | BPF_AND | BPF_K:
		case BPF_ALU | BPF_AND | BPF_X:
		case BPF_ALU | BPF_OR | BPF_K:
		case BPF_ALU | BPF_OR | BPF_X:
		case BPF_ALU | BPF_XOR | BPF_K:
		case BPF_ALU | BPF_XOR | BPF_X:
			break;
		case BPF_ALU | BPF_LSH | BPF_K:
		case BPF_ALU | BPF_RSH | BPF_K:
			CHECK(f->k < 32);
			break;
		case BPF_ALU | BPF_LSH | BPF_X:
		case BPF_ALU | BPF_RSH | BPF_X:
			break;
		case BPF_JMP | BPF_JA:
			CHECK(f->k < n - pc - 1);
			break;
		case BPF_JMP | BPF_JEQ | BPF_K:
		case BPF_JMP | BPF_JEQ | BPF_X:
		case BPF_JMP | BPF_JGE | BPF_K:
		case BPF_JMP | BPF_JGE | BPF_X:
		case BPF_JMP | BPF_JGT | BPF_K:
		case BPF_JMP | BPF_JGT | BPF_X:
		case BPF_JMP | BPF_JSET | BPF_K:
		case BPF_JMP | BPF_JSET | BPF_X:
			CHECK(pc + 1 + f->jt < n && pc + 1 + f->jf < n);
			break;
		default:
			fprintf(stderr, "instruction %zu: opcode 0x%04x\n", pc, f->code);
			CHECK(!"an opcode seccomp refuses");
		}
	}
	CHECK(BPF_CLASS(prog[n - 1].code) == BPF_RET);
}

/* The kernel's verdict on the program as a classic BPF socket filter. */
static void check_kernel(const struct sock_filter *prog, size_t n)
{
	static int sock = -1;
	struct sock_fprog fp = { .len = (unsigned short)n, .filter = (struct sock_filter *)prog };
	int dummy = 0;

	if (sock < 0)
		sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return;
	if (setsockopt(sock, SOL_SOCKET, SO_ATTACH_FILTER, &fp, sizeof(fp)) < 0) {
		/* optmem_max can be smaller than a large program */
		CHECK(errno == ENOMEM);
		return;
	}
	CHECK(setsockopt(sock, SOL_SOCKET, SO_DETACH_FILTER, &dummy, sizeof(dummy)) == 0);
}

/* Run prog (already checked) on d, as seccomp does. */
static uint32_t run(const struct sock_filter *prog, size_t n, const struct seccomp_data *d)
{
	uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = { 0 };
	const uint8_t *mem = (const uint8_t *)d;

	for (size_t pc = 0; pc < n; pc++) {
		const struct sock_filter *f = &prog[pc];
		uint32_t src = BPF_SRC(f->code) == BPF_X ? X : f->k;
		bool jump;

		switch (BPF_CLASS(f->code)) {
		case BPF_LD:
		case BPF_LDX: {
			uint32_t v;

			if (BPF_MODE(f->code) == BPF_ABS)
				memcpy(&v, mem + f->k, sizeof(v));
			else if (BPF_MODE(f->code) == BPF_LEN)
				v = sizeof(*d);
			else if (BPF_MODE(f->code) == BPF_IMM)
				v = f->k;
			else
				v = M[f->k];
			if (BPF_CLASS(f->code) == BPF_LD)
				A = v;
			else
				X = v;
			break;
		}
		case BPF_ST:
			M[f->k] = A;
			break;
		case BPF_STX:
			M[f->k] = X;
			break;
		case BPF_ALU:
			switch (BPF_OP(f->code)) {
			case BPF_ADD:
				A += src;
				break;
			case BPF_SUB:
				A -= src;
				break;
			case BPF_MUL:
				A *= src;
				break;
			case BPF_DIV:
				A = src ? A / src : 0;
				break;
			case BPF_MOD:
				A = src ? A % src : 0;
				break;
			case BPF_AND:
				A &= src;
				break;
			case BPF_OR:
				A |= src;
				break;
			case BPF_XOR:
				A ^= src;
				break;
			case BPF_LSH:
				A = src < 32 ? A << src : 0;
				break;
			case BPF_RSH:
				A = src < 32 ? A >> src : 0;
				break;
			case BPF_NEG:
				A = -A;
				break;
			}
			break;
		case BPF_JMP:
			if (BPF_OP(f->code) == BPF_JA) {
				pc += f->k;
				break;
			}
			switch (BPF_OP(f->code)) {
			case BPF_JEQ:
				jump = A == src;
				break;
			case BPF_JGT:
				jump = A > src;
				break;
			case BPF_JGE:
				jump = A >= src;
				break;
			default:
				jump = A & src;
				break;
			}
			pc += jump ? f->jt : f->jf;
			break;
		case BPF_RET:
			return BPF_RVAL(f->code) == BPF_A ? A : f->k;
		case BPF_MISC:
			if (BPF_MISCOP(f->code) == BPF_TAX)
				X = A;
			else
				A = X;
			break;
		}
	}
	CHECK(!"fell off the end of the program");
	return 0;
}

/* What the profile's defaultAction compiles to, as seccomp return values; -1: unknown. */
static int64_t default_action(const uint8_t *data, size_t size)
{
	json_auto_t *root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	json_t *jr;
	const char *s;
	uint32_t ret = 0;
	bool has_ret = false;

	if (!root || !json_is_string(json_object_get(root, "defaultAction")))
		return -1;
	s = json_string_value(json_object_get(root, "defaultAction"));
	jr = json_object_get(root, "defaultErrnoRet");
	if (json_is_integer(jr)) {
		ret = (uint32_t)json_integer_value(jr);
		has_ret = true;
	}
	if (!strcmp(s, "SCMP_ACT_ALLOW"))
		return SECCOMP_RET_ALLOW;
	if (!strcmp(s, "SCMP_ACT_ERRNO"))
		return SECCOMP_RET_ERRNO | (has_ret ? ret : EPERM);
	if (!strcmp(s, "SCMP_ACT_KILL") || !strcmp(s, "SCMP_ACT_KILL_THREAD"))
		return SECCOMP_RET_KILL_THREAD;
	if (!strcmp(s, "SCMP_ACT_KILL_PROCESS"))
		return SECCOMP_RET_KILL_PROCESS;
	if (!strcmp(s, "SCMP_ACT_TRAP"))
		return SECCOMP_RET_TRAP;
	if (!strcmp(s, "SCMP_ACT_LOG"))
		return SECCOMP_RET_LOG;
	if (!strcmp(s, "SCMP_ACT_TRACE"))
		return SECCOMP_RET_TRACE | ret;
	return -1;
}

static void check_semantics(const struct sock_filter *prog, size_t n, const uint8_t *data,
			    size_t size)
{
#ifdef NATIVE_ARCH
	struct seccomp_data d = { .arch = AUDIT_ARCH_I386, .nr = 0 };
	int64_t def = default_action(data, size);

	CHECK(run(prog, n, &d) == SECCOMP_RET_KILL_PROCESS);
	d.arch = NATIVE_ARCH;
#ifdef X32_BIT
	d.nr = (int)(X32_BIT | 1U);
	CHECK(run(prog, n, &d) == SECCOMP_RET_KILL_PROCESS);
#endif
	/* clone3 whatever its arguments say */
	d.nr = NR_CLONE3;
	CHECK(run(prog, n, &d) == (SECCOMP_RET_ERRNO | ENOSYS));
	for (int i = 0; i < 6; i++)
		d.args[i] = 0xffffffffffffffffULL;
	CHECK(run(prog, n, &d) == (SECCOMP_RET_ERRNO | ENOSYS));
	memset(d.args, 0, sizeof(d.args));
	/* unknown to every table, below the scan limit: ENOSYS; past it: the default */
	d.nr = 1000;
	CHECK(run(prog, n, &d) == (SECCOMP_RET_ERRNO | ENOSYS));
	d.nr = 5000;
	CHECK(def >= 0);
	CHECK(run(prog, n, &d) == (uint32_t)def);
#else
	(void)prog;
	(void)n;
	(void)data;
	(void)size;
#endif
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ts_error err = { 0 };
	_cleanup_free_ struct sock_filter *prog = NULL;
	char path[64];
	struct stat st;
	int in, out, r;
	size_t n;

	if (size > INPUT_MAX)
		return 0;
	in = memfd_create("fuzz-seccomp-json", MFD_CLOEXEC);
	out = memfd_create("fuzz-seccomp-bpf", MFD_CLOEXEC);
	CHECK(in >= 0 && out >= 0);
	CHECK(ts_write_all(in, data, size) == 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", in);

	r = ts_seccomp_compile_to_fd(path, 0, out, &err);
	CHECK(fstat(out, &st) == 0);
	if (r < 0) {
		CHECK(r >= -4095 && err.code == -r);
		CHECK(err.msg[0] && memchr(err.msg, '\0', sizeof(err.msg)));
		CHECK(st.st_size == 0);
		goto out;
	}
	CHECK(r == 0);
	CHECK(st.st_size > 0 && st.st_size % sizeof(struct sock_filter) == 0);
	n = (size_t)st.st_size / sizeof(struct sock_filter);
	prog = malloc((size_t)st.st_size);
	CHECK(prog);
	CHECK(pread(out, prog, (size_t)st.st_size, 0) == st.st_size);
	check_program(prog, n);
	check_kernel(prog, n);
	check_semantics(prog, n, data, size);
out:
	close(in);
	close(out);
	return 0;
}
