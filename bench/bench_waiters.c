// SPDX-License-Identifier: MIT
/*
 * bench_waiters: N threads blocked on one barrier, and the time until the last one runs again.
 *
 *   bench_waiters STATE_PATH THREADS ROUNDS CSV
 *
 * Two modes per round, alternating:
 *   fanout   every thread sleeps on the global word (FUTEX_WAIT, as libbarrierd does) for a
 *            stamp T 20 ms + 50 us x N in the future; once all N sleep (counted with
 *            FUTEX_CMP_REQUEUE, waking nobody) the controller waits for T, rings the doorbell
 *            20 us after it, and the daemon's one FUTEX_WAKE releases them all.  Run it against
 *            a daemon whose slow idle credit is off (--idle-credit-interval 60000), or that
 *            credit can pass T on its own; "blocked" is how many slept at the last count
 *            before T.  Measured from the advance (last_advance_ns) to the first and the last
 *            thread running, and from the ring to the last.
 *   library  the controller takes a real stamp and releases the N threads, each of which calls
 *            barrierd_wait() on it (each may ring; some may find it passed).  Measured from the
 *            stamp to the last thread's return.
 * CSV rows: mode,threads,round,blocked,adv_to_first_ns,adv_to_last_ns,start_to_last_ns
 */
#include "bench_common.h"

#include <barrierd.h>
#include <pthread.h>

struct waiter {
	pthread_t th;
	uint64_t tw, adv;
} __attribute__((aligned(64)));

static struct barrierd *bd;
static const struct barrierd_header *hdr;
static const struct barrierd_ext *ext;
static struct waiter *w;
static uint32_t go_gen, done, nthreads, stop;
static int mode_library;
static uint64_t target;

static void *waiter_main(void *arg)
{
	struct waiter *me = arg;
	uint32_t seen = 0;

	for (;;) {
		uint32_t g;
		uint64_t t;

		while ((g = __atomic_load_n(&go_gen, __ATOMIC_ACQUIRE)) == seen)
			syscall(SYS_futex, &go_gen, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
		seen = g;
		if (__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
			return NULL;
		t = __atomic_load_n(&target, __ATOMIC_ACQUIRE);
		if (mode_library) {
			if (barrierd_wait(bd, t, 10 * (int64_t)BENCH_SEC))
				fprintf(stderr, "bench_waiters: barrierd_wait failed\n");
		} else {
			for (;;) {
				uint32_t snap = bd_load_low(&hdr->last_interrupt_ns);

				if (bd_load(&hdr->last_interrupt_ns) > t)
					break;
				bench_futex_wait(&hdr->last_interrupt_ns, snap, 500 * BENCH_MS);
			}
		}
		me->tw = bd_mono_ns();
		me->adv = bd_load(&ext->last_advance_ns);
		if (__atomic_add_fetch(&done, 1, __ATOMIC_ACQ_REL) == nthreads)
			syscall(SYS_futex, &done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
}

static void release(void)
{
	__atomic_add_fetch(&go_gen, 1, __ATOMIC_ACQ_REL);
	syscall(SYS_futex, &go_gen, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

static int wait_done(void)
{
	uint64_t guard = bd_mono_ns() + 20 * BENCH_SEC;
	uint32_t d;

	while ((d = __atomic_load_n(&done, __ATOMIC_ACQUIRE)) < nthreads) {
		struct timespec ts = {0, 10 * 1000000L};

		syscall(SYS_futex, &done, FUTEX_WAIT_PRIVATE, d, &ts, NULL, 0);
		if (bd_mono_ns() > guard)
			return -ETIMEDOUT;
	}
	return 0;
}

int main(int argc, char **argv)
{
	pthread_attr_t attr;
	uint32_t rounds;
	size_t size;
	FILE *csv;
	int ret;

	if (argc != 5 || !(nthreads = (uint32_t)atoi(argv[2])) ||
	    !(rounds = (uint32_t)atoi(argv[3]))) {
		fprintf(stderr, "usage: bench_waiters STATE_PATH THREADS ROUNDS CSV\n");
		return 64;
	}
	ret = barrierd_open(&bd, argv[1]);
	if (ret) {
		fprintf(stderr, "bench_waiters: %s: %s\n", argv[1], strerror(-ret));
		return 1;
	}
	hdr = barrierd_mapping(bd, &size);
	ext = (const void *)((const char *)hdr + hdr->ext_offset);
	csv = bench_csv(argv[4], "mode,threads,round,blocked,adv_to_first_ns,adv_to_last_ns,"
				 "start_to_last_ns");
	w = aligned_alloc(64, sizeof(*w) * nthreads);
	if (!csv || !w)
		return 1;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (uint32_t i = 0; i < nthreads; i++) {
		if (pthread_create(&w[i].th, &attr, waiter_main, &w[i])) {
			fprintf(stderr, "bench_waiters: cannot create thread %u\n", i);
			return 1;
		}
	}

	for (uint32_t r = 0; r < 2 * rounds; r++) {
		uint64_t start, first = UINT64_MAX, last = 0, adv = UINT64_MAX;
		long blocked = nthreads;

		mode_library = r & 1;
		__atomic_store_n(&done, 0, __ATOMIC_RELEASE);
		bench_sleep_ns(5 * BENCH_MS);
		if (mode_library) {
			start = barrierd_stamp_ns(bd);
			__atomic_store_n(&target, start, __ATOMIC_RELEASE);
			release();
		} else {
			uint64_t t = bd_mono_ns() + 20 * BENCH_MS + 50000ULL * nthreads;

			__atomic_store_n(&target, t, __ATOMIC_RELEASE);
			release();
			/*
			 * Every thread asleep on the word before T (the daemon cannot pass T before
			 * T; a global advance below T wakes them all, and they go back to sleep).
			 * -1: the word changed under the count; count again.
			 */
			do {
				bench_sleep_ns(BENCH_MS);
				blocked = bench_futex_count(&hdr->last_interrupt_ns);
			} while (blocked < (long)nthreads && bd_mono_ns() < t);
			bench_sleep_until(t + 20000);
			start = bd_mono_ns();
			bench_ring(&hdr->doorbell, &hdr->last_interrupt_ns, t);
		}
		if (wait_done()) {
			fprintf(stderr, "bench_waiters: %u threads did not all wake within 20 s\n",
				nthreads);
			return 1;
		}
		for (uint32_t i = 0; i < nthreads; i++) {
			first = w[i].tw < first ? w[i].tw : first;
			last = w[i].tw > last ? w[i].tw : last;
			/* The advance that released them: the earliest any of them saw after T. */
			if (w[i].adv > target && w[i].adv < adv)
				adv = w[i].adv;
		}
		if (adv == UINT64_MAX || adv > first)
			adv = first; /* not seen: report 0 rather than nonsense */
		fprintf(csv, "%s,%u,%u,%ld,%llu,%llu,%llu\n", mode_library ? "library" : "fanout",
			nthreads, r / 2, blocked, (unsigned long long)(first - adv),
			(unsigned long long)(last - adv),
			(unsigned long long)(last > start ? last - start : 0));
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	release();
	for (uint32_t i = 0; i < nthreads; i++)
		pthread_join(w[i].th, NULL);
	fclose(csv);
	barrierd_close(bd);
	return 0;
}
