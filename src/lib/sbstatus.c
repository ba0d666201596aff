/* SPDX-License-Identifier: Apache-2.0 */
#include "sbstatus.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cidr.h"
#include "cleanup.h"
#include "ctlclient.h"
#include "procinfo.h"
#include "sandbox.h"
#include "util.h"

/* How long a probe waits for one init to answer HELLO. */
#define SB_QUERY_MS 10000

void ts_sb_probe(struct ts_sandbox_rec *rec, bool query, struct ts_sb_live *live)
{
	struct ts_error err = { 0 };
	_cleanup_(ts_ctl_client_freep) struct ts_ctl_client *c = NULL;

	memset(live, 0, sizeof(*live));
	live->running = ts_sandbox_running(rec);
	/* init's HELLO carries its idle time and attached count: a query is a connect */
	if (live->running && query &&
	    ts_ctl_client_connect(rec->dir, rec->id, SB_QUERY_MS, &c, &err) == 0) {
		live->queried = true;
		live->idle_ms = c->idle_ms;
		live->attached = c->attached;
		live->paused = c->paused;
	}
}

long long ts_sb_idle_ms(const struct ts_sandbox_rec *rec, const struct ts_sb_live *live,
			long long now)
{
	long long since = rec->last_activity_ms > rec->started_ms ? rec->last_activity_ms
								  : rec->started_ms;
	long long idle = now > since ? now - since : 0;

	if (live && live->queried && (long long)live->idle_ms < idle)
		idle = (long long)live->idle_ms;
	return idle;
}

long long ts_sb_expires_ms(const struct ts_sandbox_rec *rec, const struct ts_sb_live *live,
			   long long now)
{
	if (rec->ttl_ms <= 0)
		return 0;
	if (rec->ttl_absolute)
		return rec->created_ms + rec->ttl_ms;
	return now - ts_sb_idle_ms(rec, live, now) + rec->ttl_ms;
}

void ts_fmt_duration(char *buf, size_t len, long long ms)
{
	static const struct {
		long long ms;
		const char *unit;
	} units[] = { { 86400000, "d" }, { 3600000, "h" }, { 60000, "m" }, { 1000, "s" } };

	if (ms < 0)
		ms = 0;
	if (ms < 10000 && ms % 1000) {
		snprintf(buf, len, "%.1fs", (double)ms / 1000.0);
		return;
	}
	for (size_t i = 0; i < ELEMENTSOF(units); i++) {
		long long big = ms / units[i].ms, small;

		if (!big && i + 1 < ELEMENTSOF(units))
			continue;
		small = i + 1 < ELEMENTSOF(units) ? (ms % units[i].ms) / units[i + 1].ms : 0;
		if (small)
			snprintf(buf, len, "%lld%s%lld%s", big, units[i].unit, small,
				 units[i + 1].unit);
		else
			snprintf(buf, len, "%lld%s", big, units[i].unit);
		return;
	}
}

void ts_fmt_time(char *buf, size_t len, long long ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char day[40];

	if (!gmtime_r(&t, &tm) || !strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm)) {
		snprintf(buf, len, "?");
		return;
	}
	snprintf(buf, len, "%s.%03lldZ", day, ms % 1000);
}

json_t *ts_sb_spec_json(const char *spec)
{
	json_t *j = json_loads(spec ? spec : "{}", 0, NULL), *env, *names, *v;
	size_t i;

	if (!j)
		return NULL;
	env = json_object_get(j, "env");
	if (json_is_array(env)) {
		names = json_array();
		json_array_foreach(env, i, v) {
			const char *s = json_string_value(v), *eq;

			if (!s)
				continue;
			eq = strchr(s, '=');
			json_array_append_new(names, eq ? json_stringn(s, (size_t)(eq - s))
							: json_string(s));
		}
		json_object_set_new(j, "env", names);
	}
	return j;
}

static json_t *time_json(long long ms)
{
	char buf[64];

	if (ms <= 0)
		return json_null();
	ts_fmt_time(buf, sizeof(buf), ms);
	return json_string(buf);
}

static json_t *ms_json(long long ms)
{
	return ms > 0 ? json_integer(ms) : json_null();
}

static json_t *path_json(const char *dir, const char *sub)
{
	char buf[4200];

	snprintf(buf, sizeof(buf), "%s/%s", dir, sub);
	return json_string(buf);
}

/*
 * The sandbox's network: "egress" (the egress interface is there, or the spec asked for
 * it) or "none" (only `lo`), and while it runs the interface's counters, read from the
 * host in init's network namespace (/proc/PID/net/dev): bytes and packets in and out, all
 * of the sandbox's traffic through its egress program.
 */
static bool has_ipv6(pid_t pid);

static json_t *network_json(const struct ts_sandbox_rec *rec, const struct ts_sb_live *live,
			    json_t *spec)
{
	json_t *j = json_object();
	bool egress = spec && json_is_true(json_object_get(spec, "network"));
	char path[64], *text = NULL, *line, *save = NULL;

	if (live->running && rec->init_pid > 0) {
		snprintf(path, sizeof(path), "/proc/%d/net/dev", (int)rec->init_pid);
		if (ts_read_file_at(AT_FDCWD, path, 65536, &text, NULL) < 0)
			text = NULL;
	}
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long rx, rxp, tx, txp, skip;
		char *colon = strchr(line, ':');

		while (*line == ' ')
			line++;
		if (!colon || strncmp(line, TS_NET_IFNAME ":", sizeof(TS_NET_IFNAME)) != 0)
			continue;
		if (sscanf(colon + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &rx,
			   &rxp, &skip, &skip, &skip, &skip, &skip, &skip, &tx, &txp) != 10)
			continue;
		egress = true;
		json_object_set_new(j, "rx_bytes", json_integer((json_int_t)rx));
		json_object_set_new(j, "tx_bytes", json_integer((json_int_t)tx));
		json_object_set_new(j, "rx_packets", json_integer((json_int_t)rxp));
		json_object_set_new(j, "tx_packets", json_integer((json_int_t)txp));
	}
	free(text);
	text = NULL;
	/* names (policy `network.allow` with names): the proxy's counters, which it writes to
	 * run/proxy.json at most once a second (src/proxy/proxy.c) */
	if (live->running) {
		char file[4200];
		json_t *px;

		snprintf(file, sizeof(file), "%s/run/proxy.json", rec->dir);
		if (ts_read_file_at(AT_FDCWD, file, 4096, &text, NULL) == 0 &&
		    (px = json_loads(text, 0, NULL))) {
			if (json_is_object(px)) {
				json_object_set_new(j, "proxy", px);
				json_object_set_new(j, "mode", json_string("proxy"));
				free(text);
				return j;
			}
			json_decref(px);
		}
		free(text);
	}
	json_object_set_new(j, "mode", json_string(egress ? "egress" : "none"));
	if (egress && live->running && rec->init_pid > 0)
		json_object_set_new(j, "ipv6", json_boolean(has_ipv6(rec->init_pid)));
	return j;
}

/* Whether the egress interface in pid's network namespace has a global IPv6 address (the
 * helper gives it one only where IPv6 leaves: otherwise IPv6 is prohibited as a whole). */
static bool has_ipv6(pid_t pid)
{
	char path[64], *text = NULL, *line, *save = NULL;
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%d/net/if_inet6", (int)pid);
	if (ts_read_file_at(AT_FDCWD, path, 65536, &text, NULL) < 0)
		return false;
	/* ADDR IFINDEX PLEN SCOPE FLAGS NAME; scope 00 is global */
	for (line = strtok_r(text, "\n", &save); line && !found;
	     line = strtok_r(NULL, "\n", &save)) {
		char addr[33], name[32];
		unsigned idx, plen, scope, flags;

		found = sscanf(line, "%32s %x %x %x %x %31s", addr, &idx, &plen, &scope, &flags,
			       name) == 6 &&
			scope == 0 && !strcmp(name, TS_NET_IFNAME);
	}
	free(text);
	return found;
}

/* Run `helper --net-counters PID START` and read what it prints: at most 4 KiB, within
 * 5 s. */
static int read_counters(const char *helper, pid_t pid, unsigned long long start, char *out,
			 size_t len)
{
	char pid_s[24], start_s[24];
	char *const argv[] = { (char *)helper, "--net-counters", pid_s, start_s, NULL };
	static char *const empty_env[] = { NULL };
	posix_spawn_file_actions_t fa;
	int p[2], status = 0, r;
	size_t got = 0;
	pid_t child;

	snprintf(pid_s, sizeof(pid_s), "%d", (int)pid);
	snprintf(start_s, sizeof(start_s), "%llu", start);
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	r = posix_spawn(&child, helper, &fa, NULL, argv, empty_env);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (r != 0) {
		close(p[0]);
		return -r;
	}
	for (;;) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		ssize_t n;

		if (poll(&pf, 1, 5000) <= 0) {
			kill(child, SIGKILL);
			break;
		}
		n = read(p[0], out + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got >= len - 1)
			break;
	}
	out[got] = '\0';
	close(p[0]);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

void ts_sb_net_counters(const char *helper, pid_t init_pid, unsigned long long init_start,
			json_t *network)
{
	unsigned long long c4, c6;
	char out[4096], *p4, *p6;

	if (!network || init_pid <= 0 || init_start == 0 ||
	    strcmp(json_string_value(json_object_get(network, "mode")) ?: "", "egress") != 0 ||
	    read_counters(helper, init_pid, init_start, out, sizeof(out)) < 0)
		return;
	p4 = strstr(out, "connections_ipv4 ");
	p6 = strstr(out, "connections_ipv6 ");
	if (!p4 || !p6 || sscanf(p4, "connections_ipv4 %llu", &c4) != 1 ||
	    sscanf(p6, "connections_ipv6 %llu", &c6) != 1)
		return;
	json_object_set_new(network, "connections", json_integer((json_int_t)(c4 + c6)));
	json_object_set_new(network, "connections_ipv4", json_integer((json_int_t)c4));
	json_object_set_new(network, "connections_ipv6", json_integer((json_int_t)c6));
}

json_t *ts_sb_rec_json(const struct ts_sandbox_rec *rec, const struct ts_sb_live *live,
		       long long now)
{
	json_t *j = json_object(), *paths = json_object(), *ttl = json_object();
	json_t *init = json_object(), *owner, *labels, *spec;
	long long expires = live->running ? ts_sb_expires_ms(rec, live, now) : 0;

	json_object_set_new(j, "id", json_string(rec->id));
	json_object_set_new(j, "name", rec->name[0] ? json_string(rec->name) : json_null());
	json_object_set_new(j, "state",
			    json_string(!live->running ? "stopped"
					: live->paused ? "paused"
						       : "running"));
	json_object_set_new(j, "created", time_json(rec->created_ms));
	json_object_set_new(j, "created_ms", json_integer(rec->created_ms));
	json_object_set_new(j, "started", time_json(rec->started_ms));
	json_object_set_new(j, "started_ms", ms_json(rec->started_ms));
	json_object_set_new(j, "last_activity", time_json(rec->last_activity_ms));
	json_object_set_new(j, "last_activity_ms", ms_json(rec->last_activity_ms));
	json_object_set_new(j, "idle_ms",
			    live->running ? json_integer(ts_sb_idle_ms(rec, live, now))
					  : json_null());
	json_object_set_new(j, "attached",
			    live->queried ? json_integer((json_int_t)live->attached) : json_null());
	json_object_set_new(ttl, "ms", json_integer(rec->ttl_ms));
	json_object_set_new(ttl, "absolute", json_boolean(rec->ttl_absolute));
	json_object_set_new(j, "ttl", ttl);
	json_object_set_new(j, "expires_at", time_json(expires));
	json_object_set_new(j, "expires_at_ms", ms_json(expires));

	labels = json_loads(rec->labels ? rec->labels : "{}", 0, NULL);
	json_object_set_new(j, "labels", labels ? labels : json_object());
	spec = ts_sb_spec_json(rec->spec);
	json_object_set_new(j, "network", network_json(rec, live, spec));
	json_object_set_new(j, "spec", spec ? spec : json_null());

	json_object_set_new(paths, "dir", json_string(rec->dir));
	json_object_set_new(paths, "workspace", json_string(rec->workspace));
	json_object_set_new(paths, "own_workspace", json_boolean(ts_sandbox_own_workspace(rec)));
	json_object_set_new(paths, "upper", path_json(rec->dir, "upper"));
	json_object_set_new(paths, "work", path_json(rec->dir, "work"));
	json_object_set_new(paths, "control_socket", path_json(rec->dir, "run/control.sock"));
	json_object_set_new(paths, "logs", path_json(rec->dir, "logs"));
	json_object_set_new(j, "paths", paths);

	json_object_set_new(init, "pid", live->running ? json_integer(rec->init_pid) : json_null());
	json_object_set_new(init, "start_time",
			    live->running ? json_integer((json_int_t)rec->init_start)
					  : json_null());
	json_object_set_new(j, "init", init);
	if (rec->owner_pid > 0) {
		owner = json_object();
		json_object_set_new(owner, "pid", json_integer(rec->owner_pid));
		json_object_set_new(owner, "start_time",
				    json_integer((json_int_t)rec->owner_start));
		json_object_set_new(owner, "alive",
				    json_boolean(ts_proc_alive(rec->owner_pid, rec->owner_start)));
	} else {
		owner = json_null();
	}
	json_object_set_new(j, "owner", owner);
	return j;
}

const char *ts_reap_reason_name(enum ts_reap_reason r)
{
	static const char *const names[] = { "", "idle", "absolute", "owner" };

	return (size_t)r < ELEMENTSOF(names) ? names[r] : "";
}

enum ts_reap_reason ts_sb_judge(struct ts_sandbox_rec *rec, long long now, struct ts_sb_live *live,
				long long *amount, char *describe, size_t len)
{
	enum ts_reap_reason why = TS_REAP_NONE;
	char a[32], t[32];

	*amount = 0;
	describe[0] = '\0';
	ts_sb_probe(rec, true, live);
	if (!live->running)
		return TS_REAP_NONE;
	if (rec->owner_pid > 0 && !ts_proc_alive(rec->owner_pid, rec->owner_start)) {
		snprintf(describe, len, "owner pid %d exited", (int)rec->owner_pid);
		return TS_REAP_OWNER;
	}
	if (rec->ttl_ms <= 0)
		return TS_REAP_NONE;
	if (rec->ttl_absolute) {
		*amount = now - rec->created_ms;
		why = *amount > rec->ttl_ms ? TS_REAP_ABSOLUTE : TS_REAP_NONE;
	} else if (!(live->queried && live->attached > 0)) {
		/* a client attached (an exec, a followed log) is activity, however long */
		*amount = ts_sb_idle_ms(rec, live, now);
		why = *amount > rec->ttl_ms ? TS_REAP_IDLE : TS_REAP_NONE;
	}
	if (why == TS_REAP_NONE)
		return why;
	ts_fmt_duration(a, sizeof(a), *amount);
	ts_fmt_duration(t, sizeof(t), rec->ttl_ms);
	snprintf(describe, len,
		 why == TS_REAP_IDLE ? "idle %s > ttl %s" : "age %s > absolute ttl %s", a, t);
	return why;
}

bool ts_sb_labels_match(const char *labels, const char *const *keys, const char *const *values,
			size_t n)
{
	json_t *j = json_loads(labels ? labels : "{}", 0, NULL);
	bool r = j != NULL;

	for (size_t i = 0; r && i < n; i++) {
		const char *v = json_string_value(json_object_get(j, keys[i]));

		r = v && !strcmp(v, values[i] ? values[i] : "");
	}
	json_decref(j);
	return r;
}
