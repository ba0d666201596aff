/* SPDX-License-Identifier: Apache-2.0 */
/* The e2b backend's requests: shared connections, REST and unary Connect calls, errors. */
#include "e2b.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "config.h"
#include "util.h"

void e2b_resp_clear(struct e2b_resp *r)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
}

CURL *e2b_easy_new(struct e2b *e, const char *url, char *errbuf)
{
	const struct ts_curl *C = e->C;
	CURL *c = C->easy_init();

	if (!c)
		return NULL;
	if (errbuf) {
		errbuf[0] = '\0';
		ts_curl_setopt(C, c, CURLOPT_ERRORBUFFER, errbuf);
	}
	ts_curl_setopt(C, c, CURLOPT_URL, url);
	ts_curl_setopt(C, c, CURLOPT_SHARE, e->share);
	/* no SIGALRM for DNS timeouts: a library must not own the process's signals */
	ts_curl_setopt(C, c, CURLOPT_NOSIGNAL, 1L);
	ts_curl_setopt(C, c, CURLOPT_PROTOCOLS_STR, "http,https");
	ts_curl_setopt(C, c, CURLOPT_REDIR_PROTOCOLS_STR, "https");
	ts_curl_setopt(C, c, CURLOPT_USERAGENT, "toren-sandbox/" TS_VERSION);
	ts_curl_setopt(C, c, CURLOPT_CONNECTTIMEOUT_MS, (long)TS_BE_REPLY_MS);
	ts_curl_setopt(C, c, CURLOPT_TCP_KEEPALIVE, 1L);
	/* envd may gzip /files when asked: curl asks for what it can decode, and decodes */
	ts_curl_setopt(C, c, CURLOPT_ACCEPT_ENCODING, "");
	/* HTTP/1.1 is what envd and the SDK speak on plain http (spec §1.5) */
	ts_curl_setopt(C, c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	return c;
}

struct sink {
	struct e2b_resp *resp;
	bool too_big;
};

static size_t on_body(char *p, size_t size, size_t n, void *userdata)
{
	struct sink *s = userdata;
	struct e2b_resp *r = s->resp;
	size_t len = size * n;
	char *grown;

	if (r->len + len > E2B_BODY_MAX) {
		s->too_big = true;
		return 0;
	}
	grown = realloc(r->body, r->len + len + 1);
	if (!grown)
		return 0;
	r->body = grown;
	memcpy(r->body + r->len, p, len);
	r->len += len;
	r->body[r->len] = '\0';
	return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *userdata)
{
	struct e2b_resp *r = ((struct sink *)userdata)->resp;
	size_t len = size * n;
	static const char name[] = "x-next-token:";

	if (len > sizeof(name) && !strncasecmp(p, name, sizeof(name) - 1)) {
		const char *v = p + sizeof(name) - 1;
		size_t vl = len - (sizeof(name) - 1);

		while (vl && (*v == ' ' || *v == '\t'))
			v++, vl--;
		while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
			vl--;
		if (vl < sizeof(r->next_token)) {
			memcpy(r->next_token, v, vl);
			r->next_token[vl] = '\0';
		}
	}
	return len;
}

int e2b_curl_error(const struct ts_curl *C, CURLcode c, const char *errbuf, const char *what,
		   struct ts_error *err)
{
	const char *why = errbuf && *errbuf ? errbuf : C->easy_strerror(c);
	int r;

	switch (c) {
	case CURLE_OPERATION_TIMEDOUT:
		r = -ETIMEDOUT;
		break;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		r = -ECONNREFUSED;
		break;
	case CURLE_OUT_OF_MEMORY:
		r = -ENOMEM;
		break;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		r = -EINVAL;
		break;
	default:
		/* a dropped connection: the sandbox went away (SDK: TimeoutError) */
		r = -EHOSTDOWN;
		break;
	}
	return ts_err(err, r, "%s: %s", what, why);
}

/* One blocking request on c, its answer in *resp. */
static int perform(const struct ts_curl *C, CURL *c, struct e2b_resp *resp, const char *what,
		   const char *errbuf, struct ts_error *err)
{
	struct sink s = { .resp = resp };
	curl_off_t ra = -1;
	const char *ct = NULL;
	CURLcode cc;

	ts_curl_setopt(C, c, CURLOPT_WRITEFUNCTION, on_body);
	ts_curl_setopt(C, c, CURLOPT_WRITEDATA, &s);
	ts_curl_setopt(C, c, CURLOPT_HEADERFUNCTION, on_header);
	ts_curl_setopt(C, c, CURLOPT_HEADERDATA, &s);
	ts_curl_setopt(C, c, CURLOPT_TIMEOUT_MS, (long)TS_BE_REPLY_MS);
	cc = C->easy_perform(c);
	if (s.too_big)
		return ts_err(err, -EPROTO, "%s: an answer of more than %u bytes", what,
			      E2B_BODY_MAX);
	if (cc != CURLE_OK)
		return e2b_curl_error(C, cc, errbuf, what, err);
	ts_curl_getinfo(C, c, CURLINFO_RESPONSE_CODE, &resp->status);
	if (ts_curl_getinfo(C, c, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
		snprintf(resp->content_type, sizeof(resp->content_type), "%s", ct);
	if (ts_curl_getinfo(C, c, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK)
		resp->retry_after_s = (long long)ra;
	return 0;
}

int e2b_api(struct e2b *e, const char *method, const char *path, json_t *body,
	    struct e2b_resp *resp, struct ts_error *err)
{
	const struct ts_curl *C = e->C;
	_cleanup_free_ char *url = NULL, *text = NULL, *key = NULL;
	long long spent_ms = 0;
	char what[256];
	int r;

	memset(resp, 0, sizeof(*resp));
	snprintf(what, sizeof(what), "E2B API `%s %.160s`", method, path);
	if (asprintf(&url, "%s%s", e->api_url, path) < 0 ||
	    asprintf(&key, "X-API-KEY: %s", e->api_key) < 0)
		return ts_err(err, -ENOMEM, "out of memory");
	if (body && !(text = json_dumps(body, JSON_COMPACT)))
		return ts_err(err, -ENOMEM, "out of memory");
	for (int attempt = 0;; attempt++) {
		char errbuf[CURL_ERROR_SIZE];
		CURL *c = e2b_easy_new(e, url, errbuf);
		struct curl_slist *h = NULL, *h2;

		if (!c)
			return ts_err(err, -ENOMEM, "out of memory");
		h2 = C->slist_append(h, key);
		if (h2)
			h = h2;
		if (h2 && text)
			h2 = C->slist_append(h, "Content-Type: application/json");
		if (h2)
			h = h2;
		if (!h2) {
			C->slist_free_all(h);
			C->easy_cleanup(c);
			return ts_err(err, -ENOMEM, "out of memory");
		}
		ts_curl_setopt(C, c, CURLOPT_HTTPHEADER, h);
		ts_curl_setopt(C, c, CURLOPT_CUSTOMREQUEST, method);
		if (text) {
			ts_curl_setopt(C, c, CURLOPT_POSTFIELDS, text);
			ts_curl_setopt(C, c, CURLOPT_POSTFIELDSIZE, (long)strlen(text));
		} else if (!strcmp(method, "GET")) {
			ts_curl_setopt(C, c, CURLOPT_HTTPGET, 1L);
		} else if (!strcmp(method, "DELETE")) {
			ts_curl_setopt(C, c, CURLOPT_NOBODY, 0L);
		}
		e2b_resp_clear(resp);
		r = perform(e->C, c, resp, what, errbuf, err);
		C->slist_free_all(h);
		C->easy_cleanup(c);
		if (r < 0)
			return r;
		/* the SDK's retries: a 429 that says when (whole seconds), at most 3 times,
		 * never waiting longer in all than one request may take */
		if (resp->status != 429 || attempt >= E2B_RETRIES || resp->retry_after_s <= 0 ||
		    spent_ms + resp->retry_after_s * 1000 > TS_BE_REPLY_MS)
			return 0;
		spent_ms += resp->retry_after_s * 1000;
		nanosleep(&(struct timespec){ .tv_sec = (time_t)resp->retry_after_s }, NULL);
	}
}

int e2b_resp_error(const struct e2b_resp *resp, const char *what, struct ts_error *err)
{
	json_t *j = resp->len ? json_loadb(resp->body, resp->len, 0, NULL) : NULL;
	json_t *code = json_object_get(j, "code");
	const char *msg = json_string_value(json_object_get(j, "message"));
	long status = resp->status;
	int r;

	/* the SDK branches on the body's code, save for 401, 429 and 503 (delta §1) */
	if (json_is_integer(code) && status != 401 && status != 429 && status != 503)
		status = (long)json_integer_value(code);
	r = e2b_rest_errno(status);
	if (!msg && resp->len && resp->len < 200 && !j)
		msg = resp->body;
	r = ts_err(err, r, "%s: %.300s (HTTP %ld)", what, msg && *msg ? msg : "no message",
		   resp->status);
	json_decref(j);
	return r;
}

static int add(const struct ts_curl *C, struct curl_slist **h, const char *line)
{
	struct curl_slist *n = C->slist_append(*h, line);

	if (!n)
		return -ENOMEM;
	*h = n;
	return 0;
}

int e2b_envd_headers(const struct e2b_target *t, const char *user, struct curl_slist **h)
{
	const struct ts_curl *C = t->e->C;
	char line[512];

	snprintf(line, sizeof(line), "E2b-Sandbox-Id: %s", t->id);
	if (add(C, h, line) < 0 || add(C, h, "E2b-Sandbox-Port: 49983") < 0)
		return -ENOMEM;
	if (t->token[0]) {
		snprintf(line, sizeof(line), "X-Access-Token: %s", t->token);
		if (add(C, h, line) < 0)
			return -ENOMEM;
	}
	if (user && *user) {
		if (e2b_basic_user(user, line, sizeof(line)) < 0 || add(C, h, line) < 0)
			return -ENOMEM;
	}
	return 0;
}

int e2b_connect_error(long status, const char *body, size_t len, const char *what,
		      struct ts_error *err)
{
	json_t *j = len ? json_loadb(body, len, 0, NULL) : NULL;
	json_t *code = json_object_get(j, "code");
	const char *msg = json_string_value(json_object_get(j, "message"));
	int r;

	if (json_is_string(code))
		r = e2b_connect_errno(json_string_value(code));
	else if (json_is_integer(code))
		/* the proxy's and /files's REST shape: {"code":502,"message":...} */
		r = e2b_rest_errno((long)json_integer_value(code));
	else
		r = e2b_connect_http_errno(status);
	r = ts_err(err, r, "%s: %.300s", what, msg && *msg ? msg : "no message");
	json_decref(j);
	return r;
}

int e2b_envd_unary(const struct e2b_target *t, const char *path, json_t *req, const char *user,
		   json_t **ret, struct ts_error *err)
{
	const struct ts_curl *C = t->e->C;
	_cleanup_free_ char *url = NULL, *text = NULL;
	struct e2b_resp resp = { 0 };
	struct curl_slist *h = NULL;
	char errbuf[CURL_ERROR_SIZE], what[160];
	CURL *c;
	int r;

	*ret = NULL;
	snprintf(what, sizeof(what), "envd `%s`", path);
	if (asprintf(&url, "%s/%s", t->envd_url, path) < 0 ||
	    !(text = json_dumps(req, JSON_COMPACT)))
		return ts_err(err, -ENOMEM, "out of memory");
	c = e2b_easy_new(t->e, url, errbuf);
	if (!c || e2b_envd_headers(t, user, &h) < 0 ||
	    add(C, &h, "Content-Type: application/json") < 0 ||
	    add(C, &h, "Connect-Protocol-Version: 1") < 0) {
		C->slist_free_all(h);
		C->easy_cleanup(c);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	ts_curl_setopt(C, c, CURLOPT_HTTPHEADER, h);
	ts_curl_setopt(C, c, CURLOPT_POSTFIELDS, text);
	ts_curl_setopt(C, c, CURLOPT_POSTFIELDSIZE, (long)strlen(text));
	r = perform(C, c, &resp, what, errbuf, err);
	C->slist_free_all(h);
	C->easy_cleanup(c);
	if (r < 0)
		return r;
	if (resp.status != 200) {
		r = e2b_connect_error(resp.status, resp.body, resp.len, what, err);
	} else if (strncmp(resp.content_type, "application/json", 16)) {
		r = ts_err(err, -EPROTO, "%s: unsupported content type `%.64s`", what,
			   resp.content_type);
	} else {
		*ret = e2b_json_parse(resp.body ? resp.body : "{}", resp.len ? resp.len : 2, err);
		r = *ret ? 0 : -EPROTO;
	}
	e2b_resp_clear(&resp);
	return r;
}

int e2b_envd_get(const struct e2b_target *t, const char *path, struct e2b_resp *resp,
		 struct ts_error *err)
{
	const struct ts_curl *C = t->e->C;
	_cleanup_free_ char *url = NULL;
	struct curl_slist *h = NULL;
	char errbuf[CURL_ERROR_SIZE], what[160];
	CURL *c;
	int r;

	memset(resp, 0, sizeof(*resp));
	snprintf(what, sizeof(what), "envd `GET %.100s`", path);
	if (asprintf(&url, "%s%s", t->envd_url, path) < 0)
		return ts_err(err, -ENOMEM, "out of memory");
	c = e2b_easy_new(t->e, url, errbuf);
	if (!c || e2b_envd_headers(t, NULL, &h) < 0) {
		C->slist_free_all(h);
		C->easy_cleanup(c);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	ts_curl_setopt(C, c, CURLOPT_HTTPHEADER, h);
	ts_curl_setopt(C, c, CURLOPT_HTTPGET, 1L);
	r = perform(C, c, resp, what, errbuf, err);
	C->slist_free_all(h);
	C->easy_cleanup(c);
	return r;
}
