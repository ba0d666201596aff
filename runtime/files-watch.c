/* SPDX-License-Identifier: Apache-2.0 */
/*
 * WATCH: inotify on a directory and, up to a depth, its subdirectories, including ones
 * created while the watch runs. Events go out as FILE_EVENT {PATH relative to the watched
 * directory, EVENT}: "create" (IN_CREATE, IN_MOVED_TO), "write" (IN_MODIFY, repeats of
 * one path within one read coalesced), "remove" (IN_DELETE), "rename" (IN_MOVED_FROM,
 * the old name), "chmod" (IN_ATTRIB). The entries of a directory that appear before its
 * watch is in place are announced as "create" too. A queue overflow ends the watch with
 * ERROR EOVERFLOW; the watched directory's removal ends it with END.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "cleanup.h"
#include "files-internal.h"

/* IN_DONT_FOLLOW | IN_ONLYDIR: watch the directory itself, never a symlink's target. */
#define WATCH_MASK                                                                                 \
	(IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO |             \
	 IN_DELETE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)

struct wdir {
	int wd;
	unsigned level; /* 0: the watched directory */
	char *rel;	/* "" for the watched directory */
};

struct watcher {
	struct ts_files *f;
	int ifd;
	int top; /* O_PATH fd of the watched directory */
	unsigned depth;
	struct wdir *w;
	size_t n, cap;
	struct ts_ctl_msg m;
	const char *shown;
};

static struct wdir *find_wd(struct watcher *w, int wd)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->w[i].wd == wd)
			return &w->w[i];
	return NULL;
}

static void drop_at(struct watcher *w, size_t i)
{
	free(w->w[i].rel);
	w->w[i] = w->w[--w->n];
}

static int send_event(struct watcher *w, const char *path, const char *event)
{
	int r;

	ts_ctl_msg_init(&w->m, TS_CTL_FILE_EVENT, w->f->id);
	r = ts_ctl_put_str(&w->m, TS_T_PATH, path);
	if (r == 0)
		r = ts_ctl_put_str(&w->m, TS_T_EVENT, event);
	if (r == 0)
		r = ts_files_send(w->f, &w->m);
	return r;
}

static int join(char *buf, size_t len, const char *a, const char *b)
{
	int n = snprintf(buf, len, "%s%s%s", a, a[0] ? "/" : "", b);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * Watch the directory rel (below the watched one, at level) and, within the depth, the
 * directories below it. With announce, every entry found is sent as "create": it
 * appeared before the watch could see it.
 */
static int add_tree(struct watcher *w, const char *rel, unsigned level, bool announce)
{
	_cleanup_close_ int fd = -EBADF;
	struct dirent *de;
	struct wdir *e;
	DIR *d;
	int wd, r = 0;

	if (w->n >= TS_FILES_WATCH_MAX)
		return -ENOSPC;
	fd = rel[0] ? ts_files_open_step(w->top, rel, O_RDONLY | O_DIRECTORY)
		    : openat(w->top, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return fd == -1 ? -errno : fd;
	/* inotify takes a path: "." after fchdir names exactly the directory we opened */
	if (fchdir(fd) < 0)
		return -errno;
	wd = inotify_add_watch(w->ifd, ".", WATCH_MASK);
	r = wd < 0 ? -errno : 0;
	(void)!fchdir(w->f->root);
	if (r < 0)
		return r;
	e = find_wd(w, wd);
	if (!e) {
		if (w->n == w->cap) {
			size_t ncap = w->cap ? w->cap * 2 : 16;
			struct wdir *v = reallocarray(w->w, ncap, sizeof(*v));

			if (!v)
				return -ENOMEM;
			w->w = v;
			w->cap = ncap;
		}
		e = &w->w[w->n++];
		e->rel = NULL;
	}
	free(e->rel);
	e->wd = wd;
	e->level = level;
	e->rel = strdup(rel);
	if (!e->rel) {
		w->n--;
		return -ENOMEM;
	}
	if (!announce && level + 1 >= w->depth)
		return 0;
	d = fdopendir(TAKE_FD(fd));
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char sub[PATH_MAX];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (join(sub, sizeof(sub), rel, de->d_name) < 0)
			continue;
		if (announce) {
			r = send_event(w, sub, "create");
			if (r < 0)
				break;
		}
		if (de->d_type == DT_DIR && level + 1 < w->depth) {
			r = add_tree(w, sub, level + 1, announce);
			if (r < 0 && w->f->dead)
				break;
			r = 0; /* gone or unreadable since readdir: no watch there */
		}
	}
	closedir(d);
	return r;
}

/* Stop watching rel and everything below it (it was moved away). */
static void drop_tree(struct watcher *w, const char *rel)
{
	size_t len = strlen(rel);

	for (size_t i = 0; i < w->n;) {
		const char *r = w->w[i].rel;

		if (!strcmp(r, rel) || (!strncmp(r, rel, len) && r[len] == '/')) {
			inotify_rm_watch(w->ifd, w->w[i].wd);
			drop_at(w, i);
		} else {
			i++;
		}
	}
}

/* 1: the watch is over (its reply sent), 0: go on, -errno: the connection failed. */
static int on_events(struct watcher *w, const char *buf, size_t len, struct ts_error *err)
{
	char last[PATH_MAX] = "";
	const struct inotify_event *ev;

	for (size_t off = 0; off + sizeof(*ev) <= len; off += sizeof(*ev) + ev->len) {
		char path[PATH_MAX];
		const char *what = NULL;
		struct wdir *e;
		int r = 0;

		ev = (const struct inotify_event *)(buf + off);
		if (ev->mask & IN_Q_OVERFLOW) {
			ts_err(err, -EOVERFLOW, "watch `%s`: too many events, some were lost",
			       w->shown);
			return ts_files_send_err(w->f, err) < 0 ? -EPIPE : 1;
		}
		e = find_wd(w, ev->wd);
		if (!e)
			continue;
		if (ev->mask & IN_IGNORED) {
			bool top = e->level == 0;

			drop_at(w, (size_t)(e - w->w));
			if (!top)
				continue;
			/* the watched directory is gone: so is the watch */
			if (ts_ctl_send_simple(w->f->conn, TS_CTL_END, w->f->id) < 0) {
				w->f->dead = true;
				return -EPIPE;
			}
			return 1;
		}
		if (!ev->len || !ev->name[0])
			continue;
		if (join(path, sizeof(path), e->rel, ev->name) < 0)
			continue;
		if (ev->mask & (IN_CREATE | IN_MOVED_TO))
			what = "create";
		else if (ev->mask & IN_DELETE)
			what = "remove";
		else if (ev->mask & IN_MOVED_FROM)
			what = "rename";
		else if (ev->mask & IN_MODIFY)
			what = "write";
		else if (ev->mask & IN_ATTRIB)
			what = "chmod";
		if (!what)
			continue;
		if (!strcmp(what, "write") && !strcmp(last, path))
			continue;
		snprintf(last, sizeof(last), "%s", !strcmp(what, "write") ? path : "");
		r = send_event(w, path, what);
		if (r < 0)
			return r;
		if ((ev->mask & IN_ISDIR) && (ev->mask & IN_MOVED_FROM))
			drop_tree(w, path);
		if ((ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO)) &&
		    e->level + 1 < w->depth) {
			r = add_tree(w, path, e->level + 1, true);
			if (r < 0 && w->f->dead)
				return r;
			/* past the limit or already gone: events below it are not seen */
		}
	}
	return 0;
}

int ts_files_watch(struct ts_files *f, const struct ts_ctl_msg *req, struct ts_error *err)
{
	char in[PATH_MAX],
		buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct watcher w = { .f = f, .ifd = -EBADF, .top = -EBADF, .depth = 1 };
	struct ts_fpath p;
	uint64_t depth = 1;
	int r;

	r = ts_files_get_path(req, TS_T_PATH, in, err);
	if (r == 0)
		r = ts_files_path_parse(f, in, &p, err);
	if (r < 0)
		return r;
	w.shown = p.shown;
	r = ts_ctl_get_u64(req, TS_T_DEPTH, &depth);
	if (r == -EBADMSG || (r == 0 && depth > TS_FILES_DEPTH_MAX))
		return ts_err(err, -EINVAL, "watch `%s`: depth must be 1 to %d", p.shown,
			      TS_FILES_DEPTH_MAX);
	w.depth = depth ? (unsigned)depth : 1;
	w.top = ts_files_open_in_root(f, p.rel, O_PATH | O_DIRECTORY);
	if (w.top < 0) {
		r = ts_err_errno(err, w.top, "watch `%s`", p.shown);
		goto out;
	}
	w.ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w.ifd < 0) {
		r = ts_err_errno(err, -errno, "watch `%s`: inotify", p.shown);
		goto out;
	}
	r = add_tree(&w, "", 0, false);
	if (r < 0) {
		if (!f->dead)
			ts_err_errno(err, r, "watch `%s`", p.shown);
		goto out;
	}
	/* OK once the watches are in place: the client may act on it right away. */
	r = ts_ctl_send_simple(f->conn, TS_CTL_OK, f->id);
	if (r < 0) {
		f->dead = true;
		goto out;
	}
	for (;;) {
		struct pollfd pfd[2] = { { .fd = f->conn, .events = POLLIN },
					 { .fd = w.ifd, .events = POLLIN } };
		ssize_t n;

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			r = ts_err_errno(err, -errno, "watch `%s`: poll", p.shown);
			break;
		}
		if (pfd[0].revents) {
			struct ts_ctl_msg m = { 0 };

			/* EOF ends the watch and the connection; any message ends the watch */
			r = ts_ctl_recv(f->conn, &m);
			ts_ctl_msg_free(&m);
			if (r == -ECONNRESET) {
				f->eof = true;
				r = 0;
			} else if (r < 0) {
				f->dead = true;
			} else {
				r = ts_ctl_send_simple(f->conn, TS_CTL_END, f->id);
				if (r < 0)
					f->dead = true;
			}
			break;
		}
		if (!(pfd[1].revents & POLLIN))
			continue;
		n = read(w.ifd, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			r = ts_err_errno(err, -errno, "watch `%s`: read events", p.shown);
			break;
		}
		r = on_events(&w, buf, (size_t)n, err);
		if (r != 0) {
			r = r > 0 ? 0 : r;
			break;
		}
	}
out:
	for (size_t i = 0; i < w.n; i++)
		free(w.w[i].rel);
	free(w.w);
	ts_ctl_msg_free(&w.m);
	if (w.ifd >= 0)
		close(w.ifd);
	if (w.top >= 0)
		close(w.top);
	return r;
}
