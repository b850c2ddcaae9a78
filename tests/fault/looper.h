/* SPDX-License-Identifier: MIT */
/*
 * looper.h - threads that loop barrierd_barrier() on one handle while a test breaks the daemon
 * under them, and what the fault suite asserts about their calls afterwards.
 *
 * Every success is kept with the clock readings that bracket its call (t0 before the call, so
 * the library's own stamp is at or after t0; t1 after it): "no early success" is then checked
 * after the fact against the instants the test recorded (the daemon dead, stopped, restarted),
 * with no assumption about how fast the library is.  Failures are only counted, by errno: a
 * library that returns -ESTALE at once makes millions of them.
 */
#ifndef BARRIERD_LOOPER_H
#define BARRIERD_LOOPER_H

#include <barrierd.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

struct span {
	uint64_t t0, t1; /* the clock before and after a call that returned 0 */
};

struct looper;

struct lthread {
	struct looper *l;
	pthread_t tid;
	_Atomic uint64_t completed;  /* calls returned so far: read by the test while running */
	_Atomic uint64_t last_ok_t0; /* t0 of the latest success: read while running */
	uint64_t ok, estale, etimedout, other;
	int other_err;	   /* the latest unexpected return value */
	uint64_t max_call; /* the longest call, ns */
	struct span *succ; /* every success, in order */
	size_t nsucc, cap;
	int oom; /* successes were lost: the checks cannot be trusted */
};

struct looper {
	struct barrierd *b;
	int64_t timeout_ns;
	int n;
	atomic_int stop;
	atomic_int done; /* threads that left their loop */
	struct lthread *t;
};

/* Start n threads (small stacks: 1000 of them fit) looping barrierd_barrier(b, timeout_ns). */
int looper_start(struct looper *l, struct barrierd *b, int n, int64_t timeout_ns);
/*
 * Ask every thread to stop after its current call and join them.  A thread still inside the
 * library guard_s seconds after its call's timeout is hung: -ETIMEDOUT, and the threads are
 * left running (the test fails, the process exits).
 */
int looper_stop(struct looper *l, int guard_s);
void looper_free(struct looper *l);

/* Successes whose call started after `after` and returned before `before`. */
uint64_t looper_early(const struct looper *l, uint64_t after, uint64_t before);
/* Threads that have a success whose call started after `after` (safe while running). */
int looper_threads_passed_after(const struct looper *l, uint64_t after);
/* Sums over the threads, and a one-line summary on stdout. */
void looper_totals(const struct looper *l, struct lthread *sum, const char *what);

#endif
