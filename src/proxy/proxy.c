/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toren-sandbox-proxy: the name-based egress of one sandbox (policy `network: {allow:
 * [NAME...]}`), an HTTP CONNECT proxy in the host's network namespace.
 *
 * The helper's child made the listening socket inside the sandbox's network namespace
 * (127.0.0.1:TS_NET_PROXY_PORT there, the only address the sandbox has besides `lo`);
 * the helper's keeper executes us with it and kills us when init exits (netproc.h). What
 * we accept comes from the sandbox; what we connect to is the host's network, so every
 * decision is ours:
 *  - the CONNECT target must be a name on the allow-list, on port 80 or 443 unless the
 *    entry names a port;
 *  - we resolve it ourselves, and refuse it when ANY of its addresses is private,
 *    loopback, link-local, CGNAT, multicast, reserved, the metadata address, one of the
 *    host's own or on the policy's deny list (a name that also points inside is not
 *    public, and a rebinding resolver gets no second lookup: we connect to what we
 *    checked);
 *  - a TLS ClientHello that follows must name the same host (SNI), and may not hide it
 *    (encrypted ClientHello);
 *  - plain-HTTP proxy requests (absolute-form) are refused: a connection of ours carries
 *    one checked host and nothing else.
 * One poll loop; name resolution in a few threads (getaddrinfo blocks). Every size is
 * bounded (connections, head, buffers) and every state has a deadline.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cidr.h"
#include "hostpat.h"
#include "parse.h"

#define MAX_CONNS 256
#define MAX_RULES 64
#define MAX_ADDRS 16
#define BUF_SIZE 16384
#define RESOLVERS 4
#define HEAD_MS 30000	 /* the request head, and the ClientHello after it */
#define RESOLVE_MS 30000 /* a name's lookup */
#define CONNECT_MS 10000 /* each address */
#define IDLE_MS 300000	 /* a tunnel without a byte either way */
#define STATS_EVERY_MS 1000

enum state {
	S_FREE,
	S_HEAD,
	S_RESOLVING,
	S_CONNECTING,
	S_HELLO,
	S_RELAY
};

struct conn {
	enum state st;
	unsigned gen; /* which lookup result belongs to this use of the slot */
	int cfd, ufd;
	unsigned char cbuf[BUF_SIZE]; /* client -> upstream (the head, the ClientHello) */
	size_t clen;
	unsigned char ubuf[BUF_SIZE]; /* upstream -> client */
	size_t ulen;
	bool c_eof, u_eof, c_shut, u_shut;
	long long deadline;
	struct ts_proxy_req req;
	struct sockaddr_storage addrs[MAX_ADDRS];
	size_t n_addrs, next_addr;
};

struct stats {
	unsigned long long accepted, allowed, refused_name, refused_port, refused_private,
		refused_sni, refused_request, refused_limit, failed_resolve, failed_connect,
		bytes_out, bytes_in;
	unsigned active;
};

struct lookup {
	unsigned slot, gen;
	char host[TS_HOSTNAME_MAX + 1];
	/* the answer */
	int gai; /* getaddrinfo's result */
	bool private_addr;
	char bad[INET6_ADDRSTRLEN];
	struct sockaddr_storage addrs[MAX_ADDRS];
	size_t n_addrs;
};

struct proxy {
	int lfd, state_dir, ans[2];
	struct ts_hostpat allow[MAX_RULES];
	size_t n_allow;
	struct ts_cidr deny[MAX_RULES];
	size_t n_deny;
	struct conn *conns; /* MAX_CONNS */
	struct stats st;
	bool dirty;
	long long last_stats;
	/* the lookup queue, shared with the resolver threads */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct lookup queue[MAX_CONNS];
	size_t q_head, q_len;
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	fputs("toren-sandbox-proxy: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* --- addresses ------------------------------------------------------------------------- */

static void sa_addr(const struct sockaddr_storage *ss, int *family, const unsigned char **a)
{
	*family = ss->ss_family;
	if (ss->ss_family == AF_INET)
		*a = (const unsigned char *)&((const struct sockaddr_in *)(const void *)ss)
			     ->sin_addr;
	else
		*a = (const unsigned char *)&((const struct sockaddr_in6 *)(const void *)ss)
			     ->sin6_addr;
}

/* One of the host's own addresses (read at each lookup: the host may gain some). */
static bool host_addr(int family, const unsigned char *a)
{
	struct ifaddrs *list = NULL;
	bool found = false;

	if (getifaddrs(&list) < 0)
		return true; /* cannot tell: refuse */
	for (struct ifaddrs *i = list; i && !found; i = i->ifa_next) {
		struct sockaddr_storage ss;
		const unsigned char *b;
		int f;

		if (!i->ifa_addr || i->ifa_addr->sa_family != family)
			continue;
		memcpy(&ss, i->ifa_addr,
		       family == AF_INET ? sizeof(struct sockaddr_in)
					 : sizeof(struct sockaddr_in6));
		sa_addr(&ss, &f, &b);
		found = !memcmp(a, b, family == AF_INET ? 4 : 16);
	}
	freeifaddrs(list);
	return found;
}

static bool addr_refused(const struct proxy *px, int family, const unsigned char *a)
{
	if (ts_cidr_blocked(family, a))
		return true;
	for (size_t i = 0; i < px->n_deny; i++)
		if (ts_cidr_contains(&px->deny[i], a, family))
			return true;
	return host_addr(family, a);
}

/* --- resolver threads ------------------------------------------------------------------ */

static void resolve(const struct proxy *px, struct lookup *l)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
	char absolute[TS_HOSTNAME_MAX + 2];

	l->n_addrs = 0;
	l->private_addr = false;

	/* the absolute name: without its dot the resolver would also try it below the host's
	 * search domains (resolv.conf's `search`), so an allowed name that does not exist
	 * could reach whatever api.github.com.corp.example is (and a one-label name is tried
	 * there first). glibc's files backend matches no absolute name: /etc/hosts entries
	 * are not used for the sandbox's names */
	snprintf(absolute, sizeof(absolute), "%s.", l->host);
	l->gai = getaddrinfo(absolute, NULL, &hints, &res);
	if (l->gai != 0)
		return;
	/* every address is checked, not only those we would use: a name that also points
	 * inside is not a public name */
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		struct sockaddr_storage ss = { 0 };
		const unsigned char *a;
		int family;

		if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
		    ai->ai_addrlen > sizeof(ss))
			continue;
		memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
		sa_addr(&ss, &family, &a);
		if (addr_refused(px, family, a)) {
			l->private_addr = true;
			inet_ntop(family, a, l->bad, sizeof(l->bad));
			break;
		}
		if (l->n_addrs < MAX_ADDRS)
			l->addrs[l->n_addrs++] = ss;
	}
	freeaddrinfo(res);
	if (!l->private_addr && l->n_addrs == 0)
		l->gai = EAI_NONAME;
}

static void *resolver(void *arg)
{
	struct proxy *px = arg;

	for (;;) {
		struct lookup l;

		pthread_mutex_lock(&px->mu);
		while (px->q_len == 0)
			pthread_cond_wait(&px->cv, &px->mu);
		l = px->queue[px->q_head];
		px->q_head = (px->q_head + 1) % MAX_CONNS;
		px->q_len--;
		pthread_mutex_unlock(&px->mu);
		resolve(px, &l);
		/* one write of less than PIPE_BUF is atomic: answers never interleave */
		while (write(px->ans[1], &l, sizeof(l)) < 0 && errno == EINTR)
			;
	}
	return NULL;
}

/* --- statistics ------------------------------------------------------------------------ */

/* $STATE/proxy.json, replaced whole (rename): what `inspect` shows. */
static void write_stats(struct proxy *px)
{
	char buf[1024];
	const struct stats *s = &px->st;
	int n, fd;

	px->last_stats = now_ms();
	px->dirty = false;
	if (px->state_dir < 0)
		return;
	n = snprintf(buf, sizeof(buf),
		     "{\"connections\":%llu,\"active\":%u,\"allowed\":%llu,"
		     "\"refused\":{\"name\":%llu,\"port\":%llu,\"private\":%llu,\"sni\":%llu,"
		     "\"request\":%llu,\"limit\":%llu},"
		     "\"failed\":{\"resolve\":%llu,\"connect\":%llu},"
		     "\"bytes_out\":%llu,\"bytes_in\":%llu}\n",
		     s->accepted, s->active, s->allowed, s->refused_name, s->refused_port,
		     s->refused_private, s->refused_sni, s->refused_request, s->refused_limit,
		     s->failed_resolve, s->failed_connect, s->bytes_out, s->bytes_in);
	fd = openat(px->state_dir, ".proxy.json.tmp",
		    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, buf, (size_t)n) == n)
		renameat(px->state_dir, ".proxy.json.tmp", px->state_dir, "proxy.json");
	close(fd);
}

/* --- connections ----------------------------------------------------------------------- */

static void conn_close(struct proxy *px, struct conn *c)
{
	if (c->cfd >= 0)
		close(c->cfd);
	if (c->ufd >= 0)
		close(c->ufd);
	c->cfd = c->ufd = -1;
	c->st = S_FREE;
	c->gen++;
	px->st.active--;
	px->dirty = true;
}

/* Answer an HTTP status with a one-line reason and close. The client's socket has room
 * for it (nothing else was sent), so one non-blocking send does. */
static void refuse(struct proxy *px, struct conn *c, int code, unsigned long long *counter,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void refuse(struct proxy *px, struct conn *c, int code, unsigned long long *counter,
		   const char *fmt, ...)
{
	const char *text = code == 403	 ? "Forbidden"
			   : code == 400 ? "Bad Request"
			   : code == 502 ? "Bad Gateway"
			   : code == 503 ? "Service Unavailable"
			   : code == 504 ? "Gateway Timeout"
					 : "Error";
	char reason[512], msg[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	n = snprintf(msg, sizeof(msg),
		     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\ntoren-sandbox proxy: %s\n",
		     code, text, strlen(reason) + 22, reason);
	if (n > 0)
		(void)!send(c->cfd, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1,
			    MSG_NOSIGNAL | MSG_DONTWAIT);
	if (counter)
		(*counter)++;
	conn_close(px, c);
}

static void try_connect(struct proxy *px, struct conn *c)
{
	while (c->next_addr < c->n_addrs) {
		struct sockaddr_storage *ss = &c->addrs[c->next_addr++];
		socklen_t len = ss->ss_family == AF_INET ? sizeof(struct sockaddr_in)
							 : sizeof(struct sockaddr_in6);
		int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		if (fd < 0)
			continue;
		if (ss->ss_family == AF_INET)
			((struct sockaddr_in *)(void *)ss)->sin_port =
				htons((unsigned short)c->req.port);
		else
			((struct sockaddr_in6 *)(void *)ss)->sin6_port =
				htons((unsigned short)c->req.port);
		if (connect(fd, (const struct sockaddr *)ss, len) == 0 || errno == EINPROGRESS) {
			c->ufd = fd;
			c->st = S_CONNECTING;
			c->deadline = now_ms() + CONNECT_MS;
			return;
		}
		close(fd);
	}
	refuse(px, c, 502, &px->st.failed_connect, "cannot connect to `%s` port %u", c->req.host,
	       c->req.port);
}

static void got_head(struct proxy *px, struct conn *c, size_t hlen)
{
	char why[160];
	bool name_ok;

	if (ts_proxy_parse_request((const char *)c->cbuf, hlen, &c->req, why, sizeof(why)) < 0) {
		refuse(px, c, 400, &px->st.refused_request, "%s", why);
		return;
	}
	if (c->req.kind != TS_PROXY_REQ_CONNECT) {
		refuse(px, c, 403, &px->st.refused_request,
		       "plain-HTTP proxy requests are not supported: use https:// (CONNECT)");
		return;
	}
	if (!ts_hostpat_match_any(px->allow, px->n_allow, c->req.host, c->req.port, &name_ok)) {
		if (name_ok)
			refuse(px, c, 403, &px->st.refused_port,
			       "port %u of `%s` is not allowed (80 and 443 unless the allow-list "
			       "names host:port)",
			       c->req.port, c->req.host);
		else
			refuse(px, c, 403, &px->st.refused_name,
			       "`%s` is not on the sandbox's allow-list", c->req.host);
		return;
	}
	/* bytes after the head belong to the tunnel (a client may send its ClientHello
	 * without waiting for our answer) */
	memmove(c->cbuf, c->cbuf + hlen, c->clen - hlen);
	c->clen -= hlen;
	pthread_mutex_lock(&px->mu);
	if (px->q_len >= MAX_CONNS) {
		/* lookups of connections that went away still pending: resolvers stuck */
		pthread_mutex_unlock(&px->mu);
		refuse(px, c, 503, &px->st.refused_limit, "too many name lookups pending");
		return;
	}
	{
		struct lookup *l = &px->queue[(px->q_head + px->q_len) % MAX_CONNS];

		memset(l, 0, sizeof(*l));
		l->slot = (unsigned)(c - px->conns);
		l->gen = c->gen;
		snprintf(l->host, sizeof(l->host), "%s", c->req.host);
		px->q_len++; /* at most one lookup per connection: never past MAX_CONNS */
	}
	pthread_cond_signal(&px->cv);
	pthread_mutex_unlock(&px->mu);
	c->st = S_RESOLVING;
	c->deadline = now_ms() + RESOLVE_MS;
}

static void got_answer(struct proxy *px, const struct lookup *l)
{
	struct conn *c;

	if (l->slot >= MAX_CONNS)
		return;
	c = &px->conns[l->slot];
	if (c->st != S_RESOLVING || c->gen != l->gen)
		return; /* that connection is gone */
	if (l->private_addr) {
		refuse(px, c, 403, &px->st.refused_private,
		       "`%s` resolves to a private or reserved address (%s)", c->req.host, l->bad);
		return;
	}
	if (l->gai != 0) {
		refuse(px, c, 502, &px->st.failed_resolve, "cannot resolve `%s`: %s", c->req.host,
		       gai_strerror(l->gai));
		return;
	}
	memcpy(c->addrs, l->addrs, l->n_addrs * sizeof(l->addrs[0]));
	c->n_addrs = l->n_addrs;
	c->next_addr = 0;
	try_connect(px, c);
}

static void connected(struct proxy *px, struct conn *c)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	int e = 0;
	socklen_t el = sizeof(e);

	if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e != 0) {
		close(c->ufd);
		c->ufd = -1;
		try_connect(px, c);
		return;
	}
	if (send(c->cfd, ok, sizeof(ok) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) != sizeof(ok) - 1) {
		conn_close(px, c);
		return;
	}
	c->st = S_HELLO;
	c->deadline = now_ms() + HEAD_MS;
}

/* Does an allow entry name this host with this very port (name:port)? Only then may a
 * tunnel carry what is not TLS. */
static bool explicit_port(const struct proxy *px, const struct conn *c)
{
	for (size_t i = 0; i < px->n_allow; i++)
		if (px->allow[i].port && px->allow[i].port == c->req.port &&
		    ts_hostpat_match(&px->allow[i], c->req.host, c->req.port))
			return true;
	return false;
}

/*
 * The first bytes of the tunnel: a TLS ClientHello must name the CONNECT host, or no one
 * (an IP-less client; the address is ours anyway), and not hide the name it means (ECH).
 * What is not TLS passes only to a host:port an entry names explicitly: plain HTTP to a
 * name's ports 80 and 443 could carry a `Host:` of any other site its server (a CDN)
 * fronts, which the proxy would not see. Returns true when the tunnel may relay.
 */
static bool check_hello(struct proxy *px, struct conn *c)
{
	struct ts_tls_hello h;
	char sni[TS_HOSTNAME_MAX + 1];
	int r;

	if (c->clen == 0)
		return false;
	if (!ts_proxy_is_tls(c->cbuf, c->clen)) {
		if (explicit_port(px, c))
			return true;
		px->st.refused_sni++;
		conn_close(px, c);
		return false;
	}
	r = ts_proxy_parse_hello(c->cbuf, c->clen, &h);
	if (r == -EAGAIN && c->clen < sizeof(c->cbuf) && !c->c_eof)
		return false;
	if (r < 0 || h.ech ||
	    (h.has_sni &&
	     (ts_hostname_normalize(h.sni, h.sni_len, sni) < 0 || strcmp(sni, c->req.host)))) {
		/* a 200 went out already: the refusal is the closed connection */
		px->st.refused_sni++;
		conn_close(px, c);
		return false;
	}
	return true;
}

static void relay_start(struct proxy *px, struct conn *c)
{
	c->st = S_RELAY;
	c->deadline = now_ms() + IDLE_MS;
	px->st.allowed++;
	px->dirty = true;
}

/* Move bytes one way: from fd `from` into buf, from buf to `to`. */
static int pump(int from, int to, unsigned char *buf, size_t *len, bool *eof, bool *shut,
		short rev_from, short rev_to, unsigned long long *count)
{
	ssize_t n;

	if ((rev_from & (POLLIN | POLLHUP | POLLERR)) && !*eof && *len < BUF_SIZE) {
		n = recv(from, buf + *len, BUF_SIZE - *len, MSG_DONTWAIT);
		if (n > 0)
			*len += (size_t)n;
		else if (n == 0 || (errno != EAGAIN && errno != EINTR))
			*eof = true;
	}
	if (*len && (rev_to & (POLLOUT | POLLERR | POLLHUP))) {
		n = send(to, buf, *len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			memmove(buf, buf + n, *len - (size_t)n);
			*len -= (size_t)n;
			*count += (unsigned long long)n;
		} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			return -1;
		}
	}
	if (*eof && *len == 0 && !*shut) {
		shutdown(to, SHUT_WR);
		*shut = true;
	}
	return 0;
}

/* --- the loop -------------------------------------------------------------------------- */

static void accept_one(struct proxy *px)
{
	int fd = accept4(px->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct conn *c = NULL;

	if (fd < 0)
		return;
	px->st.accepted++;
	px->dirty = true;
	for (size_t i = 0; i < MAX_CONNS && !c; i++)
		if (px->conns[i].st == S_FREE)
			c = &px->conns[i];
	if (!c) {
		static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: "
					   "56\r\nConnection: close\r\n\r\ntoren-sandbox proxy: "
					   "too many connections (at most 256)\n";

		(void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		close(fd);
		px->st.refused_limit++;
		return;
	}
	c->st = S_HEAD;
	c->cfd = fd;
	c->ufd = -1;
	c->clen = c->ulen = 0;
	c->c_eof = c->u_eof = c->c_shut = c->u_shut = false;
	c->deadline = now_ms() + HEAD_MS;
	px->st.active++;
}

static void client_readable(struct proxy *px, struct conn *c)
{
	ssize_t n;
	long h;

	if (c->clen >= sizeof(c->cbuf))
		return;
	n = recv(c->cfd, c->cbuf + c->clen, sizeof(c->cbuf) - c->clen, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		if (c->st == S_HELLO && c->clen) {
			c->c_eof = true; /* judge what came */
			return;
		}
		conn_close(px, c);
		return;
	}
	c->clen += (size_t)n;
	if (c->st != S_HEAD)
		return;
	h = ts_proxy_head_len((const char *)c->cbuf, c->clen);
	if (h < 0)
		refuse(px, c, 400, &px->st.refused_request, "request head larger than %d bytes",
		       TS_PROXY_HEAD_MAX);
	else if (h > 0)
		got_head(px, c, (size_t)h);
}

static void step(struct proxy *px, struct conn *c, short crev, short urev)
{
	long long now = now_ms();

	switch (c->st) {
	case S_HEAD:
		if (crev)
			client_readable(px, c);
		break;
	case S_RESOLVING:
		/* the sandbox gave up: nothing to answer */
		if (crev & (POLLHUP | POLLERR | POLLRDHUP))
			conn_close(px, c);
		break;
	case S_CONNECTING:
		if (crev & (POLLHUP | POLLERR | POLLRDHUP))
			conn_close(px, c);
		else if (urev)
			connected(px, c);
		break;
	case S_HELLO:
		if (crev)
			client_readable(px, c);
		if (c->st == S_HELLO && check_hello(px, c)) {
			relay_start(px, c);
			/* what came so far goes up first */
			step(px, c, 0, POLLOUT);
		}
		break;
	case S_RELAY:
		/* the client is gone both ways, or an error on either side */
		if ((crev & (POLLHUP | POLLERR)) || (urev & POLLERR)) {
			conn_close(px, c);
			break;
		}
		if (pump(c->cfd, c->ufd, c->cbuf, &c->clen, &c->c_eof, &c->u_shut, crev, urev,
			 &px->st.bytes_out) < 0 ||
		    pump(c->ufd, c->cfd, c->ubuf, &c->ulen, &c->u_eof, &c->c_shut, urev, crev,
			 &px->st.bytes_in) < 0 ||
		    (c->u_shut && c->c_shut)) {
			conn_close(px, c);
			break;
		}
		if (crev || urev) {
			c->deadline = now + IDLE_MS;
			px->dirty = true;
		}
		break;
	case S_FREE:
		break;
	}
}

static void expire(struct proxy *px, struct conn *c, long long now)
{
	if (c->st == S_FREE || now < c->deadline)
		return;
	switch (c->st) {
	case S_HEAD:
		refuse(px, c, 400, &px->st.refused_request, "no request head within %d s",
		       HEAD_MS / 1000);
		break;
	case S_RESOLVING:
		refuse(px, c, 504, &px->st.failed_resolve, "no answer for `%s` within %d s",
		       c->req.host, RESOLVE_MS / 1000);
		break;
	case S_CONNECTING:
		close(c->ufd);
		c->ufd = -1;
		try_connect(px, c);
		break;
	case S_HELLO:
		/* nothing sent: a client that waits for the server (not TLS) */
		if (c->clen == 0) {
			relay_start(px, c);
			break;
		}
		px->st.refused_sni++;
		conn_close(px, c);
		break;
	default:
		conn_close(px, c);
		break;
	}
}

static int loop(struct proxy *px)
{
	static struct pollfd pfd[2 + 2 * MAX_CONNS];
	static int who[2 + 2 * MAX_CONNS]; /* connection index * 2 + (0 client, 1 upstream) */

	for (;;) {
		long long now = now_ms(), next = now + STATS_EVERY_MS;
		size_t n = 0;
		int r;

		pfd[n++] = (struct pollfd){ .fd = px->lfd, .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = px->ans[0], .events = POLLIN };
		for (size_t i = 0; i < MAX_CONNS; i++) {
			struct conn *c = &px->conns[i];
			short ce = 0, ue = 0;

			if (c->st == S_FREE)
				continue;
			if (c->deadline < next)
				next = c->deadline;
			switch (c->st) {
			case S_HEAD:
			case S_HELLO:
				ce = POLLIN;
				break;
			case S_RESOLVING:
				ce = POLLRDHUP;
				break;
			case S_CONNECTING:
				ce = POLLRDHUP;
				ue = POLLOUT;
				break;
			case S_RELAY:
				ce = (short)((!c->c_eof && c->clen < BUF_SIZE ? POLLIN : 0) |
					     (c->ulen ? POLLOUT : 0));
				ue = (short)((!c->u_eof && c->ulen < BUF_SIZE ? POLLIN : 0) |
					     (c->clen ? POLLOUT : 0));
				break;
			default:
				break;
			}
			/* an fd without events is left out: its POLLHUP would wake us for
			 * nothing until the connection's deadline */
			if (ce) {
				who[n] = (int)(i * 2);
				pfd[n++] = (struct pollfd){ .fd = c->cfd, .events = ce };
			}
			if (ue && c->ufd >= 0) {
				who[n] = (int)(i * 2 + 1);
				pfd[n++] = (struct pollfd){ .fd = c->ufd, .events = ue };
			}
		}
		r = poll(pfd, (nfds_t)n, next > now ? (int)(next - now) : 0);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (pfd[1].revents & POLLIN) {
			struct lookup l;

			if (read(px->ans[0], &l, sizeof(l)) == (ssize_t)sizeof(l))
				got_answer(px, &l);
		}
		/* events per connection, gathered (its client and upstream fds are adjacent) */
		for (size_t k = 2; k < n; k++) {
			size_t i = (size_t)who[k] / 2;
			short crev = 0, urev = 0;

			if (who[k] % 2) {
				urev = pfd[k].revents;
			} else {
				crev = pfd[k].revents;
				if (k + 1 < n && who[k + 1] == who[k] + 1)
					urev = pfd[++k].revents;
			}
			if ((crev || urev) && px->conns[i].st != S_FREE)
				step(px, &px->conns[i], crev, urev);
		}
		now = now_ms();
		for (size_t i = 0; i < MAX_CONNS; i++)
			expire(px, &px->conns[i], now);
		if (pfd[0].revents & POLLIN)
			accept_one(px);
		if (px->dirty && now - px->last_stats >= STATS_EVERY_MS)
			write_stats(px);
	}
}

/* --- start ----------------------------------------------------------------------------- */

static int usage(void)
{
	fputs("usage: toren-sandbox-proxy --listen-fd FD [--ready-fd FD] [--state-dir DIR]\n"
	      "  [--allow PATTERN]... [--deny CIDR]...\n"
	      "run by toren-sandbox-helper for a sandbox with a name-based allow-list; see\n"
	      "toren-sandbox-helper(8)\n",
	      stderr);
	return 2;
}

static int fd_arg(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return *s && !*end && v >= 0 && v < 1024 ? (int)v : -1;
}

int main(int argc, char **argv)
{
	static struct proxy px;
	int ready = -1, type = 0;
	socklen_t tl = sizeof(type);
	const char *state = NULL;
	char why[160];

	px.lfd = -1;
	px.state_dir = -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			return usage();
		i++;
		if (!strcmp(a, "--listen-fd")) {
			px.lfd = fd_arg(v);
		} else if (!strcmp(a, "--ready-fd")) {
			ready = fd_arg(v);
		} else if (!strcmp(a, "--state-dir")) {
			state = v;
		} else if (!strcmp(a, "--allow")) {
			if (px.n_allow >= MAX_RULES) {
				say("too many --allow (at most %d)", MAX_RULES);
				return 2;
			}
			if (ts_hostpat_parse(v, &px.allow[px.n_allow], why, sizeof(why)) < 0) {
				say("--allow `%s`: %s", v, why);
				return 2;
			}
			px.n_allow++;
		} else if (!strcmp(a, "--deny")) {
			if (px.n_deny >= MAX_RULES || ts_cidr_parse(v, &px.deny[px.n_deny]) < 0) {
				say("--deny `%s`: not an address prefix, or too many", v);
				return 2;
			}
			px.n_deny++;
		} else {
			return usage();
		}
	}
	if (px.lfd < 0 || getsockopt(px.lfd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 ||
	    type != SOCK_STREAM) {
		say("--listen-fd must be a listening TCP socket");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	/* nothing we run could gain privileges, and we run nothing */
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (fcntl(px.lfd, F_SETFL, O_NONBLOCK) < 0 || fcntl(px.lfd, F_SETFD, FD_CLOEXEC) < 0) {
		say("listening socket: %s", strerror(errno));
		return 1;
	}
	if (state) {
		px.state_dir = open(state, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (px.state_dir < 0) {
			say("open state directory `%s`: %s", state, strerror(errno));
			return 1;
		}
	}
	px.conns = calloc(MAX_CONNS, sizeof(*px.conns));
	if (!px.conns || pipe2(px.ans, O_CLOEXEC) < 0) {
		say("out of memory or fds");
		return 1;
	}
	for (size_t i = 0; i < MAX_CONNS; i++)
		px.conns[i].cfd = px.conns[i].ufd = -1;
	pthread_mutex_init(&px.mu, NULL);
	pthread_cond_init(&px.cv, NULL);
	for (int i = 0; i < RESOLVERS; i++) {
		pthread_t t;
		pthread_attr_t at;

		pthread_attr_init(&at);
		pthread_attr_setstacksize(&at, 256 * 1024);
		if (pthread_create(&t, &at, resolver, &px) != 0) {
			say("start resolver threads: out of resources");
			return 1;
		}
		pthread_attr_destroy(&at);
	}
	write_stats(&px);
	if (ready >= 0) {
		(void)!write(ready, "1", 1);
		close(ready);
	}
	return loop(&px) < 0 ? 1 : 0;
}
