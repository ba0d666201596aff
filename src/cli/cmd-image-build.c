/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toren-sandbox image build: a recipe of rootfs/ turned by mmdebstrap into a local image
 * (image-build.h); `image build base` makes the image `base`, the E2B `base` template's.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "commands.h"
#include "image-build.h"
#include "paths.h"
#include "strv.h"
#include "util.h"

static void usage(FILE *f)
{
	fputs("usage: toren-sandbox image build [OPTIONS] RECIPE\n"
	      "\n"
	      "Build the root file system RECIPE describes (a recipe of the rootfs directory,\n"
	      "such as `base`, or a path to a recipe directory) from Debian's packages with\n"
	      "mmdebstrap, and record it as a local image (default name: the recipe's).\n"
	      "\n"
	      "      --name NAME       the image's name\n"
	      "      --mirror URL      the Debian mirror (default: the host's apt sources for\n"
	      "                        the suite, else http://deb.debian.org/debian)\n"
	      "      --suite SUITE     the Debian release (default: the host's)\n"
	      "      --packages A,B    more packages\n"
	      "      --apt-cache DIR   keep downloaded packages in DIR for the next build\n"
	      "                        (default: $TOREN_SANDBOX_ROOT/cache/apt)\n"
	      "      --no-apt-cache    download everything, keep nothing\n"
	      "  -q, --quiet           no mmdebstrap output\n"
	      "  -v, --verbose         show each entry the import neutralises\n"
	      "  -h, --help            show this help\n",
	      f);
}

struct warn_count {
	bool verbose;
	unsigned long n;
};

static void warn_entry(void *userdata, const char *msg)
{
	struct warn_count *w = userdata;

	w->n++;
	if (w->verbose)
		fprintf(stderr, "toren-sandbox image build: warning: %s\n", msg);
}

int ts_subcmd_image_build(int argc, char **argv)
{
	enum {
		O_NAME = 256,
		O_MIRROR,
		O_SUITE,
		O_PACKAGES,
		O_CACHE,
		O_NO_CACHE
	};
	static const struct option longopts[] = { { "name", required_argument, NULL, O_NAME },
						  { "mirror", required_argument, NULL, O_MIRROR },
						  { "suite", required_argument, NULL, O_SUITE },
						  { "packages", required_argument, NULL,
						    O_PACKAGES },
						  { "apt-cache", required_argument, NULL, O_CACHE },
						  { "no-apt-cache", no_argument, NULL, O_NO_CACHE },
						  { "quiet", no_argument, NULL, 'q' },
						  { "verbose", no_argument, NULL, 'v' },
						  { "help", no_argument, NULL, 'h' },
						  {} };
	struct ts_image_build_opts o = { .log_fd = 2 };
	struct ts_image_build_info info;
	struct warn_count wc = { 0 };
	struct ts_paths paths;
	struct ts_error err = { 0 };
	_cleanup_(ts_strv_freep) struct ts_strv pkgs = { 0 };
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "qvh", longopts, NULL)) != -1) {
		switch (c) {
		case O_NAME:
			o.name = optarg;
			break;
		case O_MIRROR:
			o.mirror = optarg;
			break;
		case O_SUITE:
			o.suite = optarg;
			break;
		case O_PACKAGES: {
			_cleanup_free_ char *copy = strdup(optarg);
			char *save = NULL;

			if (!copy)
				return 1;
			for (char *p = strtok_r(copy, ",", &save); p;
			     p = strtok_r(NULL, ",", &save))
				if (ts_strv_push(&pkgs, p) < 0)
					return 1;
			break;
		}
		case O_CACHE:
			if (optarg[0] != '/') {
				fprintf(stderr,
					"toren-sandbox image build: --apt-cache `%s`: an absolute "
					"path\n",
					optarg);
				return 2;
			}
			o.apt_cache = optarg;
			break;
		case O_NO_CACHE:
			o.apt_cache = "";
			break;
		case 'q':
			o.log_fd = -1;
			break;
		case 'v':
			wc.verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 1) {
		usage(stderr);
		return 2;
	}
	if (ts_paths_init(&paths, &err) < 0) {
		fprintf(stderr, "toren-sandbox image build: %s\n", err.msg);
		return 1;
	}
	o.root = paths.root;
	o.recipe = argv[optind];
	o.packages = pkgs.v;
	o.warn = warn_entry;
	o.userdata = &wc;
	r = ts_image_build(&o, &info, &err);
	if (r < 0) {
		fprintf(stderr, "toren-sandbox image build: %s\n", err.msg);
		return 1;
	}
	if (wc.n && !wc.verbose)
		fprintf(stderr,
			"toren-sandbox image build: %lu entries neutralised at import (device "
			"nodes, setuid bits; -v names them)\n",
			wc.n);
	printf("%s %s\n", o.name ? o.name : strrchr(info.recipe, '/') + 1, info.digest);
	return 0;
}
