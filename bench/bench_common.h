/* SPDX-License-Identifier: MIT */
/*
 * Small helpers shared by the benchmark programs in bench/ (run by bench/run.sh).  Header-only
 * so that each program stays one file.  The loads, fences and the clock are bd_sync.h's
 * (bd_load, bd_load_low, bd_stamp_fence, bd_mono_ns); a fenced clock read, the stamp of the
 * original layout's clients, is bd_stamp_fence() then bd_mono_ns().  Mapping a state file and
 * percentiles are barrierd_internal's (map_ro.h, percentile.h), as every bench target links it.
 */
#ifndef BARRIERD_BENCH_COMMON_H
#define BARRIERD_BENCH_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bd_sync.h"
#include "map_ro.h"
#include "percentile.h"

#define BENCH_SEC 1000000000ULL
#define BENCH_MS 1000000ULL

static inline uint64_t bench_thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * BENCH_SEC + (uint64_t)ts.tv_nsec;
}

static inline void bench_sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / BENCH_SEC),
			      .tv_nsec = (long)(ns % BENCH_SEC)};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static inline void bench_sleep_until(uint64_t abs_ns)
{
	struct timespec ts = {.tv_sec = (time_t)(abs_ns / BENCH_SEC),
			      .tv_nsec = (long)(abs_ns % BENCH_SEC)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Shared (not private) futex operations on the low half of a 64-bit state-file word. */
static inline long bench_futex_wait(const void *word, uint32_t val, uint64_t timeout_ns)
{
	struct timespec ts = {.tv_sec = (time_t)(timeout_ns / BENCH_SEC),
			      .tv_nsec = (long)(timeout_ns % BENCH_SEC)};

	return syscall(SYS_futex, word, FUTEX_WAIT, val, timeout_ns ? &ts : NULL, NULL, 0);
}

static inline long bench_futex_wake(const void *word, int n)
{
	return syscall(SYS_futex, word, FUTEX_WAKE, n, NULL, NULL, 0);
}

/*
 * How many threads sleep on a shared futex word, without waking any: requeue them all onto
 * the same word (the daemon's heartbeat probe does the same).
 */
static inline long bench_futex_count(const uint64_t *word)
{
	long n = syscall(SYS_futex, (const uint32_t *)word, FUTEX_CMP_REQUEUE, 0,
			 (void *)(long)INT32_MAX, (const uint32_t *)word, bd_load_low(word));

	return n < 0 ? -1 : n;
}

static inline int bench_pin(int cpu)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return sched_setaffinity(0, sizeof(one), &one) ? -errno : 0;
}

/*
 * Ring the doorbell until a daemon thread hears it (FUTEX_WAKE > 0) or the global ns word
 * passed t, for at most 200 us, as the library does.
 */
static inline void bench_ring(const uint64_t *doorbell, const uint64_t *global_ns, uint64_t t)
{
	uint64_t start = bd_mono_ns();

	while (bench_futex_wake(doorbell, 1) == 0 && bd_load(global_ns) <= t &&
	       bd_mono_ns() - start < 200000)
		sched_yield();
}

/* Open a CSV for appending; write the header when the file is new or empty. */
static inline FILE *bench_csv(const char *path, const char *header)
{
	FILE *f = fopen(path, "ae");

	if (!f) {
		fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) == 0 && ftell(f) == 0)
		fprintf(f, "%s\n", header);
	return f;
}

#endif
