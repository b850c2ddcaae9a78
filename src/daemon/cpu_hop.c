// SPDX-License-Identifier: MIT
#include "cpu_hop.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>

int cpu_hop_all(uint64_t ncpu)
{
	size_t sz = CPU_ALLOC_SIZE(ncpu);
	cpu_set_t *orig = CPU_ALLOC(ncpu), *one = CPU_ALLOC(ncpu);
	int visited = 0;

	if (!orig || !one) {
		CPU_FREE(orig);
		CPU_FREE(one);
		return -ENOMEM;
	}
	if (sched_getaffinity(0, sz, orig)) {
		CPU_FREE(orig);
		CPU_FREE(one);
		return -errno;
	}
	/*
	 * Moving onto a CPU switches it from whatever ran there to us (BUSY), and moving off
	 * switches it to its next task or to idle: every CPU we visit leaves the "unknown"
	 * state.  An offline CPU refuses the affinity and is credited by rule 3 instead.
	 */
	for (uint64_t c = 0; c < ncpu; c++) {
		CPU_ZERO_S(sz, one);
		CPU_SET_S(c, sz, one);
		if (sched_setaffinity(0, sz, one) == 0) {
			sched_yield();
			visited++;
		}
	}
	sched_setaffinity(0, sz, orig);
	CPU_FREE(orig);
	CPU_FREE(one);
	return visited;
}
