// SPDX-License-Identifier: Apache-2.0
/*
 * probe: runs inside a toren-sandbox and checks its isolation from within.
 *
 *   probe [OPTIONS] all | family SC | CASE-ID...
 *   probe --emit BYTES | --status | --kill-all | --write-everywhere TOKEN |
 *         --prop-check DIR | --argv-check ARG... | --linger MARKER | --list
 *
 * Each case runs in its own child (a case may load a filter, unshare, change its
 * personality or crash) and prints exactly one line `YARD <id> PASS|FAIL|SKIP <detail>`.
 * Exit status: 0 iff no case failed, 1 otherwise, 2 on usage errors.
 *
 * Never run the cases outside a sandbox: some (umount2, kill(-1), TIOCSTI) act on
 * whatever namespace they run in. The probe refuses to when it finds itself in the
 * initial user namespace; only --emit, --status, --argv-check, --linger and --list run
 * there.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

struct case_entry {
	const char *id;
	probe_fn fn;
	int timeout_s;
};

/* Order matters for `all`: cases that leave processes behind or signal pid 1 run last. */
static const struct case_entry cases[] = {
	{ "SC-01", sc01_keyring, 0 },
	{ "SC-02", sc02_userns, 0 },
	{ "SC-03", sc03_namespaces, 0 },
	{ "SC-04", sc04_mount, 0 },
	{ "SC-05", sc05_io_uring, 0 },
	{ "SC-06", sc06_bpf, 0 },
	{ "SC-07", sc07_perf, 0 },
	{ "SC-08", sc08_userfaultfd, 0 },
	{ "SC-09", sc09_privileged, 0 },
	{ "SC-10", sc10_handles, 0 },
	{ "SC-11", sc11_tracing, 0 },
	{ "SC-12", sc12_personality, 0 },
	{ "SC-13", sc13_abi, 0 },
	{ "SC-14", sc14_ioctl_oracle, 0 },
	{ "SC-15", sc15_sockets, 0 },
	{ "SC-16", sc16_clock, 0 },
	{ "SC-17", sc17_filter, 0 },
	{ "NS-01", ns01_pids, 0 },
	{ "NS-02", ns02_signals, 0 },
	{ "NS-03", ns03_procsys, 0 },
	{ "NS-04", ns04_sysrq, 0 },
	{ "NS-05", ns05_sys, 60 },
	{ "NS-07", ns07_release_agent, 60 },
	{ "NS-08", ns08_cgroup, 0 },
	{ "NS-09", ns09_propagation, 0 },
	{ "NS-10", ns10_uts_ipc, 0 },
	{ "NS-11", ns11_chroot, 0 },
	{ "NS-12", ns12_caps, 0 },
	{ "NS-14", ns14_idmap, 0 },
	{ "EV-01", ev01_env, 0 },
	{ "EV-03", ev03_host_files, 0 },
	{ "EV-04", ev04_info, 0 },
	{ "DV-01", dv01_dev, 0 },
	{ "DV-02", dv02_mknod, 0 },
	{ "DV-03", dv03_nodev, 0 },
	{ "DV-04", dv04_devpts, 0 },
	{ "FS-01", fs01_ro_root, 0 },
	{ "FS-02", fs02_copy_up, 0 },
	{ "FS-03", fs03_dirty_pipe, 0 },
	{ "FS-04", fs04_hardlinks, 0 },
	{ "FS-05", fs05_residue, 0 },
	{ "FS-08", fs08_fsize, 0 },
	{ "FS-09", fs09_planted_symlink, 0 },
	{ "PP-01", pp01_read, 0 },
	{ "PP-02", pp02_write, 0 },
	{ "PP-03", pp03_rename_over, 0 },
	{ "PP-04", pp04_move_away, 0 },
	{ "PP-05", pp05_unlink, 0 },
	{ "PP-06", pp06_hardlink, 0 },
	{ "PP-07", pp07_symlink, 0 },
	{ "PP-10", pp10_metadata, 0 },
	{ "PP-12", pp12_new_name, 0 },
	{ "PP-13", pp13_splice, 0 },
	{ "PP-14", pp14_kernel, 0 },
	{ "NW-01", nw01_interfaces, 0 },
	{ "NW-02", nw02_egress4, 0 },
	{ "NW-03", nw03_egress6, 0 },
	{ "NW-04", nw04_host_loopback, 0 },
	{ "NW-06", nw06_reconfig, 0 },
	{ "NW-07", nw07_vsock, 0 },
	{ "NW-08", nw08_abstract, 30 },
	{ "NW-09", nw09_socket_files, 90 },
	{ "NW-10", nw10_udp_icmp, 0 },
	{ "TT-01", tt01_tiocsti, 0 },
	{ "TT-02", tt02_tiocsti_high, 0 },
	{ "TT-03", tt03_tioclinux, 0 },
	{ "TT-04", tt04_ctty, 0 },
	{ "RT-01", rt01_fds, 0 },
	{ "RT-02", rt02_cwd, 0 },
	{ "RT-03", rt03_exe, 0 },
	{ "RT-05", rt05_scm_rights, 0 },
	{ "RT-07", rt07_init, 90 },
	{ "RT-08", rt08_escapees, 0 },
};
#define N_CASES (sizeof(cases) / sizeof(cases[0]))

static int default_timeout = 30;

static void msleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

/* One line on stdout; the detail is forced onto one printable line. */
static void print_line(const char *id, enum probe_verdict v, const char *detail)
{
	static const char *const names[] = { "PASS", "SKIP", "FAIL" };
	char line[PROBE_DETAIL_MAX + 64];
	int n = snprintf(line, sizeof(line), "YARD %s %s %s", id, names[v],
			 detail && *detail ? detail : "-");
	if (n < 0)
		return;
	size_t len = (size_t)n < sizeof(line) - 1 ? (size_t)n : sizeof(line) - 2;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] > 0x7e)
			line[i] = '?';
	line[len++] = '\n';
	write_all(1, line, len);
}

static enum probe_verdict verdict(const struct probe_res *r)
{
	return r->failed ? PROBE_FAIL : r->skipped ? PROBE_SKIP : PROBE_PASS;
}

/* fds open at entry, found without opening anything (no /proc needed). */
static void snapshot_fds(struct probe_ctx *ctx)
{
	for (int fd = 0; fd < 1024 && ctx->n_entry_fds < PROBE_MAX_FDS; fd++) {
		if (fcntl(fd, F_GETFD) < 0)
			continue;
		ctx->entry_fds[ctx->n_entry_fds] = fd;
		fd_link(fd, ctx->entry_links[ctx->n_entry_fds], sizeof(ctx->entry_links[0]));
		ctx->n_entry_fds++;
	}
}

static bool in_initial_userns(void)
{
	char buf[128];
	long in, out, count;
	if (read_file("/proc/self/uid_map", buf, sizeof(buf)) <= 0)
		return false;
	return sscanf(buf, "%ld %ld %ld", &in, &out, &count) == 3 && in == 0 && out == 0 &&
	       count == 4294967295L;
}

/* Run one case in a child; print its line; return the verdict. */
static enum probe_verdict run_case(struct probe_ctx *ctx, const struct case_entry *c)
{
	int p[2];
	int timeout = c->timeout_s ? c->timeout_s : default_timeout;
	if (pipe2(p, O_CLOEXEC) < 0) {
		print_line(c->id, PROBE_FAIL, "probe: pipe failed");
		return PROBE_FAIL;
	}
	pid_t pid = fork();
	if (pid < 0) {
		print_line(c->id, PROBE_FAIL, "probe: fork failed");
		close(p[0]);
		close(p[1]);
		return PROBE_FAIL;
	}
	if (pid == 0) {
		struct probe_res r;
		close(p[0]);
		memset(&r, 0, sizeof(r));
		r.id = c->id;
		alarm((unsigned)timeout);
		c->fn(ctx, &r);
		char out[PROBE_DETAIL_MAX + 8];
		int n = snprintf(out, sizeof(out), "%d %s\n", verdict(&r), r.detail);
		write_all(p[1], out, (size_t)(n > 0 ? n : 0));
		_exit(0);
	}
	close(p[1]);
	char buf[PROBE_DETAIL_MAX + 8];
	size_t len = 0;
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		long left = (timeout + 5 - (now.tv_sec - t0.tv_sec)) * 1000L;
		if (left <= 0 || memchr(buf, '\n', len) || len >= sizeof(buf) - 1)
			break;
		struct pollfd pf = { p[0], POLLIN, 0 };
		if (poll(&pf, 1, (int)left) <= 0)
			break;
		ssize_t n = read(p[0], buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(p[0]);
	buf[len] = '\0';
	int st = 0;
	if (!memchr(buf, '\n', len)) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		char d[128];
		if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
			snprintf(d, sizeof(d), "timed out after %d s", timeout);
		else if (WIFSIGNALED(st))
			snprintf(d, sizeof(d), "case process died with SIG%s",
				 sigabbrev_np(WTERMSIG(st)) ?: "?");
		else
			snprintf(d, sizeof(d), "no result (status %d)", st);
		print_line(c->id, PROBE_FAIL, d);
		return PROBE_FAIL;
	}
	waitpid(pid, &st, 0);
	buf[strcspn(buf, "\n")] = '\0';
	enum probe_verdict v = (enum probe_verdict)(buf[0] - '0');
	if (v > PROBE_FAIL)
		v = PROBE_FAIL;
	print_line(c->id, v, buf[1] ? buf + 2 : "");
	return v;
}

int probe_print_status(void)
{
	static const char *const fields[] = { "Seccomp", "NoNewPrivs", "Seccomp_filters", "CapInh",
					      "CapPrm",	 "CapEff",     "CapBnd",	  "CapAmb" };
	char out[1024], v[64];
	size_t len = 0;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (proc_status(0, fields[i], v, sizeof(v)) < 0)
			snprintf(v, sizeof(v), "?");
		len += (size_t)snprintf(out + len, sizeof(out) - len, "%s=%s ", fields[i], v);
	}
	out[len++] = '\n';
	write_all(1, out, len);
	return 0;
}

/* A deterministic byte stream (xorshift64*), so host and sandbox output can be compared. */
static int emit(unsigned long long n)
{
	static unsigned char buf[1 << 16];
	uint64_t x = 0x9E3779B97F4A7C15ULL;
	signal(SIGPIPE, SIG_DFL);
	while (n) {
		for (size_t i = 0; i < sizeof(buf); i += 8) {
			x ^= x >> 12;
			x ^= x << 25;
			x ^= x >> 27;
			uint64_t v = x * 0x2545F4914F6CDD1DULL;
			for (int b = 0; b < 8; b++)
				buf[i + (size_t)b] = (unsigned char)(v >> (8 * b));
		}
		size_t chunk = n < sizeof(buf) ? (size_t)n : sizeof(buf);
		for (size_t off = 0; off < chunk;) {
			ssize_t w = write(1, buf + off, chunk - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return 1;
			off += (size_t)w;
		}
		n -= chunk;
	}
	return 0;
}

struct we {
	const char *name;
	size_t dirs, created;
	time_t deadline;
	char list[PROBE_DETAIL_MAX];
	size_t list_len;
};

static void we_walk(struct we *w, const char *dir, int depth)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return;
	w->dirs++;
	int fd = openat(dfd, w->name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		close(fd);
		w->created++;
		write_all(1, "WE ", 3);
		write_all(1, dir, strlen(dir));
		write_all(1, "\n", 1);
	}
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d)) && depth > 0 && w->dirs < 200000 && time(NULL) < w->deadline) {
		char path[PATH_MAX];
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", strcmp(dir, "/") ? dir : "", de->d_name);
		if (!strcmp(path, "/proc") || !strcmp(path, "/sys"))
			continue;
		unsigned char t = de->d_type;
		if (t == DT_UNKNOWN) {
			struct stat st;
			t = lstat(path, &st) == 0 && S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
		}
		if (t == DT_DIR)
			we_walk(w, path, depth - 1);
	}
	closedir(d);
}

/*
 * Try to create `.yard-we-TOKEN` in every directory visible (except /proc and /sys).
 * Each success prints `WE <dir>`; the host then checks that none of these files
 * appeared outside the workspace.
 */
static int write_everywhere(const char *token)
{
	struct we w;
	char name[128], d[128];
	memset(&w, 0, sizeof(w));
	snprintf(name, sizeof(name), ".yard-we-%s", token);
	w.name = name;
	w.deadline = time(NULL) + 120;
	we_walk(&w, "/", 48);
	snprintf(d, sizeof(d), "dirs=%zu created=%zu%s", w.dirs, w.created,
		 time(NULL) >= w.deadline ? " (time budget hit)" : "");
	print_line("WE", PROBE_PASS, d);
	return 0;
}

/* NS-02, second half: kill(-1, SIGKILL) after the pid namespace is known to be ours. */
static int kill_all(struct probe_ctx *ctx)
{
	struct probe_res r;
	memset(&r, 0, sizeof(r));
	r.id = "NS-02-killall";
	ns01_pids(ctx, &r);
	if (r.failed) {
		res_fail(&r, "precondition (own pid namespace) failed: kill(-1) not attempted");
		print_line(r.id, PROBE_FAIL, r.detail);
		return 1;
	}
	r.len = 0;
	r.detail[0] = '\0';
	pid_t kids[3];
	for (int i = 0; i < 3; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			for (;;)
				pause();
		}
	}
	msleep(100);
	errno = 0;
	int rc = kill(-1, SIGKILL);
	res_note(&r, "kill(-1,KILL)=%s", rc == 0 ? "OK" : en(errno));
	size_t killed = 0;
	for (int i = 0; i < 3; i++) {
		int st = 0;
		if (kids[i] > 0 && waitpid(kids[i], &st, 0) == kids[i] && WIFSIGNALED(st) &&
		    WTERMSIG(st) == SIGKILL)
			killed++;
	}
	if (killed != 3)
		res_fail(&r, "ctl: only %zu of 3 sandbox children were killed", killed);
	else
		res_note(&r, "ctl:own children killed");
	if (access("/proc/1", F_OK) < 0)
		res_fail(&r, "pid 1 is gone");
	res_note(&r, "host canary verified by the harness");
	print_line(r.id, verdict(&r), r.detail);
	return r.failed;
}

/* NS-09, host half: a mount the host makes after start must not appear inside. */
static int prop_check(const char *dir)
{
	struct probe_res r;
	struct stat before, after;
	char path[PATH_MAX];
	memset(&r, 0, sizeof(r));
	r.id = "NS-09-host";
	if (!CTL_OK(&r, "stat(dir)", stat(dir, &before))) {
		print_line(r.id, PROBE_FAIL, r.detail);
		return 1;
	}
	int fd = open("yard-prop.ready", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
	for (int t = 0; t < 300 && access("yard-prop.go", F_OK) < 0; t++)
		msleep(50);
	if (access("yard-prop.go", F_OK) < 0)
		res_fail(&r, "the harness never signalled (yard-prop.go)");
	snprintf(path, sizeof(path), "%s/yard-prop-marker", dir);
	if (is_mount_point(dir, NULL, 0))
		res_fail(&r, "the host mount on %s appeared inside", dir);
	if (stat(dir, &after) == 0 && after.st_dev != before.st_dev)
		res_fail(&r, "%s changed device", dir);
	if (access(path, F_OK) == 0)
		res_fail(&r, "the host tmpfs content is visible");
	if (!r.failed)
		res_note(&r, "host mount not propagated");
	unlink("yard-prop.ready");
	print_line(r.id, verdict(&r), r.detail);
	return r.failed;
}

/* RT-06: argv reaches the command verbatim, no shell in between. */
static int argv_check(int argc, char **argv)
{
	static const char *const want[] = {
		"-c", "x;id", "$HOME", "*", " a b ", "", "--", "-", "\\"
	};
	const size_t n = sizeof(want) / sizeof(want[0]);
	struct probe_res r;
	memset(&r, 0, sizeof(r));
	r.id = "RT-06";
	if ((size_t)argc != n)
		res_fail(&r, "argc %d, want %zu", argc, n);
	for (size_t i = 0; i < n && i < (size_t)argc; i++)
		if (strcmp(argv[i], want[i]))
			res_fail(&r, "argv[%zu] altered", i);
	if (!r.failed)
		res_note(&r, "%zu args verbatim", n);
	print_line(r.id, verdict(&r), r.detail);
	return r.failed;
}

static int linger(void)
{
	signal(SIGHUP, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < 1000; i++)
		sleep(1000);
	return 0;
}

static void usage(void)
{
	fputs("usage: probe [OPTIONS] all | family FAM | CASE-ID...\n"
	      "       probe --emit BYTES | --status | --kill-all | --write-everywhere TOKEN\n"
	      "       probe --prop-check DIR | --argv-check ARG... | --linger MARKER | --list\n"
	      "options: --canary-pid N --port P --abstract NAME --abstract-rev NAME\n"
	      "  --pp NAME=SHA256 --symlink NAME --env-allow NAME[=VALUE] --host-uid N\n"
	      "  --parent-uid-map MAP --parent-gid-map MAP\n"
	      "  --expect-uid N --host-hostname H --host-user U --host-home DIR\n"
	      "  --canary-dir DIR --state-dir DIR --ssh-sock PATH --shm-name NAME\n"
	      "  --shm-key K --sem-key K --msg-key K --host-devpts-dev N --marker M\n"
	      "  --devnode PATH --lower-file PATH[=SHA256] --secret-prefix S --timeout S\n",
	      stderr);
}

static void split_kv(char *arg, struct probe_kv *kv)
{
	char *eq = strrchr(arg, '=');
	if (eq)
		*eq = '\0';
	kv->name = arg;
	kv->value = eq ? eq + 1 : NULL;
}

int main(int argc, char **argv)
{
	static struct probe_ctx ctx;
	snapshot_fds(&ctx); /* first: before anything opens an fd */
	ctx.expect_uid = 1000;
	ctx.host_uid = -1;
	ctx.shm_key = ctx.sem_key = ctx.msg_key = -1;
	ctx.host_devpts_dev = -1;
	ctx.secret_prefix = "yardcanary";
	ctx.self = argv[0];
	signal(SIGPIPE, SIG_IGN);

	const char *mode = NULL, *mode_arg = NULL;
	bool allow_host = false;
	int i = 1;
	for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
		const char *o = argv[i];
		if (!strcmp(o, "--status") || !strcmp(o, "--kill-all")) {
			mode = o;
			continue;
		}
		if (!strcmp(o, "--list")) {
			for (size_t c = 0; c < N_CASES; c++)
				printf("%s\n", cases[c].id);
			return 0;
		}
		if (!strcmp(o, "--argv-check")) {
			return argv_check(argc - i - 1, argv + i + 1);
		}
		if (!strcmp(o, "--allow-host")) {
			allow_host = true;
			continue;
		}
		if (i + 1 >= argc) {
			usage();
			return 2;
		}
		char *v = argv[++i];
		if (!strcmp(o, "--emit") || !strcmp(o, "--write-everywhere") ||
		    !strcmp(o, "--prop-check") || !strcmp(o, "--linger")) {
			mode = o;
			mode_arg = v;
		} else if (!strcmp(o, "--canary-pid"))
			ctx.canary_pid = (pid_t)strtol(v, NULL, 10);
		else if (!strcmp(o, "--port"))
			ctx.port = (int)strtol(v, NULL, 10);
		else if (!strcmp(o, "--abstract"))
			ctx.abstract_name = v;
		else if (!strcmp(o, "--abstract-rev"))
			ctx.abstract_rev = v;
		else if (!strcmp(o, "--pp") && ctx.n_pp < PROBE_MAX_LIST)
			split_kv(v, &ctx.pp[ctx.n_pp++]);
		else if (!strcmp(o, "--symlink") && ctx.n_symlinks < PROBE_MAX_LIST)
			ctx.symlinks[ctx.n_symlinks++] = v;
		else if (!strcmp(o, "--env-allow") && ctx.n_allow_env < PROBE_MAX_LIST) {
			char *eq = strchr(v, '=');
			if (eq)
				*eq = '\0';
			ctx.allow_env[ctx.n_allow_env].name = v;
			ctx.allow_env[ctx.n_allow_env++].value = eq ? eq + 1 : NULL;
		} else if (!strcmp(o, "--host-uid"))
			ctx.host_uid = strtol(v, NULL, 10);
		else if (!strcmp(o, "--parent-uid-map"))
			ctx.parent_uid_map = v;
		else if (!strcmp(o, "--parent-gid-map"))
			ctx.parent_gid_map = v;
		else if (!strcmp(o, "--expect-uid"))
			ctx.expect_uid = strtol(v, NULL, 10);
		else if (!strcmp(o, "--host-hostname"))
			ctx.host_hostname = v;
		else if (!strcmp(o, "--host-user"))
			ctx.host_user = v;
		else if (!strcmp(o, "--host-home"))
			ctx.host_home = v;
		else if (!strcmp(o, "--canary-dir"))
			ctx.canary_dir = v;
		else if (!strcmp(o, "--state-dir"))
			ctx.state_dir = v;
		else if (!strcmp(o, "--ssh-sock"))
			ctx.ssh_sock = v;
		else if (!strcmp(o, "--shm-name"))
			ctx.shm_name = v;
		else if (!strcmp(o, "--shm-key"))
			ctx.shm_key = strtol(v, NULL, 0);
		else if (!strcmp(o, "--sem-key"))
			ctx.sem_key = strtol(v, NULL, 0);
		else if (!strcmp(o, "--msg-key"))
			ctx.msg_key = strtol(v, NULL, 0);
		else if (!strcmp(o, "--host-devpts-dev"))
			ctx.host_devpts_dev = strtol(v, NULL, 10);
		else if (!strcmp(o, "--marker"))
			ctx.marker = v;
		else if (!strcmp(o, "--devnode"))
			ctx.devnode = v;
		else if (!strcmp(o, "--lower-file")) {
			struct probe_kv kv;
			split_kv(v, &kv);
			ctx.lower_file = kv.name;
			ctx.lower_hash = kv.value;
		} else if (!strcmp(o, "--secret-prefix"))
			ctx.secret_prefix = v;
		else if (!strcmp(o, "--timeout"))
			default_timeout = (int)strtol(v, NULL, 10);
		else {
			usage();
			return 2;
		}
	}

	if (mode && !strcmp(mode, "--emit"))
		return emit(strtoull(mode_arg, NULL, 10));
	if (mode && !strcmp(mode, "--status"))
		return probe_print_status();
	if (mode && !strcmp(mode, "--linger"))
		return linger();
	if (in_initial_userns() && !allow_host) {
		fputs("probe: refusing to run cases in the initial user namespace "
		      "(run it inside a sandbox)\n",
		      stderr);
		return 2;
	}
	if (mode && !strcmp(mode, "--kill-all"))
		return kill_all(&ctx);
	if (mode && !strcmp(mode, "--write-everywhere"))
		return write_everywhere(mode_arg);
	if (mode && !strcmp(mode, "--prop-check"))
		return prop_check(mode_arg);

	if (i >= argc) {
		usage();
		return 2;
	}
	bool any_fail = false;
	for (; i < argc; i++) {
		const char *sel = argv[i];
		const char *fam = NULL;
		if (!strcmp(sel, "family")) {
			if (i + 1 >= argc) {
				usage();
				return 2;
			}
			fam = argv[++i];
		}
		bool matched = false;
		for (size_t c = 0; c < N_CASES; c++) {
			bool take = !strcmp(sel, "all") ||
				    (fam && !strncmp(cases[c].id, fam, strlen(fam)) &&
				     cases[c].id[strlen(fam)] == '-') ||
				    (!fam && !strcmp(sel, cases[c].id));
			if (!take)
				continue;
			matched = true;
			if (run_case(&ctx, &cases[c]) == PROBE_FAIL)
				any_fail = true;
		}
		if (!matched) {
			print_line(fam ? fam : sel, PROBE_FAIL, "unknown case or family");
			any_fail = true;
		}
	}
	return any_fail ? 1 : 0;
}
