/* SPDX-License-Identifier: Apache-2.0 */
/*
 * send_file: a workspace file to the run's bound channel, a webhook (a multipart POST
 * with libcurl: `caption` and the file as `photo` for an image, else `document`) or an
 * outbox directory on the host (the file under a new name, never over another, and a
 * sidecar NAME.json written after it). Without a channel it fails: it never makes up a
 * link.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "curl-dl.h"
#include "tools-internal.h"
#include "util.h"

#define SEND_MAX (50U << 20)  /* the largest file sent */
#define CAPTION_MAX 4096      /* bytes of a caption */
#define REPLY_KEPT 1024	      /* bytes of a webhook's answer quoted in an error */
#define CONNECT_TIMEOUT_S 10L /* a webhook's connection */
#define SEND_TIMEOUT_S 300L   /* the whole POST */
#define OUT_NAME_MAX 100      /* bytes of the file's name kept in an outbox name */

/* An image by its first bytes (what a channel shows as a photo), or NULL. */
static const char *image_type(const uint8_t *d, size_t n)
{
	if (n >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0)
		return "image/png";
	if (n >= 3 && memcmp(d, "\xff\xd8\xff", 3) == 0)
		return "image/jpeg";
	if (n >= 6 && (memcmp(d, "GIF87a", 6) == 0 || memcmp(d, "GIF89a", 6) == 0))
		return "image/gif";
	if (n >= 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0)
		return "image/webp";
	return NULL;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

/* A document's content type, by its first bytes, else its name. */
static const char *doc_type(const char *name, const uint8_t *d, size_t n)
{
	static const struct {
		const char *ext, *type;
	} by_ext[] = {
		{ ".txt", "text/plain" },      { ".log", "text/plain" },
		{ ".md", "text/markdown" },    { ".csv", "text/csv" },
		{ ".html", "text/html" },      { ".json", "application/json" },
		{ ".pdf", "application/pdf" }, { ".zip", "application/zip" },
		{ ".gz", "application/gzip" }, { ".tar", "application/x-tar" },
		{ ".svg", "image/svg+xml" },   { ".mp4", "video/mp4" },
		{ ".mp3", "audio/mpeg" },      { ".xml", "application/xml" },
	};

	if (n >= 5 && memcmp(d, "%PDF-", 5) == 0)
		return "application/pdf";
	if (n >= 4 && memcmp(d, "PK\x03\x04", 4) == 0 && !ends_with(name, ".docx") &&
	    !ends_with(name, ".xlsx") && !ends_with(name, ".jar"))
		return "application/zip";
	for (size_t i = 0; i < sizeof(by_ext) / sizeof(by_ext[0]); i++)
		if (ends_with(name, by_ext[i].ext))
			return by_ext[i].type;
	return "application/octet-stream";
}

static void sha256_hex(const uint8_t *d, size_t n, char out[65])
{
	struct sha256_ctx c;
	uint8_t dig[SHA256_DIGEST_SIZE];

	sha256_init(&c);
	sha256_update(&c, n, d);
	sha256_digest(&c, sizeof(dig), dig);
	for (size_t i = 0; i < sizeof(dig); i++)
		snprintf(out + 2 * i, 3, "%02x", dig[i]);
}

/* --- webhook ------------------------------------------------------------------------- */

struct reply {
	char buf[REPLY_KEPT + 1];
	size_t len;
};

static size_t reply_write(char *p, size_t size, size_t n, void *userdata)
{
	struct reply *r = userdata;
	size_t total = size * n, room = REPLY_KEPT - r->len;

	memcpy(r->buf + r->len, p, total < room ? total : room);
	r->len += total < room ? total : room;
	r->buf[r->len] = '\0';
	return total; /* the rest is read and dropped */
}

/* "scheme://host" of url: what an error may show (the rest may hold a token). */
static void url_origin(const struct ts_curl *C, const char *url, char *out, size_t len)
{
	CURLU *u = C->url();
	char *scheme = NULL, *host = NULL, *port = NULL;

	snprintf(out, len, "the webhook");
	if (u && C->url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    C->url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	    C->url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
		C->url_get(u, CURLUPART_PORT, &port, 0);
		snprintf(out, len, "the webhook at %s://%s%s%s", scheme, host, port ? ":" : "",
			 port ? port : "");
	}
	C->free(scheme);
	C->free(host);
	C->free(port);
	C->url_cleanup(u);
}

static int send_webhook(struct ts_toolbox *t, const char *name, const char *kind, const char *ctype,
			const uint8_t *d, size_t n, const char *caption, long *status,
			struct ts_tool_result *res, struct ts_error *err)
{
	struct ts_error lerr = { 0 };
	const struct ts_curl *C = ts_curl_load(&lerr);
	CURL *h;
	curl_mime *mime = NULL;
	curl_mimepart *part;
	struct reply reply = { 0 };
	char errbuf[CURL_ERROR_SIZE] = "", origin[300];
	CURLcode rc = CURLE_OUT_OF_MEMORY;

	if (!C)
		return ts_tool_fail(res, "channel_failed", "%s", lerr.msg);
	url_origin(C, t->webhook_url, origin, sizeof(origin));
	h = C->easy_init();
	if (!h)
		return ts_err(err, -ENOMEM, "out of memory");
	mime = C->mime_init(h);
	if (!mime)
		goto out;
	if (caption && caption[0]) {
		part = C->mime_addpart(mime);
		if (!part || C->mime_name(part, "caption") != CURLE_OK ||
		    C->mime_data(part, caption, CURL_ZERO_TERMINATED) != CURLE_OK)
			goto out;
	}
	part = C->mime_addpart(mime);
	if (!part || C->mime_name(part, kind) != CURLE_OK ||
	    C->mime_data(part, (const char *)d, n) != CURLE_OK ||
	    C->mime_filename(part, name) != CURLE_OK || C->mime_type(part, ctype) != CURLE_OK)
		goto out;
	if (ts_curl_setopt(C, h, CURLOPT_URL, t->webhook_url) != CURLE_OK) {
		C->mime_free(mime);
		C->easy_cleanup(h);
		return ts_tool_fail(res, "no_channel",
				    "%s: the URL is not one libcurl takes; fix `sandbox.channel` "
				    "in the agent's configuration",
				    origin);
	}
	ts_curl_setopt(C, h, CURLOPT_MIMEPOST, mime);
	/* http and https only, no redirects (a redirect would re-send the file elsewhere) */
	ts_curl_setopt(C, h, CURLOPT_PROTOCOLS_STR, "http,https");
	ts_curl_setopt(C, h, CURLOPT_FOLLOWLOCATION, 0L);
	ts_curl_setopt(C, h, CURLOPT_NOSIGNAL, 1L);
	ts_curl_setopt(C, h, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
	ts_curl_setopt(C, h, CURLOPT_TIMEOUT, SEND_TIMEOUT_S);
	/* libcurl's default writes the answer to stdout */
	ts_curl_setopt(C, h, CURLOPT_WRITEFUNCTION, reply_write);
	ts_curl_setopt(C, h, CURLOPT_WRITEDATA, &reply);
	ts_curl_setopt(C, h, CURLOPT_ERRORBUFFER, errbuf);
	ts_curl_setopt(C, h, CURLOPT_USERAGENT, "toren-sandbox send_file");
	rc = C->easy_perform(h);
	if (rc == CURLE_OK)
		ts_curl_getinfo(C, h, CURLINFO_RESPONSE_CODE, status);
out:
	C->mime_free(mime);
	C->easy_cleanup(h);
	if (rc == CURLE_OUT_OF_MEMORY)
		return ts_err(err, -ENOMEM, "out of memory");
	if (rc != CURLE_OK)
		return ts_tool_fail(res, "channel_failed", "%s could not be reached: %s", origin,
				    errbuf[0] ? errbuf : C->easy_strerror(rc));
	if (*status < 200 || *status > 299) {
		_cleanup_free_ char *body = ts_tool_utf8(reply.buf, reply.len, NULL);
		return ts_tool_fail(res, "channel_failed", "%s answered HTTP %ld: %s", origin,
				    *status, body ? body : "");
	}
	return 0;
}

/* --- outbox -------------------------------------------------------------------------- */

/* The file's name as an outbox keeps it: letters, digits, `.`, `-`, `_`, no leading dot. */
static void safe_name(const char *name, char *out, size_t len)
{
	size_t o = 0;

	for (const char *p = name; *p && o + 1 < len && o < OUT_NAME_MAX; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '-' || c == '_' || (c == '.' && o > 0);
		out[o++] = ok ? c : '_';
	}
	out[o] = '\0';
	if (!o)
		snprintf(out, len, "file");
}

static int write_new(int dfd, const char *name, const void *d, size_t n, struct ts_error *err)
{
	_cleanup_close_ int fd =
		openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	int r;

	if (fd < 0)
		return -errno;
	r = ts_write_all(fd, d, n);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(dfd, name, 0);
		return ts_err_errno(err, r, "write `%s` in the outbox", name);
	}
	return 0;
}

static int send_outbox(struct ts_toolbox *t, const char *rel, const char *name, const char *kind,
		       const char *ctype, const uint8_t *d, size_t n, const char *caption,
		       const char *sha, char *out_name, size_t out_len, struct ts_tool_result *res,
		       struct ts_error *err)
{
	_cleanup_close_ int dfd = open(t->outbox_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char safe[OUT_NAME_MAX + 1], stamp[32], iso[32];
	long long now = ts_realtime_ms();
	time_t secs = (time_t)(now / 1000);
	struct tm tm;
	int r = -EEXIST;

	if (dfd < 0)
		return ts_tool_fail(res, "channel_failed",
				    "the outbox `%s` cannot be opened: %s; create it or fix "
				    "`sandbox.channel` in the agent's configuration",
				    t->outbox_dir, strerror(errno));
	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%SZ", &tm);
	safe_name(name, safe, sizeof(safe));
	/* a new name each time: never over a file there (O_EXCL), never through a link */
	for (int attempt = 0; attempt < 16 && r == -EEXIST; attempt++) {
		uint32_t rnd = 0;

		if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
			rnd = (uint32_t)ts_now_ms() + (uint32_t)attempt;
		snprintf(out_name, out_len, "%s-%06x-%s", stamp, rnd & 0xffffff, safe);
		r = write_new(dfd, out_name, d, n, err);
	}
	if (r < 0 && !err->code)
		ts_err_errno(err, r, "create a file in the outbox `%s`", t->outbox_dir);
	if (r < 0)
		return ts_tool_fail(res, "channel_failed", "%s", err->msg);
	/* the sidecar last: its presence says the file is complete */
	json_t *side = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:I}", "file", out_name,
				 "path", rel, "caption", caption ? caption : "", "kind", kind,
				 "content_type", ctype, "size", (json_int_t)n, "sha256", sha,
				 "time", iso, "time_ms", (json_int_t)now);
	_cleanup_free_ char *text = side ? json_dumps(side, JSON_INDENT(2)) : NULL;
	json_decref(side);
	if (!text) {
		unlinkat(dfd, out_name, 0);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	_cleanup_free_ char *side_name = NULL;
	if (asprintf(&side_name, "%s.json", out_name) < 0) {
		unlinkat(dfd, out_name, 0);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	r = write_new(dfd, side_name, text, strlen(text), err);
	if (r < 0) {
		unlinkat(dfd, out_name, 0);
		if (!err->code)
			ts_err_errno(err, r, "create `%s` in the outbox", side_name);
		return ts_tool_fail(res, "channel_failed", "%s", err->msg);
	}
	return 0;
}

/* --- the tool ------------------------------------------------------------------------ */

static int tool_send_file(struct ts_toolbox *t, json_t *args, struct ts_tool_result *res,
			  struct ts_error *err)
{
	const char *path, *caption;
	_cleanup_free_ char *abs = NULL, *rel = NULL;
	_cleanup_free_ uint8_t *d = NULL;
	struct ts_be_entry st = { 0 };
	size_t n = 0;
	char sha[65];
	int r;

	if (ts_tool_arg_str(args, "path", true, &path, res) ||
	    ts_tool_arg_str(args, "caption", false, &caption, res))
		return 0;
	if (caption && strlen(caption) > CAPTION_MAX)
		return ts_tool_fail(res, "invalid_argument", "the caption is longer than %u bytes",
				    CAPTION_MAX);
	if (!t->webhook_url && !t->outbox_dir)
		return ts_tool_fail(res, "no_channel",
				    "this run has no channel to send files to: configure one as "
				    "`sandbox.channel` in the agent's configuration (a webhook URL "
				    "or an outbox directory); until then, say where the file is in "
				    "the workspace (`%s`)",
				    path);
	r = ts_ws_resolve(t, path, 0, &abs, &rel, res, err);
	if (r)
		return r < 0 ? r : 0;
	/* a protected file is a secret: the agent may read it, it never leaves */
	if (ts_ws_protected(t, rel))
		return ts_tool_fail(res, "protected",
				    "`%s` is protected (a secret: .env, keys, credentials, or a "
				    "pattern of the policy): it can be read but is never sent",
				    rel);
	r = ts_file_stat(t->sb, abs, t->user, &st, err);
	if (r < 0)
		return ts_ws_fail(t, r, "send", rel, res, err);
	enum ts_be_file_type type = st.type;
	uint64_t size = st.size;
	ts_be_entry_clear(&st);
	if (type != TS_BE_FILE)
		return ts_tool_fail(res, "invalid_argument",
				    "`%s` is not a regular file: send_file sends one file (pack a "
				    "directory with tar in bash first)",
				    rel);
	if (size > SEND_MAX)
		return ts_tool_fail(res, "too_large",
				    "`%s` is %llu bytes, at most %u MiB can be sent: compress or "
				    "split it first",
				    rel, (unsigned long long)size, SEND_MAX >> 20);
	r = ts_file_read(t->sb, abs, t->user, &d, &n, SEND_MAX, err);
	if (r == -EFBIG) {
		ts_err_clear(err);
		return ts_tool_fail(res, "too_large", "`%s` grew past %u MiB while it was read",
				    rel, SEND_MAX >> 20);
	}
	if (r < 0)
		return ts_ws_fail(t, r, "send", rel, res, err);
	const char *name = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
	const char *img = image_type(d, n);
	const char *kind = img ? "photo" : "document";
	const char *ctype = img ? img : doc_type(name, d, n);
	sha256_hex(d, n, sha);
	json_t *data = NULL;
	if (t->webhook_url) {
		long status = 0;
		r = send_webhook(t, name, kind, ctype, d, n, caption, &status, res, err);
		if (r < 0 || res->is_error)
			return r;
		data = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:i}", "channel", "webhook",
				 "path", rel, "kind", kind, "content_type", ctype, "size",
				 (json_int_t)n, "sha256", sha, "status", (int)status);
		if (!data)
			return ts_err(err, -ENOMEM, "out of memory");
		return ts_tool_ok(res, data, "sent `%s` (%zu bytes) to the webhook as a %s", rel, n,
				  kind);
	}
	char out_name[OUT_NAME_MAX + 64];
	r = send_outbox(t, rel, name, kind, ctype, d, n, caption, sha, out_name, sizeof(out_name),
			res, err);
	if (r < 0 || res->is_error)
		return r;
	data = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:s}", "channel", "outbox", "path", rel,
			 "kind", kind, "content_type", ctype, "size", (json_int_t)n, "sha256", sha,
			 "file", out_name);
	if (!data)
		return ts_err(err, -ENOMEM, "out of memory");
	return ts_tool_ok(res, data, "delivered `%s` (%zu bytes, a %s) to the outbox as `%s`", rel,
			  n, kind, out_name);
}

const struct ts_tool_def ts_tool_send_file = {
	.name = "send_file",
	.since = 2,
	.writes = false,
	.description =
		"Deliver a workspace file (at most 50 MiB) to the person running this agent "
		"through the run's channel (a webhook or an outbox directory, as configured): "
		"images (PNG, JPEG, GIF, WebP) arrive as photos, other files as documents, with "
		"the caption. Fails with `no_channel` when the run has none configured: then "
		"tell the user the file's workspace path instead; never make up a link.",
	.schema = "{\"type\":\"object\",\"properties\":{"
		  "\"path\":{\"type\":\"string\",\"description\":\"the file, "
		  "workspace-relative\"},"
		  "\"caption\":{\"type\":\"string\",\"description\":\"a short text sent with it "
		  "(at most 4096 bytes)\"}},"
		  "\"required\":[\"path\"],\"additionalProperties\":false}",
	.fn = tool_send_file,
};
