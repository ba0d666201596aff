/* SPDX-License-Identifier: Apache-2.0 */
#include "procs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl.h"
#include "util.h"

#define TS_PROCS_MAX 4096

/* How long init may take to answer a request (not the command's run time). */
#define TS_REPLY_MS 30000

/* ERROR from init: its code (bounded) and message, into err. */
static int remote_error(const struct ts_ctl_msg *m, struct ts_error *err)
{
	uint64_t code = EIO;
	char msg[400] = "";

	ts_ctl_get_u64(m, TS_T_CODE, &code);
	ts_ctl_get_str(m, TS_T_MSG, msg, sizeof(msg));
	ts_sanitize_text(msg);
	if (code == 0 || code > 4095)
		code = EIO;
	return ts_err(err, -(int)code, "%s", msg[0] ? msg : "error from the sandbox");
}

int ts_procs_spawn(int conn, const struct ts_spawn_req *req, uint64_t *ret_proc, pid_t *ret_pid,
		   int *ret_master, struct ts_error *err)
{
	struct ts_ctl_msg m = { 0 };
	uint64_t flags = 0, pid = 0;
	int r = 0;

	*ret_master = -1;
	ts_ctl_msg_init(&m, TS_CTL_SPAWN, 1);
	for (char **a = req->argv; *a && r == 0; a++)
		r = ts_ctl_put_str(&m, TS_T_ARG, *a);
	for (char **e = req->env; e && *e && r == 0; e++)
		r = ts_ctl_put_str(&m, TS_T_ENV, *e);
	if (req->cwd && r == 0)
		r = ts_ctl_put_str(&m, TS_T_CWD, req->cwd);
	if (req->as != TS_SPAWN_AS_DEFAULT && r == 0)
		r = ts_ctl_put_u64(&m, TS_T_UID, req->as == TS_SPAWN_AS_ROOT ? 0 : 1000);
	flags = req->pty ? TS_SPAWN_PTY : req->detach ? TS_SPAWN_DETACH : TS_SPAWN_STDIO;
	if (r == 0)
		r = ts_ctl_put_u64(&m, TS_T_FLAGS, flags);
	if (r < 0) {
		ts_ctl_msg_free(&m);
		return ts_err(err, r,
			      "command line too large: arguments and variables must fit in one "
			      "%u KiB control message",
			      TS_CTL_MAX_PAYLOAD / 1024);
	}
	r = ts_ctl_send(conn, &m, flags == TS_SPAWN_STDIO ? req->stdio : NULL,
			flags == TS_SPAWN_STDIO ? 3 : 0);
	ts_ctl_msg_free(&m);
	if (r < 0)
		return ts_err_errno(err, r, "send spawn request");
	r = ts_ctl_recv_timeout(conn, &m, TS_REPLY_MS);
	if (r < 0)
		return ts_err_errno(err, r, "spawn reply");
	if (m.type == TS_CTL_ERROR) {
		r = remote_error(&m, err);
	} else if (m.type != TS_CTL_SPAWNED || ts_ctl_get_u64(&m, TS_T_PROC, ret_proc) < 0 ||
		   ts_ctl_get_u64(&m, TS_T_PID, &pid) < 0 || pid > 4194304) {
		r = ts_err(err, -EPROTO, "bad spawn reply");
	} else {
		*ret_pid = (pid_t)pid;
		if (req->pty) {
			if (m.n_fds != 1 || !isatty(m.fds[0])) {
				r = ts_err(err, -EPROTO, "no pty in the spawn reply");
			} else {
				*ret_master = m.fds[0];
				m.n_fds = 0;
			}
		}
	}
	ts_ctl_msg_free(&m);
	return r;
}

int ts_procs_watch(int conn, uint64_t proc, struct ts_error *err)
{
	struct ts_ctl_msg m = { 0 };
	int r;

	ts_ctl_msg_init(&m, TS_CTL_WAIT, 2);
	r = ts_ctl_put_u64(&m, TS_T_PROC, proc);
	if (r == 0)
		r = ts_ctl_send(conn, &m, NULL, 0);
	ts_ctl_msg_free(&m);
	return r < 0 ? ts_err_errno(err, r, "send wait request") : 0;
}

int ts_procs_signal_async(int conn, uint64_t proc, int sig, struct ts_error *err)
{
	struct ts_ctl_msg m = { 0 };
	int r;

	ts_ctl_msg_init(&m, TS_CTL_SIGNAL, 3);
	r = ts_ctl_put_u64(&m, TS_T_PROC, proc);
	if (r == 0)
		r = ts_ctl_put_u64(&m, TS_T_SIGNAL, (uint64_t)sig);
	if (r == 0)
		r = ts_ctl_send(conn, &m, NULL, 0);
	ts_ctl_msg_free(&m);
	return r < 0 ? ts_err_errno(err, r, "send signal request") : 0;
}

int ts_procs_signal(int conn, uint64_t proc, int sig, struct ts_error *err)
{
	struct ts_ctl_msg m = { 0 };
	int r = ts_procs_signal_async(conn, proc, sig, err);

	if (r < 0)
		return r;
	r = ts_ctl_recv_timeout(conn, &m, TS_REPLY_MS);
	if (r < 0)
		return ts_err_errno(err, r, "signal reply");
	if (m.type == TS_CTL_ERROR)
		r = remote_error(&m, err);
	else if (m.type != TS_CTL_OK)
		r = ts_err(err, -EPROTO, "bad signal reply");
	ts_ctl_msg_free(&m);
	return r;
}

int ts_procs_list(int conn, struct ts_proc_info **ret, size_t *n, struct ts_error *err)
{
	struct ts_ctl_msg m = { 0 };
	struct ts_proc_info *list = NULL;
	size_t count = 0;
	int r;

	*ret = NULL;
	*n = 0;
	ts_ctl_msg_init(&m, TS_CTL_PS, 4);
	r = ts_ctl_send(conn, &m, NULL, 0);
	ts_ctl_msg_free(&m);
	if (r < 0)
		return ts_err_errno(err, r, "send ps request");
	for (;;) {
		struct ts_proc_info *pi, *grown;
		uint64_t pid = 0, status = 0;
		char state[16] = "";

		r = ts_ctl_recv_timeout(conn, &m, TS_REPLY_MS);
		if (r < 0) {
			r = ts_err_errno(err, r, "ps reply");
			break;
		}
		if (m.type == TS_CTL_END) {
			ts_ctl_msg_free(&m);
			break;
		}
		if (m.type == TS_CTL_ERROR) {
			r = remote_error(&m, err);
			ts_ctl_msg_free(&m);
			break;
		}
		if (m.type != TS_CTL_PS_ENTRY || count >= TS_PROCS_MAX) {
			r = ts_err(err, -EPROTO, "bad ps reply");
			ts_ctl_msg_free(&m);
			break;
		}
		grown = realloc(list, (count + 1) * sizeof(*list));
		if (!grown) {
			r = -ENOMEM;
			ts_ctl_msg_free(&m);
			break;
		}
		list = grown;
		pi = &list[count];
		memset(pi, 0, sizeof(*pi));
		if (ts_ctl_get_u64(&m, TS_T_PROC, &pi->proc) < 0 ||
		    ts_ctl_get_u64(&m, TS_T_PID, &pid) < 0 ||
		    ts_ctl_get_str(&m, TS_T_STATE, state, sizeof(state)) < 0 ||
		    ts_ctl_get_u64(&m, TS_T_STATUS, &status) < 0 || pid > 4194304 ||
		    status > 0xffff) {
			r = ts_err(err, -EPROTO, "bad ps entry");
			ts_ctl_msg_free(&m);
			break;
		}
		ts_ctl_get_u64(&m, TS_T_FLAGS, &pi->flags);
		if (ts_ctl_get_u64(&m, TS_T_UID, &pi->uid) < 0 || pi->uid > 0xffffffffULL)
			pi->uid = 0xffffffffULL; /* unknown */
		ts_ctl_get_u64(&m, TS_T_STARTED, &pi->started_ms);
		ts_ctl_get_u64(&m, TS_T_ENDED, &pi->ended_ms);
		if (ts_ctl_get_str(&m, TS_T_ARG, pi->command, sizeof(pi->command)) < 0)
			snprintf(pi->command, sizeof(pi->command), "?");
		ts_sanitize_text(pi->command);
		pi->pid = (pid_t)pid;
		pi->running = !strcmp(state, "running");
		pi->status = (int)status;
		count++;
		ts_ctl_msg_free(&m);
	}
	if (r < 0) {
		free(list);
		return r;
	}
	*ret = list;
	*n = count;
	return 0;
}

int ts_procs_exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 125;
}
