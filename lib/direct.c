// SPDX-License-Identifier: MIT
/*
 * Direct evidence: crediting CPUs from the BPF slots themselves (docs/CLIENT-EVIDENCE.md,
 * rule 11).  The handle holds the frozen slots map and every program link (lib/slots_fetch.c),
 * so the programs stay attached, and the idle words live, for as long as it can load them
 * (lib/direct_sets.c: a set is released only once no read section holds it).
 */
#include "direct.h"
#include "handle.h"
#include "published.h"
#include "timens.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

/*
 * Inside the read section of d: the observer may not fork, close b or call the library on b
 * (include/barrierd.h), so nothing it does releases the set this loop still loads from.
 */
static inline void observe(const struct barrierd *b, uint64_t T, uint64_t c, int kind,
			   uint64_t value)
{
	if (b->observer)
		b->observer(b->observer_arg, T, (unsigned)c, kind, value);
}

/*
 * tests/audit/check_disasm.sh reads this function's machine code: the clock call, then
 * LFENCE, before the CPU read and the slot loads.  Keep the sequence here, not in a helper.
 */
uint64_t bd_direct_credit(const struct barrierd *b, const struct bd_direct *d, uint64_t T,
			  unsigned long *left, uint64_t *stamped)
{
	const size_t bits = 8 * sizeof(unsigned long);
	uint64_t r = 0, remaining = 0;
	bool after = false;
	int self = -1;

	/*
	 * r: our clock in host time.  Only a known offset will do (after a fork the child has
	 * not learnt its own yet: stamps only, no system call here).
	 */
	if (bd_timens_stale_fork(b))
		return UINT64_MAX;
	{
		int64_t off = bd_timens_current(b);
		uint64_t raw = bd_clock_raw();

		/*
		 * Rule 11: LFENCE, so that no later load (the idle words) and no CPU read is
		 * performed before the clock read completed (F5): everything below is later
		 * than r.  An idle word that reads IDLE, or the CPU we are on, is evidence
		 * only for a T below r: T may be any value (another thread's, the future).
		 */
		bd_lfence();
		/*
		 * And the daemon that handed out the slots still beats: not soundness (held
		 * links keep the slots live without it) but a defence if the application closed
		 * our descriptors behind our back (docs/CLIENT.md), and no tracer is relied on
		 * for longer than a dead daemon's liveness bound.
		 */
		if (off != INT64_MIN && bd_live(b, raw - (uint64_t)off)) {
			r = raw - (uint64_t)off;
			after = r > T;
		} else {
			return UINT64_MAX; /* no credit at all: the caller judges by the file */
		}
	}
	/*
	 * The CPU we run on, read after r: we were on it at a moment after T.  Read before the
	 * stamp, or before r, we may have left it before T, and another thread may have run
	 * there since without any event after T.  rseq's cpu_id (or the vDSO): no system call.
	 */
	if (after)
		self = sched_getcpu();
	for (uint64_t w = 0; w * bits < b->ncpu; w++) {
		unsigned long m = left[w];

		while (m) {
			uint64_t c = w * bits + (uint64_t)__builtin_ctzl(m);
			const struct barrierd_slot *s = &d->slots[c];
			uint64_t st;

			m &= m - 1;
			if (c >= b->ncpu)
				break;
			/*
			 * Idle and own-CPU credit first, the stamp last: all three are evidence
			 * alone, but the first two compare only clock readings of this call (r and,
			 * for barrierd_barrier(), its T), which is what lets that barrier skip the
			 * time-namespace move check (CLIENT-EVIDENCE §10).  A CPU that was busy a
			 * moment ago and is idle now has both; either is true of it.
			 *
			 * Rule 2 from the client's side: its next BUSY xchg follows this load.
			 */
			if (after &&
			    __atomic_load_n(&s->idle, __ATOMIC_ACQUIRE) == BARRIERD_SLOT_IDLE) {
				left[w] &= ~(1UL << (c % bits));
				observe(b, T, c, BARRIERD_CREDIT_IDLE, r);
				continue;
			}
			if (after && (int64_t)c == self) {
				left[w] &= ~(1UL << (c % bits));
				observe(b, T, c, BARRIERD_CREDIT_SELF, r);
				continue;
			}
			/* Rule 1: the xchg of a clock value above T was performed. */
			st = __atomic_load_n(&s->stamp, __ATOMIC_ACQUIRE);
			if (st > T) {
				left[w] &= ~(1UL << (c % bits));
				(*stamped)++;
				observe(b, T, c, BARRIERD_CREDIT_STAMP, st);
				continue;
			}
			remaining++;
		}
	}
	return remaining;
}

/* bd_direct_passed, inside a read section of d (lib/direct_sets.c). */
static int passed_by(const struct barrierd *b, const struct bd_direct *d, uint64_t T,
		     const unsigned long *set, size_t nbits, unsigned long *left_out,
		     bool *clock_only)
{
	const size_t bits = 8 * sizeof(unsigned long);
	unsigned long left[BD_CPU_WORDS], filed[BD_CPU_WORDS];
	size_t words = (b->ncpu + bits - 1) / bits;
	uint64_t stamped = 0, remaining, nfiled = 0;
	/*
	 * A stamp the file already passed costs its few loads only: the global word first (the
	 * fresh stamp of barrierd_barrier(), which asks for clock_only, never has that).
	 */
	if (!clock_only && !set && bd_trusted(b, &b->hdr->last_interrupt_ns, 0) > T) {
		if (left_out)
			memset(left_out, 0, words * sizeof(long)); /* nothing is left */
		return 1;
	}
	/*
	 * CPUs the file already shows past T are not loaded from the slots: a slot's line is
	 * written by its CPU at every event, the file's per-CPU words only at passes.  They are
	 * checked as the file's values are (trusted: one running daemon), after the slots.
	 */
	memset(left, 0, words * sizeof(long));
	memset(filed, 0, words * sizeof(long));
	for (uint64_t c = 0; c < b->ncpu; c++) {
		if (set && !bd_in_set(set, nbits, c))
			continue;
		if (bd_load(&b->hdr->per_cpu[c].last_interrupt_ns) > T) {
			filed[c / bits] |= 1UL << (c % bits);
			nfiled++;
		} else {
			left[c / bits] |= 1UL << (c % bits);
		}
	}
	remaining = bd_direct_credit(b, d, T, left, &stamped);
	if (left_out)
		memcpy(left_out, left, words * sizeof(long));
	if (remaining == UINT64_MAX)
		return -1; /* no direct credit now (no live daemon): the file alone */
	if (remaining == 0 && nfiled == 0) {
		if (clock_only)
			*clock_only = stamped == 0;
		return 1;
	}
	/* Each source is valid alone (CLIENT-EVIDENCE §8): the rest may pass by the file. */
	if ((clock_only || set) && bd_trusted(b, &b->hdr->last_interrupt_ns, 0) > T)
		return 1;
	for (size_t w = 0; w < words; w++)
		filed[w] |= left[w];
	return bd_cpus_passed(b, filed, words * bits, T);
}

int bd_direct_passed(const struct barrierd *b, uint64_t T, const unsigned long *set, size_t nbits,
		     unsigned long *left_out, bool *clock_only)
{
	struct bd_direct_ref ref;
	const struct bd_direct *d;
	int r;

	if (clock_only)
		*clock_only = false;
	/* The set stays mapped, and its link held, until the section ends (bd_direct_put). */
	d = bd_direct_get(b, &ref);
	if (!d)
		return -1;
	r = passed_by(b, d, T, set, nbits, left_out, clock_only);
	bd_direct_put(b, &ref);
	return r;
}

BDLIB_EXPORT bool barrierd_direct(const struct barrierd *b)
{
	struct bd_direct_ref ref;
	const struct bd_direct *d;

	if (!b || !bd_hdr(b))
		return false;
	d = bd_direct_get(b, &ref);
	bd_direct_put(b, &ref);
	return d != NULL;
}

BDLIB_EXPORT int barrierd_set_credit_observer(struct barrierd *b, barrierd_credit_fn fn, void *arg)
{
	if (!b)
		return -EINVAL;
	b->observer_arg = arg;
	b->observer = fn;
	return 0;
}
