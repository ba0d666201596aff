// SPDX-License-Identifier: Apache-2.0
/*
 * serve's event loop: epoll for fds, a sorted-on-demand list of timers (few: the reaper,
 * per-stream keepalives and deadlines), idle hooks run after each iteration.
 *
 * Watches and timers are freed lazily: deleting one marks it dead and the loop frees it
 * after the iteration, so a callback may delete anything, itself included, and an epoll
 * event already fetched for a dead watch is skipped.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "cleanup.h"
#include "loop.h"
#include "util.h"

#define LOOP_BATCH 64

struct ts_loop_fd {
	struct ts_loop *loop;
	int fd;
	short events;
	bool dead;
	void (*fn)(void *userdata, short revents);
	void *userdata;
	struct ts_loop_fd *next_dead;
};

struct ts_loop_timer {
	struct ts_loop *loop;
	long long at_ms; /* < 0: not armed */
	bool dead;
	void (*fn)(void *userdata);
	void *userdata;
	struct ts_loop_timer *next;
};

struct idle_hook {
	void (*fn)(void *userdata);
	void *userdata;
};

struct ts_loop {
	int epfd;
	bool quit;
	long long now;
	struct ts_loop_timer *timers; /* all of them, dead ones until swept */
	struct ts_loop_fd *dead_fds;
	struct idle_hook *idle;
	size_t n_idle;
};

static uint32_t to_epoll(short events)
{
	return (events & POLLIN ? EPOLLIN : 0) | (events & POLLOUT ? EPOLLOUT : 0) |
	       (events & POLLRDHUP ? EPOLLRDHUP : 0);
}

static short from_epoll(uint32_t ev)
{
	return (short)((ev & EPOLLIN ? POLLIN : 0) | (ev & EPOLLOUT ? POLLOUT : 0) |
		       (ev & EPOLLERR ? POLLERR : 0) | (ev & EPOLLHUP ? POLLHUP : 0) |
		       (ev & EPOLLRDHUP ? POLLHUP : 0));
}

int ts_loop_new(struct ts_loop **ret, struct ts_error *err)
{
	struct ts_loop *l = calloc(1, sizeof(*l));

	if (!l)
		return ts_err(err, -ENOMEM, "event loop");
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		int r = ts_err_errno(err, -errno, "epoll_create1");

		free(l);
		return r;
	}
	l->now = ts_now_ms();
	*ret = l;
	return 0;
}

static void sweep(struct ts_loop *l)
{
	struct ts_loop_timer **pt = &l->timers;

	while (l->dead_fds) {
		struct ts_loop_fd *w = l->dead_fds;

		l->dead_fds = w->next_dead;
		free(w);
	}
	while (*pt) {
		struct ts_loop_timer *t = *pt;

		if (t->dead) {
			*pt = t->next;
			free(t);
		} else {
			pt = &t->next;
		}
	}
}

void ts_loop_free(struct ts_loop *l)
{
	if (!l)
		return;
	for (struct ts_loop_timer *t = l->timers; t; t = t->next)
		t->dead = true;
	sweep(l);
	if (l->epfd >= 0)
		close(l->epfd);
	free(l->idle);
	free(l);
}

void ts_loop_quit(struct ts_loop *l)
{
	l->quit = true;
}

long long ts_loop_now(const struct ts_loop *l)
{
	return l->now;
}

struct ts_loop_fd *ts_loop_add_fd(struct ts_loop *l, int fd, short events,
				  void (*fn)(void *userdata, short revents), void *userdata)
{
	struct ts_loop_fd *w = calloc(1, sizeof(*w));
	struct epoll_event ev = { 0 };

	if (!w)
		return NULL;
	*w = (struct ts_loop_fd){
		.loop = l, .fd = fd, .events = events, .fn = fn, .userdata = userdata
	};
	ev.events = to_epoll(events);
	ev.data.ptr = w;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		free(w);
		return NULL;
	}
	return w;
}

int ts_loop_mod_fd(struct ts_loop_fd *w, short events)
{
	struct epoll_event ev = { .events = to_epoll(events), .data.ptr = w };

	if (w->events == events)
		return 0;
	if (epoll_ctl(w->loop->epfd, EPOLL_CTL_MOD, w->fd, &ev) < 0)
		return -errno;
	w->events = events;
	return 0;
}

void ts_loop_del_fd(struct ts_loop_fd *w)
{
	if (!w || w->dead)
		return;
	/* the fd may already be closed by its owner: then epoll dropped it itself */
	epoll_ctl(w->loop->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	w->dead = true;
	w->next_dead = w->loop->dead_fds;
	w->loop->dead_fds = w;
}

struct ts_loop_timer *ts_loop_add_timer(struct ts_loop *l, long long at_ms,
					void (*fn)(void *userdata), void *userdata)
{
	struct ts_loop_timer *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	*t = (struct ts_loop_timer){
		.loop = l, .at_ms = at_ms, .fn = fn, .userdata = userdata, .next = l->timers
	};
	l->timers = t;
	return t;
}

void ts_loop_timer_set(struct ts_loop_timer *t, long long at_ms)
{
	t->at_ms = at_ms;
}

void ts_loop_del_timer(struct ts_loop_timer *t)
{
	if (t)
		t->dead = true;
}

int ts_loop_on_idle(struct ts_loop *l, void (*fn)(void *userdata), void *userdata)
{
	struct idle_hook *v = realloc(l->idle, (l->n_idle + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	l->idle = v;
	v[l->n_idle++] = (struct idle_hook){ fn, userdata };
	return 0;
}

void ts_loop_off_idle(struct ts_loop *l, void (*fn)(void *userdata), void *userdata)
{
	for (size_t i = 0; i < l->n_idle; i++) {
		if (l->idle[i].fn == fn && l->idle[i].userdata == userdata) {
			memmove(&l->idle[i], &l->idle[i + 1],
				(l->n_idle - i - 1) * sizeof(l->idle[0]));
			l->n_idle--;
			return;
		}
	}
}

/* ms until the next timer is due (0 when one is), -1 when none is armed. */
static int next_timeout(const struct ts_loop *l)
{
	long long first = -1;

	for (const struct ts_loop_timer *t = l->timers; t; t = t->next)
		if (!t->dead && t->at_ms >= 0 && (first < 0 || t->at_ms < first))
			first = t->at_ms;
	if (first < 0)
		return -1;
	if (first <= l->now)
		return 0;
	return first - l->now > INT_MAX ? INT_MAX : (int)(first - l->now);
}

static void run_timers(struct ts_loop *l)
{
	/* a timer fn may add timers (at the head): they wait for the next round */
	for (struct ts_loop_timer *t = l->timers; t; t = t->next) {
		if (t->dead || t->at_ms < 0 || t->at_ms > l->now)
			continue;
		t->at_ms = -1;
		t->fn(t->userdata);
	}
}

int ts_loop_run(struct ts_loop *l, struct ts_error *err)
{
	struct epoll_event evs[LOOP_BATCH];

	l->quit = false;
	while (!l->quit) {
		int n;

		for (size_t i = 0; i < l->n_idle; i++)
			l->idle[i].fn(l->idle[i].userdata);
		sweep(l);
		if (l->quit)
			break;
		n = epoll_wait(l->epfd, evs, LOOP_BATCH, next_timeout(l));
		if (n < 0 && errno != EINTR)
			return ts_err_errno(err, -errno, "epoll_wait");
		l->now = ts_now_ms();
		for (int i = 0; i < n; i++) {
			struct ts_loop_fd *w = evs[i].data.ptr;

			if (!w->dead)
				w->fn(w->userdata, from_epoll(evs[i].events));
		}
		run_timers(l);
	}
	return 0;
}
