/* SPDX-License-Identifier: Apache-2.0 */
#include "fileclient.h"

#include "procinfo.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "ctl.h"
#include "util.h"

/* Directory levels a copy follows; deeper trees are refused (one fd per level). */
#define COPY_DEPTH_MAX 256

/* The longest wait for one message of a reply: generous (a commit fsyncs a whole file),
 * but a sandbox that stalls cannot hold the caller forever. */
#define REPLY_TIMEOUT_MS (5 * 60 * 1000)

bool ts_files_name_ok(const char *name)
{
	size_t n = strlen(name);

	return n > 0 && n <= NAME_MAX && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
	       !strchr(name, '/');
}

/* The reply cannot be trusted: refuse it, and the connection with it. */
static int bad(int conn, struct ts_error *err, const char *what)
{
	shutdown(conn, SHUT_RDWR);
	return ts_err(err, -EPROTO, "bad reply from the sandbox: %s", what);
}

static int send_req(int conn, struct ts_ctl_msg *m, struct ts_error *err)
{
	int r = ts_ctl_send(conn, m, NULL, 0);

	if (r < 0)
		return ts_err_errno(err, r, "send a request to the sandbox");
	return 0;
}

/* Start a FILE request for op with its path. */
static int req_init(struct ts_ctl_msg *m, enum ts_file_op op, const char *path)
{
	int r;

	ts_ctl_msg_init(m, TS_CTL_FILE, op);
	r = ts_ctl_put_u64(m, TS_T_OP, op);
	if (r == 0)
		r = ts_ctl_put_str(m, TS_T_PATH, path);
	return r;
}

/*
 * Receive one reply to the request with id. An ERROR becomes its code and message;
 * anything else is returned for the caller to check. 0 or -errno.
 */
static int recv_reply(int conn, uint32_t id, struct ts_ctl_msg *m, struct ts_error *err)
{
	char msg[sizeof(err->msg)];
	uint64_t code;
	int r = ts_ctl_recv_timeout(conn, m, REPLY_TIMEOUT_MS);

	if (r == -ECONNRESET)
		return ts_err(err, -ECONNRESET, "the sandbox closed the connection");
	if (r == -ETIMEDOUT) {
		shutdown(conn, SHUT_RDWR);
		return ts_err(err, r, "the sandbox did not answer for %d s",
			      REPLY_TIMEOUT_MS / 1000);
	}
	if (r < 0)
		return r == -EBADMSG || r == -E2BIG
			       ? bad(conn, err, "malformed message")
			       : ts_err_errno(err, r, "receive from the sandbox");
	if (m->id != id)
		return bad(conn, err, "a reply to another request");
	if (m->type != TS_CTL_ERROR)
		return 0;
	if (ts_ctl_get_u64(m, TS_T_CODE, &code) < 0 || code == 0 || code > 4095)
		return bad(conn, err, "an error without a valid code");
	if (ts_ctl_get_str(m, TS_T_MSG, msg, sizeof(msg)) < 0)
		snprintf(msg, sizeof(msg), "%s", strerror((int)code));
	ts_sanitize_text(msg);
	return ts_err(err, -(int)code, "%s", msg);
}

/* Send the request m, expect OK. */
static int simple_op(int conn, struct ts_ctl_msg *m, struct ts_error *err)
{
	struct ts_ctl_msg rep = { 0 };
	int r = send_req(conn, m, err);

	if (r == 0)
		r = recv_reply(conn, m->id, &rep, err);
	if (r == 0 && rep.type != TS_CTL_OK)
		r = bad(conn, err, "not OK");
	ts_ctl_msg_free(&rep);
	return r;
}

/* The first DATA field of m, or -EBADMSG. */
static int get_data(const struct ts_ctl_msg *m, const uint8_t **v, uint32_t *len)
{
	size_t pos = 0;
	uint16_t tag;
	int r;

	while ((r = ts_ctl_next(m, &pos, &tag, v, len)) > 0)
		if (tag == TS_T_DATA)
			return 0;
	return -EBADMSG;
}

int ts_files_read_to_fd(int conn, const char *path, int out_fd, const char *out_shown,
			struct ts_error *err)
{
	struct ts_ctl_msg m = { 0 };
	uint64_t off = 0, got;
	int r, local = 0;

	r = req_init(&m, TS_FILE_READ, path);
	if (r == 0)
		r = ts_ctl_put_u64(&m, TS_T_OFFSET, 0);
	if (r == 0)
		r = ts_ctl_put_u64(&m, TS_T_LENGTH, 0);
	if (r < 0) {
		ts_ctl_msg_free(&m);
		return ts_err_errno(err, r, "read `%s`", path);
	}
	r = send_req(conn, &m, err);
	ts_ctl_msg_free(&m);
	while (r == 0) {
		const uint8_t *v;
		uint32_t len;

		r = recv_reply(conn, TS_FILE_READ, &m, err);
		if (r == 0 && m.type == TS_CTL_END) {
			ts_ctl_msg_free(&m);
			break;
		}
		if (r == 0 && m.type != TS_CTL_FILE_DATA)
			r = bad(conn, err, "not file data");
		else if (r == 0 && (get_data(&m, &v, &len) < 0 || len > TS_CTL_CHUNK ||
				    ts_ctl_get_u64(&m, TS_T_OFFSET, &got) < 0 || got != off))
			r = bad(conn, err, "file data out of order");
		if (r == 0 && !local) {
			local = ts_write_all(out_fd, v, len);
			if (local < 0 && out_shown)
				ts_err_errno(err, local, "write `%s`", out_shown);
			else if (local < 0)
				ts_err_errno(err, local, "write the copy of `%s`", path);
		}
		if (r == 0)
			off += len;
		ts_ctl_msg_free(&m);
	}
	/* a local write error: the rest was read and dropped to keep the stream in step */
	return r < 0 ? r : local;
}

static ssize_t read_fd(void *userdata, void *buf, size_t len)
{
	ssize_t n;

	do
		n = read(*(const int *)userdata, buf, len);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

int ts_files_write_from_fd(int conn, const char *path, int mode, int in_fd, struct ts_error *err)
{
	return ts_files_write_from(conn, path, mode, read_fd, &in_fd, err);
}

int ts_files_write_from(int conn, const char *path, int mode, ts_files_reader_fn fn, void *userdata,
			struct ts_error *err)
{
	struct ts_ctl_msg m = { 0 };
	_cleanup_free_ uint8_t *buf = malloc(TS_CTL_CHUNK);
	uint64_t off = 0;
	int r;

	if (!buf)
		return ts_err(err, -ENOMEM, "write `%s`: out of memory", path);
	r = req_init(&m, TS_FILE_WRITE, path);
	if (r == 0 && mode >= 0)
		r = ts_ctl_put_u64(&m, TS_T_MODE, (uint64_t)mode & 0777);
	if (r < 0) {
		ts_ctl_msg_free(&m);
		return ts_err_errno(err, r, "write `%s`", path);
	}
	r = send_req(conn, &m, err);
	while (r == 0) {
		struct pollfd p = { .fd = conn, .events = POLLIN };
		ssize_t n = fn(userdata, buf, TS_CTL_CHUNK);

		if (n < 0) {
			/* Only a closed connection abandons a write (the sandbox keeps the old
			 * file): END would commit what was sent so far. */
			r = (int)n;
			shutdown(conn, SHUT_RDWR);
			ts_err_errno(err, r, "write `%s`: read the source", path);
			break;
		}
		if (n == 0)
			break;
		ts_ctl_msg_init(&m, TS_CTL_FILE_DATA, TS_FILE_WRITE);
		r = ts_ctl_put(&m, TS_T_DATA, buf, (size_t)n);
		if (r == 0)
			r = ts_ctl_put_u64(&m, TS_T_OFFSET, off);
		if (r == 0)
			r = send_req(conn, &m, err);
		off += (uint64_t)n;
		/* An early ERROR (refused, disk full): stop sending, end the data, done. */
		if (r == 0 && poll(&p, 1, 0) > 0) {
			ts_ctl_msg_free(&m);
			r = recv_reply(conn, TS_FILE_WRITE, &m, err);
			if (r == 0)
				r = bad(conn, err, "a reply before the end of the data");
			else if (r != -EPROTO && r != -ECONNRESET)
				ts_ctl_send_simple(conn, TS_CTL_END, TS_FILE_WRITE);
			ts_ctl_msg_free(&m);
			return r;
		}
	}
	ts_ctl_msg_free(&m);
	if (r < 0)
		return r;
	r = ts_ctl_send_simple(conn, TS_CTL_END, TS_FILE_WRITE);
	if (r < 0)
		return ts_err_errno(err, r, "write `%s`", path);
	r = recv_reply(conn, TS_FILE_WRITE, &m, err);
	if (r == 0 && m.type != TS_CTL_OK)
		r = bad(conn, err, "not OK");
	ts_ctl_msg_free(&m);
	return r;
}

void ts_file_info_clear(struct ts_file_info *i)
{
	for (size_t k = 0; i->metadata && i->metadata[k]; k++)
		free(i->metadata[k]);
	free(i->metadata);
	i->metadata = NULL;
}

/* The XATTR fields of an entry: "key=value" strings, checked as the worker sends them. */
static int parse_xattrs(int conn, const struct ts_ctl_msg *m, struct ts_file_info *e,
			struct ts_error *err)
{
	size_t pos = 0, n = 0;
	const uint8_t *v;
	uint32_t len;
	uint16_t tag;
	int r;

	while ((r = ts_ctl_next(m, &pos, &tag, &v, &len)) > 0) {
		const uint8_t *eq = memchr(v, '=', len);
		char **nv;

		if (tag != TS_T_XATTR)
			continue;
		if (n == TS_FILE_XATTRS_MAX || !eq || eq == v || memchr(v, '\0', len) ||
		    len > TS_FILE_XATTR_NAME_MAX + 1 + TS_FILE_XATTR_VALUE_MAX) {
			ts_file_info_clear(e);
			return bad(conn, err, "a file entry with malformed metadata");
		}
		nv = reallocarray(e->metadata, n + 2, sizeof(*nv));
		if (!nv || !(nv[n] = strndup((const char *)v, len))) {
			if (nv)
				e->metadata = nv, nv[n] = NULL;
			ts_file_info_clear(e);
			return ts_err(err, -ENOMEM, "out of memory");
		}
		nv[++n] = NULL;
		e->metadata = nv;
	}
	return 0;
}

static int parse_entry(int conn, const struct ts_ctl_msg *m, struct ts_file_info *e,
		       struct ts_error *err)
{
	static const char *const types[] = { "file", "dir", "symlink", "other" };
	char type[16];
	uint64_t mode, uid, gid;
	size_t t;
	int r;

	memset(e, 0, sizeof(*e));
	if (m->type != TS_CTL_FILE_ENTRY)
		return bad(conn, err, "not a file entry");
	if (ts_ctl_get_str(m, TS_T_PATH, e->path, sizeof(e->path)) < 0 ||
	    ts_ctl_get_str(m, TS_T_TYPE, type, sizeof(type)) < 0 ||
	    ts_ctl_get_u64(m, TS_T_MODE, &mode) < 0 || ts_ctl_get_u64(m, TS_T_SIZE, &e->size) < 0 ||
	    ts_ctl_get_u64(m, TS_T_MTIME, &e->mtime_ms) < 0 ||
	    ts_ctl_get_u64(m, TS_T_UID, &uid) < 0 || ts_ctl_get_u64(m, TS_T_GID, &gid) < 0)
		return bad(conn, err, "a file entry with missing or malformed fields");
	if (mode > 07777 || uid > UINT32_MAX || gid > UINT32_MAX)
		return bad(conn, err, "a file entry with values out of range");
	r = ts_ctl_get_str(m, TS_T_TARGET, e->target, sizeof(e->target));
	if (r < 0 && r != -ENOENT)
		return bad(conn, err, "a file entry with a malformed target");
	for (t = 0; t < ELEMENTSOF(types); t++)
		if (!strcmp(type, types[t]))
			break;
	if (t == ELEMENTSOF(types))
		return bad(conn, err, "a file entry of an unknown type");
	e->type = (enum ts_file_type)t;
	e->mode = (unsigned)mode;
	e->uid = (uint32_t)uid;
	e->gid = (uint32_t)gid;
	return parse_xattrs(conn, m, e, err);
}

int ts_files_list(int conn, const char *path, unsigned depth, ts_files_list_fn fn, void *userdata,
		  struct ts_error *err)
{
	return ts_files_list_ex(conn, path, depth, 0, fn, userdata, err);
}

int ts_files_list_ex(int conn, const char *path, unsigned depth, unsigned flags,
		     ts_files_list_fn fn, void *userdata, struct ts_error *err)
{
	_cleanup_free_ struct ts_file_info *e = malloc(sizeof(*e));
	struct ts_ctl_msg m = { 0 };
	size_t count = 0;
	int r, stop = 0;

	if (!e)
		return ts_err(err, -ENOMEM, "list `%s`: out of memory", path);
	r = req_init(&m, TS_FILE_LIST, path);
	if (r == 0)
		r = ts_ctl_put_u64(&m, TS_T_DEPTH, depth);
	if (r == 0 && (flags & TS_FILES_XATTRS))
		r = ts_ctl_put_u64(&m, TS_T_FLAGS, TS_FILE_F_XATTRS);
	if (r == 0)
		r = send_req(conn, &m, err);
	else
		ts_err_errno(err, r, "list `%s`", path);
	ts_ctl_msg_free(&m);
	while (r == 0) {
		r = recv_reply(conn, TS_FILE_LIST, &m, err);
		if (r == 0 && m.type == TS_CTL_END) {
			ts_ctl_msg_free(&m);
			break;
		}
		if (r == 0 && ++count > TS_FILES_MAX_ENTRIES)
			r = bad(conn, err, "too many entries");
		if (r == 0)
			r = parse_entry(conn, &m, e, err);
		ts_ctl_msg_free(&m);
		/* after the callback said stop, the rest is read and dropped */
		if (r == 0 && !stop)
			stop = fn(e, userdata, err);
		if (r == 0)
			ts_file_info_clear(e);
	}
	return r < 0 ? r : stop < 0 ? stop : 0;
}

int ts_files_stat(int conn, const char *path, struct ts_file_info *ret, struct ts_error *err)
{
	return ts_files_stat_ex(conn, path, 0, ret, err);
}

int ts_files_stat_ex(int conn, const char *path, unsigned flags, struct ts_file_info *ret,
		     struct ts_error *err)
{
	struct ts_ctl_msg m = { 0 };
	int r = req_init(&m, TS_FILE_STAT, path);

	if (r == 0 && (flags & TS_FILES_XATTRS))
		r = ts_ctl_put_u64(&m, TS_T_FLAGS, TS_FILE_F_XATTRS);
	if (r == 0)
		r = send_req(conn, &m, err);
	else
		ts_err_errno(err, r, "stat `%s`", path);
	ts_ctl_msg_free(&m);
	if (r == 0)
		r = recv_reply(conn, TS_FILE_STAT, &m, err);
	if (r == 0)
		r = parse_entry(conn, &m, ret, err);
	ts_ctl_msg_free(&m);
	return r;
}

int ts_files_mkdir(int conn, const char *path, unsigned mode, struct ts_error *err)
{
	struct ts_ctl_msg m = { 0 };
	int r = req_init(&m, TS_FILE_MKDIR, path);

	if (r == 0)
		r = ts_ctl_put_u64(&m, TS_T_MODE, mode & 0777);
	if (r == 0)
		r = simple_op(conn, &m, err);
	else
		ts_err_errno(err, r, "mkdir `%s`", path);
	ts_ctl_msg_free(&m);
	return r;
}

int ts_files_as_user(int conn, unsigned uid, struct ts_error *err)
{
	struct ts_ctl_msg m = { 0 };
	int r;

	ts_ctl_msg_init(&m, TS_CTL_FILE, TS_FILE_USER);
	r = ts_ctl_put_u64(&m, TS_T_OP, TS_FILE_USER);
	if (r == 0)
		r = ts_ctl_put_u64(&m, TS_T_UID, uid);
	if (r == 0)
		r = simple_op(conn, &m, err);
	else
		ts_err_errno(err, r, "file request as uid %u", uid);
	ts_ctl_msg_free(&m);
	return r;
}

int ts_files_remove(int conn, const char *path, struct ts_error *err)
{
	struct ts_ctl_msg m = { 0 };
	int r = req_init(&m, TS_FILE_REMOVE, path);

	if (r == 0)
		r = simple_op(conn, &m, err);
	else
		ts_err_errno(err, r, "remove `%s`", path);
	ts_ctl_msg_free(&m);
	return r;
}

int ts_files_rename(int conn, const char *from, const char *to, struct ts_error *err)
{
	struct ts_ctl_msg m = { 0 };
	int r = req_init(&m, TS_FILE_RENAME, from);

	if (r == 0)
		r = ts_ctl_put_str(&m, TS_T_PATH2, to);
	if (r == 0)
		r = simple_op(conn, &m, err);
	else
		ts_err_errno(err, r, "rename `%s`", from);
	ts_ctl_msg_free(&m);
	return r;
}

int ts_files_set_xattrs(int conn, const char *path, char *const *kv, size_t n, struct ts_error *err)
{
	struct ts_ctl_msg m = { 0 };
	int r = req_init(&m, TS_FILE_SET_XATTRS, path);

	if (n > TS_FILE_XATTRS_MAX)
		r = -E2BIG;
	for (size_t i = 0; r == 0 && i < n; i++)
		r = ts_ctl_put_str(&m, TS_T_XATTR, kv[i]);
	if (r == 0)
		r = simple_op(conn, &m, err);
	else
		ts_err_errno(err, r, "metadata of `%s`", path);
	ts_ctl_msg_free(&m);
	return r;
}
