// SPDX-License-Identifier: MIT
/*
 * Epochs whose readers execute no fence and no locked instruction (include/barrierd_reclaim.h;
 * the argument is docs/PRIMITIVES.md §2).  A reader's section is: load the global epoch, store
 * it in its record (enter), its loads, store 0 (exit).  The writer unlinks, then synchronizes:
 * a locked increment of the global epoch to E, a barrierd barrier, then every record must
 * show 0 or an epoch of at least E before what was unlinked is freed.  The barrier replaces the
 * store-load fence each reader would otherwise need between its enter store and its loads.
 */
#include "internal.h"

#include <barrierd_reclaim.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/*
 * A record as the library keeps it: the reader's part first (its address is the record the
 * caller gets), then the list link and the in-use flag, which only the slow side touches.
 * Records take two cache lines of their own each, so that no two readers' stores, nor the
 * global epoch, share a line (or the adjacent line the prefetcher pairs with it).
 */
struct epoch_rec {
	_Alignas(128) struct barrierd_epoch_record pub;
	struct epoch_rec *next; /* set before the record is pushed, never changed after */
	int in_use;		/* __atomic: 1 from register to unregister */
};

struct barrierd_epoch {
	/* The global epoch: starts at 1 (0 in a record means "outside"), only grows. */
	_Alignas(128) uint64_t global;
	/*
	 * Every record ever registered, newest first.  Pushed with a locked CAS; never unlinked
	 * nor freed while the domain lives, so a scan may walk it at any time without a lock.
	 */
	_Alignas(128) struct epoch_rec *head;
	struct barrierd *b;
	unsigned batch;
	/* The retire side: the retired objects, and one retirer at a time. */
	pthread_mutex_t lock;
	struct bd_retired_list retired;
};

BDLIB_EXPORT struct barrierd_epoch *barrierd_epoch_new(struct barrierd *b, unsigned batch)
{
	struct barrierd_epoch *e = aligned_alloc(128, sizeof(*e));

	if (!e)
		return NULL;
	memset(e, 0, sizeof(*e));
	e->global = 1;
	e->b = b;
	e->batch = batch ? batch : 64;
	/* The batch's room up front: retire() allocates only after a failed synchronize. */
	e->retired.v = malloc(e->batch * sizeof(*e->retired.v));
	if (!e->retired.v) {
		free(e);
		return NULL;
	}
	e->retired.cap = e->batch;
	pthread_mutex_init(&e->lock, NULL);
	return e;
}

BDLIB_EXPORT struct barrierd_epoch_record *barrierd_epoch_register(struct barrierd_epoch *e)
{
	struct epoch_rec *r, *old;

	/*
	 * A record a thread unregistered first: claimed with a locked CAS, so two threads never
	 * get the same one.  Its active word is 0 (unregister left it so), and a scan that reads
	 * it meanwhile sees an idle reader, which it is.
	 */
	for (r = __atomic_load_n(&e->head, __ATOMIC_ACQUIRE); r; r = r->next) {
		int free_ = 0;

		if (!__atomic_load_n(&r->in_use, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&r->in_use, &free_, 1, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			return &r->pub;
	}
	r = aligned_alloc(128, sizeof(*r));
	if (!r)
		return NULL;
	memset(r, 0, sizeof(*r));
	r->pub.active = 0;
	r->pub.global = &e->global;
	r->in_use = 1;
	/*
	 * The push.  A scan that loaded head before this CAS does not see the record, and need
	 * not: the CAS is a locked instruction, performed after that scan's load of head, itself
	 * after the scan's increment of the epoch was globally visible; every load this thread
	 * performs after the CAS (DESIGN fact F3), its first enter's load of the epoch among
	 * them, sees that increment or a later one.  So this reader's sections all start at
	 * the scan's epoch or later, the case the scan lets pass anyway (docs/PRIMITIVES.md §2).
	 */
	old = __atomic_load_n(&e->head, __ATOMIC_RELAXED);
	do
		r->next = old;
	while (!__atomic_compare_exchange_n(&e->head, &old, r, true, __ATOMIC_ACQ_REL,
					    __ATOMIC_RELAXED));
	return &r->pub;
}

BDLIB_EXPORT void barrierd_epoch_unregister(struct barrierd_epoch *e,
					    struct barrierd_epoch_record *pub)
{
	struct epoch_rec *r = (struct epoch_rec *)pub;

	(void)e;
	if (!r)
		return;
	/* Outside a section (as after exit), then free for the next register to claim. */
	__atomic_store_n(&r->pub.active, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&r->in_use, 0, __ATOMIC_RELEASE);
}

/*
 * Wait until the record shows no section begun before the increment to E: 0 (outside), or an
 * epoch of at least E.  A reader that leaves and enters again between two looks shows such an
 * epoch (docs/PRIMITIVES.md §2, "Progress"), so a busy reader does not starve the writer.
 */
static int wait_record(const struct epoch_rec *r, uint64_t E, uint64_t deadline)
{
	unsigned step = 0;

	for (;;) {
		uint64_t a = __atomic_load_n(&r->pub.active, __ATOMIC_ACQUIRE);

		if (a == 0 || a >= E)
			return 0;
		if (bd_reclaim_backoff(&step, deadline))
			return -ETIMEDOUT;
	}
}

BDLIB_EXPORT int barrierd_epoch_synchronize(struct barrierd_epoch *e, int64_t timeout_ns)
{
	uint64_t deadline = bd_reclaim_deadline(timeout_ns), E;
	const struct epoch_rec *r;
	int ret;

	/*
	 * The caller's unlinks come before this locked add in its program order, and a locked
	 * instruction drains the store buffer first (F3): they are visible before the increment,
	 * and a reader that loads E or later also sees them (stores become visible in order, F1;
	 * loads are performed in order, F2).
	 */
	E = __atomic_add_fetch(&e->global, 1, __ATOMIC_SEQ_CST);
	/*
	 * The barrier: every CPU serialises after its stamp T, which is later than the
	 * increment.  An enter store not visible to the loads below was made after its CPU's
	 * serialising point, and the section's loads after it see the unlinks.
	 */
	ret = bd_reclaim_barrier(e->b, bd_reclaim_left(deadline));
	if (ret)
		return ret;
	/*
	 * The scan: loads after the barrier's (x86 keeps loads in order).  Records pushed after
	 * this load of head are covered by the argument at the push.
	 */
	for (r = __atomic_load_n(&e->head, __ATOMIC_ACQUIRE); r; r = r->next) {
		ret = wait_record(r, E, deadline);
		if (ret)
			return ret;
	}
	return 0;
}

/* Synchronize and free every object retired so far.  Called with e->lock held. */
static int reclaim_locked(struct barrierd_epoch *e)
{
	size_t n = e->retired.n;
	int ret;

	if (!n)
		return 0;
	/*
	 * Every object in the list was unlinked before its retire() call, and that call made
	 * the list entry under this mutex: its unlinks were visible before it released the
	 * mutex (stores in order, F1), so before we took it, so before the increment below.
	 */
	ret = barrierd_epoch_synchronize(e, -1);
	if (ret)
		return ret; /* they stay retired: the next call tries again */
	/*
	 * The free functions run under the mutex: other retirers wait (they would otherwise add
	 * to what we are freeing), and a free function must not call retire or reclaim on this
	 * domain (include/barrierd_reclaim.h).
	 */
	for (size_t i = 0; i < n; i++)
		e->retired.v[i].fn(e->retired.v[i].ptr);
	e->retired.n = 0;
	return 0;
}

BDLIB_EXPORT int barrierd_epoch_retire(struct barrierd_epoch *e, void *ptr, void (*fn)(void *))
{
	int ret;

	if (!e || !fn)
		return -EINVAL;
	/*
	 * One mutex on the slow side, never on the read side.  Concurrent retirers take turns;
	 * the one whose object fills the batch synchronizes and frees while the others sleep on
	 * the mutex, so no more than a batch is ever held (unless synchronize fails: then the
	 * list grows, and the objects stay retired for the next attempt).
	 */
	pthread_mutex_lock(&e->lock);
	ret = bd_retired_push(&e->retired, ptr, fn);
	if (!ret && e->retired.n >= e->batch)
		ret = reclaim_locked(e);
	pthread_mutex_unlock(&e->lock);
	return ret;
}

BDLIB_EXPORT int barrierd_epoch_reclaim(struct barrierd_epoch *e)
{
	int ret;

	if (!e)
		return -EINVAL;
	pthread_mutex_lock(&e->lock);
	ret = reclaim_locked(e);
	pthread_mutex_unlock(&e->lock);
	return ret;
}

BDLIB_EXPORT void barrierd_epoch_free(struct barrierd_epoch *e)
{
	struct epoch_rec *r, *next;

	if (!e)
		return;
	/*
	 * No reader is inside (the caller's promise), but one may have read the unlinked objects
	 * in a section that ended just now, from a CPU that has not serialised since: the final
	 * reclaim still takes its barrier.  If even that fails, the objects leak rather than
	 * being freed under a reader.
	 */
	pthread_mutex_lock(&e->lock);
	(void)reclaim_locked(e);
	pthread_mutex_unlock(&e->lock);
	for (r = e->head; r; r = next) {
		next = r->next;
		free(r);
	}
	free(e->retired.v);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
