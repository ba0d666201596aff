/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The e2b backend against a scripted E2B on loopback: a small HTTP/1.1 server forked here
 * (a process per connection, keep-alive, chunked bodies both ways) answers the control
 * plane and envd the way the spec's captures say E2B does, and checks what the client
 * sends (headers, paths, query encoding, envelope framing). Streams are written in pieces
 * that split envelopes across chunks, with pauses between, so the client's reassembly
 * and its epoll-driven stepping are what is tested. Nothing leaves 127.0.0.1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "tap.h"

#define KEY "e2b_0000000000000000000000000000000000000000"
#define BIG_READ 300000
#define BIG_WRITE 200000
#define E2B_FLAG_END_TEST 0x02 /* Connect's end-stream flag */

/* What the server saw, shared with its children. */
struct seen {
	int list_calls;
	int upload_ok;
	int multipart_ok, many_ok, metrics_calls;
	int accepts, requests;
	int bad_request; /* a request the server found malformed (its reason below) */
	char why[256];
	int release; /* /bin/late-end: the client looked, the end may go now */
};

struct req {
	char method[16], target[2048];
	char headers[8192];
	uint8_t *body;
	size_t len;
};

static struct seen *seen;

static void bad(const char *fmt, ...)
{
	va_list ap;

	seen->bad_request++;
	va_start(ap, fmt);
	vsnprintf(seen->why, sizeof(seen->why), fmt, ap);
	va_end(ap);
}

static int write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Read up to and including "\r\n\r\n" one byte at a time (bodies follow in the same
 * stream: no over-read). */
static int read_head(int fd, char *buf, size_t cap)
{
	size_t n = 0;

	while (n + 1 < cap) {
		ssize_t r = read(fd, buf + n, 1);

		if (r <= 0)
			return -1;
		n++;
		if (n >= 4 && !memcmp(buf + n - 4, "\r\n\r\n", 4)) {
			buf[n] = '\0';
			return 0;
		}
	}
	return -1;
}

static int read_exact(int fd, uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = read(fd, p, n);

		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static const char *header(const struct req *q, const char *name)
{
	static char value[1024];
	size_t nl = strlen(name);

	for (const char *p = strstr(q->headers, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n")) {
		const char *line = p + 2, *end = strstr(line, "\r\n");

		if (!strncasecmp(line, name, nl) && line[nl] == ':') {
			const char *v = line + nl + 1;

			while (*v == ' ')
				v++;
			snprintf(value, sizeof(value), "%.*s", (int)(end - v), v);
			return value;
		}
	}
	return NULL;
}

static int read_req(int fd, struct req *q)
{
	const char *te, *cl;

	memset(q, 0, sizeof(*q));
	if (read_head(fd, q->headers, sizeof(q->headers)) < 0 ||
	    sscanf(q->headers, "%15s %2047s", q->method, q->target) != 2)
		return -1;
	te = header(q, "Transfer-Encoding");
	if (te && strstr(te, "chunked")) {
		for (;;) {
			char line[64];
			size_t n = 0, k = 0;

			while (k + 1 < sizeof(line) && read(fd, line + k, 1) == 1) {
				if (++k >= 2 && line[k - 2] == '\r' && line[k - 1] == '\n')
					break;
			}
			line[k] = '\0';
			n = strtoul(line, NULL, 16);
			if (n == 0) {
				char crlf[2];

				return read_exact(fd, (uint8_t *)crlf, 2);
			}
			q->body = realloc(q->body, q->len + n);
			if (read_exact(fd, q->body + q->len, n) < 0)
				return -1;
			q->len += n;
			char crlf[2];

			if (read_exact(fd, (uint8_t *)crlf, 2) < 0)
				return -1;
		}
	}
	cl = header(q, "Content-Length");
	if (cl && (q->len = strtoul(cl, NULL, 10)) > 0) {
		q->body = malloc(q->len + 1);
		return read_exact(fd, q->body, q->len);
	}
	return 0;
}

static void reply(int fd, int status, const char *ctype, const char *extra, const char *body)
{
	char head[1024];
	size_t n = body ? strlen(body) : 0;

	snprintf(head, sizeof(head), "HTTP/1.1 %d X\r\n%s%s%sContent-Length: %zu\r\n\r\n", status,
		 ctype ? "Content-Type: " : "", ctype ? ctype : "", ctype ? "\r\n" : "", n);
	if (extra)
		snprintf(head + strlen(head) - 2, sizeof(head) - strlen(head) + 2, "%s\r\n\r\n",
			 extra);
	write_all(fd, head, strlen(head));
	if (n)
		write_all(fd, body, n);
}

static void chunk(int fd, const void *p, size_t n)
{
	char h[32];

	snprintf(h, sizeof(h), "%zx\r\n", n);
	write_all(fd, h, strlen(h));
	write_all(fd, p, n);
	write_all(fd, "\r\n", 2);
}

static void pause_ms(int ms)
{
	nanosleep(&(struct timespec){ .tv_nsec = ms * 1000000L }, NULL);
}

/* A stream's envelopes, written in pieces of 3 bytes then the rest, a pause between:
 * every envelope's header is split across chunks. */
static void stream_open(int fd)
{
	const char *h = "HTTP/1.1 200 OK\r\nContent-Type: application/connect+json\r\n"
			"Transfer-Encoding: chunked\r\n\r\n";

	write_all(fd, h, strlen(h));
}

static void envelope(int fd, int flags, const char *json)
{
	size_t n = strlen(json);
	uint8_t *b = malloc(n + 5);

	b[0] = (uint8_t)flags;
	b[1] = (uint8_t)(n >> 24);
	b[2] = (uint8_t)(n >> 16);
	b[3] = (uint8_t)(n >> 8);
	b[4] = (uint8_t)n;
	memcpy(b + 5, json, n);
	chunk(fd, b, 3);
	pause_ms(5);
	chunk(fd, b + 3, n + 2);
	free(b);
}

static void stream_close(int fd)
{
	write_all(fd, "0\r\n\r\n", 5);
}

/* The request envelope's JSON, checked for framing. */
static json_t *envelope_json(const struct req *q)
{
	uint32_t n;

	if (q->len < 5 || q->body[0] != 0) {
		bad("a stream request that is not one envelope");
		return NULL;
	}
	n = (uint32_t)q->body[1] << 24 | (uint32_t)q->body[2] << 16 | (uint32_t)q->body[3] << 8 |
	    q->body[4];
	if (n != q->len - 5) {
		bad("envelope length %u for %zu bytes", n, q->len - 5);
		return NULL;
	}
	return json_loadb((const char *)q->body + 5, n, 0, NULL);
}

static bool has(const struct req *q, const char *name, const char *value)
{
	const char *v = header(q, name);

	return v && !strcmp(v, value);
}

static void envd_headers_ok(const struct req *q)
{
	if ((!has(q, "E2b-Sandbox-Id", "sbx1") && !has(q, "E2b-Sandbox-Id", "old1")) ||
	    !has(q, "E2b-Sandbox-Port", "49983") || !has(q, "X-Access-Token", "tok"))
		bad("envd headers missing on %s", q->target);
}

/* One envelope as one chunk, appended to b at *n (room for it is the caller's). */
static void put_chunk(uint8_t *b, size_t *n, int flags, const char *json)
{
	size_t len = strlen(json);

	*n += (size_t)sprintf((char *)b + *n, "%zx\r\n", len + 5);
	b[(*n)++] = (uint8_t)flags;
	b[(*n)++] = (uint8_t)(len >> 24);
	b[(*n)++] = (uint8_t)(len >> 16);
	b[(*n)++] = (uint8_t)(len >> 8);
	b[(*n)++] = (uint8_t)len;
	memcpy(b + *n, json, len);
	*n += len;
	memcpy(b + *n, "\r\n", 2);
	*n += 2;
}

/* The start in one write; then, once the client has looked at its socket and found it
 * empty (seen->release), the end, the end-stream envelope and the last chunk in one write:
 * the whole rest of the stream lands in a single read. */
static void late_end(int fd)
{
	uint8_t b[512];
	size_t n = 0;

	put_chunk(b, &n, 0, "{\"event\":{\"start\":{\"pid\":45}}}");
	write_all(fd, b, n);
	for (int i = 0; i < 10000 && !__atomic_load_n(&seen->release, __ATOMIC_SEQ_CST); i++)
		pause_ms(1);
	n = 0;
	put_chunk(b, &n, 0, "{\"event\":{\"end\":{\"exited\":true,\"status\":\"exit status 0\"}}}");
	put_chunk(b, &n, E2B_FLAG_END_TEST, "{}");
	memcpy(b + n, "0\r\n\r\n", 5);
	n += 5;
	write_all(fd, b, n);
}

static void serve_start(int fd, const struct req *q)
{
	json_t *j = envelope_json(q), *p = json_object_get(j, "process");
	const char *cmd = json_string_value(json_object_get(p, "cmd"));

	envd_headers_ok(q);
	if (!has(q, "Content-Type", "application/connect+json") ||
	    !has(q, "Connect-Protocol-Version", "1"))
		bad("Start without Connect's stream headers");
	if (!cmd) {
		bad("Start without process.cmd");
		cmd = "";
	}
	stream_open(fd);
	if (!strcmp(cmd, "/bin/echo")) {
		json_t *args = json_object_get(p, "args");

		if (!has(q, "Authorization", "Basic cm9vdDo=") ||
		    strcmp(json_string_value(json_array_get(args, 0)), "hi") ||
		    strcmp(json_string_value(json_object_get(json_object_get(p, "envs"), "X")),
			   "1") ||
		    strcmp(json_string_value(json_object_get(p, "cwd")), "/tmp") ||
		    !json_is_false(json_object_get(j, "stdin")))
			bad("Start body or user wrong");
		envelope(fd, 0, "{\"event\":{\"start\":{\"pid\":42}}}");
		envelope(fd, 0, "{\"event\":{\"keepalive\":{}}}");
		envelope(fd, 0, "{\"event\":{\"data\":{\"stdout\":\"aGVsbG8g\"}}}");
		envelope(fd, 0, "{\"event\":{\"data\":{\"stderr\":\"b29wcw==\"}}}");
		envelope(fd, 0, "{\"event\":{\"data\":{\"stdout\":\"d29ybGQ\"}}}");
		envelope(fd, 0,
			 "{\"event\":{\"end\":{\"exitCode\":3,\"exited\":true,\"status\":\"exit "
			 "status 3\",\"error\":\"exit status 3\"}}}");
		envelope(fd, E2B_FLAG_END_TEST, "{}");
	} else if (!strcmp(cmd, "/bin/sleep")) {
		if (!has(q, "Connect-Timeout-Ms", "1500"))
			bad("Start without Connect-Timeout-Ms");
		envelope(fd, 0, "{\"event\":{\"start\":{\"pid\":43}}}");
		pause_ms(50);
		envelope(fd, E2B_FLAG_END_TEST,
			 "{\"error\":{\"code\":\"deadline_exceeded\",\"message\":\"deadline\"}}");
	} else if (!strcmp(cmd, "/bin/late-end")) {
		late_end(fd);
		json_decref(j);
		return;
	} else if (!strcmp(cmd, "/bin/kill-me")) {
		envelope(fd, 0, "{\"event\":{\"start\":{\"pid\":44}}}");
		envelope(fd, 0,
			 "{\"event\":{\"end\":{\"exitCode\":-1,\"status\":\"signal: killed\"}}}");
		envelope(fd, E2B_FLAG_END_TEST, "{}");
	} else {
		envelope(fd, E2B_FLAG_END_TEST,
			 "{\"error\":{\"code\":\"invalid_argument\",\"message\":\"cwd '/nope' does "
			 "not exist\"}}");
	}
	stream_close(fd);
	json_decref(j);
}

static void serve_connect(int fd, const struct req *q)
{
	json_t *j = envelope_json(q);
	json_int_t pid = json_integer_value(json_object_get(json_object_get(j, "process"), "pid"));

	envd_headers_ok(q);
	stream_open(fd);
	if (pid == 100) {
		envelope(fd, 0, "{\"event\":{\"start\":{\"pid\":100}}}");
		envelope(fd, 0, "{\"event\":{\"data\":{\"pty\":\"JCA=\"}}}");
		envelope(fd, 0,
			 "{\"event\":{\"end\":{\"exited\":true,\"status\":\"exit status 0\"}}}");
		envelope(fd, E2B_FLAG_END_TEST, "{}");
	} else {
		envelope(
			fd, E2B_FLAG_END_TEST,
			"{\"error\":{\"code\":\"not_found\",\"message\":\"process with pid 999 not "
			"found\"}}");
	}
	stream_close(fd);
	json_decref(j);
}

static void serve_watch(int fd, const struct req *q)
{
	json_t *j = envelope_json(q);

	envd_headers_ok(q);
	if (!json_is_true(json_object_get(j, "recursive")) ||
	    strcmp(json_string_value(json_object_get(j, "path")), "/home/user"))
		bad("WatchDir body wrong");
	stream_open(fd);
	envelope(fd, 0, "{\"start\":{}}");
	envelope(fd, 0, "{\"keepalive\":{}}");
	envelope(fd, 0, "{\"filesystem\":{\"name\":\"sub/a.txt\",\"type\":\"EVENT_TYPE_CREATE\"}}");
	envelope(fd, 0, "{\"filesystem\":{\"name\":\"b\",\"type\":\"EVENT_TYPE_UNSPECIFIED\"}}");
	envelope(fd, 0, "{\"filesystem\":{\"name\":\"b\",\"type\":\"EVENT_TYPE_REMOVE\"}}");
	envelope(fd, E2B_FLAG_END_TEST, "{}");
	stream_close(fd);
	json_decref(j);
}

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 7 + i / 251);
}

/* One part of a multipart/form-data body as E2B's uploads send it. */
struct part {
	char filename[256];
	const uint8_t *data;
	size_t len;
};

/* The `file` parts of q's multipart body (spec §5's shape exactly), or -1. */
static int parts_of(const struct req *q, struct part *p, int max)
{
	const char *ct = header(q, "Content-Type");
	const uint8_t *cur, *end = q->body + q->len;
	char delim[128], needle[140];
	size_t dl;
	int n = 0;

	if (!ct || strncmp(ct, "multipart/form-data; boundary=", 30) || strlen(ct + 30) > 70)
		return -1;
	snprintf(delim, sizeof(delim), "--%s", ct + 30);
	snprintf(needle, sizeof(needle), "\r\n%s", delim);
	dl = strlen(delim);
	if (q->len < dl || memcmp(q->body, delim, dl))
		return -1;
	for (cur = q->body + dl;;) {
		const uint8_t *hend, *dend;
		const char *fn;
		char hdrs[1024];

		if (end - cur == 4 && !memcmp(cur, "--\r\n", 4))
			return n;
		if (end - cur < 2 || memcmp(cur, "\r\n", 2) || n >= max)
			return -1;
		cur += 2;
		hend = memmem(cur, (size_t)(end - cur), "\r\n\r\n", 4);
		if (!hend || (size_t)(hend - cur) >= sizeof(hdrs))
			return -1;
		memcpy(hdrs, cur, (size_t)(hend - cur));
		hdrs[hend - cur] = '\0';
		if (strncmp(hdrs, "Content-Disposition: form-data; name=\"file\"; filename=\"",
			    55) ||
		    !strstr(hdrs, "\r\nContent-Type: application/octet-stream"))
			return -1;
		fn = hdrs + 55;
		snprintf(p[n].filename, sizeof(p[n].filename), "%.*s", (int)strcspn(fn, "\""), fn);
		cur = hend + 4;
		dend = memmem(cur, (size_t)(end - cur), needle, strlen(needle));
		if (!dend)
			return -1;
		p[n].data = cur;
		p[n].len = (size_t)(dend - cur);
		n++;
		cur = dend + strlen(needle);
	}
}

static void serve_files(int fd, const struct req *q)
{
	envd_headers_ok(q);
	if (!strcmp(q->method, "GET") && !strcmp(q->target, "/files?path=%2Fbig&username=root")) {
		uint8_t *b = malloc(BIG_READ);
		const char *h = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
				"Transfer-Encoding: chunked\r\n\r\n";

		for (size_t i = 0; i < BIG_READ; i++)
			b[i] = pattern(i);
		write_all(fd, h, strlen(h));
		for (size_t off = 0; off < BIG_READ; off += 70001)
			chunk(fd, b + off, BIG_READ - off < 70001 ? BIG_READ - off : 70001);
		stream_close(fd);
		free(b);
	} else if (!strcmp(q->method, "GET")) {
		reply(fd, 404, "application/json", NULL,
		      "{\"code\":404,\"message\":\"path '/missing' does not exist\"}");
	} else if (!strcmp(q->target, "/files?path=%2Fold-up")) {
		/* envd older than 0.5.7: the upload as the SDK's multipart, one part */
		struct part p[2];
		bool good = parts_of(q, p, 2) == 1 && !strcmp(p[0].filename, "/old-up") &&
			    p[0].len == BIG_WRITE && has(q, "Transfer-Encoding", "chunked");

		for (size_t i = 0; good && i < p[0].len; i++)
			good = p[0].data[i] == pattern(i);
		seen->multipart_ok += good;
		if (!good)
			bad("the old envd's upload is not the SDK's multipart");
		reply(fd, 200, "application/json", NULL,
		      "[{\"path\":\"/old-up\",\"name\":\"old-up\",\"type\":\"file\"}]");
	} else if (!strcmp(q->target, "/files?path=%2Fold%22q%0D%0AX-Evil%3A%201")) {
		/* a path no filename can carry: the part is named `file` (the query names
		 * the path), never a header of its own */
		struct part p[2];
		bool good = parts_of(q, p, 2) == 1 && !strcmp(p[0].filename, "file") &&
			    p[0].len == 3 && !memcmp(p[0].data, "abc", 3) &&
			    !memmem(q->body, q->len, "X-Evil", 6);

		seen->multipart_ok += good;
		if (!good)
			bad("the old envd's upload of an odd path is not one part named `file`");
		reply(fd, 200, "application/json", NULL,
		      "[{\"path\":\"/old\\\"q\",\"name\":\"q\",\"type\":\"file\"}]");
	} else if (!strcmp(q->target, "/files?username=user")) {
		/* files.write([...]): no path query, a part per file named by its path */
		struct part p[3];
		bool good = parts_of(q, p, 3) == 2 && !strcmp(p[0].filename, "/m/a.txt") &&
			    p[0].len == 5 && !memcmp(p[0].data, "hello", 5) &&
			    !strcmp(p[1].filename, "rel/b.bin") && p[1].len == BIG_WRITE;

		for (size_t i = 0; good && i < p[1].len; i++)
			good = p[1].data[i] == pattern(i);
		seen->many_ok += good;
		if (!good)
			bad("files.write of two files is not the SDK's multipart");
		reply(fd, 200, "application/json", NULL,
		      "[{\"path\":\"/m/a.txt\",\"name\":\"a.txt\",\"type\":\"file\"},"
		      "{\"path\":\"/home/user/rel/b.bin\",\"name\":\"b.bin\",\"type\":"
		      "\"file\"}]");
	} else if (!strcmp(q->target, "/files")) {
		reply(fd, 400, "application/json", NULL,
		      "{\"code\":400,\"message\":\"path '/x' is given twice\"}");
	} else if (!strcmp(q->target, "/files?path=%2Fup")) {
		bool good = q->len == BIG_WRITE &&
			    has(q, "Content-Type", "application/octet-stream");

		for (size_t i = 0; good && i < q->len; i++)
			good = q->body[i] == pattern(i);
		seen->upload_ok += good;
		reply(fd, 200, "application/json", NULL,
		      "[{\"path\":\"/up\",\"name\":\"up\",\"type\":\"file\"}]");
	} else {
		reply(fd, 507, "application/json", NULL, "{\"code\":507,\"message\":\"no space\"}");
	}
}

/* envd's /health as E2B's proxy answers it: 204 for the live sandbox, 502 for one gone. */
static void serve_health(int fd, const struct req *q)
{
	if (has(q, "E2b-Sandbox-Id", "sbx1"))
		reply(fd, 204, NULL, NULL, NULL);
	else
		reply(fd, 502, "application/json", NULL,
		      "{\"sandboxId\":\"old1\",\"message\":\"The sandbox was not found\","
		      "\"code\":502}");
}

static void serve_unary(int fd, const struct req *q)
{
	json_t *j = json_loadb((const char *)q->body, q->len, 0, NULL);
	const char *m = q->target + 1;

	envd_headers_ok(q);
	if (!has(q, "Content-Type", "application/json"))
		bad("a unary call that is not application/json");
	if (!strcmp(m, "process.Process/List")) {
		reply(fd, 200, "application/json", NULL,
		      "{\"processes\":[{\"config\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\"],"
		      "\"envs\":{\"A\":\"1\"},\"cwd\":\"/tmp\"},\"pid\":100,\"tag\":\"t\"}]}");
	} else if (!strcmp(m, "process.Process/SendSignal")) {
		json_int_t pid =
			json_integer_value(json_object_get(json_object_get(j, "process"), "pid"));

		if (pid == 100 &&
		    !strcmp(json_string_value(json_object_get(j, "signal")), "SIGNAL_SIGKILL"))
			reply(fd, 200, "application/json; charset=utf-8", NULL, "{}");
		else
			reply(fd, 404, "application/json", NULL,
			      "{\"code\":\"not_found\",\"message\":\"process with pid 5 not found\"}");
	} else if (!strcmp(m, "process.Process/SendInput")) {
		const char *in =
			json_string_value(json_object_get(json_object_get(j, "input"), "stdin"));

		if (!in || strcmp(in, "YWJj"))
			bad("SendInput body wrong");
		reply(fd, 200, "application/json", NULL, "{}");
	} else if (!strcmp(m, "filesystem.Filesystem/Stat")) {
		if (!has(q, "Authorization", "Basic dXNlcjo="))
			bad("Stat without the user");
		reply(fd, 200, "application/json", NULL,
		      "{\"entry\":{\"name\":\"f\",\"path\":\"/home/user/f\",\"type\":"
		      "\"FILE_TYPE_FILE\",\"size\":\"5\",\"mode\":420,\"permissions\":\"-rw-r--r--"
		      "\",\"owner\":\"user\",\"group\":\"user\",\"modifiedTime\":\"2024-01-02T03:"
		      "04:05.123456789Z\"}}");
	} else if (!strcmp(m, "filesystem.Filesystem/MakeDir")) {
		reply(fd, 409, "application/json", NULL,
		      "{\"code\":\"already_exists\",\"message\":\"directory exists\"}");
	} else if (!strcmp(m, "filesystem.Filesystem/ListDir")) {
		if (json_integer_value(json_object_get(j, "depth")) != 2)
			bad("ListDir depth wrong");
		reply(fd, 200, "application/json", NULL,
		      "{\"entries\":[{\"name\":\"d\",\"path\":\"/home/user/d\",\"type\":"
		      "\"FILE_TYPE_DIRECTORY\",\"size\":\"4096\",\"mode\":493},{\"name\":\"l\","
		      "\"path\":\"/home/user/d/l\",\"type\":\"FILE_TYPE_FILE\",\"symlinkTarget\":"
		      "\"/etc/passwd\"}]}");
	} else {
		reply(fd, 502, NULL, NULL, "Bad Gateway");
	}
	json_decref(j);
}

static void serve_api(int fd, const struct req *q)
{
	if (!has(q, "X-API-KEY", KEY)) {
		reply(fd, 401, "application/json", NULL, "{\"code\":401,\"message\":\"bad key\"}");
		return;
	}
	if (!strcmp(q->method, "POST") && !strcmp(q->target, "/v2/sandboxes")) {
		json_t *j = json_loadb((const char *)q->body, q->len, 0, NULL);

		if (!j || strcmp(json_string_value(json_object_get(j, "templateID")), "base") ||
		    json_integer_value(json_object_get(j, "timeout")) != 120 ||
		    strcmp(json_string_value(json_object_get(json_object_get(j, "metadata"), "a")),
			   "b") ||
		    strcmp(json_string_value(json_object_get(json_object_get(j, "envVars"), "X")),
			   "1"))
			bad("create body wrong");
		reply(fd, 201, "application/json", NULL,
		      "{\"sandboxID\":\"sbx1\",\"templateID\":\"base\",\"clientID\":\"c\","
		      "\"envdVersion\":\"0.6.13\",\"envdAccessToken\":\"tok\",\"domain\":null}");
		json_decref(j);
	} else if (!strcmp(q->method, "GET") && !strcmp(q->target, "/sandboxes/sbx1")) {
		reply(fd, 200, "application/json", NULL,
		      "{\"sandboxID\":\"sbx1\",\"templateID\":\"base\",\"clientID\":\"c\","
		      "\"envdVersion\":\"0.6.13\",\"envdAccessToken\":\"tok\",\"startedAt\":\""
		      "2024-01-02T03:04:05Z\",\"endAt\":\"2024-01-02T03:06:05Z\",\"state\":"
		      "\"running\",\"metadata\":{\"a\":\"b\"},\"cpuCount\":2,\"memoryMB\":512}");
	} else if (!strcmp(q->method, "POST") && !strcmp(q->target, "/v2/sandboxes/sbx1/connect")) {
		if (q->len != 2 && !strstr((const char *)q->body, "\"timeout\":5"))
			bad("connect body wrong");
		reply(fd, 200, "application/json", NULL,
		      "{\"sandboxID\":\"sbx1\",\"templateID\":\"base\",\"clientID\":\"c\","
		      "\"envdVersion\":\"0.6.13\",\"envdAccessToken\":\"tok\"}");
	} else if (!strncmp(q->target, "/v2/sandboxes?", 14) && !strcmp(q->method, "GET")) {
		if (seen->list_calls++ == 0) {
			reply(fd, 429, "application/json", "Retry-After: 1",
			      "{\"code\":429,\"message\":\"slow down\"}");
			return;
		}
		if (!strstr(q->target, "metadata=test-key%3Da%252520b%252526c%25253Dd") ||
		    !strstr(q->target, "state=running") || !strstr(q->target, "limit=1"))
			bad("list query wrong: %.200s", q->target);
		if (!strstr(q->target, "nextToken=T%2B1"))
			reply(fd, 200, "application/json", "X-Next-Token: T+1",
			      "[{\"sandboxID\":\"sbx1\",\"templateID\":\"base\",\"state\":"
			      "\"running\",\"startedAt\":\"2024-01-02T03:04:05Z\"}]");
		else
			reply(fd, 200, "application/json", NULL,
			      "[{\"sandboxID\":\"sbx2\",\"templateID\":\"base\",\"state\":"
			      "\"paused\"}]");
	} else if (!strcmp(q->method, "GET") &&
		   !strncmp(q->target, "/sandboxes/sbx1/metrics", 23)) {
		/* getMetrics: the window in whole unix seconds (spec §2) */
		if (seen->metrics_calls++ == 1 &&
		    strcmp(q->target, "/sandboxes/sbx1/metrics?start=1704164645&end=1704164706"))
			bad("metrics window wrong: %.200s", q->target);
		reply(fd, 200, "application/json", NULL,
		      "[{\"timestamp\":\"2024-01-02T03:04:05Z\",\"timestampUnix\":1704164645,"
		      "\"cpuCount\":2,\"cpuUsedPct\":12.5,\"memUsed\":1048576,\"memTotal\":"
		      "536870912,\"memCache\":4096,\"diskUsed\":2097152,\"diskTotal\":"
		      "1073741824},{\"timestampUnix\":1704164650,\"cpuCount\":2,\"cpuUsedPct\":"
		      "0,\"memUsed\":1048576,\"memTotal\":536870912,\"memCache\":0,"
		      "\"diskUsed\":2097152,\"diskTotal\":1073741824}]");
	} else if (!strcmp(q->method, "POST") && !strcmp(q->target, "/v2/sandboxes/old1/connect")) {
		reply(fd, 200, "application/json", NULL,
		      "{\"sandboxID\":\"old1\",\"templateID\":\"base\",\"clientID\":\"c\","
		      "\"envdVersion\":\"0.5.6\",\"envdAccessToken\":\"tok\"}");
	} else if (!strcmp(q->method, "DELETE") && !strcmp(q->target, "/sandboxes/sbx1")) {
		reply(fd, 204, NULL, NULL, NULL);
	} else {
		reply(fd, 404, "application/json", NULL,
		      "{\"code\":404,\"message\":\"sandbox not found\"}");
	}
}

static void serve_conn(int fd)
{
	struct req q;

	while (read_req(fd, &q) == 0) {
		__atomic_add_fetch(&seen->requests, 1, __ATOMIC_SEQ_CST);
		if (!strncmp(q.target, "/v2/", 4) || !strncmp(q.target, "/sandboxes", 10))
			serve_api(fd, &q);
		else if (!strcmp(q.target, "/process.Process/Start"))
			serve_start(fd, &q);
		else if (!strcmp(q.target, "/process.Process/Connect"))
			serve_connect(fd, &q);
		else if (!strcmp(q.target, "/filesystem.Filesystem/WatchDir"))
			serve_watch(fd, &q);
		else if (!strncmp(q.target, "/files?", 7) || !strcmp(q.target, "/files"))
			serve_files(fd, &q);
		else if (!strcmp(q.target, "/health"))
			serve_health(fd, &q);
		else
			serve_unary(fd, &q);
		free(q.body);
	}
	close(fd);
}

static pid_t server(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	pid_t pid;

	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 64) < 0 ||
	    getsockname(s, (struct sockaddr *)&a, &al) < 0)
		return -1;
	*port = ntohs(a.sin_port);
	pid = fork();
	if (pid != 0) {
		close(s);
		return pid;
	}
	signal(SIGCHLD, SIG_IGN);
	for (;;) {
		int c = accept(s, NULL, NULL);

		if (c < 0)
			continue;
		seen->accepts++;
		if (fork() == 0) {
			close(s);
			serve_conn(c);
			_exit(0);
		}
		close(c);
	}
}

static bool race_armed;

/* Is something ready on epfd that was not among had[0..n)? */
static bool more_ready(int epfd, const struct epoll_event *had, int n)
{
	struct epoll_event now[16];
	int m = epoll_pwait(epfd, now, 16, 0, NULL);

	for (int i = 0; i < m; i++) {
		bool old = false;

		for (int k = 0; k < n; k++)
			old |= now[i].data.fd == had[k].data.fd;
		if (!old)
			return true;
	}
	return false;
}

/*
 * The library's epoll_wait (the e2b streams call it, nothing else here does), so that a
 * test can stage the race of a missed wake-up: when armed, the next call returns what was
 * ready, but only after the server was let go (seen->release) and its bytes have landed
 * on the socket. The caller acts on a snapshot that misses them, as when data arrives just
 * after a drive looked.
 */
int epoll_wait(int epfd, struct epoll_event *evs, int max, int ms)
{
	int n = epoll_pwait(epfd, evs, max, ms, NULL);

	if (n >= 0 && race_armed) {
		race_armed = false;
		__atomic_store_n(&seen->release, 1, __ATOMIC_SEQ_CST);
		for (int i = 0; i < 1000 && !more_ready(epfd, evs, n); i++)
			pause_ms(5);
	}
	return n;
}

static struct ts_cmd_event wait_ev(struct ts_cmd *c, int *r, struct ts_error *err)
{
	struct ts_cmd_event ev = { 0 };

	/* bounded: a stream whose fd never becomes readable fails here, not hangs */
	*r = ts_cmd_wait_event(c, &ev, 5000, err);
	return ev;
}

static void test_commands(struct ts_sb *sb)
{
	struct ts_error err = { 0 };
	char *argv[] = { "/bin/echo", "hi", NULL };
	struct ts_kv envs[] = { { "X", "1" } };
	struct ts_cmd_opts o = {
		.argv = argv, .envs = envs, .n_envs = 1, .cwd = "/tmp", .user = "root"
	};
	struct ts_run_result res;
	struct ts_cmd *c = NULL;
	struct ts_cmd_event ev;
	pid_t pid = 0;
	int r;

	r = ts_be_run(sb, &o, NULL, NULL, true, 1 << 20, &res, &err);
	ok(r == 0 && res.exit_code == 3 && res.out_len == 11 &&
		   !memcmp(res.out, "hello world", 11) && res.err_len == 4 &&
		   !memcmp(res.errout, "oops", 4),
	   "run: stdout and stderr reassembled from envelopes split across chunks, exit 3 (%s)",
	   r < 0 ? err.msg : "");
	ts_run_result_clear(&res);

	r = ts_cmd_start(sb, &o, &c, &pid, NULL, &err);
	ok(r == 0 && pid == 42,
	   "start: the pid comes from the start event before the call returns");
	if (r == 0) {
		ev = wait_ev(c, &r, &err);
		ok(r == 0 && ev.type == TS_CMD_EV_START && ev.pid == 42,
		   "the first event is start");
		ev = wait_ev(c, &r, &err);
		ok(r == 0 && ev.type == TS_CMD_EV_STDOUT && ev.len == 6 && ev.offset == 0,
		   "then stdout `hello ` at offset 0");
		ev = wait_ev(c, &r, &err);
		ok(r == 0 && ev.type == TS_CMD_EV_STDERR && ev.len == 4, "then stderr");
		ev = wait_ev(c, &r, &err);
		ok(r == 0 && ev.type == TS_CMD_EV_STDOUT && ev.offset == 6 && ev.len == 5,
		   "then stdout `world` (unpadded base64) at offset 6");
		ev = wait_ev(c, &r, &err);
		ok(r == 0 && ev.type == TS_CMD_EV_END && ev.exit_code == 3 && !ev.timed_out,
		   "then the end, once the end-stream envelope came");
		ok(ts_cmd_step(c, &ev, &err) == -EPIPE, "after the end a step is -EPIPE");
		ts_cmd_close(c);
		c = NULL;
	}

	char *sleep_argv[] = { "/bin/sleep", "10", NULL };
	struct ts_cmd_opts so = { .argv = sleep_argv, .timeout_ms = 1500 };

	r = ts_be_run(sb, &so, NULL, NULL, true, 1024, &res, &err);
	ok(r == 0 && res.timed_out && res.exit_code == -1,
	   "a deadline_exceeded end-stream is a timed-out end (delta §2.2) (%s)",
	   r < 0 ? err.msg : "");
	ts_run_result_clear(&res);

	char *kill_argv[] = { "/bin/kill-me", NULL };
	struct ts_cmd_opts ko = { .argv = kill_argv };

	r = ts_be_run(sb, &ko, NULL, NULL, false, 0, &res, &err);
	ok(r == 0 && res.exit_code == -1 && res.signal == 9 && !res.timed_out,
	   "an end after SIGKILL (`signal: killed`, exited false) is signal 9");
	ts_run_result_clear(&res);

	/* a step drives curl, and the stream's last bytes can land between its look at what
	 * is buffered and its look at the socket: the end, the end-stream and the last chunk
	 * read in one go, after which the socket is quiet for good */
	char *late_argv[] = { "/bin/late-end", NULL };
	struct ts_cmd_opts lo = { .argv = late_argv };

	r = ts_cmd_start(sb, &lo, &c, &pid, NULL, &err);
	ok(r == 0 && pid == 45, "start /bin/late-end (%s)", r < 0 ? err.msg : "");
	if (r == 0) {
		struct pollfd pf = { .fd = ts_cmd_fd(c), .events = ts_cmd_events(c) };
		bool quiet = false;

		ev = wait_ev(c, &r, &err);
		ok(r == 0 && ev.type == TS_CMD_EV_START, "its start");
		/* as ts_be_run waits, with no deadline: step, and poll when a step has nothing */
		race_armed = true;
		for (int i = 0; i < 100 && (r = ts_cmd_step(c, &ev, &err)) == 0; i++)
			if (poll(&pf, 1, 5000) == 0) {
				quiet = true;
				break;
			}
		ok(r > 0 && !quiet && ev.type == TS_CMD_EV_END && ev.exit_code == 0,
		   "an end that lands while a step drives curl leaves the fd readable (%s)",
		   quiet   ? "the fd stayed quiet 5 s with the end buffered"
		   : r < 0 ? err.msg
			   : "");
		race_armed = false;
		ts_cmd_close(c);
		c = NULL;
	}

	char *bad_argv[] = { "/bin/true", NULL };
	struct ts_cmd_opts bo = { .argv = bad_argv, .cwd = "/nope" };

	r = ts_cmd_start(sb, &bo, &c, &pid, NULL, &err);
	ok(r < 0 && ts_be_code(&err) == TS_BE_INVALID_ARGUMENT && strstr(err.msg, "/nope"),
	   "an error before the first message (200 + a lone end-stream) fails the start as "
	   "invalid_argument (%s)",
	   err.msg);

	struct ts_proc_sel p = { .pid = 100 };

	r = ts_cmd_connect(sb, &p, &c, &err);
	ok(r == 0 && ts_cmd_pid(c) == 100, "connect to pid 100");
	if (r == 0) {
		ev = wait_ev(c, &r, &err);
		ev = wait_ev(c, &r, &err);
		ok(r == 0 && ev.type == TS_CMD_EV_PTY && ev.len == 2 && !memcmp(ev.data, "$ ", 2),
		   "pty output");
		ev = wait_ev(c, &r, &err);
		ok(r == 0 && ev.type == TS_CMD_EV_END && ev.exit_code == 0,
		   "an end with exitCode omitted (Go's default) is exit 0");
		ts_cmd_close(c);
		c = NULL;
	}
	p.pid = 999;
	r = ts_cmd_connect(sb, &p, &c, &err);
	ok(r < 0 && ts_be_code(&err) == TS_BE_NOT_FOUND, "connect to an unknown pid: not_found");

	struct ts_proc_entry *procs = NULL;
	size_t n = 0;

	r = ts_cmd_list(sb, &procs, &n, &err);
	ok(r == 0 && n == 1 && procs[0].pid == 100 && !strcmp(procs[0].argv[0], "/bin/bash") &&
		   !strcmp(procs[0].argv[1], "-l") && !strcmp(procs[0].envs[0], "A=1") &&
		   !strcmp(procs[0].cwd, "/tmp") && !strcmp(procs[0].tag, "t"),
	   "list: config, pid and tag");
	ts_proc_entries_free(procs, n);

	p.pid = 100;
	ok(ts_cmd_signal(sb, &p, SIGKILL, &err) == 0, "SIGKILL to pid 100 (SIGNAL_SIGKILL)");
	p.pid = 5;
	ok(ts_cmd_signal(sb, &p, SIGKILL, &err) < 0 && ts_be_code(&err) == TS_BE_NOT_FOUND,
	   "a signal to an unknown pid: not_found from a unary error body");
	p.pid = 100;
	ok(ts_cmd_send_stdin(sb, &p, "abc", 3, &err) == 0, "stdin `abc` goes as base64");
}

static void test_files(struct ts_sb *sb)
{
	struct ts_error err = { 0 };
	struct ts_be_entry e;
	struct ts_be_entry *v = NULL;
	size_t n = 0, len = 0;
	uint8_t *data = NULL, *big;
	bool created = true, all = true;
	int r;

	r = ts_file_stat(sb, "f", "user", &e, &err);
	ok(r == 0 && e.type == TS_BE_FILE && e.size == 5 && e.mode == 0644 && e.uid == 1000 &&
		   e.mtime_ms == 1704164645123ULL && !strcmp(e.path, "/home/user/f"),
	   "stat: Go's EntryInfo (int64 size as a string, enum type, Timestamp)");
	ts_be_entry_clear(&e);
	r = ts_file_mkdir(sb, "/d", NULL, &created, &err);
	ok(r == 0 && !created, "mkdir of an existing directory: already_exists is `not created`");
	r = ts_file_list(sb, "/home/user", 2, NULL, &v, &n, &err);
	ok(r == 0 && n == 2 && v[0].type == TS_BE_DIR && v[0].mode == 0755 && v[1].symlink_target &&
		   !strcmp(v[1].symlink_target, "/etc/passwd"),
	   "list with depth 2");
	ts_be_entries_free(v, n);

	r = ts_file_read(sb, "/big", "root", &data, &len, 1 << 20, &err);
	for (size_t i = 0; r == 0 && i < len && all; i++)
		all = data[i] == pattern(i);
	ok(r == 0 && len == BIG_READ && all, "read 300000 bytes through /files (%s)",
	   r < 0 ? err.msg : "");
	free(data);
	r = ts_file_read(sb, "/missing", NULL, &data, &len, 1 << 20, &err);
	ok(r < 0 && ts_be_code(&err) == TS_BE_NOT_FOUND, "read of a missing file: not_found");

	big = malloc(BIG_WRITE);
	for (size_t i = 0; i < BIG_WRITE; i++)
		big[i] = pattern(i);
	r = ts_file_write(sb, "/up", NULL, big, BIG_WRITE, -1, &err);
	ok(r == 0 && seen->upload_ok == 1,
	   "write 200000 bytes: one chunked octet-stream POST, the server got them all (%s)",
	   r < 0 ? err.msg : "");
	r = ts_file_write(sb, "/full", NULL, big, 10, -1, &err);
	ok(r < 0 && ts_be_code(&err) == TS_BE_NOT_ENOUGH_SPACE, "a 507 is not_enough_space");

	struct ts_file_data many[] = {
		{ .path = "/m/a.txt", .data = "hello", .len = 5, .mode = -1 },
		{ .path = "rel/b.bin", .data = big, .len = BIG_WRITE, .mode = -1 },
	};
	size_t done = 0;

	r = ts_file_write_many(sb, many, 2, "user", &done, &err);
	ok(r == 0 && done == 2 && seen->many_ok == 1,
	   "write_many: one multipart POST /files?username=user, a `file` part per file named by "
	   "its path (%s)",
	   r < 0 ? err.msg : "");
	many[1].path = "/m/a.txt";
	r = ts_file_write_many(sb, many, 2, NULL, &done, &err);
	ok(r < 0 && ts_be_code(&err) == TS_BE_INVALID_ARGUMENT && done == 0,
	   "write_many naming a path twice: invalid_argument before any request");
	many[1].path = "/m/q\"uote";
	many[1].len = 1;
	r = ts_file_write_many(sb, many, 2, NULL, &done, &err);
	ok(r < 0 && ts_be_code(&err) == TS_BE_NOT_ENOUGH_SPACE && done == 0 && seen->many_ok == 1,
	   "write_many of a path no filename can carry: one octet-stream POST each (%s)", err.msg);
	free(big);

	struct ts_watch *w = NULL;
	struct ts_watch_event we;

	r = ts_watch_start(sb, "/home/user", true, NULL, &w, &err);
	ok(r == 0, "watch starts once `start` came (%s)", r < 0 ? err.msg : "");
	if (r == 0) {
		struct pollfd pf = { .fd = ts_watch_fd(w), .events = POLLIN };
		int got = 0, ops[4] = { 0 };

		for (int i = 0; i < 200 && got < 2; i++) {
			r = ts_watch_step(w, &we, &err);
			if (r == 1)
				ops[got++] = we.op;
			else if (r < 0)
				break;
			else
				poll(&pf, 1, 100);
		}
		ok(got == 2 && ops[0] == TS_WATCH_CREATE && ops[1] == TS_WATCH_REMOVE,
		   "watch: create then remove; keepalive and UNSPECIFIED dropped");
		ts_watch_close(w);
	}
}

/* getMetrics, isRunning, and an old envd's uploads. */
static void test_probes(struct ts_backend *b, const char *url)
{
	struct ts_error err = { 0 };
	struct ts_sb_metric *v = NULL;
	struct ts_backend *b2 = NULL;
	struct ts_sb *sb = NULL, *old = NULL;
	bool running = false;
	uint8_t *big;
	size_t n = 0;
	int r;

	r = ts_sb_metrics(b, "sbx1", 0, 0, &v, &n, &err);
	ok(r == 0 && n == 2 && v[0].ts_ms == 1704164645000LL && v[0].cpu_count == 2 &&
		   v[0].cpu_pct == 12.5 && v[0].mem_used == 1048576 &&
		   v[0].mem_total == 536870912 && v[0].mem_cache == 4096 &&
		   v[0].disk_used == 2097152 && v[0].disk_total == 1073741824 &&
		   v[1].ts_ms == 1704164650000LL,
	   "metrics: SandboxMetric as ts_sb_metric (RFC 3339 time, else timestampUnix) (%s)",
	   r < 0 ? err.msg : "");
	free(v);
	r = ts_sb_metrics(b, "sbx1", 1704164645500LL, 1704164705100LL, &v, &n, &err);
	ok(r == 0 && n == 2 && seen->metrics_calls == 2,
	   "metrics: a window in ms asks for the whole seconds that hold it");
	free(v);
	r = ts_sb_metrics(b, "gone", 0, 0, &v, &n, &err);
	ok(r < 0 && ts_be_code(&err) == TS_BE_NOT_FOUND && !v && !n,
	   "metrics of an unknown sandbox: not_found");
	r = ts_sb_metrics(b, "sbx1", 2000, 1000, &v, &n, &err);
	ok(r < 0 && ts_be_code(&err) == TS_BE_INVALID_ARGUMENT, "metrics: a window ending first");

	r = ts_sb_connect(b, "sbx1", -1, &sb, &err);
	r = r < 0 ? r : ts_sb_is_running(sb, &running, &err);
	ok(r == 0 && running, "isRunning: envd's /health answered 204");
	ts_sb_close(sb);
	r = ts_sb_connect(b, "old1", -1, &old, &err);
	ok(r == 0, "connect to a sandbox with envd 0.5.6 (%s)", r < 0 ? err.msg : "");
	if (r < 0)
		return;
	running = true;
	r = ts_sb_is_running(old, &running, &err);
	ok(r == 0 && !running, "isRunning: a 502 from the proxy is `not running`, no error");
	big = malloc(BIG_WRITE);
	for (size_t i = 0; i < BIG_WRITE; i++)
		big[i] = pattern(i);
	r = ts_file_write(old, "/old-up", NULL, big, BIG_WRITE, -1, &err);
	ok(r == 0 && seen->multipart_ok == 1,
	   "write to envd < 0.5.7: the SDK's multipart, streamed (chunked), one part named by "
	   "the path (%s)",
	   r < 0 ? err.msg : "");
	r = ts_file_write(old, "/old\"q\r\nX-Evil: 1", NULL, "abc", 3, -1, &err);
	ok(r == 0 && seen->multipart_ok == 2,
	   "write to envd < 0.5.7 of a path with a quote and CR LF: one part named `file`, no "
	   "header injected (%s)",
	   r < 0 ? err.msg : "");
	free(big);
	ts_sb_close(old);

	/* envd nobody answers for: the control plane works, the sandbox's envd does not */
	setenv("E2B_SANDBOX_URL", "http://127.0.0.1:1", 1);
	r = ts_backend_open("e2b", &b2, &err);
	setenv("E2B_SANDBOX_URL", url, 1);
	r = r < 0 ? r : ts_sb_connect(b2, "sbx1", -1, &sb, &err);
	r = r < 0 ? r : ts_sb_is_running(sb, &running, &err);
	ok(r < 0 && ts_be_code(&err) == TS_BE_UNAVAILABLE,
	   "isRunning with envd unreachable: unavailable, a typed error (%s)", err.msg);
	ts_sb_close(sb);
	ts_backend_free(b2);
}

int main(void)
{
	struct ts_error err = { 0 };
	struct ts_backend *b = NULL;
	struct ts_sb *sb = NULL;
	struct ts_sb_info info, *infos = NULL;
	char url[64];
	char *token = NULL;
	int port = 0, r;
	pid_t srv;

	plan(0);
	seen = mmap(NULL, sizeof(*seen), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	srv = server(&port);
	if (srv < 0) {
		printf("1..0 # SKIP no loopback socket\n");
		return 0;
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	unsetenv("E2B_API_KEY");
	unsetenv("E2B_DEBUG");
	r = ts_backend_open("e2b", &b, &err);
	ok(r < 0 && ts_be_code(&err) == TS_BE_AUTHENTICATION && strstr(err.msg, "E2B_API_KEY"),
	   "no E2B_API_KEY: an authentication error naming it (%s)", err.msg);
	setenv("E2B_API_KEY", KEY, 1);
	setenv("E2B_API_URL", "ftp://x", 1);
	r = ts_backend_open("e2b", &b, &err);
	ok(r < 0 && ts_be_code(&err) == TS_BE_INVALID_ARGUMENT, "E2B_API_URL must be http(s)");
	setenv("E2B_API_URL", url, 1);
	setenv("E2B_SANDBOX_URL", url, 1);
	setenv("TOREN_SANDBOX", "auto", 1);
	r = ts_backend_open(NULL, &b, &err);
	ok(r == 0 && !strcmp(ts_backend_name(b), "e2b"), "auto with E2B_API_KEY set is e2b");
	if (r < 0)
		goto out;

	struct ts_kv meta[] = { { "a", "b" } }, envs[] = { { "X", "1" } };
	struct ts_sb_create_opts co = {
		.metadata = meta, .n_metadata = 1, .envs = envs, .n_envs = 1, .timeout_ms = 119500
	};

	r = ts_sb_create(b, &co, &sb, &err);
	ok(r == 0 && !strcmp(ts_sb_id(sb), "sbx1"),
	   "create: POST /v2/sandboxes, the timeout in whole seconds rounded up (%s)",
	   r < 0 ? err.msg : "");
	if (r < 0)
		goto out;
	r = ts_sb_info(sb, &info, &err);
	ok(r == 0 && info.state == TS_SB_RUNNING && info.end_at_ms == 1704164765000LL &&
		   info.n_metadata == 1 && !strcmp(info.metadata[0], "a=b") &&
		   !strcmp(info.template_id, "base"),
	   "info: SandboxDetail as ts_sb_info");
	ts_sb_info_clear(&info);

	struct ts_kv lm[] = { { "test-key", "a b&c=d" } };
	struct ts_sb_list_opts lo = { .metadata = lm, .n_metadata = 1, .running = true, .limit = 1 };
	size_t n = 0;

	r = ts_sb_list(b, &lo, &infos, &n, &token, &err);
	ok(r == 0 && n == 1 && !strcmp(infos[0].id, "sbx1") && token && !strcmp(token, "T+1") &&
		   seen->list_calls == 2,
	   "list: a 429 with Retry-After is retried; the query as the SDK encodes it; "
	   "X-Next-Token (%s)",
	   r < 0 ? err.msg : "");
	ts_sb_infos_free(infos, n);
	lo.next_token = token;
	r = ts_sb_list(b, &lo, &infos, &n, &token, &err);
	ok(r == 0 && n == 1 && infos[0].state == TS_SB_PAUSED && !token,
	   "the next page (token URI-encoded) is the last: no token");
	ts_sb_infos_free(infos, n);
	free((char *)lo.next_token);

	test_commands(sb);
	test_files(sb);

	struct ts_sb *sb2 = NULL;

	r = ts_sb_connect(b, "sbx1", 5000, &sb2, &err);
	ok(r == 0, "connect extends the timeout (POST /v2/sandboxes/sbx1/connect)");
	ts_sb_close(sb2);
	r = ts_sb_connect(b, "gone", -1, &sb2, &err);
	ok(r < 0 && ts_be_code(&err) == TS_BE_NOT_FOUND, "connect to an unknown id: not_found");
	ok(ts_sb_kill(b, "sbx1", &err) == 0, "kill: DELETE answered 204");
	ok(ts_sb_stop(sb, &err) == -EOPNOTSUPP && strstr(err.msg, "E2B"),
	   "stop: E2B has none, and says so");
	unsigned failed = 0;

	ok(ts_backend_reap(b, true, NULL, NULL, NULL, &failed, &err) == -EOPNOTSUPP,
	   "reap: E2B ends sandboxes itself");
	/* the streams each hold a connection while they run; the unary calls and REST
	 * calls between them reuse what is idle */
	ok(seen->bad_request == 0, "the server found every request well-formed (%s)", seen->why);
	test_probes(b, url);
	ok(seen->accepts > 0 && seen->accepts * 3 < seen->requests,
	   "connections are reused: %d connections for %d requests", seen->accepts, seen->requests);
	ok(seen->bad_request == 0, "the server found every request well-formed (%s)", seen->why);
out:
	ts_sb_close(sb);
	ts_backend_free(b);
	kill(srv, SIGKILL);
	waitpid(srv, NULL, 0);
	return done();
}
