// SPDX-License-Identifier: MIT
/*
 * Is the mapped file still the state file?  A daemon publishes into one inode only: when the
 * path was removed, renamed over, or the file truncated under our mapping, this handle can
 * never see a live daemon again, and only a new handle can.  Waits ask when they find the
 * daemon gone (lib/wait.c), so that they say so (-EIDRM) instead of backing off for nothing.
 */
#include "handle.h"
#include "mapping.h"

#include <errno.h>
#include <sys/stat.h>

int bd_file_moved(const struct barrierd *b)
{
	size_t mapped = bd_ext(b) && b->map2 ? b->size2 : b->size;
	struct stat st;

	if (!b->path)
		return 0;
	if (stat(b->path, &st))
		return errno == ENOENT || errno == ENOTDIR ? -EIDRM : 0;
	if ((uint64_t)st.st_dev != b->dev || (uint64_t)st.st_ino != b->ino)
		return -EIDRM;
	/* The daemon only grows its file: shorter than our mapping is someone else's truncation. */
	return st.st_size < (off_t)mapped ? -EIDRM : 0;
}
