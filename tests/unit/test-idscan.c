/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ts_idcopy_scan_protected's side of `toren-sandbox-helper --scan-protected`: the paths
 * come from a walk of a tree the sandbox controls, so each is checked before it is used.
 * A fake helper (a shell script) sends good and bad answers: relative paths are taken
 * and sorted; an absolute one, `..`, `.`, an empty component, a trailing `/`, an empty or
 * overlong path, a count that does not match, a missing NUL are refused (EPROTO); the
 * helper's own error comes back as its errno and message; an answer it should not give
 * is quoted on one line, its control characters as `?`.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "idcopy.h"
#include "protect.h"
#include "tap.h"

static char base[256];

/* A helper that checks its mode, then runs body (sh) with fd 4 its paths' pipe. */
static void fake(const char *body)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/helper", base);
	unlink(p);
	f = fopen(p, "w");
	if (!f)
		return;
	fprintf(f, "#!/bin/sh\n[ \"$1\" = --scan-protected ] || exit 22\n%s\n", body);
	fclose(f);
	chmod(p, 0755);
}

static int scan(const char *body, char ***v, size_t *n, struct ts_error *err)
{
	struct ts_idmap_plan plan = {
		.uid = { { 0, 100000, 1000 } },
		.gid = { { 0, 100000, 1000 } },
		.n_uid = 1,
		.n_gid = 1,
		.mode = "subid",
	};
	char *patterns[] = { ".env" };
	char helper[512];
	int fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;

	fake(body);
	snprintf(helper, sizeof(helper), "%s/helper", base);
	memset(err, 0, sizeof(*err));
	*v = NULL;
	*n = 0;
	r = ts_idcopy_scan_protected(helper, &plan, fd, patterns, 1, 100, 0, v, n, err);
	close(fd);
	return r;
}

static void refused(const char *body, const char *what)
{
	struct ts_error err;
	char **v;
	size_t n;
	int r = scan(body, &v, &n, &err);

	ok(r == -EPROTO && v == NULL, "%s is refused (%d: %s)", what, r, err.msg);
	ts_strv_free(v);
}

int main(void)
{
	struct ts_error err;
	char **v, body[8000], *long_name;
	size_t n;
	int r;

	plan(0);
	snprintf(base, sizeof(base), "/tmp/ts-idscan-XXXXXX");
	if (!mkdtemp(base)) {
		ok(0, "mkdtemp");
		return exit_status();
	}

	r = scan("printf 'z/b.env\\000a/.env\\000' >&4; echo paths 2", &v, &n, &err);
	ok(r == 0 && n == 2 && v && !strcmp(v[0], "a/.env") && !strcmp(v[1], "z/b.env") && !v[2],
	   "good paths are taken, sorted (%d: %s)", r, err.msg);
	ts_strv_free(v);
	r = scan("echo paths 0", &v, &n, &err);
	ok(r == 0 && n == 0 && v && !v[0], "no paths: an empty list (%d: %s)", r, err.msg);
	ts_strv_free(v);
	r = scan("echo 'toren-sandbox-helper: scan protected paths: open `x`: Permission denied' "
		 ">&2; exit 13",
		 &v, &n, &err);
	ok(r == -EACCES && !strcmp(err.msg, "scan protected paths: open `x`: Permission denied"),
	   "the helper's error is its errno and message (%d: %s)", r, err.msg);
	r = scan("echo ok", &v, &n, &err);
	ok(r == -EIO && strstr(err.msg, "said `ok`"),
	   "an answer that is not `paths N` is refused, quoted without its newline (%d: %s)", r,
	   err.msg);
	/* what a walk of the sandbox's tree could make the helper say goes to a terminal */
	r = scan("printf 'a\\033[2Jb\\nc\\n'", &v, &n, &err);
	ok(r == -EIO && strstr(err.msg, "said `a?[2Jb?c`") && !strchr(err.msg, '\n') &&
		   !strchr(err.msg, '\033'),
	   "an unexpected answer is quoted on one line, control characters as `?` (%d: %s)", r,
	   err.msg);

	refused("printf '/etc/shadow\\000' >&4; echo paths 1", "an absolute path");
	r = scan("printf '../\\033[2J\\000' >&4; echo paths 1", &v, &n, &err);
	ok(r == -EPROTO && strstr(err.msg, "bad path `../?[2J`"),
	   "a bad path is quoted with its control characters as `?` (%d: %s)", r, err.msg);
	ts_strv_free(v);
	refused("printf '../x.env\\000' >&4; echo paths 1", "a `..` component at the start");
	refused("printf 'a/../../x.env\\000' >&4; echo paths 1", "a `..` component inside");
	refused("printf 'a/..\\000' >&4; echo paths 1", "a `..` component at the end");
	refused("printf './x.env\\000' >&4; echo paths 1", "a `.` component");
	refused("printf 'a//x.env\\000' >&4; echo paths 1", "an empty component");
	refused("printf 'a/\\000' >&4; echo paths 1", "a trailing `/`");
	refused("printf '\\000' >&4; echo paths 1", "an empty path");
	refused("printf 'a.env' >&4; echo paths 1", "a path without its NUL");
	refused("printf 'a.env\\000b.env\\000' >&4; echo paths 1", "more paths than counted");
	refused("printf 'a.env\\000' >&4; echo paths 2", "fewer paths than counted");
	long_name = malloc(4200);
	if (long_name) {
		memset(long_name, 'a', 4199);
		long_name[4199] = '\0';
		snprintf(body, sizeof(body), "printf '%s\\000' >&4; echo paths 1", long_name);
		refused(body, "a path longer than a --protect destination may be");
		free(long_name);
	}
	/* more paths than max_entries (100) */
	refused("i=0; while [ $i -lt 101 ]; do printf 'f%d\\000' $i >&4; i=$((i+1)); done; echo "
		"paths 101",
		"more paths than max_entries");

	{
		char p[512];

		snprintf(p, sizeof(p), "%s/helper", base);
		unlink(p);
		rmdir(base);
	}
	return done();
}
