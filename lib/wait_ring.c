// SPDX-License-Identifier: MIT
/*
 * When a wait rings the doorbell, the ring itself, and the look at the slots before it.  These
 * decide when evidence is gathered, never what counts: every success still comes from
 * bd_wait_passed (docs/DESIGN.md rule 11 for the slots, §6.6 for the file).
 */
#include "doorbell.h"
#include "timens.h"
#include "wait_parts.h"

#include <sched.h>

#define RERING_WINDOW_NS (200 * 1000LL) /* how long to keep re-ringing (bounded spin) */
#define LOOK_NS (30 * 1000LL)		/* how long to look at the slots before the first ring */

/*
 * docs/PROTOCOL.md §6.8.  An ns or CPU-set wait rings iff the file has the doorbell and its
 * stamp is above served_ns: the daemon promises that a wait whose stamp is at or below it is
 * served without a further ring (every CPU that lags it either signals the daemon at its next
 * event, or gets a credit pass the daemon schedules itself).  S is a hint for when to ring,
 * never evidence: a wrong S only delays the wait until the daemon's heartbeat fold.  Without
 * FEAT_SERVED the daemon promises nothing, so S reads as 0 and every wait rings.  A vtime
 * target rings at every turn: S is a time, and the ring is what advances vtime for busy CPUs.
 *
 * Loaded after the turn's snapshot of the global word (wait.c): if the service S promises
 * comes after that snapshot, its publication fails the sleep's compare or wakes it.
 */
bool bd_wait_need_ring(const struct barrierd *b, const struct target *t)
{
	const struct barrierd_ext *x = bd_ext(b);
	uint64_t flags, served;

	if (!x)
		return false;
	flags = bd_load(&b->hdr->flags);
	if (!(flags & BARRIERD_FEAT_DOORBELL))
		return false; /* no daemon thread listens: a ring would only cost us */
	if (t->kind == T_VTIME)
		return true;
	served = flags & BARRIERD_FEAT_SERVED ? bd_load(&x->served_ns) : 0;
	return t->value > served;
}

/*
 * A ring that no daemon thread hears is lost (FUTEX_WAKE returns 0), so re-ring for a short,
 * bounded window while it keeps returning 0 and the barrier has not passed.  A lost ring does
 * not raise served_ns, so the next turn rings again as well.  A vtime wait rings once: it rings
 * at every turn anyway, and where rings are lost because the doorbell sits out its rate limit,
 * a window at every 1 ms turn would spin away a fifth of the waiter's CPU.
 */
int bd_wait_ring(const struct barrierd *b, const struct target *t)
{
	uint64_t start = bd_clock_raw();

	for (int i = 0;; i++) {
		int r = bd_ring(b);

		if (r > 0)
			return 1;
		if (r < 0 || bd_wait_passed(b, t))
			return r < 0 ? 0 : 1;
		if (t->kind == T_VTIME)
			return 0;
		if (bd_clock_raw() - start > RERING_WINDOW_NS)
			return 0;
		if (i < 8)
			__builtin_ia32_pause();
		else
			sched_yield();
	}
}

/*
 * A CPU that holds a wait back on an idle machine is mostly one running something for a few
 * microseconds (a kernel thread, a timer's work): its next switch stamps its slot, or it goes
 * idle, and either is direct evidence.  The doorbell's way takes a pass and a wake-up, and the
 * ring itself can cost the caller that much: the daemon's doorbell and main threads run at
 * SCHED_FIFO, so where one shares the caller's CPU the ring's FUTEX_WAKE hands that CPU to the
 * daemon until its answer is done (about 200 us measured).  So look first: check again for up
 * to LOOK_NS before the wait's first ring, pausing between checks.  Never yielding: a yield on
 * a loaded CPU can last a whole time slice, and a loaded call must pay at most LOOK_NS, once.  The
 * check is bd_wait_passed, unchanged: the look adds no kind of evidence, only moments to take it
 * at.  Only with slots: the file's values come with a FUTEX_WAKE anyway.
 */
int bd_wait_look(const struct barrierd *b, const struct target *t)
{
	uint64_t end;

	if (t->kind == T_VTIME || !barrierd_direct(b))
		return 0;
	end = bd_clock_raw() + LOOK_NS;
	for (;;) {
		if (bd_wait_passed(b, t))
			return 1;
		if (bd_clock_raw() >= end)
			return 0;
		__builtin_ia32_pause();
	}
}
