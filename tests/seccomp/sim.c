/* SPDX-License-Identifier: Apache-2.0 */
#include "sim.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "seccomp-compile.h"
#include "util.h"

static int read_fd(int fd, struct sim_prog *prog)
{
	struct stat st;
	void *buf;
	int r;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size <= 0 || st.st_size % sizeof(struct sock_filter))
		return -EINVAL;
	buf = malloc((size_t)st.st_size);
	if (!buf)
		return -ENOMEM;
	if (lseek(fd, 0, SEEK_SET) < 0) {
		free(buf);
		return -errno;
	}
	r = ts_read_all(fd, buf, (size_t)st.st_size);
	if (r < 0) {
		free(buf);
		return r;
	}
	prog->insns = buf;
	prog->len = (size_t)st.st_size / sizeof(struct sock_filter);
	return 0;
}

int sim_compile(const char *profile_path, struct sim_prog *prog, struct ts_error *err)
{
	return sim_compile_flags(profile_path, 0, prog, err);
}

int sim_compile_flags(const char *profile_path, unsigned flags, struct sim_prog *prog,
		      struct ts_error *err)
{
	_cleanup_close_ int fd = memfd_create("sim", MFD_CLOEXEC);
	int r;

	if (fd < 0)
		return ts_err_errno(err, -errno, "memfd_create");
	r = ts_seccomp_compile_to_fd(profile_path, flags, fd, err);
	if (r < 0)
		return r;
	r = read_fd(fd, prog);
	if (r < 0)
		return ts_err_errno(err, r, "read back the compiled filter");
	return 0;
}

int sim_read_file(const char *path, struct sim_prog *prog)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return read_fd(fd, prog);
}

void sim_prog_free(struct sim_prog *prog)
{
	free(prog->insns);
	prog->insns = NULL;
	prog->len = 0;
}

uint32_t sim_native_audit_arch(void)
{
#if defined(__x86_64__)
	return AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
	return AUDIT_ARCH_AARCH64;
#else
#error "add the native AUDIT_ARCH"
#endif
}

/* The instruction set the kernel's seccomp_check_filter() accepts, nothing more. */
int sim_run(const struct sim_prog *prog, const struct seccomp_data *data, uint32_t *ret)
{
	uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = { 0 };
	size_t pc = 0;

	if (prog->len == 0 || prog->len > BPF_MAXINSNS)
		return -EINVAL;
	while (pc < prog->len) {
		const struct sock_filter *f = &prog->insns[pc++];
		uint32_t k = f->k, src = BPF_SRC(f->code) == BPF_X ? X : k;
		bool taken;

		switch (BPF_CLASS(f->code)) {
		case BPF_LD:
			if (f->code == (BPF_LD | BPF_W | BPF_ABS)) {
				if (k % 4 || k + 4 > sizeof(*data))
					return -EINVAL;
				memcpy(&A, (const char *)data + k, 4);
			} else if (f->code == (BPF_LD | BPF_W | BPF_LEN))
				A = sizeof(*data);
			else if (f->code == (BPF_LD | BPF_IMM))
				A = k;
			else if (f->code == (BPF_LD | BPF_MEM) && k < BPF_MEMWORDS)
				A = M[k];
			else
				return -EINVAL;
			break;
		case BPF_LDX:
			if (f->code == (BPF_LDX | BPF_W | BPF_LEN))
				X = sizeof(*data);
			else if (f->code == (BPF_LDX | BPF_IMM))
				X = k;
			else if (f->code == (BPF_LDX | BPF_MEM) && k < BPF_MEMWORDS)
				X = M[k];
			else
				return -EINVAL;
			break;
		case BPF_ST:
		case BPF_STX:
			if (k >= BPF_MEMWORDS)
				return -EINVAL;
			M[k] = BPF_CLASS(f->code) == BPF_ST ? A : X;
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
				if (!src)
					return -EINVAL;
				A /= src;
				break;
			case BPF_MOD:
				if (!src)
					return -EINVAL;
				A %= src;
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
			default:
				return -EINVAL;
			}
			break;
		case BPF_JMP:
			if (BPF_OP(f->code) == BPF_JA) {
				if (k >= prog->len - pc)
					return -EINVAL;
				pc += k;
				break;
			}
			switch (BPF_OP(f->code)) {
			case BPF_JEQ:
				taken = A == src;
				break;
			case BPF_JGT:
				taken = A > src;
				break;
			case BPF_JGE:
				taken = A >= src;
				break;
			case BPF_JSET:
				taken = (A & src) != 0;
				break;
			default:
				return -EINVAL;
			}
			k = taken ? f->jt : f->jf;
			if (k >= prog->len - pc)
				return -EINVAL;
			pc += k;
			break;
		case BPF_RET:
			if (BPF_RVAL(f->code) == BPF_K)
				*ret = k;
			else if (BPF_RVAL(f->code) == BPF_A)
				*ret = A;
			else
				return -EINVAL;
			return 0;
		case BPF_MISC:
			if (BPF_MISCOP(f->code) == BPF_TAX)
				X = A;
			else if (BPF_MISCOP(f->code) == BPF_TXA)
				A = X;
			else
				return -EINVAL;
			break;
		default:
			return -EINVAL;
		}
	}
	return -EINVAL;
}

const char *sim_action_str(uint32_t ret, char *buf, size_t len)
{
	switch (ret & SECCOMP_RET_ACTION_FULL) {
	case SECCOMP_RET_ALLOW:
		snprintf(buf, len, "ALLOW");
		break;
	case SECCOMP_RET_ERRNO:
		snprintf(buf, len, "ERRNO(%u)", ret & SECCOMP_RET_DATA);
		break;
	case SECCOMP_RET_KILL_PROCESS:
		snprintf(buf, len, "KILL_PROCESS");
		break;
	case SECCOMP_RET_KILL_THREAD:
		snprintf(buf, len, "KILL_THREAD");
		break;
	case SECCOMP_RET_TRAP:
		snprintf(buf, len, "TRAP");
		break;
	case SECCOMP_RET_TRACE:
		snprintf(buf, len, "TRACE(%u)", ret & SECCOMP_RET_DATA);
		break;
	case SECCOMP_RET_LOG:
		snprintf(buf, len, "LOG");
		break;
	case SECCOMP_RET_USER_NOTIF:
		snprintf(buf, len, "USER_NOTIF");
		break;
	default:
		snprintf(buf, len, "0x%08x", ret);
	}
	return buf;
}
