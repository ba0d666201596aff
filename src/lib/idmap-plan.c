/* SPDX-License-Identifier: Apache-2.0 */
#include "idmap-plan.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "util.h"

int ts_subid_lookup(const char *file, const char *name, unsigned long uid, unsigned long min_count,
		    unsigned long *start, unsigned long *count)
{
	_cleanup_free_ char *buf = NULL;
	char *line, *save = NULL, uidstr[32];
	int r;

	r = ts_read_file_at(AT_FDCWD, file, 1 << 20, &buf, NULL);
	if (r < 0)
		return r == -ENOENT ? -ENOENT : r;
	snprintf(uidstr, sizeof(uidstr), "%lu", uid);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2;
		unsigned long long s, c;

		if (!c1 || !(c2 = strchr(c1 + 1, ':')))
			continue;
		*c1 = *c2 = '\0';
		if (!(name && !strcmp(line, name)) && strcmp(line, uidstr) != 0)
			continue;
		if (ts_parse_ull(c1 + 1, &s) < 0 || ts_parse_ull(c2 + 1, &c) < 0)
			continue;
		if (c < min_count || s + c > 0xffffffffULL)
			continue;
		*start = (unsigned long)s;
		*count = (unsigned long)c;
		return 0;
	}
	return -ENOENT;
}

/* Number of ids our own namespace has, and whether it is the initial one. */
static void own_map(const char *file, unsigned long *total, bool *initial)
{
	_cleanup_free_ char *buf = NULL;
	char *line, *save = NULL;

	*total = 0;
	*initial = false;
	if (ts_read_file_at(AT_FDCWD, file, 65536, &buf, NULL) < 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long in, out, n;

		if (sscanf(line, "%lu %lu %lu", &in, &out, &n) != 3)
			continue;
		*total += n;
		if (in == 0 && out == 0 && n == 4294967295UL)
			*initial = true;
	}
}

bool ts_idmap_host_root(void)
{
	unsigned long total;
	bool initial;

	if (getuid() != 0 || geteuid() != 0)
		return false;
	own_map("/proc/self/uid_map", &total, &initial);
	return initial;
}

static void add(struct ts_idmap_line_plan *l, size_t *n, unsigned long in, unsigned long out,
		unsigned long count)
{
	l[*n] = (struct ts_idmap_line_plan){ in, out, count };
	(*n)++;
}

/* Range layout for a user with subordinate ids: 1000 inside is the user. */
static void user_range(struct ts_idmap_line_plan *l, size_t *n, unsigned long self,
		       unsigned long start, unsigned long count)
{
	unsigned long rest = count - 1000;

	if (rest > TS_IDMAP_RANGE - 1001)
		rest = TS_IDMAP_RANGE - 1001;
	add(l, n, 0, start, 1000);
	add(l, n, 1000, self, 1);
	add(l, n, 1001, start + 1000, rest);
}

int ts_idmap_plan(struct ts_idmap_plan *p, bool want_root, struct ts_error *err)
{
	unsigned long uid = getuid(), gid = getgid(), total, us, uc, gs, gc;
	struct passwd *pw;
	const char *name = NULL;
	bool initial, ginitial;

	memset(p, 0, sizeof(*p));
	own_map("/proc/self/uid_map", &total, &initial);
	own_map("/proc/self/gid_map", &total, &ginitial);

	/* the user name (an NSS lookup) only where /etc/subuid will be searched */
	if (uid == 0 ? initial && ginitial : want_root) {
		pw = getpwuid((uid_t)uid);
		name = pw ? pw->pw_name : NULL;
	}
	if (uid == 0 && initial && ginitial) {
		unsigned long base = TS_ROOT_IDMAP_BASE, gbase = TS_ROOT_IDMAP_BASE;

		if (ts_subid_lookup("/etc/subuid", name, uid, TS_IDMAP_RANGE, &us, &uc) == 0 &&
		    ts_subid_lookup("/etc/subgid", name, uid, TS_IDMAP_RANGE, &gs, &gc) == 0) {
			base = us;
			gbase = gs;
		}
		add(p->uid, &p->n_uid, 0, base, TS_IDMAP_RANGE);
		add(p->gid, &p->n_gid, 0, gbase, TS_IDMAP_RANGE);
		p->has_root = true;
		p->user_uid = base + 1000;
		p->user_gid = gbase + 1000;
		p->root_uid = base;
		p->root_gid = gbase;
		p->mode = "root-range";
		return 0;
	}
	if (uid != 0 && want_root && access("/usr/bin/newuidmap", X_OK) == 0 &&
	    access("/usr/bin/newgidmap", X_OK) == 0 &&
	    ts_subid_lookup("/etc/subuid", name, uid, 2000, &us, &uc) == 0 &&
	    ts_subid_lookup("/etc/subgid", name, uid, 2000, &gs, &gc) == 0) {
		user_range(p->uid, &p->n_uid, uid, us, uc);
		user_range(p->gid, &p->n_gid, gid, gs, gc);
		p->newidmap = true;
		p->has_root = true;
		p->user_uid = uid;
		p->user_gid = gid;
		p->root_uid = us;
		p->root_gid = gs;
		p->mode = "subid";
		return 0;
	}
	add(p->uid, &p->n_uid, 1000, uid, 1);
	add(p->gid, &p->n_gid, 1000, gid, 1);
	p->user_uid = uid;
	p->user_gid = gid;
	p->mode = "single";
	(void)err;
	return 0;
}
