/* SPDX-License-Identifier: MIT */
/*
 * Direct evidence (DESIGN rule 11): a set of the daemon's slots and links, crediting CPUs from
 * it (lib/direct.c), and the sets' lifetime (lib/direct_sets.c).
 */
#ifndef BARRIERD_LIB_DIRECT_H
#define BARRIERD_LIB_DIRECT_H

#include "bpf_obj.h"
#include "handle.h"

/* The daemon's slots and links, as received on its socket (DESIGN rule 11). */
struct bd_direct {
	const struct barrierd_slot *slots; /* read-only MAP_SHARED of the frozen map */
	size_t len;
	uint64_t generation; /* the file's generation of the daemon that sent them */
	unsigned fork_gen;   /* bd_fork_gen when fetched: a forked child fetches its own */
	/* each descriptor's identity: its BPF_OBJ_GET_INFO_BY_FD head (type, id, ...) */
	uint32_t ids[1 + BARRIERD_SLOTS_MAX_LINKS][BD_OBJ_HEAD_WORDS];
	unsigned nfds; /* the map's descriptor, then every link's: held until close */
	int fds[1 + BARRIERD_SLOTS_MAX_LINKS];
};

/*
 * Credit from d every CPU in left[] (ncpu bits) that the slots show passed ns stamp T, and
 * clear its bit; calls the observer for each.  Returns how many CPUs stay set, or UINT64_MAX
 * (nothing credited) without a live daemon or a known time-namespace offset.
 */
uint64_t bd_direct_credit(const struct barrierd *b, const struct bd_direct *d, uint64_t T,
			  unsigned long *left, uint64_t *stamped);

/*
 * Has every CPU in the set (all CPUs if set is NULL) passed ns stamp T, by direct credit or
 * by the trusted published values (the global value, then the per-CPU ones)?  1 or 0; -1 if
 * the handle has no slots to use (the caller judges by the file alone).  left, if not NULL,
 * gets the CPUs that direct credit did not cover (ncpu bits).  *clock_only (if not NULL) is
 * set when every CPU passed by idle or own-CPU credit alone: judged by r > T, both readings
 * of this process's clock converted with the same offset, so a time-namespace move before
 * the stamp cannot make that judgement early (no stamp or published time was compared).
 */
int bd_direct_passed(const struct barrierd *b, uint64_t T, const unsigned long *set, size_t nbits,
		     unsigned long *left, bool *clock_only);

/* ---- the sets' lifetime (lib/direct_sets.c) ---------------------------------------------- */

/* A read section of one set: what bd_direct_get gave, for bd_direct_put. */
struct bd_direct_ref {
	int cur;      /* 1 + the set's index, 0: none */
	unsigned gen; /* bd_fork_gen at entry: the section counts in that process's tally */
};

/*
 * The set to credit from, inside a read section (no thread frees it until bd_direct_put), or
 * NULL (no section open).  Never blocks.  A set found unusable is retired, and sets no longer
 * in use are dropped once no section reads them, by whichever call gets the lock first.
 */
const struct bd_direct *bd_direct_get(const struct barrierd *b, struct bd_direct_ref *ref);
void bd_direct_put(const struct barrierd *b, const struct bd_direct_ref *ref);

/* A call that credits nothing from the slots (a vtime wait): drop sets that are gone. */
void bd_direct_tidy(const struct barrierd *b);

/*
 * May the set be credited from now: is the file marked running (not stopped) in the
 * generation it came with, and was it fetched by this process (not a parent's, after a fork)?
 * A policy (a stopped or replaced daemon's tracer is let go), not soundness.  A set that fails
 * it is never used again: it is dropped.
 */
bool bd_direct_usable(const struct barrierd *b, const struct bd_direct *d);

/*
 * direct_busy, as a trylock that a forked child takes over: true if taken.  The unlock drops
 * again (bd_direct_reap) while a call that found the lock taken asked for it (direct_want).
 */
bool bd_direct_lock(struct barrierd *b);
void bd_direct_unlock(struct barrierd *b);

/*
 * Under the lock: retire the set in use if it is unusable, and drop every other set that no
 * read section holds.  Returns true if a usable set stays in use.
 */
bool bd_direct_reap(struct barrierd *b);

/*
 * Under the lock, after bd_direct_reap returned false: publish d as the set in use.  0, or
 * -EBUSY with d untouched (every place holds a set still read: try again later).
 */
int bd_direct_install(struct barrierd *b, struct bd_direct *d);

/*
 * Unmap one set, close its descriptors (those still ours, and no number that a set in b's
 * places holds) and free it.  Under the lock, d out of b's places.
 */
void bd_direct_release(const struct barrierd *b, struct bd_direct *d);

/* Release every set (barrierd_close: no call runs concurrently). */
void bd_direct_free(struct barrierd *b);

#endif
