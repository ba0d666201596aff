/* SPDX-License-Identifier: Apache-2.0 */
#include "seccomp-setid.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include "cleanup.h"

#define SETID_BITS (S_ISUID | S_ISGID)
/* O_TMPFILE includes O_DIRECTORY; the bit of its own is what creates a file */
#define CREATE_FLAGS (O_CREAT | (O_TMPFILE & ~O_DIRECTORY))

/* The calls that can give a file a mode, and where the mode (and the flags) are. */
static const struct guarded {
	const char *name;
	int mode_arg;  /* argument index of the mode */
	int flags_arg; /* argument index of the open flags, or -1: it always creates */
} guarded[] = {
	{ "chmod", 1, -1 },	{ "fchmod", 1, -1 }, { "fchmodat", 2, -1 },
	{ "fchmodat2", 2, -1 }, { "creat", 1, -1 },  { "mknod", 1, -1 },
	{ "mknodat", 2, -1 },	{ "open", 2, 1 },    { "openat", 3, 2 },
};

static json_t *masked_eq(int index, json_int_t mask)
{
	return json_pack("{s:i, s:I, s:i, s:s}", "index", index, "value", mask, "valueTwo", 0, "op",
			 "SCMP_CMP_MASKED_EQ");
}

static int allow_with(json_t *syscalls, const char *name, json_t *arg, const char *comment)
{
	json_t *rule = json_pack("{s:[s], s:s, s:[o], s:s}", "names", name, "action",
				 "SCMP_ACT_ALLOW", "args", arg, "comment", comment);

	return rule && json_array_append_new(syscalls, rule) == 0 ? 0 : -ENOMEM;
}

/* Take name out of the unconditional ALLOW rules; *was_allowed says if it was there. */
static int take_out(json_t *syscalls, const char *name, const char *path, bool *was_allowed,
		    struct ts_error *err)
{
	size_t i;
	json_t *rule;

	*was_allowed = false;
	json_array_foreach(syscalls, i, rule) {
		json_t *names = json_object_get(rule, "names"),
		       *one = json_object_get(rule, "name");
		json_t *action = json_object_get(rule, "action"),
		       *args = json_object_get(rule, "args");
		size_t k;
		json_t *n;

		if (!json_is_string(action) ||
		    strcmp(json_string_value(action), "SCMP_ACT_ALLOW") != 0)
			continue;
		if (json_is_string(one) && !strcmp(json_string_value(one), name))
			return ts_err(err, -EINVAL,
				      "`%s`: rule %zu allows `%s` by `name`: the setid guard needs "
				      "it in `names`",
				      path, i, name);
		json_array_foreach(names, k, n) {
			if (!json_is_string(n) || strcmp(json_string_value(n), name) != 0)
				continue;
			if (args && json_array_size(args) > 0)
				return ts_err(
					err, -EINVAL,
					"`%s`: rule %zu allows `%s` with argument conditions: "
					"the setid guard cannot be "
					"added to it",
					path, i, name);
			json_array_remove(names, k);
			*was_allowed = true;
			break;
		}
	}
	return 0;
}

/* An ALLOW rule left with no names would allow nothing (and compile to an error). */
static void drop_empty(json_t *syscalls)
{
	for (size_t i = json_array_size(syscalls); i-- > 0;) {
		json_t *names = json_object_get(json_array_get(syscalls, i), "names");

		if (json_is_array(names) && json_array_size(names) == 0)
			json_array_remove(syscalls, i);
	}
}

int ts_seccomp_guard_setid(json_t *root, const char *path, struct ts_error *err)
{
	json_t *syscalls = json_object_get(root, "syscalls");
	bool allowed;
	int r;

	if (!json_is_array(syscalls))
		return 0; /* nothing allowed, nothing to narrow */
	for (size_t i = 0; i < sizeof(guarded) / sizeof(guarded[0]); i++) {
		const struct guarded *g = &guarded[i];

		r = take_out(syscalls, g->name, path, &allowed, err);
		if (r < 0)
			return r;
		if (!allowed)
			continue;
		r = allow_with(syscalls, g->name, masked_eq(g->mode_arg, SETID_BITS),
			       "setid guard: no S_ISUID or S_ISGID in the mode");
		if (r == 0 && g->flags_arg >= 0)
			r = allow_with(syscalls, g->name, masked_eq(g->flags_arg, CREATE_FLAGS),
				       "setid guard: opening without creating");
		if (r < 0)
			return ts_err(err, r, "`%s`: add the setid guard", path);
	}
	drop_empty(syscalls);
	r = take_out(syscalls, "openat2", path, &allowed, err);
	if (r < 0)
		return r;
	drop_empty(syscalls);
	if (allowed) {
		json_t *rule = json_pack("{s:[s], s:s, s:i, s:s}", "names", "openat2", "action",
					 "SCMP_ACT_ERRNO", "errnoRet", ENOSYS, "comment",
					 "setid guard: openat2's mode is behind a pointer; libc "
					 "falls back to openat");

		if (!rule || json_array_append_new(syscalls, rule) < 0)
			return ts_err(err, -ENOMEM, "`%s`: add the setid guard", path);
	}
	return 0;
}
