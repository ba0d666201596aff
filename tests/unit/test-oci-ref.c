/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Image references (src/lib/oci-ref.h) as docker reads them: the registry, Docker Hub's
 * `library/` and API host, tags, digests, loopback registries (plain http), and the
 * malformed ones refused.
 */
#include <errno.h>
#include <string.h>

#include "oci-ref.h"
#include "tap.h"

struct good {
	const char *in, *registry, *api, *path, *tag, *digest;
	bool loopback;
};

#define D64 "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const struct good goods[] = {
	{ "node", "docker.io", "registry-1.docker.io", "library/node", "latest", "", false },
	{ "node:22-slim", "docker.io", "registry-1.docker.io", "library/node", "22-slim", "",
	  false },
	{ "org/app:1.2", "docker.io", "registry-1.docker.io", "org/app", "1.2", "", false },
	{ "docker.io/library/busybox", "docker.io", "registry-1.docker.io", "library/busybox",
	  "latest", "", false },
	{ "index.docker.io/x", "docker.io", "registry-1.docker.io", "library/x", "latest", "",
	  false },
	{ "ghcr.io/org/app:1.2", "ghcr.io", "ghcr.io", "org/app", "1.2", "", false },
	{ "localhost/a", "localhost", "localhost", "a", "latest", "", true },
	{ "localhost:5000/a/b:t", "localhost:5000", "localhost:5000", "a/b", "t", "", true },
	{ "127.0.0.1:5055/test/two:1", "127.0.0.1:5055", "127.0.0.1:5055", "test/two", "1", "",
	  true },
	{ "[::1]:5000/x", "[::1]:5000", "[::1]:5000", "x", "latest", "", true },
	{ "reg.example:443/a@" D64, "reg.example:443", "reg.example:443", "a", "", D64, false },
	{ "reg.example/a:t@" D64, "reg.example", "reg.example", "a", "t", D64, false },
	{ "a/b.c_d__e-f", "docker.io", "registry-1.docker.io", "a/b.c_d__e-f", "latest", "",
	  false },
	/* a name that starts like a loopback address is a name: https */
	{ "127.evil.example/x", "127.evil.example", "127.evil.example", "x", "latest", "", false },
	{ "127.1.2.3:80/x", "127.1.2.3:80", "127.1.2.3:80", "x", "latest", "", true },
};

static const char *const bads[] = {
	"example.com/",
	"example.com/:v1",
	"reg.example:70000/a",
	"reg.example:0/a",
	"Upper/case",
	"a/",
	"/abs",
	"a//b",
	"a:",
	"a:-tag",
	"a:"
	"t\x01",
	"a@sha256:short",
	"a@md5:0123",
	"reg.example:99999999/a",
	"reg ex.com/a",
	"a..b/c",
	"-a",
	"a/b-",
	"",
	"a@" D64 "x",
	"a:toolongtag0123456789012345678901234567890123456789012345678901234567890123456789012"
	"3456789012345678901234567890123456789012345678901234567890",
};

int main(void)
{
	struct ts_oci_ref r;
	struct ts_error err = { 0 };
	char buf[700];

	plan(0);
	for (size_t i = 0; i < sizeof(goods) / sizeof(goods[0]); i++) {
		const struct good *g = &goods[i];
		int rc = ts_oci_ref_parse(g->in, &r, &err);

		ok(rc == 0 && !strcmp(r.registry, g->registry) && !strcmp(r.api_host, g->api) &&
			   !strcmp(r.path, g->path) && !strcmp(r.tag, g->tag) &&
			   !strcmp(r.digest, g->digest) && r.loopback == g->loopback,
		   "`%s` -> %s | %s | %s | %s | %s | %d (%s)", g->in, r.registry, r.api_host,
		   r.path, r.tag, r.digest, r.loopback, rc ? err.msg : "");
	}
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		int rc = ts_oci_ref_parse(bads[i], &r, &err);

		ok(rc == -EINVAL && err.msg[0], "`%.40s` refused (%s)", bads[i], err.msg);
	}
	ts_oci_ref_parse("127.0.0.1:5/a/b:c@" D64, &r, &err);
	ts_oci_ref_format(&r, buf, sizeof(buf));
	ok(!strcmp(buf, "127.0.0.1:5/a/b:c@" D64), "format gives the reference back (%s)", buf);
	ok(ts_oci_ref_looks_remote("node:22") && ts_oci_ref_looks_remote("a/b") &&
		   !ts_oci_ref_looks_remote("base") && !ts_oci_ref_looks_remote("/dir") &&
		   !ts_oci_ref_looks_remote("./dir"),
	   "looks_remote: a tag or a slash, not a bare name or a path");
	return done();
}
