/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * `image build`: a recipe of rootfs/ (a directory: `packages`, one Debian package a line;
 * optional `dpkg.cfg`, dpkg options; mmdebstrap hook scripts named setup*, essential*,
 * customize*) turned by mmdebstrap into a root file system from Debian's packages, written
 * as a tarball into a locked work directory of the image store (ts_oci_workdir) and
 * imported as a one-layer local image (ts_oci_import_tar). Nothing is recorded until the
 * layer is whole: a killed build leaves only its work directory, which the next import or
 * prune removes once no process holds it.
 *
 * mmdebstrap's mode: `root` as root in the initial user namespace (mounts and chroot of
 * its own); `unshare` for anyone else (a user namespace of the caller's subordinate ids,
 * /etc/subuid and /etc/subgid, through newuidmap); refused in a user namespace with one id
 * (`unshare -r`), where packages cannot get their owners.
 */
#include <stddef.h>

#include "error.h"

struct ts_image_build_opts {
	const char *root;      /* the state root */
	const char *recipe;    /* a recipe's name in the rootfs directory (`base`), or a path
			       * to a recipe directory (has a `/`) */
	const char *name;      /* NULL: the recipe's name */
	const char *mirror;    /* NULL: the host's apt sources for the suite, else
			       * deb.debian.org */
	const char *suite;     /* NULL: the host's VERSION_CODENAME, else `stable` */
	char **packages;       /* more packages, NULL-terminated; may be NULL */
	const char *apt_cache; /* .deb files kept between builds; NULL: $ROOT/cache/apt,
				* "": none */
	int log_fd;	       /* mmdebstrap's output goes there; < 0: nowhere */
	void (*warn)(void *userdata, const char *msg); /* neutralised entries of the layer */
	void *userdata;
};

struct ts_image_build_info {
	char digest[80]; /* the manifest's */
	char mode[16];	 /* mmdebstrap's --mode */
	char suite[64];
	char mirror[1024]; /* the first source used */
	char recipe[4096]; /* the recipe directory */
};

/* Run the build and record the image. 0 or -errno (-ENOENT: no mmdebstrap or no such
 * recipe; -EPERM: cannot build in this user namespace; -EIO: mmdebstrap failed). */
int ts_image_build(const struct ts_image_build_opts *o, struct ts_image_build_info *info,
		   struct ts_error *err);

/* The directory recipes are looked up in: $TOREN_SANDBOX_ROOTFS_DIR, else the source
 * tree's rootfs/ from a build tree, else the data dir's. */
int ts_image_build_recipes_dir(char *buf, size_t len, struct ts_error *err);
