/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The event loop of `serve`: one epoll set, one thread. Watches fds (a listener, a
 * backend handle's fd) and runs timers; callbacks never block for long (a backend's
 * request call is bounded by TS_BE_REPLY_MS). Removing a watch or timer from inside any
 * callback is safe, also the one running.
 */
#include <stdbool.h>
#include <stdint.h>

#include "error.h"

struct ts_loop;
struct ts_loop_fd;
struct ts_loop_timer;

int ts_loop_new(struct ts_loop **ret, struct ts_error *err);
void ts_loop_free(struct ts_loop *l);
/* Run until ts_loop_quit; 0, or -errno when epoll fails. */
int ts_loop_run(struct ts_loop *l, struct ts_error *err);
void ts_loop_quit(struct ts_loop *l);
/* Monotonic milliseconds of this iteration. */
long long ts_loop_now(const struct ts_loop *l);

/* events: POLLIN | POLLOUT (0: watched but paused); fn hears the revents. */
struct ts_loop_fd *ts_loop_add_fd(struct ts_loop *l, int fd, short events,
				  void (*fn)(void *userdata, short revents), void *userdata);
int ts_loop_mod_fd(struct ts_loop_fd *w, short events);
void ts_loop_del_fd(struct ts_loop_fd *w); /* NULL is fine; never closes the fd */

/* Runs once at monotonic time at_ms (ts_loop_now()+ms); rearm from fn as wanted. */
struct ts_loop_timer *ts_loop_add_timer(struct ts_loop *l, long long at_ms,
					void (*fn)(void *userdata), void *userdata);
void ts_loop_timer_set(struct ts_loop_timer *t, long long at_ms); /* re-arms (once) */
void ts_loop_del_timer(struct ts_loop_timer *t);		  /* NULL is fine */
/* Called after every iteration (MHD's run after our callbacks resumed connections). */
int ts_loop_on_idle(struct ts_loop *l, void (*fn)(void *userdata), void *userdata);
void ts_loop_off_idle(struct ts_loop *l, void (*fn)(void *userdata), void *userdata);
