// SPDX-License-Identifier: Apache-2.0
/*
 * NW: network and sockets (security-cases.md §B.5).
 *
 * Egress is attempted only after net_loopback_only() confirmed the namespace has
 * nothing but `lo` and no non-loopback route, and only towards TEST ranges
 * (198.18.0.1, 2001:db8::1) with non-blocking connects. AF_VSOCK is never connected.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/vm_sockets.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

bool net_loopback_only(struct probe_res *r)
{
	char buf[8192];
	bool ok = true;
	ssize_t n = read_file("/proc/net/dev", buf, sizeof(buf));
	if (n <= 0) {
		res_fail(r, "/proc/net/dev unreadable (%s)", en((int)-n));
		return false;
	}
	size_t ifs = 0;
	for (char *line = strchr(buf, '\n'); line && (line = strchr(line + 1, '\n'));) {
		char *name = line + 1;
		while (*name == ' ')
			name++;
		size_t len = strcspn(name, ":");
		if (!name[len])
			break;
		ifs++;
		if (len != 2 || strncmp(name, "lo", 2)) {
			res_fail(r, "interface %.*s", (int)len, name);
			ok = false;
		}
	}
	if (ifs == 0) {
		res_fail(r, "no interfaces listed");
		ok = false;
	}
	/* IPv4 main table: loopback routes live in the local table, so any line is foreign. */
	n = read_file("/proc/net/route", buf, sizeof(buf));
	if (n > 0) {
		char *second = strchr(buf, '\n');
		if (second && second[1]) {
			res_fail(r, "IPv4 route: %.*s", (int)strcspn(second + 1, "\n"), second + 1);
			ok = false;
		}
	}
	n = read_file("/proc/net/ipv6_route", buf, sizeof(buf));
	for (char *line = buf; n > 0 && line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char *dev = strrchr(line, ' ');
		if (dev && strcmp(dev + 1, "lo")) {
			res_fail(r, "IPv6 route via %s", dev + 1);
			ok = false;
		}
		line = nl ? nl + 1 : NULL;
	}
	return ok;
}

PROBE_CASE(nw01_interfaces)
{
	struct ifaddrs *ifa = NULL;
	if (!CTL_OK(r, "getifaddrs", getifaddrs(&ifa)))
		return;
	bool lo_up = false;
	size_t addrs = 0;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		if (strcmp(i->ifa_name, "lo")) {
			res_fail(r, "interface %s", i->ifa_name);
			continue;
		}
		if (i->ifa_flags & IFF_UP)
			lo_up = true;
		if (!i->ifa_addr)
			continue;
		char a[INET6_ADDRSTRLEN] = "";
		if (i->ifa_addr->sa_family == AF_INET)
			inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, a,
				  sizeof(a));
		else if (i->ifa_addr->sa_family == AF_INET6)
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, a,
				  sizeof(a));
		else
			continue;
		addrs++;
		if (strcmp(a, "127.0.0.1") && strcmp(a, "::1"))
			res_fail(r, "lo address %s", a);
	}
	freeifaddrs(ifa);
	if (!lo_up)
		res_fail(r, "lo is not up");
	res_note(r, "lo addrs=%zu", addrs);
	if (net_loopback_only(r))
		res_note(r, "only lo, no foreign route");
	DIR *d = opendir("/sys/class/net");
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)))
			if (de->d_name[0] != '.' && strcmp(de->d_name, "lo"))
				res_fail(r, "/sys/class/net/%s", de->d_name);
		closedir(d);
	}
}

/* A non-blocking connect's immediate answer: 0, or errno (EINPROGRESS included). */
static int connect_now(int fd, const void *sa, socklen_t len)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return connect(fd, sa, len) == 0 ? 0 : errno;
}

/* Wait for a non-blocking connect to settle. */
static int connect_wait(int fd, const void *sa, socklen_t len, int ms)
{
	int e = connect_now(fd, sa, len);
	if (e != EINPROGRESS)
		return e;
	struct pollfd p = { fd, POLLOUT, 0 };
	if (poll(&p, 1, ms) <= 0)
		return ETIMEDOUT;
	int err = 0;
	socklen_t l = sizeof(err);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l);
	return err;
}

static void egress(struct probe_res *r, const char *what, int fam, int type, const void *sa,
		   socklen_t len, const int *errs)
{
	int s = socket(fam, type | SOCK_CLOEXEC, 0);
	if (s < 0) {
		res_fail(r, "%s: socket=%s", what, en(errno));
		return;
	}
	int e = connect_now(s, sa, len);
	close(s); /* never wait for an egress connect */
	expect_err(r, what, e ? -1 : 0, e, errs);
}

/* Control for the connect path: a listener of our own on loopback accepts. */
static void loopback_control(struct probe_res *r, int fam)
{
	struct sockaddr_storage ss;
	socklen_t len;
	memset(&ss, 0, sizeof(ss));
	if (fam == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
	}
	int l = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (void *)&ss, len) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (void *)&ss, &len) < 0) {
		res_fail(r, "ctl: loopback listener (%s): %s", fam == AF_INET ? "v4" : "v6",
			 en(errno));
		if (l >= 0)
			close(l);
		return;
	}
	int c = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int e = connect_wait(c, &ss, len, 2000);
	control_ok(r, fam == AF_INET ? "connect(own 127.0.0.1)" : "connect(own ::1)", e ? -1 : 0,
		   e);
	close(c);
	close(l);
}

static void sin4(struct sockaddr_in *a, const char *ip, int port)
{
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, ip, &a->sin_addr);
}

static void sin6(struct sockaddr_in6 *a, const char *ip, int port, unsigned scope)
{
	memset(a, 0, sizeof(*a));
	a->sin6_family = AF_INET6;
	a->sin6_port = htons((uint16_t)port);
	a->sin6_scope_id = scope;
	inet_pton(AF_INET6, ip, &a->sin6_addr);
}

PROBE_CASE(nw02_egress4)
{
	struct sockaddr_in a;
	loopback_control(r, AF_INET);
	if (!net_loopback_only(r)) {
		res_fail(r, "precondition failed: not loopback-only, no egress attempted");
		return;
	}
	sin4(&a, "198.18.0.1", 80);
	egress(r, "tcp 198.18.0.1:80", AF_INET, SOCK_STREAM, &a, sizeof(a), ERRS(ENETUNREACH));
	sin4(&a, "198.18.0.1", 53);
	egress(r, "udp 198.18.0.1:53", AF_INET, SOCK_DGRAM, &a, sizeof(a), ERRS(ENETUNREACH));
}

PROBE_CASE(nw03_egress6)
{
	struct sockaddr_in6 a;
	loopback_control(r, AF_INET6);
	if (!net_loopback_only(r)) {
		res_fail(r, "precondition failed: not loopback-only, no egress attempted");
		return;
	}
	sin6(&a, "::ffff:198.18.0.1", 80, 0);
	egress(r, "tcp [::ffff:198.18.0.1]:80", AF_INET6, SOCK_STREAM, &a, sizeof(a),
	       ERRS(ENETUNREACH));
	sin6(&a, "2001:db8::1", 80, 0);
	egress(r, "tcp [2001:db8::1]:80", AF_INET6, SOCK_STREAM, &a, sizeof(a), ERRS(ENETUNREACH));
	sin6(&a, "2001:db8::1", 53, 0);
	egress(r, "udp [2001:db8::1]:53", AF_INET6, SOCK_DGRAM, &a, sizeof(a), ERRS(ENETUNREACH));
	sin6(&a, "fe80::1", 80, if_nametoindex("lo"));
	egress(r, "tcp [fe80::1%lo]:80", AF_INET6, SOCK_STREAM, &a, sizeof(a),
	       ERRS(ENETUNREACH, EINVAL, EADDRNOTAVAIL, EHOSTUNREACH));
}

static void must_refuse(struct probe_res *r, const char *what, int fam, const void *sa,
			socklen_t len)
{
	int s = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		res_fail(r, "%s: socket=%s", what, en(errno));
		return;
	}
	int e = connect_wait(s, sa, len, 2000);
	close(s);
	expect_err(r, what, e ? -1 : 0, e, ERRS(ECONNREFUSED));
}

PROBE_CASE(nw04_host_loopback)
{
	struct sockaddr_in a;
	struct sockaddr_in6 b;
	char what[64];
	loopback_control(r, AF_INET);
	loopback_control(r, AF_INET6);
	if (ctx->port > 0) {
		sin4(&a, "127.0.0.1", ctx->port);
		snprintf(what, sizeof(what), "127.0.0.1:%d", ctx->port);
		must_refuse(r, what, AF_INET, &a, sizeof(a));
		sin6(&b, "::1", ctx->port, 0);
		snprintf(what, sizeof(what), "[::1]:%d", ctx->port);
		must_refuse(r, what, AF_INET6, &b, sizeof(b));
	} else {
		res_note(r, "no --port: host canary listeners not checked");
	}
	sin4(&a, "127.0.0.53", 53);
	must_refuse(r, "127.0.0.53:53", AF_INET, &a, sizeof(a));
	sin4(&a, "127.0.0.1", 2375);
	must_refuse(r, "127.0.0.1:2375", AF_INET, &a, sizeof(a));
}

struct nlreq {
	struct nlmsghdr n;
	char buf[1024];
};

static void nl_attr(struct nlmsghdr *n, unsigned short type, const void *data, size_t len)
{
	struct rtattr *a = (struct rtattr *)((char *)n + NLMSG_ALIGN(n->nlmsg_len));
	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(a), data, len);
	n->nlmsg_len = NLMSG_ALIGN(n->nlmsg_len) + RTA_ALIGN(a->rta_len);
}

/* Send one request with NLM_F_ACK; returns 0 if the kernel accepted it, else errno. */
static int nl_talk(int fd, struct nlmsghdr *n)
{
	static unsigned seq;
	char buf[8192];
	n->nlmsg_seq = ++seq;
	n->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	if (send(fd, n, n->nlmsg_len, 0) < 0)
		return errno;
	for (;;) {
		ssize_t len = recv(fd, buf, sizeof(buf), 0);
		if (len < 0)
			return errno;
		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, (size_t)len);
		     h = NLMSG_NEXT(h, len))
			if (h->nlmsg_type == NLMSG_ERROR)
				return -((struct nlmsgerr *)NLMSG_DATA(h))->error;
	}
}

static size_t nl_dump_links(int fd)
{
	struct nlreq q;
	char buf[16384];
	size_t links = 0;
	memset(&q, 0, sizeof(q));
	q.n.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
	q.n.nlmsg_type = RTM_GETLINK;
	q.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	if (send(fd, &q, q.n.nlmsg_len, 0) < 0)
		return 0;
	for (;;) {
		ssize_t len = recv(fd, buf, sizeof(buf), 0);
		if (len <= 0)
			return links;
		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, (size_t)len);
		     h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR)
				return links;
			if (h->nlmsg_type == RTM_NEWLINK)
				links++;
		}
	}
}

PROBE_CASE(nw06_reconfig)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (!control_ok(r, "socket(NETLINK_ROUTE)", fd, errno))
		return;
	size_t links = nl_dump_links(fd);
	if (links == 0)
		res_fail(r, "ctl: RTM_GETLINK dump returned no links");
	else
		res_note(r, "ctl:links=%zu", links);
	int lo = (int)if_nametoindex("lo");

	struct nlreq q;
	memset(&q, 0, sizeof(q));
	q.n.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
	q.n.nlmsg_type = RTM_NEWLINK;
	q.n.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	nl_attr(&q.n, IFLA_IFNAME, "yard0", 6);
	struct rtattr *li = (struct rtattr *)((char *)&q.n + NLMSG_ALIGN(q.n.nlmsg_len));
	nl_attr(&q.n, IFLA_LINKINFO, NULL, 0);
	nl_attr(&q.n, IFLA_INFO_KIND, "dummy", 6);
	li->rta_len = (unsigned short)((char *)&q.n + q.n.nlmsg_len - (char *)li);
	int e = nl_talk(fd, &q.n);
	expect_err(r, "link add yard0 type dummy", e ? -1 : 0, e, ERRS(EPERM));

	memset(&q, 0, sizeof(q));
	q.n.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
	q.n.nlmsg_type = RTM_NEWROUTE;
	q.n.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	struct rtmsg *rt = NLMSG_DATA(&q.n);
	rt->rtm_family = AF_INET;
	rt->rtm_table = RT_TABLE_MAIN;
	rt->rtm_protocol = RTPROT_BOOT;
	rt->rtm_scope = RT_SCOPE_LINK;
	rt->rtm_type = RTN_UNICAST;
	nl_attr(&q.n, RTA_OIF, &lo, sizeof(lo));
	e = nl_talk(fd, &q.n);
	expect_err(r, "route add default dev lo", e ? -1 : 0, e, ERRS(EPERM));

	memset(&q, 0, sizeof(q));
	q.n.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg));
	q.n.nlmsg_type = RTM_NEWADDR;
	q.n.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	struct ifaddrmsg *ia = NLMSG_DATA(&q.n);
	ia->ifa_family = AF_INET;
	ia->ifa_prefixlen = 8;
	ia->ifa_index = (unsigned)lo;
	struct in_addr ten;
	inet_pton(AF_INET, "10.0.0.2", &ten);
	nl_attr(&q.n, IFA_LOCAL, &ten, sizeof(ten));
	nl_attr(&q.n, IFA_ADDRESS, &ten, sizeof(ten));
	e = nl_talk(fd, &q.n);
	expect_err(r, "addr add 10.0.0.2/8 dev lo", e ? -1 : 0, e, ERRS(EPERM));
	close(fd);

	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (s >= 0 && ioctl(s, SIOCGIFMTU, &ifr) == 0) /* set it to what it already is */
		TRY(r, "SIOCSIFMTU(lo)", ioctl(s, SIOCSIFMTU, &ifr), EPERM);
	if (s >= 0)
		close(s);
	if (!net_loopback_only(r))
		res_fail(r, "the namespace changed");
}

PROBE_CASE(nw07_vsock)
{
	static const int types[] = { SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET };
	static const char *names[] = { "AF_VSOCK/STREAM", "AF_VSOCK/DGRAM", "AF_VSOCK/SEQPACKET" };
	int u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	control_ok(r, "socket(AF_UNIX)", u, errno);
	if (u >= 0)
		close(u);
	for (size_t i = 0; i < 3; i++) {
		errno = 0;
		int s = socket(AF_VSOCK, types[i] | SOCK_CLOEXEC, 0);
		expect_err(r, names[i], s, errno, ERRS(EPERM, EAFNOSUPPORT));
		if (s >= 0)
			close(s); /* never connected */
	}
	struct stat st;
	res_note(r, "/dev/vsock=%s", stat("/dev/vsock", &st) == 0 ? "present" : en(errno));
}

static socklen_t abstract_addr(struct sockaddr_un *a, const char *name)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	size_t len = strlen(name);
	if (len > sizeof(a->sun_path) - 1)
		len = sizeof(a->sun_path) - 1;
	memcpy(a->sun_path + 1, name, len);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

static void wait_file(const char *path, int ms)
{
	struct timespec nap = { 0, 50 * 1000 * 1000 };
	for (int t = 0; t < ms && access(path, F_OK) < 0; t += 50)
		nanosleep(&nap, NULL);
}

PROBE_CASE(nw08_abstract)
{
	struct sockaddr_un a;
	char name[108];
	snprintf(name, sizeof(name), "yard-ctl-%d", (int)getpid());
	socklen_t len = abstract_addr(&a, name);
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l >= 0 && bind(l, (void *)&a, len) == 0 && listen(l, 1) == 0) {
		int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CTL_OK(r, "connect(own abstract)", connect(c, (void *)&a, len));
		close(c);
	} else {
		res_fail(r, "ctl: own abstract listener: %s", en(errno));
	}
	if (l >= 0)
		close(l);
	const char *targets[] = { ctx->abstract_name, "/tmp/.X11-unix/X0" };
	for (size_t i = 0; i < 2; i++) {
		if (!targets[i]) {
			res_note(r, "no --abstract: host listener not checked");
			continue;
		}
		len = abstract_addr(&a, targets[i]);
		int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		TRY(r, i ? "@/tmp/.X11-unix/X0" : "@host-canary", connect(c, (void *)&a, len),
		    ECONNREFUSED);
		close(c);
	}
	if (!ctx->abstract_rev)
		return;
	/* Reverse: bind inside, the harness tries to connect from the host. */
	len = abstract_addr(&a, ctx->abstract_rev);
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (l < 0 || bind(l, (void *)&a, len) < 0 || listen(l, 4) < 0) {
		res_fail(r, "bind(@rev)=%s", en(errno));
		return;
	}
	int f = open("yard-nw08.ready", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (f >= 0)
		close(f);
	wait_file("yard-nw08.done", 10000);
	if (access("yard-nw08.done", F_OK) < 0)
		res_fail(r, "the harness never answered (yard-nw08.done)");
	int c = accept(l, NULL, NULL);
	if (c >= 0) {
		res_fail(r, "a host process connected to the abstract socket bound inside");
		close(c);
	} else {
		res_note(r, "reverse: nobody connected (%s)", en(errno));
	}
	close(l);
	unlink("yard-nw08.ready");
	unlink("yard-nw08.done");
}

struct walk {
	struct probe_res *r;
	size_t entries, sockets, own, budget;
	time_t deadline;
};

static void walk_sockets(struct walk *w, const char *dir, int depth)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++w->entries > w->budget || time(NULL) > w->deadline)
			break;
		snprintf(path, sizeof(path), "%s/%s", strcmp(dir, "/") ? dir : "", de->d_name);
		unsigned char t = de->d_type;
		if (t == DT_UNKNOWN) {
			struct stat st;
			if (lstat(path, &st) < 0)
				continue;
			t = S_ISDIR(st.st_mode) ? DT_DIR : S_ISSOCK(st.st_mode) ? DT_SOCK : DT_REG;
		}
		if (t == DT_SOCK && !strncmp(de->d_name, "yard-", 5)) {
			w->own++; /* made by this probe (FS-05) */
		} else if (t == DT_SOCK) {
			if (++w->sockets <= 5)
				res_fail(w->r, "socket file %s", path);
		} else if (t == DT_DIR && depth > 0 && strcmp(path, "/proc") &&
			   strcmp(path, "/sys")) {
			walk_sockets(w, path, depth - 1);
		}
	}
	closedir(d);
}

PROBE_CASE(nw09_socket_files)
{
	static const char *const known[] = {
		"/var/run/docker.sock",
		"/run/docker.sock",
		"/run/containerd/containerd.sock",
		"/run/podman/podman.sock",
		"/tmp/.X11-unix",
		"/run/user",
		"/run/systemd/private",
		"/run/systemd/notify",
		"/run/systemd/journal/socket",
		"/dev/log",
		"/run/dbus/system_bus_socket",
		"/var/run/dbus/system_bus_socket",
	};
	struct stat st;
	CTL_OK(r, "stat(/)", stat("/", &st));
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		TRY(r, known[i], lstat(known[i], &st), ENOENT, EACCES);
	}
	if (ctx->ssh_sock)
		TRY(r, "$SSH_AUTH_SOCK(host path)", lstat(ctx->ssh_sock, &st), ENOENT, EACCES);
	struct walk w = { r, 0, 0, 0, 600000, time(NULL) + 40 };
	walk_sockets(&w, "/", 40);
	res_note(r, "walked=%zu sockets=%zu own=%zu%s", w.entries, w.sockets, w.own,
		 w.entries > w.budget || time(NULL) > w.deadline ? "(truncated)" : "");
}

PROBE_CASE(nw10_udp_icmp)
{
	struct sockaddr_in a;
	loopback_control(r, AF_INET);
	if (!net_loopback_only(r)) {
		res_fail(r, "precondition failed: not loopback-only, nothing sent");
		return;
	}
	sin4(&a, "198.18.0.1", 53);
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s >= 0) {
		TRY(r, "udp sendto 198.18.0.1:53",
		    sendto(s, "yard", 4, MSG_DONTWAIT, (void *)&a, sizeof(a)), ENETUNREACH);
		close(s);
	}
	static const unsigned char echo[8] = { 8, 0, 0xf7, 0xff, 0, 0, 0, 0 }; /* type 8, csum */
	errno = 0;
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP);
	if (s < 0) {
		expect_err(r, "ping socket", s, errno, ERRS(EACCES, EPERM));
	} else {
		sin4(&a, "198.18.0.1", 0);
		TRY(r, "ping 198.18.0.1",
		    sendto(s, echo, sizeof(echo), MSG_DONTWAIT, (void *)&a, sizeof(a)),
		    ENETUNREACH);
		close(s);
	}
}
