/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The in-sandbox probe: one process per case, each printing exactly one line
 * `YARD <id> PASS|FAIL|SKIP <detail>` (security-cases.md §B.0).
 *
 * Errno oracle: an allowed syscall called with harmless invalid arguments fails with
 * EBADF, EFAULT or EINVAL; a filtered one returns the filter's errno (EPERM, ENOSYS).
 * Each case therefore also runs a control call that must *not* look filtered, so a
 * blanket EPERM (or a probe that cannot observe success) shows up as FAIL.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PROBE_MAX_LIST 16
#define PROBE_MAX_FDS 64
#define PROBE_DETAIL_MAX 1400

struct probe_kv {
	const char *name;
	const char *value;
};

/* Host-facing inputs (argv) and what the probe saw at entry. */
struct probe_ctx {
	pid_t canary_pid;	   /* host `sleep` canary; 0 = read ws file yard-canary.pid */
	int port;		   /* host loopback canary port (NW-04); 0 = none */
	const char *abstract_name; /* host abstract listener name, without the leading NUL */
	const char *abstract_rev;  /* name to bind inside for the reverse NW-08 check */
	struct probe_kv pp[PROBE_MAX_LIST]; /* protected files: workspace-relative name, sha256 */
	size_t n_pp;
	const char *symlinks[PROBE_MAX_LIST]; /* FS-09: planted symlinks at protected names */
	size_t n_symlinks;
	struct probe_kv allow_env[PROBE_MAX_LIST]; /* extra env names passed with --env */
	size_t n_allow_env;
	long host_uid; /* uid that ran the CLI, -1 unknown */
	/*
	 * uid_map/gid_map of the CLI's own user namespace ("in out count" lines separated
	 * by ','), so ids read from the sandbox's maps can be translated to host ids when
	 * the CLI itself runs under `unshare -r`. NULL: the CLI is in the initial namespace.
	 */
	const char *parent_uid_map;
	const char *parent_gid_map;
	long expect_uid; /* uid the command should run as (1000, or 0 with --user root) */
	const char *host_hostname;
	const char *host_user;
	const char *host_home;
	const char *canary_dir;		/* host canary directory: must not exist inside */
	const char *state_dir;		/* host runtime state dir: must not exist inside */
	const char *ssh_sock;		/* host $SSH_AUTH_SOCK path */
	const char *shm_name;		/* host file in /dev/shm that must not be visible */
	long shm_key, sem_key, msg_key; /* host SysV keys, -1 = none */
	long host_devpts_dev;		/* st_dev of the host /dev/pts, -1 unknown */
	const char *marker;		/* argv marker for escapee processes (RT-08) */
	const char *devnode;		/* DV-03: device node the host made in the workspace */
	const char *lower_file;		/* FS-02: host file visible inside through a lower layer */
	const char *lower_hash;
	const char *secret_prefix; /* every host secret value starts with this */
	const char *self;	   /* path of this binary inside the sandbox */

	/* fds open at entry, before the probe opened anything (RT-01) */
	int entry_fds[PROBE_MAX_FDS];
	char entry_links[PROBE_MAX_FDS][128];
	size_t n_entry_fds;
};

enum probe_verdict {
	PROBE_PASS,
	PROBE_SKIP,
	PROBE_FAIL,
};

struct probe_res {
	const char *id;
	bool failed;
	bool skipped;
	size_t len;
	char detail[PROBE_DETAIL_MAX];
};

typedef void (*probe_fn)(struct probe_ctx *ctx, struct probe_res *r);

struct probe_case {
	const char *id;
	probe_fn fn;
};

/* A NUL-terminated list of acceptable errno values. */
#define ERRS(...) ((const int[]){ __VA_ARGS__, 0 })

/* Append ` text` to the detail. */
void res_note(struct probe_res *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Mark FAIL and append ` !text`. */
void res_fail(struct probe_res *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Mark SKIP (only wins when nothing failed) and append ` skip: text`. */
void res_skip(struct probe_res *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Short errno name (EPERM), "OK" for 0. */
const char *en(int e);
bool errno_in(int e, const int *errs);

/*
 * The forbidden thing must fail: ret == -1 with errno in errs. Anything else (success
 * or a different errno) is a FAIL. Records `what=ERRNO` either way.
 */
bool expect_err(struct probe_res *r, const char *what, long ret, int err, const int *errs);
/* Control: the allowed call must fail with an oracle errno (EBADF, EFAULT, EINVAL...). */
bool control_err(struct probe_res *r, const char *what, long ret, int err, const int *errs);
/* Control: the allowed call must succeed (ret >= 0). */
bool control_ok(struct probe_res *r, const char *what, long ret, int err);

#define TRY(r, what, expr, ...)                                                                    \
	({                                                                                         \
		errno = 0;                                                                         \
		long _rc = (long)(expr);                                                           \
		expect_err((r), (what), _rc, errno, ERRS(__VA_ARGS__));                            \
	})
#define CTL(r, what, expr, ...)                                                                    \
	({                                                                                         \
		errno = 0;                                                                         \
		long _rc = (long)(expr);                                                           \
		control_err((r), (what), _rc, errno, ERRS(__VA_ARGS__));                           \
	})
#define CTL_OK(r, what, expr)                                                                      \
	({                                                                                         \
		errno = 0;                                                                         \
		long _rc = (long)(expr);                                                           \
		control_ok((r), (what), _rc, errno);                                               \
	})

/* Read up to size-1 bytes of a file into buf (NUL-terminated). Returns bytes or -errno. */
ssize_t read_file(const char *path, char *buf, size_t size);
/* Value of `Field:` in /proc/<pid>/status (pid 0 = self, -1 = thread-self), or -errno. */
int proc_status(pid_t pid, const char *field, char *out, size_t size);
/* Visible numeric /proc entries; returns the count, fills up to max pids. */
size_t proc_pids(pid_t *pids, size_t max);
/* sha256 of a file as lowercase hex (65 bytes). Returns 0 or -errno. */
int sha256_file(const char *path, char hex[65]);
void sha256_buf(const void *data, size_t len, char hex[65]);
/* true when the path is a mount point in /proc/self/mountinfo; *opts gets its options. */
bool is_mount_point(const char *abs_path, char *opts, size_t opts_size);
/* Run fn in a child with a timeout; returns the wait status, or -errno. */
int run_child(int (*fn)(void *), void *arg, int timeout_s);
/* The file descriptor's target as shown by /proc/self/fd. */
void fd_link(int fd, char *out, size_t size);
/* true when the network namespace has only `lo` and no non-loopback route. */
bool net_loopback_only(struct probe_res *r);

/* The cases, one function each, grouped by family file. */
#define PROBE_CASE(name) void name(struct probe_ctx *ctx, struct probe_res *r)
PROBE_CASE(sc01_keyring);
PROBE_CASE(sc02_userns);
PROBE_CASE(sc03_namespaces);
PROBE_CASE(sc04_mount);
PROBE_CASE(sc05_io_uring);
PROBE_CASE(sc06_bpf);
PROBE_CASE(sc07_perf);
PROBE_CASE(sc08_userfaultfd);
PROBE_CASE(sc09_privileged);
PROBE_CASE(sc10_handles);
PROBE_CASE(sc11_tracing);
PROBE_CASE(sc12_personality);
PROBE_CASE(sc13_abi);
PROBE_CASE(sc14_ioctl_oracle);
PROBE_CASE(sc15_sockets);
PROBE_CASE(sc16_clock);
PROBE_CASE(sc17_filter);

PROBE_CASE(ns01_pids);
PROBE_CASE(ns02_signals);
PROBE_CASE(ns03_procsys);
PROBE_CASE(ns04_sysrq);
PROBE_CASE(ns05_sys);
PROBE_CASE(ns07_release_agent);
PROBE_CASE(ns08_cgroup);
PROBE_CASE(ns09_propagation);
PROBE_CASE(ns10_uts_ipc);
PROBE_CASE(ns11_chroot);
PROBE_CASE(ns12_caps);
PROBE_CASE(ns14_idmap);
PROBE_CASE(ev01_env);
PROBE_CASE(ev03_host_files);
PROBE_CASE(ev04_info);
PROBE_CASE(dv01_dev);
PROBE_CASE(dv02_mknod);
PROBE_CASE(dv03_nodev);
PROBE_CASE(dv04_devpts);

PROBE_CASE(rt01_fds);
PROBE_CASE(rt02_cwd);
PROBE_CASE(rt03_exe);
PROBE_CASE(rt05_scm_rights);
PROBE_CASE(rt07_init);
PROBE_CASE(rt08_escapees);
PROBE_CASE(tt01_tiocsti);
PROBE_CASE(tt02_tiocsti_high);
PROBE_CASE(tt03_tioclinux);
PROBE_CASE(tt04_ctty);

PROBE_CASE(nw01_interfaces);
PROBE_CASE(nw02_egress4);
PROBE_CASE(nw03_egress6);
PROBE_CASE(nw04_host_loopback);
PROBE_CASE(nw06_reconfig);
PROBE_CASE(nw07_vsock);
PROBE_CASE(nw08_abstract);
PROBE_CASE(nw09_socket_files);
PROBE_CASE(nw10_udp_icmp);

PROBE_CASE(fs01_ro_root);
PROBE_CASE(fs02_copy_up);
PROBE_CASE(fs03_dirty_pipe);
PROBE_CASE(fs04_hardlinks);
PROBE_CASE(fs05_residue);
PROBE_CASE(fs08_fsize);
PROBE_CASE(fs09_planted_symlink);
PROBE_CASE(pp01_read);
PROBE_CASE(pp02_write);
PROBE_CASE(pp03_rename_over);
PROBE_CASE(pp04_move_away);
PROBE_CASE(pp05_unlink);
PROBE_CASE(pp06_hardlink);
PROBE_CASE(pp07_symlink);
PROBE_CASE(pp10_metadata);
PROBE_CASE(pp12_new_name);
PROBE_CASE(pp13_splice);
PROBE_CASE(pp14_kernel);

/* Helper modes reused by cases (probe.c). */
int probe_print_status(void);
