/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toren-sandbox image pull|import|ls|inspect|rm|prune: the local image store (oci-store.h),
 * whose names `run --image NAME` and `create --image NAME` accept.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "cli.h"
#include "commands.h"
#include "oci-store.h"
#include "paths.h"
#include "util.h"

static void usage(FILE *f)
{
	fputs("usage: toren-sandbox image pull [OPTIONS] REFERENCE [NAME]\n"
	      "       toren-sandbox image import [--max-size SIZE] SOURCE NAME\n"
	      "       toren-sandbox image ls [--json]\n"
	      "       toren-sandbox image inspect NAME\n"
	      "       toren-sandbox image rm NAME...\n"
	      "       toren-sandbox image prune\n"
	      "       toren-sandbox image build [--name NAME] [--mirror URL] [--packages A,B] RECIPE\n"
	      "\n"
	      "  pull     fetch REFERENCE from its registry (see `image pull --help`)\n"
	      "  import   store the image SOURCE as NAME: oci:DIR[:REF] (an OCI image layout;\n"
	      "           REF is its org.opencontainers.image.ref.name) or docker-archive:FILE\n"
	      "           (a `docker save` tarball); every blob is checked against its digest\n"
	      "  ls       the images: name, manifest digest, layers, size on disk\n"
	      "           (--json: one JSON array)\n"
	      "  inspect  one image as JSON: digest, source, manifest, config, layers\n"
	      "  rm       forget images (their layers stay until prune)\n"
	      "  prune    delete the layers and blobs no image name or sandbox uses\n"
	      "  build    a root file system from Debian's packages (mmdebstrap) as an image:\n"
	      "           `image build base` makes `base` (see `image build --help`)\n"
	      "\n"
	      "      --max-size SIZE  (import) refuse a layer that unpacks to more than SIZE\n"
	      "                       (K, M, G suffixes; default 16G)\n"
	      "      --json           (ls) print JSON\n"
	      "  -h, --help           show this help\n",
	      f);
}

static void warn_line(void *userdata, const char *msg)
{
	fprintf(stderr, "toren-sandbox image %s: warning: %s\n", (const char *)userdata, msg);
}

static void fail(const char *sub, const struct ts_error *err)
{
	fprintf(stderr, "toren-sandbox image %s: %s\n", sub, err->msg);
}

int ts_subcmd_image(int argc, char **argv)
{
	static const struct option longopts[] = { { "json", no_argument, NULL, 'j' },
						  { "max-size", required_argument, NULL, 'm' },
						  { "help", no_argument, NULL, 'h' },
						  {} };
	struct ts_paths paths;
	struct ts_error err = { 0 };
	unsigned long long max_size = 0;
	bool as_json = false;
	const char *sub;
	int c, n;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	sub = argv[optind];
	if (!strcmp(sub, "build"))
		return ts_subcmd_image_build(argc - optind, argv + optind);
	argc -= optind;
	argv += optind;
	if (!strcmp(sub, "pull"))
		return ts_cli_image_pull(argc, argv);
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			as_json = true;
			break;
		case 'm':
			if (ts_cli_layer_max("image", optarg, &max_size) < 0)
				return 2;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	n = argc - optind;
	if (ts_paths_init(&paths, &err) < 0) {
		fail(sub, &err);
		return 1;
	}
	if (!strcmp(sub, "import")) {
		char digest[80];

		if (n != 2) {
			usage(stderr);
			return 2;
		}
		if (ts_oci_import(paths.root, argv[optind], argv[optind + 1], max_size, warn_line,
				  (void *)"import", digest, sizeof(digest), &err) < 0) {
			fail(sub, &err);
			return 1;
		}
		printf("%s %s\n", argv[optind + 1], digest);
		return 0;
	}
	if (!strcmp(sub, "ls")) {
		json_t *list = NULL, *e;
		size_t i;

		if (n != 0) {
			usage(stderr);
			return 2;
		}
		if (ts_oci_list(paths.root, &list, &err) < 0) {
			fail(sub, &err);
			return 1;
		}
		if (as_json) {
			json_dumpf(list, stdout, JSON_INDENT(2));
			putchar('\n');
		} else {
			printf("%-24s %-19s %6s %9s\n", "NAME", "DIGEST", "LAYERS", "SIZE");
			json_array_foreach(list, i, e) {
				char size[32];

				ts_cli_size_text(
					(uint64_t)json_integer_value(json_object_get(e, "size")),
					size, sizeof(size));
				printf("%-24s %-19.19s %6lld %9s\n",
				       json_string_value(json_object_get(e, "name")),
				       json_string_value(json_object_get(e, "digest")),
				       (long long)json_integer_value(json_object_get(e, "layers")),
				       size);
			}
		}
		json_decref(list);
		return 0;
	}
	if (!strcmp(sub, "inspect")) {
		json_t *j = NULL;

		if (n != 1) {
			usage(stderr);
			return 2;
		}
		if (ts_oci_inspect(paths.root, argv[optind], &j, &err) < 0) {
			fail(sub, &err);
			return 1;
		}
		json_dumpf(j, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(j);
		return 0;
	}
	if (!strcmp(sub, "rm")) {
		int failed = 0;

		if (n < 1) {
			usage(stderr);
			return 2;
		}
		for (int i = optind; i < argc; i++) {
			if (ts_oci_rm(paths.root, argv[i], &err) < 0) {
				fail(sub, &err);
				failed = 1;
				continue;
			}
			printf("%s\n", argv[i]);
		}
		return failed;
	}
	if (!strcmp(sub, "prune")) {
		uint64_t freed = 0;
		size_t removed = 0;
		char size[32];

		if (n != 0) {
			usage(stderr);
			return 2;
		}
		if (ts_oci_prune(paths.root, &freed, &removed, &err) < 0) {
			fail(sub, &err);
			return 1;
		}
		ts_cli_size_text(freed, size, sizeof(size));
		printf("removed %zu layers and blobs, %s\n", removed, size);
		return 0;
	}
	fprintf(stderr, "toren-sandbox image: unknown subcommand `%s`\n", sub);
	usage(stderr);
	return 2;
}
