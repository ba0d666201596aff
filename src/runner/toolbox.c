/* SPDX-License-Identifier: Apache-2.0 */
/* The toolkit's frame: the tool table, argument checks, results, the toolbox's memory. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "tools-internal.h"

static const struct ts_tool_def *const tools[] = {
	&ts_tool_bash,	    &ts_tool_read_file, &ts_tool_write_file,  &ts_tool_edit_file,
	&ts_tool_find,	    &ts_tool_grep,	&ts_tool_bash_output, &ts_tool_bash_stop,
	&ts_tool_bash_list, &ts_tool_send_file,
};

static const struct ts_tool_def *tool_find(unsigned version, const char *name)
{
	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
		if (strcmp(tools[i]->name, name) == 0)
			return tools[i]->since <= version ? tools[i] : NULL;
	return NULL;
}

bool ts_tool_known(unsigned version, const char *name)
{
	return tool_find(version, name) != NULL;
}

bool ts_tool_writes(const char *name)
{
	const struct ts_tool_def *d = tool_find(TS_TOOLS_VERSION_MAX, name);
	return d && d->writes;
}

json_t *ts_toolbox_schemas(unsigned version)
{
	json_t *a = json_array();
	if (!a)
		return NULL;
	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		const struct ts_tool_def *d = tools[i];
		if (d->since > version)
			continue;
		json_error_t jerr;
		json_t *schema = json_loads(d->schema, 0, &jerr);
		/* the schemas are this file's constants: tests/unit/test-toolbox checks them */
		if (!schema ||
		    json_array_append_new(a, json_pack("{s:s, s:s, s:o}", "name", d->name,
						       "description", d->description, "inputSchema",
						       schema)) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

void ts_tool_result_clear(struct ts_tool_result *r)
{
	free(r->text);
	json_decref(r->data);
	*r = (struct ts_tool_result){ 0 };
}

json_t *ts_tool_result_to_json(const struct ts_tool_result *r)
{
	return json_pack("{s:b, s:s, s:O}", "is_error", r->is_error, "text", r->text ? r->text : "",
			 "data", r->data ? r->data : json_null());
}

int ts_tool_result_from_json(const json_t *j, struct ts_tool_result *r, struct ts_error *err)
{
	int is_error = 0;
	const char *text = NULL;
	json_t *data = NULL;
	json_error_t jerr;
	*r = (struct ts_tool_result){ 0 };
	if (json_unpack_ex((json_t *)j, &jerr, 0, "{s:b, s:s, s:o}", "is_error", &is_error, "text",
			   &text, "data", &data) < 0)
		return ts_err(err, -EBADMSG, "a recorded tool result is malformed: %s", jerr.text);
	r->text = strdup(text);
	if (!r->text)
		return ts_err(err, -ENOMEM, "out of memory");
	r->is_error = is_error;
	r->data = json_incref(data);
	return 0;
}

static int result_set(struct ts_tool_result *res, bool is_error, json_t *data, char *text)
{
	ts_tool_result_clear(res);
	res->is_error = is_error;
	res->data = data ? data : json_object();
	res->text = text ? text : strdup("out of memory");
	return 0;
}

int ts_tool_fail(struct ts_tool_result *res, const char *code, const char *fmt, ...)
{
	char *text = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	va_end(ap);
	json_t *data = json_pack("{s:s, s:s}", "error", code, "message", text ? text : "");
	return result_set(res, true, data, text);
}

int ts_tool_ok_text(struct ts_tool_result *res, json_t *data, char *text)
{
	return result_set(res, false, data, text);
}

int ts_tool_ok(struct ts_tool_result *res, json_t *data, const char *fmt, ...)
{
	char *text = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	va_end(ap);
	return result_set(res, false, data, text);
}

/* The argument names of d, from its schema's properties: "a, b, c". */
static char *arg_names(const struct ts_tool_def *d)
{
	json_t *schema = json_loads(d->schema, 0, NULL);
	json_t *props = json_object_get(schema, "properties");
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (f) {
		const char *k;
		json_t *v;
		bool first = true;
		json_object_foreach(props, k, v) {
			fprintf(f, "%s%s", first ? "" : ", ", k);
			first = false;
		}
		fclose(f);
	}
	json_decref(schema);
	return out;
}

int ts_tool_args_check(const struct ts_tool_def *d, json_t *args, struct ts_tool_result *res)
{
	if (!json_is_object(args))
		return ts_tool_fail(res, "invalid_argument", "%s takes a JSON object of arguments",
				    d->name),
		       1;
	json_t *schema = json_loads(d->schema, 0, NULL);
	json_t *props = json_object_get(schema, "properties");
	const char *k;
	json_t *v;
	int r = 0;
	json_object_foreach(args, k, v) {
		if (!json_object_get(props, k)) {
			_cleanup_free_ char *names = arg_names(d);
			ts_tool_fail(res, "invalid_argument",
				     "%s has no argument `%s`; its arguments are: %s", d->name, k,
				     names ? names : "?");
			r = 1;
			break;
		}
	}
	json_decref(schema);
	return r;
}

int ts_tool_arg_str(json_t *args, const char *name, bool required, const char **ret,
		    struct ts_tool_result *res)
{
	json_t *v = json_object_get(args, name);
	*ret = NULL;
	if (!v || json_is_null(v)) {
		if (required)
			return ts_tool_fail(res, "invalid_argument",
					    "the argument `%s` is required", name),
			       1;
		return 0;
	}
	if (!json_is_string(v))
		return ts_tool_fail(res, "invalid_argument", "the argument `%s` must be a string",
				    name),
		       1;
	if (strlen(json_string_value(v)) != json_string_length(v))
		return ts_tool_fail(res, "invalid_argument",
				    "the argument `%s` must not contain NUL characters", name),
		       1;
	*ret = json_string_value(v);
	return 0;
}

int ts_tool_arg_int(json_t *args, const char *name, long long min, long long max, long long dflt,
		    long long *ret, struct ts_tool_result *res)
{
	json_t *v = json_object_get(args, name);
	*ret = dflt;
	if (!v || json_is_null(v))
		return 0;
	long long n;
	if (json_is_integer(v))
		n = json_integer_value(v);
	else if (json_is_real(v) && json_real_value(v) == (double)(long long)json_real_value(v))
		n = (long long)json_real_value(v);
	else
		return ts_tool_fail(res, "invalid_argument", "the argument `%s` must be an integer",
				    name),
		       1;
	if (n < min || n > max)
		return ts_tool_fail(res, "invalid_argument",
				    "the argument `%s` must be from %lld to %lld (got %lld)", name,
				    min, max, n),
		       1;
	*ret = n;
	return 0;
}

int ts_tool_arg_bool(json_t *args, const char *name, bool dflt, bool *ret,
		     struct ts_tool_result *res)
{
	json_t *v = json_object_get(args, name);
	*ret = dflt;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return ts_tool_fail(res, "invalid_argument",
				    "the argument `%s` must be true or false", name),
		       1;
	*ret = json_is_true(v);
	return 0;
}

static char *dup_or_null(const char *s, bool *oom)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		*oom = true;
	return d;
}

int ts_toolbox_new(const struct ts_toolbox_opts *o, struct ts_toolbox **ret, struct ts_error *err)
{
	if (o->version < 1 || o->version > TS_TOOLS_VERSION_MAX)
		return ts_err(err, -EINVAL, "tool-set version %u does not exist (1 to %u)",
			      o->version, TS_TOOLS_VERSION_MAX);
	if (o->webhook_url && o->outbox_dir)
		return ts_err(err, -EINVAL, "send_file has one channel: a webhook or an outbox");
	struct ts_toolbox *t = calloc(1, sizeof(*t));
	if (!t)
		return ts_err(err, -ENOMEM, "out of memory");
	bool oom = false;
	t->sb = o->sb;
	t->version = o->version;
	t->workspace = dup_or_null(o->workspace ? o->workspace : "/home/user", &oom);
	if (t->workspace) {
		size_t l = strlen(t->workspace);
		while (l > 1 && t->workspace[l - 1] == '/')
			t->workspace[--l] = '\0';
	}
	t->user = dup_or_null(o->user, &oom);
	t->webhook_url = dup_or_null(o->webhook_url, &oom);
	t->outbox_dir = dup_or_null(o->outbox_dir, &oom);
	t->protected_patterns = calloc(o->n_protected + 1, sizeof(char *));
	t->envs = calloc(o->n_envs + 1, sizeof(*t->envs));
	t->seen = json_object();
	if (!t->protected_patterns || !t->envs || !t->seen)
		oom = true;
	for (size_t i = 0; !oom && i < o->n_protected; i++) {
		t->protected_patterns[i] = dup_or_null(o->protected_patterns[i], &oom);
		t->n_protected = i + 1;
	}
	for (size_t i = 0; !oom && i < o->n_envs; i++) {
		t->envs[i].key = dup_or_null(o->envs[i].key, &oom);
		t->envs[i].value = dup_or_null(o->envs[i].value, &oom);
		t->n_envs = i + 1;
	}
	t->memory = o->memory;
	if (oom || !t->workspace || t->workspace[0] != '/') {
		bool bad = !oom;
		ts_toolbox_free(t);
		return bad ? ts_err(err, -EINVAL, "the workspace must be an absolute path")
			   : ts_err(err, -ENOMEM, "out of memory");
	}
	*ret = t;
	return 0;
}

void ts_toolbox_free(struct ts_toolbox *t)
{
	if (!t)
		return;
	free(t->workspace);
	free(t->user);
	free(t->webhook_url);
	free(t->outbox_dir);
	for (size_t i = 0; t->protected_patterns && i < t->n_protected; i++)
		free(t->protected_patterns[i]);
	free(t->protected_patterns);
	for (size_t i = 0; t->envs && i < t->n_envs; i++) {
		free((char *)t->envs[i].key);
		free((char *)t->envs[i].value);
	}
	free(t->envs);
	json_decref(t->seen);
	free(t);
}

void ts_toolbox_set_sandbox(struct ts_toolbox *t, struct ts_sb *sb)
{
	t->sb = sb;
}

int ts_toolbox_seen_get(struct ts_toolbox *t, const char *path, char *hash, size_t len,
			struct ts_error *err)
{
	if (t->memory.get)
		return t->memory.get(t->memory.userdata, path, hash, len, err);
	const char *h = json_string_value(json_object_get(t->seen, path));
	if (!h)
		return -ENOENT;
	if (snprintf(hash, len, "%s", h) >= (int)len)
		return ts_err(err, -ENAMETOOLONG, "a remembered hash does not fit");
	return 0;
}

int ts_toolbox_seen_set(struct ts_toolbox *t, const char *path, const char *hash,
			struct ts_error *err)
{
	if (t->memory.set)
		return t->memory.set(t->memory.userdata, path, hash, err);
	if (json_object_set_new(t->seen, path, json_string(hash)) < 0)
		return ts_err(err, -ENOMEM, "out of memory");
	return 0;
}

int ts_toolbox_call(struct ts_toolbox *t, const char *name, json_t *args,
		    struct ts_tool_result *res, struct ts_error *err)
{
	*res = (struct ts_tool_result){ 0 };
	const struct ts_tool_def *d = tool_find(t->version, name);
	if (!d) {
		if (tool_find(TS_TOOLS_VERSION_MAX, name))
			return ts_tool_fail(res, "unknown_tool",
					    "%s needs tool-set version %u; this agent has version "
					    "%u (`tools:` in its configuration)",
					    name, tool_find(TS_TOOLS_VERSION_MAX, name)->since,
					    t->version);
		return ts_tool_fail(res, "unknown_tool", "there is no tool `%s`", name);
	}
	if (ts_tool_args_check(d, args, res))
		return 0;
	return d->fn(t, args, res, err);
}
