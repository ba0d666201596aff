/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fake-http.h"

void fake_req_init(struct ts_req *r, const char *content_type, const void *body, size_t len)
{
	memset(r, 0, sizeof(*r));
	r->method = "POST";
	r->body = body;
	r->body_len = len;
	if (content_type)
		fake_req_header(r, "Content-Type", content_type);
}

void fake_req_header(struct ts_req *r, const char *name, const char *value)
{
	if (r->n_headers < FAKE_HEADERS) {
		r->names[r->n_headers] = name;
		r->values[r->n_headers++] = value;
	}
}

void fake_req_clear(struct ts_req *r)
{
	free(r->reply);
	free(r->stream.data);
	memset(r, 0, sizeof(*r));
}

const char *ts_req_method(const struct ts_req *r)
{
	return r->method;
}

const char *ts_req_header(const struct ts_req *r, const char *name)
{
	for (unsigned i = 0; i < r->n_headers; i++)
		if (!strcasecmp(r->names[i], name))
			return r->values[i];
	return NULL;
}

const uint8_t *ts_req_body(const struct ts_req *r, size_t *len)
{
	*len = r->body_len;
	return r->body;
}

int ts_req_add_header(struct ts_req *r, const char *name, const char *value)
{
	size_t n = strlen(r->reply_headers);

	snprintf(r->reply_headers + n, sizeof(r->reply_headers) - n, "%s: %s\n", name, value);
	return 0;
}

int ts_req_reply_take(struct ts_req *r, unsigned status, const char *content_type, void *body,
		      size_t len)
{
	r->replies++;
	r->status = status;
	snprintf(r->content_type, sizeof(r->content_type), "%s", content_type ? content_type : "");
	free(r->reply);
	r->reply = body;
	r->reply_len = body ? len : 0;
	return 0;
}

int ts_req_reply(struct ts_req *r, unsigned status, const char *content_type, const void *body,
		 size_t len)
{
	void *copy = NULL;

	if (body) {
		copy = malloc(len ? len : 1);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, body, len);
	}
	return ts_req_reply_take(r, status, content_type, copy, len);
}

struct ts_stream *ts_req_stream(struct ts_req *r, unsigned status, const char *content_type,
				void (*on_close)(void *userdata, bool client_gone), void *userdata,
				struct ts_error *err)
{
	r->replies++;
	r->streaming = true;
	r->status = status;
	snprintf(r->content_type, sizeof(r->content_type), "%s", content_type);
	r->stream.on_close = on_close;
	r->stream.userdata = userdata;
	return &r->stream;
}

int ts_stream_write(struct ts_stream *s, const void *data, size_t len)
{
	uint8_t *p;

	if (s->ended || s->aborted)
		return -EPIPE;
	p = realloc(s->data, s->len + len + 1);
	if (!p)
		return -ENOMEM;
	memcpy(p + s->len, data, len);
	s->data = p;
	s->len += len;
	return 0;
}

size_t ts_stream_pending(const struct ts_stream *s)
{
	return 0;
}

void ts_stream_end(struct ts_stream *s)
{
	s->ended = true;
	if (s->on_close)
		s->on_close(s->userdata, false);
}

void ts_stream_abort(struct ts_stream *s)
{
	s->aborted = true;
	if (s->on_close)
		s->on_close(s->userdata, false);
}
