/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for ts_agent_load (toren-sandbox.yaml(5)). The input becomes a memfd,
 * loaded through /proc/self/fd/N like any agent file. Beyond "no crash, no leak", it
 * checks what the loader promises: an error is well formed and leaves *a empty; a success
 * holds only validated values (names, no runtime credential in env, absolute paths, one
 * channel at most), NULL-terminated lists, and a record that is valid JSON.
 * Run: build/tests/fuzz/fuzz-agent -dict=tests/fuzz/agent.dict /tmp/new tests/fuzz/corpus/agent
 */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x)) {                                                                        \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #x);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void check_valid(const struct ts_agent *a)
{
	json_error_t jerr;
	json_t *j;
	char *text;

	CHECK(a->path && a->path[0] == '/');
	CHECK(a->name && a->name[0] && strlen(a->name) <= 64);
	CHECK(a->tools == 1 || a->tools == 2);
	CHECK(a->approve_bash == TS_APPROVAL_ALWAYS || a->approve_bash == TS_APPROVAL_NEVER);
	CHECK(a->approve_write == TS_APPROVAL_ALWAYS || a->approve_write == TS_APPROVAL_NEVER);
	CHECK(a->env && !a->env[a->n_env] && a->n_env <= 1024);
	for (size_t i = 0; i < a->n_env; i++) {
		CHECK(ts_env_name_valid(a->env[i]));
		CHECK(strcmp(a->env[i], "E2B_API_KEY") && strcmp(a->env[i], "E2B_ACCESS_TOKEN"));
		CHECK(strncmp(a->env[i], "TOREN_SANDBOX", 13));
	}
	CHECK(a->protected_patterns && !a->protected_patterns[a->n_protected] &&
	      a->n_protected <= 1024);
	for (size_t i = 0; i < a->n_protected; i++)
		CHECK(a->protected_patterns[i][0] && !strchr(a->protected_patterns[i], '/'));
	CHECK(!a->policy || a->policy[0] == '/');
	CHECK(!a->outbox_dir || a->outbox_dir[0] == '/');
	CHECK(!(a->outbox_dir && a->webhook_url));
	CHECK(!a->webhook_url || !strncasecmp(a->webhook_url, "http", 4));
	CHECK(a->timeout_ms >= -1);
	CHECK(!a->image || a->image[0]);
	text = ts_agent_to_json(a);
	CHECK(text);
	j = json_loads(text, 0, &jerr);
	CHECK(j && json_is_object(j) && json_object_size(j) == 13);
	json_decref(j);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct ts_agent zero;
	struct ts_error err = { 0 };
	struct ts_agent a;
	char path[64];
	int fd, r;

	fd = memfd_create("fuzz-agent", MFD_CLOEXEC);
	CHECK(fd >= 0);
	CHECK(ts_write_all(fd, data, size) == 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);

	memset(&a, 0x5a, sizeof(a));
	r = ts_agent_load(path, &a, &err);
	if (r < 0) {
		CHECK(err.code == -r && err.msg[0]);
		CHECK(r == -EINVAL || r == -EFBIG || r == -ENOMEM);
		CHECK(r != -EINVAL || strncmp(err.msg, "`/proc/self/fd/", 15) == 0);
		CHECK(!memcmp(&a, &zero, sizeof(a)));
	} else {
		check_valid(&a);
	}
	ts_agent_free(&a);
	CHECK(!memcmp(&a, &zero, sizeof(a)));
	close(fd);
	return 0;
}
