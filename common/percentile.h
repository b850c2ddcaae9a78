/* SPDX-License-Identifier: MIT */
/* Latency percentiles, as `barrierctl bench` and the benchmarks report them. */
#ifndef BARRIERD_PERCENTILE_H
#define BARRIERD_PERCENTILE_H

#include <stddef.h>
#include <stdint.h>

/* Sort n values in place, smallest first. */
void sort_u64(uint64_t *v, size_t n);

/* Nearest-rank percentile of n sorted values: the smallest with p % at or below it (n 0: 0). */
uint64_t percentile_u64(const uint64_t *sorted, size_t n, unsigned p);

#endif
