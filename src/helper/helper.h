/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The helper's state: everything main.c sequences, parsed once from argv and passed
 * down explicitly. Documented for users in toren-sandbox-helper(8).
 */
#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "cidr.h"
#include "error.h"
#include "hostpat.h"

/* Exit codes of the helper itself (the sandboxed program's status is passed through). */
#define TS_HELPER_EXIT_SETUP 125 /* the sandbox could not be built */

/* The fd the control channel is moved to before init is executed. */
#define TS_HELPER_CONTROL_FD 3

#define TS_HELPER_MAX_IDMAP 8
#define TS_HELPER_MAX_RLIMITS 16
#define TS_HELPER_MAX_LOWERS 16
#define TS_HELPER_MAX_ENV 4096
#define TS_HELPER_MAX_UCOUNTS 16
#define TS_HELPER_MAX_NET_RULES 64  /* --net-allow, --net-deny, each */
#define TS_HELPER_MAX_HOST_ADDRS 64 /* each family */

/* Egress (--net-pasta, --net-slirp4netns): the program that gives the sandbox's network
 * namespace a way out, started by the helper's parent (netproc.h). */
enum ts_net_mode {
	TS_NET_NONE,  /* only `lo`: nothing leaves */
	TS_NET_PASTA, /* pasta (passt) */
	TS_NET_SLIRP, /* slirp4netns */
	TS_NET_PROXY, /* --net-proxy: only `lo`, and the name proxy listening on it */
};

struct ts_net_plan {
	enum ts_net_mode mode;
	const char *program; /* absolute path of pasta or slirp4netns */
	struct ts_cidr allow[TS_HELPER_MAX_NET_RULES], deny[TS_HELPER_MAX_NET_RULES];
	size_t n_allow, n_deny;
	/* the host's own addresses, read by the parent before the clone: blocked inside
	 * (a connection there would reach the host's services through the egress program) */
	struct ts_cidr host[2 * TS_HELPER_MAX_HOST_ADDRS];
	size_t n_host;
	/* IPv6 leaves too (an address, a default route, the IPv6 blocks): the host has an
	 * IPv6 default route and the program carries IPv6 (pasta). Else IPv6 is prohibited
	 * as a whole. Decided by the parent before the clone (netproc.h). */
	bool ipv6;
	pid_t keeper; /* the process that owns the egress program (netproc.h), or 0 */
	/* TS_NET_PROXY: the names the proxy lets through (--net-allow-host), the directory
	 * it writes its counters to (--net-proxy-state, or NULL), and the socket the child
	 * made for it inside the sandbox's network namespace */
	struct ts_hostpat allow_host[TS_HELPER_MAX_NET_RULES];
	size_t n_allow_host;
	const char *proxy_state;
	int proxy_fd;
};

enum ts_mount_kind {
	TS_MOUNT_OVERLAY,    /* overlay of the collected lowers (+ upper/work) */
	TS_MOUNT_BIND,	     /* read-write bind of a host path */
	TS_MOUNT_RO_BIND,    /* read-only bind of a host path */
	TS_MOUNT_TMPFS,	     /* fresh tmpfs */
	TS_MOUNT_DIR,	     /* create a directory */
	TS_MOUNT_SYMLINK,    /* create a symlink */
	TS_MOUNT_PROC,	     /* fresh procfs with masked paths and read-only /proc/sys */
	TS_MOUNT_DEV,	     /* minimal /dev with a private devpts */
	TS_MOUNT_SYSFS,	     /* read-only sysfs, skipped when the kernel refuses */
	TS_MOUNT_MQUEUE,     /* POSIX message queue fs */
	TS_MOUNT_PROTECT,    /* bind an existing regular file read-only onto itself */
	TS_MOUNT_REMOUNT_RO, /* make an existing mount point read-only */
};

struct ts_mount_op {
	enum ts_mount_kind kind;
	const char *src;  /* host path (binds; --bind-fd: the fd's number), symlink target */
	const char *dest; /* absolute path inside the sandbox */
	int src_fd;	  /* O_PATH fd of src, opened before any mount changes the view;
			   * --bind-fd: the caller's fd, set when parsed */
	bool src_is_fd;	  /* --bind-fd */
	/* overlay */
	const char *lowers[TS_HELPER_MAX_LOWERS];
	int lower_fds[TS_HELPER_MAX_LOWERS];
	size_t n_lowers;
	const char *upper, *work;
	int upper_fd, work_fd;
	/* made by the parent (idmount.h): a layer whose owner the sandbox does not map,
	 * id-mapped with the sandbox's maps (-EBADF: none); and whether a layer stays
	 * owned by an unmapped id (then no `userxattr`: overlayfs could not read a user.*
	 * xattr of its directories that only their owner may read) */
	int lower_idmapped_fds[TS_HELPER_MAX_LOWERS];
	dev_t lower_dev[TS_HELPER_MAX_LOWERS]; /* of the directory it was made from */
	ino_t lower_ino[TS_HELPER_MAX_LOWERS];
	bool lower_unmapped[TS_HELPER_MAX_LOWERS];
	/* tmpfs */
	unsigned long long size; /* 0: kernel default */
	mode_t mode;
	long long owner; /* --owner (tmpfs, dir): uid and gid inside; -1: the creator's */
	bool ro;
	/* --bind-owner (binds): host ids that appear as the sandbox's user through an
	 * id-mapped mount (-1: a plain bind), and that mount, made by the parent */
	long long map_uid, map_gid;
	int idmapped_fd;
};

struct ts_idmap_line {
	unsigned long inside, outside, count;
};

/* Whether id (inside) falls in one of the map's lines. */
bool ts_helper_id_mapped(const struct ts_idmap_line *map, size_t n, unsigned long id);

struct ts_rlimit_op {
	int resource;
	struct rlimit value;
};

struct ts_cgroup_plan {
	const char *name;		 /* leaf name, e.g. the sandbox id; NULL: no cgroup */
	unsigned long long memory_bytes; /* 0: none */
	unsigned long long pids;	 /* 0: none */
	unsigned long long cpu_quota_us; /* per 100000 us period; 0: none */
	/* filled when created, removed by the parent after the sandbox ends */
	char paths[4][256];
	size_t n_paths;
};

struct ts_helper_ctx {
	struct ts_mount_op *ops;
	size_t n_ops;

	struct ts_idmap_line uid_map[TS_HELPER_MAX_IDMAP], gid_map[TS_HELPER_MAX_IDMAP];
	size_t n_uid_map, n_gid_map;
	bool newidmap; /* use newuidmap/newgidmap (subordinate ids) */
	uid_t uid;     /* uid inside the sandbox for the program */
	gid_t gid;

	const char *hostname;
	const char *chdir;
	int seccomp_fd; /* BPF program (struct sock_filter[]) or -1 */
	int sync_fd;	/* report channel to the caller or -1 */
	int control_fd; /* becomes fd 3 of the program, or -1 */
	int logs_fd;	/* becomes fd 4 (with control_fd), or -1 */
	bool die_with_parent;
	bool detach;	 /* exit after reporting instead of waiting for init */
	bool init_setid; /* the program keeps 4 capabilities (ts_caps_keep_setid) */

	struct ts_rlimit_op rlimits[TS_HELPER_MAX_RLIMITS];
	size_t n_rlimits;
	/* --userns-limit: budgets of the sandbox's user namespace (ucount.h) */
	struct {
		const char *name;
		unsigned long long value;
	} ucounts[TS_HELPER_MAX_UCOUNTS];
	size_t n_ucounts;
	struct ts_cgroup_plan cgroup;
	struct ts_net_plan net;

	char **envp; /* the program's whole environment (--setenv), NULL-terminated */
	size_t n_env;
	char **argv; /* the program to execute as PID 1 */
	/* --argv0: what the program sees as argv[0] (its host path is not the sandbox's
	 * business) */
	const char *argv0;
};

/* Parse argv into ctx (allocates ctx->ops). Returns 0 or -EINVAL with err set. */
int ts_helper_parse_args(struct ts_helper_ctx *ctx, int argc, char **argv, struct ts_error *err);

/* Free what ts_helper_parse_args allocated. */
void ts_helper_ctx_free(struct ts_helper_ctx *ctx);
