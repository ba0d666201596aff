/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the subcommands share: the backend, printing errors, parsing. */
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "backend.h"
#include "error.h"

/* Print "toren-sandbox CMD: MSG" to stderr. */
void ts_cli_error(const char *cmd, const struct ts_error *err);

/*
 * A warning of a sandbox's start (ts_run_hooks.warn, ts_backend_on_warning): prints
 * "toren-sandbox: warning: MSG" to stderr, unless it is verbose_only and verbose is not
 * set.
 */
void ts_cli_warn(bool verbose, bool verbose_only, const char *msg);

/* Is a `--label KEY=VALUE` well formed (ts_label_valid)? If not, say why on stderr. */
bool ts_cli_label_ok(const char *cmd, const char *kv);

/*
 * `toren-sandbox CMD ID...`: print usage for --help or no argument, then apply fn to every
 * sandbox named (an id, a name or an id prefix, looked up through the backend). Returns
 * the exit status: 0, 1 when any failed, 2 on usage errors.
 */
int ts_cli_each(int argc, char **argv, const char *cmd,
		int (*fn)(struct ts_sb *sb, struct ts_error *err));

/* Open the backend (TOREN_SANDBOX, or --backend), its warnings going to ts_cli_warn; on
 * failure print it and return -errno. */
int ts_cli_backend(const char *cmd, struct ts_backend **ret);

/* Print json to stdout (indented, or one line when compact) with a newline. 0 or -EIO. */
#include <jansson.h>
int ts_cli_print_json(json_t *j, bool compact);

/* Before a launch with --image image: pull it (progress on a terminal) when it is a
 * registry reference the image store has no image of that name for. 0, or -1 with the
 * reason printed (prefixed with cmd). */
int ts_cli_image_ensure(const char *root, const char *image, const char *cmd);

/* Is ref the id or a name of one of the backend's snapshots? */
bool ts_cli_is_snapshot(struct ts_backend *b, const char *ref);

/* n bytes for people: 512B, 1.5K, 3.2M, ... */
void ts_cli_size_text(uint64_t n, char *out, size_t len);

/* --max-size of image import and pull: a size above 0, else -1 with the reason printed. */
int ts_cli_layer_max(const char *cmd, const char *arg, unsigned long long *ret);

/* toren-sandbox image pull (image-pull.c). */
int ts_cli_image_pull(int argc, char **argv);

/* Parse a signal: a number 1..64, or a name with or without SIG. 0 or -EINVAL. */
int ts_cli_parse_signal(const char *s, int *ret);
