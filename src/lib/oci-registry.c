/* SPDX-License-Identifier: Apache-2.0 */
#include "oci-registry.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"
#include "curl-dl.h"
#include "gowire.h"
#include "util.h"

#define MAX_TOKEN_REPLY (64u << 10)
#define MAX_AUTH_FILE (1u << 20)
#define MAX_ERROR_BODY 4096
#define CONNECT_TIMEOUT_S 30L
#define STALL_TIME_S 60L /* a transfer slower than 1 byte/s this long is given up */

#define ACCEPT_MANIFESTS                                                                           \
	"Accept: application/vnd.oci.image.index.v1+json, "                                        \
	"application/vnd.oci.image.manifest.v1+json, "                                             \
	"application/vnd.docker.distribution.manifest.list.v2+json, "                              \
	"application/vnd.docker.distribution.manifest.v2+json"

struct ts_registry {
	const struct ts_curl *C;
	CURL *c;
	char errbuf[CURL_ERROR_SIZE];
	char base[700];	 /* scheme://host/v2/path */
	char shown[600]; /* registry/path, for messages */
	char scope[300]; /* repository:path:pull */
	bool plain;	 /* http */
	bool loopback;	 /* the registry is on a loopback address */
	bool creds_ok;	 /* credentials may be sent (https, or loopback) */
	char *basic;	 /* base64 user:password from the auth file, or NULL */
	char *auth;	 /* the Authorization header in use, or NULL */
	struct ts_reg_opts o;
};

/* Where one response goes: a bounded buffer, or a file with the sha256 on the way. */
struct sink {
	long status;	      /* of the last response line seen (redirects come first) */
	char ctype[128];      /* its Content-Type */
	char challenge[1024]; /* its WWW-Authenticate */
	char *buf;	      /* memory sink */
	size_t len, max;
	int fd; /* file sink, or -1 */
	struct sha256_ctx h;
	uint64_t n;
	int write_errno;
	bool too_big;
	bool cancelled;			  /* o.cancel ended the transfer */
	char errbody[MAX_ERROR_BODY + 1]; /* of a non-2xx answer */
	size_t errlen;
	struct ts_registry *r;
};

static bool ok_status(long s)
{
	return s >= 200 && s < 300;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *userdata)
{
	struct sink *k = userdata;
	size_t n = size * nmemb, v;
	char *dst = NULL;
	size_t room = 0;

	if (n > 5 && !strncmp(p, "HTTP/", 5)) {
		const char *sp = memchr(p, ' ', n);

		k->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		k->ctype[0] = k->challenge[0] = '\0';
		k->errlen = 0;
		k->errbody[0] = '\0';
		return n;
	}
	if (n > 13 && !strncasecmp(p, "Content-Type:", 13)) {
		dst = k->ctype;
		room = sizeof(k->ctype);
		p += 13;
		n -= 13;
	} else if (n > 17 && !strncasecmp(p, "WWW-Authenticate:", 17)) {
		dst = k->challenge;
		room = sizeof(k->challenge);
		p += 17;
		n -= 17;
	}
	if (!dst)
		return size * nmemb;
	while (n && (*p == ' ' || *p == '\t'))
		p++, n--;
	while (n && (p[n - 1] == '\r' || p[n - 1] == '\n' || p[n - 1] == ' '))
		n--;
	v = n < room - 1 ? n : room - 1;
	memcpy(dst, p, v);
	dst[v] = '\0';
	if (dst == k->ctype)
		k->ctype[strcspn(k->ctype, ";")] = '\0';
	return size * nmemb;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *userdata)
{
	struct sink *k = userdata;
	size_t n = size * nmemb;

	if (!ok_status(k->status)) {
		size_t v = MAX_ERROR_BODY - k->errlen < n ? MAX_ERROR_BODY - k->errlen : n;

		memcpy(k->errbody + k->errlen, p, v);
		k->errlen += v;
		k->errbody[k->errlen] = '\0';
		return n;
	}
	if (k->n + n > k->max) {
		k->too_big = true;
		return 0; /* curl ends the transfer: CURLE_WRITE_ERROR */
	}
	if (k->fd >= 0) {
		if (ts_write_all(k->fd, p, n) < 0) {
			k->write_errno = errno;
			return 0;
		}
		sha256_update(&k->h, n, (const uint8_t *)p);
	} else {
		memcpy(k->buf + k->len, p, n);
		k->len += n;
		k->buf[k->len] = '\0';
	}
	k->n += n;
	return n;
}

/* Is the transfer to end (opts.cancel or opts.abort)? */
static bool stopped(const struct ts_reg_opts *o)
{
	return (o->cancel && atomic_load(o->cancel)) || (o->abort && atomic_load(o->abort));
}

static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct sink *k = userdata;

	(void)dltotal, (void)ultotal, (void)ulnow;
	if (stopped(&k->r->o)) {
		k->cancelled = true;
		return 1; /* curl ends the transfer: CURLE_ABORTED_BY_CALLBACK */
	}
	if (k->fd >= 0 && k->r->o.progress && ok_status(k->status))
		k->r->o.progress(k->r->o.userdata, (uint64_t)dlnow);
	return 0;
}

/* The registry's own words from an error body ({"errors":[{"code","message"}]}). */
static void registry_words(const struct sink *k, char *out, size_t len)
{
	json_t *j = json_loads(k->errbody, 0, NULL);
	json_t *e = json_array_get(json_object_get(j, "errors"), 0);
	const char *code = json_string_value(json_object_get(e, "code"));
	const char *msg = json_string_value(json_object_get(e, "message"));

	if (code || msg)
		snprintf(out, len, ": %s%s%.200s", code ?: "", code && msg ? ": " : "", msg ?: "");
	else
		out[0] = '\0';
	json_decref(j);
}

static int curl_errno(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
		return -EPROTO;
	case CURLE_TOO_MANY_REDIRECTS:
		return -ELOOP;
	default:
		return -EIO;
	}
}

/* One GET of url into k, with the current Authorization. 0 when a response came (any
 * status), else -errno. */
static int get_once(struct ts_registry *r, const char *url, const char *accept, const char *auth,
		    struct sink *k, struct ts_error *err)
{
	struct curl_slist *hdrs = NULL;
	CURLcode c;
	char *authz = NULL;

	if (stopped(&r->o))
		return ts_err(err, -ECANCELED, "`%s`: the pull was cancelled", url);
	if (accept)
		hdrs = r->C->slist_append(hdrs, accept);
	if (auth) {
		if (asprintf(&authz, "Authorization: %s", auth) < 0)
			authz = NULL;
		if (!authz) {
			r->C->slist_free_all(hdrs);
			return ts_err(err, -ENOMEM, "out of memory");
		}
		hdrs = r->C->slist_append(hdrs, authz);
		free(authz);
	}
	ts_curl_setopt(r->C, r->c, CURLOPT_URL, url);
	ts_curl_setopt(r->C, r->c, CURLOPT_HTTPHEADER, hdrs);
	ts_curl_setopt(r->C, r->c, CURLOPT_HEADERFUNCTION, on_header);
	ts_curl_setopt(r->C, r->c, CURLOPT_HEADERDATA, k);
	ts_curl_setopt(r->C, r->c, CURLOPT_WRITEFUNCTION, on_body);
	ts_curl_setopt(r->C, r->c, CURLOPT_WRITEDATA, k);
	ts_curl_setopt(r->C, r->c, CURLOPT_XFERINFOFUNCTION, on_progress);
	ts_curl_setopt(r->C, r->c, CURLOPT_XFERINFODATA, k);
	r->errbuf[0] = '\0';
	c = r->C->easy_perform(r->c);
	ts_curl_setopt(r->C, r->c, CURLOPT_HTTPHEADER, NULL);
	r->C->slist_free_all(hdrs);
	if (c == CURLE_WRITE_ERROR && k->too_big)
		return ts_err(err, -EFBIG, "`%s`: the answer is larger than %zu bytes", url,
			      k->max);
	if (c == CURLE_ABORTED_BY_CALLBACK && k->cancelled)
		return ts_err(err, -ECANCELED, "`%s`: the pull was cancelled", url);
	if (c == CURLE_WRITE_ERROR && k->write_errno)
		return ts_err_errno(err, -k->write_errno, "write what `%s` sends", url);
	if (c != CURLE_OK)
		return ts_err(err, curl_errno(c), "`%s`: %s", url,
			      r->errbuf[0] ? r->errbuf : r->C->easy_strerror(c));
	return 0;
}

/* The value of key="value" (or key=value) in a WWW-Authenticate challenge. */
static bool challenge_param(const char *ch, const char *key, char *out, size_t len)
{
	size_t klen = strlen(key);
	const char *p = ch;

	while ((p = strcasestr(p, key))) {
		const char *v = p + klen;
		size_t n = 0;

		if ((p != ch && p[-1] != ' ' && p[-1] != ',') || *v != '=') {
			p = v;
			continue;
		}
		v++;
		if (*v == '"') {
			v++;
			while (v[n] && v[n] != '"')
				n++;
		} else {
			n = strcspn(v, ", ");
		}
		if (n >= len)
			return false;
		memcpy(out, v, n);
		out[n] = '\0';
		return true;
	}
	return false;
}

/* Is the http(s) URL's host a loopback address (oci-ref.h's rule)? */
static bool realm_loopback(const char *url)
{
	const char *h = strstr(url, "://");
	char host[300];
	size_t n;

	if (!h)
		return false;
	h += 3;
	n = strcspn(h, "/?#");
	if (n >= sizeof(host))
		return false;
	memcpy(host, h, n);
	host[n] = '\0';
	return ts_oci_host_loopback(host);
}

/* Ask the challenge's realm for a token (the bearer flow); sets r->auth. */
static int fetch_token(struct ts_registry *r, const char *challenge, struct ts_error *err)
{
	char realm[512], service[256] = "", scope[300];
	_cleanup_free_ char *url = NULL, *body = NULL, *basic = NULL;
	char *esc_service = NULL, *esc_scope = NULL;
	struct sink k = { .fd = -1, .max = MAX_TOKEN_REPLY, .r = r };
	const char *tok;
	json_t *j;
	int rc;

	if (!challenge_param(challenge, "realm", realm, sizeof(realm)))
		return ts_err(err, -EPROTO, "%s: a Bearer challenge without a realm", r->shown);
	/* the realm is where the registry sends us: https, or plain http only from a
	 * loopback registry to a loopback realm (a registry cannot point us at the http
	 * services of the network, the metadata address included) */
	if (!ts_startswith(realm, "https://") &&
	    !(r->loopback && ts_startswith(realm, "http://") && realm_loopback(realm)))
		return ts_err(err, -EPROTO,
			      "%s: the token realm `%.200s` is not an https URL (plain http only "
			      "from a loopback registry to a loopback realm)",
			      r->shown, realm);
	challenge_param(challenge, "service", service, sizeof(service));
	if (!challenge_param(challenge, "scope", scope, sizeof(scope)))
		snprintf(scope, sizeof(scope), "%s", r->scope);
	esc_service = r->C->easy_escape(r->c, service, 0);
	esc_scope = r->C->easy_escape(r->c, scope, 0);
	rc = asprintf(&url, "%s%sservice=%s&scope=%s", realm, strchr(realm, '?') ? "&" : "?",
		      esc_service ?: "", esc_scope ?: "");
	r->C->free(esc_service);
	r->C->free(esc_scope);
	if (rc < 0) {
		url = NULL;
		return ts_err(err, -ENOMEM, "out of memory");
	}
	body = k.buf = calloc(1, MAX_TOKEN_REPLY + 1);
	if (!body)
		return ts_err(err, -ENOMEM, "out of memory");
	/* credentials go to the realm only where they would go to the registry: never from a
	 * plain-http registry that is not loopback, never over http but loopback to loopback */
	if (r->basic && r->creds_ok && asprintf(&basic, "Basic %s", r->basic) < 0)
		basic = NULL;
	rc = get_once(r, url, NULL, basic, &k, err);
	if (rc < 0)
		return ts_err_prefix(err, rc, "%s: token", r->shown);
	if (k.status == 401 || k.status == 403)
		return ts_err(err, -EACCES, "%s: the token service refused %s (HTTP %ld)%s",
			      r->shown,
			      basic ? "the credentials of the auth file" : "an anonymous pull",
			      k.status,
			      basic ? "" : "; log in (docker login, or $REGISTRY_AUTH_FILE)");
	if (!ok_status(k.status))
		return ts_err(err, -EIO, "%s: the token service answered HTTP %ld", r->shown,
			      k.status);
	j = json_loads(body, 0, NULL);
	tok = json_string_value(json_object_get(j, "token"))
		      ?: json_string_value(json_object_get(j, "access_token"));
	/* it goes into a header: token68 characters only (RFC 7235) */
	if (!tok || !*tok || strlen(tok) > MAX_TOKEN_REPLY ||
	    strspn(tok, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=") !=
		    strlen(tok)) {
		json_decref(j);
		return ts_err(err, -EPROTO, "%s: the token service's answer has no token",
			      r->shown);
	}
	free(r->auth);
	if (asprintf(&r->auth, "Bearer %s", tok) < 0)
		r->auth = NULL;
	json_decref(j);
	return r->auth ? 0 : ts_err(err, -ENOMEM, "out of memory");
}

/* GET base/what into k, answering one authentication challenge. */
static int request(struct ts_registry *r, const char *what, const char *accept, struct sink *k,
		   struct ts_error *err)
{
	char url[1024], words[300];
	int rc;

	if ((size_t)snprintf(url, sizeof(url), "%s/%s", r->base, what) >= sizeof(url))
		return ts_err(err, -ENAMETOOLONG, "registry URL too long");
	for (int attempt = 0;; attempt++) {
		k->errlen = 0;
		k->errbody[0] = '\0';
		rc = get_once(r, url, accept, r->auth, k, err);
		if (rc < 0)
			return rc;
		if (k->status != 401 || attempt > 0)
			break;
		if (!strncasecmp(k->challenge, "Bearer", 6)) {
			rc = fetch_token(r, k->challenge, err);
			if (rc < 0)
				return rc;
		} else if (!strncasecmp(k->challenge, "Basic", 5) && r->basic && r->creds_ok) {
			free(r->auth);
			if (asprintf(&r->auth, "Basic %s", r->basic) < 0)
				r->auth = NULL;
			if (!r->auth)
				return ts_err(err, -ENOMEM, "out of memory");
		} else {
			break;
		}
	}
	if (ok_status(k->status))
		return 0;
	registry_words(k, words, sizeof(words));
	switch (k->status) {
	case 401:
	case 403:
		return ts_err(err, -EACCES, "%s: access refused (HTTP %ld)%s%s", r->shown,
			      k->status, words,
			      r->basic ? "" : "; log in (docker login, or $REGISTRY_AUTH_FILE)");
	case 404:
		return ts_err(err, -ENOENT, "%s: no %s (HTTP 404)%s", r->shown, what, words);
	case 429:
		return ts_err(err, -EAGAIN, "%s: too many requests (HTTP 429)%s; try later",
			      r->shown, words);
	default:
		return ts_err(err, -EIO, "%s: HTTP %ld for %s%s", r->shown, k->status, what, words);
	}
}

/* The auth file's credentials for registry (base64 user:password), or NULL. */
static char *find_creds(const char *file, const char *registry)
{
	_cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	_cleanup_free_ char *text = NULL;
	json_t *j, *auths, *v;
	const char *key;
	char *ret = NULL;
	bool hub = !strcmp(registry, "docker.io");
	ssize_t n;

	if (fd < 0 || !(text = calloc(1, MAX_AUTH_FILE + 1)))
		return NULL;
	n = read(fd, text, MAX_AUTH_FILE);
	if (n <= 0)
		return NULL;
	j = json_loads(text, 0, NULL);
	auths = json_object_get(j, "auths");
	json_object_foreach(auths, key, v) {
		char host[256];
		const char *h = key, *a;

		if (ts_startswith(h, "https://"))
			h += 8;
		else if (ts_startswith(h, "http://"))
			h += 7;
		snprintf(host, sizeof(host), "%.*s", (int)strcspn(h, "/"), h);
		if (strcmp(host, registry) != 0 &&
		    !(hub &&
		      (!strcmp(host, "index.docker.io") || !strcmp(host, "registry-1.docker.io"))))
			continue;
		a = json_string_value(json_object_get(v, "auth"));
		if (a && *a) {
			ret = strdup(a);
		} else {
			const char *u = json_string_value(json_object_get(v, "username"));
			const char *p = json_string_value(json_object_get(v, "password"));
			_cleanup_free_ char *up = NULL;

			if (u && p && asprintf(&up, "%s:%s", u, p) >= 0)
				ret = ts_base64_encode(up, strlen(up), NULL);
			else
				up = NULL;
		}
		break;
	}
	json_decref(j);
	return ret;
}

static char *load_creds(const char *explicit, const char *registry)
{
	const char *env = getenv("REGISTRY_AUTH_FILE"), *dc = getenv("DOCKER_CONFIG"),
		   *home = getenv("HOME");
	char path[4096];

	if (explicit)
		return find_creds(explicit, registry);
	if (env && *env)
		return find_creds(env, registry);
	if (dc && *dc && (size_t)snprintf(path, sizeof(path), "%s/config.json", dc) < sizeof(path))
		return find_creds(path, registry);
	if (home && *home &&
	    (size_t)snprintf(path, sizeof(path), "%s/.docker/config.json", home) < sizeof(path))
		return find_creds(path, registry);
	return NULL;
}

/* r's curl handle, set up, r into *ret; r freed on failure. 0 or -errno. */
static int setup_handle(struct ts_registry *r, struct ts_registry **ret, struct ts_error *err)
{
	r->C = ts_curl_load(err);
	if (!r->C) {
		ts_reg_free(r);
		return -ENOPKG;
	}
	r->c = r->C->easy_init();
	if (!r->c) {
		ts_reg_free(r);
		return ts_err(err, -ENOMEM, "libcurl: cannot make a handle");
	}
	ts_curl_setopt(r->C, r->c, CURLOPT_ERRORBUFFER, r->errbuf);
	ts_curl_setopt(r->C, r->c, CURLOPT_NOSIGNAL, 1L);
	ts_curl_setopt(r->C, r->c, CURLOPT_PROTOCOLS_STR, "http,https");
	ts_curl_setopt(r->C, r->c, CURLOPT_REDIR_PROTOCOLS_STR, r->plain ? "http,https" : "https");
	ts_curl_setopt(r->C, r->c, CURLOPT_FOLLOWLOCATION, 1L);
	ts_curl_setopt(r->C, r->c, CURLOPT_MAXREDIRS, 5L);
	ts_curl_setopt(r->C, r->c, CURLOPT_USERAGENT, "toren-sandbox/" TS_VERSION);
	ts_curl_setopt(r->C, r->c, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
	ts_curl_setopt(r->C, r->c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	ts_curl_setopt(r->C, r->c, CURLOPT_LOW_SPEED_TIME, STALL_TIME_S);
	ts_curl_setopt(r->C, r->c, CURLOPT_NOPROGRESS, 0L);
	ts_curl_setopt(r->C, r->c, CURLOPT_TCP_KEEPALIVE, 1L);
	*ret = r;
	return 0;
}

int ts_reg_open(const struct ts_oci_ref *ref, const struct ts_reg_opts *o, struct ts_registry **ret,
		struct ts_error *err)
{
	struct ts_registry *r = calloc(1, sizeof(*r));

	if (!r)
		return ts_err(err, -ENOMEM, "out of memory");
	r->o = *o;
	r->plain = ref->loopback || o->insecure;
	r->loopback = ref->loopback;
	r->creds_ok = !r->plain || ref->loopback;
	snprintf(r->base, sizeof(r->base), "%s://%s/v2/%s", r->plain ? "http" : "https",
		 ref->api_host, ref->path);
	snprintf(r->shown, sizeof(r->shown), "%s/%s", ref->registry, ref->path);
	snprintf(r->scope, sizeof(r->scope), "repository:%s:pull", ref->path);
	r->basic = o->no_credentials ? NULL : load_creds(o->auth_file, ref->registry);
	return setup_handle(r, ret, err);
}

int ts_reg_clone(struct ts_registry *from, void (*progress)(void *userdata, uint64_t bytes),
		 void *userdata, const atomic_bool *abort, struct ts_registry **ret,
		 struct ts_error *err)
{
	struct ts_registry *r = calloc(1, sizeof(*r));

	if (!r)
		return ts_err(err, -ENOMEM, "out of memory");
	r->o = from->o;
	r->o.progress = progress;
	r->o.userdata = userdata;
	r->o.abort = abort;
	r->plain = from->plain;
	r->loopback = from->loopback;
	r->creds_ok = from->creds_ok;
	memcpy(r->base, from->base, sizeof(r->base));
	memcpy(r->shown, from->shown, sizeof(r->shown));
	memcpy(r->scope, from->scope, sizeof(r->scope));
	if ((from->basic && !(r->basic = strdup(from->basic))) ||
	    (from->auth && !(r->auth = strdup(from->auth)))) {
		ts_reg_free(r);
		return ts_err(err, -ENOMEM, "out of memory");
	}
	return setup_handle(r, ret, err);
}

void ts_reg_free(struct ts_registry *r)
{
	if (!r)
		return;
	if (r->c)
		r->C->easy_cleanup(r->c);
	free(r->basic);
	free(r->auth);
	free(r);
}

int ts_reg_manifest(struct ts_registry *r, const char *tag_or_digest, char **body, size_t *len,
		    char *mtype, size_t mtype_len, struct ts_error *err)
{
	struct sink k = { .fd = -1, .max = TS_REG_MAX_MANIFEST, .r = r };
	char what[300];
	int rc;

	snprintf(what, sizeof(what), "manifests/%s", tag_or_digest);
	k.buf = calloc(1, TS_REG_MAX_MANIFEST + 1);
	if (!k.buf)
		return ts_err(err, -ENOMEM, "out of memory");
	rc = request(r, what, ACCEPT_MANIFESTS, &k, err);
	if (rc < 0) {
		free(k.buf);
		return rc;
	}
	if (k.ctype[0] && strcmp(k.ctype, "application/json") != 0) {
		snprintf(mtype, mtype_len, "%s", k.ctype);
	} else {
		json_t *j = json_loads(k.buf, 0, NULL);

		snprintf(mtype, mtype_len, "%s",
			 json_string_value(json_object_get(j, "mediaType")) ?: "");
		json_decref(j);
	}
	*body = k.buf;
	*len = k.len;
	return 0;
}

int ts_reg_blob(struct ts_registry *r, const char *hex, int fd, uint64_t max, char *got_hex,
		uint64_t *got, struct ts_error *err)
{
	struct sink k = { .fd = fd, .max = max, .r = r };
	uint8_t d[SHA256_DIGEST_SIZE];
	char what[100];
	int rc;

	sha256_init(&k.h);
	snprintf(what, sizeof(what), "blobs/sha256:%s", hex);
	rc = request(r, what, NULL, &k, err);
	if (rc < 0)
		return rc;
	sha256_digest(&k.h, sizeof(d), d);
	for (size_t i = 0; i < sizeof(d); i++)
		snprintf(got_hex + 2 * i, 3, "%02x", d[i]);
	*got = k.n;
	return 0;
}
