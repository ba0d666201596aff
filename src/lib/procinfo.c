/* SPDX-License-Identifier: Apache-2.0 */
#include "procinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int proc_stat(pid_t pid, char *state, unsigned long long *start)
{
	char path[64], buf[1024];
	const char *p;
	char *end;
	ssize_t n;
	int fd;

	if (pid <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ESRCH;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -EBADMSG;
	p += 2;
	*state = *p;
	/* p is at field 3; skip to field 22. */
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -EBADMSG;
		p++;
	}
	errno = 0;
	*start = strtoull(p, &end, 10);
	if (errno || end == p || (*end != ' ' && *end != '\0' && *end != '\n'))
		return -EBADMSG;
	return 0;
}

unsigned long long ts_proc_start_time(pid_t pid)
{
	unsigned long long start;
	char state;

	if (proc_stat(pid, &state, &start) < 0)
		return 0;
	return start;
}

bool ts_proc_alive(pid_t pid, unsigned long long start)
{
	unsigned long long now_start;
	char state;

	if (proc_stat(pid, &state, &now_start) < 0)
		return false;
	/* A zombie (Z) or a dying task (X) runs nothing any more. */
	if (state == 'Z' || state == 'X')
		return false;
	return start == 0 || now_start == start;
}
