/* SPDX-License-Identifier: MIT */
/*
 * Nudges (docs/DESIGN.md, "Nudges"): one thread per CPU, pinned there at SCHED_FIFO, asleep on
 * a futex word of its own.  Waking it makes that CPU switch to it: a sched_switch on that CPU,
 * stamped and signalled as any other event.  A nudge is only a way to make an event happen;
 * what it stamps is evidence by rule 1 alone.
 */
#ifndef BARRIERD_NUDGE_H
#define BARRIERD_NUDGE_H

#include "rate_limit.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * The horizons of the rings whose nudge deadline (horizon + --nudge-after) has not come yet,
 * oldest first.  Pure logic, tested on its own (tests/unit/test_nudge_queue.c).  Horizons only
 * grow, so the queue stays sorted.  Full (more than NUDGE_QUEUE horizons within one deadline:
 * rings come at most at the doorbell's rate, a following daemon's passes at most once a
 * millisecond), the newest entry moves up to the new horizon: that ring's deadline comes
 * later, none is lost.
 */
#define NUDGE_QUEUE 32

struct nudge_queue {
	uint64_t h[NUDGE_QUEUE];
	unsigned head, n;
};

static inline void nudge_queue_push(struct nudge_queue *q, uint64_t h)
{
	unsigned last = (q->head + q->n - 1) % NUDGE_QUEUE;

	if (q->n && q->h[last] >= h)
		return; /* no later than a ring already waiting: covered by it */
	if (q->n == NUDGE_QUEUE) {
		q->h[last] = h;
		return;
	}
	q->h[(q->head + q->n++) % NUDGE_QUEUE] = h;
}

/* Remove every horizon whose deadline has come; the latest of them, or 0 if none. */
static inline uint64_t nudge_queue_due(struct nudge_queue *q, uint64_t now, uint64_t after)
{
	uint64_t due = 0;

	while (q->n && q->h[q->head] + after <= now) {
		due = q->h[q->head];
		q->head = (q->head + 1) % NUDGE_QUEUE;
		q->n--;
	}
	return due;
}

/* The next deadline, or 0 if nothing waits. */
static inline uint64_t nudge_queue_next(const struct nudge_queue *q, uint64_t after)
{
	return q->n ? q->h[q->head] + after : 0;
}

/* Nudges per CPU in a burst, above the sustained --max-nudge-rate. */
#define BARRIERD_NUDGE_BURST 4

/*
 * A thread's start, a CAS handshake with nudger_start: the thread moves STARTING to SETUP before
 * anything else, the start gives up on it by moving STARTING to ABANDONED (then it leaves at
 * once, having run nothing), and SETUP always ends in READY or FAILED within microseconds.
 */
enum { NUDGE_STARTING = 0, NUDGE_SETUP, NUDGE_READY, NUDGE_FAILED, NUDGE_ABANDONED };

/*
 * Everything a nudge thread touches is here, in the heap array, never in struct nudger: a thread
 * the stop could not join (kept off its CPU) may still run while the process exits, and the array
 * is then never freed.
 */
struct nudge_cpu {
	int cpu;
	bool started; /* main thread only: the thread exists and has not been joined */
	pthread_t thread;
	uint32_t state; /* __atomic, futex: NUDGE_* */
	uint32_t stop;	/* __atomic: leave at the next wake */
	bool lost;	/* __atomic: its last try to return to its CPU failed (cpuset?) */
	uint32_t word;	/* __atomic: bumped by each nudge; the thread sleeps while unchanged */
	struct rate_limit limit; /* main thread only */
};

struct nudger {
	uint64_t ncpu;
	struct nudge_cpu *cpu;
	bool stopped; /* main thread only: nudger_stop ran */
};

/*
 * Start one thread per CPU of the ncpu that we may run on now (a CPU offline at the start, or
 * outside the daemon's cpuset, gets none and is never nudged), each pinned to its CPU at
 * SCHED_FIFO `priority`, at most `rate` nudges per second sustained.  Threads drop their own
 * privileges before they sleep; call before the seccomp filter (installed with TSYNC, it covers
 * them).  A thread that cannot run within a second (a SCHED_FIFO 99 task on its CPU) is given
 * up, logged, and never nudged.  0, or a negative errno (EPERM: no permission for SCHED_FIFO,
 * which a nudge needs to preempt the CPU's task).
 */
int nudger_start(struct nudger *n, uint64_t ncpu, int priority, uint64_t rate);
/* Has CPU c a thread of ours that a nudge can wake (ready, not stopped)? */
bool nudger_can(const struct nudger *n, uint64_t c);
/* And is that thread on its CPU (its last return to it did not fail)? */
bool nudger_serves(const struct nudger *n, uint64_t c);
/*
 * Nudge CPU c now, unless its rate limit holds it back: then *next (if not NULL) is lowered to
 * when it would allow one.  True if sent.
 */
bool nudger_nudge(struct nudger *n, uint64_t c, uint64_t now, uint64_t *next);
/* Stop every thread; each is waited for at most 100 ms in all (one kept off its CPU is left). */
void nudger_stop(struct nudger *n);

#endif
