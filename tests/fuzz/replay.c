/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replays a libFuzzer corpus through a harness without libFuzzer, so every compiler
 * (and every sanitizer build) runs the corpus as an ordinary TAP test. A crash or an
 * invariant abort() fails the test; libFuzzer's own options are not understood.
 * Usage: replay-NAME CORPUS_DIR|FILE...
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tap.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Larger than any policy the loader accepts, so oversize seeds still replay. */
#define REPLAY_MAX_BYTES (4 * 1024 * 1024)

static int visible(const struct dirent *de)
{
	return de->d_name[0] != '.';
}

static void run(const char *path, const char *label)
{
	char *buf = NULL;
	size_t len = 0;
	int r;

	r = ts_read_file_at(AT_FDCWD, path, REPLAY_MAX_BYTES, &buf, &len);
	if (r < 0) {
		ok(0, "%s: read: %s", label, strerror(-r));
		return;
	}
	LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
	free(buf);
	ok(1, "%s (%zu bytes)", label, len);
}

int main(int argc, char **argv)
{
	struct dirent ***lists;
	int *counts, total = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR|FILE...\n", argv[0]);
		return 2;
	}
	lists = calloc((size_t)argc, sizeof(*lists));
	counts = calloc((size_t)argc, sizeof(*counts));
	if (!lists || !counts)
		return 2;
	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) < 0) {
			perror(argv[i]);
			return 2;
		}
		if (!S_ISDIR(st.st_mode)) {
			counts[i] = -1;
			total++;
			continue;
		}
		counts[i] = scandir(argv[i], &lists[i], visible, alphasort);
		if (counts[i] < 0) {
			perror(argv[i]);
			return 2;
		}
		total += counts[i];
	}
	plan(total);
	for (int i = 1; i < argc; i++) {
		if (counts[i] < 0) {
			run(argv[i], argv[i]);
			continue;
		}
		for (int j = 0; j < counts[i]; j++) {
			char *path;

			if (asprintf(&path, "%s/%s", argv[i], lists[i][j]->d_name) < 0)
				return 2;
			run(path, lists[i][j]->d_name);
			free(path);
			free(lists[i][j]);
		}
		free(lists[i]);
	}
	free(lists);
	free(counts);
	return exit_status();
}
