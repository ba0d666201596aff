/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toren-sandbox image pull, and the pull `run --image REF` and `create --image REF` do
 * when the store has no image of that name: the progress bar (a terminal only) and the
 * summary.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "oci-ref.h"
#include "oci-store.h"
#include "paths.h"
#include "util.h"

#define REDRAW_MS 100 /* 10 times a second at most */

struct bar {
	const char *ref;
	bool draw;  /* stderr is a terminal and not --quiet */
	bool drawn; /* a line is on the terminal */
	bool said_wait;
	unsigned long long start_ms, last_ms;
	struct ts_oci_progress last;
};

static void on_warn(void *userdata, const char *msg)
{
	struct bar *b = userdata;

	if (b->drawn)
		fputs("\r\033[K", stderr);
	fprintf(stderr, "toren-sandbox image pull: warning: %s\n", msg);
	b->drawn = false;
}

static void on_progress(void *userdata, const struct ts_oci_progress *p)
{
	struct bar *b = userdata;
	unsigned long long now = ts_now_ms();
	char done[16], total[16], rate[16];
	double secs;

	b->last = *p;
	if (!b->draw)
		return;
	if (p->phase == TS_OCI_PHASE_WAIT && !b->said_wait) {
		fprintf(stderr, "%s: waiting for another pull or import of the store\n", b->ref);
		b->said_wait = true;
		return;
	}
	if (p->phase != TS_OCI_PHASE_DONE && now - b->last_ms < REDRAW_MS)
		return;
	b->last_ms = now;
	secs = (double)(now - b->start_ms) / 1e3;
	ts_cli_size_text(p->bytes_done, done, sizeof(done));
	ts_cli_size_text(p->bytes_total, total, sizeof(total));
	ts_cli_size_text(secs > 0.05 ? (uint64_t)((double)p->bytes_done / secs) : 0, rate,
			 sizeof(rate));
	fprintf(stderr, "\r\033[K%s: layers %zu/%zu (%zu cached)  %s/%s  %s/s%s", b->ref,
		p->layers_done, p->layers, p->layers_cached, done, total, rate,
		p->phase == TS_OCI_PHASE_UNPACK ? "  unpacking" : "");
	b->drawn = true;
}

/* Pull ref as name (NULL: ref); the summary as JSON into *summary when asked. */
static int pull(const char *root, const char *ref, const char *name,
		const struct ts_oci_pull_opts *base, bool quiet, json_t **summary, const char *cmd)
{
	struct bar b = { .ref = ref, .draw = !quiet && isatty(STDERR_FILENO) };
	struct ts_oci_pull_opts o = *base;
	struct ts_error err = { 0 };
	char digest[80];
	int r;

	b.start_ms = ts_now_ms();
	o.warn = on_warn;
	o.progress = on_progress;
	o.userdata = &b;
	r = ts_oci_pull(root, ref, name, &o, digest, sizeof(digest), &err);
	if (b.drawn)
		fputs("\r\033[K", stderr);
	if (r < 0) {
		fprintf(stderr, "toren-sandbox %s: pull `%s`: %s\n", cmd, ref, err.msg);
		return r;
	}
	if (b.draw) {
		char done[16];

		ts_cli_size_text(b.last.bytes_done, done, sizeof(done));
		fprintf(stderr, "%s: %zu layers (%zu already here), %s downloaded in %.1f s\n", ref,
			b.last.layers, b.last.layers_cached, done,
			(double)(ts_now_ms() - b.start_ms) / 1e3);
	}
	if (summary)
		*summary = json_pack("{s:s,s:s,s:I,s:I,s:I}", "name", name ?: ref, "digest", digest,
				     "layers", (json_int_t)b.last.layers, "cached",
				     (json_int_t)b.last.layers_cached, "downloaded",
				     (json_int_t)b.last.bytes_done);
	return 0;
}

int ts_cli_image_ensure(const char *root, const char *image, const char *cmd)
{
	struct ts_oci_pull_opts o = { 0 };
	struct ts_oci_ref ref;
	struct ts_error err = { 0 };

	if (!image || image[0] == '/' || ts_oci_has(root, image) ||
	    !ts_oci_ref_looks_remote(image) || ts_oci_ref_parse(image, &ref, &err) < 0)
		return 0; /* a directory, a stored image, or not a reference: the launch decides */
	return pull(root, image, NULL, &o, false, NULL, cmd) < 0 ? -1 : 0;
}

int ts_cli_layer_max(const char *cmd, const char *arg, unsigned long long *ret)
{
	if (ts_parse_size(arg, ret) < 0 || *ret == 0) {
		fprintf(stderr, "toren-sandbox %s: --max-size `%s`: a size such as 512M or 2G\n",
			cmd, arg);
		return -1;
	}
	return 0;
}

static void usage(FILE *f)
{
	fputs("usage: toren-sandbox image pull [OPTIONS] REFERENCE [NAME]\n"
	      "\n"
	      "Pull REFERENCE ([REGISTRY/]PATH[:TAG][@sha256:DIGEST]) from its registry into the\n"
	      "local image store as NAME (default: REFERENCE as given).\n"
	      "\n"
	      "      --insecure        plain http to this registry (a loopback registry always\n"
	      "                        is plain http)\n"
	      "      --auth-file FILE  credentials (default: $REGISTRY_AUTH_FILE, else\n"
	      "                        $DOCKER_CONFIG/config.json, else ~/.docker/config.json)\n"
	      "      --max-size SIZE   refuse a layer that unpacks to more than SIZE (16G)\n"
	      "  -q, --quiet           no progress bar\n"
	      "      --json            print {name, digest, layers, cached, downloaded}\n"
	      "  -h, --help            show this help\n",
	      f);
}

int ts_cli_image_pull(int argc, char **argv)
{
	static const struct option longopts[] = { { "insecure", no_argument, NULL, 'i' },
						  { "auth-file", required_argument, NULL, 'a' },
						  { "max-size", required_argument, NULL, 'm' },
						  { "quiet", no_argument, NULL, 'q' },
						  { "json", no_argument, NULL, 'j' },
						  { "help", no_argument, NULL, 'h' },
						  {} };
	struct ts_oci_pull_opts o = { 0 };
	struct ts_paths paths;
	struct ts_error err = { 0 };
	unsigned long long max_size = 0;
	bool quiet = false, as_json = false;
	json_t *summary = NULL;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			o.insecure = true;
			break;
		case 'a':
			o.auth_file = optarg;
			break;
		case 'm':
			if (ts_cli_layer_max("image pull", optarg, &max_size) < 0)
				return 2;
			o.max_bytes = max_size;
			break;
		case 'q':
			quiet = true;
			break;
		case 'j':
			as_json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind < 1 || argc - optind > 2) {
		usage(stderr);
		return 2;
	}
	if (ts_paths_init(&paths, &err) < 0) {
		fprintf(stderr, "toren-sandbox image pull: %s\n", err.msg);
		return 1;
	}
	r = pull(paths.root, argv[optind], argc - optind == 2 ? argv[optind + 1] : NULL, &o, quiet,
		 &summary, "image pull");
	if (r < 0)
		return 1;
	if (as_json)
		ts_cli_print_json(summary, true);
	else
		printf("%s %s\n", json_string_value(json_object_get(summary, "name")),
		       json_string_value(json_object_get(summary, "digest")));
	json_decref(summary);
	return 0;
}
