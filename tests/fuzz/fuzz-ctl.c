/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the control protocol's receiving side. The host parses what a
 * sandbox's init sends, and init runs inside the sandbox: its messages are untrusted.
 * The input is written into one end of a socketpair and read back with the incremental
 * receiver, then every message's fields are walked and fetched. Checks: no crash, no
 * leak, a received message never claims more payload than TS_CTL_MAX_PAYLOAD, every
 * field lies inside the payload, and a malformed stream ends with an error, not a hang.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x)) {                                                                        \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #x);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void walk(const struct ts_ctl_msg *m)
{
	size_t pos = 0, fields = 0;
	uint16_t tag;
	const uint8_t *v;
	uint32_t len;
	char buf[256];
	uint64_t u;
	int r;

	CHECK(m->len <= TS_CTL_MAX_PAYLOAD);
	while ((r = ts_ctl_next(m, &pos, &tag, &v, &len)) > 0) {
		CHECK(v >= m->data && v + len <= m->data + m->len);
		CHECK(pos <= m->len);
		fields++;
	}
	CHECK(r == 0 || r == -EBADMSG);
	for (uint16_t t = 1; t < TS_T_TAG_MAX; t++) {
		r = ts_ctl_get_u64(m, t, &u);
		CHECK(r == 0 || r == -ENOENT || r == -EBADMSG);
		r = ts_ctl_get_str(m, t, buf, sizeof(buf));
		CHECK(r == 0 || r == -ENOENT || r == -EBADMSG || r == -ENAMETOOLONG);
		if (r == 0)
			CHECK(strlen(buf) < sizeof(buf));
	}
	(void)fields;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ts_ctl_conn c;
	int sp[2], msgs = 0;

	/* fits in a unix socket's buffer: written whole, then EOF, then read */
	if (size > 64 * 1024)
		return 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return 0;
	if (size && write(sp[1], data, size) != (ssize_t)size) {
		close(sp[0]);
		close(sp[1]);
		return 0;
	}
	close(sp[1]);
	ts_ctl_conn_init(&c);
	for (;;) {
		struct ts_ctl_msg m = { 0 };
		int r = ts_ctl_conn_read(&c, sp[0], &m);

		/* at EOF every read makes progress or ends: 0 means a partial read */
		if (r == 0)
			continue;
		if (r < 0) {
			CHECK(r == -ECONNRESET || r == -EBADMSG || r == -E2BIG || r == -ENOMEM);
			break;
		}
		CHECK(m.type > 0 && m.type < TS_CTL_TYPE_MAX);
		walk(&m);
		ts_ctl_msg_free(&m);
		CHECK(++msgs < 100000);
	}
	ts_ctl_conn_free(&c);
	close(sp[0]);
	return 0;
}
