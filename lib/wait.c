// SPDX-License-Identifier: MIT
/*
 * The futex wait: sleep on a word's low half with a bounded timeout, re-check the full
 * 64-bit value, ring the doorbell when an idle, offline or unknown CPU holds the barrier back.
 * When it did not ring only because the daemon was armed, the sleep also watches the low half
 * of header.flags, so that a disarm after that decision ends it (the daemon FUTEX_WAKEs that
 * word after every change of the flags).  A daemon found gone is waited for, not spun on: the
 * wait backs off on the heartbeat word for one liveness bound before it returns -ESTALE.
 */
#include "attach.h"
#include "direct.h"
#include "doorbell.h"
#include "fallback.h"
#include "handle.h"
#include "mapping.h"
#include "published.h"
#include "slots_fetch.h"
#include "timens.h"
#include "wait.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef FUTEX2_SIZE_U32
#define FUTEX2_SIZE_U32 0x02
#endif
#ifndef FUTEX2_PRIVATE
#define FUTEX2_PRIVATE 128 /* FUTEX_PRIVATE_FLAG */
#endif

#define SLICE_NS (10 * 1000000LL)	/* longest sleep between liveness re-checks */
#define LOST_RING_SLICE_NS (1000000LL)	/* sleep after a ring nobody heard */
#define VTIME_RING_SLICE_NS (1000000LL) /* after a vtime wait's ring (need_ring) */
/* Without futex_waitv, after not ringing because the daemon was armed (see sleep_on). */
#define ARMED_SLICE_NS (1000000LL)
#define RERING_WINDOW_NS (200 * 1000LL) /* how long to keep re-ringing (bounded spin) */
#define REPEAT_RING_NS (20 * 1000000LL) /* ring again though the horizon covers (repeat_ring) */
#define WAITV_MAX 128			/* the kernel's FUTEX_WAITV_MAX */

/*
 * futex_waitv is missing (ENOSYS: Linux before 5.16) or forbidden (EPERM or ENOSYS under a
 * container's seccomp profile).  Remembered for the process (__atomic, relaxed: a stale 0
 * costs one more failing call, nothing else), so every later sleep goes to FUTEX_WAIT at once.
 */
static int waitv_unavailable;

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

/* ABI 1.2's per-CPU flags, or NULL without them or if they do not lie inside our mapping. */
static const uint64_t *cpu_flags(const struct barrierd *b)
{
	const struct barrierd_ext *x = bd_ext(b);
	const uint8_t *base = b->map2 ? b->map2 : (const void *)b->hdr;
	size_t size = b->map2 ? b->size2 : b->size;
	const uint64_t *flags;

	if (!x || !(bd_load(&b->hdr->flags) & BARRIERD_FEAT_CPU_FLAGS))
		return NULL;
	flags = (const uint64_t *)((const uint8_t *)x + sizeof(*x) +
				   b->ncpu * sizeof(struct barrierd_ext_cpu));
	if ((const uint8_t *)(flags + b->ncpu) > base + size)
		return NULL;
	return flags;
}

/*
 * The CPUs this wait still lags on: how many, and how many of them a nudge thread of the daemon
 * serves.  False without the flags.
 */
static bool lagging_nudged(const struct barrierd *b, const struct target *t, uint64_t *lagging,
			   uint64_t *nudged)
{
	const uint64_t *flags = cpu_flags(b);

	*lagging = *nudged = 0;
	if (!flags)
		return false;
	for (uint64_t c = 0; c < b->ncpu; c++)
		if (in_set(t, c) && bd_load(cpu_word(b, t, c)) <= t->value) {
			++*lagging;
			*nudged += (bd_load(&flags[c]) & BARRIERD_CPUF_NUDGE) != 0;
		}
	return true;
}

/*
 * Does a nudge thread of the daemon serve every CPU this wait still lags on?  Then the daemon
 * can serve the wait whatever membarrier says.
 */
static bool lagging_all_nudged(const struct barrierd *b, const struct target *t)
{
	uint64_t lagging, nudged;

	return lagging_nudged(b, t, &lagging, &nudged) && nudged == lagging;
}

static int passed(const struct barrierd *b, const struct target *t)
{
	if (b->ncpu == 0)
		return 0;
	/*
	 * A ns stamp at or below valid_after is refused (open_ns; everything once retired).
	 * Acquire: retire() raises the floor before it changes the offset (both release), so a
	 * stamp converted with the retired offset never meets the old floor here.
	 */
	if (t->kind != T_VTIME && t->value <= __atomic_load_n(&b->valid_after, __ATOMIC_ACQUIRE))
		return 0;
	/* Direct evidence first (DESIGN rule 11): an idle machine passes on loads alone. */
	if (t->kind != T_VTIME) {
		int r = bd_direct_passed(b, t->value, t->kind == T_CPUS ? t->set : NULL, t->nbits,
					 NULL, NULL);

		if (r >= 0)
			return r;
	}
	if (bd_trusted(b, global_word(b, t), t->kind == T_VTIME) > t->value)
		return 1;
	if (t->kind != T_CPUS)
		return 0;
	/* Per-CPU values count only while one daemon of ours runs (lib/trusted.c). */
	return bd_cpus_passed(b, t->set, t->nbits, t->value);
}

enum ring_decision {
	NO_RING,	 /* no doorbell, or nothing lagging */
	NO_RING_ARMED,	 /* not rung only because the daemon is armed and every lagging CPU busy */
	NO_RING_HORIZON, /* not rung only because the horizon covers the stamp, lagging CPUs busy */
	RING,
};

/*
 * Ring when a CPU at or below the target is idle, offline, unknown or the daemon's own
 * (docs/PROTOCOL.md, "Ringing the doorbell"), or when a busy one lags and nothing yet makes it
 * signal the daemon: the daemon is not armed (not following every pass) and, with an ABI 1.1
 * daemon, the published horizon is below the target (the ring raises it: each busy CPU then
 * signals at its first event past it).  A vtime target always rings for busy CPUs: the horizon
 * is a time, and the ring is what advances vtime for them.  `flags` is the caller's snapshot of
 * header.flags: when the decision rests on ARMED, the sleep that follows watches that very
 * value, so a disarm after this decision cannot go unseen (sleep_on).
 */
static enum ring_decision need_ring(const struct barrierd *b, const struct target *t,
				    uint64_t flags)
{
	const struct barrierd_ext *x = bd_ext(b);
	bool lagging = false;

	if (!x || !(flags & BARRIERD_FEAT_DOORBELL))
		return NO_RING;
	/* Disarmed, before ABI 1.1: no CPU signals the daemon until someone rings. */
	if (!(flags & (BARRIERD_FLAG_ARMED | BARRIERD_FEAT_SERVED)))
		return RING;
	/*
	 * CPUs the slots credit count here too: the sleep below watches the file's words, which
	 * move only once the daemon publishes every CPU, idle ones included.
	 */
	for (uint64_t c = 0; c < b->ncpu; c++) {
		if (!in_set(t, c) || bd_load(cpu_word(b, t, c)) > t->value)
			continue;
		if (bd_load(&x->cpu[c].state) != BARRIERD_CPU_BUSY)
			return RING;
		lagging = true;
	}
	if (!lagging)
		return NO_RING;
	if (flags & BARRIERD_FLAG_ARMED)
		return NO_RING_ARMED;
	if (t->kind != T_VTIME && t->value <= bd_load(&x->served_ns))
		return NO_RING_HORIZON;
	return RING;
}

static uint64_t host_now(const struct barrierd *b)
{
	return bd_clock_raw() - (uint64_t)bd_timens_current(b);
}

/* The fallback for this target: membarrier's result, or BD_FALLBACK_UNPROVEN (bd_fallback). */
static int fallback(const struct barrierd *b, const struct target *t)
{
	return bd_fallback(b, t->kind == T_VTIME ? BD_FB_VTIME : BD_FB_NS, t->value);
}

/*
 * NO_RING_HORIZON: ring all the same?  The daemon's looks nudge the CPUs that lag a horizon
 * only while it counts a sleeper for them, and for 15 ms at most while it counts none yet
 * (DESIGN §4.5): a wait slower than that from a ring to its sleep would go unserved on a
 * tickless CPU until its deadline.  So ring once no ring has raised the horizon for
 * REPEAT_RING_NS, ours (rang_at: this wait's last ring that was heard, 0 before one) or
 * anyone's (served_ns is the time of a ring, or of a following pass): a newer horizon's looks
 * count us, asleep by then, so waiters together ring about once per REPEAT_RING_NS.  Not from the
 * wait's start: a caller that retries short waits would never get there.  And only when a lagging
 * CPU has a nudge thread: nothing else a ring does makes a busy CPU signal sooner (nudges off, a
 * CPU without its thread).  With --nudge-after above REPEAT_RING_NS, the rings before the first
 * nudge are wasted: a pass each, about one per REPEAT_RING_NS for all waiters together.
 */
static bool repeat_ring(const struct barrierd *b, const struct target *t, uint64_t now,
			uint64_t rang_at)
{
	uint64_t h = bd_load(&bd_ext(b)->served_ns), last = h > rang_at ? h : rang_at;
	uint64_t lagging, nudged;

	if (now < last || now - last < (uint64_t)REPEAT_RING_NS)
		return false;
	return lagging_nudged(b, t, &lagging, &nudged) && nudged > 0;
}

/*
 * A ring that no daemon thread hears is lost (FUTEX_WAKE returns 0), so re-ring for a short,
 * bounded window while it keeps returning 0 and the barrier has not passed.  Returns 1 when
 * heard (or passed), 0 when every ring was lost.
 */
static int ring(const struct barrierd *b, const struct target *t)
{
	uint64_t start = bd_clock_raw();

	for (int i = 0;; i++) {
		int r = bd_ring(b);

		if (r > 0)
			return 1;
		if (r < 0 || passed(b, t))
			return r < 0 ? 0 : 1;
		if (bd_clock_raw() - start > RERING_WINDOW_NS)
			return 0;
		if (i < 8)
			__builtin_ia32_pause();
		else
			sched_yield();
	}
}

static void to_timespec(int64_t ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ns / 1000000000LL);
	ts->tv_nsec = (long)(ns % 1000000000LL);
}

static void waitv_entry32(struct futex_waitv *w, const uint32_t *word, uint32_t val)
{
	memset(w, 0, sizeof(*w));
	w->uaddr = (uintptr_t)word;
	w->val = val;
	w->flags = FUTEX2_SIZE_U32; /* shared: not FUTEX2_PRIVATE, the daemon is another process */
}

static void waitv_entry(struct futex_waitv *w, const uint64_t *word, uint32_t val)
{
	waitv_entry32(w, (const uint32_t *)word, val); /* the low half: x86 is little-endian */
}

/*
 * futex_waitv for at most slice_ns: 1 when it slept or found a word changed, 0 when it could
 * not be used (then the caller sleeps with FUTEX_WAIT instead: never a loop without a sleep).
 */
static int sleep_waitv(struct futex_waitv *wv, unsigned n, int64_t slice_ns)
{
	struct timespec ts;

	if (__atomic_load_n(&waitv_unavailable, __ATOMIC_RELAXED))
		return 0;
	to_timespec((int64_t)bd_clock_raw() + slice_ns, &ts); /* absolute */
	if (syscall(SYS_futex_waitv, wv, n, 0, &ts, CLOCK_MONOTONIC) >= 0 || errno == EAGAIN ||
	    errno == ETIMEDOUT || errno == EINTR)
		return 1;
	if (errno == ENOSYS || errno == EPERM)
		__atomic_store_n(&waitv_unavailable, 1, __ATOMIC_RELAXED);
	return 0; /* any other error: FUTEX_WAIT this time */
}

/*
 * A global word's entry, then (with the extension) the doorbell's mark after it: a sleep the
 * daemon counts as a library waiter's (sleep_on, below, says why).  The entries written.
 */
static unsigned waitv_global(struct futex_waitv *wv, const struct barrierd *b,
			     const uint64_t *global, uint32_t snap)
{
	const uint32_t *mark = (const uint32_t *)&b->hdr->doorbell + 1;

	waitv_entry(&wv[0], global, snap);
	if (!bd_ext(b))
		return 1;
	/* Relaxed: nobody writes the mark; its value is loaded only for the kernel's compare. */
	waitv_entry32(&wv[1], mark, __atomic_load_n(mark, __ATOMIC_RELAXED));
	return 2;
}

/*
 * Sleep until a watched word's low half differs from what we read before the last check, or
 * the slice ends.  The futex compares only 32 bits (a change in the high half alone is not
 * seen), which is why every sleep is bounded and the caller re-checks all 64 bits.
 *
 * The words: the global word (snap_global, read before the last check) or, for wait_cpus, the
 * lagging CPUs' words (each loaded once, for both its check and its expected value); and, when
 * the caller did not ring only because the daemon was armed (armed_no_ring), the low half of
 * header.flags as it was snapshot before that decision (snap_flags).  That word is why a
 * disarm cannot be lost: the daemon clears ARMED, then wakes the waiters; if the wake comes
 * after our decision but before we sleep, the kernel's compare of the flags word fails and we
 * return at once, and if it comes later it wakes us.  It goes first in the vector: the kernel
 * compares the words in order, so we are never queued on another word for nothing.  It is
 * not watched after a ring: a change of the flags would only wake us before the credit we
 * asked for is published.
 *
 * Last, with a global word, the doorbell's high half, which nobody writes or wakes: queued
 * there, we are counted as libbarrierd's sleeper (PROTOCOL.md §6.7), not as a client that
 * cannot ring, which the daemon would follow every pass for.  Only with a global word: the
 * daemon subtracts the marked from the global words' sleepers (publisher_count_legacy).  Its value
 * is loaded, not assumed, so a changed word costs one early return, never a spin.
 */
static void sleep_on(const struct barrierd *b, const struct target *t, uint32_t snap_global,
		     uint32_t snap_flags, int64_t slice_ns, bool armed_no_ring)
{
	struct futex_waitv wv[WAITV_MAX];
	const uint64_t *word = global_word(b, t); /* for FUTEX_WAIT */
	uint32_t val = snap_global;
	struct timespec ts;
	unsigned n = 0, ncpu_words = 0;
	bool need_global = t->kind != T_CPUS;

	if (armed_no_ring)
		waitv_entry(&wv[n++], &b->hdr->flags, snap_flags);
	if (t->kind == T_CPUS) {
		for (uint64_t c = 0; c < b->ncpu; c++) {
			const uint64_t *w = cpu_word(b, t, c);
			uint64_t cur;

			if (!in_set(t, c))
				continue;
			cur = bd_load(w);
			if (cur > t->value)
				continue;
			/* More lagging CPUs than futex_waitv takes: the global word stands in. */
			if (n == WAITV_MAX - 2) { /* room for the global word and the mark */
				need_global = true;
				break;
			}
			waitv_entry(&wv[n++], w, (uint32_t)cur);
			/*
			 * Without futex_waitv, FUTEX_WAIT on the first lagging CPU's word: the
			 * barrier cannot pass before that word changes, while the global word may
			 * not move at all (a CPU outside the set holding the minimum).
			 */
			if (ncpu_words++ == 0) {
				word = w;
				val = (uint32_t)cur;
			}
		}
		need_global = need_global || ncpu_words == 0;
	}
	if (need_global)
		n += waitv_global(&wv[n], b, global_word(b, t), snap_global);
	if (sleep_waitv(wv, n, slice_ns))
		return;
	/*
	 * FUTEX_WAIT watches one word, not the flags: a disarm after we decided not to ring
	 * (only because the daemon was armed) would go unseen for the whole slice.  Keep that
	 * sleep short.
	 */
	if (armed_no_ring && slice_ns > ARMED_SLICE_NS)
		slice_ns = ARMED_SLICE_NS;
	to_timespec(slice_ns, &ts); /* relative */
	syscall(SYS_futex, (const uint32_t *)word, FUTEX_WAIT, val, &ts, NULL, 0);
}

int bd_sleep_counted(const struct barrierd *b, const uint32_t *word, uint32_t val, bool shared,
		     uint32_t snap_global, int64_t slice_ns)
{
	struct futex_waitv wv[3];
	unsigned n;

	waitv_entry32(&wv[0], word, val);
	if (!shared)
		wv[0].flags |= FUTEX2_PRIVATE;
	n = 1 + waitv_global(&wv[1], b, &b->hdr->last_interrupt_ns, snap_global);
	return sleep_waitv(wv, n, slice_ns);
}

/*
 * The daemon is gone (stopped, not running, or its heartbeat older than the liveness bound):
 * sleep until something that would make it live again changes, or the slice ends.  The words:
 * the flags (a restart sets RUNNING, then wakes them) and the heartbeat (a stalled daemon that
 * resumes stores it, then wakes it).  Not the global word: while the daemon is not live no
 * value above the stop snapshot counts, so its changes could only wake us for nothing.  The
 * snapshots were loaded before the liveness check that found the daemon gone, so a change
 * after that check fails the kernel's compare instead of being slept through.  Without
 * futex_waitv, the heartbeat word alone, in slices of at most SLICE_NS: a restart stores a
 * heartbeat before it sets RUNNING, and that flag change alone would go unseen.
 */
static void sleep_stale(const struct barrierd *b, uint32_t snap_flags, uint32_t snap_hb,
			int64_t slice_ns)
{
	struct futex_waitv wv[2];
	struct timespec ts;

	waitv_entry(&wv[0], &b->hdr->flags, snap_flags);
	waitv_entry(&wv[1], &b->hdr->heartbeat_ns, snap_hb);
	if (sleep_waitv(wv, 2, slice_ns))
		return;
	to_timespec(slice_ns < SLICE_NS ? slice_ns : SLICE_NS, &ts); /* relative */
	syscall(SYS_futex, (const uint32_t *)&b->hdr->heartbeat_ns, FUTEX_WAIT, snap_hb, &ts, NULL,
		0);
}

/*
 * A setns() may have moved us to another time namespace: ns stamps taken since were
 * converted with the old offset and cannot be judged, so the move retires the handle
 * (bd_timens_moved: -ESTALE, then -EPROTO for every later call; vtime waits too, since
 * deadlines and liveness need the offset).  Checked once per slow path, after the ring, so
 * its stat() (tens of microseconds on a cold CPU) overlaps the daemon's answer instead of
 * delaying the ring; and before any success of the slow path, so no stale stamp is reported
 * passed by it.
 */
static int ns_check(struct barrierd *b, const struct target *t, bool *checked)
{
	int ret;

	if (*checked)
		return 0;
	*checked = true;
	ret = bd_timens_moved(b);
	if (ret || t->kind == T_VTIME)
		return ret;
	/* Another thread may have retired the handle first: the floor covers this stamp. */
	if (t->value <= __atomic_load_n(&b->valid_after, __ATOMIC_ACQUIRE))
		return -ESTALE;
	/* A stamp above the host time was converted with an offset too small: never genuine. */
	if (t->value > host_now(b))
		return -ESTALE;
	return 0;
}

/* fresh: the stamp was just taken by barrierd_barrier(), which then pays for a move check. */
static int wait_common(struct barrierd *b, const struct target *t, int64_t timeout_ns, bool fresh)
{
	uint64_t start, deadline, fb_deadline, rang_at, stale_end = 0;
	bool ns_checked = false;

	/* First use after a fork: learn this process's offset (or retire), before any check. */
	if (bd_timens_stale_fork(b))
		(void)bd_timens_current(b);
	/* Opened before the extension was laid out: pick it up (its stop snapshot, doorbell). */
	if (!bd_ext(b))
		bd_ext_refresh(b);
	/* A vtime wait credits nothing from the slots, but drops a gone daemon's set as well. */
	if (t->kind == T_VTIME)
		bd_direct_tidy(b);
	/*
	 * barrierd_barrier()'s stamp passed by idle and own-CPU credit alone (CLIENT-EVIDENCE §10):
	 * both clock readings were taken in this call, in one time namespace (setns() needs a
	 * single-threaded process: it cannot move us between them), with the same offset, so a
	 * move before the call cannot make r > T untrue; no move check (a stat()) is needed.
	 */
	if (fresh && t->kind == T_NS) {
		bool clock_only;

		if (bd_direct_passed(b, t->value, NULL, 0, NULL, &clock_only) == 1 && clock_only)
			return 0;
	}
	if (passed(b, t)) {
		/*
		 * The fast path: loads only.  A fresh stamp seldom passes at once, so the
		 * barrier can afford the check there (a caller's own stamp cannot: rule out
		 * namespace moves by re-opening the handle, docs/CLIENT.md).
		 */
		return fresh ? ns_check(b, t, &ns_checked) : 0;
	}
	if (bd_timens_current(b) == INT64_MIN)
		return -EPROTO; /* our time namespace's offset cannot be known */

	start = host_now(b);
	rang_at = 0; /* none yet: the horizon's age alone decides (repeat_ring) */
	deadline = timeout_ns >= 0 ? start + (uint64_t)timeout_ns : UINT64_MAX;
	fb_deadline = b->fallback == BARRIERD_FALLBACK_MEMBARRIER
			  ? start + (uint64_t)b->fallback_after_ns
			  : UINT64_MAX;
	for (;;) {
		/*
		 * Read the futex words before checking, so no change between them is missed: the
		 * global word for the wait, the flags and the heartbeat for a stale daemon's.
		 */
		uint32_t snap = bd_load_low(global_word(b, t));
		uint32_t snap_flags = bd_load_low(&b->hdr->flags);
		uint32_t snap_hb = bd_load_low(&b->hdr->heartbeat_ns);
		int64_t slice = SLICE_NS;
		enum ring_decision ring_it;
		uint64_t now, end, flags;
		int ret;

		/* A move (found by any thread) puts this stamp under the floor: not judged. */
		if (t->kind != T_VTIME &&
		    t->value <= __atomic_load_n(&b->valid_after, __ATOMIC_ACQUIRE))
			return -ESTALE;
		if (passed(b, t))
			return ns_check(b, t, &ns_checked);
		now = host_now(b);
		if (!bd_live(b, now)) {
			/* A move to a namespace ahead makes the heartbeat look old: rule it out. */
			if (!ns_checked) {
				ret = ns_check(b, t, &ns_checked);
				if (ret)
					return ret;
				continue;
			}
			/*
			 * The fallback, for a stamp it proves.  Not proven (a vtime the file has
			 * not published; a ns stamp equal to r): the back-off below, as without
			 * one, and the fallback tried again at the next turn.
			 */
			if (b->fallback == BARRIERD_FALLBACK_MEMBARRIER) {
				ret = fallback(b, t);
				if (ret != BD_FALLBACK_UNPROVEN)
					return ret;
			}
			/*
			 * A daemon gone at once turns a caller's retry loop into a spin that
			 * starves the daemon it waits for (a stalled one under load).  So give it
			 * one liveness bound, never past the deadline, and return -ESTALE only
			 * then.  Unless the file itself went away: that is not waited out.
			 */
			if (!stale_end) {
				ret = bd_file_moved(b);
				if (ret)
					return ret;
				stale_end = now + bd_liveness_ns(b);
				if (stale_end > deadline)
					stale_end = deadline;
				now = host_now(
				    b); /* after the stat(): the slice must not outlast the end */
			}
			if (now >= stale_end)
				return -ESTALE;
			sleep_stale(b, snap_flags, snap_hb, (int64_t)(stale_end - now));
			continue;
		}
		stale_end = 0; /* live again: a later stall gets its own bound */
		if (now >= fb_deadline) {
			/*
			 * membarrier unavailable (EINVAL under nohz_full, ENOSYS, EPERM under
			 * seccomp) while the daemon is live and nudges every CPU we still lag on:
			 * the daemon can still serve this wait (a tickless CPU by a nudge), so wait
			 * for it until the deadline instead.  Any other result is the barrier's,
			 * and so is the error when some lagging CPU has no nudge.
			 */
			ret = fallback(b, t);
			if (ret != BD_FALLBACK_UNPROVEN) {
				if ((ret != -EINVAL && ret != -ENOSYS && ret != -EPERM) ||
				    !lagging_all_nudged(b, t))
					return ret;
				fb_deadline = UINT64_MAX;
				continue;
			}
			/*
			 * Not proven: the call may precede the stamp.  The wait goes on with the
			 * daemon, as without a fallback (a ns stamp above the host time meets
			 * ns_check: -ESTALE; a vtime above the file's waits for the daemon, or its
			 * deadline), and tries the fallback again at every turn.
			 */
		}
		if (now >= deadline)
			return -ETIMEDOUT;
		if (!bd_ext(b))
			bd_ext_refresh(b);
		/*
		 * The flags, once, before the decision: the decision is taken on this value and,
		 * when it rested on ARMED, the sleep watches its low half, so a change after this
		 * load (a disarm) either fails the kernel's compare or wakes us (sleep_on).
		 */
		flags = bd_load(&b->hdr->flags);
		ring_it = need_ring(b, t, flags);
		if (ring_it == NO_RING_HORIZON && repeat_ring(b, t, now, rang_at))
			ring_it = RING;
		if (ring_it == RING && !ring(b, t)) {
			slice = LOST_RING_SLICE_NS; /* lost: no new horizon, so rang_at stays */
		} else if (ring_it == RING) {
			rang_at = now;
			/*
			 * A vtime wait's ring makes each busy CPU signal once, at its first event
			 * past the horizon; an event just before the ring advanced vtime can carry
			 * the old one and is then that CPU's last signal (docs/DESIGN.md §7).  Ring
			 * again soon, not after a whole slice.
			 */
			if (t->kind == T_VTIME && (flags & BARRIERD_FEAT_SERVED))
				slice = VTIME_RING_SLICE_NS;
		}
		ret = ns_check(b, t, &ns_checked);
		if (ret)
			return ret;
		/*
		 * No slots of this daemon yet (a restart, a late start, a fork): ask, after the
		 * ring (the daemon works on it meanwhile), at most every 100 ms, backing off.
		 */
		if (t->kind != T_VTIME)
			bd_direct_refresh(
			    b, deadline == UINT64_MAX ? -1 : (int64_t)(deadline - host_now(b)));
		if (passed(b, t))
			return 0;
		/* A fallback deadline already passed (a stamp it did not prove) bounds nothing. */
		end = fb_deadline > now && fb_deadline < deadline ? fb_deadline : deadline;
		if (end - now < (uint64_t)slice)
			slice = (int64_t)(end - now);
		sleep_on(b, t, snap, (uint32_t)flags, slice, ring_it == NO_RING_ARMED);
	}
}

/*
 * The public waits' way in.  A ns stamp at or below open_ns could be passed by a value we never
 * checked: -EINVAL.  A handle still without its file (BARRIERD_OPEN_ATTACH_LATER) looks for
 * it, and a stamp taken before the file was mapped is left to the fallback (or -ESTALE).
 */
static int wait_entry(struct barrierd *b, const struct target *t, int64_t timeout_ns)
{
	enum bd_fb_stamp kind = t->kind == T_VTIME ? BD_FB_VTIME : BD_FB_NS;
	int ret;

	/* At or below the open (for an attach-later handle: its creation), for any handle. */
	if (t->kind != T_VTIME && t->value <= (b->late_path ? b->created_ns : barrierd_open_ns(b)))
		return -EINVAL;
	if (!bd_hdr(b)) {
		ret = bd_attach(b);
		if (ret == -ENOENT) {
			ret = bd_detached_wait(b, kind, t->value, timeout_ns, &timeout_ns);
			/*
			 * Mapped during this call: a stamp taken before it is older than the file
			 * (below); one that is not (the future, another handle's vtime) is judged
			 * as on any handle, in what is left of the timeout.
			 */
			if (ret != 1)
				return ret;
		} else if (ret) {
			return ret;
		}
	}
	if (t->kind == T_VTIME) {
		if (t->value == UINT64_MAX &&
		    b->late_path) /* barrierd_stamp_vtime() without a file */
			return bd_before_attach(b, kind, t->value);
	} else if (t->value <= barrierd_open_ns(b)) {
		/* Later than the handle's creation, not than its file: no value of it may pass. */
		return bd_before_attach(b, kind, t->value);
	}
	return wait_common(b, t, timeout_ns, false);
}

BDLIB_EXPORT int barrierd_wait(struct barrierd *b, uint64_t stamp_ns, int64_t timeout_ns)
{
	struct target t = {.kind = T_NS, .value = stamp_ns};

	if (!b)
		return -EINVAL;
	return wait_entry(b, &t, timeout_ns);
}

BDLIB_EXPORT int barrierd_wait_vtime(struct barrierd *b, uint64_t vtime, int64_t timeout_ns)
{
	struct target t = {.kind = T_VTIME, .value = vtime};

	if (!b)
		return -EINVAL;
	return wait_entry(b, &t, timeout_ns);
}

BDLIB_EXPORT int barrierd_wait_cpus(struct barrierd *b, uint64_t stamp_ns, const void *cpus,
				    size_t setsize, int64_t timeout_ns)
{
	struct target t = {.kind = T_CPUS, .value = stamp_ns, .set = cpus, .nbits = setsize * 8};

	if (!b || !cpus || setsize == 0 || setsize % sizeof(long))
		return -EINVAL;
	return wait_entry(b, &t, timeout_ns);
}

BDLIB_EXPORT int barrierd_barrier(struct barrierd *b, int64_t timeout_ns)
{
	struct target t = {.kind = T_NS};
	int ret;

	if (!b)
		return -EINVAL;
	/* No file yet: look for it; if it appears, the barrier goes on with a fresh stamp. */
	if (!bd_hdr(b)) {
		ret = bd_attach(b);
		if (ret == -ENOENT) {
			ret = bd_detached_wait(b, BD_FB_BARRIER, 0, timeout_ns, &timeout_ns);
			if (ret != 1)
				return ret;
		} else if (ret) {
			return ret;
		}
	}
	/*
	 * A stamp equal to open_ns would be refused; the clock moves on within nanoseconds.
	 * Only a clock behind the one at open keeps it there: a move to a namespace behind.
	 */
	for (int i = 0; (t.value = barrierd_stamp_ns(b)) <= barrierd_open_ns(b); i++) {
		if (i == 1000) {
			bool checked = false;

			ret = ns_check(b, &t, &checked);
			return ret ? ret : -ESTALE;
		}
		__builtin_ia32_pause();
	}
	return wait_common(b, &t, timeout_ns, true);
}
