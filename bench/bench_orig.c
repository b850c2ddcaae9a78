// SPDX-License-Identifier: MIT
/*
 * bench_orig: barrier latency of a client that knows only the ORIGINAL barrierd layout (the
 * 128-byte header and 16-byte per-CPU entries: no doorbell, no extension, no libbarrierd),
 * interleaved call by call with membarrier(MEMBARRIER_CMD_GLOBAL).  Such a client is served by
 * the daemon's slow idle credit (docs/PERFORMANCE.md's targets: p50 no slower than membarrier,
 * p99 <= 20 ms).
 *
 *   bench_orig STATE_PATH ROUNDS CONDITION CSV
 *
 * The wait is the original clients' one: fenced clock stamp, FUTEX_WAIT on the global word's low
 * half (50 ms timeout, re-check of all 64 bits).  Every call follows a random sleep of 0-10 ms,
 * so that none starts right after the other method's call or in step with the tick.
 * CSV rows: condition,method,index,latency_ns
 */
#include "bench_common.h"

#include <linux/membarrier.h>

struct orig_map {
	uint64_t ncpu, vtime, last_interrupt_ns, last_interrupt_vtime;
	uint8_t reserved[96];
};

static int orig_barrier(const struct orig_map *m)
{
	uint64_t t;

	/* The original clients' stamp: MFENCE; LFENCE; CLOCK_MONOTONIC (DESIGN rule 5). */
	bd_stamp_fence();
	t = bd_mono_ns();

	for (;;) {
		uint32_t w = bd_load_low(&m->last_interrupt_ns);

		if (bd_load(&m->last_interrupt_ns) > t)
			return 0;
		if (bd_mono_ns() - t > 5 * BENCH_SEC)
			return -ETIMEDOUT;
		bench_futex_wait(&m->last_interrupt_ns, w, 50 * BENCH_MS);
	}
}

/* A random 0-10 ms sleep (xorshift64*): spread, not unpredictable. */
static void random_gap(void)
{
	static uint64_t x;

	if (!x)
		x = bd_mono_ns() | 1;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	bench_sleep_ns((x * 2685821657736338717ULL) % (10 * BENCH_MS + 1));
}

int main(int argc, char **argv)
{
	const struct orig_map *m;
	uint64_t n;
	size_t size;
	FILE *csv;

	if (argc != 5 || !(n = strtoull(argv[2], NULL, 10))) {
		fprintf(stderr, "usage: bench_orig STATE_PATH ROUNDS CONDITION CSV\n");
		return 64;
	}
	m = map_ro(argv[1], &size);
	if (!m) {
		fprintf(stderr, "bench_orig: cannot map %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	csv = bench_csv(argv[4], "condition,method,index,latency_ns");
	if (!csv)
		return 1;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t0, t1;

		random_gap();
		t0 = bd_mono_ns();
		if (orig_barrier(m)) {
			fprintf(stderr, "bench_orig: round %llu: no barrier within 5 s\n",
				(unsigned long long)i);
			return 1;
		}
		t1 = bd_mono_ns();
		fprintf(csv, "%s,original-layout,%llu,%llu\n", argv[3], (unsigned long long)i,
			(unsigned long long)(t1 - t0));
		random_gap();
		t0 = bd_mono_ns();
		if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0)) {
			fprintf(stderr, "bench_orig: membarrier: %s\n", strerror(errno));
			return 1;
		}
		t1 = bd_mono_ns();
		fprintf(csv, "%s,membarrier-global,%llu,%llu\n", argv[3], (unsigned long long)i,
			(unsigned long long)(t1 - t0));
	}
	fclose(csv);
	return 0;
}
