// SPDX-License-Identifier: MIT
/*
 * Event counts (include/barrierd_ec.h): the waiter and the wake.  The increments are inline in
 * the header; only an increment that finds the sleepers flag comes here.
 *
 * The waiter, for a value v (word v << 1; armed: (v << 1) | FLAG):
 *   (a) spin about a microsecond re-reading the word;
 *   (b) put the flag in with OUR OWN CAS from the unflagged word while the value is still v.
 *       A flag found already set is not trusted: sleep a bounded slice on the word and do (b)
 *       again (the value moved: return);
 *   (c) stamp T after that: the CAS is locked, so the flag is visible before T;
 *   (d) sleep in short slices on the word (and, for the daemon's count, on its global word)
 *       until barrierd says every CPU passed T (with no live daemon: one second from the CAS,
 *       ck_ec's conservative bound); a word that is no longer exactly armed leaves for (b) at
 *       once;
 *   (e) re-read: the word must still be exactly armed, or the value moved (return);
 *   (f) FUTEX_WAIT on the low half for armed, with no timeout but the caller's; after a
 *       wake-up with the value unchanged, the word still exactly armed: (f) again; else (b).
 *
 * Why only a flag we put in ourselves (docs/PRIMITIVES.md §1 has the full argument).  The one
 * writer that does not lock is the single producer's xadd.  Every store of a producer moves the
 * value (an add of 0 does nothing) and the value never comes back; waiters only put the flag
 * in; the only other clearing store is the wake's AND, and it follows the increment that read
 * the flag.  If OUR CAS found the word at v unflagged, the increment that made v either read no
 * flag (no AND) or its AND already came (its store carried the flag, only an AND takes it
 * off); the producer's next AND follows its next increment, which moves the value.  So our
 * flag leaves the word only with the value: a word exactly armed at (e), or after a wake-up,
 * is armed without a break since our CAS.  A flag we merely found may be doomed (an increment
 * read it, its AND is coming): after that AND another waiter can re-arm the word while an xadd
 * that read it unflagged still has its store buffered, and that store erases the new flag with
 * nobody woken (the found-flag scenario, test_ec's test_foreign_flag).  Take any increment X
 * of the producer after our CAS:
 *   - X before the producer CPU's serialising event E (the evidence for T, E after T) in
 *     program order: X's store is in the store buffer before E, which drains it, and the
 *     evidence is published after E, so X's store is visible before (e) reads.  (e) found no
 *     such store after C: X's store came before C in the word's order, and the CAS saw it.
 *   - X after E: X's load is performed after E (no load passes a serialising event), after T,
 *     after C: X reads armed (or a later word) and sees the flag, so X wakes us.
 * That split needs X to be ONE instruction: an interrupt, the evidence's carrier, lands
 * between instructions, so X's load and store are on the same side of E.  A load, add and
 * store as three instructions could have its load before T and its store after the barrier,
 * overwriting the flag with nobody to notice.  A multi-producer's increment is locked, so it
 * is ordered with the CAS (before it: the CAS fails; after it: it sees the flag) and needs no
 * barrier; there a late AND may clear our flag at the same value, but every AND is followed by
 * a FUTEX_WAKE, and any flag the kernel's compare sees is read by the next (locked) increment.
 *
 * The futex compares 32 bits: after (e), the low half of the word equals armed's again only
 * if the value moved by a multiple of 2^31 and a waiter put the flag back in before our
 * compare; docs/PRIMITIVES.md §1 says why that does not matter in practice.
 */
#include "handle.h"
#include "wait.h"

#include <barrierd_ec.h>

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EC_SPIN_NS 1000LL		 /* (a): how long to spin before the slow path */
#define EC_SLICE_MIN_NS (100 * 1000LL)	 /* (d): the first sleep while barrierd serves T */
#define EC_SLICE_MAX_NS (10 * 1000000LL) /* (d): the longest (slices double up to it) */
#define EC_RERING_NS (50 * 1000000LL)	 /* (d): ring again: a lost ring, a restart */
#define EC_CONSERVATIVE_NS 1000000000LL	 /* (d) without barrierd: ck_ec's second */
#define EC_STAMP_TRIES 1000		 /* a stamp above barrierd_open_ns(): see ec_stamp */

BDLIB_EXPORT int barrierd_ec_init(struct barrierd_ec *ec, uint64_t value, unsigned flags)
{
	if (!ec || (flags & ~BARRIERD_EC_SHARED) || value > (UINT64_MAX >> 1))
		return -EINVAL;
	ec->flags = flags;
	ec->reserved = 0;
	/* Release: a waiter that reads the word also reads the flags above. */
	__atomic_store_n(&ec->word, value << 1, __ATOMIC_RELEASE);
	return 0;
}

/* FUTEX_WAIT or FUTEX_WAKE on the word's low half (x86 is little-endian). */
static long ec_futex(struct barrierd_ec *ec, int op, uint32_t val, const struct timespec *ts)
{
	/* Private unless the word is shared between processes: a cheaper hash, no mm lookup. */
	if (!(ec->flags & BARRIERD_EC_SHARED))
		op |= FUTEX_PRIVATE_FLAG;
	return syscall(SYS_futex, (uint32_t *)&ec->word, op, val, ts, NULL, 0);
}

BDLIB_EXPORT void barrierd_ec_wake(struct barrierd_ec *ec)
{
	/*
	 * Clear the flag first, with one locked AND (ordered with every waiter's CAS), then wake.
	 * The other order loses a sleeper: woken first, it finds the flag still set, sleeps on
	 * it, and our AND then takes it away.  This way a woken waiter that must sleep again puts
	 * its own flag in, and the next increment sees it.
	 */
	__atomic_fetch_and(&ec->word, ~BARRIERD_EC_FLAG, __ATOMIC_SEQ_CST);
	(void)ec_futex(ec, FUTEX_WAKE, INT_MAX, NULL);
}

static void to_timespec(uint64_t ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ns / 1000000000ULL);
	ts->tv_nsec = (long)(ns % 1000000000ULL);
}

/*
 * Sleep on the word, expecting it armed, for at most ns (UINT64_MAX: no timeout).  Returns
 * when an increment wakes us, when the word is not armed any more (the kernel's compare
 * fails: EAGAIN), on a signal, or at the timeout; the caller re-reads in every case.
 */
static void ec_sleep(struct barrierd_ec *ec, uint64_t armed, uint64_t ns)
{
	struct timespec ts;

	if (ns == UINT64_MAX) {
		(void)ec_futex(ec, FUTEX_WAIT, (uint32_t)armed, NULL);
		return;
	}
	to_timespec(ns, &ts);
	(void)ec_futex(ec, FUTEX_WAIT, (uint32_t)armed, &ts);
}

enum ec_arm { EC_MOVED, EC_OURS, EC_FOUND };

/*
 * (b): our flag in while the value is still old.  EC_OURS when our CAS put it in (locked: the
 * flag is globally visible when it succeeds), EC_MOVED when the value moved, EC_FOUND when the
 * word is armed by someone else: a flag we cannot vouch for (see the top of the file).
 */
static enum ec_arm ec_arm(struct barrierd_ec *ec, uint64_t old)
{
	uint64_t w = bd_load(&ec->word);

	for (;;) {
		if ((w >> 1) != old)
			return EC_MOVED;
		if (w & BARRIERD_EC_FLAG)
			return EC_FOUND;
		if (__atomic_compare_exchange_n(&ec->word, &w, w | BARRIERD_EC_FLAG, false,
						__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			return EC_OURS;
	}
}

/*
 * (c): a stamp barrierd can serve, taken after the flag went in, or 0 when it cannot serve one.
 * A stamp at or below barrierd_open_ns() is refused: the clock leaves it within nanoseconds
 * (any later stamp is also after the flag).  A retired handle (a time namespace move) or one
 * whose offset is unknown refuses every stamp (lib/stamp.c): never served, so the caller takes
 * the conservative bound rather than waiting on it.
 */
static uint64_t ec_stamp(struct barrierd *b)
{
	uint64_t t = barrierd_stamp_ns(b);

	for (int i = 0; t <= barrierd_open_ns(b) && i < EC_STAMP_TRIES; i++) {
		__builtin_ia32_pause();
		t = barrierd_stamp_ns(b);
	}
	if (t <= __atomic_load_n(&b->valid_after, __ATOMIC_ACQUIRE) || t >= UINT64_MAX - 1)
		return 0;
	return t;
}

struct ec_wait {
	struct barrierd_ec *ec;
	struct barrierd *b;
	uint64_t old, armed;
	uint64_t deadline; /* bd_mono_ns() time, UINT64_MAX: none */
	int (*pred)(const struct barrierd_ec *ec, void *arg);
	void *arg;
};

/*
 * After every sleep: true when the wait ends, with its result in *ret (0: the value moved;
 * pred's result; -ETIMEDOUT at the deadline), false to go on.  pred is called before the
 * deadline is judged: a wait woken at its deadline still hears what pred says.
 */
static bool ec_done(const struct ec_wait *w, uint64_t now, int *ret)
{
	if ((bd_load(&w->ec->word) >> 1) != w->old) {
		*ret = 0;
		return true;
	}
	if (w->pred && (*ret = w->pred(w->ec, w->arg)) != 0)
		return true;
	*ret = -ETIMEDOUT;
	return now >= w->deadline;
}

/*
 * (c) and (d): stamp, then wait until every CPU passed the stamp.  Sleeps on the word the
 * whole time (with a live daemon, on its global word too: below), so an increment that sees
 * the flag wakes us at once, and the value moving ends the wait.  EC_SETTLED, EC_ENDED (the wait
 * ends, its result in *ret), or EC_REARM: the word is no longer exactly armed though the value
 * stayed (a multi-producer's late AND), so our flag is gone and the barrier proves nothing; and a
 * FUTEX_WAIT expecting armed would fail at once, every time, a hot loop on syscalls.  Back to (b)
 * then.
 *
 * Served by barrierd: barrierd_passed() first (direct evidence passes an idle machine's stamp
 * on loads alone), then a ring (barrierd_request(): the daemon credits idle CPUs and listens
 * to busy ones), again every EC_RERING_NS (a ring nobody heard, a daemon restarted), and
 * slices from 100 us doubling to 10 ms: it never blocks for good on anything but the word.  A live
 * daemon that does not serve T is waited for in 10 ms slices, never trusted past: that is a CPU
 * without evidence (docs/DESIGN.md §5), and ck_ec's bound is no better.
 *
 * No barrierd (b NULL, no live daemon, a ring that fails, a stamp it cannot serve): wait until
 * a second after the CAS (cas_ns, our clock), ck_ec's assumption that every CPU takes an
 * interrupt within a second.  A daemon found gone midway switches to that bound for good.
 */
enum ec_settle { EC_SETTLED, EC_ENDED, EC_REARM };

static enum ec_settle ec_settle(const struct ec_wait *w, uint64_t cas_ns, int *ret)
{
	struct barrierd *b = w->b;
	bool daemon = b && barrierd_live(b);
	uint64_t t = daemon ? ec_stamp(b) : 0;
	uint64_t slice = EC_SLICE_MIN_NS, next_ring = 0;

	for (;;) {
		uint64_t now, end;
		uint32_t snap = 0;

		if (daemon && t) {
			/* Loaded before the check: a publication after it fails the sleep. */
			snap = bd_load_low(&b->hdr->last_interrupt_ns);
			if (barrierd_passed(b, t))
				return EC_SETTLED;
			daemon = barrierd_live(b);
		}
		now = bd_mono_ns();
		if (!daemon || !t) {
			daemon = false;
			if (now - cas_ns >= (uint64_t)EC_CONSERVATIVE_NS)
				return EC_SETTLED;
		} else if (now >= next_ring) {
			if (barrierd_request(b) < 0) {
				daemon = false;
				continue;
			}
			next_ring = now + EC_RERING_NS;
		}
		if (now >= w->deadline) {
			*ret = -ETIMEDOUT;
			return EC_ENDED;
		}
		end = daemon ? now + slice : cas_ns + EC_CONSERVATIVE_NS;
		if (end > w->deadline)
			end = w->deadline;
		/*
		 * The daemon nudges a tickless CPU only for someone it counts asleep on the global
		 * word (DEMAND.md, "Nudges"): asleep on the word alone, this wait would never be
		 * served there.  So on both, with futex_waitv; its own way without (then such a CPU
		 * is served by its own events only).
		 */
		if (!daemon || !t ||
		    !bd_sleep_counted(b, (const uint32_t *)&w->ec->word, (uint32_t)w->armed,
				      w->ec->flags & BARRIERD_EC_SHARED, snap,
				      (int64_t)(end - now)))
			ec_sleep(w->ec, w->armed, end - now);
		if (ec_done(w, bd_mono_ns(), ret))
			return EC_ENDED;
		if (bd_load(&w->ec->word) != w->armed)
			return EC_REARM;
		slice = slice * 2 > EC_SLICE_MAX_NS ? EC_SLICE_MAX_NS : slice * 2;
	}
}

BDLIB_EXPORT int barrierd_ec_wait_pred(struct barrierd_ec *ec, struct barrierd *b,
				       uint64_t old_value,
				       int (*pred)(const struct barrierd_ec *ec, void *arg),
				       void *arg, int64_t timeout_ns)
{
	struct ec_wait w = {.ec = ec, .b = b, .old = old_value, .pred = pred, .arg = arg};
	uint64_t start = bd_mono_ns(), found_slice = EC_SLICE_MIN_NS;
	int r;

	if (!ec || (ec->flags & ~BARRIERD_EC_SHARED) || old_value > (UINT64_MAX >> 1))
		return -EINVAL;
	w.armed = (old_value << 1) | BARRIERD_EC_FLAG;
	w.deadline = timeout_ns >= 0 ? start + (uint64_t)timeout_ns : UINT64_MAX;

	/* (a) A wake-up costs microseconds; a value about to move is cheaper to watch. */
	for (unsigned i = 0;; i++) {
		if ((bd_load(&ec->word) >> 1) != old_value)
			return 0;
		if ((i & 15) == 15 && bd_mono_ns() - start >= (uint64_t)EC_SPIN_NS)
			break;
		__builtin_ia32_pause();
	}
	if (pred && (r = pred(ec, arg)) != 0)
		return r;
	if (bd_mono_ns() >= w.deadline)
		return -ETIMEDOUT;

	for (;;) {
		uint64_t now;

		/* (b) */
		switch (ec_arm(ec, old_value)) {
		case EC_MOVED:
			return 0;
		case EC_FOUND:
			/*
			 * Not our flag: it may be doomed, and the word re-armed by another waiter
			 * after its AND may then be erased by a buffered xadd with nobody woken.
			 * Sleep a bounded slice (an increment that sees the flag, or the doomed
			 * flag's own wake, ends it early; a word no longer armed fails the compare
			 * and we try our CAS at once), then (b) again.
			 */
			now = bd_mono_ns();
			if (now >= w.deadline)
				return -ETIMEDOUT;
			ec_sleep(ec, w.armed,
				 w.deadline - now < found_slice ? w.deadline - now : found_slice);
			if (ec_done(&w, bd_mono_ns(), &r))
				return r;
			found_slice =
			    found_slice * 2 > EC_SLICE_MAX_NS ? EC_SLICE_MAX_NS : found_slice * 2;
			continue;
		case EC_OURS:
			break;
		}
		/* (c), (d) */
		switch (ec_settle(&w, bd_mono_ns(), &r)) {
		case EC_ENDED:
			return r;
		case EC_REARM:
			continue;
		case EC_SETTLED:
			break;
		}
		/*
		 * (e) Exactly armed: our flag, unbroken since our CAS; no increment that read the
		 * word without it is still to land, and every later one sees it.  Anything else:
		 * the value moved, or (multi-producer) a late AND took our flag; then from (b).
		 */
		if (bd_load(&ec->word) != w.armed) {
			if ((bd_load(&ec->word) >> 1) != old_value)
				return 0;
			continue;
		}
		/* (f) Until an increment wakes us, or the caller's deadline. */
		for (;;) {
			now = bd_mono_ns();
			if (now >= w.deadline)
				return -ETIMEDOUT;
			ec_sleep(ec, w.armed,
				 w.deadline == UINT64_MAX ? UINT64_MAX : w.deadline - now);
			if (ec_done(&w, bd_mono_ns(), &r))
				return r;
			/*
			 * A signal, a spurious wake-up, a wake for a late AND: the value unchanged.
			 * Single producer: our flag leaves the word only with the value, so a word
			 * still exactly armed still carries it and the barrier still covers us.
			 * Multi-producer: any flag the compare sees wakes us.  Else from (b).
			 */
			if (bd_load(&ec->word) != w.armed)
				break;
		}
	}
}

BDLIB_EXPORT int barrierd_ec_wait(struct barrierd_ec *ec, struct barrierd *b, uint64_t old_value,
				  int64_t timeout_ns)
{
	return barrierd_ec_wait_pred(ec, b, old_value, NULL, NULL, timeout_ns);
}
