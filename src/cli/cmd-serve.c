/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toren-sandbox serve: E2B's control plane, envd and /v1 REST over local sandboxes, in
 * this one process (src/server/). Prints one line when it listens (the addresses, with the
 * real ports when 0 was asked) and runs until SIGINT or SIGTERM. Socket activation:
 * systemd's LISTEN_FDS with LISTEN_FDNAMES naming `control` and `envd`.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "commands.h"
#include "server.h"
#include "tokens.h"
#include "util.h"

#define SD_LISTEN_FDS_START 3

static void usage(FILE *f)
{
	fputs("usage: toren-sandbox serve [OPTIONS]\n"
	      "\n"
	      "Serve E2B's API (control plane and envd) and /v1 REST over this machine's\n"
	      "sandboxes, so unmodified E2B SDKs can use them: point E2B_API_URL at --listen\n"
	      "and E2B_SANDBOX_URL at --envd-listen.\n"
	      "  --listen ADDR       control plane and /v1 (default 127.0.0.1:3000)\n"
	      "  --envd-listen ADDR  envd (default 127.0.0.1:49983)\n"
	      "  --socket PATH       also serve the control plane and /v1 on a unix socket\n"
	      "  --tokens-file FILE  access tokens (without: any caller, loopback only)\n"
	      "  --add-token NAME    add a token to --tokens-file, print its secret once, exit\n"
	      "  --scopes LIST       the new token's scopes: sandboxes:read, sandboxes:run,\n"
	      "                      files:read, files:write, approvals (comma-separated)\n"
	      "  --e2b-key KEY       also map this E2B API key (X-API-KEY) to the new token\n"
	      "  --pull REGISTRY     a create may pull its template from REGISTRY (host[:port],\n"
	      "                      repeatable; `*`: any registry not on a loopback or\n"
	      "                      private address); without: serve pulls nothing\n"
	      "  --pull-max-size SIZE the most one pull downloads, and each of its layers\n"
	      "                      unpacks to (default 8G)\n"
	      "  --pool [v1:][TEMPLATE=]N keep N sandboxes of TEMPLATE (default base) started\n"
	      "                      for E2B creates (v1: for /v1 creates; repeatable; N <= 32\n"
	      "                      each, 64 in all)\n"
	      "  --quiet             print nothing when listening\n"
	      "  -h, --help          show this help\n"
	      "ADDR is HOST:PORT, [IPv6]:PORT or unix:PATH; port 0 picks a free one.\n",
	      f);
}

struct serve_cli {
	bool quiet;
};

static void ready(void *userdata, const char *control, const char *envd)
{
	struct serve_cli *c = userdata;

	if (c->quiet)
		return;
	printf("toren-sandbox serve: control plane on %s, envd on %s\n", control, envd);
	fflush(stdout);
}

static void warn(void *userdata, bool verbose_only, const char *msg)
{
	ts_cli_warn(false, verbose_only, msg);
}

/* systemd socket activation: the fds named control and envd (in that order if unnamed). */
static void activation_fds(int *control, int *envd)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	const char *names = getenv("LISTEN_FDNAMES");
	long n;

	if (!pid || !fds || strtol(pid, NULL, 10) != (long)getpid())
		return;
	n = strtol(fds, NULL, 10);
	for (long i = 0; i < n && i < 8; i++) {
		char name[64] = "";

		if (names) {
			const char *p = names;

			for (long k = 0; k < i && p; k++) {
				p = strchr(p, ':');
				p = p ? p + 1 : NULL;
			}
			if (p)
				snprintf(name, sizeof(name), "%.*s", (int)strcspn(p, ":"), p);
		}
		if (!strcmp(name, "envd") || (!name[0] && i == 1))
			*envd = SD_LISTEN_FDS_START + (int)i;
		else if (!strcmp(name, "control") || (!name[0] && i == 0))
			*control = SD_LISTEN_FDS_START + (int)i;
	}
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
}

/* --add-token: the secret once on stdout, only its hash into the file (tokens.h). */
static int add_token(const char *file, const char *name, const char *scopes, const char *e2b_key)
{
	char secret[TS_TOKEN_SECRET_LEN + 1];
	struct ts_error err = { 0 };

	if (!file || !name || !scopes) {
		fprintf(stderr, "toren-sandbox serve: --add-token needs NAME, --scopes and "
				"--tokens-file\n");
		return 2;
	}
	if (ts_tokens_add(file, name, scopes, e2b_key, secret, sizeof(secret), &err) < 0) {
		ts_cli_error("serve", &err);
		return 1;
	}
	printf("%s\n", secret);
	fflush(stdout);
	explicit_bzero(secret, sizeof(secret));
	fprintf(stderr,
		"toren-sandbox serve: token `%s` added to `%s`; its secret is printed once and "
		"not stored: keep it (a running serve reads the file at start)\n",
		name, file);
	return 0;
}

int ts_subcmd_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "envd-listen", required_argument, NULL, 'e' },
		{ "socket", required_argument, NULL, 's' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "tokens-file", required_argument, NULL, 't' },
		{ "add-token", required_argument, NULL, 'A' },
		{ "scopes", required_argument, NULL, 'S' },
		{ "e2b-key", required_argument, NULL, 'K' },
		{ "pull", required_argument, NULL, 'P' },
		{ "pull-max-size", required_argument, NULL, 'M' },
		{ "pool", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct serve_cli cli = { 0 };
	const char *pull_from[33] = { 0 };
	size_t n_pull = 0;
	/* bounded by the pool's own limit on templates (pool.h checks the counts) */
	const char *pool[65] = { 0 };
	size_t n_pool = 0;
	struct ts_serve_opts o = {
		.listen = "127.0.0.1:3000",
		.envd_listen = "127.0.0.1:49983",
		.listen_fd = -1,
		.envd_fd = -1,
		.ready = ready,
		.warn = warn,
		.userdata = &cli,
	};
	struct ts_error err = { 0 };
	const char *add = NULL, *scopes = NULL, *e2b_key = NULL;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			o.listen = optarg;
			break;
		case 'e':
			o.envd_listen = optarg;
			break;
		case 's':
			o.socket = optarg;
			break;
		case 'q':
			cli.quiet = true;
			break;
		case 't':
			o.tokens_file = optarg;
			break;
		case 'A':
			add = optarg;
			break;
		case 'S':
			scopes = optarg;
			break;
		case 'K':
			e2b_key = optarg;
			break;
		case 'P':
			if (n_pull + 1 >= ELEMENTSOF(pull_from)) {
				fprintf(stderr, "toren-sandbox serve: at most %zu --pull\n",
					ELEMENTSOF(pull_from) - 1);
				return 2;
			}
			pull_from[n_pull++] = optarg;
			o.pull_from = pull_from;
			break;
		case 'M': {
			unsigned long long v;

			if (ts_parse_size(optarg, &v) < 0 || v == 0) {
				fprintf(stderr,
					"toren-sandbox serve: --pull-max-size `%s`: a size such as "
					"512M or 8G is expected\n",
					optarg);
				return 2;
			}
			o.pull_max_bytes = v;
			break;
		}
		case 'p':
			if (n_pool + 1 >= ELEMENTSOF(pool)) {
				fprintf(stderr, "toren-sandbox serve: at most %zu --pool\n",
					ELEMENTSOF(pool) - 1);
				return 2;
			}
			pool[n_pool++] = optarg;
			o.pool = pool;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "toren-sandbox serve: unexpected argument `%s`\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (add || scopes || e2b_key)
		return add_token(o.tokens_file, add, scopes, e2b_key);
	/* serve is what E2B_API_KEY points at: "auto" never means e2b here */
	o.backend = getenv("TOREN_SANDBOX");
	if (!o.backend || !strcmp(o.backend, "auto"))
		o.backend = "local";
	activation_fds(&o.listen_fd, &o.envd_fd);
	if (ts_serve(&o, &err) < 0) {
		ts_cli_error("serve", &err);
		return 1;
	}
	return 0;
}
