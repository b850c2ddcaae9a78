// SPDX-License-Identifier: MIT
#include "kernel_files.h"

#include <barrierd.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

ssize_t read_text_file(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	return n;
}

int possible_cpus(void)
{
	char buf[4096];
	long max = -1;
	ssize_t n = read_text_file("/sys/devices/system/cpu/possible", buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	for (char *p = buf; *p && *p != '\n';) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p)
			return -EIO;
		max = v > max ? v : max;
		p = (*end == ',' || *end == '-') ? end + 1 : end;
	}
	return max >= 0 && max < (long)BARRIERD_MAX_CPUS ? (int)max + 1 : -EIO;
}
