// SPDX-License-Identifier: MIT
/*
 * What epochs (epoch.c) and hazard pointers (hp.c) share on their slow side: the
 * barrier that stands in for their readers' fences, the list of retired objects, and the
 * sleep of a writer that waits for a reader.
 */
#include "fallback.h"
#include "handle.h"
#include "reclaim.h"
#include "timens.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Pauses a waiting writer polls before its first sleep. */
#define BD_RECLAIM_POLLS 64u

int bd_reclaim_barrier(struct barrierd *b, int64_t timeout_ns)
{
	/*
	 * No handle: membarrier(GLOBAL) is the same guarantee (every CPU serialised after the
	 * call began), paid for with the kernel's grace period instead of the daemon's evidence.
	 */
	if (!b)
		return bd_fallback_membarrier();
	return barrierd_barrier(b, timeout_ns);
}

int bd_retired_push(struct bd_retired_list *l, void *ptr, void (*fn)(void *))
{
	if (l->n == l->cap) {
		/*
		 * Only past the batch: after a failed barrier (the objects stay retired), or while
		 * hazard pointers hold retired objects.  Doubling keeps pushes amortised O(1).
		 */
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct bd_retired *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (struct bd_retired){.ptr = ptr, .fn = fn};
	return 0;
}

void bd_retired_detach(struct bd_retired_list *l, struct bd_retired_list *spare,
		       struct bd_retired_list *batch)
{
	*batch = *l;
	*l = *spare;
	l->n = 0;
	*spare = (struct bd_retired_list){0};
}

int bd_retired_requeue(struct bd_retired_list *l, struct bd_retired_list *spare,
		       struct bd_retired_list *batch)
{
	int ret = 0;

	if (batch->n && !l->n && l->cap <= batch->cap) {
		/* Nothing retired meanwhile: the batch becomes the list again, with no copy. */
		struct bd_retired_list t = *l;

		*l = *batch;
		*batch = t;
	} else if (batch->n) {
		if (l->cap - l->n < batch->n) {
			size_t cap = l->n + batch->n;
			struct bd_retired *v = realloc(l->v, cap * sizeof(*v));

			if (v) {
				l->v = v;
				l->cap = cap;
			}
		}
		if (l->cap - l->n >= batch->n) {
			memcpy(l->v + l->n, batch->v, batch->n * sizeof(*batch->v));
			l->n += batch->n;
		} else {
			ret = -ENOMEM;
		}
	}
	batch->n = 0;
	if (!spare->v && batch->v) {
		*spare = *batch;
	} else {
		free(batch->v);
	}
	*batch = (struct bd_retired_list){0};
	return ret;
}

uint64_t bd_reclaim_deadline(int64_t timeout_ns)
{
	return timeout_ns < 0 ? UINT64_MAX : bd_clock_raw() + (uint64_t)timeout_ns;
}

int64_t bd_reclaim_left(uint64_t deadline)
{
	uint64_t now;

	if (deadline == UINT64_MAX)
		return -1;
	now = bd_clock_raw();
	return now >= deadline ? 0 : (int64_t)(deadline - now);
}

int bd_reclaim_backoff(unsigned *step, uint64_t deadline)
{
	/*
	 * A reader inside its section holds the writer until it leaves.  Sections are usually
	 * far shorter than a sleep (whose timer slack alone is 50 us): first a bounded poll of
	 * BD_RECLAIM_POLLS pauses, a few microseconds in all, then sleeps from 1 us doubling to
	 * 1 ms, so that a long section costs the writer no CPU.  The readers never wake anyone:
	 * they only store, so the writer polls.
	 */
	uint64_t ns;
	int64_t left;
	struct timespec ts;

	if (*step < BD_RECLAIM_POLLS) {
		(*step)++;
		__builtin_ia32_pause();
		return 0;
	}
	left = bd_reclaim_left(deadline);
	if (left == 0)
		return -ETIMEDOUT;
	ns = 1000ULL << (*step - BD_RECLAIM_POLLS < 10 ? *step - BD_RECLAIM_POLLS : 10);
	if (left > 0 && (uint64_t)left < ns)
		ns = (uint64_t)left;
	if (*step < BD_RECLAIM_POLLS + 10)
		(*step)++;
	ts.tv_sec = (time_t)(ns / 1000000000ULL);
	ts.tv_nsec = (long)(ns % 1000000000ULL);
	nanosleep(&ts, NULL);
	return 0;
}

/*
 * Records across fork(): the child has only the thread that forked, and the other threads'
 * records, copied with the memory, would hold its writers for ever (an epoch shown for good)
 * or keep its objects (a slot never cleared).  A record names its thread by an id issued in
 * the process from one counter; in a child, the ids issued before the fork belong to threads
 * the child does not have, except the forking thread's.  Both set by the child's handler while
 * it is the only thread.
 */
static uint64_t owner_next;	/* __atomic: the last id issued */
static uint64_t owner_floor;	/* ids at or below: issued before this process was forked */
static uint64_t owner_survivor; /* the forking thread's id (0: it had none) */
static __thread uint64_t owner_self;

static void owner_after_fork_child(void)
{
	__atomic_store_n(&owner_floor, __atomic_load_n(&owner_next, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&owner_survivor, owner_self, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void owner_register_fork_handler(void)
{
	pthread_atfork(NULL, NULL, owner_after_fork_child);
}

uint64_t bd_owner_self(void)
{
	if (!owner_self)
		owner_self = __atomic_add_fetch(&owner_next, 1, __ATOMIC_RELAXED);
	return owner_self;
}

bool bd_owner_here(uint64_t id)
{
	return id > __atomic_load_n(&owner_floor, __ATOMIC_RELAXED) ||
	       id == __atomic_load_n(&owner_survivor, __ATOMIC_RELAXED);
}
