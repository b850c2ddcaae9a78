/* SPDX-License-Identifier: MIT */
/*
 * kernel_check: refuse, with one clear line, a kernel the daemon cannot serve (README.md,
 * "Kernel compatibility"): no BTF, no BPF ring buffer, no raw tracepoint programs.
 */
#ifndef BARRIERD_KERNEL_CHECK_H
#define BARRIERD_KERNEL_CHECK_H

#include <stddef.h>

/*
 * 0 when every feature is there (or cannot be probed without the privilege the load needs
 * anyway: the load reports that); -EOPNOTSUPP with the missing feature in err otherwise.  A
 * kernel older than the oldest one tested is logged, not refused.
 */
int kernel_check(char *err, size_t errlen);

#endif
