// SPDX-License-Identifier: MIT
/* The membarrier fallback: a real global barrier, or its error. */
#include "internal.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

int bd_fallback_membarrier(void)
{
	/* EINVAL under nohz_full, EPERM/ENOSYS under seccomp: returned, never hidden. */
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0))
		return -errno;
	return 0;
}
