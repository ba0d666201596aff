/* SPDX-License-Identifier: Apache-2.0 */
/*
 * serve's pulls (src/server/pulls.c) stopping: a pull stalled inside curl (a registry on
 * loopback that sends half a manifest and then nothing) is cancelled by ts_pulls_free,
 * which returns only once its thread has ended (this process is left with its one
 * thread), well within TS_PULLS_STOP_S; the job is answered -ESHUTDOWN and the store has
 * no image by that name.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "loop.h"
#include "oci-store.h"
#include "pulls.h"
#include "tap.h"
#include "util.h"

static int threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct answer {
	int calls, r;
};

static void on_done(void *userdata, int r, const char *msg)
{
	struct answer *a = userdata;

	(void)msg;
	a->calls++;
	a->r = r;
}

int main(void)
{
	char root[] = "/tmp/ts-test-pulls-XXXXXX", ref[128], buf[4096];
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	struct ts_error err = { 0 };
	struct ts_loop *loop = NULL;
	struct ts_pulls *p = NULL;
	struct answer a = { 0 };
	struct pollfd pfd;
	int ls, c = -1, before;
	double t0, took;
	static const char half[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				   "Content-Length: 4096\r\n\r\n{\"schemaVersion\":";

	plan(0);
	if (!mkdtemp(root))
		return perror("mkdtemp"), 1;
	ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 4) < 0 ||
	    getsockname(ls, (struct sockaddr *)&sa, &sl) < 0)
		return perror("listen on loopback"), 1;
	snprintf(ref, sizeof(ref), "127.0.0.1:%u/x/y:1", ntohs(sa.sin_port));
	if (!ok(ts_loop_new(&loop, &err) == 0 && ts_pulls_new(loop, root, 0, &p, &err) == 0,
		"pulls made (%s)", err.msg))
		return exit_status();
	before = threads();
	ok(ts_pulls_start(p, ref, on_done, &a, &err) == 0, "a pull of %s starts (%s)", ref,
	   err.msg);
	/* the pull's thread asks for the manifest: half an answer, then nothing */
	pfd = (struct pollfd){ .fd = ls, .events = POLLIN };
	if (poll(&pfd, 1, 20000) == 1)
		c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
	ok(c >= 0 && read(c, buf, sizeof(buf)) > 0 &&
		   write(c, half, sizeof(half) - 1) == (ssize_t)sizeof(half) - 1,
	   "the registry is asked for the manifest and stalls half-way");
	usleep(300 * 1000);
	ok(threads() == before + 1, "the pull's thread is in its download (%d threads)", threads());
	t0 = now();
	ts_pulls_free(p);
	took = now() - t0;
	ok(a.calls == 1 && a.r == -ESHUTDOWN, "the job is answered once, -ESHUTDOWN (%d, %d)",
	   a.calls, a.r);
	/* a joined thread's task can stay listed in /proc a moment after its exit woke the
	 * join (the kernel clears its tid before the task is released); a thread left
	 * running would stay, stalled on the registry, far longer than this wait */
	for (int i = 0; i < 100 && threads() != before; i++)
		usleep(10 * 1000);
	ok(threads() == before, "ts_pulls_free returns with the pull's thread ended (%d threads)",
	   threads());
	ok(took < TS_PULLS_STOP_S, "within %.1f s (the bound is %d s)", took, TS_PULLS_STOP_S);
	ok(!ts_oci_has(root, ref), "the store has no image of the cancelled pull");
	if (c >= 0)
		close(c);
	close(ls);
	ts_loop_free(loop);
	ts_rm_rf_at(AT_FDCWD, root);
	return done();
}
