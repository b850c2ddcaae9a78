/* SPDX-License-Identifier: MIT */
/*
 * The futex wait's pieces, shared by its files only: lib/wait.c (the entry points and the
 * wait's steps), lib/wait_ring.c (when to ring, the ring, the look before it) and
 * lib/wait_sleep.c (the futex sleeps).
 */
#ifndef BARRIERD_LIB_WAIT_PARTS_H
#define BARRIERD_LIB_WAIT_PARTS_H

#include "handle.h"

#define SLICE_NS (10 * 1000000LL) /* longest sleep between liveness re-checks */

/* What a wait waits for. */
enum target_kind { T_NS, T_VTIME, T_CPUS };

struct target {
	enum target_kind kind;
	uint64_t value;
	const unsigned long *set; /* T_CPUS: a cpu_set_t as bits */
	size_t nbits;
};

static inline int in_set(const struct target *t, uint64_t c)
{
	return t->kind != T_CPUS || bd_in_set(t->set, t->nbits, c);
}

static inline const uint64_t *cpu_word(const struct barrierd *b, const struct target *t, uint64_t c)
{
	return t->kind == T_VTIME ? &b->hdr->per_cpu[c].last_interrupt_vtime
				  : &b->hdr->per_cpu[c].last_interrupt_ns;
}

static inline const uint64_t *global_word(const struct barrierd *b, const struct target *t)
{
	return t->kind == T_VTIME ? &b->hdr->last_interrupt_vtime : &b->hdr->last_interrupt_ns;
}

/* lib/wait.c: has the target passed, by the file's values or direct evidence?  1 or 0. */
int bd_wait_passed(const struct barrierd *b, const struct target *t);

/* ---- lib/wait_ring.c ---------------------------------------------------------------------- */

/* Ring before this turn's sleep?  docs/PROTOCOL.md §6.8: one comparison with served_ns. */
bool bd_wait_need_ring(const struct barrierd *b, const struct target *t);

/*
 * Ring, re-ringing for a short bounded window while nobody hears it.  1 when heard (or the
 * target passed meanwhile), 0 when every ring was lost.
 */
int bd_wait_ring(const struct barrierd *b, const struct target *t);

/*
 * Before the wait's first ring: bd_wait_passed, repeated for a bounded time on a handle that
 * credits from the slots.  1 when the target passed, 0 when not or without slots.
 */
int bd_wait_look(const struct barrierd *b, const struct target *t);

/* ---- lib/wait_sleep.c --------------------------------------------------------------------- */

/*
 * Sleep until a word this wait watches changes (its low half differs from snap_global, loaded
 * before the turn's last check, or a lagging CPU's word from its load here) or slice_ns ends.
 */
void bd_wait_sleep(const struct barrierd *b, const struct target *t, uint32_t snap_global,
		   int64_t slice_ns);

/* The daemon is gone: sleep until its flags or heartbeat change, or slice_ns ends. */
void bd_wait_sleep_stale(const struct barrierd *b, uint32_t snap_flags, uint32_t snap_hb,
			 int64_t slice_ns);

#endif
