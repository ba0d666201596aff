/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Line tags: the short content hash read_file shows before each line (`12:a3f|text`) and
 * edit_file checks before it touches a line, the whole-content hash the toolbox remembers
 * of each file it read or wrote, and the text checks the file tools share (binary or not,
 * lines shown as valid UTF-8).
 */
#include <errno.h>
#include <nettle/sha2.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tools-internal.h"
#include "util.h"

static const char hex[] = "0123456789abcdef";

void ts_linetag(const char *line, size_t len, char out[TS_TOOL_TAG_LEN + 1])
{
	/* FNV-1a over the bytes, then murmur3's finaliser: FNV's low bits alone mix poorly,
	 * and the tag takes only 12 bits, so every input bit must reach them */
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)line[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	for (int i = 0; i < TS_TOOL_TAG_LEN; i++)
		out[i] = hex[(h >> (60 - 4 * i)) & 0xf];
	out[TS_TOOL_TAG_LEN] = '\0';
}

void ts_content_hash(const void *data, size_t len, char out[33])
{
	struct sha256_ctx ctx;
	uint8_t d[SHA256_DIGEST_SIZE];

	sha256_init(&ctx);
	sha256_update(&ctx, len, data);
	sha256_digest(&ctx, sizeof(d), d);
	/* 128 bits: collisions are out of reach; the full digest would only lengthen the log */
	for (int i = 0; i < 16; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 0xf];
	}
	out[32] = '\0';
}

bool ts_text_binary(const void *data, size_t len)
{
	const char *s = data;

	if (memchr(s, '\0', len))
		return true;
	/* sequences that start in the first part are checked against the whole buffer, so
	 * one cut by the window's end is no false alarm */
	for (size_t i = 0; i < len && i < TS_TOOL_SNIFF;) {
		size_t n = ts_utf8_seq(s + i, len - i);

		if (!n)
			return true;
		i += n;
	}
	return false;
}

size_t ts_text_print(FILE *f, const char *s, size_t len, size_t max)
{
	size_t i = 0, bad = 0;

	while (i < len && i < max) {
		size_t n = ts_utf8_seq(s + i, len - i);

		if (n == 0 || s[i] == '\0') {
			/* U+FFFD: the text reaches the agent as JSON, which must be UTF-8 */
			fputs("\xef\xbf\xbd", f);
			bad++;
			i++;
			continue;
		}
		if (i + n > max)
			break;
		fwrite(s + i, 1, n, f);
		i += n;
	}
	if (i < len)
		fprintf(f, " [... line cut: %zu of %zu bytes shown]", i, len);
	return bad;
}

size_t ts_linetag_print(FILE *f, size_t n, const char *line, size_t len, size_t max)
{
	char tag[TS_TOOL_TAG_LEN + 1];

	ts_linetag(line, len, tag);
	fprintf(f, "%zu:%s|", n, tag);
	size_t bad = ts_text_print(f, line, len, max);
	fputc('\n', f);
	return bad;
}

int ts_linetag_parse(const char *ref, size_t *line, char tag[TS_TOOL_TAG_LEN + 1])
{
	const char *p = ref;
	size_t n = 0;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (n > (SIZE_MAX - 9) / 10)
			return -ERANGE;
		n = n * 10 + (size_t)(*p - '0');
	}
	if (*p != ':')
		return -EINVAL;
	p++;
	tag[0] = '\0';
	if (n == 0 && (*p == '\0' || *p == '|'))
		goto done;
	for (int i = 0; i < TS_TOOL_TAG_LEN; i++, p++) {
		if (*p >= '0' && *p <= '9')
			tag[i] = *p;
		else if (*p >= 'a' && *p <= 'f')
			tag[i] = *p;
		else if (*p >= 'A' && *p <= 'F')
			tag[i] = (char)(*p - 'A' + 'a');
		else
			return -EINVAL;
	}
	tag[TS_TOOL_TAG_LEN] = '\0';
	/* a reference copied with its line's text ("12:a3f|text") names the same line */
	if (*p != '\0' && *p != '|')
		return -EINVAL;
done:
	*line = n;
	return 0;
}
