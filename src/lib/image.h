/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/*
 * Root file system images, as overlay lower layers (top first).
 *
 * The host image (the default) is the host's /usr, bound read-only by the helper, plus a
 * cached layer `images/host<v>-<stamp>/` holding a filtered copy of the host's /etc (no
 * shadow, gshadow, sudoers, ssh host keys, machine-id, subuid/subgid), the merged-usr
 * symlinks (/bin -> usr/bin, ...) and empty mount points. The stamp changes when /etc
 * changes (its mtime and that of a few subdirectories), so an updated host gets a new
 * layer; old ones can be removed by hand.
 *
 * The identity files, a synthesized /etc/passwd and /etc/group with `root` (0) and
 * `user` (1000), /etc/hostname, /etc/hosts and /home/user, are part of the host layer
 * (so a read-only root is one bind mount, no overlay); an image given as a directory
 * gets them as the layer `images/identity-<v>/` on top of it.
 */

#define TS_IMAGE_MAX_LOWERS 16

struct ts_image {
	char lowers[TS_IMAGE_MAX_LOWERS][4096];
	size_t n_lowers;
	bool host;	       /* the host image: bind /usr and mirror /bin etc. */
	char host_dirs[6][16]; /* top-level dirs that are real directories on the host
				       (not merged-usr symlinks): bound read-only */
	size_t n_host_dirs;
	/* an imported image's config Env ("NAME=VALUE\0" each; not HOME, USER, LOGNAME,
	 * TERM): set over the sandbox's base environment, under the policy's env */
	char env[8192];
	size_t env_len;
	/* an image of the store: its layer directories, held open with a shared flock so
	 * that `image prune` leaves them alone while the sandbox runs (ts_image_release) */
	int hold[TS_IMAGE_MAX_LOWERS];
	size_t n_hold;
};

/* Prepare the host image under root (cached). 0 or -errno. */
int ts_image_host(const char *root, struct ts_image *img, struct ts_error *err);

/*
 * Add the sandbox's sudo (the program at sudo_bin) to img as usr/bin/sudo, from a cached
 * layer `images/sudo-<stamp>/` (the stamp: the program's device, inode, size and times):
 * for the host image as *usr_layer, an overlay lower layer to put over the host's /usr;
 * for a directory image as its top lower layer (usr_layer is then ""). 0 or -errno.
 */
int ts_image_add_sudo(const char *root, const char *sudo_bin, struct ts_image *img, char *usr_layer,
		      size_t len, struct ts_error *err);

/* Use the root file system in dir (an absolute path to a directory) as the image, or
 * the image of that name in the local store (oci-store.h): its layers under the identity
 * layer. */
int ts_image_dir(const char *root, const char *dir, struct ts_image *img, struct ts_error *err);

/*
 * The image name of the local store (oci-store.h), or the layers pin records (ts_oci_pin's
 * text: a durable sandbox's, valid after `image rm`), under the identity layer; its layer
 * directories held (img->hold) until ts_image_release. 0 or -errno.
 */
int ts_image_store(const char *root, const char *name, const char *pin, struct ts_image *img,
		   struct ts_error *err);

/* Close what img holds (its store layers' locks). */
void ts_image_release(struct ts_image *img);
