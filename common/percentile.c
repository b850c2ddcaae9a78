// SPDX-License-Identifier: MIT
#include "percentile.h"

#include <stdlib.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void sort_u64(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
}

uint64_t percentile_u64(const uint64_t *sorted, size_t n, unsigned p)
{
	size_t rank = (n * p + 99) / 100;

	return n ? sorted[rank ? rank - 1 : 0] : 0;
}
