/* SPDX-License-Identifier: Apache-2.0 */
#include "netproc.h"

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "syscall.h"
#include "util.h"

/* fds of the egress program (slirp4netns's --ready-fd and --exit-fd; pasta's --pid) */
#define PROG_READY_FD 3
#define PROG_EXIT_FD 4
#define READY_TIMEOUT_MS 10000

int ts_netproc_host_addrs(struct ts_helper_ctx *ctx, struct ts_error *err)
{
	struct ifaddrs *list = NULL;
	size_t n4 = 0, n6 = 0;

	/* pasta and slirp4netns carry IPv6 when the host has a default route for it
	 * (slirp4netns's host address fd00::2 would be the host's ::1: --disable-host-loopback
	 * refuses it, and it is in the blocked fc00::/7 anyway) */
	ctx->net.ipv6 = (ctx->net.mode == TS_NET_PASTA || ctx->net.mode == TS_NET_SLIRP) &&
			ts_cidr_host_has_ipv6_route();
	if (getifaddrs(&list) < 0)
		return ts_err_errno(err, -errno, "list the host's addresses");
	ctx->net.n_host = 0;
	for (struct ifaddrs *i = list; i; i = i->ifa_next) {
		int fam = i->ifa_addr ? i->ifa_addr->sa_family : AF_UNSPEC;
		size_t *n = fam == AF_INET ? &n4 : &n6;
		struct ts_cidr *c;

		/* IPv6 only when it leaves at all (else ::/0 is prohibited: net.c) */
		if (fam != AF_INET && (fam != AF_INET6 || !ctx->net.ipv6))
			continue;
		if (*n >= TS_HELPER_MAX_HOST_ADDRS) {
			freeifaddrs(list);
			return ts_err(err, -E2BIG,
				      "the host has more than %d %s addresses; egress needs "
				      "to block each of them",
				      TS_HELPER_MAX_HOST_ADDRS, fam == AF_INET ? "IPv4" : "IPv6");
		}
		(*n)++;
		c = &ctx->net.host[ctx->net.n_host++];
		memset(c, 0, sizeof(*c));
		c->family = fam;
		if (fam == AF_INET) {
			c->len = 32;
			memcpy(c->addr, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, 4);
		} else {
			/* link-local ones too: pasta connects to fe80:: destinations through
			 * the host's own interface (fe80::/10 is blocked anyway) */
			c->len = 128;
			memcpy(c->addr, &((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr,
			       16);
		}
	}
	freeifaddrs(list);
	return 0;
}

struct prog_argv {
	char *v[16 + 4 * TS_HELPER_MAX_NET_RULES];
	size_t n;
	char bufs[4][64];
	/* the proxy's --allow and --deny values */
	char rules[TS_HELPER_MAX_NET_RULES * (TS_HOSTPAT_STRLEN + TS_CIDR_STRLEN)];
	size_t used;
};

static void push(struct prog_argv *a, const char *s)
{
	if (a->n + 1 < ELEMENTSOF(a->v))
		a->v[a->n++] = (char *)s;
	a->v[a->n] = NULL;
}

/* A rule's text, kept in a->rules. */
static void push_rule(struct prog_argv *a, const char *opt, const char *text)
{
	size_t len = strlen(text) + 1;

	if (a->used + len > sizeof(a->rules))
		return;
	memcpy(a->rules + a->used, text, len);
	push(a, opt);
	push(a, a->rules + a->used);
	a->used += len;
}

static void build_argv(const struct ts_helper_ctx *ctx, pid_t child, struct prog_argv *a)
{
	a->n = 0;
	a->used = 0;
	push(a, ctx->net.program);
	if (ctx->net.mode == TS_NET_PROXY) {
		char buf[TS_HOSTPAT_STRLEN];

		push(a, "--listen-fd");
		push(a, "4");
		push(a, "--ready-fd");
		push(a, "3");
		for (size_t i = 0; i < ctx->net.n_allow_host; i++)
			push_rule(a, "--allow",
				  ts_hostpat_format(&ctx->net.allow_host[i], buf, sizeof(buf)));
		for (size_t i = 0; i < ctx->net.n_deny; i++)
			push_rule(a, "--deny", ts_cidr_format(&ctx->net.deny[i], buf, sizeof(buf)));
		if (ctx->net.proxy_state) {
			push(a, "--state-dir");
			push(a, ctx->net.proxy_state);
		}
		(void)child;
	} else if (ctx->net.mode == TS_NET_PASTA) {
		static const char *const fixed[] = {
			"--quiet", "--foreground", "--ns-ifname", TS_NET_IFNAME, "--address",
			TS_NET_ADDR, "--netmask", "24", "--gateway", TS_NET_GATEWAY,
			/* DNS to our forwarder goes to the host's resolver; the gateway is not
			 * the host (pasta maps it to the host's loopback otherwise) */
			"--dns-forward", TS_NET_DNS, "--no-map-gw",
			/* no port of the host's loopback reachable from inside (-T/-U default to
			 * `auto`: every port bound on the host), none of ours from outside */
			"--tcp-ports", "none", "--udp-ports", "none", "--tcp-ns", "none",
			"--udp-ns", "none", "--no-dhcp", "--no-dhcpv6", "--no-ra",
			/* ready: the tap device exists (pasta writes its pid file then) */
			"--pid", "/proc/self/fd/3"
		};
		for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
			push(a, fixed[i]);
		if (ctx->net.ipv6) {
			/* our address and gateway, not copies of the host's; --no-map-gw above
			 * keeps the gateway from being the host. NDP stays on: the sandbox's
			 * kernel resolves the gateway through it (nothing else answers) */
			push(a, "--address");
			push(a, TS_NET_ADDR6);
			push(a, "--gateway");
			push(a, TS_NET_GATEWAY6);
		} else {
			push(a, "--ipv4-only");
			push(a, "--no-ndp");
		}
		/* pasta started as root drops to `nobody`, who could not join the sandbox's
		 * user namespace; uid 0 in a user namespace (`unshare -r`) is no root */
		if (getuid() == 0) {
			push(a, "--runas");
			push(a, "0:0");
		}
		snprintf(a->bufs[0], sizeof(a->bufs[0]), "%d", (int)child);
		push(a, a->bufs[0]);
	} else {
		push(a, "--mtu=65520");
		/* the gateway would otherwise be the host's loopback */
		push(a, "--disable-host-loopback");
		push(a, "--cidr=" TS_NET_CIDR);
		if (ctx->net.ipv6)
			push(a, "--enable-ipv6");
		push(a, "--ready-fd=3");
		push(a, "--exit-fd=4");
		snprintf(a->bufs[1], sizeof(a->bufs[1]), "--userns-path=/proc/%d/ns/user",
			 (int)child);
		push(a, a->bufs[1]);
		snprintf(a->bufs[0], sizeof(a->bufs[0]), "%d", (int)child);
		push(a, a->bufs[0]);
		push(a, TS_NET_IFNAME);
	}
}

static const char *prog_name(const struct ts_helper_ctx *ctx)
{
	return ctx->net.mode == TS_NET_PASTA   ? "pasta"
	       : ctx->net.mode == TS_NET_PROXY ? "toren-sandbox-proxy"
					       : "slirp4netns";
}

/* What the program said, one line: its last that is not about syslog. */
static void last_words(int fd, char *out, size_t len)
{
	char buf[4096], *line, *save = NULL;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);

	out[0] = '\0';
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strstr(line, "syslog") || !line[0])
			continue;
		snprintf(out, len, ": %s", line);
	}
	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int high(int p[2])
{
	for (int i = 0; i < 2; i++) {
		int n = fcntl(p[i], F_DUPFD_CLOEXEC, 10);

		if (n < 0)
			return -errno;
		close(p[i]);
		p[i] = n;
	}
	return 0;
}

/* The keeper: never returns. Reports on rep ('k' or a struct ts_error). */
static _Noreturn void keeper(const struct ts_helper_ctx *ctx, pid_t child, int init_pidfd, int rep)
{
	struct ts_error err = { 0 };
	struct prog_argv a;
	int rp[2] = { -1, -1 }, ep[2] = { -1, -1 }, xp[2] = { -1, -1 }, prog_pidfd = -1;
	char said[400], ready[32];
	size_t got = 0;
	long long deadline;
	pid_t me = getpid(), prog;
	int devnull, status = 0;

	ts_signals_reset();
	/* the helper's terminal signals are not ours; we end when init ends */
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	/* 0-2 are /dev/null (closed by our caller); every other fd goes above 10, so that
	 * the dup2s below never copy onto a source still to be copied */
	devnull = open("/dev/null", O_RDWR);
	while (devnull >= 0 && devnull < 2)
		devnull = open("/dev/null", O_RDWR);
	if (devnull < 0 || pipe2(rp, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0 ||
	    pipe2(xp, O_CLOEXEC) < 0 || high(rp) < 0 || high(ep) < 0 || high(xp) < 0) {
		ts_err_errno(&err, -errno, "pipes for `%s`", prog_name(ctx));
		goto fail;
	}
	build_argv(ctx, child, &a);
	prog = fork();
	if (prog < 0) {
		ts_err_errno(&err, -errno, "fork for `%s`", prog_name(ctx));
		goto fail;
	}
	if (prog == 0) {
		static char *const empty_env[] = { NULL };

		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != me)
			_exit(127);
		/* ignored signals survive execve; pasta takes an ignored SIGPIPE for a failure
		 * to install its own handlers */
		ts_signals_reset();
		/* the proxy gets its listening socket where slirp4netns gets its exit fd */
		if (dup2(ep[1], 2) < 0 || dup2(rp[1], PROG_READY_FD) < 0 ||
		    dup2(ctx->net.mode == TS_NET_PROXY ? ctx->net.proxy_fd : xp[0], PROG_EXIT_FD) <
			    0)
			_exit(127);
		ts_close_range(PROG_EXIT_FD + 1, ~0U, 0);
		execve(a.v[0], a.v, empty_env);
		dprintf(2, "execute `%s`: %s\n", a.v[0], strerror(errno));
		_exit(127);
	}
	close(rp[1]);
	close(ep[1]);
	close(xp[0]);
	fcntl(ep[0], F_SETFL, O_NONBLOCK);
	prog_pidfd = ts_pidfd_open(prog, 0);
	/* ready: pasta writes its pid and a newline, slirp4netns writes "1" */
	deadline = now_ms() + READY_TIMEOUT_MS;
	for (;;) {
		struct pollfd p[3] = { { .fd = rp[0], .events = POLLIN },
				       { .fd = prog_pidfd, .events = POLLIN },
				       { .fd = init_pidfd, .events = POLLIN } };
		long long left = deadline - now_ms();
		ssize_t n;

		if (left <= 0) {
			ts_err(&err, -ETIMEDOUT, "`%s` was not ready within %d s", a.v[0],
			       READY_TIMEOUT_MS / 1000);
			break;
		}
		if (poll(p, 3, (int)left) < 0 && errno != EINTR) {
			ts_err_errno(&err, -errno, "wait for `%s`", a.v[0]);
			break;
		}
		if (p[0].revents) {
			n = read(rp[0], ready + got, sizeof(ready) - 1 - got);
			if (n > 0) {
				got += (size_t)n;
				ready[got] = '\0';
				if (ctx->net.mode != TS_NET_PASTA ? got >= 1
								  : !!strchr(ready, '\n'))
					goto ready;
				if (got >= sizeof(ready) - 1) {
					ts_err(&err, -EPROTO, "`%s` said nonsense when ready",
					       a.v[0]);
					break;
				}
				continue;
			}
		}
		if (p[1].revents || p[0].revents) {
			last_words(ep[0], said, sizeof(said));
			waitpid(prog, &status, 0);
			prog = 0;
			ts_err(&err, -EIO, "`%s` exited (status %d) before it was ready%s", a.v[0],
			       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
			       said);
			break;
		}
		if (p[2].revents) {
			ts_err(&err, -ESRCH, "the sandbox ended before `%s` was ready", a.v[0]);
			break;
		}
	}
	if (prog > 0) {
		kill(prog, SIGKILL);
		waitpid(prog, &status, 0);
	}
fail:
	ts_write_all(rep, &err, sizeof(err));
	_exit(1);
ready:
	ts_write_all(rep, "k", 1);
	close(rep);
	close(rp[0]);
	/* Own until init ends. The program keeps xp's other end (slirp4netns's --exit-fd):
	 * our end closes when we exit, whichever way. */
	for (;;) {
		struct pollfd p[3] = { { .fd = init_pidfd, .events = POLLIN },
				       { .fd = prog_pidfd, .events = POLLIN },
				       { .fd = ep[0], .events = POLLIN } };
		char drain[1024];

		if (poll(p, 3, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		if (p[1].revents) {
			/* the program died: the sandbox runs on without egress */
			waitpid(prog, &status, 0);
			_exit(0);
		}
		if (p[2].revents && read(ep[0], drain, sizeof(drain)) <= 0)
			ep[0] = -1; /* poll ignores a negative fd */
	}
	kill(prog, SIGKILL);
	while (waitpid(prog, &status, 0) < 0 && errno == EINTR)
		;
	_exit(0);
}

int ts_netproc_start(struct ts_helper_ctx *ctx, pid_t child, int pidfd, struct ts_error *err)
{
	int sp[2];
	struct ts_error kerr;
	struct pollfd p;
	ssize_t n;
	pid_t k;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return ts_err_errno(err, -errno, "socketpair");
	k = fork();
	if (k < 0) {
		close(sp[0]);
		close(sp[1]);
		return ts_err_errno(err, -errno, "fork the network keeper");
	}
	if (k == 0) {
		int keep_rep, keep_pidfd, keep_proxy = -1;

		close(sp[0]);
		/* nothing of the helper's: not the caller's streams, not the sync sockets */
		keep_rep = fcntl(sp[1], F_DUPFD_CLOEXEC, 100);
		keep_pidfd = fcntl(pidfd, F_DUPFD_CLOEXEC, 101);
		if (ctx->net.proxy_fd >= 0)
			keep_proxy = fcntl(ctx->net.proxy_fd, F_DUPFD_CLOEXEC, 102);
		if (keep_rep < 0 || keep_pidfd < 0 || (ctx->net.proxy_fd >= 0 && keep_proxy < 0))
			_exit(1);
		for (int fd = 0; fd < 100; fd++)
			close(fd);
		ts_close_range((unsigned)(keep_proxy > keep_pidfd ? keep_proxy : keep_pidfd) + 1,
			       ~0U, 0);
		ctx->net.proxy_fd = keep_proxy;
		keeper(ctx, child, keep_pidfd, keep_rep);
	}
	close(sp[1]);
	ctx->net.keeper = k;
	p = (struct pollfd){ .fd = sp[0], .events = POLLIN };
	/* the keeper's own deadline is READY_TIMEOUT_MS; this one only catches a hang */
	if (poll(&p, 1, READY_TIMEOUT_MS + 5000) <= 0) {
		close(sp[0]);
		return ts_err(err, -ETIMEDOUT, "the network keeper did not answer");
	}
	memset(&kerr, 0, sizeof(kerr));
	n = recv(sp[0], &kerr, sizeof(kerr), 0);
	close(sp[0]);
	if (n == 1)
		return 0;
	if (n == (ssize_t)sizeof(kerr)) {
		kerr.msg[sizeof(kerr.msg) - 1] = '\0';
		if (kerr.code <= 0)
			kerr.code = EIO;
		*err = kerr;
		return -kerr.code;
	}
	return ts_err(err, -EIO, "the network keeper failed");
}

void ts_netproc_wait(struct ts_helper_ctx *ctx)
{
	int status;

	if (ctx->net.keeper <= 0)
		return;
	for (int i = 0; i < 500; i++) {
		pid_t w = waitpid(ctx->net.keeper, &status, WNOHANG);

		if (w == ctx->net.keeper || (w < 0 && errno != EINTR))
			break;
		usleep(10000);
	}
	ctx->net.keeper = 0;
}
