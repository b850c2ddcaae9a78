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
#include "internal.h"

#include <barrierd_reclaim.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* As lib/epoch.c's records: the reader's part first, two cache lines each. */
struct hp_rec {
	_Alignas(128) struct barrierd_hp_record pub;
	struct hp_rec *next; /* set before the record is pushed, never changed after */
	int in_use;	     /* __atomic: 1 from register to unregister */
};

struct barrierd_hp {
	/* Every record ever registered, newest first; never unlinked nor freed while d lives. */
	_Alignas(128) struct hp_rec *head;
	struct barrierd *b;
	unsigned batch;
	/* The retire side, under one mutex (never taken by readers). */
	pthread_mutex_t lock;
	struct bd_retired_list retired;
	size_t kept;	/* objects a slot still held at the latest scan */
	void **hazards; /* the scan's copy of the slots, sorted */
	size_t hcap;
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
						__ATOMIC_RELAXED))
			return &r->pub;
	}
	r = aligned_alloc(128, sizeof(*r));
	if (!r)
		return NULL;
	memset(r, 0, sizeof(*r));
	r->in_use = 1;
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
 * Copy every non-NULL slot into d->hazards, sorted; how many.  The records are those of one
 * load of head (the list only grows at its head, and a record's next never changes), counted
 * first so that the copy has room.  -ENOMEM when it cannot have.
 */
static long collect_locked(struct barrierd_hp *d)
{
	const struct hp_rec *first = __atomic_load_n(&d->head, __ATOMIC_ACQUIRE), *r;
	size_t nrec = 0, n = 0;

	for (r = first; r; r = r->next)
		nrec++;
	if (nrec * BARRIERD_HP_SLOTS > d->hcap) {
		size_t cap = nrec * BARRIERD_HP_SLOTS * 2;
		void **h = realloc(d->hazards, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		d->hazards = h;
		d->hcap = cap;
	}
	for (r = first; r; r = r->next)
		for (unsigned i = 0; i < BARRIERD_HP_SLOTS; i++) {
			void *p = __atomic_load_n(&r->pub.hp[i], __ATOMIC_ACQUIRE);

			if (p)
				d->hazards[n++] = p;
		}
	if (n > 1) /* (no records: hazards may still be NULL, which qsort must not get) */
		qsort(d->hazards, n, sizeof(*d->hazards), cmp_ptr);
	return (long)n;
}

/* Barrier, scan, free what no slot holds.  Called with d->lock held. */
static int scan_locked(struct barrierd_hp *d)
{
	size_t keep = 0;
	long nh;
	int ret;

	if (!d->retired.n)
		return 0;
	/*
	 * Every retired object was unlinked before its retire() call, whose list entry was made
	 * under this mutex: those unlinks were visible before we took it (F1), so before the
	 * barrier's stamp T.  After the barrier every CPU has serialised past T: a publication
	 * the loads below do not see was made after its CPU's serialising point, and the
	 * validating load after it sees the unlink and fails (docs/PRIMITIVES.md §3).
	 */
	ret = bd_reclaim_barrier(d->b, -1);
	if (ret)
		return ret; /* nothing freed: the objects stay retired */
	nh = collect_locked(d);
	if (nh < 0)
		return (int)nh;
	/*
	 * Free functions run under the mutex: they must not call retire or reclaim on this domain
	 * (include/barrierd_reclaim.h).
	 */
	for (size_t i = 0; i < d->retired.n; i++) {
		struct bd_retired o = d->retired.v[i];

		if (nh && bsearch(&o.ptr, d->hazards, (size_t)nh, sizeof(*d->hazards), cmp_ptr))
			d->retired.v[keep++] = o;
		else
			o.fn(o.ptr);
	}
	d->retired.n = keep;
	d->kept = keep;
	return 0;
}

BDLIB_EXPORT int barrierd_hp_retire(struct barrierd_hp *d, void *ptr, void (*fn)(void *))
{
	int ret;

	if (!d || !fn)
		return -EINVAL;
	/*
	 * A scan every batch retirements beyond what the latest scan had to keep: objects still
	 * protected number at most the slots, so the list holds at most batch plus the slots of
	 * every record, and each scan has a batch of objects to free at least once their readers
	 * move on.  Concurrent retirers take turns on the mutex, as with epochs.
	 */
	pthread_mutex_lock(&d->lock);
	ret = bd_retired_push(&d->retired, ptr, fn);
	if (!ret && d->retired.n >= d->kept + d->batch)
		ret = scan_locked(d);
	pthread_mutex_unlock(&d->lock);
	return ret;
}

BDLIB_EXPORT int barrierd_hp_reclaim(struct barrierd_hp *d)
{
	int ret;

	if (!d)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	ret = scan_locked(d);
	pthread_mutex_unlock(&d->lock);
	return ret;
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
	pthread_mutex_lock(&d->lock);
	(void)scan_locked(d);
	pthread_mutex_unlock(&d->lock);
	for (r = d->head; r; r = next) {
		next = r->next;
		free(r);
	}
	free(d->retired.v);
	free(d->hazards);
	pthread_mutex_destroy(&d->lock);
	free(d);
}
