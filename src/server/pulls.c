/* SPDX-License-Identifier: Apache-2.0 */
#include "pulls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "cidr.h"
#include "http.h"
#include "loop.h"
#include "oci-ref.h"
#include "oci-store.h"
#include "server.h"
#include "util.h"

struct job {
	struct ts_pulls *p;
	size_t slot; /* of p->threads */
	char ref[512];
	int r;
	char msg[1024];
	void (*done)(void *userdata, int r, const char *msg);
	void *userdata;
	unsigned refs;	/* the thread's and the loop's (mu) */
	bool delivered; /* done has run (mu) */
	struct job *next_done, *next_all;
};

struct ts_pulls {
	pthread_mutex_t mu;
	int efd;
	struct ts_loop_fd *watch;
	char root[4096];
	uint64_t max_bytes; /* each pull's download, and each of its layers unpacked */
	unsigned refs;	    /* the loop's, plus one per thread (mu) */
	bool stopping;
	size_t running;
	/* the pull threads, joined: a finished one when its slot is taken again, the rest when
	 * serve stops (mu) */
	struct {
		pthread_t t;
		bool used, finished;
	} threads[TS_PULLS_MAX];
	atomic_bool cancel;    /* serve is stopping: every pull gives up (oci-store.h) */
	struct job *done_head; /* finished, not delivered yet */
	struct job *all;       /* every job not delivered yet */
};

static void pulls_destroy(struct ts_pulls *p)
{
	if (p->efd >= 0)
		close(p->efd);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* References (mu held): a job has its thread's, the loop's (until done has run) and the
 * done list's (while on it); serve's pulls have the loop's (until ts_pulls_free), one per
 * thread and one per job on the done list. */
static void job_unref(struct job *j, unsigned n)
{
	j->refs -= n;
	if (j->refs == 0)
		free(j);
}

/* Drop a reference of p and unlock its mutex; the last one frees it. */
static void pulls_unref_unlock(struct ts_pulls *p)
{
	bool last = --p->refs == 0;

	pthread_mutex_unlock(&p->mu);
	if (last)
		pulls_destroy(p);
}

static void unlist(struct ts_pulls *p, struct job *j)
{
	for (struct job **q = &p->all; *q; q = &(*q)->next_all)
		if (*q == j) {
			*q = j->next_all;
			return;
		}
}

static void *pull_main(void *arg)
{
	struct job *j = arg;
	struct ts_pulls *p = j->p;
	/* the operator's credentials are not an API caller's: serve pulls anonymously */
	struct ts_oci_pull_opts o = { .no_credentials = true,
				      .max_bytes = p->max_bytes,
				      .max_download = p->max_bytes,
				      .cancel = &p->cancel };
	struct ts_error err = { 0 };
	char digest[80];
	int r = ts_oci_pull(p->root, j->ref, NULL, &o, digest, sizeof(digest), &err);

	pthread_mutex_lock(&p->mu);
	j->r = r;
	snprintf(j->msg, sizeof(j->msg), "%s", r < 0 ? err.msg : digest);
	p->running--;
	p->threads[j->slot].finished = true;
	if (!p->stopping && !j->delivered) {
		uint64_t one = 1;

		j->next_done = p->done_head;
		p->done_head = j;
		j->refs++; /* the done list's, dropped by the loop */
		p->refs++;
		(void)!write(p->efd, &one, sizeof(one));
	}
	job_unref(j, 1);
	pulls_unref_unlock(p);
	return NULL;
}

static void on_done(void *userdata, short revents)
{
	struct ts_pulls *p = userdata;
	struct job *list;
	uint64_t v;

	(void)revents;
	(void)!read(p->efd, &v, sizeof(v));
	pthread_mutex_lock(&p->mu);
	list = p->done_head;
	p->done_head = NULL;
	pthread_mutex_unlock(&p->mu);
	while (list) {
		struct job *j = list;
		bool deliver;

		list = j->next_done;
		pthread_mutex_lock(&p->mu);
		deliver = !j->delivered;
		if (deliver) {
			j->delivered = true;
			unlist(p, j);
		}
		pthread_mutex_unlock(&p->mu);
		if (deliver)
			j->done(j->userdata, j->r, j->msg);
		pthread_mutex_lock(&p->mu);
		job_unref(j, deliver ? 2 : 1); /* the done list's, and the loop's if delivered */
		pulls_unref_unlock(p);
	}
}

int ts_pulls_new(struct ts_loop *loop, const char *root, uint64_t max_bytes, struct ts_pulls **ret,
		 struct ts_error *err)
{
	struct ts_pulls *p = calloc(1, sizeof(*p));

	if (!p)
		return ts_err(err, -ENOMEM, "out of memory");
	/* libcurl is loaded and initialised by the first pull's ts_reg_open, once and
	 * thread-safely (curl-dl.h): serve runs, pulls aside, where it is not installed */
	pthread_mutex_init(&p->mu, NULL);
	p->refs = 1;
	snprintf(p->root, sizeof(p->root), "%s", root);
	p->max_bytes = max_bytes ? max_bytes : TS_PULLS_DEFAULT_MAX_BYTES;
	p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->efd < 0) {
		int r = ts_err_errno(err, -errno, "eventfd");

		pulls_destroy(p);
		return r;
	}
	p->watch = ts_loop_add_fd(loop, p->efd, POLLIN, on_done, p);
	if (!p->watch) {
		pulls_destroy(p);
		return ts_err(err, -ENOMEM, "watch the pulls' eventfd");
	}
	*ret = p;
	return 0;
}

int ts_pulls_start(struct ts_pulls *p, const char *ref,
		   void (*done)(void *userdata, int r, const char *msg), void *userdata,
		   struct ts_error *err)
{
	struct job *j;
	size_t slot = TS_PULLS_MAX;
	int rc;

	if (strlen(ref) >= sizeof(j->ref))
		return ts_err(err, -ENAMETOOLONG, "image reference too long");
	pthread_mutex_lock(&p->mu);
	if (p->running >= TS_PULLS_MAX) {
		pthread_mutex_unlock(&p->mu);
		return ts_err(err, -EAGAIN, "%d image pulls are running already; try later",
			      TS_PULLS_MAX);
	}
	pthread_mutex_unlock(&p->mu);
	j = calloc(1, sizeof(*j));
	if (!j)
		return ts_err(err, -ENOMEM, "out of memory");
	j->p = p;
	snprintf(j->ref, sizeof(j->ref), "%s", ref);
	j->done = done;
	j->userdata = userdata;
	j->refs = 2; /* the thread's and the loop's */
	pthread_mutex_lock(&p->mu);
	/* a finished thread has only its return left: joined at once */
	for (size_t i = 0; i < TS_PULLS_MAX; i++) {
		if (p->threads[i].used && p->threads[i].finished) {
			pthread_join(p->threads[i].t, NULL);
			p->threads[i].used = false;
		}
		if (!p->threads[i].used && slot == TS_PULLS_MAX)
			slot = i;
	}
	if (slot == TS_PULLS_MAX) { /* fewer than TS_PULLS_MAX run: never */
		pthread_mutex_unlock(&p->mu);
		free(j);
		return ts_err(err, -EAGAIN, "%d image pulls are running already; try later",
			      TS_PULLS_MAX);
	}
	j->slot = slot;
	p->refs++; /* the thread's; the loop's is p's own */
	p->running++;
	j->next_all = p->all;
	p->all = j;
	p->threads[slot].used = true; /* finished is set under mu, after this unlocks */
	p->threads[slot].finished = false;
	rc = pthread_create(&p->threads[slot].t, NULL, pull_main, j);
	if (rc) {
		p->threads[slot].used = false;
		unlist(p, j);
		p->running--;
		p->refs--;
		pthread_mutex_unlock(&p->mu);
		free(j);
		return ts_err(err, -rc, "start a pull thread: %s", strerror(rc));
	}
	pthread_mutex_unlock(&p->mu);
	return 0;
}

/* Join the pull threads, cancelled: each gives up within about a second (oci-store.h),
 * unless it is unpacking a layer; one still running at the deadline is left detached, to
 * end with the process (as a killed pull, it leaves nothing in use). */
static void join_all(struct ts_pulls *p)
{
	struct timespec until;
	pthread_t t[TS_PULLS_MAX];
	size_t n = 0;

	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; i < TS_PULLS_MAX; i++)
		if (p->threads[i].used) {
			t[n++] = p->threads[i].t;
			p->threads[i].used = false;
		}
	pthread_mutex_unlock(&p->mu);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += TS_PULLS_STOP_S;
	for (size_t i = 0; i < n; i++)
		if (pthread_timedjoin_np(t[i], NULL, &until) != 0)
			pthread_detach(t[i]);
}

void ts_pulls_free(struct ts_pulls *p)
{
	struct job *list;

	if (!p)
		return;
	ts_loop_del_fd(p->watch);
	p->watch = NULL;
	atomic_store(&p->cancel, true);
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	list = p->all;
	p->all = NULL;
	for (struct job *j = list; j; j = j->next_all)
		j->delivered = true;
	pthread_mutex_unlock(&p->mu);
	for (struct job *j = list, *next; j; j = next) {
		next = j->next_all;
		j->done(j->userdata, -ESHUTDOWN, "serve is stopping");
		pthread_mutex_lock(&p->mu);
		job_unref(j, 1); /* the loop's */
		pthread_mutex_unlock(&p->mu);
	}
	join_all(p);
	pthread_mutex_lock(&p->mu);
	list = p->done_head;
	p->done_head = NULL;
	while (list) {
		struct job *j = list;

		list = j->next_done;
		job_unref(j, 1); /* the done list's */
		p->refs--;	 /* and its reference of p (never the last: the loop's is left) */
	}
	pulls_unref_unlock(p); /* the loop's */
}

/* A create waiting for its image's pull: answered when the pull ends. */
struct pending {
	struct ts_srv *srv;
	struct ts_req *req;
	void (*handler)(void *ctx, struct ts_req *req);
	void (*fail)(struct ts_req *req, unsigned status, const char *msg);
	bool gone; /* the request ended without an answer (serve stopping) */
};

static void pending_gone(void *userdata)
{
	struct pending *pc = userdata;

	pc->gone = true;
}

static void pending_done(void *userdata, int r, const char *msg)
{
	struct pending *pc = userdata;
	char text[1100];

	if (!pc->gone) {
		/* pc goes below, whatever the answer does: the request must not name it */
		ts_req_defer_forget(pc->req);
		if (r == 0) {
			pc->handler(pc->srv, pc->req);
		} else {
			snprintf(text, sizeof(text), "%s%s",
				 r == -ENOENT || r == -ESHUTDOWN ? ""
								 : "pulling the image failed: ",
				 msg);
			pc->fail(pc->req,
				 r == -ENOENT	   ? 404
				 : r == -ESHUTDOWN ? 503
				 : r == -EFBIG	   ? 507
						   : 502,
				 text);
		}
	}
	free(pc);
}

/*
 * May serve pull image for an API caller? Its registry must be one `--pull` names, or,
 * with `*`, any whose host is a name or a public address: a caller never makes serve
 * speak to this machine's loopback services or the private network (a named loopback
 * registry is the operator's choice). why: the 404's text.
 */
static bool pull_allowed(const char *const *from, const char *image, char *why, size_t len)
{
	struct ts_oci_ref ref;
	struct ts_error err = { 0 };
	char host[256];
	unsigned char a[16];

	if (ts_oci_ref_parse(image, &ref, &err) < 0) {
		snprintf(why, len, "template not found: %s", err.msg);
		return false;
	}
	for (size_t i = 0; from && from[i]; i++)
		if (!strcasecmp(from[i], ref.registry))
			return true;
	snprintf(host, sizeof(host), "%.*s", (int)sizeof(host) - 1,
		 ref.registry[0] == '[' ? ref.registry + 1 : ref.registry);
	host[strcspn(host, ref.registry[0] == '[' ? "]" : ":")] = '\0';
	for (size_t i = 0; from && from[i]; i++) {
		bool v4 = inet_pton(AF_INET, host, a) == 1,
		     v6 = !v4 && inet_pton(AF_INET6, host, a) == 1;

		if (strcmp(from[i], "*") != 0)
			continue;
		if (ref.loopback || !strcasecmp(host, "localhost") ||
		    ((v4 || v6) && ts_cidr_blocked(v4 ? AF_INET : AF_INET6, a)))
			break;
		return true;
	}
	snprintf(why, len,
		 "template `%.300s` not found: this server pulls templates only from the "
		 "registries named by `serve --pull` (`%.100s` is not one)",
		 image, ref.registry);
	ts_sanitize_text(why);
	return false;
}

bool ts_pulls_first(struct ts_srv *srv, struct ts_req *req, const char *image,
		    void (*handler)(void *ctx, struct ts_req *req),
		    void (*fail)(struct ts_req *req, unsigned status, const char *msg))
{
	struct ts_error err = { 0 };
	struct pending *pc;
	char text[600];

	if (!srv->pulls || !image || image[0] == '/' || ts_oci_has(srv->root, image) ||
	    !ts_oci_ref_looks_remote(image))
		return false;
	if (!pull_allowed(srv->opts->pull_from, image, text, sizeof(text))) {
		fail(req, 404, text);
		return true;
	}
	pc = calloc(1, sizeof(*pc));
	if (!pc) {
		fail(req, 500, "out of memory");
		return true;
	}
	*pc = (struct pending){ .srv = srv, .req = req, .handler = handler, .fail = fail };
	/* the pull's end comes through the loop, never before this handler returns */
	if (ts_pulls_start(srv->pulls, image, pending_done, pc, &err) < 0) {
		free(pc);
		fail(req, err.code == EAGAIN ? 503 : 500, err.msg);
		return true;
	}
	if (ts_req_defer(req, pending_gone, pc) < 0) {
		pc->gone = true; /* pending_done frees it */
		fail(req, 500, "cannot defer the request");
	}
	return true;
}
