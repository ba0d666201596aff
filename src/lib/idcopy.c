/* SPDX-License-Identifier: Apache-2.0 */
#include "idcopy.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "idmap-plan.h"
#include "protect.h"
#include "strv.h"
#include "util.h"

#define HELPER_OUT_MAX 4096
#define HELPER_PREFIX "toren-sandbox-helper: "
#define HELPER_EXIT_SETUP 125 /* TS_HELPER_EXIT_SETUP */

/* The sandbox of this recorded spec has a root inside (--user root, root_ids, sudo), so
 * it was given the subordinate ids where there are (launch.c). */
static bool want_root_of(json_t *spec)
{
	return json_is_true(json_object_get(spec, "root_ids")) ||
	       json_is_true(json_object_get(spec, "sudo")) ||
	       !strcmp(json_string_value(json_object_get(spec, "user")) ?: "", "root");
}

static int push_maps(struct ts_strv *a, const struct ts_idmap_plan *p);

static int build_argv(struct ts_strv *a, const char *helper, const struct ts_idmap_plan *p,
		      const struct ts_treecopy *c, bool remove)
{
	int r = 0;

	r |= ts_strv_push(a, helper);
	r |= ts_strv_push(a, "--copy-tree");
	if (remove)
		r |= ts_strv_push(a, "--remove");
	r |= ts_strv_push(a, "--max-bytes");
	r |= ts_strv_pushf(a, "%llu", (unsigned long long)c->max_bytes);
	r |= ts_strv_push(a, "--max-entries");
	r |= ts_strv_pushf(a, "%llu", (unsigned long long)c->max_entries);
	r |= ts_strv_push(a, "--used-bytes");
	r |= ts_strv_pushf(a, "%llu", (unsigned long long)c->bytes);
	r |= ts_strv_push(a, "--used-entries");
	r |= ts_strv_pushf(a, "%llu", (unsigned long long)c->entries);
	r |= push_maps(a, p);
	if (c->set_owner) {
		r |= ts_strv_push(a, "--owner");
		r |= ts_strv_pushf(a, "%u:%u", (unsigned)c->owner_uid, (unsigned)c->owner_gid);
	}
	return r < 0 ? -ENOMEM : 0;
}

/* The sandbox's maps, as the helper takes them for a sandbox (launch.c). */
static int push_maps(struct ts_strv *a, const struct ts_idmap_plan *p)
{
	int r = 0;

	for (size_t i = 0; i < p->n_uid; i++) {
		r |= ts_strv_push(a, "--uid-map");
		r |= ts_strv_pushf(a, "%lu %lu %lu", p->uid[i].inside, p->uid[i].outside,
				   p->uid[i].count);
	}
	for (size_t i = 0; i < p->n_gid; i++) {
		r |= ts_strv_push(a, "--gid-map");
		r |= ts_strv_pushf(a, "%lu %lu %lu", p->gid[i].inside, p->gid[i].outside,
				   p->gid[i].count);
	}
	if (p->newidmap)
		r |= ts_strv_push(a, "--newidmap");
	return r;
}

/* Read what the helper says, at most HELPER_OUT_MAX - 1 bytes; the rest is drained. */
static void read_all(int fd, char *out, size_t len)
{
	size_t got = 0;
	char sink[512];

	for (;;) {
		ssize_t n = got < len - 1 ? read(fd, out + got, len - 1 - got)
					  : read(fd, sink, sizeof(sink));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (got < len - 1)
			got += (size_t)n;
	}
	out[got] = '\0';
}

/*
 * Start the helper with argv, src_fd as its fd 3 and dst_fd (when >= 0) as its fd 4, its
 * stdout and stderr the write end of a pipe whose read end comes back in *ret_out.
 */
static int spawn(const char *helper, char *const *argv, int src_fd, int dst_fd, pid_t *ret_pid,
		 int *ret_out, struct ts_error *err)
{
	_cleanup_close_ int s = -EBADF, d = -EBADF;
	static char *const empty_env[] = { NULL };
	posix_spawn_file_actions_t fa;
	int pp[2], r;

	/* above 4 so that putting them at 3 and 4 cannot overwrite one with the other */
	s = fcntl(src_fd, F_DUPFD_CLOEXEC, 10);
	d = dst_fd >= 0 ? fcntl(dst_fd, F_DUPFD_CLOEXEC, 10) : -EBADF;
	if (s < 0 || (dst_fd >= 0 && d < 0))
		return ts_err_errno(err, -errno, "duplicate the helper's fds");
	if (pipe2(pp, O_CLOEXEC) < 0)
		return ts_err_errno(err, -errno, "pipe for the helper");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	/* its result on stdout, its one error line on stderr: never both */
	posix_spawn_file_actions_adddup2(&fa, pp[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pp[1], 2);
	posix_spawn_file_actions_adddup2(&fa, s, 3);
	if (d >= 0)
		posix_spawn_file_actions_adddup2(&fa, d, 4);
	r = posix_spawn(ret_pid, helper, &fa, NULL, argv, empty_env);
	posix_spawn_file_actions_destroy(&fa);
	close(pp[1]);
	if (r != 0) {
		close(pp[0]);
		return ts_err_errno(err, -r, "run `%s`", helper);
	}
	*ret_out = pp[0];
	return 0;
}

/* Wait for the helper started as `helper mode ...`; out is what it said. 0 when it exited
 * 0, else its error (its errno, its message). */
static int finish(const char *helper, const char *mode, pid_t pid, char *out, struct ts_error *err)
{
	char *nl, *msg;
	int status = 0, r;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return ts_err_errno(err, -errno, "wait for `%s`", helper);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	/* one line: the helper's message, without its name and with the last line only
	 * (a sanitizer's report would come before it) */
	if ((nl = strrchr(out, '\n')) && !nl[1])
		*nl = '\0';
	msg = strrchr(out, '\n') ? strrchr(out, '\n') + 1 : out;
	if (!strncmp(msg, HELPER_PREFIX, strlen(HELPER_PREFIX)))
		msg += strlen(HELPER_PREFIX);
	if (!WIFEXITED(status))
		return ts_err(err, -EIO, "`%s %s` killed by signal %d", helper, mode,
			      WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	/* the worker's errno is its status; 125: it could not start the work */
	r = WEXITSTATUS(status) == HELPER_EXIT_SETUP ? EIO : WEXITSTATUS(status);
	return ts_err(err, -r, "%s", msg[0] ? msg : "the helper failed without a message");
}

/* What the helper sent, to be quoted in a message on one line: s without its last
 * newline, cut to what line holds, sanitized (ts_sanitize_text: other newlines and
 * control characters as `?`; it goes to a terminal, and the helper walked a tree the
 * sandbox wrote). */
static const char *one_line(const char *s, char *line, size_t size)
{
	size_t n = strnlen(s, size - 1);

	if (n && s[n - 1] == '\n' && !s[n])
		n--;
	memcpy(line, s, n);
	line[n] = '\0';
	ts_sanitize_text(line);
	return line;
}

/* An answer of the helper that is not what it should say: -EIO. */
static int said(const char *helper, const char *mode, const char *out, struct ts_error *err)
{
	char line[201];

	return ts_err(err, -EIO, "`%s %s` said `%s`", helper, mode,
		      one_line(out, line, sizeof(line)));
}

/* dst_fd < 0: --remove src_fd's contents */
static int run_helper(const char *helper, const struct ts_idmap_plan *p, int src_fd, int dst_fd,
		      struct ts_treecopy *c, struct ts_error *err)
{
	_cleanup_(ts_strv_freep) struct ts_strv a = { 0 };
	char out[HELPER_OUT_MAX];
	unsigned long long entries, bytes;
	int fd, r;
	pid_t pid;

	if (build_argv(&a, helper, p, c, dst_fd < 0) < 0)
		return ts_err(err, -ENOMEM, "out of memory");
	if ((r = spawn(helper, a.v, src_fd, dst_fd, &pid, &fd, err)) < 0)
		return r;
	read_all(fd, out, sizeof(out));
	close(fd);
	if ((r = finish(helper, "--copy-tree", pid, out, err)) < 0)
		return r;
	if (sscanf(out, "entries %llu bytes %llu", &entries, &bytes) != 2)
		return said(helper, "--copy-tree", out, err);
	c->entries = entries;
	c->bytes = bytes;
	return 0;
}

/* The plan of the sandbox of this recorded spec. */
static int plan_of(const char *spec, struct ts_idmap_plan *plan, struct ts_error *err)
{
	json_t *j = json_loads(spec ? spec : "{}", 0, NULL);
	bool want_root;

	if (!j)
		return ts_err(err, -EINVAL, "bad recorded spec");
	want_root = want_root_of(j);
	json_decref(j);
	return ts_idmap_plan(plan, want_root, err);
}

/* The id inside that a line of the plan gives host id outside; false when none does. */
static bool inside_of(const struct ts_idmap_line_plan *l, size_t n, unsigned long outside,
		      uint32_t *ret)
{
	for (size_t i = 0; i < n; i++)
		if (l[i].outside <= outside && outside - l[i].outside < l[i].count) {
			*ret = (uint32_t)(l[i].inside + (outside - l[i].outside));
			return true;
		}
	return false;
}

bool ts_idcopy_subids(const char *spec)
{
	struct ts_idmap_plan plan;

	return plan_of(spec, &plan, NULL) == 0 && !strcmp(plan.mode, "subid");
}

int ts_idcopy_tree(const char *helper, const char *spec, int src_fd, int dst_fd,
		   struct ts_treecopy *c, struct ts_error *err)
{
	struct ts_idmap_plan plan;
	int r = plan_of(spec, &plan, err);

	if (r < 0)
		return r;
	/* `single` and `root-range`: every id of the sandbox is one the caller owns or may
	 * chown, so the fast path in this process */
	if (strcmp(plan.mode, "subid") != 0)
		return ts_treecopy(src_fd, dst_fd, c, err);
	return run_helper(helper, &plan, src_fd, dst_fd, c, err);
}

/* Remove everything in the directory fd (a copy that failed half way), fd itself stays. */
static int empty_dir(int fd)
{
	DIR *d = fdopendir(fcntl(fd, F_DUPFD_CLOEXEC, 3));
	struct dirent *de;
	int r = 0;

	if (!d)
		return -errno;
	rewinddir(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && r == 0)
			r = ts_rm_rf_at(fd, de->d_name);
	closedir(d);
	return r;
}

int ts_idcopy_restore(const char *helper, bool src_subids, const char *dst_spec, int src_fd,
		      int dst_fd, struct ts_treecopy *c, struct ts_error *err)
{
	struct ts_idmap_plan plan;
	struct ts_treecopy first;
	int r = plan_of(dst_spec, &plan, err);

	if (r < 0)
		return r;
	if (!strcmp(plan.mode, "subid"))
		return ts_idcopy_tree(helper, dst_spec, src_fd, dst_fd, c, err);
	if (!src_subids) {
		/* A destination of the caller's ids alone, a tree recorded as the caller's: in
		 * this process. Where that is refused (a directory the caller cannot read: one
		 * of a subordinate id after all, an older snapshot's, or of mode 0), the helper
		 * copies it below as root of the caller's subordinate mapping, each copy the
		 * caller's, when the caller has one. */
		first = *c;
		r = ts_idcopy_tree(helper, dst_spec, src_fd, dst_fd, c, err);
		if (r != -EACCES && r != -EPERM)
			return r;
		if (ts_idmap_plan(&plan, true, NULL) < 0 || strcmp(plan.mode, "subid") != 0 ||
		    empty_dir(dst_fd) < 0)
			return r;
		ts_err_clear(err);
		*c = first;
		/* the copy's readdir moved the offset its dup shares: the helper reads from 0 */
		lseek(src_fd, 0, SEEK_SET);
	}
	/* One id: the source's files of subordinate ids are readable only as root of their
	 * mapping (the caller's whole range covers every sandbox's, as for a removal), and
	 * their owners have no id in the destination. Each copy becomes the id the caller
	 * is in that mapping: the caller's own on the host, the sandbox's user inside. */
	if ((r = ts_idmap_plan(&plan, true, err)) < 0)
		return r;
	if (strcmp(plan.mode, "subid") != 0)
		return ts_treecopy(src_fd, dst_fd, c, err);
	if (!inside_of(plan.uid, plan.n_uid, plan.user_uid, &c->owner_uid) ||
	    !inside_of(plan.gid, plan.n_gid, plan.user_gid, &c->owner_gid))
		return ts_err(err, -EINVAL, "the subordinate id mapping does not map your own ids");
	c->set_owner = true;
	return run_helper(helper, &plan, src_fd, dst_fd, c, err);
}

int ts_idcopy_remove(const char *helper, int dirfd, const char *name, struct ts_error *err)
{
	struct ts_treecopy c = { 0 };
	struct ts_idmap_plan plan;
	_cleanup_close_ int fd = -EBADF;
	int r = ts_rm_rf_at(dirfd, name);

	if (r != -EACCES && r != -EPERM)
		return r < 0 ? ts_err_errno(err, r, "remove `%s`", name) : 0;
	/* files of subordinate ids: the caller's whole range covers every sandbox's */
	if (ts_idmap_plan(&plan, true, err) < 0 || strcmp(plan.mode, "subid") != 0)
		return ts_err_errno(err, r, "remove `%s`", name);
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return ts_err_errno(err, -errno, "open `%s`", name);
	r = run_helper(helper, &plan, fd, -EBADF, &c, err);
	if (r < 0)
		return ts_err_prefix(err, r, "remove `%s`", name);
	r = ts_rm_rf_at(dirfd, name);
	return r < 0 ? ts_err_errno(err, r, "remove `%s`", name) : 0;
}

/* The paths a scan may send: each short enough for a --protect destination under
 * /home/user (launch.c), all of them bounded in bytes as well as in count. */
#define SCAN_PATH_MAX (4096 - sizeof("/home/user/"))
#define SCAN_OUT_MAX (64UL << 20)

struct scan_out {
	char *buf; /* the paths, NUL-separated */
	size_t len, cap;
	bool over; /* more than SCAN_OUT_MAX: drained, refused */
	char msg[HELPER_OUT_MAX];
	size_t msg_len;
};

/* Read one chunk of fd into so; false at its end. */
static bool read_chunk(int fd, bool paths, struct scan_out *so)
{
	char sink[4096];
	ssize_t n;

	if (paths && !so->over && so->cap - so->len < sizeof(sink)) {
		size_t ncap = so->cap ? so->cap * 2 : 65536;
		char *b = ncap <= SCAN_OUT_MAX ? realloc(so->buf, ncap) : NULL;

		if (b) {
			so->buf = b;
			so->cap = ncap;
		} else
			so->over = true;
	}
	if (paths && !so->over)
		n = read(fd, so->buf + so->len, so->cap - so->len);
	else if (!paths && so->msg_len < sizeof(so->msg) - 1)
		n = read(fd, so->msg + so->msg_len, sizeof(so->msg) - 1 - so->msg_len);
	else
		n = read(fd, sink, sizeof(sink));
	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	if (paths && !so->over)
		so->len += (size_t)n;
	else if (!paths && so->msg_len < sizeof(so->msg) - 1)
		so->msg_len += (size_t)n;
	return true;
}

/* Both of the helper's outputs at once: it may fill either pipe before it ends. */
static int read_scan(int paths_fd, int out_fd, struct scan_out *so, struct ts_error *err)
{
	struct pollfd pf[2] = { { .fd = paths_fd, .events = POLLIN },
				{ .fd = out_fd, .events = POLLIN } };

	while (pf[0].fd >= 0 || pf[1].fd >= 0) {
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return ts_err_errno(err, -errno, "read the helper's scan");
		}
		for (int i = 0; i < 2; i++)
			if (pf[i].fd >= 0 && pf[i].revents && !read_chunk(pf[i].fd, i == 0, so))
				pf[i].fd = -1;
	}
	so->msg[so->msg_len] = '\0';
	return 0;
}

/* A path the sandbox's tree gave: relative, each component a name (not empty, `.`, `..`). */
static bool path_ok(const char *p, size_t len)
{
	if (len == 0 || len > SCAN_PATH_MAX || p[0] == '/')
		return false;
	for (const char *c = p; *c;) {
		size_t n = strcspn(c, "/");

		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += n;
		if (*c == '/' && !*++c)
			return false; /* a trailing `/` */
	}
	return true;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Split and check the helper's paths: want of them, at most max. */
static int parse_paths(const struct scan_out *so, unsigned long long want, size_t max, char ***ret,
		       size_t *ret_n, struct ts_error *err)
{
	_cleanup_(ts_strv_freep) struct ts_strv v = { 0 };

	if (so->over)
		return ts_err(err, -E2BIG, "the protected paths are more than %lu MiB",
			      SCAN_OUT_MAX >> 20);
	if (so->len && so->buf[so->len - 1] != '\0')
		return ts_err(err, -EPROTO, "the helper's paths end without a NUL");
	for (size_t off = 0; off < so->len;) {
		const char *p = so->buf + off;
		size_t len = strlen(p);
		char line[101];

		if (v.n >= max)
			return ts_err(err, -EPROTO, "the helper sent more than %zu paths", max);
		if (v.n >= want)
			return ts_err(err, -EPROTO, "the helper sent more paths than it counted");
		if (!path_ok(p, len))
			return ts_err(err, -EPROTO, "the helper sent a bad path `%s`",
				      one_line(p, line, sizeof(line)));
		if (ts_strv_push(&v, p) < 0)
			return ts_err(err, -ENOMEM, "out of memory");
		off += len + 1;
	}
	if (v.n != want)
		return ts_err(err, -EPROTO, "the helper counted %llu paths and sent %zu", want,
			      v.n);
	/* an empty list too is a NULL-terminated array (protect.h) */
	if (!v.v && !(v.v = calloc(1, sizeof(*v.v))))
		return ts_err(err, -ENOMEM, "out of memory");
	qsort(v.v, v.n, sizeof(*v.v), cmp_str);
	*ret_n = v.n;
	*ret = TAKE_PTR(v.v);
	v.n = v.cap = 0;
	return 0;
}

int ts_idcopy_scan_protected(const char *helper, const struct ts_idmap_plan *plan, int ws_fd,
			     char *const *patterns, size_t n_patterns, size_t max_entries,
			     unsigned flags, char ***ret, size_t *ret_n, struct ts_error *err)
{
	_cleanup_(ts_strv_freep) struct ts_strv a = { 0 };
	struct scan_out so = { 0 };
	unsigned long long want;
	int pp[2], out = -EBADF, r = 0;
	size_t n = 0;
	pid_t pid;

	if (strcmp(plan->mode, "subid") != 0)
		return ts_err(err, -EINVAL, "the sandbox has no subordinate ids to scan as");
	r |= ts_strv_push(&a, helper);
	r |= ts_strv_push(&a, "--scan-protected");
	r |= ts_strv_push(&a, "--max-entries");
	r |= ts_strv_pushf(&a, "%zu", max_entries);
	if (flags & TS_PROTECT_ALIASES)
		r |= ts_strv_push(&a, "--aliases");
	for (size_t i = 0; i < n_patterns; i++) {
		r |= ts_strv_push(&a, "--pattern");
		r |= ts_strv_push(&a, patterns[i]);
	}
	r |= push_maps(&a, plan);
	if (r < 0)
		return ts_err(err, -ENOMEM, "out of memory");
	if (pipe2(pp, O_CLOEXEC) < 0)
		return ts_err_errno(err, -errno, "pipe for the helper");
	r = spawn(helper, a.v, ws_fd, pp[1], &pid, &out, err);
	close(pp[1]);
	if (r < 0) {
		close(pp[0]);
		return r;
	}
	r = read_scan(pp[0], out, &so, err);
	close(pp[0]);
	close(out);
	if (r < 0) {
		/* it ends once it writes into closed pipes */
		finish(helper, "--scan-protected", pid, so.msg, NULL);
		free(so.buf);
		return r;
	}
	r = finish(helper, "--scan-protected", pid, so.msg, err);
	if (r == 0 && sscanf(so.msg, "paths %llu", &want) != 1)
		r = said(helper, "--scan-protected", so.msg, err);
	if (r == 0)
		r = parse_paths(&so, want, max_entries, ret, &n, err);
	free(so.buf);
	if (r == 0 && ret_n)
		*ret_n = n;
	return r;
}
