/* SPDX-License-Identifier: Apache-2.0 */
/* Small parsers and helpers every layer relies on. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "idmap-plan.h"
#include "strv.h"
#include "tap.h"
#include "util.h"

/* A chain of directories far deeper than fds allow (a sandbox makes one in no time), with
 * files and side branches on the way, under a small RLIMIT_NOFILE. */
static void rm_deep(const char *dir)
{
	struct rlimit old, low = { 32, 32 };
	char path[4096];
	int fd, top, made = 0, r;

	snprintf(path, sizeof(path), "%s/deep", dir);
	if (mkdir(path, 0755) < 0 || (top = open(path, O_RDONLY | O_DIRECTORY)) < 0) {
		ok(false, "rm -rf deep: set up");
		return;
	}
	fd = dup(top);
	for (int i = 0; i < 3000; i++) {
		int sub;

		if (mkdirat(fd, "d", 0755) < 0 ||
		    (sub = openat(fd, "d", O_RDONLY | O_DIRECTORY)) < 0)
			break;
		if (i % 100 == 0) {
			close(openat(fd, "f", O_CREAT | O_WRONLY, 0644));
			mkdirat(fd, "side", 0700);
			mkdirat(fd, ".ts-rm-deep-0", 0700); /* a name the removal uses itself */
		}
		close(fd);
		fd = sub;
		made++;
	}
	close(fd);
	close(top);
	getrlimit(RLIMIT_NOFILE, &old);
	setrlimit(RLIMIT_NOFILE, &low);
	r = ts_rm_rf_at(AT_FDCWD, path);
	ok(made == 3000 && r == 0 && access(path, F_OK) < 0,
	   "rm -rf removes a tree 3000 levels deep with RLIMIT_NOFILE 32 (%d made, %s)", made,
	   strerror(-r));
	setrlimit(RLIMIT_NOFILE, &old);
}

/* ts_self_cgroup against the lines of /proc/self/cgroup, read here on their own. */
static void self_cgroup(void)
{
	char *data = NULL, *save = NULL, got[4096] = "";
	bool v2 = false;

	ok(ts_self_cgroup("no-such-controller", got, sizeof(got)) == -ENOENT,
	   "self cgroup: an unknown controller is ENOENT");
	if (ts_read_file_at(AT_FDCWD, "/proc/self/cgroup", 65536, &data, NULL) < 0) {
		skip(1, "/proc/self/cgroup unreadable");
		return;
	}
	for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *ctrl;

		if (!c2)
			continue;
		*c2 = '\0';
		/* the first controller of a v1 line, or "" for the v2 line */
		ctrl = c1 + 1;
		ctrl[strcspn(ctrl, ",")] = '\0';
		if (!strncmp(ctrl, "name=", 5))
			continue;
		v2 |= !ctrl[0];
		got[0] = '\0';
		ok(ts_self_cgroup(ctrl, got, sizeof(got)) == 0 && !strcmp(got, c2 + 1),
		   "self cgroup of `%s` is `%s` (got `%s`)", ctrl[0] ? ctrl : "(v2)", c2 + 1, got);
		ok(ts_self_cgroup(ctrl, got, strlen(c2 + 1)) == -ENAMETOOLONG,
		   "self cgroup of `%s`: a buffer one byte short is ENAMETOOLONG",
		   ctrl[0] ? ctrl : "(v2)");
	}
	if (!v2)
		ok(ts_self_cgroup("", got, sizeof(got)) == -ENOENT, "self cgroup: no v2 line");
	free(data);
}

int main(void)
{
	unsigned long long v = 0;
	unsigned long s = 0, c = 0;
	char buf[256], dir[] = "/tmp/ts-unit-XXXXXX", path[512];
	struct ts_strv sv = { 0 };
	int fd;

	plan(0);
	ok(ts_parse_size("512M", &v) == 0 && v == 512ULL << 20, "size 512M");
	ok(ts_parse_size("1GiB", &v) == 0 && v == 1ULL << 30, "size 1GiB");
	ok(ts_parse_size("4096", &v) == 0 && v == 4096, "size plain");
	ok(ts_parse_size("-1", &v) == -EINVAL, "size negative refused");
	ok(ts_parse_size("12X", &v) == -EINVAL, "size bad suffix refused");
	ok(ts_parse_size("99999999999999999999", &v) < 0, "size overflow refused");
	ok(ts_parse_size("17179869184T", &v) == -EOVERFLOW, "size multiply overflow refused");
	ok(ts_parse_size("999999999T", &v) == -EOVERFLOW, "size too large says so");
	ok(ts_parse_duration_ms("99999999999999999999", &v) == -EOVERFLOW,
	   "duration too large says so");
	ok(ts_parse_ull("42", &v) == 0 && v == 42, "ull");
	ok(ts_parse_ull("4 2", &v) == -EINVAL, "ull with space refused");
	ok(ts_parse_ull("", &v) == -EINVAL, "ull empty refused");
	ok(ts_parse_duration_ms("1.5", &v) == 0 && v == 1500, "duration 1.5");
	ok(ts_parse_duration_ms("5m", &v) == 0 && v == 300000, "duration 5m");
	ok(ts_parse_duration_ms("250ms", &v) == 0 && v == 250, "duration 250ms");
	ok(ts_parse_duration_ms("1y", &v) == -EINVAL, "duration bad unit refused");
	ok(ts_parse_duration_ms("nan", &v) == -EINVAL, "duration nan refused");
	ok(ts_env_name_valid("GIT_AUTHOR_NAME"), "env name valid");
	ok(!ts_env_name_valid("1X") && !ts_env_name_valid("A-B") && !ts_env_name_valid(""),
	   "env names invalid");
	ok(!ts_env_name_valid("A=B"), "env name with = invalid");

	ok(ts_shell_quote("plain/path-1.0", buf, sizeof(buf)) == 0 &&
		   !strcmp(buf, "plain/path-1.0"),
	   "quote plain");
	ok(ts_shell_quote("it's $x", buf, sizeof(buf)) == 0 && !strcmp(buf, "'it'\\''s $x'"),
	   "quote single quote and dollar");
	ok(ts_shell_quote("", buf, sizeof(buf)) == 0 && !strcmp(buf, "''"), "quote empty");
	ok(ts_shell_quote("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa b", buf, 8) == -ENAMETOOLONG,
	   "quote bounded");
	ok(ts_strv_push(&sv, "a") == 0 && ts_strv_pushf(&sv, "%d", 7) == 0 && sv.n == 2 &&
		   !strcmp(sv.v[1], "7") && sv.v[2] == NULL,
	   "strv push");
	ts_strv_clear(&sv);
	ok(sv.v == NULL && sv.n == 0, "strv clear");

	self_cgroup();

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/subuid", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ok(fd >= 0 &&
		   write(fd, "alice:100000:65536\n1001:200000:10\nbad line\nbob:x:y\n", 51) == 51,
	   "write subuid fixture");
	close(fd);
	ok(ts_subid_lookup(path, "alice", 5000, 2000, &s, &c) == 0 && s == 100000 && c == 65536,
	   "subid by name");
	ok(ts_subid_lookup(path, "nobody", 1001, 1, &s, &c) == 0 && s == 200000 && c == 10,
	   "subid by uid");
	ok(ts_subid_lookup(path, "nobody", 1001, 2000, &s, &c) == -ENOENT,
	   "subid range too small refused");
	ok(ts_subid_lookup(path, "bob", 77, 1, &s, &c) == -ENOENT, "subid malformed ignored");

	snprintf(path, sizeof(path), "%s/a/b/c", dir);
	ok(ts_mkdir_p(AT_FDCWD, path, 0755) == 0, "mkdir -p");
	snprintf(path, sizeof(path), "%s/a/link", dir);
	ok(symlink("/etc", path) == 0, "plant symlink to /etc");
	snprintf(path, sizeof(path), "%s/a", dir);
	ok(ts_rm_rf_at(AT_FDCWD, path) == 0 && access(path, F_OK) < 0 &&
		   access("/etc/hostname", F_OK) == 0,
	   "rm -rf removes the tree and never follows a symlink");
	rm_deep(dir);
	ok(ts_rm_rf_at(AT_FDCWD, dir) == 0, "rm -rf temp dir");

	/* text from a sandbox on a terminal: controls and broken UTF-8 become `?` */
	{
		static const struct {
			const char *in, *want, *what;
		} cases[] = {
			{ "plain text", "plain text", "plain text kept" },
			{ "a\x1b[31mb", "a?[31mb", "ESC (C0) replaced" },
			{ "del\x7f", "del?", "DEL replaced" },
			{ "\xc2\x9b"
			  "2J",
			  "??2J", "C1 CSI as UTF-8 replaced" },
			{ "\x9b"
			  "2J",
			  "?2J", "raw 8-bit CSI (0x9b) replaced" },
			{ "x\x85y\x9dz", "x?y?z", "raw 8-bit NEL and OSC replaced" },
			{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
			  "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
			  "valid UTF-8 (2, 3, 4 bytes) kept" },
			{ "\xc3", "?", "truncated sequence replaced" },
			{ "\xc0\x9b", "??", "overlong encoding of CSI replaced" },
			{ "\xe0\x82\x9b", "???", "3-byte overlong replaced" },
			{ "\xed\xa0\x80", "???", "UTF-16 surrogate replaced" },
			{ "\xf4\x90\x80\x80", "????", "beyond U+10FFFF replaced" },
			{ "\xc2\xa0nbsp", "\xc2\xa0nbsp", "U+00A0 (not C1) kept" },
			{ "a\xe2\x80\xaetxt.exe", "a???txt.exe",
			  "U+202E right-to-left override replaced" },
			{ "\xe2\x81\xa6x\xe2\x81\xa9", "???x???",
			  "U+2066/U+2069 isolates replaced" },
			{ "z\xe2\x80\x8bw", "z???w", "U+200B zero-width space replaced" },
			{ "\xef\xbb\xbf"
			  "bom",
			  "???bom", "U+FEFF replaced" },
			{ "\xe2\x80\x94 dash", "\xe2\x80\x94 dash", "U+2014 (visible) kept" },
		};

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			snprintf(buf, sizeof(buf), "%s", cases[i].in);
			ts_sanitize_text(buf);
			ok(!strcmp(buf, cases[i].want), "sanitize: %s", cases[i].what);
		}
	}
	return done();
}
