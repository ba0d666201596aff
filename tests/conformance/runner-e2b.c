/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The conformance runner of the e2b backend: starts `toren-sandbox serve` on two loopback
 * ports (control plane, envd) over the fresh TOREN_SANDBOX_ROOT run.sh made, points the
 * e2b backend at it (E2B_API_URL, E2B_SANDBOX_URL, a dummy E2B_API_KEY: serve on
 * loopback with no tokens takes any key) and runs the same scenario list as the local
 * runner through it. Every call crosses libcurl, HTTP/1.1, serve's routes and the local
 * backend behind them; a scenario that passes locally and fails here is a difference of
 * the wire, on one side or the other.
 *
 * usage: conformance-e2b [SCENARIO-GLOB...]   (through run.sh, as conformance-local)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conformance.h"
#include "tap.h"
#include "util.h"

extern char **environ;

#define SERVE_UP_MS 20000 /* serve must accept within this */

/* A loopback port nothing listens on now (bound and released: serve takes it next). */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(s, (struct sockaddr *)&a, &al) == 0)
		port = ntohs(a.sin_port);
	if (s >= 0)
		close(s);
	return port;
}

static bool accepting(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons((uint16_t)port) };
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool up = s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)) == 0;

	if (s >= 0)
		close(s);
	return up;
}

/* serve, with the local backend behind it and no E2B settings (it must not open the e2b
 * backend itself: TOREN_SANDBOX=auto with E2B_API_KEY set would point it at itself). */
static int start_serve(const char *cli, int api, int envd, pid_t *ret, struct ts_error *err)
{
	char listen[64], envd_listen[64];
	char *argv[] = { (char *)cli,	  "serve",     "--listen", listen,
			 "--envd-listen", envd_listen, NULL };
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int e;

	snprintf(listen, sizeof(listen), "127.0.0.1:%d", api);
	snprintf(envd_listen, sizeof(envd_listen), "127.0.0.1:%d", envd);
	setenv("TOREN_SANDBOX", "local", 1);
	unsetenv("E2B_API_KEY");
	unsetenv("E2B_API_URL");
	unsetenv("E2B_SANDBOX_URL");
	unsetenv("E2B_DOMAIN");
	unsetenv("E2B_DEBUG");
	/* what it says goes to stderr: stdout is TAP */
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, 2, 1);
	e = posix_spawn(&pid, cli, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (e)
		return ts_err_errno(err, -e, "spawn `%s serve`", cli);
	for (int waited = 0; waited < SERVE_UP_MS; waited += 50) {
		int status;

		if (accepting(api) && accepting(envd)) {
			*ret = pid;
			return 0;
		}
		if (waitpid(pid, &status, WNOHANG) == pid)
			return ts_err(err, -ECHILD, "`toren-sandbox serve` ended (status %d)",
				      status);
		nanosleep(&(struct timespec){ .tv_nsec = 50000000 }, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return ts_err(err, -ETIMEDOUT, "`toren-sandbox serve` did not listen in %d s",
		      SERVE_UP_MS / 1000);
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
	char dir[4096], cli[4200], url[64], envd_url[64];
	struct conf_runner r = { .name = "e2b", .expire = expire_serve };
	int rc, api = free_port(), envd = free_port();
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
	if (api < 0 || envd < 0 || api == envd) {
		printf("1..1\nnot ok 1 - no free loopback ports for serve\n");
		return 1;
	}
	if (start_serve(cli, api, envd, &serve, &err) < 0) {
		printf("1..1\nnot ok 1 - start serve: %s\n", err.msg);
		return 1;
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", api);
	snprintf(envd_url, sizeof(envd_url), "http://127.0.0.1:%d", envd);
	setenv("TOREN_SANDBOX", "e2b", 1);
	setenv("E2B_API_KEY", "e2b_0000000000000000000000000000000000000000", 1);
	setenv("E2B_API_URL", url, 1);
	setenv("E2B_SANDBOX_URL", envd_url, 1);
	if (ts_backend_open(NULL, &b, &err) < 0) {
		printf("1..1\nnot ok 1 - open the e2b backend: %s\n", err.msg);
		kill(serve, SIGTERM);
		waitpid(serve, NULL, 0);
		return 1;
	}
	r.b = b;
	/* E2B's common ground: processes as root through the user option (serve's local
	 * backend has a root inside only when root made the sandbox, as locally) */
	if (mode && !strcmp(mode, "root"))
		r.caps |= CONF_CAP_ROOT;
	rc = conf_run(&r, argv + 1, (size_t)(argc - 1));
	ts_backend_free(b);
	kill(serve, SIGTERM);
	waitpid(serve, NULL, 0);
	return rc;
}
