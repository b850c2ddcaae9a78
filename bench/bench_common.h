/* SPDX-License-Identifier: MIT */
/*
 * Small helpers shared by the benchmark programs in bench/ (run by bench/run.sh).  Header-only
 * so that each program stays one file.
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

#define BENCH_SEC 1000000000ULL
#define BENCH_MS 1000000ULL

static inline uint64_t bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * BENCH_SEC + (uint64_t)ts.tv_nsec;
}

static inline uint64_t bench_thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * BENCH_SEC + (uint64_t)ts.tv_nsec;
}

/* The stamp rule of the original layout's clients: MFENCE; LFENCE; CLOCK_MONOTONIC. */
static inline uint64_t bench_fenced_now(void)
{
	__asm__ __volatile__("mfence; lfence" ::: "memory");
	return bench_now();
}

static inline uint64_t bench_ld64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline uint32_t bench_ld_low(const uint64_t *p)
{
	return __atomic_load_n((const uint32_t *)p, __ATOMIC_ACQUIRE);
}

static inline void bench_sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / BENCH_SEC), .tv_nsec = (long)(ns % BENCH_SEC)};

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
			 (void *)(long)INT32_MAX, (const uint32_t *)word, bench_ld_low(word));

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
	uint64_t start = bench_now();

	while (bench_futex_wake(doorbell, 1) == 0 && bench_ld64(global_ns) <= t &&
	       bench_now() - start < 200000)
		sched_yield();
}

/* Map a state file read-only (any user can: the file is 0644).  NULL on failure. */
static inline void *bench_map_ro(const char *path, size_t *size)
{
	struct stat st;
	void *m;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || st.st_size < 128) {
		close(fd);
		return NULL;
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	*size = (size_t)st.st_size;
	return m;
}

static inline int bench_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of n sorted values. */
static inline uint64_t bench_pct(const uint64_t *sorted, size_t n, unsigned p)
{
	size_t rank = (n * p + 99) / 100;

	return n ? sorted[rank ? rank - 1 : 0] : 0;
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
