/* SPDX-License-Identifier: MIT */
/*
 * What epochs (epoch.c) and hazard pointers (hp.c) share on their slow side (retire.c).
 */
#ifndef BARRIERD_LIB_PRIMITIVES_RECLAIM_H
#define BARRIERD_LIB_PRIMITIVES_RECLAIM_H

#include "handle.h"

/* A retired object and the function that frees it. */
struct bd_retired {
	void *ptr;
	void (*fn)(void *);
};

/* A growable list of them; owned by a domain, under its mutex. */
struct bd_retired_list {
	struct bd_retired *v;
	size_t n, cap;
};

/* The barrier both schemes take: barrierd_barrier(b), or membarrier(GLOBAL) without b. */
int bd_reclaim_barrier(struct barrierd *b, int64_t timeout_ns);
/* Append (growing the list): 0 or -ENOMEM (nothing appended). */
int bd_retired_push(struct bd_retired_list *l, void *ptr, void (*fn)(void *));
/*
 * Under the domain's mutex: move l's objects to *batch, so that they are synchronized and freed
 * outside the mutex, and restart l on the spare buffer if there is one (pushes need not allocate).
 */
void bd_retired_detach(struct bd_retired_list *l, struct bd_retired_list *spare,
		       struct bd_retired_list *batch);
/*
 * Under the mutex: put what is left in batch (objects not freed) back on l, then keep batch's
 * buffer as the spare or free it.  0, or -ENOMEM: l could not grow, and the objects left are
 * leaked (never freed under a reader, never handed back to a caller).
 */
int bd_retired_requeue(struct bd_retired_list *l, struct bd_retired_list *spare,
		       struct bd_retired_list *batch);
/* A raw-clock deadline timeout_ns from now (UINT64_MAX for < 0), and what is left of it. */
uint64_t bd_reclaim_deadline(int64_t timeout_ns);
int64_t bd_reclaim_left(uint64_t deadline);
/*
 * The next step of a writer's wait for a reader: a pause for the first few steps, then sleeps
 * from 1 us doubling to 1 ms, never past deadline.  0, or -ETIMEDOUT.
 */
int bd_reclaim_backoff(unsigned *step, uint64_t deadline);
/* This thread's owner id for the records it registers (issued on first use; never 0). */
uint64_t bd_owner_self(void);
/*
 * May the thread with this id run in this process?  False only for a thread of a process this
 * one was forked from, other than the thread that forked it: its record is nobody's here.
 */
bool bd_owner_here(uint64_t id);

#endif
