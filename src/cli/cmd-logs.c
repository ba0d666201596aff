/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toren-sandbox logs [-f] ID PROC: the output of a background process, read from
 * $ROOT/<id>/logs/PROC.log (also after the client that started it went away, and after
 * the sandbox stopped). -f follows it until the process has exited.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "commands.h"
#include "procs.h"
#include "sandbox.h"
#include "util.h"

/* Is proc still running? False when the sandbox is gone or does not know it. */
enum proc_state {
	PROC_RUNNING,
	PROC_ENDED,
	SANDBOX_GONE
};

static enum proc_state proc_state(struct ts_sandbox_rec *rec, unsigned long long proc)
{
	struct ts_error err;
	struct ts_proc_info *list = NULL;
	size_t n = 0;
	enum proc_state state = PROC_ENDED;
	int conn;

	if (!ts_sandbox_running(rec))
		return SANDBOX_GONE;
	conn = ts_sandbox_connect(rec, &err);
	if (conn < 0)
		return SANDBOX_GONE;
	if (ts_procs_list(conn, &list, &n, &err) == 0) {
		for (size_t i = 0; i < n; i++)
			if (list[i].proc == proc && list[i].running)
				state = PROC_RUNNING;
	} else {
		state = SANDBOX_GONE;
	}
	free(list);
	close(conn);
	return state;
}

static int copy_out(int fd)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (ts_write_all(STDOUT_FILENO, buf, (size_t)n) < 0)
			return -EPIPE;
	return n < 0 ? -errno : 0;
}

int ts_cmd_logs(int argc, char **argv)
{
	struct ts_store *st;
	struct ts_sandbox_rec rec;
	_cleanup_close_ int dirfd = -EBADF, fd = -EBADF;
	const char *args[2] = { 0 };
	char path[4200], name[32];
	unsigned long long proc;
	bool follow = false;
	enum proc_state ps;
	size_t n_args = 0;
	struct stat sb;
	int code = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--follow"))
			follow = true;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			puts("usage: toren-sandbox logs [-f] ID PROC\n\n"
			     "  -f, --follow  keep printing until the process has exited\n"
			     "  -h, --help    show this help");
			return 0;
		} else if (n_args < 2 && argv[i][0] != '-')
			args[n_args++] = argv[i];
		else {
			fprintf(stderr, "toren-sandbox logs: unexpected `%s`\n", argv[i]);
			return 2;
		}
	}
	if (n_args != 2) {
		fprintf(stderr, "usage: toren-sandbox logs [-f] ID PROC\n");
		return 2;
	}
	if (ts_parse_ull(args[1], &proc) < 0 || proc == 0) {
		fprintf(stderr, "toren-sandbox logs: bad process id `%s`\n", args[1]);
		return 2;
	}
	if (ts_cli_lookup("logs", args[0], &st, &rec) < 0)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	/* init wrote these through its own fd; never follow a link a sandbox could plant */
	snprintf(path, sizeof(path), "%s/logs", rec.dir);
	snprintf(name, sizeof(name), "%llu.log", proc);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd >= 0)
		fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		fprintf(stderr,
			"toren-sandbox logs: no log for process %llu in `%s` (only background "
			"processes, started with exec -d, have one)\n",
			proc, rec.id);
		code = 1;
		goto out;
	}
	for (;;) {
		if (copy_out(fd) < 0)
			break;
		if (!follow)
			break;
		ps = proc_state(&rec, proc);
		if (ps != PROC_RUNNING) {
			copy_out(fd); /* what came between the last read and the exit */
			if (ps == SANDBOX_GONE) {
				fprintf(stderr,
					"toren-sandbox logs: sandbox `%s` stopped while following "
					"process %llu\n",
					rec.id, proc);
				code = 1;
			}
			break;
		}
		usleep(100000);
	}
out:
	ts_sandbox_rec_free(&rec);
	ts_store_close(st);
	return code;
}
