/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A Model Context Protocol server over two fds (stdio): newline-delimited JSON-RPC 2.0
 * exposing the toolkit of one runner. Methods: initialize, ping, tools/list, tools/call;
 * notifications initialized and cancelled. Protocol versions: ts_mcp_versions.
 *
 * tools/call answers {content: [{type: "text", text}], structuredContent, isError}: a
 * tool error, a denial and a failure of the sandbox or the event log are results with
 * isError (their text says what to do next); JSON-RPC errors are for protocol errors only
 * (-32700 a line that is not JSON, -32600 not a request, -32601 an unknown method, -32602
 * bad params and an unknown tool, as the MCP specification says).
 *
 * Approvals: the runner is opened with the server's approver (ts_mcp_approver). When the
 * client declared the `elicitation` capability (form mode), a gated call becomes an
 * `elicitation/create` request to the client (a boolean `approve` and an optional
 * `reason`); accept with approve true allows it, anything else denies. Otherwise the
 * call goes to the fallback approver (--approve-cmd), and without one it is denied with a
 * message naming `approval: never` and --approve-cmd (stdio is the protocol: there is no
 * terminal to ask). While it waits for the client's answer, pings and tools/list are
 * answered, other requests wait in a bounded queue, notifications/cancelled of the call
 * that waits denies it (and its response is not sent), of a queued call drops it.
 *
 * Bounds: a line at most TS_MCP_LINE_MAX bytes and TS_MCP_DEPTH_MAX levels deep (beyond:
 * a -32700 error, and the server goes on), TS_MCP_QUEUE_MAX requests queued.
 *
 * The server prints nothing: what goes wrong on the protocol reaches the log hook.
 */
#include <stdbool.h>

#include "error.h"
#include "runner.h"

#define TS_MCP_LINE_MAX (16U << 20)
#define TS_MCP_DEPTH_MAX 64
#define TS_MCP_QUEUE_MAX 256
#define TS_MCP_QUEUE_BYTES_MAX (64U << 20)
#define TS_MCP_ELICIT_TIMEOUT_MS (3600 * 1000) /* an unanswered approval is a denial */

/* The protocol versions answered, newest first (NULL-terminated). */
extern const char *const ts_mcp_versions[];

typedef void (*ts_mcp_log_fn)(void *userdata, const char *msg);

struct ts_mcp_opts {
	int in_fd, out_fd;   /* read requests from, write responses to (borrowed) */
	const char *version; /* serverInfo.version */
	/* Decides gated calls when the client has no elicitation (--approve-cmd; borrowed),
	 * or NULL: they are denied. */
	const struct ts_approver *fallback;
	ts_mcp_log_fn log; /* protocol trouble, one line each (NULL: dropped) */
	void *userdata;
};

struct ts_mcp;

int ts_mcp_new(const struct ts_mcp_opts *o, struct ts_mcp **ret, struct ts_error *err);
void ts_mcp_free(struct ts_mcp *m);
static inline void ts_mcp_freep(struct ts_mcp **m)
{
	ts_mcp_free(*m);
}
/* The server's approver (name "mcp", or the fallback's once the client is known to have no
 * elicitation), for ts_runner_opts.approver of the runner given to ts_mcp_serve. */
const struct ts_approver *ts_mcp_approver(struct ts_mcp *m);

/* Serve r's toolkit (borrowed) until end of input: 0; -errno when reading or writing the
 * fds failed (err). */
int ts_mcp_serve(struct ts_mcp *m, struct ts_runner *r, struct ts_error *err);
