/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Walking a small hand-written YAML file with libyaml's event parser, for the loaders of
 * toren-sandbox-policy(5) (policy.c) and toren-sandbox.yaml(5) (src/runner/agent.c): one
 * document, a mapping at the top, no anchors or aliases, and every error naming the file,
 * the line and the key ("`policy.yaml`:7: unknown key `memroy` in `limits`").
 *
 * (Named yamlwalk.h, not yaml.h: that would shadow libyaml's <yaml.h>.)
 */
#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

#include "error.h"

/* Longest value quoted back in an error message. */
#define TS_YAML_SHOW_MAX 64

struct ts_yaml {
	yaml_parser_t parser;
	yaml_event_t ev; /* the current event */
	bool have_ev;
	bool have_parser;
	const char *path; /* as the caller named it: messages quote it so */
	const char *buf;
	size_t len;
	yaml_mark_t key_mark; /* the key (or list entry) whose value is being parsed */
	struct ts_error *err;
};

/* Read path whole into a malloc'd, NUL-terminated buffer: a regular file of at most max
 * bytes (a FIFO never blocks). 0, -EFBIG, -EINVAL (not a regular file), -errno. */
int ts_yaml_read_file(const char *path, size_t max, char **ret, size_t *ret_len,
		      struct ts_error *err);

/* Start parsing buf (len bytes, the contents of path; both must outlive y). 0 or -ENOMEM. */
int ts_yaml_init(struct ts_yaml *y, const char *path, const char *buf, size_t len,
		 struct ts_error *err);
/* Free the parser and the current event. Accepts a zeroed y. */
void ts_yaml_done(struct ts_yaml *y);

/*
 * Parse one document: a mapping at the top, whose keys top() consumes (called at the
 * MAPPING-START event, it returns at the matching MAPPING-END), or nothing at all (no
 * document, or a null one: top() is not called). More than one document is an error.
 */
int ts_yaml_document(struct ts_yaml *y, int (*top)(struct ts_yaml *y, void *userdata),
		     void *userdata);

/* Advance to the next event; syntax errors, anchors and aliases are errors. 0 or -EINVAL. */
int ts_yaml_next(struct ts_yaml *y);

/* Fill y->err with "`PATH`:LINE: message" (the line of mark m) and return r. */
int ts_yaml_err(struct ts_yaml *y, const yaml_mark_t *m, int r, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* "`PATH`: out of memory", -ENOMEM. */
int ts_yaml_nomem(struct ts_yaml *y);

/* "a scalar", "a sequence", "a mapping": for "expected X, got Y" messages. */
const char *ts_yaml_kind(const yaml_event_t *ev);
/* A plain empty, ~ or null scalar. */
bool ts_yaml_is_null(const yaml_event_t *ev);
/* Quote len bytes of s into buf for a message: printable ASCII only ('?' for the rest),
 * cut at TS_YAML_SHOW_MAX with "...". Returns buf. */
const char *ts_yaml_show(char buf[static TS_YAML_SHOW_MAX + 4], const char *s, size_t len);

/*
 * The current event is a key of the mapping named ctx (NULL at the top level). Set *ret
 * to its index in keys (at most 32 of them) and y->key_mark to it; unknown and repeated
 * keys are errors. *seen (zeroed by the caller per mapping) tracks repeats.
 */
int ts_yaml_key(struct ts_yaml *y, const char *const *keys, size_t n_keys, const char *ctx,
		unsigned *seen, size_t *ret);
/* The current event as a non-empty scalar value for key, without NUL bytes (*ret points
 * into the event: valid until the next ts_yaml_next). -EINVAL naming key otherwise. */
int ts_yaml_scalar(struct ts_yaml *y, const char *key, const char **ret);
/* `true` or `false`, plain (nothing YAML 1.1 would also read as one: yes, on, "true"). */
int ts_yaml_bool(struct ts_yaml *y, const char *key, bool *ret);
/* The current event is a collection of type (a mapping or sequence start) or null
 * (*empty: an empty one, nothing more to read); anything else is an error naming key. */
int ts_yaml_expect(struct ts_yaml *y, const char *key, yaml_event_type_t type, bool *empty);
/* Call item() for each entry of the sequence (or null) at the current event, with
 * y->key_mark at the entry. */
int ts_yaml_each(struct ts_yaml *y, const char *key, int (*item)(struct ts_yaml *y, void *userdata),
		 void *userdata);
/* Resolve s (a path value of key) against the directory of the file being read: a
 * relative path names a file beside it, wherever the caller runs. *ret is malloc'd and
 * absolute. 0, -EINVAL (longer than PATH_MAX), -ENOMEM, or getcwd's -errno. */
int ts_yaml_path(struct ts_yaml *y, const char *key, const char *s, char **ret);
