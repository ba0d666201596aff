/* SPDX-License-Identifier: Apache-2.0 */
#include "image.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "oci-store.h"
#include "paths.h"
#include "util.h"

#define TS_IDENTITY_VERSION "3"

/* /etc entries never copied: secrets and host identity. Patterns match the path
 * relative to /etc. */
static const char *const etc_excluded[] = {
	"shadow",
	"shadow-",
	"gshadow",
	"gshadow-",
	"sudoers",
	"sudoers.d",
	"ssh/ssh_host_*",
	"ssh/*_key",
	"machine-id",
	"subuid",
	"subuid-",
	"subgid",
	"subgid-",
	"security/opasswd",
	".pwd.lock",
	"passwd",
	"passwd-",
	"group",
	"group-",
	"hostname",
	"hosts",
	"credstore",
	"credstore.encrypted",
	"ssl/private",
	"krb5.keytab",
	"NetworkManager/system-connections",
	"wpa_supplicant",
	"docker",
	"containers/auth.json",
};

/* Top-level merged-usr names: a symlink on the host is copied, a directory is bound. */
static const char *const usr_links[] = { "bin", "sbin", "lib", "lib32", "lib64", "libx32" };

/* Mount points every image gets. */
static const struct {
	const char *name;
	mode_t mode;
} mount_points[] = {
	{ "usr", 0755 },  { "proc", 0555 }, { "dev", 0755 },  { "sys", 0555 },
	{ "tmp", 01777 }, { "var", 0755 },  { "root", 0700 }, { "run", 0755 },
	{ "home", 0755 }, { "mnt", 0755 },  { "opt", 0755 },  { "srv", 0755 },
};

static bool excluded(const char *rel)
{
	for (size_t i = 0; i < ELEMENTSOF(etc_excluded); i++)
		if (fnmatch(etc_excluded[i], rel, FNM_PATHNAME) == 0)
			return true;
	return false;
}

static int copy_file(int sdir, int ddir, const char *name, mode_t mode)
{
	_cleanup_close_ int in = -EBADF, out = -EBADF;
	char buf[65536];
	ssize_t n;

	in = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (in < 0)
		return errno == EACCES || errno == EPERM ? 0 : -errno; /* unreadable: skip */
	/* never copy setuid/setgid/sticky bits into a layer */
	out = openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0777);
	if (out < 0)
		return -errno;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (ts_write_all(out, buf, (size_t)n) < 0)
			return -errno;
	if (n < 0)
		return -errno;
	fchmod(out, mode & 0777);
	return 0;
}

/* Copy the tree sdir/ -> ddir/ skipping excluded entries; rel is the path below /etc. */
static int copy_tree(int sdir, int ddir, const char *rel, int depth)
{
	DIR *d;
	struct dirent *de;
	int r = 0, dupfd;

	if (depth > 32)
		return 0;
	dupfd = fcntl(sdir, F_DUPFD_CLOEXEC, 3);
	if (dupfd < 0)
		return -errno;
	d = fdopendir(dupfd);
	if (!d) {
		close(dupfd);
		return -errno;
	}
	while ((de = readdir(d)) && r == 0) {
		char sub[4096];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
		if (excluded(sub))
			continue;
		if (fstatat(sdir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			char target[4096];
			ssize_t n = readlinkat(sdir, de->d_name, target, sizeof(target) - 1);

			if (n < 0)
				continue;
			target[n] = '\0';
			if (symlinkat(target, ddir, de->d_name) < 0)
				r = -errno;
		} else if (S_ISREG(st.st_mode)) {
			r = copy_file(sdir, ddir, de->d_name, st.st_mode);
		} else if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int s2 = -EBADF, d2 = -EBADF;

			s2 = openat(sdir, de->d_name,
				    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (s2 < 0)
				continue; /* unreadable directory: leave it out */
			if (mkdirat(ddir, de->d_name, 0755) < 0) {
				r = -errno;
				break;
			}
			d2 = openat(ddir, de->d_name,
				    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (d2 < 0) {
				r = -errno;
				break;
			}
			r = copy_tree(s2, d2, sub, depth + 1);
			fchmod(d2, st.st_mode & 0777);
		}
		/* devices, fifos, sockets: never */
	}
	closedir(d);
	return r;
}

static unsigned long long mtime_of(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return 0;
	return (unsigned long long)st.st_mtim.tv_sec * 1000000000ULL +
	       (unsigned long long)st.st_mtim.tv_nsec;
}

static int write_new(int dfd, const char *name, const char *content)
{
	_cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (fd < 0)
		return -errno;
	return ts_write_all(fd, content, strlen(content));
}

/* Build a layer in a temp dir with fill(), then rename it into place atomically. A
 * concurrent builder that wins the race is fine: both results are equivalent. */
static int build_layer(const char *root, const char *name, int (*fill)(int dfd, const void *ud),
		       const void *ud, char *ret, size_t len, struct ts_error *err)
{
	char images[4096], tmp[4200], final[4200];
	_cleanup_close_ int dfd = -EBADF;
	int r;

	if (ts_path_join(images, sizeof(images), root, "images") < 0 ||
	    ts_path_join(final, sizeof(final), images, name) < 0 || strlen(final) >= len)
		return ts_err(err, -ENAMETOOLONG, "image path too long");
	snprintf(ret, len, "%s", final);
	if (access(final, F_OK) == 0)
		return 0;
	r = ts_mkdir_p(AT_FDCWD, images, 0700);
	if (r < 0)
		return ts_err_errno(err, r, "create `%s`", images);
	snprintf(tmp, sizeof(tmp), "%s/.tmp-%s-XXXXXX", images, name);
	if (!mkdtemp(tmp))
		return ts_err_errno(err, -errno, "create temp layer in `%s`", images);
	chmod(tmp, 0755);
	dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return ts_err_errno(err, -errno, "open `%s`", tmp);
	r = fill(dfd, ud);
	if (r < 0) {
		ts_rm_rf_at(AT_FDCWD, tmp);
		return ts_err_errno(err, r, "build image layer `%s`", name);
	}
	if (rename(tmp, final) < 0) {
		int e = errno;

		ts_rm_rf_at(AT_FDCWD, tmp);
		if (e != ENOTEMPTY && e != EEXIST)
			return ts_err_errno(err, -e, "install image layer `%s`", final);
	}
	return 0;
}

/*
 * The sandbox's /etc/hosts: the host's loopback entries for localhost's names, in the
 * host's order, so that `localhost` resolves as it does outside (a host with only
 * `127.0.0.1 localhost` must not get ::1 first inside: a client that does not fall back,
 * such as node's net.connect with autoSelectFamily off, would miss an IPv4 server), and
 * the sandbox's own name. Nothing else of the host's file (its names, its LAN) is copied.
 */
static void hosts_content(char *out, size_t len)
{
	static const char *const names[] = { "localhost",     "localhost.localdomain",
					     "localhost4",    "localhost4.localdomain4",
					     "localhost6",    "localhost6.localdomain6",
					     "ip6-localhost", "ip6-loopback" };
	_cleanup_free_ char *host = NULL;
	size_t used = 0;
	bool any = false;
	char *line, *save = NULL;

	out[0] = '\0';
	if (ts_read_file_at(AT_FDCWD, "/etc/hosts", 65536, &host, NULL) < 0)
		host = NULL;
	for (line = host ? strtok_r(host, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *hash = strchr(line, '#'), *tok, *tsave = NULL, *addr;
		char kept[512] = "";
		size_t k = 0;

		if (hash)
			*hash = '\0';
		addr = strtok_r(line, " \t", &tsave);
		if (!addr || (strncmp(addr, "127.", 4) != 0 && strcmp(addr, "::1") != 0) ||
		    strlen(addr) > 15)
			continue;
		while ((tok = strtok_r(NULL, " \t", &tsave))) {
			for (size_t i = 0; i < ELEMENTSOF(names); i++)
				if (!strcmp(tok, names[i]) && k + strlen(tok) + 2 < sizeof(kept))
					k += (size_t)snprintf(kept + k, sizeof(kept) - k, " %s",
							      tok);
		}
		if (k && used < len)
			used += (size_t)snprintf(out + used, len - used, "%s\t%s\n", addr,
						 kept + 1);
		any |= k > 0;
	}
	if (!any && used < len)
		used += (size_t)snprintf(out + used, len - used, "127.0.0.1\tlocalhost\n");
	if (used < len)
		snprintf(out + used, len - used, "127.0.0.1\tsandbox\n::1\tsandbox\n");
}

/* FNV-1a of the sandbox's /etc/hosts: part of the layers' names, so a host whose
 * /etc/hosts changes gets new ones. */
static unsigned long long hosts_hash(void)
{
	char content[8192];
	unsigned long long h = 1469598103934665603ULL;

	hosts_content(content, sizeof(content));
	for (const char *c = content; *c; c++) {
		h ^= (unsigned char)*c;
		h *= 1099511628211ULL;
	}
	return h;
}

/* The identity files, into dfd (etc/ and home/ may exist already). */
static int write_identity(int dfd)
{
	char hosts[8192];
	_cleanup_close_ int etc = -EBADF;
	int r;

	if ((mkdirat(dfd, "etc", 0755) < 0 && errno != EEXIST) ||
	    (mkdirat(dfd, "home", 0755) < 0 && errno != EEXIST) ||
	    mkdirat(dfd, "home/user", 0755) < 0)
		return -errno;
	etc = openat(dfd, "etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (etc < 0)
		return -errno;
	if ((r = write_new(etc, "passwd",
			   "root:x:0:0:root:/root:/bin/bash\n"
			   "user:x:1000:1000:user:/home/user:/bin/bash\n"
			   "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")) < 0 ||
	    (r = write_new(etc, "group",
			   "root:x:0:\ntty:x:5:\nusers:x:100:user\nuser:x:1000:\n"
			   "nogroup:x:65534:\n")) < 0 ||
	    (r = write_new(etc, "hostname", "sandbox\n")) < 0)
		return r;
	hosts_content(hosts, sizeof(hosts));
	if ((r = write_new(etc, "hosts", hosts)) < 0)
		return r;
	return 0;
}

/* The layer put on top of an image directory: identity files and every mount point, so
 * that a read-only overlay of the image needs nothing created in it. */
static int fill_identity(int dfd, const void *ud)
{
	for (size_t i = 0; i < ELEMENTSOF(mount_points); i++)
		if (mkdirat(dfd, mount_points[i].name, 0755) < 0 ||
		    fchmodat(dfd, mount_points[i].name, mount_points[i].mode, 0) < 0)
			return -errno;
	return write_identity(dfd);
}

/* The host image is one layer (the identity files included), so that a sandbox whose
 * root is read-only needs a single bind mount of it and no overlay. */
static int fill_host(int dfd, const void *ud)
{
	_cleanup_close_ int src = -EBADF, etc = -EBADF;
	int r;

	for (size_t i = 0; i < ELEMENTSOF(mount_points); i++)
		if (mkdirat(dfd, mount_points[i].name, 0755) < 0 ||
		    fchmodat(dfd, mount_points[i].name, mount_points[i].mode, 0) < 0)
			return -errno;
	for (size_t i = 0; i < ELEMENTSOF(usr_links); i++) {
		char path[64], target[256];
		struct stat st;
		ssize_t n;

		snprintf(path, sizeof(path), "/%s", usr_links[i]);
		if (lstat(path, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			n = readlink(path, target, sizeof(target) - 1);
			if (n < 0)
				return -errno;
			target[n] = '\0';
			if (symlinkat(target, dfd, usr_links[i]) < 0)
				return -errno;
		} else if (S_ISDIR(st.st_mode) && mkdirat(dfd, usr_links[i], 0755) < 0) {
			return -errno;
		}
	}
	src = open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (src < 0)
		return -errno;
	if (mkdirat(dfd, "etc", 0755) < 0)
		return -errno;
	etc = openat(dfd, "etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (etc < 0)
		return -errno;
	r = copy_tree(src, etc, "", 0);
	if (r < 0)
		return r;
	return write_identity(dfd);
}

static int add_identity(const char *root, struct ts_image *img, struct ts_error *err)
{
	char name[64];

	snprintf(name, sizeof(name), "identity-%s-%016llx", TS_IDENTITY_VERSION, hosts_hash());
	return build_layer(root, name, fill_identity, NULL, img->lowers[img->n_lowers++],
			   sizeof(img->lowers[0]), err);
}

int ts_image_host(const char *root, struct ts_image *img, struct ts_error *err)
{
	static const char *const watched[] = { "/etc", "/etc/alternatives", "/etc/ssl/certs",
					       "/etc/ld.so.conf.d", "/etc/ld.so.cache" };
	unsigned long long h = 1469598103934665603ULL; /* FNV-1a over the mtimes */
	char name[64];
	int r;

	memset(img, 0, sizeof(*img));
	img->host = true;
	for (size_t i = 0; i < ELEMENTSOF(watched); i++) {
		unsigned long long m = mtime_of(watched[i]);

		for (int b = 0; b < 8; b++) {
			h ^= (m >> (8 * b)) & 0xff;
			h *= 1099511628211ULL;
		}
	}
	h ^= hosts_hash();
	h *= 1099511628211ULL;
	snprintf(name, sizeof(name), "host%s-%016llx", TS_IDENTITY_VERSION, h);
	r = build_layer(root, name, fill_host, NULL, img->lowers[img->n_lowers++],
			sizeof(img->lowers[0]), err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(usr_links); i++) {
		char path[64];
		struct stat st;

		snprintf(path, sizeof(path), "/%s", usr_links[i]);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			snprintf(img->host_dirs[img->n_host_dirs++], sizeof(img->host_dirs[0]),
				 "%s", usr_links[i]);
	}
	return 0;
}

int ts_image_store(const char *root, const char *name, const char *pin, struct ts_image *img,
		   struct ts_error *err)
{
	/* the identity layer goes first, and the sudo layer may still go on top */
	struct ts_oci_use u = { .lowers = &img->lowers[1],
				.max = TS_IMAGE_MAX_LOWERS - 2,
				.env = img->env,
				.env_len = sizeof(img->env),
				.hold = img->hold };
	int r;

	memset(img, 0, sizeof(*img));
	if (!ts_oci_name_valid(name))
		return ts_err(err, -EINVAL,
			      "image `%s` is neither an absolute path nor an image name", name);
	r = add_identity(root, img, err);
	if (r < 0)
		return r;
	r = ts_oci_use(root, name, pin, &u, err);
	if (r < 0)
		return r;
	img->n_lowers += u.n;
	img->env_len = u.env_used;
	img->n_hold = u.n_hold;
	return 0;
}

void ts_image_release(struct ts_image *img)
{
	for (size_t i = 0; i < img->n_hold; i++)
		close(img->hold[i]);
	img->n_hold = 0;
}

int ts_image_dir(const char *root, const char *dir, struct ts_image *img, struct ts_error *err)
{
	struct stat st;
	int r;

	if (dir[0] != '/')
		return ts_image_store(root, dir, NULL, img, err);
	memset(img, 0, sizeof(*img));
	if (stat(dir, &st) < 0)
		return ts_err_errno(err, -errno, "image `%s`", dir);
	if (!S_ISDIR(st.st_mode))
		return ts_err(err, -ENOTDIR, "image `%s` is not a directory", dir);
	r = add_identity(root, img, err);
	if (r < 0)
		return r;
	snprintf(img->lowers[img->n_lowers++], sizeof(img->lowers[0]), "%s", dir);
	return 0;
}

/* usr/bin/sudo: a copy of the program (never setuid: nothing in a sandbox could use it) */
static int fill_sudo(int dfd, const void *ud)
{
	const char *bin = ud, *slash = strrchr(bin, '/');
	_cleanup_free_ char *dir = strndup(bin, slash && slash > bin ? (size_t)(slash - bin) : 1);
	_cleanup_close_ int sdir = -EBADF, bdir = -EBADF;
	int r;

	if (!dir || !slash)
		return -EINVAL;
	if (mkdirat(dfd, "usr", 0755) < 0 || mkdirat(dfd, "usr/bin", 0755) < 0)
		return -errno;
	sdir = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	bdir = openat(dfd, "usr/bin", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sdir < 0 || bdir < 0)
		return -errno;
	r = copy_file(sdir, bdir, slash + 1, 0755);
	if (r < 0)
		return r;
	if (faccessat(bdir, slash + 1, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return -EACCES; /* copy_file skips what it cannot read */
	if (renameat(bdir, slash + 1, bdir, "sudo") < 0)
		return -errno;
	return 0;
}

int ts_image_add_sudo(const char *root, const char *sudo_bin, struct ts_image *img, char *usr_layer,
		      size_t len, struct ts_error *err)
{
	unsigned long long h = 1469598103934665603ULL, v[7];
	char name[64], layer[4096];
	struct stat st;
	int r;

	if (!sudo_bin[0])
		return ts_err(err, -ENOENT, "`toren-sandbox-sudo` not found (policy `sudo: true`)");
	if (stat(sudo_bin, &st) < 0)
		return ts_err_errno(err, -errno, "`%s`", sudo_bin);
	v[0] = st.st_dev;
	v[1] = st.st_ino;
	v[2] = (unsigned long long)st.st_size;
	v[3] = (unsigned long long)st.st_mtim.tv_sec;
	v[4] = (unsigned long long)st.st_mtim.tv_nsec;
	v[5] = (unsigned long long)st.st_ctim.tv_sec;
	v[6] = (unsigned long long)st.st_ctim.tv_nsec;
	for (size_t i = 0; i < ELEMENTSOF(v); i++)
		for (int b = 0; b < 8; b++) {
			h ^= (v[i] >> (8 * b)) & 0xff;
			h *= 1099511628211ULL;
		}
	snprintf(name, sizeof(name), "sudo-%016llx", h);
	r = build_layer(root, name, fill_sudo, sudo_bin, layer, sizeof(layer), err);
	if (r < 0)
		return r;
	usr_layer[0] = '\0';
	if (img->host) {
		if ((size_t)snprintf(usr_layer, len, "%s/usr", layer) >= len)
			return ts_err(err, -ENAMETOOLONG, "image path too long");
		return 0;
	}
	/* a directory image: the layer goes on top of its lower layers */
	if (img->n_lowers >= TS_IMAGE_MAX_LOWERS)
		return ts_err(err, -E2BIG, "too many image layers");
	memmove(img->lowers[1], img->lowers[0], img->n_lowers * sizeof(img->lowers[0]));
	snprintf(img->lowers[0], sizeof(img->lowers[0]), "%s", layer);
	img->n_lowers++;
	return 0;
}
