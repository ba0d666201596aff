// SPDX-License-Identifier: Apache-2.0
/*
 * E2B's control plane (spec §2, delta §2-3) on the backend interface: create, connect
 * (resume), kill, info, list, timeout, pause, metrics, network (snapshots and fork:
 * snapshots.c); what cannot exist locally (volumes, secrets, template builds) is a 404
 * JSON. Every error body is
 * {"code": status, "message": ...}: the SDK branches on that code. A request is checked
 * whole before anything changes: a malformed or mistyped body is a 400 and changes
 * nothing.
 */
#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "cidr.h"
#include "cleanup.h"
#include "hostpat.h"
#include "oci-ref.h"
#include "oci-store.h"
#include "pool.h"
#include "pulls.h"
#include "snapshots.h"
#include "meta.h"
#include "metrics.h"
#include "tokens.h"
#include "util.h"

#define CONTROL_META_MAX 64	    /* metadata pairs of a create or a list filter */
#define CONTROL_ENVS_MAX 1024	    /* envVars of a create */
#define CONTROL_TEXT_MAX 4096	    /* a metadata or env key or value */
#define CONTROL_LIST_MAX 100	    /* E2B's largest page */
#define CONTROL_LIST_ALL 10000	    /* sandboxes read for one listing */
#define CONTROL_METRICS_IDS_MAX 100 /* ids of GET /sandboxes/metrics */

/* --- auth ------------------------------------------------------------------------------ */

/*
 * Every control-plane call carries X-API-KEY (the SDK refuses to call without one). Which
 * keys are good is the tokens' business (tokens.c, with scopes); with none configured
 * serve listens on loopback only and any key is taken. 0, or -1 with the 401 sent.
 */
static const char *request_key(struct ts_req *req)
{
	const char *key = ts_req_header(req, "X-API-KEY");

	return key && *key ? key : ts_tokens_bearer(ts_req_header(req, "Authorization"));
}

static int control_auth(struct ts_srv *srv, struct ts_req *req)
{
	const char *key = request_key(req);
	/* reading needs sandboxes:read; everything else makes or changes sandboxes, which
	 * is running code: sandboxes:run, never implied by another scope (tokens.h) */
	const char *scope = strcmp(ts_req_method(req), "GET") ? TS_SCOPE_SANDBOXES_RUN
							      : TS_SCOPE_SANDBOXES_READ;
	struct ts_error err = { 0 };
	int r;

	if (!key || !*key) {
		ts_srv_reply_error(req, 401, "missing API key: send it as the `X-API-KEY` header");
		return -1;
	}
	r = ts_tokens_check(srv->tokens, key, scope, &err);
	if (r == -EPERM) {
		ts_srv_reply_error(req, 403, "%s", err.msg);
		return -1;
	}
	if (r < 0) {
		ts_srv_reply_error(req, 401, "%s", err.msg);
		return -1;
	}
	return 0;
}

/* --- small helpers ----------------------------------------------------------------------- */

/* RFC 3339 UTC with milliseconds, as E2B's API writes times. */
static void fmt_time(char *buf, size_t len, long long ms)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;

	if (ms < 0 || !gmtime_r(&s, &tm)) {
		snprintf(buf, len, "1970-01-01T00:00:00.000Z");
		return;
	}
	/* every field reduced to its range: the text always fits 25 bytes */
	snprintf(buf, len, "%04u-%02u-%02uT%02u:%02u:%02u.%03uZ",
		 (unsigned)(tm.tm_year + 1900) % 10000U, (unsigned)(tm.tm_mon + 1) % 100U,
		 (unsigned)tm.tm_mday % 100U, (unsigned)tm.tm_hour % 100U,
		 (unsigned)tm.tm_min % 100U, (unsigned)tm.tm_sec % 100U, (unsigned)(ms % 1000));
}

static json_t *time_json(long long ms)
{
	char buf[40];

	fmt_time(buf, sizeof(buf), ms);
	return json_string(buf);
}

/* An RFC 3339 time ("2024-05-01T12:00:00Z", fractions and offsets allowed) in ms. */
static int parse_time(const char *s, long long *ret)
{
	struct tm tm = { 0 };
	int n = 0, ms = 0, digits = 0;
	const char *p;
	long long secs;

	if (sscanf(s, "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &n) != 3 || n != 10)
		return -EINVAL;
	p = s + n;
	if (*p != 'T' && *p != 't' && *p != ' ')
		return -EINVAL;
	p++;
	n = 0;
	if (sscanf(p, "%2d:%2d:%2d%n", &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 3 || n != 8)
		return -EINVAL;
	p += n;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, digits++)
			if (digits < 3)
				ms = ms * 10 + (*p - '0');
		if (!digits)
			return -EINVAL;
		for (; digits < 3; digits++)
			ms *= 10;
	}
	if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
	    tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		return -EINVAL;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	secs = (long long)timegm(&tm);
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int oh, om, sign = *p == '-' ? -1 : 1;

		n = 0;
		if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &n) != 2 || n != 5 || oh > 23 || om > 59)
			return -EINVAL;
		secs -= sign * (oh * 3600LL + om * 60LL);
		p += 1 + n;
	} else {
		return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	*ret = secs * 1000 + ms;
	return 0;
}

/* A whole number in [min, max] from a query value. */
static int parse_ll(const char *s, long long min, long long max, long long *ret)
{
	char *end;
	long long v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decode s[0..len) into buf (plus as space with form); -EINVAL on a bad escape,
 * a NUL byte or too long. */
static int pct_decode(const char *s, size_t len, bool form, char *buf, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (c == '%') {
			int hi = i + 2 < len ? hexval(s[i + 1]) : -1;
			int lo = i + 2 < len ? hexval(s[i + 2]) : -1;

			if (hi < 0 || lo < 0)
				return -EINVAL;
			c = (char)(hi * 16 + lo);
			i += 2;
		} else if (form && c == '+') {
			c = ' ';
		}
		if (c == '\0' || o + 1 >= size)
			return -EINVAL;
		buf[o++] = c;
	}
	buf[o] = '\0';
	return 0;
}

struct kv_buf {
	char key[CONTROL_TEXT_MAX], value[CONTROL_TEXT_MAX];
};

/*
 * The list's metadata filter (spec §2): the query value (already URL-decoded once) is
 * form data `k=v&k=v` whose keys and values are percent-encoded once more. 0 with *n
 * pairs, -EINVAL when malformed or over CONTROL_META_MAX.
 */
static int parse_metadata_query(const char *q, struct kv_buf *out, size_t *n)
{
	*n = 0;
	while (q && *q) {
		size_t len = strcspn(q, "&");
		const char *eq = memchr(q, '=', len);
		char tmp[CONTROL_TEXT_MAX];

		if (len == 0) {
			q++;
			continue;
		}
		if (!eq || *n >= CONTROL_META_MAX)
			return -EINVAL;
		if (pct_decode(q, (size_t)(eq - q), true, tmp, sizeof(tmp)) < 0 ||
		    pct_decode(tmp, strlen(tmp), false, out[*n].key, sizeof(out[*n].key)) < 0 ||
		    pct_decode(eq + 1, len - (size_t)(eq - q) - 1, true, tmp, sizeof(tmp)) < 0 ||
		    pct_decode(tmp, strlen(tmp), false, out[*n].value, sizeof(out[*n].value)) < 0)
			return -EINVAL;
		if (!out[*n].key[0])
			return -EINVAL;
		(*n)++;
		q += len;
		if (*q == '&')
			q++;
	}
	return 0;
}

static void hex_token(char *buf, size_t size)
{
	uint8_t raw[32];
	size_t got = 0;

	/* getrandom blocks only before the pool is initialised, never after boot */
	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n > 0)
			got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(raw) && 2 * i + 2 < size; i++)
		snprintf(buf + 2 * i, 3, "%02x", raw[i]);
}

/* The JSON body as an object; else the 400 is sent and NULL returned. */
static json_t *body_object(struct ts_req *req)
{
	struct ts_error err = { 0 };
	json_t *j = ts_req_json(req, &err);

	if (!j) {
		ts_srv_reply_error(req, 400, "%s", err.msg[0] ? err.msg : "malformed JSON");
		return NULL;
	}
	if (!json_is_object(j)) {
		ts_srv_reply_error(req, 400, "the body must be a JSON object");
		return NULL;
	}
	return j;
}

/* A field of the type wanted, or absent (null counts as absent). false: the 400 is sent. */
static bool field_ok(struct ts_req *req, json_t *obj, const char *name, json_type type)
{
	json_t *v = json_object_get(obj, name);

	if (!v || json_is_null(v))
		return true;
	if (json_typeof(v) == type || (type == JSON_TRUE && json_is_boolean(v)))
		return true;
	ts_srv_reply_error(req, 400, "`%s` must be %s", name,
			   type == JSON_OBJECT	  ? "an object"
			   : type == JSON_ARRAY	  ? "an array"
			   : type == JSON_STRING  ? "a string"
			   : type == JSON_INTEGER ? "an integer"
						  : "a boolean");
	return false;
}

/* `timeout` in seconds: absent *ret -1; false: the 400 is sent. */
static bool timeout_field(struct ts_req *req, json_t *obj, long long *ret)
{
	json_t *v = json_object_get(obj, "timeout");

	*ret = -1;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > TS_SB_TIMEOUT_MAX_MS / 1000) {
		ts_srv_reply_error(req, 400, "`timeout` must be whole seconds from 0 to %lld",
				   TS_SB_TIMEOUT_MAX_MS / 1000);
		return false;
	}
	*ret = json_integer_value(v);
	return true;
}

/* An object of strings (metadata, envVars), at most max pairs; false: the 400 is sent. */
static bool string_map_ok(struct ts_req *req, json_t *obj, const char *name, size_t max, bool env)
{
	json_t *m = json_object_get(obj, name), *v;
	const char *k;

	if (!field_ok(req, obj, name, JSON_OBJECT))
		return false;
	if (!m || json_is_null(m))
		return true;
	if (json_object_size(m) > max) {
		ts_srv_reply_error(req, 400, "`%s` has more than %zu entries", name, max);
		return false;
	}
	json_object_foreach(m, k, v) {
		if (!json_is_string(v)) {
			ts_srv_reply_error(req, 400, "`%s.%.64s` must be a string", name, k);
			return false;
		}
		if (!*k || strlen(k) >= CONTROL_TEXT_MAX ||
		    json_string_length(v) >= CONTROL_TEXT_MAX ||
		    strlen(json_string_value(v)) != json_string_length(v) ||
		    (env && strchr(k, '='))) {
			ts_srv_reply_error(req, 400, "bad `%s` entry `%.64s`", name, k);
			return false;
		}
	}
	return true;
}

/* The pairs of a string map as ts_kv (borrowed from the JSON). */
static struct ts_kv *map_kv(json_t *m, size_t *n)
{
	struct ts_kv *kv = calloc(json_object_size(m) + 1, sizeof(*kv));
	const char *k;
	json_t *v;

	*n = 0;
	if (!kv)
		return NULL;
	json_object_foreach(m, k, v) {
		kv[*n].key = k;
		kv[*n].value = json_string_value(v);
		(*n)++;
	}
	return kv;
}

/* The entry of the request's sandbox id, fresh from the backend; an expired one is
 * killed now. NULL: the 404 (or other error) is sent. */
static struct ts_srv_sb *find(struct ts_srv *srv, struct ts_req *req, const char *id)
{
	struct ts_error err = { 0 };
	struct ts_srv_sb *e = NULL;
	int r = ts_srv_sandbox(srv, id, &e, &err);

	if (r == 0)
		r = ts_srv_refresh(srv, e, &err); /* on failure e may be gone */
	if (r == 0 && ts_control_expired(e, ts_realtime_ms())) {
		struct ts_error ignore;

		ts_control_kill(srv, e, &ignore);
		r = -ENOENT;
	}
	if (r == -ENOENT) {
		char shown[65];

		snprintf(shown, sizeof(shown), "%s", id);
		ts_sanitize_text(shown);
		ts_srv_reply_error(req, 404, "sandbox `%s` not found", shown);
		return NULL;
	}
	if (r < 0) {
		ts_srv_reply_error(req, ts_srv_http_status(ts_be_code(&err)), "%s", err.msg);
		return NULL;
	}
	return e;
}

static void reply_be_error(struct ts_req *req, const struct ts_error *err)
{
	ts_srv_reply_error(req, ts_srv_http_status(ts_be_code(err)), "%s",
			   err->msg[0] ? err->msg : "backend error");
}

/* The create body of an entry (its own reference), {} when none or unreadable. */
static json_t *create_body(const struct ts_srv_sb *e)
{
	json_t *j = e->has_meta && e->meta.create_body ? json_loads(e->meta.create_body, 0, NULL)
						       : NULL;

	if (!json_is_object(j)) {
		json_decref(j);
		j = json_object();
	}
	return j;
}

static const char *template_of(const struct ts_srv_sb *e, const struct ts_sb_info *i)
{
	if (e && e->has_meta && e->meta.template_id[0])
		return e->meta.template_id;
	return i && i->template_id[0] && i->template_id[0] != '/' ? i->template_id : "base";
}

/* E2B's state: running or paused; a stopped local sandbox (the CLI's) reads as paused,
 * which connect resumes by starting it. */
static const char *state_name(enum ts_sb_state s)
{
	return s == TS_SB_RUNNING ? "running" : "paused";
}

static json_t *metadata_json(const struct ts_sb_info *i)
{
	json_t *m = json_object();

	for (size_t k = 0; k < i->n_metadata; k++) {
		const char *kv = i->metadata[k], *eq = strchr(kv, '=');
		char key[CONTROL_TEXT_MAX];

		if (!eq || (size_t)(eq - kv) >= sizeof(key))
			continue;
		memcpy(key, kv, (size_t)(eq - kv));
		key[eq - kv] = '\0';
		json_object_set_new(m, key, json_string(eq + 1));
	}
	return m;
}

/* The deadline as E2B shows it: a sandbox without one ends at the longest timeout. */
static long long end_of(const struct ts_sb_info *i)
{
	long long start = i->created_ms;

	return i->end_at_ms ? i->end_at_ms : start + TS_SB_TIMEOUT_MAX_MS;
}

/* What every sandbox listing shows: sizes are the host's (a local sandbox's limits are
 * its policy's, not E2B template sizes). */
static void add_sizes(json_t *j, const struct ts_sb_info *i)
{
	struct statvfs vfs;
	uint64_t disk = 0;

	if (i->workspace && statvfs(i->workspace, &vfs) == 0)
		disk = (uint64_t)vfs.f_blocks * vfs.f_frsize;
	json_object_set_new(j, "cpuCount", json_integer(ts_metrics_host_cpus()));
	json_object_set_new(j, "memoryMB",
			    json_integer((json_int_t)(ts_metrics_host_memory() >> 20)));
	json_object_set_new(j, "diskSizeMB", json_integer((json_int_t)(disk >> 20)));
}

/* The `Sandbox` of create and connect. */
static json_t *sandbox_json(const struct ts_srv_sb *e, const struct ts_sb_info *i)
{
	json_t *j = json_object();

	json_object_set_new(j, "sandboxID", json_string(e->id));
	json_object_set_new(j, "templateID", json_string(template_of(e, i)));
	json_object_set_new(j, "clientID",
			    json_string(e->has_meta && e->meta.client_id[0] ? e->meta.client_id
									    : "local"));
	json_object_set_new(j, "envdVersion", json_string(TS_CONTROL_ENVD_VERSION));
	if (e->has_meta && e->meta.envd_token[0])
		json_object_set_new(j, "envdAccessToken", json_string(e->meta.envd_token));
	json_object_set_new(j, "trafficAccessToken",
			    e->has_meta && e->meta.traffic_token[0]
				    ? json_string(e->meta.traffic_token)
				    : json_null());
	json_object_set_new(j, "domain", json_null());
	return j;
}

/* --- create ----------------------------------------------------------------------------- */

static bool create_body_ok(struct ts_req *req, json_t *b)
{
	static const char *const bools[] = { "allow_internet_access", "autoPause",
					     "autoPauseMemory", "secure" };
	static const char *const objects[] = { "network", "iam", "mcp", "autoResume" };
	json_t *ar, *vm, *v;
	long long t;
	size_t i;

	if (!field_ok(req, b, "templateID", JSON_STRING) ||
	    !string_map_ok(req, b, "metadata", CONTROL_META_MAX, false) ||
	    !string_map_ok(req, b, "envVars", CONTROL_ENVS_MAX, true) ||
	    !timeout_field(req, b, &t) || !field_ok(req, b, "volumeMounts", JSON_ARRAY))
		return false;
	for (i = 0; i < ELEMENTSOF(bools); i++)
		if (!field_ok(req, b, bools[i], JSON_TRUE))
			return false;
	for (i = 0; i < ELEMENTSOF(objects); i++)
		if (!field_ok(req, b, objects[i], JSON_OBJECT))
			return false;
	ar = json_object_get(b, "autoResume");
	if (json_is_object(ar) && !field_ok(req, ar, "enabled", JSON_TRUE))
		return false;
	vm = json_object_get(b, "volumeMounts");
	json_array_foreach(vm, i, v) {
		if (i >= CONTROL_META_MAX || !json_is_object(v) ||
		    !json_is_string(json_object_get(v, "name")) ||
		    !json_is_string(json_object_get(v, "path"))) {
			ts_srv_reply_error(req, 400,
					   "`volumeMounts` must be at most %d objects with a "
					   "`name` and a `path`",
					   CONTROL_META_MAX);
			return false;
		}
	}
	return true;
}

static void handle_create(void *ctx, struct ts_req *req);

static void create_failed(struct ts_req *req, unsigned status, const char *msg)
{
	char text[1200];

	/* a registry's words may be anything: JSON needs valid text */
	snprintf(text, sizeof(text), "%s", msg);
	ts_sanitize_text(text);
	ts_srv_reply_error(req, status, "%s", text);
}

/*
 * E2B's `network.allowOut` may hold host names (issue 11): those become the sandbox's
 * name-based allow-list (the local sandbox's only way out is then its proxy). Address
 * entries stay stored and echoed, not applied, as before; names and addresses together are
 * refused, as the policy refuses them. The names go to names[] (NULL-terminated, pointing
 * into the body). false when a 400 was sent.
 */
static bool allow_out_names(struct ts_req *req, json_t *net, const char **names, size_t max)
{
	json_t *list = json_is_object(net) ? json_object_get(net, "allowOut") : NULL, *v;
	size_t i, n = 0, n_addr = 0;

	names[0] = NULL;
	if (!list || json_is_null(list))
		return true;
	if (!json_is_array(list)) {
		ts_srv_reply_error(req, 400, "`network.allowOut` must be an array of strings");
		return false;
	}
	json_array_foreach(list, i, v) {
		const char *s = json_string_value(v);
		struct ts_hostpat hp;
		struct ts_cidr c;
		char why[160], shown[80];

		if (!s) {
			ts_srv_reply_error(req, 400,
					   "`network.allowOut` must be an array of strings");
			return false;
		}
		if (ts_cidr_parse(s, &c) == 0) {
			n_addr++;
			continue;
		}
		snprintf(shown, sizeof(shown), "%s", s);
		ts_sanitize_text(shown);
		if (ts_hostpat_parse(s, &hp, why, sizeof(why)) < 0) {
			ts_srv_reply_error(req, 400, "`network.allowOut` entry `%s`: %s", shown,
					   why);
			return false;
		}
		if (n + 1 >= max) {
			ts_srv_reply_error(req, 400, "`network.allowOut`: at most %zu names",
					   max - 1);
			return false;
		}
		names[n++] = s;
		names[n] = NULL;
	}
	if (n && n_addr) {
		ts_srv_reply_error(
			req, 400,
			"`network.allowOut` has both host names and addresses: with names "
			"the sandbox's only way out is a proxy that connects to names; "
			"give one kind");
		return false;
	}
	return true;
}

int ts_control_record(struct ts_srv *srv, struct ts_sb *sb, bool own, const char *template_id,
		      const char *text, bool auto_pause, json_t **ret, struct ts_error *err)
{
	struct ts_meta_sb m = { 0 };
	struct ts_sb_info info;
	struct ts_srv_sb *e = NULL;
	int r;

	snprintf(m.id, sizeof(m.id), "%s", ts_sb_id(sb));
	snprintf(m.template_id, sizeof(m.template_id), "%s", template_id ?: "base");
	snprintf(m.client_id, sizeof(m.client_id), "local");
	hex_token(m.envd_token, sizeof(m.envd_token));
	hex_token(m.traffic_token, sizeof(m.traffic_token));
	m.create_body = (char *)text;
	m.auto_pause = auto_pause;
	m.created_ms = ts_realtime_ms();
	r = ts_meta_put(srv->meta, &m, err);
	if (r < 0) {
		struct ts_error ignore;

		/* without its record it would run without a token: gone again */
		ts_sb_remove(sb, TS_SB_REMOVE_FORCE | TS_SB_REMOVE_PURGE, NULL, NULL, &ignore);
		ts_sb_close(sb);
		return -EPROTO;
	}
	if (!own) {
		/* a handle of another thread's backend never goes into the cache */
		ts_sb_close(sb);
		r = ts_srv_sandbox(srv, m.id, &e, err);
		if (r == 0)
			r = ts_sb_info(e->sb, &info, err);
		if (r < 0)
			return r;
		*ret = sandbox_json(e, &info);
		ts_sb_info_clear(&info);
		return 0;
	}
	/* the reply's state and the cache entry from one look at the sandbox, through the
	 * handle the create gave (no second lookup, no read of the record just written) */
	r = ts_sb_info(sb, &info, err);
	if (r < 0) {
		ts_sb_close(sb);
		return r;
	}
	r = ts_srv_adopt(srv, sb, &m, &info, &e, err);
	if (r < 0) {
		ts_sb_info_clear(&info);
		return r;
	}
	*ret = sandbox_json(e, &info);
	ts_sb_info_clear(&info);
	return 0;
}

int ts_control_create(struct ts_srv *srv, const struct ts_sb_create_opts *o, const char *text,
		      bool auto_pause, json_t **ret, struct ts_error *err)
{
	struct ts_sb *sb = NULL;
	/* a started sandbox of the warm pool when one fits (pool.h), else a new one */
	int r = ts_pool_claim(srv->pool, srv->be, o, &sb) == 0 ? 0
							       : ts_sb_create(srv->be, o, &sb, err);

	return r < 0 ? r
		     : ts_control_record(srv, sb, true, o->template_id, text, auto_pause, ret, err);
}

static void handle_create(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_error err = { 0 };
	_cleanup_free_ struct ts_kv *envs = NULL, *meta = NULL;
	_cleanup_free_ char *text = NULL;
	/* E2B's `base` (the only template here) has a root and a password-less sudo for
	 * `user` (SECURITY.md, "Sudo"); its timeout counts from creation */
	struct ts_sb_create_opts o = { .timeout_absolute = true, .with_root = true, .sudo = true };
	const char *tpl, *allow_names[64 + 1];
	json_t *b, *jm, *out = NULL;
	bool snapshot = false;
	long long t;
	int r;

	if (control_auth(srv, req) < 0 || !(b = body_object(req)) || !create_body_ok(req, b))
		return;
	tpl = json_string_value(json_object_get(b, "templateID"));
	/* "base" is the default image (the local image `base` when the store has one, else the
	 * host's: the backend decides), any other template an image of the local store (`image
	 * pull`, `image import`, or a registry reference pulled first); never a host path from
	 * the network */
	if (tpl && *tpl && ts_snapshots_has(srv, tpl)) {
		o.template_id = tpl; /* a snapshot (snapshots.h): restored */
		snapshot = true;
	} else if (tpl && *tpl && strcmp(tpl, "base") != 0) {
		char shown[80];

		snprintf(shown, sizeof(shown), "%s", tpl);
		ts_sanitize_text(shown);
		if (!ts_oci_name_valid(tpl)) {
			ts_srv_reply_error(req, 404,
					   "template `%s` not found: this server has `base` and "
					   "the images of `toren-sandbox image ls`",
					   shown);
			return;
		}
		if (ts_pulls_first(srv, req, tpl, handle_create, create_failed))
			return;
		o.template_id = tpl;
	}
	timeout_field(req, b, &t);
	/* E2B's timeout counts from now; 0 ends it at once (the reaper's next round) */
	o.timeout_ms = t < 0 ? TS_CONTROL_TIMEOUT_S * 1000LL : t == 0 ? 1 : t * 1000;
	if ((jm = json_object_get(b, "envVars")) && json_is_object(jm) &&
	    !(envs = map_kv(jm, &o.n_envs)))
		goto oom;
	if ((jm = json_object_get(b, "metadata")) && json_is_object(jm) &&
	    !(meta = map_kv(jm, &o.n_metadata)))
		goto oom;
	if (ts_pool_reserved(meta, o.n_metadata)) {
		ts_srv_reply_error(req, 400, "metadata key `%s` is reserved for serve's warm pool",
				   ts_pool_reserved(meta, o.n_metadata));
		return;
	}
	o.envs = envs;
	o.metadata = meta;
	if (!o.template_id)
		o.template_id = "base";
	/* a `network` object asks for egress (issue 11): the local sandbox's, which never
	 * reaches private addresses; host names in allowOut are applied (allow_out_names), its
	 * other rules (address allowOut, denyOut, ...) are stored and echoed, not applied.
	 * allow_internet_access alone does not: every 2.45 SDK sends it true */
	o.network = json_is_object(json_object_get(b, "network"));
	if (!allow_out_names(req, json_object_get(b, "network"), allow_names,
			     ELEMENTSOF(allow_names)))
		return;
	o.net_allow = allow_names[0] ? (char *const *)allow_names : NULL;
	text = json_dumps(b, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!text)
		goto oom;
	if (snapshot) {
		/* copies the snapshot's workspace: off the loop */
		ts_snapshots_restore(srv, req, &o, TAKE_PTR(envs), TAKE_PTR(meta), TAKE_PTR(text),
				     json_is_true(json_object_get(b, "autoPause")));
		return;
	}
	r = ts_control_create(srv, &o, text, json_is_true(json_object_get(b, "autoPause")), &out,
			      &err);
	if (r < 0) {
		ts_srv_reply_error(req, r == -EPROTO ? 500 : ts_srv_http_status(ts_be_code(&err)),
				   "%s", err.msg[0] ? err.msg : "backend error");
		return;
	}
	ts_req_reply_json(req, 201, out);
	return;
oom:
	ts_srv_reply_error(req, 500, "out of memory");
}

/* --- connect, resume ------------------------------------------------------------------------ */

/*
 * Connect (resume_only false) or the older resume: a paused (or stopped) sandbox is
 * resumed, 201, its deadline now + timeout (300 s when none is given); a running one is
 * 200 (resume: 409) and its deadline only ever extended.
 */
/* 409 while a snapshot or fork of e is being taken (true: answered). */
static bool snapshot_busy(struct ts_srv *srv, struct ts_req *req, const struct ts_srv_sb *e)
{
	if (!ts_snapshots_busy(srv, e->id))
		return false;
	ts_srv_reply_error(req, 409,
			   "sandbox `%s` is being snapshotted: try again when the snapshot is done",
			   e->id);
	return true;
}

static void connect_or_resume(struct ts_srv *srv, struct ts_req *req, bool resume_only)
{
	struct ts_error err = { 0 };
	struct ts_srv_sb *e;
	struct ts_sb_info info;
	long long t, now;
	unsigned status = 200;
	json_t *b;
	int r;

	if (control_auth(srv, req) < 0 || !(b = body_object(req)) || !timeout_field(req, b, &t) ||
	    !field_ok(req, b, "memory", JSON_TRUE) || !field_ok(req, b, "autoPause", JSON_TRUE) ||
	    !(e = find(srv, req, ts_req_param(req, 0))))
		return;
	r = ts_sb_info(e->sb, &info, &err);
	if (r < 0) {
		reply_be_error(req, &err);
		return;
	}
	now = ts_realtime_ms();
	if (info.state != TS_SB_RUNNING || (e->has_meta && e->meta.paused)) {
		/* the snapshot's own pause: resumed by the snapshot when its copy is done */
		if (snapshot_busy(srv, req, e)) {
			ts_sb_info_clear(&info);
			return;
		}
		if (info.state == TS_SB_PAUSED)
			r = ts_sb_resume(e->sb, &err);
		else if (info.state == TS_SB_STOPPED)
			r = ts_sb_start(e->sb, &err);
		/* EALREADY: it runs (meta said paused after a crash between the two) */
		if (r == -EALREADY)
			r = 0;
		if (r == 0 && e->has_meta)
			r = ts_meta_set_paused(srv->meta, e->id, false, &err);
		if (r == 0)
			r = ts_sb_set_timeout(e->sb, (t < 0 ? TS_CONTROL_TIMEOUT_S : t) * 1000LL,
					      &err);
		status = 201;
	} else if (resume_only) {
		ts_sb_info_clear(&info);
		ts_srv_reply_error(req, 409, "sandbox `%s` is already running", e->id);
		return;
	} else if (t >= 0 && info.end_at_ms && now + t * 1000 > info.end_at_ms) {
		/* connect only ever extends: a shorter timeout leaves endAt as it is */
		r = ts_sb_set_timeout(e->sb, t * 1000, &err);
	}
	ts_sb_info_clear(&info);
	if (r == 0)
		r = ts_srv_refresh(srv, e, &err);
	if (r == 0)
		r = ts_sb_info(e->sb, &info, &err);
	if (r < 0) {
		reply_be_error(req, &err);
		return;
	}
	ts_req_reply_json(req, status, sandbox_json(e, &info));
	ts_sb_info_clear(&info);
}

static void handle_connect(void *ctx, struct ts_req *req)
{
	connect_or_resume(ctx, req, false);
}

static void handle_resume(void *ctx, struct ts_req *req)
{
	connect_or_resume(ctx, req, true);
}

/* --- kill, info, timeout, pause, network --------------------------------------------------- */

static void handle_kill(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_error err = { 0 };
	struct ts_srv_sb *e;
	int r;

	if (control_auth(srv, req) < 0 || !(e = find(srv, req, ts_req_param(req, 0))) ||
	    snapshot_busy(srv, req, e))
		return;
	r = ts_control_kill(srv, e, &err);
	if (r < 0 && r != -ENOENT) {
		reply_be_error(req, &err);
		return;
	}
	ts_req_reply(req, 204, NULL, NULL, 0);
}

static void handle_info(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_error err = { 0 };
	struct ts_srv_sb *e;
	struct ts_sb_info info;
	json_t *j, *body, *v, *ar;
	bool paused;

	if (control_auth(srv, req) < 0 || !(e = find(srv, req, ts_req_param(req, 0))))
		return;
	if (ts_sb_info(e->sb, &info, &err) < 0) {
		reply_be_error(req, &err);
		return;
	}
	paused = info.state != TS_SB_RUNNING || (e->has_meta && e->meta.paused);
	j = sandbox_json(e, &info);
	json_object_del(j, "trafficAccessToken");
	/* the envd token runs code in the sandbox: only for a caller that may do so itself,
	 * never for a sandboxes:read token */
	{
		struct ts_error ignore;

		if (ts_tokens_check(srv->tokens, request_key(req), TS_SCOPE_SANDBOXES_RUN,
				    &ignore) < 0)
			json_object_del(j, "envdAccessToken");
	}
	json_object_set_new(j, "startedAt", time_json(info.created_ms));
	json_object_set_new(j, "endAt", time_json(end_of(&info)));
	json_object_set_new(j, "state", json_string(paused ? "paused" : "running"));
	add_sizes(j, &info);
	json_object_set_new(j, "metadata", metadata_json(&info));
	/* what E2B echoes of the create body */
	body = create_body(e);
	if ((v = json_object_get(body, "network")) && json_is_object(v))
		json_object_set(j, "network", v);
	if ((v = json_object_get(body, "allow_internet_access")) && json_is_boolean(v))
		json_object_set(j, "allowInternetAccess", v);
	if ((v = json_object_get(body, "volumeMounts")) && json_is_array(v))
		json_object_set(j, "volumeMounts", v);
	ar = json_object_get(json_object_get(body, "autoResume"), "enabled");
	json_object_set_new(j, "lifecycle",
			    json_pack("{s:s, s:b}", "onTimeout",
				      e->has_meta && e->meta.auto_pause ? "pause" : "kill",
				      "autoResume", json_is_true(ar)));
	json_decref(body);
	ts_sb_info_clear(&info);
	ts_req_reply_json(req, 200, j);
}

static void handle_timeout(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_error err = { 0 };
	struct ts_srv_sb *e;
	long long t;
	json_t *b;
	int r;

	if (control_auth(srv, req) < 0 || !(b = body_object(req)) || !timeout_field(req, b, &t))
		return;
	if (t < 0) {
		ts_srv_reply_error(req, 400, "`timeout` (seconds) is required");
		return;
	}
	if (!(e = find(srv, req, ts_req_param(req, 0))))
		return;
	/* now + timeout, shorter or longer; 0 ends it at the reaper's next round */
	r = ts_sb_set_timeout(e->sb, t ? t * 1000 : 1, &err);
	if (r == 0)
		r = ts_srv_refresh(srv, e, &err);
	if (r < 0) {
		reply_be_error(req, &err);
		return;
	}
	ts_req_reply(req, 204, NULL, NULL, 0);
}

static void handle_pause(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_error err = { 0 };
	struct ts_srv_sb *e;
	json_t *b;
	int r;

	if (control_auth(srv, req) < 0 || !(b = body_object(req)) ||
	    !field_ok(req, b, "memory", JSON_TRUE) || !(e = find(srv, req, ts_req_param(req, 0))) ||
	    snapshot_busy(srv, req, e))
		return;
	r = ts_control_pause(srv, e, &err);
	if (r == -EALREADY) {
		ts_srv_reply_error(req, 409, "sandbox `%s` is already paused", e->id);
		return;
	}
	if (r < 0) {
		reply_be_error(req, &err);
		return;
	}
	ts_req_reply(req, 204, NULL, NULL, 0);
}

/* PUT /sandboxes/{id}/network: the new configuration is kept and echoed; a local sandbox's
 * network is its policy's, which this does not change. */
static void handle_network(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_error err = { 0 };
	struct ts_srv_sb *e;
	struct ts_meta_sb m = { 0 };
	json_t *b, *body;
	char *text;
	int r;

	if (control_auth(srv, req) < 0 || !(b = body_object(req)) ||
	    !(e = find(srv, req, ts_req_param(req, 0))))
		return;
	if (!e->has_meta) {
		ts_srv_reply_error(req, 404, "sandbox `%s` was not created through this server",
				   e->id);
		return;
	}
	body = create_body(e);
	json_object_set(body, "network", b);
	text = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(body);
	if (!text) {
		ts_srv_reply_error(req, 500, "out of memory");
		return;
	}
	m = e->meta;
	m.create_body = text;
	r = ts_meta_put(srv->meta, &m, &err);
	free(text);
	if (r == 0)
		r = ts_srv_refresh(srv, e, &err);
	if (r < 0) {
		ts_srv_reply_error(req, 500, "%s", err.msg);
		return;
	}
	ts_req_reply(req, 204, NULL, NULL, 0);
}

/* --- list ------------------------------------------------------------------------------------ */

struct listed {
	struct ts_sb_info *info;
	struct ts_srv_sb *e; /* NULL when it could not be opened */
	long long started;
};

struct list_query {
	bool running, paused;
	struct kv_buf *meta;
	size_t n_meta;
	long long after_ms; /* -1: none */
	const char *tpl;
	bool asc;
	long long limit;
	long long tok_ms; /* -1: first page */
	char tok_id[64];
};

static int cmp_listed(const struct listed *a, const struct listed *b)
{
	if (a->started != b->started)
		return a->started < b->started ? -1 : 1;
	return strcmp(a->info->id, b->info->id);
}

static int cmp_asc(const void *a, const void *b)
{
	return cmp_listed(a, b);
}

static int cmp_desc(const void *a, const void *b)
{
	return cmp_listed(b, a);
}

/* The query of a listing; false: the 400 is sent. v1: running ones unless asked. */
static bool list_query(struct ts_req *req, bool v1, struct list_query *q)
{
	const char *state = ts_req_query(req, "state"), *v;

	q->after_ms = q->tok_ms = -1;
	q->limit = v1 ? CONTROL_LIST_ALL : CONTROL_LIST_MAX;
	if (state && *state) {
		char buf[128];
		char *tok, *save = NULL;

		snprintf(buf, sizeof(buf), "%s", state);
		for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (!strcmp(tok, "running"))
				q->running = true;
			else if (!strcmp(tok, "paused"))
				q->paused = true;
			else {
				ts_srv_reply_error(req, 400,
						   "`state` is a comma list of `running` and "
						   "`paused`");
				return false;
			}
		}
	} else {
		q->running = true;
		q->paused = !v1;
	}
	if (parse_metadata_query(ts_req_query(req, "metadata"), q->meta, &q->n_meta) < 0) {
		ts_srv_reply_error(req, 400,
				   "`metadata` must be form data `k=v&k=v` (at most %d pairs)",
				   CONTROL_META_MAX);
		return false;
	}
	if ((v = ts_req_query(req, "startedAfter")) && *v && parse_time(v, &q->after_ms) < 0) {
		ts_srv_reply_error(req, 400, "`startedAfter` must be an RFC 3339 time");
		return false;
	}
	q->tpl = ts_req_query(req, "template");
	if (q->tpl && !*q->tpl)
		q->tpl = NULL;
	v = ts_req_query(req, "order");
	if (v && *v && strcmp(v, "asc") && strcmp(v, "desc")) {
		ts_srv_reply_error(req, 400, "`order` is `asc` or `desc`");
		return false;
	}
	q->asc = v && !strcmp(v, "asc");
	if ((v = ts_req_query(req, "limit")) && *v &&
	    parse_ll(v, 1, CONTROL_LIST_MAX, &q->limit) < 0) {
		ts_srv_reply_error(req, 400, "`limit` must be from 1 to %d", CONTROL_LIST_MAX);
		return false;
	}
	if ((v = ts_req_query(req, "nextToken")) && *v) {
		int n = 0;

		if (sscanf(v, "%lld:%63[0-9a-zA-Z_.-]%n", &q->tok_ms, q->tok_id, &n) != 2 || v[n] ||
		    q->tok_ms < 0) {
			ts_srv_reply_error(req, 400, "bad `nextToken`");
			return false;
		}
	}
	return true;
}

static bool meta_match(const struct ts_sb_info *i, const struct list_query *q)
{
	for (size_t k = 0; k < q->n_meta; k++) {
		size_t kl = strlen(q->meta[k].key);
		bool found = false;

		for (size_t m = 0; m < i->n_metadata && !found; m++)
			found = !strncmp(i->metadata[m], q->meta[k].key, kl) &&
				i->metadata[m][kl] == '=' &&
				!strcmp(i->metadata[m] + kl + 1, q->meta[k].value);
		if (!found)
			return false;
	}
	return true;
}

/* Every sandbox of the backend (all pages), bounded. */
static int list_backend(struct ts_srv *srv, struct ts_sb_info **ret, size_t *n,
			struct ts_error *err)
{
	struct ts_sb_list_opts o = { .live = true };
	struct ts_sb_info *all = NULL;
	char *token = NULL;
	size_t total = 0;
	int r = 0;

	do {
		struct ts_sb_info *v = NULL, *grown;
		size_t k = 0;
		char *next = NULL;

		o.next_token = token;
		r = ts_sb_list(srv->be, &o, &v, &k, &next, err);
		free(token);
		token = next;
		if (r < 0)
			break;
		grown = realloc(all, (total + k + 1) * sizeof(*all));
		if (!grown) {
			ts_sb_infos_free(v, k);
			r = ts_err(err, -ENOMEM, "list sandboxes");
			break;
		}
		all = grown;
		memcpy(all + total, v, k * sizeof(*v));
		total += k;
		free(v); /* the entries moved into all */
	} while (token && total < CONTROL_LIST_ALL);
	free(token);
	if (r < 0) {
		ts_sb_infos_free(all, total);
		return r;
	}
	*ret = all;
	*n = total;
	return 0;
}

static void list(struct ts_srv *srv, struct ts_req *req, bool v1)
{
	struct ts_error err = { 0 };
	_cleanup_free_ struct kv_buf *meta = calloc(CONTROL_META_MAX, sizeof(*meta));
	_cleanup_free_ struct listed *items = NULL;
	struct list_query q = { .meta = meta };
	struct ts_sb_info *all = NULL;
	size_t n_all = 0, n = 0, start = 0, shown = 0;
	long long now = ts_realtime_ms();
	json_t *out;

	if (control_auth(srv, req) < 0)
		return;
	if (!meta) {
		ts_srv_reply_error(req, 500, "out of memory");
		return;
	}
	if (!list_query(req, v1, &q))
		return;
	if (list_backend(srv, &all, &n_all, &err) < 0) {
		reply_be_error(req, &err);
		return;
	}
	items = calloc(n_all + 1, sizeof(*items));
	if (!items) {
		ts_sb_infos_free(all, n_all);
		ts_srv_reply_error(req, 500, "out of memory");
		return;
	}
	for (size_t i = 0; i < n_all; i++) {
		struct ts_sb_info *in = &all[i];
		struct ts_srv_sb *e = NULL;
		struct ts_error ignore;
		bool paused;

		if (ts_pool_member(in))
			continue;
		if (ts_srv_sandbox(srv, in->id, &e, &ignore) < 0)
			e = NULL;
		paused = in->state != TS_SB_RUNNING || (e && e->has_meta && e->meta.paused);
		/* a sandbox past its deadline is gone for E2B: never listed */
		if (e && e->has_meta && !e->meta.auto_pause && !paused && in->end_at_ms &&
		    in->end_at_ms <= now)
			continue;
		if (!(paused ? q.paused : q.running) || !meta_match(in, &q) ||
		    (q.after_ms >= 0 && in->created_ms < q.after_ms) ||
		    (q.tpl && strcmp(q.tpl, template_of(e, in)) != 0))
			continue;
		items[n].info = in;
		items[n].e = e;
		items[n].started = in->created_ms;
		n++;
	}
	if (n > 1)
		qsort(items, n, sizeof(*items), q.asc ? cmp_asc : cmp_desc);
	/* the page after the token: items past (tok_ms, tok_id) in this order */
	if (q.tok_ms >= 0) {
		struct ts_sb_info tinfo = { 0 };
		struct listed tok = { .info = &tinfo, .started = q.tok_ms };

		snprintf(tinfo.id, sizeof(tinfo.id), "%s", q.tok_id);
		while (start < n && (q.asc ? cmp_listed(&items[start], &tok) <= 0
					   : cmp_listed(&items[start], &tok) >= 0))
			start++;
	}
	out = json_array();
	for (size_t i = start; i < n && shown < (size_t)q.limit; i++, shown++) {
		struct ts_sb_info *in = items[i].info;
		bool paused = in->state != TS_SB_RUNNING ||
			      (items[i].e && items[i].e->has_meta && items[i].e->meta.paused);
		json_t *j = json_object();

		json_object_set_new(j, "sandboxID", json_string(in->id));
		json_object_set_new(j, "templateID", json_string(template_of(items[i].e, in)));
		json_object_set_new(j, "clientID", json_string("local"));
		json_object_set_new(j, "startedAt", time_json(in->created_ms));
		json_object_set_new(j, "endAt", time_json(end_of(in)));
		json_object_set_new(j, "state",
				    json_string(state_name(paused ? TS_SB_PAUSED : TS_SB_RUNNING)));
		json_object_set_new(j, "envdVersion", json_string(TS_CONTROL_ENVD_VERSION));
		add_sizes(j, in);
		json_object_set_new(j, "metadata", metadata_json(in));
		json_array_append_new(out, j);
	}
	if (start + shown < n && shown > 0) {
		char tok[128];

		snprintf(tok, sizeof(tok), "%lld:%s", items[start + shown - 1].started,
			 items[start + shown - 1].info->id);
		ts_req_add_header(req, "X-Next-Token", tok);
	}
	ts_sb_infos_free(all, n_all);
	ts_req_reply_json(req, 200, out);
}

static void handle_list_v2(void *ctx, struct ts_req *req)
{
	list(ctx, req, false);
}

static void handle_list_v1(void *ctx, struct ts_req *req)
{
	list(ctx, req, true);
}

/* --- metrics --------------------------------------------------------------------------------- */

static json_t *metric_json(const struct ts_metric *s)
{
	json_t *j = json_object();

	json_object_set_new(j, "timestamp", time_json(s->ts_ms));
	json_object_set_new(j, "timestampUnix", json_integer(s->ts_ms / 1000));
	json_object_set_new(j, "cpuCount", json_integer(s->cpu_count));
	json_object_set_new(j, "cpuUsedPct", json_real(s->cpu_pct));
	json_object_set_new(j, "memUsed", json_integer((json_int_t)s->mem_used));
	json_object_set_new(j, "memTotal", json_integer((json_int_t)s->mem_total));
	json_object_set_new(j, "memCache", json_integer((json_int_t)s->mem_cache));
	json_object_set_new(j, "diskUsed", json_integer((json_int_t)s->disk_used));
	json_object_set_new(j, "diskTotal", json_integer((json_int_t)s->disk_total));
	return j;
}

static void handle_metrics(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	struct ts_error err = { 0 };
	const char *sv = ts_req_query(req, "start"), *ev = ts_req_query(req, "end");
	long long start = 0, end = 1LL << 40;
	struct ts_metric *v = NULL;
	struct ts_srv_sb *e;
	size_t n = 0;
	json_t *out;

	if (control_auth(srv, req) < 0)
		return;
	if ((sv && *sv && parse_ll(sv, 0, 1LL << 40, &start) < 0) ||
	    (ev && *ev && parse_ll(ev, 0, 1LL << 40, &end) < 0)) {
		ts_srv_reply_error(req, 400, "`start` and `end` are unix seconds");
		return;
	}
	if (!(e = find(srv, req, ts_req_param(req, 0))))
		return;
	if (ts_meta_metrics(srv->meta, e->id, start * 1000, end * 1000 + 999, &v, &n, &err) < 0) {
		ts_srv_reply_error(req, 500, "%s", err.msg);
		return;
	}
	out = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(out, metric_json(&v[i]));
	free(v);
	ts_req_reply_json(req, 200, out);
}

/* GET /sandboxes/metrics?sandbox_ids=a,b: the newest sample of each (unknown ids left out). */
static void handle_metrics_many(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;
	const char *ids = ts_req_query(req, "sandbox_ids");
	_cleanup_free_ char *buf = NULL;
	json_t *map;
	char *tok, *save = NULL;
	unsigned count = 0;

	if (control_auth(srv, req) < 0)
		return;
	if (!ids || !*ids || strlen(ids) > 64 * CONTROL_METRICS_IDS_MAX) {
		ts_srv_reply_error(req, 400, "`sandbox_ids` is a comma list of at most %d ids",
				   CONTROL_METRICS_IDS_MAX);
		return;
	}
	buf = strdup(ids);
	if (!buf) {
		ts_srv_reply_error(req, 500, "out of memory");
		return;
	}
	map = json_object();
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct ts_metric s;
		struct ts_error ignore;

		if (++count > CONTROL_METRICS_IDS_MAX) {
			json_decref(map);
			ts_srv_reply_error(req, 400, "more than %d ids", CONTROL_METRICS_IDS_MAX);
			return;
		}
		if (ts_meta_metric_last(srv->meta, tok, &s, &ignore) == 0)
			json_object_set_new(map, tok, metric_json(&s));
	}
	ts_req_reply_json(req, 200, json_pack("{s:o}", "sandboxes", map));
}

static void handle_logs(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;

	/* serve keeps no sandbox logs (E2B's are its orchestrator's) */
	if (control_auth(srv, req) < 0 || !find(srv, req, ts_req_param(req, 0)))
		return;
	ts_req_reply_json(req, 200, json_pack("{s:[], s:[]}", "logs", "logEntries"));
}

int ts_control_auth(struct ts_srv *srv, struct ts_req *req)
{
	return control_auth(srv, req);
}

struct ts_srv_sb *ts_control_find(struct ts_srv *srv, struct ts_req *req, const char *id)
{
	return find(srv, req, id);
}

/* Volumes, secrets, template builds: E2B's cloud only (delta §2.12). */
static void handle_unavailable(void *ctx, struct ts_req *req)
{
	struct ts_srv *srv = ctx;

	if (control_auth(srv, req) < 0)
		return;
	ts_srv_reply_error(req, 404,
			   "`%s %.200s` is not available on this server (local "
			   "sandboxes have no volumes, secrets or template builds)",
			   ts_req_method(req), ts_req_path(req));
}

const struct ts_route ts_control_routes[] = {
	{ "POST", "/v2/sandboxes", handle_create, NULL, 0 },
	{ "POST", "/sandboxes", handle_create, NULL, 0 },
	{ "GET", "/v2/sandboxes", handle_list_v2, NULL, 0 },
	{ "GET", "/sandboxes", handle_list_v1, NULL, 0 },
	/* before /sandboxes/ *: "metrics" is not an id */
	{ "GET", "/sandboxes/metrics", handle_metrics_many, NULL, 0 },
	{ "GET", "/sandboxes/*", handle_info, NULL, 0 },
	{ "DELETE", "/sandboxes/*", handle_kill, NULL, 0 },
	{ "POST", "/v2/sandboxes/*/connect", handle_connect, NULL, 0 },
	{ "POST", "/sandboxes/*/connect", handle_connect, NULL, 0 },
	{ "POST", "/sandboxes/*/resume", handle_resume, NULL, 0 },
	{ "POST", "/sandboxes/*/timeout", handle_timeout, NULL, 0 },
	{ "POST", "/sandboxes/*/pause", handle_pause, NULL, 0 },
	{ "PUT", "/sandboxes/*/network", handle_network, NULL, 0 },
	{ "GET", "/sandboxes/*/metrics", handle_metrics, NULL, 0 },
	{ "GET", "/sandboxes/*/logs", handle_logs, NULL, 0 },
	{ "GET", "/v2/sandboxes/*/logs", handle_logs, NULL, 0 },
	{ "POST", "/sandboxes/*/snapshots", ts_snapshots_create, NULL, 0 },
	{ "POST", "/sandboxes/*/fork", ts_snapshots_fork, NULL, 0 },
	{ "GET", "/snapshots", ts_snapshots_list, NULL, 0 },
	{ "DELETE", "/templates/*", ts_snapshots_delete, NULL, 0 },
	{ NULL, "/sandboxes/*/snapshots", handle_unavailable, NULL, 0 },
	{ NULL, "/sandboxes/*/fork", handle_unavailable, NULL, 0 },
	{ NULL, "/snapshots/**", handle_unavailable, NULL, 0 },
	{ NULL, "/volumes/**", handle_unavailable, NULL, 0 },
	{ NULL, "/volumecontent/**", handle_unavailable, NULL, 0 },
	{ NULL, "/secrets/**", handle_unavailable, NULL, 0 },
	{ NULL, "/templates/**", handle_unavailable, NULL, 0 },
	{ NULL, "/v2/templates/**", handle_unavailable, NULL, 0 },
	{ NULL, "/v3/templates/**", handle_unavailable, NULL, 0 },
	{ 0 },
};
