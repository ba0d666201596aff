/* SPDX-License-Identifier: Apache-2.0 */
/* An agent configuration from text, through a private temporary file (agent-text.h). */
#include <errno.h>
#include <fcntl.h>
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
