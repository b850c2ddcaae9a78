// SPDX-License-Identifier: MIT
/*
 * The lifetime of a handle's slot sets (CLIENT-EVIDENCE.md §9): a set of a daemon that is gone
 * is dropped, its mapping unmapped and its link closed, once no call can still load from it.
 * The library has no thread: the calls themselves drop what is gone, at their first entry
 * after the daemon changed, and barrierd_close() drops the rest.
 *
 * Readers are the calls that credit from a set (lib/direct.c), in any thread, with no lock.
 * Each set has a tally of the read sections open in it, tagged with the fork generation that
 * counted them.  A section:
 *
 *	c = load(direct_cur); tally[c] += 1; load(direct_cur) == c, or undo and start over;
 *	... loads of set c ...; tally[c] -= 1.
 *
 * A writer, under direct_busy, retires the set in use by storing another direct_cur, and then
 * frees a set that is not in use only when its tally reads 0.  What orders what: the reader's
 * increment (a locked instruction) and its second load of direct_cur, against the writer's
 * store of direct_cur and its later load of the tally (a store-load pair, made sequentially
 * consistent by storing with a locked XCHG: both sides' first access is a locked instruction,
 * which no later load passes).  In that single order either the increment comes
 * first, and the writer's load of the tally sees it, so the set is kept until the matching
 * decrement; or the writer's store comes first, and the reader's second load sees the new
 * direct_cur and backs out without touching the set.  A reader that backs out or leaves a
 * set only ever lowers a tally it raised, so a tally of 0 read after the store means no
 * section of that set is open, nor can open.  The decrement is a release and the tally's
 * load an acquire, so every load of a section is done before the set's unmapping.
 *
 * A set's place may be filled again while a late reader still raises its tally: that reader
 * reads nothing of the place before its second load of direct_cur, which is the writer's
 * release store (the place was filled first), or another value, and then it backs out.
 *
 * A set kept for a section is dropped after that section ends, by some call, even if the
 * handle is never called again: the section's end lowers the tally and then loads direct_cur,
 * while the writer retires the set by storing direct_cur and then loads every kept set's
 * tally (bd_direct_reap, which also stores direct_old and sweeps until nothing more drops):
 * another store-load pair, sequentially consistent, so either the writer sees the tally at 0
 * and drops the set, or the section's end sees its set retired.  Then it asks for a drop: it stores
 *direct_want and tries the lock; the holder's unlock stores direct_busy and then loads direct_want
 *(a third pair), so either the section's end takes the lock and drops the set itself, or the holder
 *sees the request and drops again before it leaves (bd_direct_unlock).  A holder clears
 *direct_want, with a locked instruction, before its first load of a tally: a request it clears is
 *one whose tally it then sees lowered. Only a section that met a retirement asks (at its end, or
 *when it backs out), and a call that finds the set in use unusable asks once before it is retired:
 *the requests, and so the unlock's loop, are bounded by the retirements, however often other
 *threads call.
 *
 * Fork: a child has only the forking thread, but the tallies it inherited count the parent's
 * sections too, which never end in the child.  A tally tagged with another fork generation
 * counts for nothing, and the first section of the child's generation restarts it at 1.  A
 * writer empties a set's place before it releases the set: a child forked while a thread of
 * the parent releases one (munmap() and fork() take the same mm lock; free() and fork() the
 * allocator's) finds the place empty, or the set whole, never half released; at worst it
 * keeps a set it never reads.
 */
#include "bpf_obj.h"
#include "direct.h"
#include "handle.h"
#include "timens.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

bool bd_direct_usable(const struct barrierd *b, const struct bd_direct *d)
{
	uint64_t f;

	/*
	 * Not soundness (the slots need no daemon): a stopped daemon's tracer is let go, and a
	 * restarted daemon's slots are fetched (bd_direct_refresh) instead of an old run's.
	 */
	f = bd_load(&b->hdr->flags);
	if (!(f & BARRIERD_FLAG_RUNNING) || (f & BARRIERD_FLAG_STOPPED) ||
	    bd_load(&b->hdr->generation) != d->generation)
		return false;
	/*
	 * A forked child does not use its parent's set: a child that closes every descriptor it
	 * inherited (close_range() when it daemonises) would otherwise load slots whose link
	 * nobody holds once the parent exits.  It fetches its own (bd_direct_refresh).
	 */
	return d->fork_gen == __atomic_load_n(&bd_fork_gen, __ATOMIC_ACQUIRE);
}

/* Close fd only if it still holds the object we received there (head: its record's head). */
static void close_if_ours(int fd, const uint32_t head[BD_OBJ_HEAD_WORDS])
{
	uint32_t now[BD_OBJ_HEAD_WORDS];

	if (bd_obj_head(fd, now) == 0 && memcmp(now, head, sizeof(now)) == 0)
		close(fd);
}

/* Does a set in b's places hold descriptor number fd? */
static bool held_elsewhere(const struct barrierd *b, int fd)
{
	for (int i = 0; i < BD_DIRECT_SETS; i++) {
		const struct bd_direct *o = b->direct_sets[i];

		for (unsigned j = 0; o && j < o->nfds; j++)
			if (o->fds[j] == fd)
				return true;
	}
	return false;
}

void bd_direct_release(const struct barrierd *b, struct bd_direct *d)
{
	/*
	 * The mapping first, the links last: no load of these slots happens after the links
	 * that keep them live are gone (no read section holds the set).  A
	 * number is closed only while it still holds what we received there: a forked child
	 * that closed its inherited descriptors may have had the numbers reused since, by
	 * anything of the application's, or by another set of this handle, whose map and link
	 * have the very same identity when the same daemon sent both: such a number is that
	 * set's to close.
	 */
	munmap((void *)d->slots, d->len);
	for (unsigned j = 0; j < d->nfds; j++)
		if (!held_elsewhere(b, d->fds[j]))
			close_if_ours(d->fds[j], d->ids[j]);
	free(d);
}

/* The tally of sections of generation gen, from its word. */
static unsigned tally(uint64_t w, unsigned gen)
{
	return (unsigned)(w >> 32) == gen ? (unsigned)w : 0;
}

/* A section begins: a locked instruction, the first half of the store-load pair. */
static void tally_up(uint64_t *w, unsigned gen)
{
	uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED), n;

	do {
		n = (unsigned)(v >> 32) == gen ? v + 1 : ((uint64_t)gen << 32 | 1);
	} while (!__atomic_compare_exchange_n(w, &v, n, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
}

/*
 * A section ends: release, after its last load of the set; and a locked instruction, the
 * store half of the pair with the writer's second load of the tallies (bd_direct_reap).
 */
static void tally_down(uint64_t *w, unsigned gen)
{
	uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED);

	do {
		if ((unsigned)(v >> 32) != gen || !(unsigned)v)
			return; /* a parent's section, ended in a forked child: not counted here */
	} while (
	    !__atomic_compare_exchange_n(w, &v, v - 1, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
}

/*
 * The tallies are the handle's bookkeeping, not its meaning: calls taking a const handle
 * count their sections in them (the handle is always the library's own allocation).
 */
static uint64_t *tally_word(const struct barrierd *b, int cur)
{
	return (uint64_t *)&b->direct_readers[cur - 1];
}

/*
 * Under no lock: ask for a drop, then take the lock and drop, or leave it to the thread that
 * has the lock (its unlock sees the request, bd_direct_unlock).
 */
static void reap_now(const struct barrierd *b)
{
	/* Dropping what no call can use changes nothing a caller sees of the handle. */
	struct barrierd *m = (struct barrierd *)b;

	/* Sequentially consistent: the store half of the pair with the unlock's load of it. */
	__atomic_store_n(&m->direct_want, 1, __ATOMIC_SEQ_CST);
	if (!bd_direct_lock(m))
		return;
	bd_direct_reap(m);
	bd_direct_unlock(m);
}

static const struct bd_direct *enter(const struct barrierd *b, struct bd_direct_ref *ref)
{
	ref->gen = __atomic_load_n(&bd_fork_gen, __ATOMIC_ACQUIRE);
	for (;;) {
		int cur = __atomic_load_n(&b->direct_cur, __ATOMIC_SEQ_CST);

		ref->cur = cur;
		if (!cur)
			return NULL;
		tally_up(tally_word(b, cur), ref->gen);
		/* The second load: after the locked increment, so a retiring writer sees one. */
		if (__atomic_load_n(&b->direct_cur, __ATOMIC_SEQ_CST) == cur)
			return b->direct_sets[cur - 1];
		/*
		 * Retired under us: the writer may have seen our raise and kept the set for it.
		 * Once lowered, ask for the drop (bounded: one per retirement a call meets).
		 */
		tally_down(tally_word(b, cur), ref->gen);
		reap_now(b);
	}
}

void bd_direct_put(const struct barrierd *b, const struct bd_direct_ref *ref)
{
	if (!ref->cur)
		return;
	tally_down(tally_word(b, ref->cur), ref->gen);
	/*
	 * A set retired while this section read it may have been kept for it: drop it now, so
	 * that a handle nobody calls again does not keep it beside the one in use.  Sequentially
	 * consistent, after the decrement: if the set is still in use at this load, a later
	 * retirement stores direct_cur after it and then loads our lowered tally (bd_direct_reap),
	 * so no request is needed.  Its place cannot hold another set meanwhile: our raised tally
	 * kept it from being released.  So a section asks at most once, and only across a
	 * retirement: requests are bounded, and so is the unlock's loop.
	 */
	if (__atomic_load_n(&b->direct_cur, __ATOMIC_SEQ_CST) != ref->cur)
		reap_now(b);
}

bool bd_direct_lock(struct barrierd *b)
{
	/* Nonzero, and different in every forked child (as bd_ext_refresh's lock). */
	int mine = (int)((__atomic_load_n(&bd_fork_gen, __ATOMIC_ACQUIRE) << 1) | 1);
	int expected = 0;

	/*
	 * One thread at a time, and nobody waits for it.  The lock holds the holder's fork
	 * generation: a child forked while a thread of the parent held it takes it over.
	 */
	if (!__atomic_compare_exchange_n(&b->direct_busy, &expected, mine, false, __ATOMIC_SEQ_CST,
					 __ATOMIC_RELAXED) &&
	    (expected == mine ||
	     !__atomic_compare_exchange_n(&b->direct_busy, &expected, mine, false, __ATOMIC_SEQ_CST,
					  __ATOMIC_RELAXED)))
		return false;
	/*
	 * Every request made so far is served by this holder's reap: cleared with a locked
	 * instruction, so the clearing is done before the reap loads a tally, and a request
	 * stored after it stays for the unlock to see.
	 */
	__atomic_store_n(&b->direct_want, 0, __ATOMIC_SEQ_CST);
	return true;
}

void bd_direct_unlock(struct barrierd *b)
{
	for (;;) {
		/*
		 * The store half of the pair with a requester's store of direct_want and its
		 * lock attempt: sequentially consistent (a locked XCHG), so the load below is
		 * done after the lock is free.  Either the requester took the lock, or we see
		 * its request and drop again (a thread that has the lock by then does it).
		 */
		__atomic_store_n(&b->direct_busy, 0, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&b->direct_want, __ATOMIC_SEQ_CST) || !bd_direct_lock(b))
			return;
		bd_direct_reap(b);
	}
}

/*
 * Drop every set but the one in use (cur) that no section of generation gen holds; the count
 * of those kept.
 */
static unsigned sweep(struct barrierd *b, int cur, unsigned gen)
{
	unsigned old = 0;

	for (int i = 0; i < BD_DIRECT_SETS; i++) {
		struct bd_direct *d = b->direct_sets[i];

		if (!d || i + 1 == cur)
			continue;
		/* Acquire: pairs with the release of each section's end (its loads are done). */
		if (tally(__atomic_load_n(&b->direct_readers[i], __ATOMIC_SEQ_CST), gen)) {
			old++; /* a call still loads from it: that call's end drops it */
			continue;
		}
		/* The place first: a child forked during the release never releases it again. */
		__atomic_store_n(&b->direct_sets[i], NULL, __ATOMIC_RELAXED);
		bd_direct_release(b, d);
	}
	return old;
}

bool bd_direct_reap(struct barrierd *b)
{
	unsigned gen = __atomic_load_n(&bd_fork_gen, __ATOMIC_ACQUIRE), old, again;
	int cur = __atomic_load_n(&b->direct_cur, __ATOMIC_RELAXED); /* only we store it */

	if (cur && !bd_direct_usable(b, b->direct_sets[cur - 1])) {
		/*
		 * Retire it: the store half of the store-load pair.  Sequentially consistent
		 * (a locked XCHG): each tally below is loaded after this store is visible.
		 */
		__atomic_store_n(&b->direct_cur, 0, __ATOMIC_SEQ_CST);
		cur = 0;
	}
	/*
	 * The count stored (sequentially consistent: a locked XCHG), then the tallies loaded
	 * again, until a sweep drops nothing more: a section that ended before that store was
	 * visible, and so may have read direct_old as 0, is seen ended by the second sweep.
	 */
	old = sweep(b, cur, gen);
	for (;;) {
		__atomic_store_n(&b->direct_old, old, __ATOMIC_SEQ_CST);
		if (!old || (again = sweep(b, cur, gen)) == old)
			break;
		old = again;
	}
	return cur != 0;
}

int bd_direct_install(struct barrierd *b, struct bd_direct *d)
{
	for (int i = 0; i < BD_DIRECT_SETS; i++) {
		if (b->direct_sets[i])
			continue;
		b->direct_sets[i] = d;
		/* Release: a section that loads this value sees the place filled. */
		__atomic_store_n(&b->direct_cur, i + 1, __ATOMIC_SEQ_CST);
		return 0;
	}
	return -EBUSY;
}

const struct bd_direct *bd_direct_get(const struct barrierd *b, struct bd_direct_ref *ref)
{
	const struct bd_direct *d = enter(b, ref);
	/* Relaxed: only an early drop; the drop after a kept set's last section is put's. */
	bool old = __atomic_load_n(&b->direct_old, __ATOMIC_RELAXED) != 0;

	struct barrierd *m = (struct barrierd *)b; /* bookkeeping only, as in reap_now */

	if (d && bd_direct_usable(b, d)) {
		/*
		 * A set left over: drop it if the lock is free, asking nobody (ours is in use,
		 * never one that a reap drops).  Its last section's end asks, in put.
		 */
		if (old && bd_direct_lock(m)) {
			bd_direct_reap(m);
			bd_direct_unlock(m);
		}
		return d;
	}
	bd_direct_put(b, ref);
	ref->cur = 0;
	/*
	 * A daemon that is gone: retire its set at this call already (asking, if the lock is
	 * held: once retired, no call finds it here again, so the requests are bounded).
	 */
	if (d)
		reap_now(b);
	else if (old && bd_direct_lock(m)) {
		bd_direct_reap(m);
		bd_direct_unlock(m);
	}
	return NULL;
}

void bd_direct_tidy(const struct barrierd *b)
{
	struct bd_direct_ref ref;

	bd_direct_get(b, &ref);
	bd_direct_put(b, &ref);
}

void bd_direct_free(struct barrierd *b)
{
	/*
	 * barrierd_close() is not concurrent with any call: no section is open.  The place is
	 * emptied first, as in sweep(), for a fork() of another thread during the release.
	 */
	for (int i = 0; i < BD_DIRECT_SETS; i++) {
		struct bd_direct *d = b->direct_sets[i];

		__atomic_store_n(&b->direct_sets[i], NULL, __ATOMIC_RELAXED);
		if (d)
			bd_direct_release(b, d);
	}
	__atomic_store_n(&b->direct_cur, 0, __ATOMIC_RELAXED);
}
