/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The profile compiler on small hand-written profiles: error messages (file:line:column
 * for JSON, the syscall for profile errors), profiles refused because libseccomp would
 * change their meaning, the Docker semantics we implement (includes/excludes, actions,
 * errnoRet, argument comparisons, unknown names), our additions (ENOSYS for unknown
 * numbers, clone3), and the cache.
 *
 * usage: test-seccomp-compile DEFAULT.json DOCKER-SHAPED.json
 * (the default profile feeds the cache tests; profiles/docker-shaped.json the semantics)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "seccomp-cache.h"
#include "seccomp-compile.h"
#include "sim.h"
#include "tap.h"
#include "util.h"

#define R_ALLOW SECCOMP_RET_ALLOW
#define R_ERRNO(e) (SECCOMP_RET_ERRNO | (e))

static char tmpdir[1024];

static const char *write_profile(const char *name, const char *content)
{
	static char path[PATH_MAX];
	_cleanup_close_ int fd = -EBADF;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ts_write_all(fd, content, strlen(content)) < 0) {
		diag("cannot write `%s`: %m", path);
		return path;
	}
	return path;
}

/* Compile content and expect an error with r == want whose message holds every needle. */
static void expect_error(const char *what, const char *name, const char *content, int want,
			 const char *needle1, const char *needle2)
{
	const char *path = write_profile(name, content);
	struct ts_error err = { 0 };
	struct sim_prog prog = { 0 };
	int r = sim_compile(path, &prog, &err);
	bool good = r == want && err.code == -want && strstr(err.msg, needle1) &&
		    (!needle2 || strstr(err.msg, needle2));

	ok(good, "%s: %s", what, r < 0 ? err.msg : "compiled");
	if (!good)
		diag("  want r=%d and a message with `%s`%s%s, got r=%d", want, needle1,
		     needle2 ? " and " : "", needle2 ? needle2 : "", r);
	sim_prog_free(&prog);
}

static uint32_t sim_call(const struct sim_prog *prog, uint32_t nr, uint64_t a0)
{
	struct seccomp_data d = { .nr = (int)nr, .arch = sim_native_audit_arch(), .args = { a0 } };
	uint32_t ret = 0xdeadbeef;

	if (sim_run(prog, &d, &ret) < 0)
		return 0xdeadbeef;
	return ret;
}

static int nr_of(const char *name)
{
	return seccomp_syscall_resolve_name(name);
}

static void expect_action(const struct sim_prog *prog, const char *name, int nr, uint64_t a0,
			  uint32_t want)
{
	char got[32], exp[32];
	uint32_t ret;

	if (nr < 0) {
		skip_case("not on this architecture", "%s", name);
		return;
	}
	ret = sim_call(prog, (uint32_t)nr, a0);
	ok(ret == want, "%s [a0=0x%llx]: %s", name, (unsigned long long)a0,
	   sim_action_str(ret, got, sizeof(got)));
	if (ret != want)
		diag("  expected %s", sim_action_str(want, exp, sizeof(exp)));
}

/* Run name(args) in prog; the action. */
static uint32_t call_args(const struct sim_prog *prog, const char *name, uint64_t a0, uint64_t a1,
			  uint64_t a2, uint64_t a3)
{
	struct seccomp_data d = { .nr = nr_of(name),
				  .arch = sim_native_audit_arch(),
				  .args = { a0, a1, a2, a3 } };
	uint32_t ret = 0xdeadbeef;

	if (sim_run(prog, &d, &ret) < 0)
		return 0xdeadbeef;
	return ret;
}

/* The setid guard of an id-mapped workspace (seccomp-setid.h), on the default profile. */
static void test_setid_guard(const char *profile)
{
	static const struct {
		const char *name;
		uint64_t a[4];
		bool allow;
		const char *what;
	} cases[] = {
		{ "chmod", { 0, 0755 }, true, "chmod 0755" },
		{ "chmod", { 0, 04755 }, false, "chmod 04755" },
		{ "chmod", { 0, 02755 }, false, "chmod 02755" },
		{ "chmod", { 0, 0x100000000ULL | 04755 }, false, "chmod 04755 with high bits" },
		{ "fchmod", { 0, 06755 }, false, "fchmod 06755" },
		{ "fchmod", { 0, 01777 }, true, "fchmod 01777 (sticky is harmless)" },
		{ "fchmodat", { 0, 0, 04755 }, false, "fchmodat 04755" },
		{ "fchmodat", { 0, 0, 0644 }, true, "fchmodat 0644" },
		{ "open", { 0, O_RDONLY, 04755 }, true, "open without O_CREAT (mode unused)" },
		{ "open", { 0, O_CREAT | O_WRONLY, 04755 }, false, "open O_CREAT 04755" },
		{ "open", { 0, O_CREAT | O_WRONLY, 0644 }, true, "open O_CREAT 0644" },
		{ "openat", { 0, 0, O_TMPFILE | O_RDWR, 02755 }, false, "openat O_TMPFILE 02755" },
		{ "openat", { 0, 0, O_CREAT, 04700 }, false, "openat O_CREAT 04700" },
		{ "openat", { 0, 0, O_RDONLY, 04700 }, true, "openat O_RDONLY" },
		{ "creat", { 0, 04755 }, false, "creat 04755" },
		{ "creat", { 0, 0600 }, true, "creat 0600" },
		{ "mknodat", { 0, 0, S_IFREG | 04755 }, false, "mknodat S_IFREG|04755" },
		{ "mknodat", { 0, 0, S_IFIFO | 0644 }, true, "mknodat a FIFO" },
	};
	struct ts_error err = { 0 };
	struct sim_prog plain = { 0 }, guarded = { 0 };
	uint32_t ret;

	ok(sim_compile_flags(profile, TS_SECCOMP_GUARD_SETID, &guarded, &err) == 0,
	   "setid guard: the default profile compiles with it (%s)", err.msg);
	ok(sim_compile(profile, &plain, &err) == 0, "setid guard: and without it");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ret = call_args(&guarded, cases[i].name, cases[i].a[0], cases[i].a[1],
				cases[i].a[2], cases[i].a[3]);
		ok(cases[i].allow ? ret == SECCOMP_RET_ALLOW : ret == (SECCOMP_RET_ERRNO | EPERM),
		   "setid guard: %s is %s", cases[i].what, cases[i].allow ? "allowed" : "EPERM");
	}
	ret = call_args(&guarded, "openat2", 0, 0, 0, 0);
	ok(ret == (SECCOMP_RET_ERRNO | ENOSYS), "setid guard: openat2 is ENOSYS");
	ok(call_args(&plain, "chmod", 0, 04755, 0, 0) == SECCOMP_RET_ALLOW &&
		   call_args(&plain, "openat2", 0, 0, 0, 0) == SECCOMP_RET_ALLOW,
	   "setid guard: without it chmod 04755 and openat2 are allowed (control)");
	sim_prog_free(&plain);
	sim_prog_free(&guarded);
}

static void test_errors(void)
{
	expect_error("invalid JSON names file:line:column", "bad-syntax.json",
		     "{\n\t\"defaultAction\": \"SCMP_ACT_ERRNO\",\n\t\"syscalls\": [ oops ]\n}\n",
		     -EINVAL, "bad-syntax.json:3:", NULL);
	expect_error("duplicate keys are refused with a position", "dup-key.json",
		     "{\n\"defaultAction\": \"SCMP_ACT_ERRNO\",\n"
		     "\"defaultAction\": \"SCMP_ACT_ALLOW\"\n}\n",
		     -EINVAL, "dup-key.json:3:", "duplicate");
	expect_error("unknown action names the syscall", "bad-action.json",
		     "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": ["
		     "{\"names\": [\"getpid\"], \"action\": \"SCMP_ACT_ALLOW\"},"
		     "{\"names\": [\"getppid\", \"gettid\"], \"action\": \"SCMP_ACT_FROB\"}]}",
		     -EINVAL, "`getppid`", "SCMP_ACT_FROB");
	expect_error("SCMP_ACT_NOTIFY is not supported", "notify.json",
		     "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": ["
		     "{\"names\": [\"getpid\"], \"action\": \"SCMP_ACT_NOTIFY\"}]}",
		     -EINVAL, "`getpid`", "SCMP_ACT_NOTIFY");
	expect_error("unknown default action", "bad-default.json",
		     "{\"defaultAction\": \"SCMP_ACT_MAYBE\"}", -EINVAL, "defaultAction",
		     "SCMP_ACT_MAYBE");
	expect_error("missing default action", "no-default.json", "{\"syscalls\": []}", -EINVAL,
		     "defaultAction", NULL);
	expect_error("a misspelt key is refused, not ignored", "typo.json",
		     "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": ["
		     "{\"names\": [\"socket\"], \"action\": \"SCMP_ACT_ALLOW\", \"arg\": []}]}",
		     -EINVAL, "`socket`", "`arg`");
	expect_error("an argument compared twice in one rule is refused", "same-arg.json",
		     "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": ["
		     "{\"names\": [\"socket\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": ["
		     "{\"index\": 0, \"value\": 38, \"op\": \"SCMP_CMP_NE\"},"
		     "{\"index\": 0, \"value\": 40, \"op\": \"SCMP_CMP_NE\"}]}]}",
		     -EINVAL, "`socket`", "compared twice");
	expect_error("conditional deny beside an unconditional allow is refused", "conflict.json",
		     "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": ["
		     "{\"names\": [\"ioctl\"], \"action\": \"SCMP_ACT_ALLOW\"},"
		     "{\"names\": [\"ioctl\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 1,"
		     " \"args\": [{\"index\": 1, \"value\": 4294967295, \"valueTwo\": 21522,"
		     " \"op\": \"SCMP_CMP_MASKED_EQ\"}]}]}",
		     -EINVAL, "`ioctl`", "can both match");
	expect_error("overlapping conditional rules with different actions are refused",
		     "overlap.json",
		     "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": ["
		     "{\"names\": [\"lseek\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": ["
		     "{\"index\": 2, \"value\": 2, \"op\": \"SCMP_CMP_LE\"}]},"
		     "{\"names\": [\"lseek\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 22,"
		     " \"args\": [{\"index\": 2, \"value\": 1, \"op\": \"SCMP_CMP_GE\"}]}]}",
		     -EINVAL, "`lseek`", "can both match");
	expect_error(
		"errnoRet out of range", "bad-errno.json",
		"{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": ["
		"{\"names\": [\"getpid\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 5000}]}",
		-ERANGE, "`getpid`", "5000");
	expect_error("bad argument index", "bad-index.json",
		     "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": ["
		     "{\"names\": [\"getpid\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": ["
		     "{\"index\": 6, \"value\": 0, \"op\": \"SCMP_CMP_EQ\"}]}]}",
		     -EINVAL, "`getpid`", "index");
	expect_error("unknown comparison", "bad-op.json",
		     "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": ["
		     "{\"names\": [\"getpid\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": ["
		     "{\"index\": 0, \"value\": 0, \"op\": \"SCMP_CMP_ABOUT\"}]}]}",
		     -EINVAL, "`getpid`", "SCMP_CMP_ABOUT");
	expect_error(
		"a profile without the native architecture is refused", "foreign.json",
		"{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"architectures\": [\"SCMP_ARCH_X86\"]}",
		-EINVAL, "foreign.json", "native");
	{
		struct ts_error err = { 0 };
		struct sim_prog prog = { 0 };
		char path[PATH_MAX + 32];
		int r;

		snprintf(path, sizeof(path), "%s/does-not-exist.json", tmpdir);
		r = sim_compile(path, &prog, &err);
		ok(r == -ENOENT && strstr(err.msg, "does-not-exist.json"), "a missing profile: %s",
		   err.msg);
	}
}

/* profiles/docker-shaped.json: one rule per feature of the Docker format we implement. */
static void test_semantics(const char *docker_shaped)
{
	struct ts_error err = { 0 };
	struct sim_prog prog = { 0 };
	const char *path;
	int r = sim_compile(docker_shaped, &prog, &err);
	struct seccomp_data d = { 0 };
	uint32_t ret = 0;

	if (!ok(r == 0, "compile a moby-shaped profile")) {
		diag("%s", err.msg);
		return;
	}
	expect_action(&prog, "getpid", nr_of("getpid"), 0, R_ALLOW);
	expect_action(&prog, "getppid (includes.caps: we grant none)", nr_of("getppid"), 0,
		      R_ERRNO(EPERM));
	expect_action(&prog, "gettid (excludes.caps)", nr_of("gettid"), 0, R_ALLOW);
	expect_action(&prog, "getuid (includes.arches native)", nr_of("getuid"), 0, R_ALLOW);
	expect_action(&prog, "getgid (includes.arches foreign)", nr_of("getgid"), 0,
		      R_ERRNO(EPERM));
	expect_action(&prog, "geteuid (excludes.arches native)", nr_of("geteuid"), 0,
		      R_ERRNO(EPERM));
	expect_action(&prog, "getegid (includes.minKernel 3.0)", nr_of("getegid"), 0, R_ALLOW);
	expect_action(&prog, "getpgrp (includes.minKernel 99.0)", nr_of("getpgrp"), 0,
		      R_ERRNO(EPERM));
	expect_action(&prog, "getsid (excludes.minKernel 99.0)", nr_of("getsid"), 0, R_ALLOW);
	expect_action(&prog, "uname (ERRNO takes defaultErrnoRet)", nr_of("uname"), 0,
		      R_ERRNO(EPERM));
	expect_action(&prog, "umask (errnoRet 13)", nr_of("umask"), 0, R_ERRNO(EACCES));
	expect_action(&prog, "sync (KILL_PROCESS)", nr_of("sync"), 0, SECCOMP_RET_KILL_PROCESS);
	expect_action(&prog, "syncfs (TRAP)", nr_of("syncfs"), 0, SECCOMP_RET_TRAP);
	expect_action(&prog, "fsync (LOG)", nr_of("fsync"), 0, SECCOMP_RET_LOG);
	expect_action(&prog, "fdatasync (TRACE 7)", nr_of("fdatasync"), 0, SECCOMP_RET_TRACE | 7);
	expect_action(&prog, "kill (SCMP_ACT_KILL is KILL_THREAD)", nr_of("kill"), 0,
		      SECCOMP_RET_KILL_THREAD);
	expect_action(&prog, "clone3 (forced ENOSYS)", nr_of("clone3"), 0, R_ERRNO(ENOSYS));
	expect_action(&prog, "lsm_list_modules (newer than libseccomp, from our table)", 461, 0,
		      R_ALLOW);
	expect_action(&prog, "getcwd (old \"name\" form)", nr_of("getcwd"), 0, R_ALLOW);
	expect_action(&prog, "personality", nr_of("personality"), 8, R_ALLOW);
	expect_action(&prog, "personality", nr_of("personality"), 0xffffffff, R_ALLOW);
	expect_action(&prog, "personality", nr_of("personality"), 0x400000, R_ERRNO(EPERM));
	expect_action(&prog, "clone", nr_of("clone"), 0x1200011, R_ALLOW);
	expect_action(&prog, "clone", nr_of("clone"), 0x10000011, R_ERRNO(EPERM));
	expect_action(&prog, "dup (GT 10)", nr_of("dup"), 11, R_ALLOW);
	expect_action(&prog, "dup (neither rule)", nr_of("dup"), 10, R_ERRNO(EPERM));
	expect_action(&prog, "dup (LT 3, errnoRet 9)", nr_of("dup"), 2, R_ERRNO(EBADF));
	expect_action(&prog, "close (MASKED_EQ 0xff == 7)", nr_of("close"), 0x307, R_ALLOW);
	expect_action(&prog, "close (MASKED_EQ 0xff != 7)", nr_of("close"), 0x308, R_ERRNO(EPERM));
	expect_action(&prog, "keyctl (known, not named: default)", nr_of("keyctl"), 0,
		      R_ERRNO(EPERM));
	expect_action(&prog, "syscall 1000 (unknown number)", 1000, 0, R_ERRNO(ENOSYS));
	expect_action(&prog, "syscall 470 (unknown number)", 470, 0, R_ERRNO(ENOSYS));

	d.nr = nr_of("getpid");
	d.arch = AUDIT_ARCH_I386;
	ok(sim_run(&prog, &d, &ret) == 0 && ret == SECCOMP_RET_KILL_PROCESS,
	   "archMap does not add sub-architectures: i386 is killed");
	sim_prog_free(&prog);

	path = write_profile("allow-default.json",
			     "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": ["
			     "{\"names\": [\"keyctl\"], \"action\": \"SCMP_ACT_ERRNO\"}]}");
	r = sim_compile(path, &prog, &err);
	if (!ok(r == 0, "compile an allow-by-default profile")) {
		diag("%s", err.msg);
		return;
	}
	expect_action(&prog, "getpid", nr_of("getpid"), 0, R_ALLOW);
	expect_action(&prog, "keyctl (ERRNO without errnoRet is EPERM)", nr_of("keyctl"), 0,
		      R_ERRNO(EPERM));
	expect_action(&prog, "clone3", nr_of("clone3"), 0, R_ERRNO(ENOSYS));
	expect_action(&prog, "syscall 1000", 1000, 0, R_ERRNO(ENOSYS));
	sim_prog_free(&prog);
}

static unsigned int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	unsigned int n = 0;

	if (!d)
		return 0;
	/* the stat-key links ("s-<hex>" -> "<sha256>.bpf") are the fast path's index, not
	 * programs or leftovers: counted by count_links */
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    !(de->d_type == DT_LNK && !strncmp(de->d_name, "s-", 2)))
			n++;
	closedir(d);
	return n;
}

/* Stat-key links in dir that point at an existing program in dir. */
static unsigned int count_links(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	unsigned int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char target[256];
		struct stat st;
		ssize_t k;

		if (de->d_type != DT_LNK || strncmp(de->d_name, "s-", 2))
			continue;
		k = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);
		if (k > 0 && (target[k] = '\0', !strchr(target, '/')) &&
		    fstatat(dirfd(d), target, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			n++;
	}
	closedir(d);
	return n;
}

static bool same_file_unchanged(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_size == b->st_size;
}

static void test_cache(const char *profile)
{
	struct ts_error err = { 0 };
	struct sim_prog cached = { 0 }, direct = { 0 };
	char cache[PATH_MAX], real[PATH_MAX], p1[PATH_MAX], p2[PATH_MAX], p3[PATH_MAX];
	_cleanup_free_ char *text = NULL;
	const char *copy;
	struct stat st1, st2, dst;
	size_t len = 0;
	int r;

	snprintf(cache, sizeof(cache), "%s/cache/nested/seccomp", tmpdir);
	r = ts_seccomp_compile_cached(profile, 0, cache, p1, sizeof(p1), &err);
	if (!ok(r == 0, "compile into a new cache directory: %s", r ? err.msg : p1))
		return;
	ok(realpath(cache, real) && strncmp(p1, real, strlen(real)) == 0 && p1[0] == '/' &&
		   strlen(p1) == strlen(real) + 1 + 64 + 4 &&
		   strcmp(p1 + strlen(p1) - 4, ".bpf") == 0,
	   "the path is absolute, in the cache, named by a SHA-256");
	ok(stat(cache, &dst) == 0 && (dst.st_mode & 07777) == 0700, "cache directory mode 0700");
	r = stat(p1, &st1);
	ok(r == 0 && (st1.st_mode & 07777) == 0644 && st1.st_size > 0 && st1.st_size % 8 == 0,
	   "cache file mode 0644, whole instructions (%lld bytes)",
	   r == 0 ? (long long)st1.st_size : -1LL);
	r = sim_read_file(p1, &cached);
	if (r == 0)
		r = sim_compile(profile, &direct, &err);
	ok(r == 0 && cached.len == direct.len &&
		   memcmp(cached.insns, direct.insns, direct.len * sizeof(*direct.insns)) == 0,
	   "the cached program equals ts_seccomp_compile_to_fd's");

	r = ts_seccomp_compile_cached(profile, 0, cache, p2, sizeof(p2), &err);
	ok(r == 0 && strcmp(p1, p2) == 0 && stat(p2, &st2) == 0 && same_file_unchanged(&st1, &st2),
	   "a second call returns the same file without rewriting it");
	ok(count_entries(cache) == 1, "no temporary files are left behind");
	ok(count_links(cache) == 1, "the stat-keyed fast path points at the program");

	/* The same profile with one more byte is another policy. */
	r = ts_read_file_at(AT_FDCWD, profile, 4U << 20, &text, &len);
	if (r == 0) {
		text[len - 1] = text[len - 1] == '\n' ? ' ' : '\n';
		copy = write_profile("changed.json", text);
		r = ts_seccomp_compile_cached(copy, 0, cache, p3, sizeof(p3), &err);
	}
	ok(r == 0 && strcmp(p1, p3) != 0, "a changed profile gets a different file");

	/* A torn file (not whole instructions) is rebuilt, never handed out. */
	r = truncate(p1, 5);
	if (r == 0)
		r = ts_seccomp_compile_cached(profile, 0, cache, p2, sizeof(p2), &err);
	sim_prog_free(&cached);
	ok(r == 0 && strcmp(p1, p2) == 0 && sim_read_file(p2, &cached) == 0 &&
		   cached.len == direct.len &&
		   memcmp(cached.insns, direct.insns, direct.len * sizeof(*direct.insns)) == 0,
	   "a torn cache file is rebuilt");

	r = ts_seccomp_compile_cached(profile, 0, cache, p2, 16, &err);
	ok(r == -ENAMETOOLONG, "a short ret_path buffer: %s", err.msg);

	copy = write_profile("broken.json", "{\"defaultAction\": ");
	r = ts_seccomp_compile_cached(copy, 0, cache, p2, sizeof(p2), &err);
	ok(r == -EINVAL && strstr(err.msg, "broken.json:1:") && count_entries(cache) == 2,
	   "a bad profile leaves the cache alone: %s", err.msg);

	if (chmod(cache, 0777) == 0) {
		r = ts_seccomp_compile_cached(profile, 0, cache, p2, sizeof(p2), &err);
		ok(r == -EPERM, "a cache directory others can write is refused: %s", err.msg);
		chmod(cache, 0700);
	}
	sim_prog_free(&cached);
	sim_prog_free(&direct);
}

int main(int argc, char **argv)
{
	const char *base = getenv("TMPDIR");

	plan(0);
	if (argc != 3) {
		fprintf(stderr, "usage: %s DEFAULT.json DOCKER-SHAPED.json\n", argv[0]);
		return 2;
	}
	snprintf(tmpdir, sizeof(tmpdir), "%s/ts-seccomp-test.XXXXXX",
		 base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		ok(false, "mkdtemp `%s`: %m", tmpdir);
		return done();
	}
	test_errors();
	test_semantics(argv[2]);
	test_cache(argv[1]);
	test_setid_guard(argv[1]);
	ts_rm_rf_at(AT_FDCWD, tmpdir);
	return done();
}
