/* SPDX-License-Identifier: MIT */
/* Hop the calling thread across every online CPU so each slot's idle word reaches a state. */
#ifndef BARRIERD_CPU_HOP_H
#define BARRIERD_CPU_HOP_H

#include <stdint.h>

/* Returns the number of CPUs visited, or -errno.  The thread's affinity is restored. */
int cpu_hop_all(uint64_t ncpu);

#endif
