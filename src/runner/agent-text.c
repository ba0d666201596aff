/* SPDX-License-Identifier: Apache-2.0 */
/* An agent configuration from text, through a private temporary file (agent-text.h). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent-text.h"
#include "cleanup.h"

/* Every mention of from in msg becomes to (the temporary path becomes the caller's name). */
static void replace_all(char *msg, size_t size, const char *from, const char *to)
{
	char out[sizeof(((struct ts_error *)0)->msg)];
	size_t fl = strlen(from), o = 0;
	const char *p = msg;

	if (!fl || size > sizeof(out))
		return;
	while (*p && o + 1 < sizeof(out)) {
		if (!strncmp(p, from, fl)) {
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%s", to);
			if (o >= sizeof(out))
				o = sizeof(out) - 1;
			p += fl;
		} else {
			out[o++] = *p++;
		}
	}
	out[o] = '\0';
	snprintf(msg, size, "%s", out);
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int ts_agent_load_text(const char *text, size_t len, const char *name, struct ts_agent *a,
		       struct ts_error *err)
{
	const char *tmp = getenv("TMPDIR");
	char dir[4096], path[4200];
	int r;

	*a = (struct ts_agent){ 0 };
	if (len > TS_AGENT_TEXT_MAX)
		return ts_err(err, -E2BIG, "%s: the agent configuration is larger than %u bytes",
			      name, TS_AGENT_TEXT_MAX);
	if (memchr(text, '\0', len))
		return ts_err(err, -EINVAL, "%s: the agent configuration contains a NUL byte",
			      name);
	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	if (snprintf(dir, sizeof(dir), "%s/toren-agent-XXXXXX", tmp) >= (int)sizeof(dir))
		return ts_err(err, -ENAMETOOLONG, "$TMPDIR is too long");
	if (!mkdtemp(dir))
		return ts_err_errno(err, -errno, "mkdtemp `%s`", dir);
	snprintf(path, sizeof(path), "%s/agent.yaml", dir);
	{
		_cleanup_close_ int fd =
			open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			r = ts_err_errno(err, -errno, "create `%s`", path);
		else if ((r = write_all(fd, text, len)) < 0)
			r = ts_err_errno(err, r, "write `%s`", path);
	}
	if (r >= 0)
		r = ts_agent_load(path, a, err);
	unlink(path);
	rmdir(dir);
	if (r < 0 && err) {
		replace_all(err->msg, sizeof(err->msg), path, name);
		replace_all(err->msg, sizeof(err->msg), dir, name);
	}
	if (r < 0)
		return r;
	free(a->path);
	a->path = NULL;
	return 0;
}

/* --- a run's record -------------------------------------------------------------------- */

/* A string member into *ret (replacing it); absent or null leaves it. */
static int rec_str(json_t *o, const char *key, char **ret, struct ts_error *err)
{
	json_t *v = json_object_get(o, key);
	char *s;

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return ts_err(err, -EINVAL,
			      "the run's recorded configuration: `%s` is not a string", key);
	if (!(s = strdup(json_string_value(v))))
		return ts_err(err, -ENOMEM, "out of memory");
	free(*ret);
	*ret = s;
	return 0;
}

/* An array of strings into a NULL-terminated vector (replacing *ret, which has *n). */
static int rec_strv(json_t *o, const char *key, char ***ret, size_t *n, struct ts_error *err)
{
	json_t *v = json_object_get(o, key), *e;
	size_t i, len;
	char **out;

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return ts_err(err, -EINVAL, "the run's recorded configuration: `%s` is not a list",
			      key);
	len = json_array_size(v);
	if (!(out = calloc(len + 1, sizeof(*out))))
		return ts_err(err, -ENOMEM, "out of memory");
	json_array_foreach(v, i, e) {
		if (!json_is_string(e) || !(out[i] = strdup(json_string_value(e)))) {
			for (size_t k = 0; k < i; k++)
				free(out[k]);
			free(out);
			return json_is_string(e) ? ts_err(err, -ENOMEM, "out of memory")
						 : ts_err(err, -EINVAL,
							  "the run's recorded configuration: `%s` "
							  "is not a list of strings",
							  key);
		}
	}
	for (size_t k = 0; *ret && k < *n; k++)
		free((*ret)[k]);
	free(*ret);
	*ret = out;
	*n = len;
	return 0;
}

static int rec_approval(json_t *v, const char *key, enum ts_approval *ret, struct ts_error *err)
{
	const char *s = json_string_value(json_object_get(v, key));

	if (!json_object_get(v, key))
		return 0;
	if (s && !strcmp(s, "always"))
		*ret = TS_APPROVAL_ALWAYS;
	else if (s && !strcmp(s, "never"))
		*ret = TS_APPROVAL_NEVER;
	else
		return ts_err(err, -EINVAL,
			      "the run's recorded configuration: `approval.%s` is not always or "
			      "never",
			      key);
	return 0;
}

int ts_agent_from_record(const char *json, struct ts_agent *a, struct ts_error *err)
{
	_cleanup_(ts_agent_freep) struct ts_agent t = { 0 };
	json_error_t jerr;
	json_t *o = json_loads(json ? json : "", JSON_REJECT_DUPLICATES, &jerr), *v;
	int r;

	*a = (struct ts_agent){ 0 };
	if (!o || !json_is_object(o)) {
		json_decref(o);
		return ts_err(err, -EINVAL,
			      "the run's recorded configuration is not a JSON object");
	}
	if ((r = ts_agent_default(&t, err)) < 0)
		goto out;
	if ((r = rec_str(o, "path", &t.path, err)) < 0 ||
	    (r = rec_str(o, "name", &t.name, err)) < 0 ||
	    (r = rec_str(o, "image", &t.image, err)) < 0 ||
	    (r = rec_str(o, "backend", &t.backend, err)) < 0 ||
	    (r = rec_str(o, "policy", &t.policy, err)) < 0 ||
	    (r = rec_strv(o, "env", &t.env, &t.n_env, err)) < 0 ||
	    (r = rec_strv(o, "protected", &t.protected_patterns, &t.n_protected, err)) < 0)
		goto out;
	if ((v = json_object_get(o, "sandbox")) && !json_is_null(v))
		t.sandbox = json_is_true(v);
	if ((v = json_object_get(o, "network")) && !json_is_null(v))
		t.network = json_is_true(v);
	if ((v = json_object_get(o, "approval")) && json_is_object(v) &&
	    ((r = rec_approval(v, "bash", &t.approve_bash, err)) < 0 ||
	     (r = rec_approval(v, "write", &t.approve_write, err)) < 0))
		goto out;
	if ((v = json_object_get(o, "tools")) && json_is_integer(v)) {
		if (json_integer_value(v) < 1 || json_integer_value(v) > 2) {
			r = ts_err(err, -EINVAL,
				   "the run's recorded configuration: `tools` is not 1 or 2");
			goto out;
		}
		t.tools = (unsigned)json_integer_value(v);
	}
	if ((v = json_object_get(o, "timeout_ms")) && json_is_integer(v))
		t.timeout_ms = json_integer_value(v);
	if ((v = json_object_get(o, "channel")) && json_is_object(v) &&
	    ((r = rec_str(v, "webhook", &t.webhook_url, err)) < 0 ||
	     (r = rec_str(v, "outbox", &t.outbox_dir, err)) < 0))
		goto out;
	*a = t;
	t = (struct ts_agent){ 0 };
	r = 0;
out:
	json_decref(o);
	return r;
}
