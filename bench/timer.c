/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-timer: run several commands round-robin and record the wall time of each run.
 *
 * The time is taken with CLOCK_MONOTONIC right before posix_spawn() and right after
 * waitpid() returns, so it covers spawn + exec + the command + its exit and reaping, and
 * none of a shell's or hyperfine's own overhead. A `baseline` entry running /bin/true
 * directly shows what the measurement itself costs.
 *
 * Usage: bench-timer -n ROUNDS [-w WARMUP] -o OUT.csv CMDFILE
 *
 * CMDFILE: one command per line, `LABEL<TAB>ARGV<TAB>POST`; ARGV and POST are words
 * separated by single spaces (no quoting; or by 0x1f where a word has spaces), POST
 * is optional and runs untimed after each run. `%i` in either is replaced by a token
 * unique to the run (for container ids).
 * Leading words `N<PATH` open PATH read-only at fd N in the child.
 * A word `&&` splits ARGV (or POST) into commands run one after another, like a shell's
 * `&&` without the shell: the time of ARGV then runs from the first spawn to the last
 * reap, and a failing command ends the sequence with its status.
 * Round r starts with command r mod K, so no command always runs first or right after
 * the same neighbour.
 *
 * OUT.csv: label,round,ns,status (status = wait status as an exit code, 128+N on signal).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_CMDS 32
#define MAX_ARGS 128

struct cmd {
	char *label;
	char *argv_tpl[MAX_ARGS];
	char *post_tpl[MAX_ARGS];
	int n_failed;
};

static int split(char *s, char **out)
{
	/* Words are separated by spaces, or by US (0x1f) when a word has a space itself. */
	const char *sep = strchr(s, '\x1f') ? "\x1f" : " ";
	int n = 0;

	for (char *tok = strtok(s, sep); tok && n < MAX_ARGS - 1; tok = strtok(NULL, sep))
		out[n++] = tok;
	out[n] = NULL;
	return n;
}

static void subst(char **tpl, char **out, char bufs[][512], const char *token)
{
	int i;

	for (i = 0; tpl[i]; i++) {
		const char *p = strstr(tpl[i], "%i");

		if (!p) {
			out[i] = tpl[i];
			continue;
		}
		snprintf(bufs[i], 512, "%.*s%s%s", (int)(p - tpl[i]), tpl[i], token, p + 2);
		out[i] = bufs[i];
	}
	out[i] = NULL;
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Spawn argv with stdin and stdout on /dev/null, stderr on errfd; return the exit code. */
static int run(char **argv, int errfd, long long *ns)
{
	posix_spawn_file_actions_t fa;
	long long t0, t1;
	pid_t pid;
	int status, r;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, errfd, 2);
	/* Leading `N<PATH` words open PATH read-only at fd N (the helper's seccomp fd). */
	while (argv[0] && argv[0][0] >= '0' && argv[0][0] <= '9' && strchr(argv[0], '<')) {
		posix_spawn_file_actions_addopen(&fa, atoi(argv[0]), strchr(argv[0], '<') + 1,
						 O_RDONLY, 0);
		argv++;
	}
	t0 = now_ns();
	r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	if (r != 0) {
		posix_spawn_file_actions_destroy(&fa);
		fprintf(stderr, "bench-timer: spawn `%s`: %s\n", argv[0], strerror(r));
		return 127;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 127;
	t1 = now_ns();
	posix_spawn_file_actions_destroy(&fa);
	if (ns)
		*ns = t1 - t0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Run argv, split at `&&` words, one command after another; the time covers all of them. */
static int run_seq(char **argv, int errfd, long long *ns)
{
	char *one[MAX_ARGS];
	long long t0, dummy;
	int st = 0, i;

	for (i = 0; argv[i] && strcmp(argv[i], "&&") != 0; i++)
		;
	if (!argv[i]) /* one command: timed as before, right around spawn and reap */
		return run(argv, errfd, ns);
	t0 = now_ns();
	while (argv[0]) {
		int n = 0;

		while (argv[n] && strcmp(argv[n], "&&") != 0) {
			one[n] = argv[n];
			n++;
		}
		one[n] = NULL;
		st = n ? run(one, errfd, &dummy) : 0;
		if (st != 0 || !argv[n])
			break;
		argv += n + 1;
	}
	if (ns)
		*ns = now_ns() - t0;
	return st;
}

int main(int argc, char **argv)
{
	static struct cmd cmds[MAX_CMDS];
	static char bufs[MAX_ARGS][512];
	char *av[MAX_ARGS], line[8192], token[64];
	int n = 30, warmup = 3, k = 0, opt, errfd, nullfd;
	const char *out = NULL;
	FILE *f, *o;

	while ((opt = getopt(argc, argv, "n:w:o:")) != -1) {
		switch (opt) {
		case 'n':
			n = atoi(optarg);
			break;
		case 'w':
			warmup = atoi(optarg);
			break;
		case 'o':
			out = optarg;
			break;
		default:
			return 2;
		}
	}
	if (optind >= argc || !out || n < 1) {
		fprintf(stderr, "usage: bench-timer -n ROUNDS [-w WARMUP] -o OUT.csv CMDFILE\n");
		return 2;
	}
	f = fopen(argv[optind], "r");
	if (!f) {
		perror(argv[optind]);
		return 2;
	}
	while (k < MAX_CMDS && fgets(line, sizeof(line), f)) {
		char *t1, *t2;

		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		t1 = strchr(line, '\t');
		if (!t1)
			continue;
		*t1++ = '\0';
		t2 = strchr(t1, '\t');
		if (t2)
			*t2++ = '\0';
		cmds[k].label = strdup(line);
		split(strdup(t1), cmds[k].argv_tpl);
		if (t2 && *t2)
			split(strdup(t2), cmds[k].post_tpl);
		k++;
	}
	fclose(f);
	o = fopen(out, "w");
	if (!o) {
		perror(out);
		return 2;
	}
	/* Failures are counted; their stderr goes to ours so they are seen. */
	errfd = dup(2);
	/* A post command (cleanup) may complain about what the command already removed. */
	nullfd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	fprintf(o, "label,round,ns,status\n");
	for (int r = -warmup; r < n; r++) {
		for (int j = 0; j < k; j++) {
			struct cmd *c = &cmds[(((r % k) + k) % k + j) % k];
			long long ns = 0;
			int st;

			snprintf(token, sizeof(token), "b%d-%d-%d", (int)getpid(), r + warmup, j);
			subst(c->argv_tpl, av, bufs, token);
			st = run_seq(av, errfd, &ns);
			if (c->post_tpl[0]) {
				char *pav[MAX_ARGS];
				static char pbufs[MAX_ARGS][512];

				subst(c->post_tpl, pav, pbufs, token);
				run_seq(pav, nullfd, NULL);
			}
			if (r < 0)
				continue;
			if (st != 0)
				c->n_failed++;
			fprintf(o, "\"%s\",%d,%lld,%d\n", c->label, r, ns, st);
		}
	}
	fclose(o);
	for (int j = 0; j < k; j++)
		if (cmds[j].n_failed)
			fprintf(stderr, "bench-timer: `%s` failed %d of %d runs\n", cmds[j].label,
				cmds[j].n_failed, n);
	return 0;
}
