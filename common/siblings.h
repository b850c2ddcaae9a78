/* SPDX-License-Identifier: MIT */
/*
 * Sibling threads for the barrier-method benchmarks (`barrierctl bench`, bench/bench_ipi): one
 * thread pinned on each CPU given, told what to do through a private futex word.
 *
 * Two methods only measure something when other CPUs run this process's threads:
 * PRIVATE_EXPEDITED interrupts just those CPUs, and the mprotect trick's TLB shootdown goes to
 * the CPUs whose TLBs may hold the page.  A sibling spins (or keeps reading the page) while
 * such a method is measured, and parks on the futex otherwise, so that the other methods see
 * idle CPUs.
 */
#ifndef BARRIERD_SIBLINGS_H
#define BARRIERD_SIBLINGS_H

#include <pthread.h>
#include <sched.h>
#include <stdint.h>

/* What the siblings do. */
enum sib_kind {
	SIB_PARK,  /* sleep on the futex: this CPU is idle */
	SIB_SPIN,  /* run user code */
	SIB_TOUCH, /* run user code that reads the page: it stays in this CPU's TLB */
	SIB_EXIT,
};

struct siblings {
	pthread_t *threads;
	int started;   /* threads started (still counted after siblings_stop()) */
	uint32_t mode; /* (generation << 2) | enum sib_kind: the futex word */
	uint32_t acks; /* siblings that have seen the current mode */
	const volatile unsigned char *page; /* what SIB_TOUCH reads */
};

/*
 * Start one sibling on each CPU in cpus, parked, and wait until each has seen that mode.
 * 0 or -errno; siblings_stop() ends what started either way.
 */
int siblings_start(struct siblings *s, const cpu_set_t *cpus, const volatile unsigned char *page);

/*
 * Switch the siblings to another kind of work and wait until each has seen it: a spinning
 * method is then measured with every sibling running, and the wake-up IPIs have landed before
 * the caller goes on.  0, or -ETIMEDOUT when a sibling did not respond within 10 s.
 */
int siblings_set(struct siblings *s, enum sib_kind kind);

/* Tell the siblings to exit, join them, free what siblings_start() took.  Idempotent. */
void siblings_stop(struct siblings *s);

#endif
