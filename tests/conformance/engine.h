/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Inside the conformance engine: its state and what its parts share. engine.c: strings,
 * generated data, the checks of results and errors, the loop over scenarios;
 * engine-sb.c: sandboxes and backends; engine-cmd.c: processes; engine-files.c: files
 * and watches. Only backend.h is called.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "conformance.h"

#define CONF_CAPTURE_MAX (8U << 20) /* bytes of one stream a step keeps */
#define CONF_WAIT_MS 20000	    /* a step's wait for output or an end, by default */
#define CONF_WATCH_MS 5000	    /* a watch event's */
#define CONF_FILE_MAX (64U << 20)   /* bytes of a file read */

/* What a stream handle has received, per stream (stdout, stderr, pty). */
struct stream {
	uint8_t *buf;
	size_t len;
	uint64_t first_off, next_off;
	bool started;
};

struct handle {
	struct ts_cmd *c;
	struct stream s[3];
	bool started; /* its START came: always the first event (E2B's start) */
	bool ended;
	struct ts_cmd_event end;
};

struct conf {
	struct conf_runner *r;
	char run[32];
	struct ts_sb *sb[CONF_SLOTS];
	char id[CONF_SLOTS][64];
	bool created[CONF_SLOTS];
	struct handle h[CONF_SLOTS];
	struct ts_watch *w[CONF_SLOTS];
	pid_t pid[CONF_SLOTS];
	uint64_t proc[CONF_SLOTS];
	long long end_at[CONF_SLOTS]; /* what the last C_SB_INFO of a slot saw */
	/* C_TOOL: one agent per sandbox slot for the whole scenario, as an agent keeps its
	 * runner between calls (the file tools remember what they read) */
	struct conf_agent *agent[CONF_SLOTS];
	char tool_id[CONF_SLOTS][128]; /* C_TOOL with `tag`: the result's data.id (${TOOLID:n}) */
	char snap_id[CONF_SLOTS][64];  /* C_SNAPSHOT: the snapshot's id (${SNAP:n}) */
	char why[2048];
};

__attribute__((format(printf, 2, 3))) int conf_fail(struct conf *c, const char *fmt, ...);
long long conf_now_ms(void);  /* CLOCK_REALTIME, as deadlines are */
long long conf_mono_ms(void); /* CLOCK_MONOTONIC, for waits */

/* s with ${RUN}, ${ID:n} and ${PID:n} replaced, into out (NULL for NULL). */
const char *conf_expand(struct conf *c, const char *s, char *out, size_t len);
/* Expanded copies of a NULL-terminated vector (conf_strv_free). */
char **conf_expand_strv(struct conf *c, const char *const *v);
void conf_strv_free(char **v);
/* "K=V" strings as pairs pointing into strv, which they split (free both). */
struct ts_kv *conf_kv_of(char **strv, size_t *n);
/* The bytes of a content kind, NUL-terminated (free). */
uint8_t *conf_gen(struct conf *c, enum conf_data d, size_t size, const char *text, size_t *len);
size_t conf_first_diff(const uint8_t *a, const uint8_t *b, size_t n);
/* got is the content e expects (data kind, or e->out as text): 0, or -1 with c->why. */
int conf_check_content(struct conf *c, const struct conf_expect *e, const uint8_t *got, size_t len,
		       const char *what);
/* Did the call give what e expects? 1: an expected error (nothing more to check), 0: an
 * expected success, -1 (c->why) otherwise. */
int conf_check_code(struct conf *c, int r, const struct ts_error *err, const struct conf_expect *e);
int conf_need_sb(struct conf *c, int slot);
int conf_need_h(struct conf *c, int slot);
void conf_handle_reset(struct handle *h);

/* The steps of each part: 0, or -1 with c->why. */
int conf_sb_step(struct conf *c, const struct conf_step *st);
int conf_cmd_step(struct conf *c, const struct conf_step *st);
int conf_files_step(struct conf *c, const struct conf_step *st);
int conf_tool_step(struct conf *c, const struct conf_step *st);
void conf_tool_reset(struct conf *c, int slot);
