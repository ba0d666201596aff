/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The conformance runner of the local backend: opens it in process (TOREN_SANDBOX=local)
 * and runs the scenario list against it. Started by run.sh, which stages this binary next
 * to the CLI, the helper and init (the library finds them next to its executable) and
 * gives it a fresh TOREN_SANDBOX_ROOT; TS_MODE says how it runs (root, user, userns).
 *
 * usage: conformance-local [SCENARIO-GLOB...]
 */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conformance.h"
#include "tap.h"
#include "util.h"

extern char **environ;

/* Deadlines act when something looks at them: locally that is `toren-sandbox reap`. */
static int expire_local(struct conf_runner *r, struct ts_error *err)
{
	const char *cli = r->userdata;
	char *argv[] = { (char *)cli, "reap", NULL };
	pid_t pid;
	int status, e;

	posix_spawn_file_actions_t fa;

	/* what it says goes to stderr: stdout is TAP */
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, 2, 1);
	e = posix_spawn(&pid, cli, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (e)
		return ts_err_errno(err, -e, "spawn `%s reap`", cli);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return ts_err_errno(err, -errno, "wait for `reap`");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return ts_err(err, -EIO, "`toren-sandbox reap` failed (status %d)", status);
	return 0;
}

int main(int argc, char **argv)
{
	struct ts_error err = { 0 };
	struct ts_backend *b = NULL;
	const char *mode = getenv("TS_MODE");
	char dir[4096], cli[4200];
	struct conf_runner r = { .name = "local", .expire = expire_local, .userdata = cli };
	int rc;

	if (!getenv("TOREN_SANDBOX_ROOT") || ts_self_dir(dir, sizeof(dir)) < 0) {
		printf("1..0 # SKIP run through run.sh (a staged build and a fresh state root)\n");
		return 0;
	}
	snprintf(cli, sizeof(cli), "%s/toren-sandbox", dir);
	if (access(cli, X_OK) < 0) {
		printf("1..0 # SKIP `%s` missing: run through run.sh\n", cli);
		return 0;
	}
	setenv("TOREN_SANDBOX", "local", 1);
	if (ts_backend_open(NULL, &b, &err) < 0) {
		printf("1..1\nnot ok 1 - open the local backend: %s\n", err.msg);
		return 1;
	}
	r.b = b;
	r.caps = CONF_CAP_BACKLOG | CONF_CAP_STOP | CONF_CAP_PROC_ID | CONF_CAP_PROC_LOG |
		 CONF_CAP_NO_TIMEOUT | CONF_CAP_MODES | CONF_CAP_PROC_USER | CONF_CAP_PAUSE |
		 CONF_CAP_SNAPSHOT;
	/* a sandbox made with the defaults has a root inside only when root made it: an
	 * ordinary user's has one id, the user's own (idmap-plan.h) */
	if (mode && !strcmp(mode, "root"))
		r.caps |= CONF_CAP_ROOT;
	rc = conf_run(&r, argv + 1, (size_t)(argc - 1));
	ts_backend_free(b);
	return rc;
}
