// SPDX-License-Identifier: MIT
/*
 * Hazard pointers whose readers execute no fence and no locked instruction
 * (include/barrierd_reclaim.h; the argument is docs/PRIMITIVES.md §3).  A reader publishes the
 * pointer it loaded in a slot of its record with a plain store, loads the source again, and
 * uses the object only if both loads agree.  The writer unlinks, retires, and every batch
 * takes a barrierd barrier, then reads every slot and frees what no slot holds.  The barrier
 * replaces the store-load fence each reader would otherwise need between its publication and
 * its second load.
 */
#include "handle.h"
#include "reclaim.h"

#include <barrierd_reclaim.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* As epoch.c's records: the reader's part first, two cache lines each. */
struct hp_rec {
	_Alignas(128) struct barrierd_hp_record pub;
	struct hp_rec *next; /* set before the record is pushed, never changed after */
	int in_use;	     /* __atomic: 1 from register to unregister */
	uint64_t owner;	     /* __atomic: bd_owner_self() of the registering thread */
};

struct barrierd_hp {
	/* Every record ever registered, newest first; never unlinked nor freed while d lives. */
	_Alignas(128) struct hp_rec *head;
	struct barrierd *b;
	unsigned batch;
	/* The retire side, under one mutex (never taken by readers); spare as in epoch.c. */
	pthread_mutex_t lock;
	struct bd_retired_list retired, spare;
	size_t kept; /* objects a slot still held at the latest scan */
};

BDLIB_EXPORT struct barrierd_hp *barrierd_hp_new(struct barrierd *b, unsigned batch)
{
	struct barrierd_hp *d = aligned_alloc(128, sizeof(*d));

	if (!d)
		return NULL;
	memset(d, 0, sizeof(*d));
	d->b = b;
	d->batch = batch ? batch : 64;
	d->retired.v = malloc(d->batch * sizeof(*d->retired.v));
	if (!d->retired.v) {
		free(d);
		return NULL;
	}
	d->retired.cap = d->batch;
	pthread_mutex_init(&d->lock, NULL);
	return d;
}

BDLIB_EXPORT struct barrierd_hp_record *barrierd_hp_register(struct barrierd_hp *d)
{
	struct hp_rec *r, *old;

	/* A record a thread unregistered first (its slots all NULL), claimed with a locked CAS. */
	for (r = __atomic_load_n(&d->head, __ATOMIC_ACQUIRE); r; r = r->next) {
		int free_ = 0;

		if (!__atomic_load_n(&r->in_use, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&r->in_use, &free_, 1, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			/* Before the first protect: as in epoch.c, a slot comes with its owner.
			 */
			__atomic_store_n(&r->owner, bd_owner_self(), __ATOMIC_RELEASE);
			return &r->pub;
		}
	}
	r = aligned_alloc(128, sizeof(*r));
	if (!r)
		return NULL;
	memset(r, 0, sizeof(*r));
	r->in_use = 1;
	r->owner = bd_owner_self();
	/*
	 * A scan that loaded head before this locked CAS misses the record, harmlessly: the CAS
	 * is performed after that load, itself after the scan's barrier, so after the unlinks of
	 * everything that scan may free were visible.  Every load this thread performs after the
	 * CAS (F3), every protect's validating load among them, sees those unlinks: no slot of
	 * this record can hold such an object through a successful protect.
	 */
	old = __atomic_load_n(&d->head, __ATOMIC_RELAXED);
	do
		r->next = old;
	while (!__atomic_compare_exchange_n(&d->head, &old, r, true, __ATOMIC_ACQ_REL,
					    __ATOMIC_RELAXED));
	return &r->pub;
}

BDLIB_EXPORT void barrierd_hp_unregister(struct barrierd_hp *d, struct barrierd_hp_record *pub)
{
	struct hp_rec *r = (struct hp_rec *)pub;

	(void)d;
	if (!r)
		return;
	for (unsigned i = 0; i < BARRIERD_HP_SLOTS; i++)
		__atomic_store_n(&r->pub.hp[i], NULL, __ATOMIC_RELEASE);
	__atomic_store_n(&r->in_use, 0, __ATOMIC_RELEASE);
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;

	return x < y ? -1 : x > y;
}

/*
 * Copy every non-NULL slot into a new array, sorted; how many in *n.  The records are those of
 * one load of head (the list only grows at its head, and a record's next never changes),
 * counted first so that the copy has room.  0 (*out NULL if no record) or -ENOMEM.
 */
static int collect(const struct barrierd_hp *d, void ***out, size_t *n)
{
	const struct hp_rec *first = __atomic_load_n(&d->head, __ATOMIC_ACQUIRE), *r;
	size_t nrec = 0;
	void **h;

	*out = NULL;
	*n = 0;
	for (r = first; r; r = r->next)
		nrec++;
	if (!nrec)
		return 0;
	h = malloc(nrec * BARRIERD_HP_SLOTS * sizeof(*h));
	if (!h)
		return -ENOMEM;
	for (r = first; r; r = r->next)
		for (unsigned i = 0; i < BARRIERD_HP_SLOTS; i++) {
			void *p = __atomic_load_n(&r->pub.hp[i], __ATOMIC_ACQUIRE);

			/*
			 * A slot of a thread this process does not have (a forked child's copy):
			 * nobody here dereferences it.  The owner after the slot, as in
			 * epoch.c's wait_record.
			 */
			if (p && bd_owner_here(__atomic_load_n(&r->owner, __ATOMIC_ACQUIRE)))
				h[(*n)++] = p;
		}
	if (*n > 1)
		qsort(h, *n, sizeof(*h), cmp_ptr);
	*out = h;
	return 0;
}

/* As epoch.c's: the domain whose free functions this thread runs. */
static __thread const struct barrierd_hp *freeing;

/*
 * Barrier, scan, free what no slot holds, for the batch the caller detached; outside the
 * mutex, so that the free functions run with no lock held and several writers may scan at
 * once, each its own batch.  Every object in it was unlinked before its retire() call, which
 * appended it under the mutex: those unlinks were visible before that call released the mutex
 * (F1), so before this writer took it to detach, so before its barrier's stamp T.  After the
 * barrier every CPU has serialised past T: a publication the loads below do not see was made
 * after its CPU's serialising point, and the validating load after it sees the unlink and
 * fails (docs/PRIMITIVES.md §3).  What a slot still holds goes back on the list.
 */
static int scan_batch(struct barrierd_hp *d, struct bd_retired_list *batch)
{
	int requeued;
	const struct barrierd_hp *outer = freeing;
	size_t keep = 0, nh = 0;
	void **hz = NULL;
	int ret;

	ret = bd_reclaim_barrier(d->b, -1);
	if (!ret)
		ret = collect(d, &hz, &nh);
	if (!ret) {
		freeing = d;
		for (size_t i = 0; i < batch->n; i++) {
			struct bd_retired o = batch->v[i];

			if (nh && bsearch(&o.ptr, hz, nh, sizeof(*hz), cmp_ptr))
				batch->v[keep++] = o;
			else
				o.fn(o.ptr);
		}
		freeing = outer;
		batch->n = keep;
	}
	free(hz);
	/* Failed (nothing freed) or kept: the objects stay retired for the next scan. */
	pthread_mutex_lock(&d->lock);
	if (!ret) /* (after a failure the next retire retries, as if nothing had been kept) */
		d->kept = batch->n;
	/* With no memory to put them back, kept objects are leaked (never freed): -ENOMEM. */
	requeued = bd_retired_requeue(&d->retired, &d->spare, batch);
	pthread_mutex_unlock(&d->lock);
	return ret ? ret : requeued;
}

BDLIB_EXPORT int barrierd_hp_retire(struct barrierd_hp *d, void *ptr, void (*fn)(void *))
{
	struct bd_retired_list batch = {0};
	int ret;

	if (!d || !fn)
		return -EINVAL;
	/*
	 * A scan every batch retirements beyond what the latest scan had to keep: objects still
	 * protected number at most the slots, so the list holds at most batch plus the slots of
	 * every record (plus the batches writers are scanning), and each scan has a batch of
	 * objects to free at least once their readers move on.  As with epochs, the mutex is held
	 * only to append and detach, and once ptr is on the list the call returns 0: a failed
	 * scan (barrier, or no memory for the copy of the slots) leaves it retired, to be
	 * retried by the next retire or reported by reclaim.
	 */
	pthread_mutex_lock(&d->lock);
	ret = bd_retired_push(&d->retired, ptr, fn);
	if (ret || d->retired.n < d->kept + d->batch || freeing == d) {
		pthread_mutex_unlock(&d->lock);
		return ret;
	}
	bd_retired_detach(&d->retired, &d->spare, &batch);
	pthread_mutex_unlock(&d->lock);
	(void)scan_batch(d, &batch);
	return 0;
}

BDLIB_EXPORT int barrierd_hp_reclaim(struct barrierd_hp *d)
{
	struct bd_retired_list batch = {0};

	if (!d)
		return -EINVAL;
	if (freeing == d)
		return -EDEADLK;
	pthread_mutex_lock(&d->lock);
	if (d->retired.n)
		bd_retired_detach(&d->retired, &d->spare, &batch);
	pthread_mutex_unlock(&d->lock);
	return batch.n ? scan_batch(d, &batch) : 0;
}

BDLIB_EXPORT void barrierd_hp_free(struct barrierd_hp *d)
{
	struct hp_rec *r, *next;

	if (!d)
		return;
	/*
	 * A final scan, barrier included; what a slot still holds then, or everything if the
	 * barrier fails, is leaked rather than freed under a reader.
	 */
	/* Again while free functions retired more meanwhile and the scans still free some. */
	for (size_t i = 0, n = SIZE_MAX; i < 16 && d->retired.n < n; i++) {
		n = d->retired.n;
		if (barrierd_hp_reclaim(d) != 0)
			break;
	}
	for (r = d->head; r; r = next) {
		next = r->next;
		free(r);
	}
	free(d->retired.v);
	free(d->spare.v);
	pthread_mutex_destroy(&d->lock);
	free(d);
}
