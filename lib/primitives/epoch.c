// SPDX-License-Identifier: MIT
/*
 * Epochs whose readers execute no fence and no locked instruction (include/barrierd_reclaim.h;
 * the argument is docs/PRIMITIVES.md §2).  A reader's section is: load the global epoch, store
 * it in its record (enter), its loads, store 0 (exit).  The writer unlinks, then synchronizes:
 * a locked increment of the global epoch to E, a barrierd barrier, then every record must
 * show 0 or an epoch of at least E before what was unlinked is freed.  The barrier replaces the
 * store-load fence each reader would otherwise need between its enter store and its loads.
 */
#include "handle.h"
#include "reclaim.h"

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
	uint64_t owner;		/* __atomic: bd_owner_self() of the registering thread */
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
	/*
	 * The retire side, under the mutex: the retired objects, and a spare buffer (a
	 * reclaimed batch's) for the list to restart on once a writer has detached it.
	 */
	pthread_mutex_t lock;
	struct bd_retired_list retired, spare;
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
	/* The batch's room up front: retire() allocates only while batches are being reclaimed. */
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
						__ATOMIC_RELAXED)) {
			/*
			 * Before the thread's first enter: a scan that loads an epoch this thread
			 * stored, then the owner, sees this owner (stores in order, F1; loads in
			 * order, F2).
			 */
			__atomic_store_n(&r->owner, bd_owner_self(), __ATOMIC_RELEASE);
			return &r->pub;
		}
	}
	r = aligned_alloc(128, sizeof(*r));
	if (!r)
		return NULL;
	memset(r, 0, sizeof(*r));
	r->pub.active = 0;
	r->pub.global = &e->global;
	r->in_use = 1;
	r->owner = bd_owner_self();
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
		/*
		 * A section of a thread this process does not have (a forked child's copy of
		 * another thread's record): it never ends here, and reads nothing of ours.  The
		 * owner is loaded after the epoch: an epoch stored by the record's present owner
		 * comes with its owner id (see register).
		 */
		if (!bd_owner_here(__atomic_load_n(&r->owner, __ATOMIC_ACQUIRE)))
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

/*
 * The domain whose free functions this thread is running (NULL: none).  A free function that
 * retires on the same domain only queues (a reclaim from there would recurse into the free
 * functions, and the caller's own batch is not finished); one that reclaims gets -EDEADLK.
 */
static __thread const struct barrierd_epoch *freeing;

/*
 * Synchronize and free the batch the caller detached.  Outside the mutex, so that a reader
 * that stays in its section blocks this writer only, and so that a free function runs with no
 * lock held.  Several writers may do so at once, each with its own batch: every object in a
 * batch was unlinked before its retire() call, which appended it under the mutex; the unlinks
 * were visible before that call released the mutex (stores in order, F1), so before the
 * detaching writer took it, so before the increment of its own synchronize, which is all §2's
 * argument needs.  Other writers' synchronizes neither help nor hinder it.
 */
static int reclaim_batch(struct barrierd_epoch *e, struct bd_retired_list *batch)
{
	int requeued;
	const struct barrierd_epoch *outer = freeing;
	int ret = barrierd_epoch_synchronize(e, -1);

	if (!ret) {
		freeing = e;
		for (size_t i = 0; i < batch->n; i++)
			batch->v[i].fn(batch->v[i].ptr);
		freeing = outer;
		batch->n = 0;
	}
	/*
	 * On failure the objects go back on the list: they stay retired, the next call retries.
	 * With no memory to put them back they are leaked (never freed under a reader), and the
	 * caller hears -ENOMEM.
	 */
	pthread_mutex_lock(&e->lock);
	requeued = bd_retired_requeue(&e->retired, &e->spare, batch);
	pthread_mutex_unlock(&e->lock);
	return ret ? ret : requeued;
}

BDLIB_EXPORT int barrierd_epoch_retire(struct barrierd_epoch *e, void *ptr, void (*fn)(void *))
{
	struct bd_retired_list batch = {0};
	int ret;

	if (!e || !fn)
		return -EINVAL;
	/*
	 * One mutex on the slow side, never on the read side, held only to append and detach.
	 * The call whose object fills the batch takes the whole list and reclaims it after
	 * releasing the mutex.  Once ptr is on the list this call returns 0, whatever the
	 * reclaim does: a failed synchronize leaves it retired for the next call (or for an
	 * explicit reclaim, which reports the error), so a nonzero return always means "ptr
	 * was not taken", and a caller that frees it then cannot free it twice.
	 */
	pthread_mutex_lock(&e->lock);
	ret = bd_retired_push(&e->retired, ptr, fn);
	if (ret || e->retired.n < e->batch || freeing == e) {
		pthread_mutex_unlock(&e->lock);
		return ret;
	}
	bd_retired_detach(&e->retired, &e->spare, &batch);
	pthread_mutex_unlock(&e->lock);
	(void)reclaim_batch(e, &batch);
	return 0;
}

BDLIB_EXPORT int barrierd_epoch_reclaim(struct barrierd_epoch *e)
{
	struct bd_retired_list batch = {0};

	if (!e)
		return -EINVAL;
	if (freeing == e)
		return -EDEADLK;
	pthread_mutex_lock(&e->lock);
	if (e->retired.n)
		bd_retired_detach(&e->retired, &e->spare, &batch);
	pthread_mutex_unlock(&e->lock);
	/* Nothing retired (here; other writers may be reclaiming theirs): nothing to wait for. */
	return batch.n ? reclaim_batch(e, &batch) : 0;
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
	/*
	 * Again while free functions retired more on this domain meanwhile (bounded: a free
	 * function that retires forever is the caller's loop).
	 */
	for (int i = 0; i < 16 && barrierd_epoch_reclaim(e) == 0 && e->retired.n; i++)
		;
	for (r = e->head; r; r = next) {
		next = r->next;
		free(r);
	}
	free(e->retired.v);
	free(e->spare.v);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
