// SPDX-License-Identifier: MIT
/*
 * Which published values count as evidence (DESIGN rules 9 and 10): only values a daemon of
 * ours published.  While the file is not marked running nobody of ours publishes, and a value
 * raised meanwhile (the original barrierd taking the file over) proves nothing: global ns
 * values count up to the stop snapshot, vtime and per-CPU values not at all.  "Running" means
 * the flag and a live heartbeat.
 *
 * The value and the flags are two loads, and a restart can fall between them.  The restarting
 * daemon removes foreign values (its reset), then bumps the generation, then sets RUNNING,
 * each a single ordered store; so a value loaded while the file was stopped, checked against
 * flags loaded after the restart, would be trusted although the reset has since removed it.
 * Hence a seqlock-style read: flags and generation before the value, flags and generation
 * after it, and the value counts as a running daemon's only if both show RUNNING (not STOPPED)
 * in the same generation.
 *
 * Every load below is an x86 load, and x86 does not reorder a load with older loads (DESIGN
 * fact F2), so program order is the order in which they are performed; bd_load() is an acquire
 * load, which keeps the compiler to that order too.
 */
#include "handle.h"
#include "published.h"
#include "timens.h"

/* The daemon state around a read. */
struct seq {
	uint64_t flags, gen;
};

static inline bool running(uint64_t f)
{
	return (f & BARRIERD_FLAG_RUNNING) && !(f & BARRIERD_FLAG_STOPPED);
}

/*
 * The flags, then the generation.  A starting daemon stores the generation before RUNNING, so
 * a generation loaded after a flags load that saw some daemon's RUNNING is at least that
 * daemon's generation.  The second read needs this order (below); the first takes the same.
 */
static inline void seq_read(const struct barrierd *b, struct seq *s)
{
	s->flags = bd_load(&b->hdr->flags);
	s->gen = bd_load(&b->hdr->generation);
}

/*
 * Were the loads made between the reads `before` and `after` made while one daemon of ours
 * ran?  Take a value V another writer stored while the file was stopped, and a load of it
 * between the two reads.  That writer stored V after the stopped flag was visible (it took
 * over after our daemon stopped), and the next daemon of ours overwrites V (its reset) before
 * it stores its generation and then RUNNING.  `before` was loaded before V: it saw STOPPED, or
 * the RUNNING of a daemon that stopped before V was stored, and then that daemon's generation
 * (the next one is stored only after the reset of V, which comes after our load of V).
 * `after` was loaded after V, so after the stopped flag: if it saw RUNNING, that is a later
 * daemon's, and the generation loaded after it is that later daemon's.  Either way false,
 * unless the generation repeats (below).
 */
static inline bool seq_running(const struct seq *before, const struct seq *after)
{
	return running(before->flags) && running(after->flags) && before->gen == after->gen;
}

/*
 * The generation can repeat: a file reset by something other than our daemon (whose reset
 * raises it), or a foreign writer that rewinds it, could let a later start publish a
 * generation a reader already saw, and a reset and a start between the two reads could look
 * like one run.  So the callers load the value(s) once more after `after`: if a daemon started
 * in between, its RUNNING (seen by `after`) was stored after its reset, and these loads come
 * after the reset too.  Within one run values only grow, so the second load never makes a
 * true barrier look unpassed.
 */

/*
 * A daemon killed with SIGKILL leaves the file marked running.  Its values stay true, but a
 * writer that comes after it (the original barrierd taking the file over) would be believed
 * for as long as the flag stays.  So "running" also needs a live heartbeat (the liveness rule
 * every waiter uses: BARRIERD_LIVENESS_PERIODS periods), checked after the value was loaded:
 * the daemon was alive less than that long before the load.  The window that remains, a
 * foreign write within those periods after a kill, is docs/DESIGN.md's (rule 10).  One vDSO
 * clock read; after a fork the callers learn the offset before they get here.
 */
static inline bool heartbeat_fresh(const struct barrierd *b)
{
	/*
	 * A forked child that has not learnt its offset yet would derive it here, with system
	 * calls: it trusts nothing until a wait does that (the safe side).  LFENCE: the clock is
	 * read after the value and heartbeat loads that the argument puts first.
	 */
	uint64_t hb, now;

	if (bd_timens_stale_fork(b))
		return false;
	hb = bd_load(&b->hdr->heartbeat_ns);
	bd_lfence();
	now = bd_clock_raw() - (uint64_t)bd_timens_current(b);
	/*
	 * A heartbeat later than our clock, read after it, is no daemon's of ours (it reads its
	 * clock before it stores): someone wrote it to be believed for longer.  1 ms of slack for
	 * clock reads on different CPUs.
	 */
	return hb <= now + 1000000ULL && bd_live(b, now);
}

uint64_t bd_trusted(const struct barrierd *b, const uint64_t *word, int vtime)
{
	const struct barrierd_ext *x;
	uint64_t v, cap;

	struct seq before, after;

	seq_read(b, &before);
	v = bd_load(word);
	seq_read(b, &after);
	if (seq_running(&before, &after) && heartbeat_fresh(b)) {
		uint64_t again = bd_load(word); /* after `after`: the generation can repeat */

		return v < again ? v : again;
	}
	/*
	 * Not (or not throughout) a running daemon's value: no more than the stop snapshot.
	 * Whatever that word holds when we load it is a global value a daemon of ours published
	 * when it stopped, or the zero of a new or reset file: evidence at any moment, so this
	 * load needs no order of its own.
	 */
	x = bd_ext(b);
	if (!x)
		return 0;
	/*
	 * Only for ns.  A vtime stamp is a load of header.vtime, a word any writer can
	 * lower after our daemon stopped (the original barrierd writes its own, smaller
	 * counter): a stamp below the snapshot would then pass on values that precede it.
	 * A clock cannot be lowered that way, so the ns cap stands; no vtime counts while
	 * nobody of ours runs.
	 */
	if (vtime)
		return 0;
	cap = bd_load(vtime ? &x->stop_vtime : &x->stop_ns);
	return v < cap ? v : cap;
}

/* Is every CPU of the set above the stamp, in one pass over their words? */
static bool all_above(const struct barrierd *b, const unsigned long *set, size_t nbits,
		      uint64_t stamp_ns)
{
	for (uint64_t c = 0; c < b->ncpu; c++)
		if (bd_in_set(set, nbits, c) &&
		    bd_load(&b->hdr->per_cpu[c].last_interrupt_ns) <= stamp_ns)
			return false;
	return true;
}

bool bd_cpus_passed(const struct barrierd *b, const unsigned long *set, size_t nbits,
		    uint64_t stamp_ns)
{
	struct seq before, after;

	seq_read(b, &before);
	if (!all_above(b, set, nbits, stamp_ns))
		return false;
	seq_read(b, &after);
	if (!seq_running(&before, &after) || !heartbeat_fresh(b))
		return false;
	/* Once more after `after` (see above): a start between the reads came after its reset. */
	return all_above(b, set, nbits, stamp_ns);
}
