// SPDX-License-Identifier: MIT
#include "map_ro.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void *map_ro(const char *path, size_t *size)
{
	struct stat st;
	void *m;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || st.st_size < 128) {
		close(fd);
		return NULL;
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	*size = (size_t)st.st_size;
	return m;
}
