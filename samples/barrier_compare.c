// SPDX-License-Identifier: MIT
/*
 * barrier_compare: a sample libbarrierd client.  It alternates barrierd_barrier() and
 * membarrier(MEMBARRIER_CMD_GLOBAL) and prints each latency, then a summary.
 *   barrier_compare [-n ROUNDS] [-q] [STATE_PATH]
 */
#include <barrierd.h>
#include <errno.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void summary(const char *name, uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	printf("%-22s min %8.3f  p50 %8.3f  p90 %8.3f  p99 %8.3f  max %8.3f ms\n", name,
	       (double)v[0] / 1e6, (double)v[n / 2] / 1e6, (double)v[n * 9 / 10] / 1e6,
	       (double)v[n * 99 / 100] / 1e6, (double)v[n - 1] / 1e6);
}

int main(int argc, char **argv)
{
	struct barrierd *b;
	int n = 100, quiet = 0, opt, ret;
	uint64_t *bd, *mb;

	while ((opt = getopt(argc, argv, "n:qh")) != -1) {
		switch (opt) {
		case 'n':
			n = atoi(optarg);
			break;
		case 'q':
			quiet = 1;
			break;
		default:
			fprintf(stderr, "usage: %s [-n ROUNDS] [-q] [STATE_PATH]\n", argv[0]);
			return opt == 'h' ? 0 : 64;
		}
	}
	if (n < 1 || n > 10000000) {
		fprintf(stderr, "barrier_compare: -n takes 1 to 10000000 rounds\n");
		return 64;
	}
	ret = barrierd_open(&b, optind < argc ? argv[optind] : NULL);
	if (ret) {
		fprintf(stderr, "barrier_compare: cannot open the state file: %s\n",
			strerror(-ret));
		return 1;
	}
	bd = calloc((size_t)n, sizeof(*bd));
	mb = calloc((size_t)n, sizeof(*mb));
	if (!bd || !mb)
		return 1;
	for (int i = 0; i < n; i++) {
		uint64_t t0 = now_ns();

		ret = barrierd_barrier(b, 5LL * 1000000000LL);
		bd[i] = now_ns() - t0;
		if (ret) {
			fprintf(stderr, "barrier_compare: barrierd_barrier: %s\n", strerror(-ret));
			return 1;
		}
		t0 = now_ns();
		if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0)) {
			fprintf(stderr, "barrier_compare: membarrier: %s\n", strerror(errno));
			return 1;
		}
		mb[i] = now_ns() - t0;
		if (!quiet)
			printf("%d barrierd %.3f ms membarrier %.3f ms\n", i, (double)bd[i] / 1e6,
			       (double)mb[i] / 1e6);
	}
	summary("barrierd_barrier", bd, n);
	summary("membarrier(GLOBAL)", mb, n);
	barrierd_close(b);
	return 0;
}
