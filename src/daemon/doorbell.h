/* SPDX-License-Identifier: MIT */
/*
 * The doorbell thread: FUTEX_WAITs on the state file's doorbell word (any client can
 * FUTEX_WAKE it on a read-only mapping) and hands each ring to the main loop via an eventfd.
 * Any user can move that wait to another word (FUTEX_CMP_REQUEUE): the main loop's tick checks
 * that the thread is still on its word (doorbell_moved), and every wait is bounded (0.75 to 1 s,
 * at random) and its expiry served as a ring.
 */
#ifndef BARRIERD_DOORBELL_H
#define BARRIERD_DOORBELL_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

struct probes;

struct doorbell {
	uint64_t *word;	       /* header.doorbell; the daemon never changes its value (0) */
	int efd;	       /* eventfd the main loop polls */
	uint64_t rate;	       /* --max-credit-rate: wake-ups per second, sustained */
	struct probes *probes; /* to learn and register the thread's global tid */
	pthread_t thread;
	bool started;
	volatile int stop;
	volatile uint32_t tid; /* global tid, once registered */
	uint32_t saturated; /* __atomic: it sat out a rate-limit gap since the main loop looked */
	uint64_t woke_ns;   /* __atomic: when a ring (or an expiry) last woke it, stored before
			       the eventfd */
	uint64_t heard;	    /* __atomic: rings heard (the eventfd also counts expiries) */
	uint32_t waiting;   /* __atomic: in (or about to enter) its FUTEX_WAIT */
	uint64_t rng;	    /* the thread's: its waits' random lengths */
	int start_err;
};

/*
 * Start the thread at SCHED_FIFO 1 when permitted (futex wakes RT waiters first, so flooding
 * thieves waiting on the word cannot starve it).  Returns once the thread registered its tid.
 */
int doorbell_start(struct doorbell *d, uint64_t *word, struct probes *probes, uint64_t rate);
/*
 * Stop and join the thread: a FUTEX_WAKE of its word and DOORBELL_WAKE_SIGNAL sent to the
 * thread, whose no-op handler ends its FUTEX_WAIT with EINTR, whatever word the wait is on (a
 * user may have moved it; a truncation may have taken the word's page), until it leaves.
 * SIGURG: ignored by default, so a stray one harms nothing.
 */
#define DOORBELL_WAKE_SIGNAL SIGURG
void doorbell_stop(struct doorbell *d);

/*
 * For the main loop's tick: is the thread in its wait, yet nobody waits on its word?  Then
 * another user moved it, and rings since went unheard: it is signalled back to its word
 * (DOORBELL_WAKE_SIGNAL), and true says the caller must serve those rings.  A moved thread
 * whose place another user's waiter holds is not seen here: its wait's expiry, served whatever
 * waits where, covers that case.
 */
bool doorbell_moved(struct doorbell *d);

#endif
