// SPDX-License-Identifier: MIT
/* Stamps and the no-syscall check: the client side of rules 4 and 5. */
#include "direct.h"
#include "handle.h"
#include "published.h"
#include "timens.h"

BDLIB_EXPORT uint64_t barrierd_stamp_ns(const struct barrierd *b)
{
	/*
	 * Rule 5: MFENCE makes every earlier store of this thread globally visible; LFENCE keeps
	 * the clock read (RDTSC in the vDSO) from being performed before the MFENCE completes
	 * (the SDM's sequence; a locked instruction alone does not order RDTSC).  Only then the
	 * clock: the stamp is later than the moment our stores became visible.
	 */
	bd_stamp_fence();
	/*
	 * Host time: our CLOCK_MONOTONIC minus this namespace's offset (read at open and after a
	 * fork).  An offset that could not be known, or a retired handle (INT64_MIN), makes a
	 * stamp in the far future, which no published value can pass.
	 */
	int64_t off;
	uint64_t now;
	unsigned seq;

	/*
	 * Offset and clock from one moment: if another thread changed the offset meanwhile (a
	 * namespace move noticed), take both again.  LFENCE keeps the second load of the
	 * sequence from being performed before the clock read.
	 */
	do {
		seq = __atomic_load_n(&b->timens_seq, __ATOMIC_ACQUIRE);
		off = bd_timens_current(b);
		now = bd_clock_raw();
		bd_lfence();
	} while (__atomic_load_n(&b->timens_seq, __ATOMIC_ACQUIRE) != seq);

	if (off == INT64_MIN)
		return UINT64_MAX - 1;
	return now - (uint64_t)off;
}

BDLIB_EXPORT uint64_t barrierd_stamp_vtime(const struct barrierd *b)
{
	const struct barrierd_header *h;

	/*
	 * Rule 4/5: our stores are visible before we read vtime V, so any event that loaded a
	 * vtime above V from .bss ran after the daemon published it, after our load, after our
	 * stores.  The fence comes before every load, the handle's too (check_disasm.sh).
	 */
	bd_mfence();
	h = bd_hdr(b);
	/* No file yet (attach later): no vtime, and a stamp that only the fallback serves. */
	return h ? bd_load(&h->vtime) : UINT64_MAX;
}

BDLIB_EXPORT bool barrierd_passed(const struct barrierd *b, uint64_t stamp_ns)
{
	/*
	 * Strictly greater: a value equal to the stamp is not evidence.  valid_after is open_ns,
	 * or UINT64_MAX once a namespace move retired the handle (lib/timens.c); after a fork,
	 * false until the child has learnt its offset (its first stamp, wait or request).
	 */
	int r;

	if (!bd_hdr(b) || stamp_ns <= __atomic_load_n(&b->valid_after, __ATOMIC_ACQUIRE) ||
	    bd_timens_stale_fork(b))
		return false;
	/* Direct evidence (DESIGN rule 11): the slots, then what the daemon published. */
	r = bd_direct_passed(b, stamp_ns, NULL, 0, NULL, NULL);
	if (r >= 0)
		return r;
	return bd_trusted(b, &b->hdr->last_interrupt_ns, 0) > stamp_ns;
}

BDLIB_EXPORT bool barrierd_passed_vtime(const struct barrierd *b, uint64_t vtime)
{
	return bd_hdr(b) && bd_trusted(b, &b->hdr->last_interrupt_vtime, 1) > vtime;
}
