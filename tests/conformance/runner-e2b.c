/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The conformance runner of the e2b backend: starts `toren-sandbox serve` on two loopback
 * ports (control plane, envd) over the fresh TOREN_SANDBOX_ROOT run.sh made, points the
 * e2b backend at it (E2B_API_URL, E2B_SANDBOX_URL, and as E2B_API_KEY the secret of the
 * one token of a tokens file made for the run, so that a wrong key can be shown to fail)
 * and runs the same scenario list as the local runner through it. Every call crosses libcurl, HTTP/1.1, serve's routes and the local
 * backend behind them; a scenario that passes locally and fails here is a difference of
 * the wire, on one side or the other.
 *
 * usage: conformance-e2b [SCENARIO-GLOB...]   (through run.sh, as conformance-local)
 */
#include <errno.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conformance.h"
#include "tap.h"
#include "util.h"

extern char **environ;

#define SERVE_UP_MS 20000 /* serve must say it listens within this */

/*
 * A tokens file with one token of every scope (tokens.h): serve then refuses any other
 * key, so wrong credentials can be shown to fail. *secret gets the token's secret, which
 * is also what an E2B SDK would send as E2B_API_KEY.
 */
static int write_tokens(const char *path, char *secret, size_t len, struct ts_error *err)
{
	uint8_t raw[32], digest[SHA256_DIGEST_SIZE];
	struct sha256_ctx h;
	char line[512], hex[2 * SHA256_DIGEST_SIZE + 1];
	int fd, n;

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return ts_err_errno(err, -errno, "getrandom");
	n = snprintf(secret, len, "e2b_");
	for (size_t i = 0; i < sizeof(raw); i++)
		n += snprintf(secret + n, len - (size_t)n, "%02x", raw[i]);
	sha256_init(&h);
	sha256_update(&h, strlen(secret), (const uint8_t *)secret);
	sha256_digest(&h, sizeof(digest), digest);
	for (size_t i = 0; i < sizeof(digest); i++)
		snprintf(hex + 2 * i, 3, "%02x", digest[i]);
	n = snprintf(line, sizeof(line),
		     "conformance sha256:%s sandboxes:read,sandboxes:run,files:read,files:write\n",
		     hex);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return ts_err_errno(err, -errno, "create `%s`", path);
	if (ts_write_all(fd, line, (size_t)n) < 0) {
		close(fd);
		return ts_err_errno(err, -errno, "write `%s`", path);
	}
	close(fd);
	return 0;
}

/* The same backend with a key serve does not know. */
static int open_wrong_key(struct conf_runner *r, struct ts_backend **ret, struct ts_error *err)
{
	const char *key = r->userdata;
	int rc;

	setenv("E2B_API_KEY",
	       "e2b_00000000000000000000000000000000000000000000000000000000deadbeef", 1);
	rc = ts_backend_open("e2b", ret, err);
	setenv("E2B_API_KEY", key, 1);
	return rc;
}

/* "toren-sandbox serve: control plane on 127.0.0.1:P, envd on 127.0.0.1:Q" */
static int parse_ready(const char *line, char *api, char *envd, size_t len)
{
	const char *a = strstr(line, "control plane on "), *e = strstr(line, ", envd on ");
	size_t al, el;

	if (!a || !e || e < a)
		return -1;
	a += strlen("control plane on ");
	al = (size_t)(e - a);
	e += strlen(", envd on ");
	el = strcspn(e, "\r\n");
	if (al == 0 || el == 0 || al >= len || el >= len)
		return -1;
	snprintf(api, len, "http://%.*s", (int)al, a);
	snprintf(envd, len, "http://%.*s", (int)el, e);
	return 0;
}

/*
 * serve on port 0 of loopback for both planes (it prints the ports it got), with the
 * local backend behind it and no E2B settings: TOREN_SANDBOX=auto with E2B_API_KEY set
 * would point it at itself. *out_fd keeps its stdout open (a closed pipe would kill it
 * at its next line).
 */
static int start_serve(const char *cli, const char *tokens, char *api, char *envd, size_t len,
		       pid_t *ret, int *out_fd, struct ts_error *err)
{
	char *argv[] = { (char *)cli,	  "serve",	   "--listen",
			 "127.0.0.1:0",	  "--envd-listen", "127.0.0.1:0",
			 "--tokens-file", (char *)tokens,  NULL };
	posix_spawn_file_actions_t fa;
	const char *root = getenv("TOREN_SANDBOX_ROOT");
	char line[512], log_path[4200] = "", pid_path[4200] = "";
	size_t n = 0;
	int p[2], e;
	pid_t pid;

	if (root) {
		snprintf(log_path, sizeof(log_path), "%s/serve.log", root);
		snprintf(pid_path, sizeof(pid_path), "%s/serve.pid", root);
	}

	if (pipe2(p, O_CLOEXEC) < 0)
		return ts_err_errno(err, -errno, "pipe");
	setenv("TOREN_SANDBOX", "local", 1);
	unsetenv("E2B_API_KEY");
	unsetenv("E2B_API_URL");
	unsetenv("E2B_SANDBOX_URL");
	unsetenv("E2B_DOMAIN");
	unsetenv("E2B_DEBUG");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	/* its stderr goes to a file: were the runner to bail out, a serve left holding the
	 * test's own stderr would keep meson waiting for the end of it */
	if (log_path[0])
		posix_spawn_file_actions_addopen(&fa, 2, log_path, O_WRONLY | O_CREAT | O_APPEND,
						 0600);
	e = posix_spawn(&pid, cli, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	/* run.sh's clean-up stops it by this pid if the runner cannot */
	if (e == 0 && pid_path[0]) {
		FILE *f = fopen(pid_path, "w");

		if (f) {
			fprintf(f, "%d\n", (int)pid);
			fclose(f);
		}
	}
	if (e) {
		close(p[0]);
		return ts_err_errno(err, -e, "spawn `%s serve`", cli);
	}
	for (;;) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		ssize_t r;

		if (poll(&pf, 1, SERVE_UP_MS) <= 0) {
			e = -ETIMEDOUT;
			break;
		}
		r = read(p[0], line + n, 1);
		if (r <= 0) {
			e = -ECHILD;
			break;
		}
		if (line[n] == '\n' || n + 2 >= sizeof(line)) {
			line[n + 1] = '\0';
			e = parse_ready(line, api, envd, len) < 0 ? -EPROTO : 0;
			break;
		}
		n++;
	}
	if (e < 0) {
		close(p[0]);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return ts_err(err, e, "`toren-sandbox serve` did not say it listens (%s)",
			      e == -EPROTO ? "an unexpected line" : "no line");
	}
	*out_fd = p[0];
	*ret = pid;
	return 0;
}

/* serve runs its own reaper: a deadline that passed is acted on within its period. */
static int expire_serve(struct conf_runner *r, struct ts_error *err)
{
	nanosleep(&(struct timespec){ .tv_sec = 2 }, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	struct ts_error err = { 0 };
	struct ts_backend *b = NULL;
	const char *mode = getenv("TS_MODE");
	char dir[4096], cli[4200], url[256], envd_url[256], tokens[4200], key[128];
	struct conf_runner r = { .name = "e2b",
				 .expire = expire_serve,
				 .open_unauthenticated = open_wrong_key };
	int rc, out_fd = -1;
	pid_t serve = 0;

	if (!getenv("TOREN_SANDBOX_ROOT") || ts_self_dir(dir, sizeof(dir)) < 0) {
		printf("1..0 # SKIP run through run.sh (a staged build and a fresh state root)\n");
		return 0;
	}
	snprintf(cli, sizeof(cli), "%s/toren-sandbox", dir);
	if (access(cli, X_OK) < 0) {
		printf("1..0 # SKIP `%s` missing: run through run.sh\n", cli);
		return 0;
	}
	snprintf(tokens, sizeof(tokens), "%s/serve-tokens", getenv("TOREN_SANDBOX_ROOT"));
	if (write_tokens(tokens, key, sizeof(key), &err) < 0) {
		printf("1..1\nnot ok 1 - a tokens file for serve: %s\n", err.msg);
		return 1;
	}
	r.userdata = key;
	if (start_serve(cli, tokens, url, envd_url, sizeof(url), &serve, &out_fd, &err) < 0) {
		printf("1..1\nnot ok 1 - start serve: %s\n", err.msg);
		return 1;
	}
	diag("serve: control plane %s, envd %s", url, envd_url);
	setenv("TOREN_SANDBOX", "e2b", 1);
	setenv("E2B_API_KEY", key, 1);
	setenv("E2B_API_URL", url, 1);
	setenv("E2B_SANDBOX_URL", envd_url, 1);
	if (ts_backend_open(NULL, &b, &err) < 0) {
		printf("1..1\nnot ok 1 - open the e2b backend: %s\n", err.msg);
		kill(serve, SIGTERM);
		waitpid(serve, NULL, 0);
		return 1;
	}
	r.b = b;
	/* E2B's common ground: processes as root through the user option. serve asks for a
	 * root in every sandbox (E2B's templates have one): root's sandboxes have it, an
	 * ordinary user's through its subordinate ids; under `unshare -r` (one id) none */
	if (mode && (!strcmp(mode, "root") || !strcmp(mode, "user")))
		r.caps |= CONF_CAP_ROOT;
	r.caps |= CONF_CAP_PAUSE | CONF_CAP_AUTH;
	/* in every mode: an ordinary user's sandboxes, of subordinate ids, are copied by the
	 * helper in their own id mapping (idcopy.h) */
	r.caps |= CONF_CAP_SNAPSHOT;
	rc = conf_run(&r, argv + 1, (size_t)(argc - 1));
	ts_backend_free(b);
	kill(serve, SIGTERM);
	waitpid(serve, NULL, 0);
	close(out_fd);
	return rc;
}
