// SPDX-License-Identifier: MIT
#include "kernel_files.h"

#include <barrierd.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
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

int cpu_list_read(const char *path, bool *in, unsigned long n)
{
	char buf[4096];
	ssize_t len = read_text_file(path, buf, sizeof(buf));
	int count = 0;

	for (unsigned long c = 0; c < n; c++)
		in[c] = false;
	if (len == -ENOENT)
		return 0;
	if (len < 0 && len != -EIO)
		return (int)len;
	/* An empty file, or "(null)": what nohz_full shows when the kernel was booted without it.
	 */
	if (len < 0 || strncmp(buf, "(null)", 6) == 0)
		return 0;
	for (char *p = buf; *p && *p != '\n';) {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (end == p || a < 0)
			return -EIO;
		if (*end == '-') {
			p = end + 1;
			b = strtol(p, &end, 10);
			if (end == p || b < a)
				return -EIO;
		}
		for (long c = a; c <= b && c < (long)n; c++)
			if (!in[c]) {
				in[c] = true;
				count++;
			}
		if (*end == ',')
			end++;
		else if (*end && *end != '\n')
			return -EIO;
		p = end;
	}
	return count;
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
