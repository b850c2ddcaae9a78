/* SPDX-License-Identifier: MIT */
/*
 * barrierd_reclaim.h - memory reclamation on barrierd (libbarrierd.so.1, LIBBARRIERD_1.1):
 * epochs and hazard pointers whose readers execute no fence and no atomic instruction.
 *
 * Both are the classic schemes with the reader's store-load fence moved to the writer, as an
 * asymmetric barrier: the writer unlinks, then takes a barrierd barrier, then looks at what
 * readers published.  A reader store the writer does not see after the barrier was made after
 * that reader's CPU serialised past the stamp, so the reader's later loads see the unlink
 * (docs/PRIMITIVES.md has the arguments, one per scheme).  x86-TSO only, as all of barrierd.
 *
 * Domains are opaque.  A record is a reader's: one per thread, registered once, used only by
 * its thread for reads.  The fields the inline read side touches are ABI (below).
 *
 * fork(): in the child, the records of the parent's other threads (which the child does not
 * have) hold nothing: their sections and hazard slots are ignored; the forking thread's record
 * and the child's own threads' count as usual.  Objects retired before the fork are on both
 * processes' lists, and each frees its copy with fn: a free function whose effect reaches
 * beyond the process (shared memory, another process) runs twice; reclaim before fork().
 */
#ifndef BARRIERD_RECLAIM_H
#define BARRIERD_RECLAIM_H

#include <barrierd.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- epochs -------------------------------------------------------------------------------- */

struct barrierd_epoch;

/* A reader's record.  ABI: active first, then the domain's global epoch word. */
struct barrierd_epoch_record {
	uint64_t active;	/* 0: outside a read section; else the epoch loaded at enter */
	const uint64_t *global; /* the domain's epoch counter (never 0) */
};

/*
 * A domain over handle b (which must outlive it; NULL: the barrier is membarrier(GLOBAL)).
 * batch: retired objects held before retire() reclaims by itself (0: 64).  NULL on ENOMEM.
 */
struct barrierd_epoch *barrierd_epoch_new(struct barrierd *b, unsigned batch);
/* Reclaim what is still retired (a final synchronize), then free.  No reader may be inside. */
void barrierd_epoch_free(struct barrierd_epoch *e);
/* The calling thread's record (allocated; NULL on ENOMEM).  Unregister before the thread ends. */
struct barrierd_epoch_record *barrierd_epoch_register(struct barrierd_epoch *e);
void barrierd_epoch_unregister(struct barrierd_epoch *e, struct barrierd_epoch_record *r);

/*
 * Read side: two plain loads and a plain store; no fence, no locked instruction.  The objects
 * the section loaded may be used until exit.  Sections do not nest: an inner enter overwrites
 * the outer epoch and an inner exit stores 0 while the outer section is still reading.  For the
 * same reason they are not async-signal safe on one record: a signal handler's enter/exit on
 * the interrupted thread's record leaves it at 0 under the interrupted section, whose objects
 * may then be freed.  A handler that reads needs a record of its own, or must not read.
 */
static inline void barrierd_epoch_enter(struct barrierd_epoch_record *r)
{
	__atomic_store_n(&r->active, __atomic_load_n(r->global, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	/* The compiler keeps the section's loads after the store; x86 needs nothing more. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void barrierd_epoch_exit(struct barrierd_epoch_record *r)
{
	/* Stores are not reordered with older loads (x86-TSO): the section's loads are done. */
	__atomic_store_n(&r->active, 0, __ATOMIC_RELEASE);
}

/*
 * Wait until every reader that may have seen memory unlinked before this call has left its
 * read section: advance the epoch, take a barrier, wait for every record that shows an older
 * epoch.  timeout_ns < 0: no deadline, and then a reader that never leaves its section blocks
 * the call for ever (as it blocks every retire that synchronizes, below).  Takes no lock: may
 * run in several threads at once.  0, -ETIMEDOUT, or the barrier's error.
 */
int barrierd_epoch_synchronize(struct barrierd_epoch *e, int64_t timeout_ns);
/*
 * Free ptr with fn(ptr) once no reader can hold it (ptr already unlinked).  Batched: the call
 * whose ptr fills the batch takes the whole list, and synchronizes (no deadline) and frees it;
 * the other calls only append.  A mutex is held only to append and to take the list, never
 * while waiting or freeing: a reader that never leaves its section blocks the caller that
 * synchronizes, without a deadline, but not the other callers, which append meanwhile (and may
 * take and wait for a batch of their own).  So at most a batch is on the list, plus one batch
 * per caller synchronizing.  fn runs in that caller, with no lock held; a retire on the same
 * domain from inside fn only appends (the next call outside reclaims it), a reclaim there
 * returns -EDEADLK.  Never inside a read section of the calling thread (the synchronize would
 * wait for the caller itself, for ever).
 *
 * Returns 0 once ptr is taken, whatever became of the batch: if the synchronize fails (no live
 * daemon and no fallback), the objects stay retired, the list grows past the batch, and the
 * next retire tries again; barrierd_epoch_reclaim() reports the error.  Any other return means
 * ptr was NOT taken and still belongs to the caller: -ENOMEM (the list could not grow),
 * -EINVAL (no domain or no fn).
 */
int barrierd_epoch_retire(struct barrierd_epoch *e, void *ptr, void (*fn)(void *));
/*
 * Synchronize now (no deadline) and free everything retired before the call and not already
 * taken by another caller.  0 (also when nothing was retired), the synchronize's error (the
 * objects stay retired), -ENOMEM (the synchronize failed and there was no memory to put the
 * objects back: they are leaked, never freed under a reader), -EDEADLK from inside one of the
 * domain's free functions, -EINVAL.  The -EDEADLK guard knows the innermost domain being freed
 * only: a free function of one domain that reclaims another, whose free function reclaims the
 * first, is not refused (no lock is held: it recurses).
 */
int barrierd_epoch_reclaim(struct barrierd_epoch *e);

/* ---- hazard pointers ---------------------------------------------------------------------- */

#define BARRIERD_HP_SLOTS 4

struct barrierd_hp;

/* A reader's record.  ABI: the slots first. */
struct barrierd_hp_record {
	void *hp[BARRIERD_HP_SLOTS]; /* protected pointers, NULL: none */
};

/* As barrierd_epoch_new: a domain over b, batch retired objects per scan (0: 64). */
struct barrierd_hp *barrierd_hp_new(struct barrierd *b, unsigned batch);
/* A final scan, then free; what a slot still holds (or all, if the barrier fails) leaks. */
void barrierd_hp_free(struct barrierd_hp *d);
struct barrierd_hp_record *barrierd_hp_register(struct barrierd_hp *d);
void barrierd_hp_unregister(struct barrierd_hp *d, struct barrierd_hp_record *r);

/*
 * Load *src and protect what it points to in slot: publish, re-load, until both agree.  Plain
 * stores and loads: the writer's barrier before its scan stands in for the fence classic
 * hazard pointers need between the publication and the re-load.
 */
static inline void *barrierd_hp_protect(struct barrierd_hp_record *r, unsigned slot,
					void *const *src)
{
	void *p = __atomic_load_n(src, __ATOMIC_ACQUIRE);

	for (;;) {
		void *q;

		__atomic_store_n(&r->hp[slot], p, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		q = __atomic_load_n(src, __ATOMIC_ACQUIRE);
		if (q == p)
			return p;
		p = q;
	}
}

/*
 * The object protected in slot may be used until the slot's next store: this, or a protect.
 * Slots are independent plain words, so protections nest as long as each uses its own slot,
 * and a signal handler may protect and clear in a slot the interrupted code does not use (a
 * handler's protect in the interrupted code's slot overwrites its protection).
 */
static inline void barrierd_hp_clear(struct barrierd_hp_record *r, unsigned slot)
{
	__atomic_store_n(&r->hp[slot], NULL, __ATOMIC_RELEASE);
}

/*
 * Free ptr with fn(ptr) once no hazard pointer holds it (ptr already unlinked, never linked
 * again).  Every batch-th call (beyond what the latest scan kept) takes the list, a barrier,
 * scans every record, frees what no slot holds and puts the rest back (at most one object per
 * slot), so at most batch plus the slots of every record are held, plus one batch per caller
 * scanning.  The mutex, concurrent callers and fn as for barrierd_epoch_retire(); a stalled
 * reader never blocks a scan (it only keeps what its slots hold).
 *
 * Returns 0 once ptr is taken, whatever became of the scan: if the barrier fails, or there is
 * no memory for the scan's copy of the slots, nothing is freed, the objects stay retired for
 * the next retire, and barrierd_hp_reclaim() reports the error.  Any other return means ptr
 * was NOT taken and still belongs to the caller: -ENOMEM (the list could not grow), -EINVAL.
 */
int barrierd_hp_retire(struct barrierd_hp *d, void *ptr, void (*fn)(void *));
/*
 * Barrier, scan and free now.  0 (also when nothing was retired), the barrier's error or
 * -ENOMEM (the copy of the slots: nothing freed, the objects stay retired; or no memory to put
 * back what a slot still holds: those objects are leaked, never freed), -EDEADLK from inside
 * one of the domain's free functions (the innermost domain being freed only, as for epochs),
 * -EINVAL.
 */
int barrierd_hp_reclaim(struct barrierd_hp *d);

#ifdef __cplusplus
}
#endif

#endif /* BARRIERD_RECLAIM_H */
