/* SPDX-License-Identifier: Apache-2.0 */
#include "launch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "helper-proto.h"
#include "hostcheck.h"
#include "idcopy.h"
#include "idmap-plan.h"
#include "image.h"
#include "leftovers.h"
#include "paths.h"
#include "protect.h"
#include "relay.h"
#include "seccomp-cache.h"
#include "seccomp-compile.h"
#include "strv.h"
#include "trustpath.h"
#include "upper.h"
#include "syscall.h"
#include "util.h"

/* fds the helper receives, at fixed numbers so the command line can name them. */
#define TS_FD_SECCOMP 10
#define TS_FD_SYNC 11
#define TS_FD_CONTROL 12
#define TS_FD_LOGS 13
#define TS_FD_WORKSPACE 14
/* a --dry-run line redirects the filter itself: a single digit, which every sh accepts */
#define TS_FD_SECCOMP_DRY 3

#define TS_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define TS_PROTECT_MAX_ENTRIES 1000000
#define TS_DEFAULT_NPROC 4096

/* Something prepare found to tell the caller (the library prints nothing). */
struct ts_note {
	char *msg;
	bool verbose_only; /* a warning only a verbose run shows */
};

struct ts_prepared {
	struct ts_paths paths;
	char id[TS_ID_LEN + 1];
	char dir[4096]; /* $ROOT/<id> */
	char workspace[4096];
	bool fresh_workspace;
	char bpf[4096];
	struct ts_image image;
	struct ts_idmap_plan idmap;
	char **protected;
	size_t n_protected;
	struct ts_strv argv;
	struct ts_note *notes; /* told in this order once prepare succeeded */
	size_t n_notes;
	bool setuid_helper;
	bool upper;		       /* overlay with a per-sandbox upper layer */
	bool dir_created;	       /* $ROOT/<id> was made and must go */
	int listen_fd;		       /* durable: the control socket init will own */
	int logs_fd;		       /* durable: $ROOT/<id>/logs */
	unsigned long long first_proc; /* durable: init's first process id (logs go on) */
	bool used_cgroup;	       /* limits went to cgroups named ts-<id> */
	bool as_root;		       /* every process of the sandbox is its root */
	bool use_pty;		       /* run -t with a terminal: init makes a pty */
	bool claimed;		       /* run: $ROOT/oneshot/<id> is ours (leftovers.h) */
	int ws_fd;		       /* the workspace, opened once (O_PATH): what is bound */
	long long ws_owner_uid;	       /* >= 0: bind the workspace id-mapped, its owner */
	long long ws_owner_gid;	       /* appearing as the sandbox's user */
	unsigned seccomp_flags;	       /* TS_SECCOMP_* */
	bool sudo;		       /* durable, with a root: init serves sudo (policy sudo) */
	char sudo_usr[4096];	       /* host image + sudo: the layer put over /usr */
	enum ts_net_backend net;       /* egress program, TS_NET_BACKEND_NONE: only `lo` */
	char net_prog[4096];	       /* its absolute path */
	char resolv[4300]; /* egress: the resolv.conf bound at /etc/resolv.conf, or "" */
};

static void prepared_free(struct ts_prepared *p)
{
	if (p->listen_fd >= 0)
		close(p->listen_fd);
	if (p->logs_fd >= 0)
		close(p->logs_fd);
	if (p->ws_fd >= 0)
		close(p->ws_fd);
	p->listen_fd = p->logs_fd = p->ws_fd = -EBADF;
	ts_image_release(&p->image);
	ts_strv_free(p->protected);
	p->protected = NULL;
	ts_strv_clear(&p->argv);
	for (size_t i = 0; i < p->n_notes; i++)
		free(p->notes[i].msg);
	free(p->notes);
	p->notes = NULL;
	p->n_notes = 0;
}

/* Keep a warning for the caller (verbose_only: for a verbose run). 0 or -ENOMEM. */
static int __attribute__((format(printf, 3, 4)))
note(struct ts_prepared *p, bool verbose_only, const char *fmt, ...)
{
	struct ts_note *v = realloc(p->notes, (p->n_notes + 1) * sizeof(*v));
	va_list ap;
	int r;

	if (!v)
		return -ENOMEM;
	p->notes = v;
	va_start(ap, fmt);
	r = vasprintf(&v[p->n_notes].msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	v[p->n_notes++].verbose_only = verbose_only;
	return 0;
}

/* Tell the caller what prepare found. */
static void tell_notes(const struct ts_prepared *p, const struct ts_run_hooks *h)
{
	for (size_t i = 0; h && h->warn && i < p->n_notes; i++)
		h->warn(h->userdata, p->notes[i].verbose_only, p->notes[i].msg);
}

/* TERM is passed only when it is a plain terminal name. */
static const char *sane_term(void)
{
	const char *t = getenv("TERM");

	if (!t || !t[0] || strlen(t) > 64)
		return "dumb";
	for (const char *c = t; *c; c++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.+_-",
			    *c))
			return "dumb";
	return t;
}

static int push_env(struct ts_strv *a, const char *name, const char *value)
{
	int r;

	if ((r = ts_strv_push(a, "--setenv")) < 0 || (r = ts_strv_push(a, name)) < 0 ||
	    (r = ts_strv_push(a, value)) < 0)
		return r;
	return 0;
}

/* The environment: a fixed base, an imported image's Env, then the allow-list (NAME
 * copies the host's value when set, NAME=VALUE sets it). Nothing else of the host's
 * environment enters. */
static int build_env(struct ts_strv *a, const struct ts_run_opts *o, const struct ts_image *img)
{
	const struct ts_policy *pol = o->policy;
	int r;

	if ((r = push_env(a, "PATH", TS_DEFAULT_PATH)) < 0 ||
	    (r = push_env(a, "HOME", o->as_root ? "/root" : "/home/user")) < 0 ||
	    (r = push_env(a, "USER", o->as_root ? "root" : "user")) < 0 ||
	    (r = push_env(a, "TERM", sane_term())) < 0 || (r = push_env(a, "LANG", "C.UTF-8")) < 0)
		return r;
	/* names: the proxy on the sandbox's own `lo` is its one way out (the policy's env
	 * may still override these: it only loses its way out) */
	if (pol->network && pol->n_net_names) {
		static const char *const names[] = { "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
						     "https_proxy" };

		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if ((r = push_env(a, names[i], TS_NET_PROXY_URL)) < 0)
				return r;
		if ((r = push_env(a, "NO_PROXY", "localhost,127.0.0.1")) < 0 ||
		    (r = push_env(a, "no_proxy", "localhost,127.0.0.1")) < 0)
			return r;
	}
	for (size_t off = 0; off < img->env_len; off += strlen(img->env + off) + 1) {
		const char *kv = img->env + off, *eq = strchr(kv, '=');
		char name[256];

		snprintf(name, sizeof(name), "%.*s", (int)(eq - kv), kv);
		if ((r = push_env(a, name, eq + 1)) < 0)
			return r;
	}
	for (size_t i = 0; i < pol->n_env; i++) {
		const char *e = pol->env[i], *eq = strchr(e, '=');
		char name[256];

		if (eq) {
			snprintf(name, sizeof(name), "%.*s", (int)(eq - e), e);
			r = push_env(a, name, eq + 1);
		} else {
			const char *v = getenv(e);

			if (!v)
				continue;
			r = push_env(a, e, v);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Does the allow-list give name a value (NAME=VALUE, or NAME set on the host)? init must
 * know which of HOME, USER and LOGNAME the sandbox sets itself: those win over the
 * defaults of the user a process is started as.
 */
static bool policy_sets_env(const struct ts_policy *pol, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < pol->n_env; i++) {
		const char *e = pol->env[i];

		if (!strncmp(e, name, len) && (e[len] == '=' || (!e[len] && getenv(name))))
			return true;
	}
	return false;
}

static bool cgroups_ok(const struct ts_prepared *p, const char *ctrl, char *why, size_t len)
{
	if (p->setuid_helper) {
		snprintf(why, len, "the setuid helper creates no cgroups");
		return false;
	}
	return ts_cgroup_delegated(ctrl, why, len);
}

/* Half of what our own user namespace allows, read as a file of /proc/sys/user. */
/* Our own value of /proc/sys/user/NAME (0 when it cannot be read). */
static unsigned long long our_userns_limit(const char *name)
{
	_cleanup_free_ char *s = NULL;
	unsigned long long v = 0;
	char path[64];

	snprintf(path, sizeof(path), "/proc/sys/user/%s", name);
	if (ts_read_file_at(AT_FDCWD, path, 64, &s, NULL) < 0)
		return 0;
	s[strcspn(s, "\n")] = '\0';
	if (ts_parse_ull(s, &v) < 0)
		return 0;
	return v;
}

/*
 * A budget of ours split for the sandbox: half of it for the whole sandbox, shared by its
 * users (the kernel counts per user and namespace, and charges every level up to ours:
 * two users inside would otherwise get half each, all of ours together).
 */
static unsigned long long sandbox_share(unsigned long long ours, unsigned users)
{
	unsigned long long v = ours / 2 / users;

	return ours && !v ? 1 : v;
}

/*
 * Budgets of the sandbox's own user namespace (the helper's ucount.h): no namespace of
 * any kind (seccomp refuses them anyway; this holds even for a profile that allows
 * them), no fanotify, and inotify bounded so that the caller's other programs keep at
 * least half of theirs whatever the sandbox does. A policy's values are the sandbox's
 * total, split between its users as well.
 */
static int build_userns_limits(struct ts_strv *a, const struct ts_policy *pol, unsigned users)
{
	static const char *const none[] = { "max_user_namespaces",   "max_pid_namespaces",
					    "max_uts_namespaces",    "max_ipc_namespaces",
					    "max_net_namespaces",    "max_mnt_namespaces",
					    "max_cgroup_namespaces", "max_time_namespaces",
					    "max_fanotify_groups",   "max_fanotify_marks" };
	unsigned long long inst =
		pol->inotify_instances
			? (pol->inotify_instances + users - 1) / users
			: sandbox_share(our_userns_limit("max_inotify_instances"), users);
	unsigned long long watches =
		pol->inotify_watches
			? (pol->inotify_watches + users - 1) / users
			: sandbox_share(our_userns_limit("max_inotify_watches"), users);
	int r = 0;

	for (size_t i = 0; i < ELEMENTSOF(none); i++) {
		r |= ts_strv_push(a, "--userns-limit");
		r |= ts_strv_pushf(a, "%s=0", none[i]);
	}
	if (inst) {
		r |= ts_strv_push(a, "--userns-limit");
		r |= ts_strv_pushf(a, "max_inotify_instances=%llu", inst);
	}
	if (watches) {
		r |= ts_strv_push(a, "--userns-limit");
		r |= ts_strv_pushf(a, "max_inotify_watches=%llu", watches);
	}
	return r;
}

/*
 * Per-user rlimits the kernel also counts per user namespace (pending signals, POSIX
 * message queue bytes): a new namespace's budget is its creator's soft limit at the
 * clone, and what the sandbox uses is charged to us as well. The helper sets these
 * before it creates the namespace (`--rlimit` of these names is applied then), so the
 * sandbox's total stays at a share of ours: signals queued inside can never exhaust the
 * caller's (or host root's) budget.
 */
static int build_ucount_rlimits(struct ts_strv *a, unsigned users)
{
	static const struct {
		const char *name;
		int resource;
		unsigned long long cap; /* at most this for the whole sandbox */
	} lims[] = { { "sigpending", RLIMIT_SIGPENDING, 4096 },
		     { "msgqueue", RLIMIT_MSGQUEUE, 8ULL << 20 } };
	int r = 0;

	for (size_t i = 0; i < ELEMENTSOF(lims); i++) {
		struct rlimit rl;
		unsigned long long v;

		if (getrlimit(lims[i].resource, &rl) < 0)
			continue;
		v = rl.rlim_cur == RLIM_INFINITY ? lims[i].cap : rl.rlim_cur / 2;
		if (v > lims[i].cap)
			v = lims[i].cap;
		v /= users;
		r |= ts_strv_push(a, "--rlimit");
		r |= ts_strv_pushf(a, "%s=%llu", lims[i].name, v ? v : 1);
	}
	return r;
}

static int build_limits(struct ts_prepared *p, const struct ts_run_opts *o, struct ts_error *err)
{
	const struct ts_policy *pol = o->policy;
	struct ts_strv *a = &p->argv;
	bool cg = false;
	char why[512];
	unsigned long long nproc;
	struct rlimit rl;
	int r = 0;

	/* No core dumps: a crashing program must not write its memory into the workspace. */
	r |= ts_strv_push(a, "--rlimit");
	r |= ts_strv_push(a, "core=0");
	if (pol->memory_bytes) {
		if (cgroups_ok(p, "memory", why, sizeof(why))) {
			r |= ts_strv_push(a, "--cgroup-memory");
			r |= ts_strv_pushf(a, "%llu", pol->memory_bytes);
			cg = true;
		} else {
			r |= ts_strv_push(a, "--rlimit");
			r |= ts_strv_pushf(a, "as=%llu", pol->memory_bytes);
			r |= note(p, true, "--memory enforced as RLIMIT_AS per process (%s)", why);
		}
	}
	/* RLIMIT_NPROC counts per user per user namespace (ucounts), so inside a fresh
	 * namespace it bounds the sandbox's own processes: always set, it costs nothing.
	 * A cgroup (13 ms to create on cgroup v1) only when a limit was asked for. */
	nproc = pol->pids ? pol->pids : TS_DEFAULT_NPROC;
	/* no one raises a hard limit from inside a user namespace: at most the caller's */
	if (getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_max != RLIM_INFINITY &&
	    nproc > rl.rlim_max) {
		if (pol->pids)
			r |= note(p, false,
				  "RLIMIT_NPROC capped at this user's hard limit %llu, below "
				  "--pids %llu (ulimit -Hu)",
				  (unsigned long long)rl.rlim_max, pol->pids);
		nproc = rl.rlim_max;
	}
	r |= ts_strv_push(a, "--rlimit");
	r |= ts_strv_pushf(a, "nproc=%llu", nproc);
	if (pol->pids) {
		if (cgroups_ok(p, "pids", why, sizeof(why))) {
			r |= ts_strv_push(a, "--cgroup-pids");
			r |= ts_strv_pushf(a, "%llu", pol->pids);
			cg = true;
		} else {
			r |= note(p, true, "--pids enforced as RLIMIT_NPROC (%s)", why);
		}
	}
	if (pol->cpus > 0) {
		cpu_set_t mine;

		/* accepted (a later host may have more), but a limit that can never bind says
		 * so */
		if (sched_getaffinity(0, sizeof(mine), &mine) == 0 && pol->cpus > CPU_COUNT(&mine))
			r |= note(p, false,
				  "--cpus %g is more than the %d CPUs this host gives us: "
				  "it limits nothing",
				  pol->cpus, CPU_COUNT(&mine));
		if (cgroups_ok(p, "cpu", why, sizeof(why))) {
			r |= ts_strv_push(a, "--cgroup-cpu-quota");
			r |= ts_strv_pushf(a, "%llu", (unsigned long long)(pol->cpus * 100000.0));
			cg = true;
		} else {
			r |= note(p, false, "--cpus not enforced: no cpu cgroup delegated (%s)",
				  why);
		}
	}
	if (pol->nofile) {
		r |= ts_strv_push(a, "--rlimit");
		r |= ts_strv_pushf(a, "nofile=%llu", pol->nofile);
	}
	if (pol->fsize) {
		r |= ts_strv_push(a, "--rlimit");
		r |= ts_strv_pushf(a, "fsize=%llu", pol->fsize);
	}
	r |= build_userns_limits(a, pol, p->idmap.has_root ? 2 : 1);
	r |= build_ucount_rlimits(a, p->idmap.has_root ? 2 : 1);
	if (cg) {
		r |= ts_strv_push(a, "--cgroup");
		r |= ts_strv_pushf(a, "ts-%s", p->id);
		p->used_cgroup = true;
	}
	return r ? ts_err(err, -ENOMEM, "build limits") : 0;
}

/* --owner 0 before the next --tmpfs or --dir, when root owns the system's directories. */
static int push_owner(struct ts_strv *a, bool two_users)
{
	if (!two_users)
		return 0;
	return ts_strv_push(a, "--owner") | ts_strv_push(a, "0");
}

/* --net-pasta/--net-slirp4netns and the policy's rules; with names, --net-proxy. */
static int build_network(struct ts_strv *a, const struct ts_prepared *p,
			 const struct ts_policy *pol)
{
	char buf[TS_HOSTPAT_STRLEN];
	int r = 0;

	if (pol->network && pol->n_net_names) {
		r |= ts_strv_push(a, "--net-proxy");
		r |= ts_strv_push(a, p->paths.proxy);
		for (size_t i = 0; i < pol->n_net_names; i++) {
			r |= ts_strv_push(a, "--net-allow-host");
			r |= ts_strv_push(a,
					  ts_hostpat_format(&pol->net_names[i], buf, sizeof(buf)));
		}
		/* the deny list bounds what the proxy may connect to */
		for (size_t i = 0; i < pol->n_net_deny; i++) {
			r |= ts_strv_push(a, "--net-deny");
			r |= ts_strv_push(a, ts_cidr_format(&pol->net_deny[i], buf, sizeof(buf)));
		}
		/* a durable sandbox's counters, for `inspect` (sbstatus.c) */
		if (p->listen_fd >= 0) {
			r |= ts_strv_push(a, "--net-proxy-state");
			r |= ts_strv_pushf(a, "%s/run", p->dir);
		}
		return r;
	}
	if (p->net == TS_NET_BACKEND_NONE)
		return 0;
	r |= ts_strv_push(a, p->net == TS_NET_BACKEND_PASTA ? "--net-pasta" : "--net-slirp4netns");
	r |= ts_strv_push(a, p->net_prog);
	for (size_t i = 0; i < pol->n_net_allow; i++) {
		r |= ts_strv_push(a, "--net-allow");
		r |= ts_strv_push(a, ts_cidr_format(&pol->net_allow[i], buf, sizeof(buf)));
	}
	for (size_t i = 0; i < pol->n_net_deny; i++) {
		r |= ts_strv_push(a, "--net-deny");
		r |= ts_strv_push(a, ts_cidr_format(&pol->net_deny[i], buf, sizeof(buf)));
	}
	return r;
}

/* A restored sandbox's snapshot layers go on top of its image's lowers: what the source
 * changed over the same image (its whiteouts included) is seen over it again. */
static int add_snap_layers(struct ts_image *img, const struct ts_run_opts *o, struct ts_error *err)
{
	size_t n = o->n_snap_layers;

	if (img->n_lowers + n > TS_IMAGE_MAX_LOWERS)
		return ts_err(err, -E2BIG,
			      "%zu image layers and %zu snapshot layers: more than the %d lower "
			      "layers a sandbox can have",
			      img->n_lowers, n, TS_IMAGE_MAX_LOWERS);
	memmove(img->lowers[n], img->lowers[0], img->n_lowers * sizeof(img->lowers[0]));
	for (size_t i = 0; i < n; i++)
		snprintf(img->lowers[i], sizeof(img->lowers[i]), "%s", o->snap_layers[i]);
	img->n_lowers += n;
	return 0;
}

static int build_argv(struct ts_prepared *p, const struct ts_run_opts *o, struct ts_error *err)
{
	struct ts_strv *a = &p->argv;
	const struct ts_policy *pol = o->policy;
	/* what a process started as another user gets unless the sandbox sets it */
	static const char *const user_env[] = { "HOME", "USER", "LOGNAME" };
	bool ro_root = !o->as_root;
	/* A durable sandbox with root and user (init --init-setid) gets a system's layout:
	 * /tmp, /var, /var/tmp, /run and /root belong to root, so that the kernel's
	 * protected_symlinks and the sticky bit of /tmp work between the two users. */
	bool two_users = o->durable_id && p->idmap.has_root;
	int r = 0;

	r |= ts_strv_push(a, p->paths.helper);
	if (!p->upper && p->image.n_lowers == 1) {
		/* Read-only root from one layer: a bind, no overlay (the common case). */
		r |= ts_strv_push(a, "--ro-bind");
		r |= ts_strv_push(a, p->image.lowers[0]);
		r |= ts_strv_push(a, "/");
		ro_root = false; /* already read-only */
	} else {
		for (size_t i = 0; i < p->image.n_lowers; i++) {
			r |= ts_strv_push(a, "--overlay-src");
			r |= ts_strv_push(a, p->image.lowers[i]);
		}
		if (p->upper) {
			r |= ts_strv_push(a, "--overlay");
			r |= ts_strv_pushf(a, "%s/upper", p->dir);
			r |= ts_strv_pushf(a, "%s/work", p->dir);
		} else {
			r |= ts_strv_push(a, "--ro-overlay");
			ro_root = false;
		}
		r |= ts_strv_push(a, "/");
	}
	if (p->image.host && p->sudo_usr[0]) {
		/* /usr/bin/sudo over the host's /usr: a read-only overlay, so that nothing of
		 * the host's /usr changes and no mount point is needed in it */
		r |= ts_strv_push(a, "--overlay-src");
		r |= ts_strv_push(a, p->sudo_usr);
		r |= ts_strv_push(a, "--overlay-src");
		r |= ts_strv_push(a, "/usr");
		r |= ts_strv_push(a, "--ro-overlay");
		r |= ts_strv_push(a, "/usr");
	} else if (p->image.host) {
		r |= ts_strv_push(a, "--ro-bind");
		r |= ts_strv_push(a, "/usr");
		r |= ts_strv_push(a, "/usr");
	}
	if (p->image.host) {
		for (size_t i = 0; i < p->image.n_host_dirs; i++) {
			r |= ts_strv_push(a, "--ro-bind");
			r |= ts_strv_pushf(a, "/%s", p->image.host_dirs[i]);
			r |= ts_strv_pushf(a, "/%s", p->image.host_dirs[i]);
		}
	}
	r |= ts_strv_push(a, "--proc");
	r |= ts_strv_push(a, "/proc");
	r |= ts_strv_push(a, "--dev");
	r |= ts_strv_push(a, "/dev");
	r |= ts_strv_push(a, "--mqueue");
	r |= ts_strv_push(a, "/dev/mqueue");
	r |= ts_strv_push(a, "--remount-ro");
	r |= ts_strv_push(a, "/dev");
	r |= ts_strv_push(a, "--sysfs");
	r |= ts_strv_push(a, "/sys");
	r |= ts_strv_push(a, "--perms");
	r |= ts_strv_push(a, "1777");
	r |= push_owner(a, two_users);
	r |= ts_strv_push(a, "--tmpfs");
	r |= ts_strv_push(a, "/tmp");
	r |= push_owner(a, two_users);
	r |= ts_strv_push(a, "--tmpfs");
	r |= ts_strv_push(a, "/var");
	r |= ts_strv_push(a, "--perms");
	r |= ts_strv_push(a, "1777");
	r |= push_owner(a, two_users);
	r |= ts_strv_push(a, "--dir");
	r |= ts_strv_push(a, "/var/tmp");
	r |= ts_strv_push(a, "--perms");
	r |= ts_strv_push(a, "0700");
	r |= push_owner(a, two_users);
	r |= ts_strv_push(a, "--tmpfs");
	r |= ts_strv_push(a, "/root");
	r |= push_owner(a, two_users);
	r |= ts_strv_push(a, "--tmpfs");
	r |= ts_strv_push(a, "/run");
	for (size_t i = 0; i < pol->n_ro_binds; i++) {
		r |= ts_strv_push(a, "--ro-bind");
		r |= ts_strv_push(a, pol->ro_binds[i].src);
		r |= ts_strv_push(a, pol->ro_binds[i].dst);
	}
	if (p->resolv[0]) {
		/* the one resolver the firewall lets through (the egress program's forwarder) */
		r |= ts_strv_push(a, "--ro-bind");
		r |= ts_strv_push(a, p->resolv);
		r |= ts_strv_push(a, "/etc/resolv.conf");
	}
	r |= build_network(a, p, pol);
	if (p->ws_owner_uid >= 0) {
		r |= ts_strv_push(a, "--bind-owner");
		r |= ts_strv_pushf(a, "%lld:%lld", p->ws_owner_uid, p->ws_owner_gid);
	}
	/* the fd opened once; a --dry-run line has only the path */
	if (o->dry_run) {
		r |= ts_strv_push(a, "--bind");
		r |= ts_strv_push(a, p->workspace);
	} else {
		r |= ts_strv_push(a, "--bind-fd");
		r |= ts_strv_pushf(a, "%d", TS_FD_WORKSPACE);
	}
	r |= ts_strv_push(a, "/home/user");
	for (size_t i = 0; i < p->n_protected; i++) {
		r |= ts_strv_push(a, "--protect");
		r |= ts_strv_pushf(a, "/home/user/%s", p->protected[i]);
	}
	/* Without a root inside, nothing may change the image: the files we synthesized
	 * belong to the one mapped id and mode bits would not stop it (FS-01). */
	if (ro_root) {
		r |= ts_strv_push(a, "--remount-ro");
		r |= ts_strv_push(a, "/");
	}
	for (size_t i = 0; i < p->idmap.n_uid; i++) {
		r |= ts_strv_push(a, "--uid-map");
		r |= ts_strv_pushf(a, "%lu %lu %lu", p->idmap.uid[i].inside,
				   p->idmap.uid[i].outside, p->idmap.uid[i].count);
	}
	for (size_t i = 0; i < p->idmap.n_gid; i++) {
		r |= ts_strv_push(a, "--gid-map");
		r |= ts_strv_pushf(a, "%lu %lu %lu", p->idmap.gid[i].inside,
				   p->idmap.gid[i].outside, p->idmap.gid[i].count);
	}
	if (p->idmap.newidmap)
		r |= ts_strv_push(a, "--newidmap");
	r |= ts_strv_push(a, "--uid");
	r |= ts_strv_push(a, o->as_root ? "0" : "1000");
	r |= ts_strv_push(a, "--gid");
	r |= ts_strv_push(a, o->as_root ? "0" : "1000");
	r |= ts_strv_push(a, "--hostname");
	r |= ts_strv_push(a, "sandbox");
	r |= ts_strv_push(a, "--chdir");
	r |= ts_strv_push(a, "/home/user");
	if (r)
		return ts_err(err, -ENOMEM, "build helper command line");
	if ((r = build_env(a, o, &p->image)) < 0)
		return ts_err(err, r, "build environment");
	if ((r = build_limits(p, o, err)) < 0)
		return r;
	r |= ts_strv_push(a, "--seccomp");
	r |= ts_strv_pushf(a, "%d", o->dry_run ? TS_FD_SECCOMP_DRY : TS_FD_SECCOMP);
	if (!o->dry_run) {
		/* a pasted --dry-run line has no caller to report to */
		r |= ts_strv_push(a, "--sync-fd");
		r |= ts_strv_pushf(a, "%d", TS_FD_SYNC);
	}
	if (o->durable_id) {
		/* init outlives us: no parent-death signal, and its channels to the host */
		r |= ts_strv_push(a, "--detach");
		r |= ts_strv_push(a, "--control-fd");
		r |= ts_strv_pushf(a, "%d", TS_FD_CONTROL);
		r |= ts_strv_push(a, "--logs-fd");
		r |= ts_strv_pushf(a, "%d", TS_FD_LOGS);
		/* with both root and user mapped, init may start processes as either */
		if (p->idmap.has_root)
			r |= ts_strv_push(a, "--init-setid");
		r |= ts_strv_push(a, "--argv0");
		r |= ts_strv_push(a, "toren-init");
		r |= ts_strv_push(a, "--");
		r |= ts_strv_push(a, p->paths.init);
		r |= ts_strv_push(a, "--server");
		if (p->sudo)
			r |= ts_strv_push(a, "--sudo");
		r |= ts_strv_push(a, "--first-proc");
		r |= ts_strv_pushf(a, "%llu", p->first_proc);
		for (size_t i = 0; i < pol->n_protected; i++) {
			r |= ts_strv_push(a, "--protect-pattern");
			r |= ts_strv_push(a, pol->protected_patterns[i]);
		}
		for (size_t i = 0; i < ELEMENTSOF(user_env); i++) {
			if (!policy_sets_env(pol, user_env[i]))
				continue;
			r |= ts_strv_push(a, "--global-env");
			r |= ts_strv_push(a, user_env[i]);
		}
		return r ? ts_err(err, -ENOMEM, "build helper command line") : 0;
	}
	r |= ts_strv_push(a, "--die-with-parent");
	/* inside, init's host path (it may name a home directory) is nobody's business */
	r |= ts_strv_push(a, "--argv0");
	r |= ts_strv_push(a, "toren-init");
	r |= ts_strv_push(a, "--");
	r |= ts_strv_push(a, p->paths.init);
	p->use_pty = o->tty && isatty(STDIN_FILENO);
	if (p->use_pty)
		r |= ts_strv_push(a, "--pty");
	r |= ts_strv_push(a, "--");
	for (char **c = o->argv; *c; c++)
		r |= ts_strv_push(a, *c);
	return r ? ts_err(err, -ENOMEM, "build helper command line") : 0;
}

/* chown a directory we created for root's sandboxes to the mapped host id. */
static int chown_for_sandbox(const char *path, unsigned long uid, unsigned long gid,
			     struct ts_error *err)
{
	if (getuid() != 0)
		return 0;
	if (chown(path, (uid_t)uid, (gid_t)gid) < 0)
		return ts_err_errno(err, -errno, "chown `%s`", path);
	return 0;
}

int ts_unix_addr(struct sockaddr_un *sa, const char *dir, int dirfd, const char *name)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if ((size_t)snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", dir, name) <
	    sizeof(sa->sun_path))
		return 0;
	/* too long for sun_path: name the directory through our own fd instead */
	if ((size_t)snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s", dirfd,
			     name) < sizeof(sa->sun_path))
		return 0;
	return -ENAMETOOLONG;
}

/* run/ with the listening control socket, and logs/, for init to take over. */
static int prepare_durable(struct ts_prepared *p, struct ts_error *err)
{
	_cleanup_close_ int runfd = -EBADF;
	struct sockaddr_un sa;
	char run[4200], logs[4200];
	int r;

	snprintf(run, sizeof(run), "%s/run", p->dir);
	snprintf(logs, sizeof(logs), "%s/logs", p->dir);
	if ((mkdir(run, 0700) < 0 && errno != EEXIST) || (mkdir(logs, 0700) < 0 && errno != EEXIST))
		return ts_err_errno(err, -errno, "create `%s/{run,logs}`", p->dir);
	/* init creates the log files, as the sandbox's user, or as its root in a --user
	 * root sandbox. Root inside is a subordinate id an ordinary caller cannot chown
	 * to: then the directory is open to all, which reaches no one else since
	 * $ROOT/<id> is 0700 and init holds it by fd. */
	if (p->as_root && getuid() != 0) {
		if (chmod(logs, 0777) < 0)
			return ts_err_errno(err, -errno, "chmod `%s`", logs);
	} else {
		r = chown_for_sandbox(logs, p->as_root ? p->idmap.root_uid : p->idmap.user_uid,
				      p->as_root ? p->idmap.root_gid : p->idmap.user_gid, err);
		if (r < 0)
			return r;
	}
	runfd = open(run, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	p->logs_fd = open(logs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (runfd < 0 || p->logs_fd < 0)
		return ts_err_errno(err, -errno, "open `%s/{run,logs}`", p->dir);
	/* Process ids go on from the last start's, so that every log stays what its
	 * number says until the sandbox is removed (`logs ID N` after a restart or a crash
	 * of init is when it matters most). */
	{
		_cleanup_close_ int lfd =
			open(logs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
		struct dirent *de;

		p->first_proc = 1;
		if (d) {
			lfd = -EBADF; /* owned by d now */
			while ((de = readdir(d))) {
				unsigned long long n;
				char *dot = strrchr(de->d_name, '.');

				if (!dot || strcmp(dot, ".log") != 0)
					continue;
				*dot = '\0';
				if (ts_parse_ull(de->d_name, &n) == 0 && n < (1ULL << 52) &&
				    n >= p->first_proc)
					p->first_proc = n + 1;
			}
			closedir(d);
		}
	}
	/* a socket left by an init that died: nobody listens on it any more; the name
	 * proxy's counters of the last start (this start's proxy writes its own) */
	unlinkat(runfd, "control.sock", 0);
	unlinkat(runfd, "proxy.json", 0);
	r = ts_unix_addr(&sa, run, runfd, "control.sock");
	if (r < 0)
		return ts_err(err, r, "control socket path too long");
	p->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (p->listen_fd < 0)
		return ts_err_errno(err, -errno, "socket");
	if (bind(p->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(p->listen_fd, 64) < 0)
		return ts_err_errno(err, -errno, "listen on `%s/control.sock`", run);
	return 0;
}

/* A one-shot run claims its id before it makes anything a kill -9 would leave behind
 * (leftovers.h); durable sandboxes, --keep and --dry-run keep what they make. */
static int claim(struct ts_prepared *p, const struct ts_run_opts *o, struct ts_error *err)
{
	int r;

	if (p->claimed || o->durable_id || o->keep || o->dry_run)
		return 0;
	r = ts_leftovers_claim(p->paths.root, p->id, err);
	p->claimed = r == 0;
	return r;
}

/* Is the directory `inner` (an fd) at or below `outer` (dev, ino)? Walks up by `..`. */
static bool is_below(int inner, const struct stat *outer)
{
	int fd = fcntl(inner, F_DUPFD_CLOEXEC, 3);

	for (int depth = 0; fd >= 0 && depth < 4096; depth++) {
		struct stat st, up;
		int parent;

		if (fstat(fd, &st) < 0)
			break;
		if (st.st_dev == outer->st_dev && st.st_ino == outer->st_ino) {
			close(fd);
			return true;
		}
		parent = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = parent;
		if (fd < 0 || fstat(fd, &up) < 0 ||
		    (up.st_dev == st.st_dev && up.st_ino == st.st_ino))
			break; /* `/` */
	}
	if (fd >= 0)
		close(fd);
	return false;
}

/*
 * A workspace and the state root must stay apart: a sandbox that could write the state
 * root (its cached seccomp filters, image layers, other sandboxes' directories) would
 * decide what the next sandbox runs. A sandbox's own $ROOT/<id>/workspace, named again
 * (`--workspace` of a durable sandbox's own), and an agent run's $ROOT/runs/<run>/workspace
 * are the ways in.
 */
#define RUN_ID_HEX 15 /* hex digits after the `r` of a run id (src/runner/runlog.h) */

static int check_apart(const struct ts_prepared *p, int ws_fd, struct ts_error *err)
{
	_cleanup_close_ int root_fd = -EBADF;
	struct stat ws, root;
	size_t rl = strlen(p->paths.root);
	const char *rest = p->workspace + rl;

	root_fd = open(p->paths.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0 || fstat(root_fd, &root) < 0 || fstat(ws_fd, &ws) < 0)
		return ts_err_errno(err, -errno, "state root `%s`", p->paths.root);
	if (is_below(root_fd, &ws))
		return ts_err(
			err, -EINVAL,
			"workspace `%s` holds the state root `%s`: a sandbox could change what "
			"every later sandbox runs; use a workspace outside it",
			p->workspace, p->paths.root);
	if (!is_below(ws_fd, &root))
		return 0;
	/* $ROOT/<id>/workspace: an id, then exactly "workspace" */
	if (!strncmp(p->workspace, p->paths.root, rl) && rest[0] == '/' && strchr(rest + 1, '/') &&
	    !strcmp(strchr(rest + 1, '/'), "/workspace") &&
	    (size_t)(strchr(rest + 1, '/') - rest - 1) == TS_ID_LEN)
		return 0;
	/* $ROOT/runs/<run>/workspace: an agent run's own (src/runner), which outlives its
	 * sandboxes; runs/<run>/ holds nothing else, and the run log is $ROOT/runs.db */
	if (!strncmp(p->workspace, p->paths.root, rl) && !strncmp(rest, "/runs/r", 7) &&
	    strlen(rest) == 7 + RUN_ID_HEX + strlen("/workspace") &&
	    strspn(rest + 7, "0123456789abcdef") == RUN_ID_HEX &&
	    !strcmp(rest + 7 + RUN_ID_HEX, "/workspace"))
		return 0;
	return ts_err(err, -EINVAL,
		      "workspace `%s` is inside the state root `%s`: only a sandbox's own "
		      "workspace there may be bound",
		      p->workspace, p->paths.root);
}

/*
 * The workspace the caller named, opened once: the helper binds this fd (--bind-fd), the
 * scan reads it, its owner is what fstat says of it; the path is looked up by name never
 * again. Where root gives a sandbox the owner's identity over it (an id-mapped bind), it
 * must also be opened through a path nobody else can redirect (trustpath.h): a symlink or
 * a directory of another user on the way would let that user choose what the sandbox
 * gets as root.
 */
static int open_workspace(struct ts_prepared *p, const char *given, struct ts_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	char link[64], abs[PATH_MAX];
	struct stat wst, tst;
	ssize_t n;
	int r;

	fd = open(given, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &wst) < 0)
		return ts_err_errno(err, -errno, "workspace `%s`", given);
	/* what was opened, by the kernel's account: the name shown and recorded */
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, p->workspace, sizeof(p->workspace) - 1);
	if (n <= 0 || p->workspace[0] != '/')
		return ts_err(err, -EINVAL, "workspace `%s`: its path cannot be told", given);
	p->workspace[n] = '\0';
	if (wst.st_uid == (uid_t)p->idmap.user_uid) {
		/* the sandbox user's own: nothing to do */
	} else if (!strcmp(p->idmap.mode, "root-range") && !p->setuid_helper) {
		_cleanup_close_ int tfd = -EBADF;

		/* Root in the host's namespace (a CI job's checkout): the workspace is bound
		 * id-mapped, its owner appearing as the sandbox's user, and what the sandbox
		 * creates there belongs to that owner on the host. The setid guard (in every
		 * sandbox) keeps it from leaving a setuid file owned by that owner, root, on
		 * the host, and the scan makes what it cannot guard read-only (protect.h). */
		if (given[0] == '/')
			snprintf(abs, sizeof(abs), "%s", given);
		else if (!getcwd(abs, sizeof(abs)) ||
			 strlen(abs) + 1 + strlen(given) >= sizeof(abs))
			return ts_err_errno(err, -errno ? -errno : -ENAMETOOLONG, "workspace `%s`",
					    given);
		else
			strcat(strcat(abs, "/"), given);
		tfd = ts_trustpath_open(abs, wst.st_uid, err);
		if (tfd < 0)
			return ts_err_prefix(err, tfd,
					     "workspace of another owner, to be bound with its "
					     "owner's identity");
		if (fstat(tfd, &tst) < 0 || tst.st_dev != wst.st_dev || tst.st_ino != wst.st_ino)
			return ts_err(err, -EAGAIN,
				      "workspace `%s` changed while it was opened: try again",
				      given);
		close(fd);
		fd = TAKE_FD(tfd);
		p->ws_owner_uid = (long long)wst.st_uid;
		p->ws_owner_gid = (long long)wst.st_gid;
	} else if (getuid() == 0) {
		note(p, false,
		     "workspace `%s` is owned by uid %u; the sandbox user is host "
		     "uid %lu and cannot write it unless you `chown -R %lu:%lu` it%s",
		     p->workspace, (unsigned)wst.st_uid, p->idmap.user_uid, p->idmap.user_uid,
		     p->idmap.user_gid,
		     wst.st_uid == 0 ? " (host root is never mapped into a sandbox)" : "");
	} else {
		note(p, false,
		     "workspace `%s` is owned by uid %u, not by the sandbox user "
		     "(host uid %lu): it may not be writable inside",
		     p->workspace, (unsigned)wst.st_uid, p->idmap.user_uid);
	}
	r = check_apart(p, fd, err);
	if (r < 0)
		return r;
	p->ws_fd = TAKE_FD(fd);
	return 0;
}

/*
 * Egress (policy `network`): the program, a usable /dev/net/tun (the program runs as us
 * and opens it: fail here, with the fix, rather than deep in the helper), and the
 * resolv.conf naming the DNS forwarder, bound over the image's where it has a file there.
 */
static int prepare_network(struct ts_prepared *p, const struct ts_run_opts *o, struct ts_error *err)
{
	static const char content[] = "# toren-sandbox: the DNS forwarder of the sandbox's egress\n"
				      "nameserver " TS_NET_DNS "\n";
	char dir[4200], tmp[4300];
	_cleanup_free_ char *old = NULL;
	bool have = false;
	int r;

	r = ts_policy_check_network(o->policy, err);
	if (r < 0)
		return r;
	/* names: no egress program, no tun, no DNS inside (the proxy resolves) */
	if (o->policy->n_net_names) {
		if (!p->paths.proxy[0])
			return ts_err(err, -ENOENT,
				      "names in `network.allow` need toren-sandbox-proxy, which is "
				      "not installed next to the helper");
		return 0;
	}

	p->net = ts_hostcheck_net_backend(p->net_prog, sizeof(p->net_prog));
	if (p->net == TS_NET_BACKEND_NONE)
		return ts_err(
			err, -ENOENT,
			"`network: true` needs pasta or slirp4netns and neither is installed: "
			"apt-get install passt (see `toren-sandbox doctor`)");
	if (!o->dry_run && (r = ts_hostcheck_tun(err)) < 0)
		return ts_err_prefix(err, r, "`network: true`");
	/* which layer's /etc/resolv.conf the sandbox sees: the first that has one */
	for (size_t i = 0; i < p->image.n_lowers && !have; i++) {
		struct stat st;

		snprintf(tmp, sizeof(tmp), "%s/etc/resolv.conf", p->image.lowers[i]);
		if (lstat(tmp, &st) < 0)
			continue;
		if (!S_ISREG(st.st_mode))
			break;
		have = true;
	}
	if (!have)
		return note(p, false,
			    "the image has no regular file /etc/resolv.conf: name resolution "
			    "inside uses none; give it one naming %s (the DNS forwarder)",
			    TS_NET_DNS) < 0
			       ? ts_err(err, -ENOMEM, "out of memory")
			       : 0;
	snprintf(dir, sizeof(dir), "%s/cache/net", p->paths.root);
	if (ts_mkdir_p(AT_FDCWD, dir, 0700) < 0)
		return ts_err_errno(err, -errno, "create `%s`", dir);
	snprintf(p->resolv, sizeof(p->resolv), "%s/resolv.conf", dir);
	if (ts_read_file_at(AT_FDCWD, p->resolv, 4096, &old, NULL) == 0 && !strcmp(old, content))
		return 0;
	snprintf(tmp, sizeof(tmp), "%s/.resolv.conf-%d", dir, (int)getpid());
	{
		_cleanup_close_ int fd =
			open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);

		if (fd < 0 || ts_write_all(fd, content, sizeof(content) - 1) < 0 ||
		    fchmod(fd, 0644) < 0)
			return ts_err_errno(err, -errno, "write `%s`", tmp);
	}
	if (rename(tmp, p->resolv) < 0) {
		unlink(tmp);
		return ts_err_errno(err, -errno, "install `%s`", p->resolv);
	}
	return 0;
}

static int prepare(struct ts_prepared *p, const struct ts_run_opts *o, struct ts_error *err)
{
	_cleanup_close_ int wsfd = -EBADF, upper_fd = -EBADF;
	unsigned scan_flags;
	struct stat hst;
	char sub[4200], profile[4200];
	const char *prof;
	int r;

	if (o->paths)
		p->paths = *o->paths;
	else if ((r = ts_paths_init(&p->paths, err)) < 0)
		return r;
	/* A helper installed setuid root creates the namespaces itself where unprivileged
	 * ones are forbidden; it refuses cgroups, so limits fall back to rlimits. */
	p->setuid_helper = stat(p->paths.helper, &hst) == 0 && (hst.st_mode & S_ISUID) &&
			   hst.st_uid == 0 && getuid() != 0;
	/* sudo needs a root to become: the subordinate ids, as for --user root */
	r = ts_idmap_plan(&p->idmap,
			  o->as_root || o->with_root || (o->durable_id && o->policy->sudo), err);
	if (r < 0)
		return r;
	if (o->policy->sudo && !o->durable_id)
		r = note(p, false,
			 "policy `sudo: true` applies to durable sandboxes (`create`) only");
	else if (o->policy->sudo && !p->idmap.has_root)
		r = note(p, false,
			 "sudo is off: this sandbox has no root (mapping mode `%s`); it needs "
			 "subordinate ids in /etc/subuid and /etc/subgid, see `toren-sandbox "
			 "doctor`",
			 p->idmap.mode);
	else
		p->sudo = o->policy->sudo;
	if (r < 0)
		return ts_err(err, r, "out of memory");
	if (o->as_root && !p->idmap.has_root)
		return ts_err(
			err, -EPERM,
			"`--user root` needs subordinate ids (mapping mode `%s`): add a range "
			"to /etc/subuid and /etc/subgid for this user, see "
			"`toren-sandbox doctor`",
			p->idmap.mode);
	if (o->durable_id) {
		snprintf(p->id, sizeof(p->id), "%s", o->durable_id);
	} else {
		r = ts_id_new(p->id, err);
		if (r < 0)
			return r;
	}
	if (ts_path_join(p->dir, sizeof(p->dir), p->paths.root, p->id) < 0)
		return ts_err(err, -ENAMETOOLONG, "sandbox path too long");
	/* An upper layer only where the root must take writes (root inside), get mount
	 * points for extra binds, or outlive a stop (durable sandboxes); a read-only root
	 * needs no per-sandbox directory at all unless the workspace is a fresh one. */
	p->as_root = o->as_root;
	p->upper = o->as_root || o->policy->n_ro_binds > 0 || o->durable_id;
	if (!p->upper && o->workspace)
		goto dirs_done;
	if ((r = claim(p, o, err)) < 0)
		return r;
	if (mkdir(p->dir, 0700) < 0 && !(o->durable_id && errno == EEXIST))
		return ts_err_errno(err, -errno, "create `%s`", p->dir);
	p->dir_created = !o->durable_id;
	if (!p->upper)
		goto dirs_done;
	/* upper and work belong to the sandbox's user, so that overlay creates what it
	 * creates on the sandbox's behalf as the caller's own files. */
	snprintf(sub, sizeof(sub), "%s/upper", p->dir);
	if (mkdir(sub, 0755) == 0)
		r = chown_for_sandbox(sub, p->idmap.user_uid, p->idmap.user_gid, err);
	else if (errno != EEXIST || !o->durable_id)
		return ts_err_errno(err, -errno, "create `%s`", sub);
	if (r < 0)
		return r;
	snprintf(sub, sizeof(sub), "%s/work", p->dir);
	if (mkdir(sub, 0700) == 0)
		r = chown_for_sandbox(sub, p->idmap.user_uid, p->idmap.user_gid, err);
	else if (errno != EEXIST || !o->durable_id)
		return ts_err_errno(err, -errno, "create `%s`", sub);
	if (r < 0)
		return r;
	/* Mount points for extra binds, made in the upper layer the sandbox has written:
	 * fd-relative, never through its symlinks (upper.h) */
	snprintf(sub, sizeof(sub), "%s/upper", p->dir);
	upper_fd = open(sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (upper_fd < 0 && o->policy->n_ro_binds)
		return ts_err_errno(err, -errno, "open `%s/upper`", p->dir);
	for (size_t i = 0; i < o->policy->n_ro_binds; i++) {
		const struct ts_bind *b = &o->policy->ro_binds[i];
		struct stat bst;

		if (ts_startswith(b->dst, "/home/user/") || !strcmp(b->dst, "/home/user"))
			continue; /* inside the workspace bind */
		if (stat(b->src, &bst) < 0)
			return ts_err_errno(err, -errno, "%s%sro_binds source `%s`",
					    b->origin ? b->origin : "", b->origin ? ": " : "",
					    b->src);
		r = ts_upper_mount_point(upper_fd, b->dst, S_ISDIR(bst.st_mode), getuid() == 0,
					 (uid_t)p->idmap.user_uid, (gid_t)p->idmap.user_gid, err);
		if (r < 0)
			return r;
	}
dirs_done:
	if (o->workspace) {
		r = open_workspace(p, o->workspace, err);
		if (r < 0)
			return r;
	} else {
		if (ts_path_join(p->workspace, sizeof(p->workspace), p->dir, "workspace") < 0)
			return ts_err(err, -ENAMETOOLONG, "workspace path too long");
		if (mkdir(p->workspace, 0755) == 0) {
			r = chown_for_sandbox(p->workspace, p->idmap.user_uid, p->idmap.user_gid,
					      err);
			if (r < 0)
				return r;
		} else if (errno != EEXIST || !o->durable_id) {
			return ts_err_errno(err, -errno, "create `%s`", p->workspace);
		}
		p->fresh_workspace = true;
	}
	if (o->durable_id) {
		r = prepare_durable(p, err);
		if (r < 0)
			return r;
	}
	if (p->ws_fd < 0) {
		/* our own $ROOT/<id>/workspace: $ROOT/<id> is ours alone */
		p->ws_fd = open(p->workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (p->ws_fd < 0)
			return ts_err_errno(err, -errno, "open workspace `%s`", p->workspace);
	}
	/* the scan reads the very directory the helper binds */
	wsfd = openat(p->ws_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (wsfd < 0)
		return ts_err_errno(err, -errno, "open workspace `%s`", p->workspace);

	if (o->image && o->image_pin)
		r = ts_image_store(p->paths.root, o->image, o->image_pin, &p->image, err);
	else if (o->image)
		r = ts_image_dir(p->paths.root, o->image, &p->image, err);
	else
		r = ts_image_host(p->paths.root, &p->image, err);
	if (r == 0 && o->n_snap_layers)
		r = add_snap_layers(&p->image, o, err);
	if (r == 0 && p->sudo)
		r = ts_image_add_sudo(p->paths.root, p->paths.sudo, &p->image, p->sudo_usr,
				      sizeof(p->sudo_usr), err);
	if (r < 0)
		return r;
	if (o->policy->network && (r = prepare_network(p, o, err)) < 0)
		return r;

	prof = o->policy->seccomp_profile;
	if (!prof) {
		snprintf(profile, sizeof(profile), "%s/seccomp/default.json", p->paths.policy_dir);
		prof = profile;
	}
	/* The setid guard in every sandbox: whatever it creates in its workspace belongs on
	 * the host to someone (the caller, the workspace's owner, the sandbox's host ids),
	 * and a setuid or setgid file there would let any local user who can reach it run
	 * code as that someone (seccomp-setid.h). */
	p->seccomp_flags |= TS_SECCOMP_GUARD_SETID;
	snprintf(sub, sizeof(sub), "%s/cache/seccomp", p->paths.root);
	r = ts_seccomp_compile_cached(prof, p->seccomp_flags, sub, p->bpf, sizeof(p->bpf), err);
	if (r < 0)
		return r;

	/* An id-mapped workspace: the sandbox writes as the files' owner, so files whose
	 * contents reach further (hard links, setid or capable programs) are read-only too */
	scan_flags = p->ws_owner_uid >= 0 ? TS_PROTECT_ALIASES : 0;
	if (o->policy->n_protected || scan_flags) {
		r = ts_protect_scan(wsfd, o->policy->protected_patterns, o->policy->n_protected,
				    TS_PROTECT_MAX_ENTRIES, scan_flags, &p->protected,
				    &p->n_protected, err);
		/* A directory the caller may not read, in a sandbox of subordinate ids: made by
		 * the sandbox's root (or another of its ids), readable as root of the same
		 * mapping. The scan is done again there, through the helper, rather than
		 * skipped: every protected file in it still becomes read-only. */
		if ((r == -EACCES || r == -EPERM) && !strcmp(p->idmap.mode, "subid")) {
			ts_err_clear(err);
			r = ts_idcopy_scan_protected(p->paths.helper, &p->idmap, wsfd,
						     o->policy->protected_patterns,
						     o->policy->n_protected, TS_PROTECT_MAX_ENTRIES,
						     scan_flags, &p->protected, &p->n_protected,
						     err);
			if (r < 0)
				ts_err_prefix(err, r, "as the sandbox's root");
		}
		if (r < 0)
			return ts_err_prefix(err, r, "protected paths in `%s`", p->workspace);
	}
	r = build_argv(p, o, err);
	/* cgroups ts-<id> are made by the helper: claimed before it starts */
	if (r == 0 && p->used_cgroup)
		r = claim(p, o, err);
	return r;
}

/* The helper could not create the namespaces: say why in the host's terms, with the fix
 * (the checks cost a few reads, so they run only when needed). */
static void explain_failure(const struct ts_prepared *p, struct ts_error *err)
{
	struct ts_error why = { 0 };

	if (!p->setuid_helper && strstr(err->msg, "create namespaces") &&
	    ts_hostcheck_preflight(&why) < 0)
		*err = why;
}

/* Start the helper; returns its pid and init's pidfd once the sandbox runs. */
static int spawn_helper(struct ts_prepared *p, const int *stdio, pid_t *ret_pid, int *ret_pidfd,
			pid_t *ret_init, struct ts_error *err)
{
	_cleanup_close_ int bpf = -EBADF;
	int sp[2], r;
	pid_t pid;
	struct ts_helper_report rep;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = &rep, .iov_len = sizeof(rep) };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	ssize_t n;
	int status;

	bpf = open(p->bpf, O_RDONLY | O_CLOEXEC);
	if (bpf < 0)
		return ts_err_errno(err, -errno, "open seccomp program `%s`", p->bpf);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return ts_err_errno(err, -errno, "socketpair");
	/* posix_spawn (vfork-style in glibc): the helper's start is on every run's critical
	 * path, and copying the CLI's page tables for a fork is measurable. */
	{
		static char *empty_env[] = { NULL };
		posix_spawn_file_actions_t fa;
		posix_spawnattr_t attr;
		sigset_t none;
		int hi[8] = { -1, -1, -1, -1, -1, -1, -1, -1 };
		bool dup_failed = false;

		sigemptyset(&none);
		posix_spawn_file_actions_init(&fa);
		posix_spawnattr_init(&attr);
		/* The sources first go above every target (a source numbered like another
		 * one's target would be overwritten before it is copied: our caller's fds
		 * decide the numbers we get). */
		hi[0] = fcntl(bpf, F_DUPFD_CLOEXEC, 64);
		hi[1] = fcntl(sp[1], F_DUPFD_CLOEXEC, 64);
		hi[2] = p->listen_fd >= 0 ? fcntl(p->listen_fd, F_DUPFD_CLOEXEC, 64) : -1;
		hi[3] = p->logs_fd >= 0 ? fcntl(p->logs_fd, F_DUPFD_CLOEXEC, 64) : -1;
		hi[7] = fcntl(p->ws_fd, F_DUPFD_CLOEXEC, 64);
		for (int k = 0; stdio && k < 3; k++) {
			/* what the sandbox gets as its standard streams (relay.h) */
			hi[4 + k] = fcntl(stdio[k], F_DUPFD_CLOEXEC, 64);
			dup_failed |= hi[4 + k] < 0;
		}
		posix_spawn_file_actions_adddup2(&fa, hi[0], TS_FD_SECCOMP);
		posix_spawn_file_actions_adddup2(&fa, hi[1], TS_FD_SYNC);
		posix_spawn_file_actions_adddup2(&fa, hi[7], TS_FD_WORKSPACE);
		for (int k = 0; stdio && k < 3; k++)
			posix_spawn_file_actions_adddup2(&fa, hi[4 + k], k);
		if (p->listen_fd >= 0) {
			/* a durable init keeps nothing of ours: not our terminal, not the pipe
			 * our caller reads our output from */
			posix_spawn_file_actions_adddup2(&fa, hi[2], TS_FD_CONTROL);
			posix_spawn_file_actions_adddup2(&fa, hi[3], TS_FD_LOGS);
			for (int k = 0; k < 3; k++)
				posix_spawn_file_actions_addopen(&fa, k, "/dev/null", O_RDWR, 0);
		}
		/* Our own process group: the terminal's signals reach the CLI, which forwards
		 * them once (not twice). */
		posix_spawnattr_setpgroup(&attr, 0);
		posix_spawnattr_setsigmask(&attr, &none);
		posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
		/* The helper gets no environment of ours: host-side code never honours the
		 * caller's LD_* or similar (RT-06). */
		r = (hi[0] < 0 || hi[1] < 0 || hi[7] < 0 || dup_failed ||
		     (p->listen_fd >= 0 && (hi[2] < 0 || hi[3] < 0)))
			    ? errno
			    : posix_spawn(&pid, p->paths.helper, &fa, &attr, p->argv.v, empty_env);
		posix_spawn_file_actions_destroy(&fa);
		posix_spawnattr_destroy(&attr);
		for (int k = 0; k < 8; k++)
			if (hi[k] >= 0)
				close(hi[k]);
		if (r != 0) {
			close(sp[0]);
			close(sp[1]);
			return ts_err_errno(err, -r, "execute `%s`", p->paths.helper);
		}
	}
	close(sp[1]);
	memset(&u, 0, sizeof(u));
	do
		n = recvmsg(sp[0], &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	close(sp[0]);
	if (n != (ssize_t)sizeof(rep) || rep.version != TS_HELPER_PROTO_VERSION ||
	    rep.status != 0) {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (n == (ssize_t)sizeof(rep) && rep.status != 0) {
			rep.err.msg[sizeof(rep.err.msg) - 1] = '\0';
			return ts_err(err, -rep.status, "%s", rep.err.msg);
		}
		return ts_err(err, -EIO,
			      "the helper exited (status %d) without starting the sandbox",
			      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	}
	*ret_pidfd = -1;
	*ret_init = rep.pid;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(ret_pidfd, CMSG_DATA(c), sizeof(int));
	*ret_pid = pid;
	return 0;
}

/* Forward signals, enforce the timeout, copy terminal streams, wait for the helper. */
static int supervise(pid_t helper, int init_pidfd, unsigned long long timeout_ms,
		     struct ts_relay *relay, const struct ts_run_hooks *h, int *ret_status)
{
	static const int fwd[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH };
	_cleanup_close_ int sfd = -EBADF, tfd = -EBADF;
	sigset_t mask;
	int status;
	bool timed_out = false;

	sigemptyset(&mask);
	for (size_t i = 0; i < ELEMENTSOF(fwd); i++)
		sigaddset(&mask, fwd[i]);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGCONT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (timeout_ms) {
		struct itimerspec its = { .it_value = { .tv_sec = (time_t)(timeout_ms / 1000),
							.tv_nsec = (long)(timeout_ms % 1000) *
								   1000000L } };

		/* CLOCK_MONOTONIC: a wall-clock jump moves no deadline (RL-24). */
		tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		if (tfd >= 0)
			timerfd_settime(tfd, 0, &its, NULL);
	}
	for (;;) {
		struct pollfd pfd[8] = { { .fd = sfd, .events = POLLIN },
					 { .fd = tfd, .events = POLLIN } };
		size_t n = 2 + ts_relay_pollfds(relay, pfd + 2);
		pid_t w = waitpid(helper, &status, WNOHANG);

		if (w == helper)
			break;
		if (w < 0 && errno != EINTR) {
			/* ECHILD: nothing to wait for would mean waiting forever */
			status = TS_EXIT_SETUP << 8;
			break;
		}
		if (poll(pfd, n, -1) < 0 && errno != EINTR)
			break;
		ts_relay_step(relay, pfd + 2);
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) != sizeof(si))
				continue;
			if (si.ssi_signo == SIGCONT)
				ts_relay_resume(relay);
			else if (si.ssi_signo != SIGCHLD)
				kill(helper, (int)si.ssi_signo);
		}
		if (tfd >= 0 && (pfd[1].revents & POLLIN)) {
			uint64_t ticks;

			(void)!read(tfd, &ticks, sizeof(ticks));
			close(tfd);
			tfd = -EBADF;
			timed_out = true;
			if (h && h->timed_out)
				h->timed_out(h->userdata, timeout_ms);
			/* Killing the pid namespace's init kills every process in it; the helper
			 * reaps init only after the kernel has torn the whole tree down. */
			if (init_pidfd >= 0)
				ts_pidfd_send_signal(init_pidfd, SIGKILL, NULL, 0);
			else
				kill(helper, SIGKILL);
		}
	}
	ts_relay_finish(relay);
	sigprocmask(SIG_UNBLOCK, &mask, NULL);
	if (timed_out)
		*ret_status = TS_EXIT_TIMEOUT;
	else if (WIFEXITED(status))
		*ret_status = WEXITSTATUS(status);
	else
		*ret_status = 128 + WTERMSIG(status);
	return 0;
}

static void cleanup(struct ts_prepared *p, const struct ts_run_opts *o)
{
	char path[4200];

	/* the helper removes its cgroups; if it was killed, nobody else would */
	if (p->id[0] && !o->dry_run && p->used_cgroup) {
		snprintf(path, sizeof(path), "ts-%s", p->id);
		ts_cgroup_remove(path);
	}
	if (p->dir_created && !o->keep && !o->dry_run) {
		if (p->fresh_workspace) {
			ts_rm_rf_at(AT_FDCWD, p->dir);
		} else {
			snprintf(path, sizeof(path), "%s/upper", p->dir);
			ts_rm_rf_at(AT_FDCWD, path);
			snprintf(path, sizeof(path), "%s/work", p->dir);
			ts_rm_rf_at(AT_FDCWD, path);
			rmdir(p->dir);
		}
	}
	if (p->claimed)
		ts_leftovers_release(p->paths.root, p->id);
}

int ts_run(const struct ts_run_opts *o, int *ret_status, struct ts_error *err)
{
	const struct ts_run_hooks *h = o->hooks;
	struct ts_prepared p;
	struct ts_relay relay;
	bool raw = false;
	pid_t helper = -1, init_pid = 0;
	int pidfd = -1, r;

	memset(&p, 0, sizeof(p));
	p.listen_fd = p.logs_fd = p.ws_fd = -EBADF;
	p.ws_owner_uid = p.ws_owner_gid = -1;
	ts_relay_init(&relay);
	/* what earlier runs killed before their clean-up left (leftovers.h) */
	if (o->paths && !o->dry_run)
		ts_leftovers_sweep(o->paths->root);
	r = prepare(&p, o, err);
	if (r < 0)
		goto out;
	tell_notes(&p, h);
	if (h && h->prepared) {
		struct ts_run_info info = { .id = p.id,
					    .dir = p.dir,
					    .ids_mode = p.idmap.mode,
					    .user_uid = p.idmap.user_uid };

		h->prepared(h->userdata, &info);
	}
	if (o->dry_run) {
		if (h && h->dry_run)
			h->dry_run(h->userdata, p.argv.v, TS_FD_SECCOMP_DRY, p.bpf);
		*ret_status = 0;
		goto out;
	}
	if (p.use_pty && h && h->terminal) {
		h->terminal(h->userdata, true);
		raw = true;
	}
	/* With a pty, init copies between it and our terminal; otherwise a terminal among
	 * our standard streams gets a pipe that we copy (relay.h) */
	if (!p.use_pty && (r = ts_relay_setup(&relay, 7, err)) < 0)
		goto out;
	if (ts_relay_active(&relay))
		signal(SIGTTIN, SIG_IGN);
	r = spawn_helper(&p, ts_relay_active(&relay) ? relay.sandbox_fds : NULL, &helper, &pidfd,
			 &init_pid, err);
	ts_relay_handed_over(&relay);
	if (r < 0)
		explain_failure(&p, err);
	if (r >= 0) {
		supervise(helper, pidfd, o->policy->timeout_ms, &relay, h, ret_status);
		if (pidfd >= 0)
			close(pidfd);
	}
out:
	if (raw)
		h->terminal(h->userdata, false);
	ts_relay_close(&relay);
	cleanup(&p, o);
	prepared_free(&p);
	return r < 0 ? r : 0;
}

int ts_launch_durable(const struct ts_run_opts *o, pid_t *ret_init_pid, struct ts_error *err)
{
	struct ts_prepared p;
	pid_t helper = -1;
	int pidfd = -1, status, r;

	memset(&p, 0, sizeof(p));
	p.listen_fd = p.logs_fd = p.ws_fd = -EBADF;
	p.ws_owner_uid = p.ws_owner_gid = -1;
	r = prepare(&p, o, err);
	if (r >= 0) {
		tell_notes(&p, o->hooks);
		r = spawn_helper(&p, NULL, &helper, &pidfd, ret_init_pid, err);
		if (r < 0)
			explain_failure(&p, err);
	}
	if (r >= 0) {
		/* --detach: the helper exits once init runs; init is re-parented */
		while (waitpid(helper, &status, 0) < 0 && errno == EINTR)
			;
		if (pidfd >= 0)
			close(pidfd);
	}
	prepared_free(&p);
	return r < 0 ? r : 0;
}
