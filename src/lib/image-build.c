/* SPDX-License-Identifier: Apache-2.0 */
#include "image-build.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"
#include "oci-store.h"
#include "paths.h"
#include "util.h"

extern char **environ;

#define MAX_SOURCES 8	 /* apt source lines taken from the host */
#define MAX_PACKAGES 512 /* a recipe's and --packages' together */
#define MAX_RECIPE 65536 /* the packages file */
#define DEFAULT_MIRROR "http://deb.debian.org/debian"

int ts_image_build_recipes_dir(char *buf, size_t len, struct ts_error *err)
{
	const char *env = getenv("TOREN_SANDBOX_ROOTFS_DIR");
	char self[4096], probe[4200];

	if (env && env[0] == '/') {
		snprintf(buf, len, "%s", env);
		return 0;
	}
	/* from a build tree, the source tree's recipes (an edit is used without installing) */
	if (ts_self_dir(self, sizeof(self)) == 0 &&
	    ts_path_join(probe, sizeof(probe), self, "build.ninja") == 0 &&
	    access(probe, F_OK) == 0) {
		snprintf(buf, len, "%s", TS_SOURCE_ROOTFSDIR);
		return 0;
	}
	if ((size_t)snprintf(buf, len, "%s/rootfs", TS_DATADIR) >= len)
		return ts_err(err, -ENAMETOOLONG, "rootfs directory path too long");
	return 0;
}

/* A Debian package name ([a-z0-9][a-z0-9+.-]+), with an optional :arch or =version. */
static bool package_valid(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789+.-");

	if (n < 2 || n > 128 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
		return false;
	if (s[n] == '\0')
		return true;
	if (s[n] != ':' && s[n] != '=')
		return false;
	return strlen(s + n + 1) > 0 && strlen(s + n + 1) < 128 &&
	       strspn(s + n + 1,
		      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.~:-") ==
		       strlen(s + n + 1);
}

static bool suite_valid(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n < 64 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789.-") == n &&
	       s[0] != '-';
}

/* A mirror mmdebstrap takes as a URI: http(s) or file, printable, no spaces or quotes. */
static bool mirror_valid(const char *s)
{
	size_t n = strlen(s);

	if (n < 8 || n >= 1000)
		return false;
	if (!ts_startswith(s, "http://") && !ts_startswith(s, "https://") &&
	    !ts_startswith(s, "file:/"))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f || s[i] == '"' || s[i] == '\'' ||
		    s[i] == '\\' || s[i] == '`' || s[i] == '$')
			return false;
	return true;
}

/* The host's release codename (/etc/os-release), else `stable`. */
static void host_suite(char *out, size_t len)
{
	_cleanup_free_ char *text = NULL;
	char *line, *save = NULL;

	snprintf(out, len, "stable");
	if (ts_read_file_at(AT_FDCWD, "/etc/os-release", 65536, &text, NULL) < 0)
		return;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char v[64];

		if (!ts_startswith(line, "VERSION_CODENAME="))
			continue;
		snprintf(v, sizeof(v), "%s", line + 17);
		v[strcspn(v, "\"'")] = '\0';
		if (v[0] == '"' || v[0] == '\'')
			memmove(v, v + 1, strlen(v));
		v[strcspn(v, "\"'")] = '\0';
		if (suite_valid(v))
			snprintf(out, len, "%s", v);
	}
}

struct sources {
	char line[MAX_SOURCES][1200]; /* "deb URI SUITE COMPONENTS" */
	char first_uri[1024];
	size_t n;
};

/* Is suite the build's suite or one of its companions (-updates, -security)? */
static bool suite_family(const char *suite, const char *want)
{
	size_t n = strlen(want);

	return !strncmp(suite, want, n) && (suite[n] == '\0' || suite[n] == '-');
}

static void add_source(struct sources *src, const char *uri, const char *suite, const char *comps)
{
	char c[128];

	if (src->n >= MAX_SOURCES || !mirror_valid(uri) || !suite_valid(suite))
		return;
	/* components: words of [a-z0-9-/]; main when none survive */
	snprintf(c, sizeof(c), "%s", comps && *comps ? comps : "main");
	for (char *p = c; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789-/ ", *p))
			*p = ' ';
	if (strspn(c, " ") == strlen(c))
		snprintf(c, sizeof(c), "main");
	for (size_t i = 0; i < src->n; i++)
		if (strstr(src->line[i], uri) && strstr(src->line[i], suite))
			return;
	snprintf(src->line[src->n++], sizeof(src->line[0]), "deb %s %s %s", uri, suite, c);
	if (!src->first_uri[0])
		snprintf(src->first_uri, sizeof(src->first_uri), "%s", uri);
}

/* One-line style: `deb [options] URI SUITE COMPONENTS...` */
static void parse_list(struct sources *src, char *text, const char *want)
{
	char *line, *save = NULL;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p = line, *ws = NULL, *uri, *suite, comps[128] = "";

		line[strcspn(line, "#")] = '\0';
		if (strncmp(p, "deb", 3) != 0 || (p[3] != ' ' && p[3] != '\t'))
			continue;
		p += 4;
		p += strspn(p, " \t");
		if (*p == '[') {
			p = strchr(p, ']');
			if (!p)
				continue;
			p++;
		}
		uri = strtok_r(p, " \t", &ws);
		suite = uri ? strtok_r(NULL, " \t", &ws) : NULL;
		if (!suite || !suite_family(suite, want))
			continue;
		for (char *t = strtok_r(NULL, " \t", &ws); t; t = strtok_r(NULL, " \t", &ws))
			if (strlen(comps) + strlen(t) + 2 < sizeof(comps)) {
				strcat(comps, comps[0] ? " " : "");
				strcat(comps, t);
			}
		add_source(src, uri, suite, comps);
	}
}

/* deb822 style: stanzas of Types, URIs, Suites, Components */
static void parse_sources(struct sources *src, char *text, const char *want)
{
	char *stanza = text;

	while (stanza && *stanza) {
		char *end = strstr(stanza, "\n\n"), *line, *save = NULL;
		char types[256] = "", uris[1024] = "", suites[256] = "", comps[128] = "";

		if (end)
			*end = '\0';
		for (line = strtok_r(stanza, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			struct {
				const char *key;
				char *dst;
				size_t len;
			} f[] = { { "Types:", types, sizeof(types) },
				  { "URIs:", uris, sizeof(uris) },
				  { "Suites:", suites, sizeof(suites) },
				  { "Components:", comps, sizeof(comps) } };

			if (line[0] == '#')
				continue;
			for (size_t i = 0; i < ELEMENTSOF(f); i++)
				if (!strncasecmp(line, f[i].key, strlen(f[i].key)))
					snprintf(f[i].dst, f[i].len, "%s",
						 line + strlen(f[i].key) +
							 strspn(line + strlen(f[i].key), " \t"));
		}
		if (strstr(types, "deb") &&
		    (strlen(types) == 3 || strstr(types, "deb ") || strstr(types, " deb"))) {
			char *us = NULL, *ss = NULL;
			char ucopy[1024], scopy[256];

			snprintf(ucopy, sizeof(ucopy), "%s", uris);
			for (char *u = strtok_r(ucopy, " \t", &us); u;
			     u = strtok_r(NULL, " \t", &us)) {
				snprintf(scopy, sizeof(scopy), "%s", suites);
				for (char *s = strtok_r(scopy, " \t", &ss); s;
				     s = strtok_r(NULL, " \t", &ss))
					if (suite_family(s, want))
						add_source(src, u, s, comps);
			}
		}
		stanza = end ? end + 2 : NULL;
	}
}

/* The host's apt sources for the suite and its -updates and -security companions. */
static void host_sources(struct sources *src, const char *suite)
{
	_cleanup_free_ char *text = NULL;
	DIR *d;
	struct dirent *de;

	if (ts_read_file_at(AT_FDCWD, "/etc/apt/sources.list", 1 << 20, &text, NULL) == 0)
		parse_list(src, text, suite);
	d = opendir("/etc/apt/sources.list.d");
	if (!d)
		return;
	while ((de = readdir(d))) {
		_cleanup_free_ char *t = NULL;
		char path[512];
		size_t n = strlen(de->d_name);

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/etc/apt/sources.list.d/%s", de->d_name);
		if (n > 8 && !strcmp(de->d_name + n - 8, ".sources")) {
			if (ts_read_file_at(AT_FDCWD, path, 1 << 20, &t, NULL) == 0)
				parse_sources(src, t, suite);
		} else if (n > 5 && !strcmp(de->d_name + n - 5, ".list")) {
			if (ts_read_file_at(AT_FDCWD, path, 1 << 20, &t, NULL) == 0)
				parse_list(src, t, suite);
		}
	}
	closedir(d);
}

/* The recipe's packages and the extra ones, as one comma-separated --include list. */
static int include_list(const char *dir, char **extra, char **ret, struct ts_error *err)
{
	_cleanup_free_ char *text = NULL, *out = NULL;
	char path[4200], *line, *save = NULL;
	size_t used = 0, cap = MAX_RECIPE + 8192, count = 0;
	int r;

	snprintf(path, sizeof(path), "%s/packages", dir);
	r = ts_read_file_at(AT_FDCWD, path, MAX_RECIPE, &text, NULL);
	if (r < 0)
		return ts_err_errno(err, r, "recipe `%s`: read `packages`", dir);
	out = calloc(1, cap);
	if (!out)
		return ts_err(err, -ENOMEM, "out of memory");
	for (line = strtok_r(text, "\n", &save);; line = strtok_r(NULL, "\n", &save)) {
		const char *pkg;
		char word[256];

		if (line) {
			line[strcspn(line, "#")] = '\0';
			line += strspn(line, " \t");
			line[strcspn(line, " \t\r")] = '\0';
			if (!*line)
				continue;
			pkg = line;
		} else if (extra && *extra) {
			pkg = *extra++;
		} else {
			break;
		}
		snprintf(word, sizeof(word), "%s", pkg);
		if (!package_valid(word))
			return ts_err(err, -EINVAL,
				      "package `%.128s`: not a Debian package name (lowercase "
				      "letters, digits, `+.-`; optionally :ARCH or =VERSION)",
				      pkg);
		if (++count > MAX_PACKAGES || used + strlen(word) + 2 >= cap)
			return ts_err(err, -E2BIG, "more than %d packages", MAX_PACKAGES);
		used += (size_t)snprintf(out + used, cap - used, "%s%s", used ? "," : "", word);
	}
	if (count == 0)
		return ts_err(err, -EINVAL, "recipe `%s` names no packages", dir);
	*ret = TAKE_PTR(out);
	return 0;
}

/* Are we in the initial user namespace (uid_map maps every id)? */
static bool initial_userns(void)
{
	_cleanup_free_ char *text = NULL;
	unsigned long a, b, c;

	if (ts_read_file_at(AT_FDCWD, "/proc/self/uid_map", 4096, &text, NULL) < 0)
		return true;
	return sscanf(text, "%lu %lu %lu", &a, &b, &c) == 3 && a == 0 && b == 0 &&
	       c == 4294967295UL;
}

static int find_program(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	_cleanup_free_ char *copy = strdup(path && *path ? path : "/usr/bin:/bin");
	char *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		if (d[0] != '/')
			continue;
		if ((size_t)snprintf(out, len, "%s/%s", d, name) < len && access(out, X_OK) == 0)
			return 0;
	}
	return -ENOENT;
}

struct argv {
	char *v[64 + MAX_SOURCES];
	size_t n;
	char *own[64]; /* formatted ones, freed */
	size_t n_own;
};

static void argv_free(struct argv *a)
{
	for (size_t i = 0; i < a->n_own; i++)
		free(a->own[i]);
}

static int __attribute__((format(printf, 2, 3))) argv_addf(struct argv *a, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	if (a->n + 1 >= ELEMENTSOF(a->v) || a->n_own >= ELEMENTSOF(a->own))
		return -E2BIG;
	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	a->own[a->n_own++] = s;
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
	return 0;
}

/*
 * The forked child: runs argv in a process group of its own and waits for it. mmdebstrap's
 * main process ignores SIGTERM while its worker builds; the worker cleans up (its mounts,
 * its chroot) on SIGTERM. So when our caller dies (PR_SET_PDEATHSIG) or is interrupted,
 * the whole group gets SIGTERM, and the work directory stays locked (fd 3, inherited)
 * until the last of them is gone. Never returns.
 */
static _Noreturn void supervise(char **argv, char **env, int log_fd, int lock, pid_t parent)
{
	sigset_t set;
	int sfd, st;
	pid_t pid;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 || prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 ||
	    getppid() != parent)
		_exit(127);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0)
		_exit(127);
	pid = fork();
	if (pid < 0)
		_exit(127);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (setpgid(0, 0) < 0 || sigprocmask(SIG_UNBLOCK, &set, NULL) < 0 || null < 0 ||
		    dup2(null, 0) < 0 || dup2(log_fd >= 0 ? log_fd : null, 1) < 0 ||
		    dup2(log_fd >= 0 ? log_fd : null, 2) < 0 ||
		    (lock == 3 ? fcntl(3, F_SETFD, 0) : dup2(lock, 3)) < 0)
			_exit(127);
		execve(argv[0], argv, env);
		_exit(127);
	}
	setpgid(pid, pid); /* either of us may get there first */
	for (;;) {
		struct signalfd_siginfo si;

		if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si)) {
			if (errno == EINTR)
				continue;
			kill(-pid, SIGTERM);
		} else if (si.ssi_signo != SIGCHLD) {
			kill(-pid, SIGTERM);
			continue;
		}
		if (waitpid(pid, &st, WNOHANG) == pid)
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
}

/* Run argv with TMPDIR=tmpdir, its output to log_fd, the work directory's lock as fd 3 (so
 * that it is held while any process of the build lives); its exit status (or 128+signal). */
static int spawn_wait(char **argv, const char *tmpdir, int log_fd, int lock, int *status,
		      struct ts_error *err)
{
	size_t n = 0;
	char **env;
	_cleanup_free_ char *tmp = NULL;
	pid_t pid, parent = getpid();
	int st;

	for (char **e = environ; e && *e; e++)
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env || asprintf(&tmp, "TMPDIR=%s", tmpdir) < 0) {
		free(env);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	n = 0;
	for (char **e = environ; e && *e; e++)
		if (!ts_startswith(*e, "TMPDIR="))
			env[n++] = *e;
	env[n++] = tmp;
	pid = fork();
	if (pid < 0) {
		free(env);
		return ts_err_errno(err, -errno, "fork");
	}
	if (pid == 0)
		supervise(argv, env, log_fd, lock, parent);
	free(env);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return ts_err_errno(err, -errno, "wait for `%s`", argv[0]);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return 0;
}

int ts_image_build(const struct ts_image_build_opts *o, struct ts_image_build_info *info,
		   struct ts_error *err)
{
	char dir[4096], work[4096], tar[4200], cache[4096], prog[4096], tmpdir[4096];
	char source[2048], created[4096], hookdir[4200], dpkgcfg[4200];
	_cleanup_free_ char *include = NULL;
	_cleanup_close_ int lock = -EBADF;
	struct sources src = { 0 };
	struct argv a = { 0 };
	const char *name;
	struct stat st;
	int r, status = 0;

	memset(info, 0, sizeof(*info));
	/* the recipe */
	if (strchr(o->recipe, '/')) {
		if (!realpath(o->recipe, dir))
			return ts_err_errno(err, -errno, "recipe `%s`", o->recipe);
		name = strrchr(dir, '/') + 1;
	} else {
		char base[4096];

		if (!suite_valid(o->recipe))
			return ts_err(err, -EINVAL,
				      "recipe `%s`: a name of lowercase letters, digits and `.-`, "
				      "or a path to a recipe directory",
				      o->recipe);
		if ((r = ts_image_build_recipes_dir(base, sizeof(base), err)) < 0)
			return r;
		if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", base, o->recipe) >= sizeof(dir))
			return ts_err(err, -ENAMETOOLONG, "recipe path too long");
		name = o->recipe;
	}
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return ts_err(err, -ENOENT, "no recipe `%s` (`%s` is not a directory)", o->recipe,
			      dir);
	snprintf(info->recipe, sizeof(info->recipe), "%s", dir);
	if (o->name)
		name = o->name;
	if (!ts_oci_name_valid(name))
		return ts_err(err, -EINVAL,
			      "image name `%s`: use letters, digits and `._:/@+-`, at most 255, "
			      "starting with a letter or digit",
			      name);
	if ((r = include_list(dir, o->packages, &include, err)) < 0)
		return r;

	/* where from */
	if (o->suite && !suite_valid(o->suite))
		return ts_err(err, -EINVAL, "suite `%s`: a Debian release name such as bookworm",
			      o->suite);
	if (o->suite)
		snprintf(info->suite, sizeof(info->suite), "%s", o->suite);
	else
		host_suite(info->suite, sizeof(info->suite));
	if (o->mirror) {
		if (!mirror_valid(o->mirror))
			return ts_err(err, -EINVAL,
				      "mirror `%.200s`: an http://, https:// or file:/ URL without "
				      "spaces or quotes",
				      o->mirror);
		add_source(&src, o->mirror, info->suite, "main");
	} else {
		host_sources(&src, info->suite);
		if (src.n == 0)
			add_source(&src, DEFAULT_MIRROR, info->suite, "main");
	}
	snprintf(info->mirror, sizeof(info->mirror), "%s", src.first_uri);

	/* how */
	if (find_program("mmdebstrap", prog, sizeof(prog)) < 0)
		return ts_err(err, -ENOENT,
			      "no `mmdebstrap` in PATH: install Debian's package (`apt-get install "
			      "mmdebstrap`)");
	if (geteuid() == 0 && initial_userns()) {
		snprintf(info->mode, sizeof(info->mode), "root");
	} else if (geteuid() == 0) {
		return ts_err(err, -EPERM,
			      "a user namespace of its own (`unshare -r`?): packages cannot get "
			      "their owners here; build as root, or as a user with subordinate "
			      "ids (/etc/subuid, /etc/subgid)");
	} else {
		snprintf(info->mode, sizeof(info->mode), "unshare");
	}

	/* the apt cache: .deb files, checked by apt against the signed indexes before use */
	if (!o->apt_cache)
		snprintf(cache, sizeof(cache), "%s/cache/apt", o->root);
	else
		snprintf(cache, sizeof(cache), "%s", o->apt_cache);
	if (cache[0]) {
		if (cache[0] != '/' || strcspn(cache, " \t\n\"'\\`$") != strlen(cache))
			return ts_err(
				err, -EINVAL,
				"apt cache `%.200s`: an absolute path without spaces or quotes",
				cache);
		if ((r = ts_mkdir_p(AT_FDCWD, cache, 0700)) < 0)
			return ts_err_errno(err, r, "create apt cache `%s`", cache);
	}

	lock = ts_oci_workdir(o->root, "build", work, sizeof(work), err);
	if (lock < 0)
		return lock;
	snprintf(tar, sizeof(tar), "%s/rootfs.tar", work);
	/* root: the chroot is made in the work directory (a killed build's leftovers are in
	 * the store's tmp/); unshare: the unshared root must reach it, which it cannot below
	 * the 0700 state root, so the caller's TMPDIR (world-writable, `mmdebstrap(1)`) */
	if (!strcmp(info->mode, "root"))
		snprintf(tmpdir, sizeof(tmpdir), "%s", work);
	else
		snprintf(tmpdir, sizeof(tmpdir), "%s",
			 getenv("TMPDIR") && getenv("TMPDIR")[0] == '/' ? getenv("TMPDIR")
									: "/tmp");
	snprintf(hookdir, sizeof(hookdir), "%s", dir);
	snprintf(dpkgcfg, sizeof(dpkgcfg), "%s/dpkg.cfg", dir);

	r = 0;
	a.v[a.n++] = prog;
	r |= argv_addf(&a, "--mode=%s", info->mode);
	r |= argv_addf(&a, "--variant=apt");
	r |= argv_addf(&a, "--format=tar");
	r |= argv_addf(&a, "--include=%s", include);
	r |= argv_addf(&a, "--aptopt=Acquire::Languages \"none\"");
	if (access(dpkgcfg, R_OK) == 0)
		r |= argv_addf(&a, "--dpkgopt=%s", dpkgcfg);
	r |= argv_addf(&a, "--hook-dir=%s", hookdir);
	if (cache[0]) {
		/* mmdebstrap(1), EXAMPLES: a local cache of .deb files */
		r |= argv_addf(&a, "--skip=essential/unlink");
		r |= argv_addf(&a, "--setup-hook=mkdir -p \"$1\"/var/cache/apt/archives/");
		r |= argv_addf(&a, "--setup-hook=sync-in %s /var/cache/apt/archives/", cache);
		r |= argv_addf(&a, "--customize-hook=sync-out /var/cache/apt/archives %s", cache);
	}
	r |= argv_addf(&a, "--");
	r |= argv_addf(&a, "%s", info->suite);
	r |= argv_addf(&a, "%s", tar);
	for (size_t i = 0; i < src.n; i++)
		r |= argv_addf(&a, "%s", src.line[i]);
	if (r < 0) {
		r = ts_err(err, -ENOMEM, "mmdebstrap's command line");
		goto out;
	}
	r = spawn_wait(a.v, tmpdir, o->log_fd, lock, &status, err);
	if (r < 0)
		goto out;
	if (status != 0) {
		r = ts_err(err, -EIO,
			   "mmdebstrap --mode=%s failed (exit status %d): see its output above; "
			   "the mirror `%s` must be reachable%s",
			   info->mode, status, info->mirror,
			   strcmp(info->mode, "unshare") ? ""
							 : ", and the user needs subordinate ids "
							   "(/etc/subuid, /etc/subgid)");
		goto out;
	}
	snprintf(source, sizeof(source), "build:%.900s (%s, %.900s)", dir, info->suite,
		 info->mirror);
	snprintf(created, sizeof(created),
		 "toren-sandbox image build %.900s: mmdebstrap --mode=%s "
		 "--variant=apt %.900s %s",
		 dir, info->mode, info->mirror, info->suite);
	r = ts_oci_import_tar(o->root, tar, name, source, created, 0, o->warn, o->userdata,
			      info->digest, sizeof(info->digest), err);
out:
	argv_free(&a);
	ts_rm_rf_at(AT_FDCWD, work);
	return r;
}
