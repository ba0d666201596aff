// SPDX-License-Identifier: Apache-2.0
/*
 * What E2B's Go side puts on the wire, shared by serve (which speaks as envd) and the e2b
 * backend (which reads envd): base64 as Go's protojson writes and reads it, and Go's
 * names of the signals in a process state ("signal: killed").
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "gowire.h"

static const char b64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *ts_base64_encode(const void *p, size_t n, size_t *ret_len)
{
	const uint8_t *in = p;
	size_t i, o = 0;
	char *s;

	if (n > SIZE_MAX / 2)
		return NULL;
	s = malloc((n + 2) / 3 * 4 + 1);
	if (!s)
		return NULL;
	for (i = 0; i + 2 < n; i += 3) {
		uint32_t w = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		s[o++] = b64_std[w >> 18 & 63];
		s[o++] = b64_std[w >> 12 & 63];
		s[o++] = b64_std[w >> 6 & 63];
		s[o++] = b64_std[w & 63];
	}
	if (n - i == 1) {
		s[o++] = b64_std[in[i] >> 2];
		s[o++] = b64_std[(in[i] & 3) << 4];
		s[o++] = '=';
		s[o++] = '=';
	} else if (n - i == 2) {
		uint32_t w = (uint32_t)in[i] << 8 | in[i + 1];
		s[o++] = b64_std[w >> 10 & 63];
		s[o++] = b64_std[w >> 4 & 63];
		s[o++] = b64_std[(w & 15) << 2];
		s[o++] = '=';
	}
	s[o] = '\0';
	if (ret_len)
		*ret_len = o;
	return s;
}

static int b64_value(char c, bool url)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == (url ? '-' : '+'))
		return 62;
	if (c == (url ? '_' : '/'))
		return 63;
	return -1;
}

/*
 * As Go's protojson decodes bytes: URL-safe alphabet when the text has '-' or '_', else
 * the standard one; padded when its length is a multiple of 4, else unpadded.
 */
int ts_base64_decode(const char *s, size_t len, uint8_t **ret, size_t *n)
{
	size_t pad = 0, i, o = 0;
	uint8_t *out;
	uint32_t acc = 0;
	unsigned bits = 0;
	bool url;

	url = memchr(s, '-', len) || memchr(s, '_', len);
	if (len % 4 == 0) {
		while (pad < 2 && len > pad && s[len - 1 - pad] == '=')
			pad++;
	} else if (len % 4 == 1) {
		return -EINVAL;
	}
	out = malloc(len / 4 * 3 + 3);
	if (!out)
		return -ENOMEM;
	for (i = 0; i < len - pad; i++) {
		int d = b64_value(s[i], url);

		if (d < 0) {
			free(out);
			return -EINVAL;
		}
		acc = acc << 6 | (uint32_t)d;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (uint8_t)(acc >> bits);
		}
	}
	/* what is left over must be padding bits (Go's non-strict decoder ignores their
	 * value; so do we) */
	*ret = out;
	*n = o;
	return 0;
}

/* Go's syscall.Signal.String() on Linux, which os.ProcessState.String() prints. */
static const char *const go_signals[] = {
	[SIGHUP] = "hangup",
	[SIGINT] = "interrupt",
	[SIGQUIT] = "quit",
	[SIGILL] = "illegal instruction",
	[SIGTRAP] = "trace/breakpoint trap",
	[SIGABRT] = "aborted",
	[SIGBUS] = "bus error",
	[SIGFPE] = "floating point exception",
	[SIGKILL] = "killed",
	[SIGUSR1] = "user defined signal 1",
	[SIGSEGV] = "segmentation fault",
	[SIGUSR2] = "user defined signal 2",
	[SIGPIPE] = "broken pipe",
	[SIGALRM] = "alarm clock",
	[SIGTERM] = "terminated",
	[SIGSTKFLT] = "stack fault",
	[SIGCHLD] = "child exited",
	[SIGCONT] = "continued",
	[SIGSTOP] = "stopped (signal)",
	[SIGTSTP] = "stopped",
	[SIGTTIN] = "stopped (tty input)",
	[SIGTTOU] = "stopped (tty output)",
	[SIGURG] = "urgent I/O condition",
	[SIGXCPU] = "CPU time limit exceeded",
	[SIGXFSZ] = "file size limit exceeded",
	[SIGVTALRM] = "virtual timer expired",
	[SIGPROF] = "profiling timer expired",
	[SIGWINCH] = "window changed",
	[SIGIO] = "I/O possible",
	[SIGPWR] = "power failure",
	[SIGSYS] = "bad system call",
};

const char *ts_go_signal_name(int sig)
{
	return sig > 0 && (size_t)sig < ELEMENTSOF(go_signals) ? go_signals[sig] : NULL;
}

int ts_go_signal_parse(const char *status)
{
	const char *p;

	if (!status || strncmp(status, "signal: ", 8))
		return 0;
	p = status + 8;
	for (size_t i = 1; i < ELEMENTSOF(go_signals); i++) {
		size_t n = go_signals[i] ? strlen(go_signals[i]) : 0;

		if (n && !strncmp(p, go_signals[i], n) && (!p[n] || p[n] == ' '))
			return (int)i;
	}
	/* "signal 42" for one Go has no name for */
	if (!strncmp(p, "signal ", 7))
		return atoi(p + 7);
	return 0;
}
