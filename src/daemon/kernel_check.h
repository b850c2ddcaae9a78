/* SPDX-License-Identifier: MIT */
/*
 * kernel_check: refuse, with one clear line, a kernel the daemon cannot serve (README.md,
 * "Kernel compatibility"): older than 5.8 (the BPF ring buffer), or without BTF.
 */
#ifndef BARRIERD_KERNEL_CHECK_H
#define BARRIERD_KERNEL_CHECK_H

#include <stddef.h>

/*
 * 0, or -EOPNOTSUPP with the reason in err.  A kernel older than the oldest one tested is
 * logged, not refused.
 */
int kernel_check(char *err, size_t errlen);

#endif
