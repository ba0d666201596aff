/* SPDX-License-Identifier: Apache-2.0 */
#include "hostcheck.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cidr.h"
#include "cleanup.h"
#include "config.h"
#include "idmap-plan.h"
#include "paths.h"
#include "util.h"

static long read_long(const char *path, long dflt)
{
	_cleanup_free_ char *buf = NULL;

	if (ts_read_file_at(AT_FDCWD, path, 64, &buf, NULL) < 0)
		return dflt;
	return strtol(buf, NULL, 10);
}

static bool has_line_word(const char *path, const char *word)
{
	_cleanup_free_ char *buf = NULL;

	if (ts_read_file_at(AT_FDCWD, path, 1 << 16, &buf, NULL) < 0)
		return false;
	for (char *p = buf; (p = strstr(p, word)); p += strlen(word)) {
		char after = p[strlen(word)];

		if ((p == buf || p[-1] == '\t' || p[-1] == ' ' || p[-1] == '\n' || p[-1] == ',') &&
		    (after == '\n' || after == '\0' || after == ' ' || after == ','))
			return true;
	}
	return false;
}

static bool is_fs(const char *path, long magic)
{
	struct statfs sfs;

	return statfs(path, &sfs) == 0 && sfs.f_type == magic;
}

bool ts_cgroup_delegated(const char *controller, char *why, size_t len)
{
	char own[1024], path[2048];
	char dummy[8];

	if (!why) {
		why = dummy;
		len = sizeof(dummy);
	}
	if (is_fs("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC)) {
		if (ts_self_cgroup("", own, sizeof(own)) < 0) {
			snprintf(why, len, "cgroup v2: own cgroup unknown");
			return false;
		}
		snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cgroup.subtree_control",
			 strcmp(own, "/") ? own : "");
		if (!has_line_word(path, controller)) {
			snprintf(why, len, "cgroup v2: `%s` not enabled in `%s`", controller, path);
			return false;
		}
		snprintf(path, sizeof(path), "/sys/fs/cgroup%s", strcmp(own, "/") ? own : "");
		if (access(path, W_OK) < 0) {
			snprintf(why, len, "cgroup v2: `%s` not writable", path);
			return false;
		}
		snprintf(why, len, "cgroup v2 at `%s`", path);
		return true;
	}
	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s", controller);
	if (!is_fs(path, CGROUP_SUPER_MAGIC)) {
		snprintf(why, len, "no cgroup v1 `%s` hierarchy and no cgroup v2 root", controller);
		return false;
	}
	if (ts_self_cgroup(controller, own, sizeof(own)) < 0) {
		snprintf(why, len, "cgroup v1 `%s`: own cgroup unknown", controller);
		return false;
	}
	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s%s", controller,
		 strcmp(own, "/") ? own : "");
	if (access(path, W_OK) < 0) {
		snprintf(why, len, "cgroup v1 `%s`: `%s` not writable (not delegated)", controller,
			 path);
		return false;
	}
	snprintf(why, len, "cgroup v1 at `%s`", path);
	return true;
}

void ts_cgroup_remove(const char *name)
{
	static const char *const ctrls[] = { "memory", "pids", "cpu", "" };
	char own[1024], path[2048];

	for (size_t i = 0; i < ELEMENTSOF(ctrls); i++) {
		const char *mount = ctrls[i][0] ? "/sys/fs/cgroup/" : "/sys/fs/cgroup";

		if (ts_self_cgroup(ctrls[i], own, sizeof(own)) < 0)
			continue;
		snprintf(path, sizeof(path), "%s%s%s/toren-sandbox/%s", mount, ctrls[i],
			 strcmp(own, "/") ? own : "", name);
		for (int tries = 0; tries < 50; tries++) {
			/* EBUSY while the kernel still releases the last task */
			if (rmdir(path) == 0 || errno != EBUSY)
				break;
			usleep(2000);
		}
	}
}

static struct ts_check *add(struct ts_check *out, size_t max, size_t *n, const char *name,
			    enum ts_check_level level)
{
	struct ts_check *c;

	if (*n >= max)
		return NULL;
	c = &out[(*n)++];
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->level = level;
	return c;
}

/* Fills c (when not NULL) for the user-namespace checks; returns false on a blocker. */
static bool check_userns(struct ts_check *out, size_t max, size_t *n)
{
	long clone = read_long("/proc/sys/kernel/unprivileged_userns_clone", -1);
	long maxns = read_long("/proc/sys/user/max_user_namespaces", -1);
	long aa = read_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", -1);
	bool root = getuid() == 0, ok = true;
	struct ts_check *c;

	c = add(out, max, n, "user namespaces", TS_CHECK_OK);
	if (maxns == 0) {
		ok = false;
		if (c) {
			c->level = TS_CHECK_FAIL;
			snprintf(c->detail, sizeof(c->detail), "user.max_user_namespaces is 0");
			snprintf(c->fix, sizeof(c->fix),
				 "sysctl -w user.max_user_namespaces=15000 (and persist it in "
				 "/etc/sysctl.d/)");
		}
	} else if (clone == 0 && !root) {
		ok = false;
		if (c) {
			c->level = TS_CHECK_FAIL;
			snprintf(c->detail, sizeof(c->detail),
				 "kernel.unprivileged_userns_clone is 0: unprivileged user "
				 "namespaces are disabled");
			snprintf(c->fix, sizeof(c->fix),
				 "sysctl -w kernel.unprivileged_userns_clone=1, or install the "
				 "helper setuid root, see toren-sandbox-helper(8)");
		}
	} else if (c) {
		snprintf(c->detail, sizeof(c->detail), "enabled (max_user_namespaces=%ld%s)", maxns,
			 clone >= 0 ? (clone ? ", unprivileged_userns_clone=1" : "") : "");
	}
	c = add(out, max, n, "apparmor userns restriction", TS_CHECK_OK);
	if (aa == 1 && !root) {
		ok = false;
		if (c) {
			c->level = TS_CHECK_FAIL;
			snprintf(c->detail, sizeof(c->detail),
				 "kernel.apparmor_restrict_unprivileged_userns is 1 (Ubuntu 24.04 "
				 "default): user namespaces get no capabilities");
			snprintf(c->fix, sizeof(c->fix),
				 "install the profile: sudo install -m644 "
				 "%s/apparmor/toren-sandbox /etc/apparmor.d/ && sudo "
				 "apparmor_parser -r /etc/apparmor.d/toren-sandbox (source: "
				 "policy/apparmor/toren-sandbox.in)",
				 TS_DATADIR);
		}
	} else if (c) {
		snprintf(c->detail, sizeof(c->detail), "%s",
			 aa < 0 ? "not present" : "not restricting");
	}
	return ok;
}

int ts_hostcheck_preflight(struct ts_error *err)
{
	struct ts_check checks[4];
	size_t n = 0;

	if (check_userns(checks, ELEMENTSOF(checks), &n))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (checks[i].level == TS_CHECK_FAIL)
			return ts_err(err, -EPERM, "%s: %s; fix: %s", checks[i].name,
				      checks[i].detail, checks[i].fix);
	return ts_err(err, -EPERM, "user namespaces unavailable");
}

/* Whether the running kernel's overlayfs knows `userxattr` (Linux 5.11); if not, why in
 * detail. */
static bool overlay_has_userxattr(char *detail, size_t size)
{
	struct utsname u;
	unsigned int major = 0, minor = 0;

	if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return true; /* unknown: the helper falls back by itself */
	if (major > 5 || (major == 5 && minor >= 11))
		return true;
	snprintf(detail, size,
		 "kernel %s has no `userxattr`: in an image, removing a directory of a lower "
		 "layer fails with EIO",
		 u.release);
	return false;
}

size_t ts_hostcheck_all(struct ts_check *out, size_t max)
{
	static const char *const controllers[] = { "memory", "pids", "cpu" };
	struct ts_idmap_plan plan;
	struct ts_check *c;
	size_t n = 0;
	bool any_cg = false;

	check_userns(out, max, &n);

	c = add(out, max, &n, "overlayfs", TS_CHECK_OK);
	if (c && !has_line_word("/proc/filesystems", "overlay")) {
		/* it may still be a module that loads on first use */
		c->level = TS_CHECK_WARN;
		snprintf(c->detail, sizeof(c->detail),
			 "not in /proc/filesystems (module not loaded?)");
		snprintf(c->fix, sizeof(c->fix),
			 "modprobe overlay (kernel >= 5.11 for user namespaces)");
	} else if (c && !overlay_has_userxattr(c->detail, sizeof(c->detail))) {
		/* the helper then mounts without it (src/helper/mount.c) */
		c->level = TS_CHECK_WARN;
		snprintf(c->fix, sizeof(c->fix),
			 "a kernel >= 5.11, where overlayfs in a user namespace has `userxattr`");
	} else if (c) {
		snprintf(c->detail, sizeof(c->detail), "available");
	}

	c = add(out, max, &n, "seccomp", TS_CHECK_OK);
	if (c && access("/proc/sys/kernel/seccomp/actions_avail", R_OK) < 0) {
		c->level = TS_CHECK_FAIL;
		snprintf(c->detail, sizeof(c->detail),
			 "seccomp filters unsupported by this kernel");
		snprintf(c->fix, sizeof(c->fix), "use a kernel built with CONFIG_SECCOMP_FILTER=y");
	} else if (c) {
		snprintf(c->detail, sizeof(c->detail), "filter mode available");
	}

	ts_idmap_plan(&plan, true, NULL);
	c = add(out, max, &n, "subordinate ids", TS_CHECK_OK);
	if (c) {
		if (!strcmp(plan.mode, "single")) {
			struct passwd *pw = getpwuid(getuid());

			c->level = TS_CHECK_INFO;
			snprintf(c->detail, sizeof(c->detail),
				 "none for this user: the sandbox has one id (user 1000), "
				 "`--user root` is unavailable");
			snprintf(c->fix, sizeof(c->fix),
				 "optional: usermod --add-subuids 100000-165535 --add-subgids "
				 "100000-165535 %s (needs the uidmap package)",
				 pw ? pw->pw_name : "USER");
		} else {
			snprintf(c->detail, sizeof(c->detail),
				 "%s mapping (root inside = host %lu)", plan.mode, plan.root_uid);
		}
	}
	c = add(out, max, &n, "newuidmap", TS_CHECK_OK);
	if (c) {
		struct stat st;

		if (stat("/usr/bin/newuidmap", &st) < 0) {
			c->level = TS_CHECK_INFO;
			snprintf(c->detail, sizeof(c->detail), "not installed");
			snprintf(c->fix, sizeof(c->fix), "optional: apt-get install uidmap");
		} else {
			snprintf(c->detail, sizeof(c->detail), "/usr/bin/newuidmap%s",
				 (st.st_mode & S_ISUID) || getuid() == 0 ? "" : " (not setuid!)");
		}
	}

	/* Between a sandbox's root and user the kernel's rule against following another
	 * user's symlink in a sticky directory (/tmp) is what keeps `cp --user root` and
	 * root's processes from being led by links the user planted. */
	c = add(out, max, &n, "protected symlinks", TS_CHECK_OK);
	if (c && read_long("/proc/sys/fs/protected_symlinks", -1) == 0) {
		c->level = plan.has_root ? TS_CHECK_WARN : TS_CHECK_INFO;
		snprintf(c->detail, sizeof(c->detail),
			 "fs.protected_symlinks is 0: in a sandbox with root and user, root "
			 "follows symlinks the user planted in /tmp%s",
			 plan.has_root ? "" : " (none here: this user's sandboxes have one id)");
		snprintf(c->fix, sizeof(c->fix),
			 "sysctl -w fs.protected_symlinks=1 (and persist it in /etc/sysctl.d/)");
	} else if (c) {
		snprintf(c->detail, sizeof(c->detail), "fs.protected_symlinks is on");
	}

	for (size_t i = 0; i < ELEMENTSOF(controllers); i++) {
		char why[512];
		bool ok = ts_cgroup_delegated(controllers[i], why, sizeof(why));

		any_cg |= ok;
		c = add(out, max, &n,
			controllers[i][0] == 'm'   ? "cgroup memory"
			: controllers[i][1] == 'i' ? "cgroup pids"
						   : "cgroup cpu",
			ok ? TS_CHECK_OK : TS_CHECK_INFO);
		if (c) {
			snprintf(c->detail, sizeof(c->detail), "%s", why);
			if (!ok)
				snprintf(
					c->fix, sizeof(c->fix),
					"limits fall back to rlimits (--memory: RLIMIT_AS, --pids: "
					"RLIMIT_NPROC; --cpus unavailable); delegate a cgroup, e.g. "
					"systemd-run --user -p Delegate=yes --scope toren-sandbox ...");
		}
	}
	(void)any_cg;

	c = add(out, max, &n, "network egress", TS_CHECK_OK);
	if (c) {
		char path[4096];
		enum ts_net_backend b = ts_hostcheck_net_backend(path, sizeof(path));

		if (b == TS_NET_BACKEND_NONE) {
			c->level = TS_CHECK_INFO;
			snprintf(c->detail, sizeof(c->detail),
				 "neither pasta nor slirp4netns found: `--network` is unavailable "
				 "(sandboxes without it need neither)");
			snprintf(c->fix, sizeof(c->fix),
				 "optional: apt-get install passt (pasta), or slirp4netns");
		} else {
			snprintf(c->detail, sizeof(c->detail), "`--network` uses %s (`%.200s`)%s",
				 ts_hostcheck_net_backend_name(b), path,
				 b == TS_NET_BACKEND_SLIRP4NETNS
					 ? "; pasta is preferred: apt-get install passt"
					 : "");
		}
	}
	c = add(out, max, &n, "name proxy", TS_CHECK_OK);
	if (c) {
		struct ts_paths p;
		struct ts_error e = { 0 };

		if (ts_paths_init(&p, &e) < 0 || !p.proxy[0]) {
			c->level = TS_CHECK_INFO;
			snprintf(c->detail, sizeof(c->detail),
				 "toren-sandbox-proxy not found beside the CLI: host names in "
				 "`network.allow` are unavailable");
			snprintf(c->fix, sizeof(c->fix),
				 "install toren-sandbox-proxy with the CLI (meson install does)");
		} else {
			snprintf(c->detail, sizeof(c->detail),
				 "host names in `network.allow` go through `%.200s`", p.proxy);
		}
	}
	c = add(out, max, &n, "IPv6 egress", TS_CHECK_OK);
	if (c) {
		char path[4096];
		enum ts_net_backend b = ts_hostcheck_net_backend(path, sizeof(path));
		bool route = ts_cidr_host_has_ipv6_route();

		/* the helper decides the same way when a sandbox starts (netproc.c) */
		if (b != TS_NET_BACKEND_NONE && route) {
			snprintf(c->detail, sizeof(c->detail),
				 "this host has an IPv6 default route: `--network` sandboxes get "
				 "IPv6 through %s, private IPv6 ranges blocked",
				 b == TS_NET_BACKEND_PASTA ? "pasta" : "slirp4netns");
		} else {
			c->level = TS_CHECK_INFO;
			snprintf(c->detail, sizeof(c->detail),
				 "%s: IPv6 is prohibited as a whole in `--network` sandboxes "
				 "(IPv4 only)",
				 b == TS_NET_BACKEND_NONE ? "no egress program"
							  : "this host has no IPv6 default route");
		}
	}
	c = add(out, max, &n, "/dev/net/tun", TS_CHECK_OK);
	if (c) {
		struct ts_error terr = { 0 };

		if (ts_hostcheck_tun(&terr) < 0) {
			char *fix = strstr(terr.msg, "; fix: ");

			c->level = TS_CHECK_WARN;
			if (fix) {
				snprintf(c->fix, sizeof(c->fix), "%s", fix + 7);
				*fix = '\0';
			}
			snprintf(c->detail, sizeof(c->detail), "%s", terr.msg);
		} else {
			snprintf(c->detail, sizeof(c->detail), "usable by this user (`--network`)");
		}
	}
	c = add(out, max, &n, "staging directory", TS_CHECK_OK);
	if (c) {
		struct stat st;

		if (stat("/tmp", &st) < 0 || !S_ISDIR(st.st_mode)) {
			c->level = TS_CHECK_FAIL;
			snprintf(c->detail, sizeof(c->detail), "`/tmp` is not a directory");
			snprintf(c->fix, sizeof(c->fix), "mkdir -m1777 /tmp");
		} else {
			snprintf(c->detail, sizeof(c->detail),
				 "`/tmp` usable as mount staging point");
		}
	}
	return n;
}

const char *ts_hostcheck_net_backend_name(enum ts_net_backend b)
{
	return b == TS_NET_BACKEND_PASTA	 ? "pasta"
	       : b == TS_NET_BACKEND_SLIRP4NETNS ? "slirp4netns"
						 : "none";
}

static bool find_program(const char *name, char *path, size_t len)
{
	static const char *const dirs[] = { "/usr/bin", "/usr/sbin", "/bin", "/usr/local/bin" };
	struct stat st;

	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		snprintf(path, len, "%s/%s", dirs[i], name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0)
			return true;
	}
	return false;
}

enum ts_net_backend ts_hostcheck_net_backend(char *path, size_t len)
{
	const char *want = getenv("TOREN_SANDBOX_NETWORK_BACKEND");
	bool any = !want || !want[0] || !strcmp(want, "auto");

	if ((any || !strcmp(want, "pasta")) && find_program("pasta", path, len))
		return TS_NET_BACKEND_PASTA;
	if ((any || !strcmp(want, "slirp4netns")) && find_program("slirp4netns", path, len))
		return TS_NET_BACKEND_SLIRP4NETNS;
	path[0] = '\0';
	return TS_NET_BACKEND_NONE;
}

int ts_hostcheck_tun(struct ts_error *err)
{
	struct stat st;
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC), e = errno;

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (e == ENOENT)
		return ts_err(err, -ENOENT,
			      "`/dev/net/tun` does not exist: egress needs a tap device; fix: "
			      "modprobe tun (or a kernel with CONFIG_TUN)");
	if (stat("/dev/net/tun", &st) == 0 && (e == EACCES || e == EPERM))
		return ts_err(
			err, -EACCES,
			"`/dev/net/tun` is mode %04o owned by uid %u: this user cannot open "
			"it, so pasta and slirp4netns cannot give a sandbox egress; fix: "
			"chmod 0666 /dev/net/tun (Debian's usual mode; the device only makes "
			"interfaces in namespaces one may administer), persistent with a udev "
			"rule: echo 'KERNEL==\"tun\", MODE=\"0666\"' > "
			"/etc/udev/rules.d/60-tun.rules",
			(unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
	return ts_err_errno(err, -e, "open `/dev/net/tun`; fix: check the device node");
}
