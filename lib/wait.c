// SPDX-License-Identifier: MIT
/*
 * The futex wait: its entry points and its steps.  Each turn snapshots the futex word, checks
 * the full 64-bit values, backs off while the daemon is gone, tries the fallback when due,
 * looks at the slots a while (first turn only), rings the doorbell when the daemon has not
 * promised to serve the stamp (lib/wait_ring.c), fetches slots if the handle has none, and
 * sleeps bounded (lib/wait_sleep.c).  A daemon found gone is waited for, not spun on: the wait
 * backs off on the heartbeat word for one liveness bound before it returns -ESTALE.
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
#include "wait_parts.h"

#include <errno.h>

#define LOST_RING_SLICE_NS (1000000LL)	/* sleep after a ring nobody heard */
#define VTIME_RING_SLICE_NS (1000000LL) /* after a vtime wait's heard ring */

/* A step's verdict when the wait goes on: a step returns it, 0 (passed) or -errno. */
#define GO_ON 1

/* The per-CPU flags, or NULL without them or if they do not lie inside our mapping. */
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
 * Does a nudge thread of the daemon serve every CPU this wait still lags on?  Then the daemon
 * can serve the wait whatever membarrier says.  False without the per-CPU flags.
 */
static bool lagging_all_nudged(const struct barrierd *b, const struct target *t)
{
	const uint64_t *flags = cpu_flags(b);

	if (!flags)
		return false;
	for (uint64_t c = 0; c < b->ncpu; c++)
		if (in_set(t, c) && bd_load(cpu_word(b, t, c)) <= t->value &&
		    !(bd_load(&flags[c]) & BARRIERD_CPUF_NUDGE))
			return false;
	return true;
}

int bd_wait_passed(const struct barrierd *b, const struct target *t)
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

/* What a wait keeps from turn to turn. */
struct wait_state {
	uint64_t deadline;    /* host time; UINT64_MAX: none */
	uint64_t fb_deadline; /* when the fallback is due; UINT64_MAX: no fallback */
	uint64_t stale_end;   /* the back-off's end while the daemon is gone; 0: not backing off */
	bool fresh;	      /* the stamp was taken by barrierd_barrier(), in this call */
	bool ns_checked;      /* ns_check ran */
	bool looked;	      /* bd_wait_look ran */
};

/*
 * Step 1, before any check: the process and the handle as they are now.  A forked child
 * learns its own offset first (or retires the handle), so that no stamp is judged with its
 * parent's; a handle opened before the extension picks it up (its stop snapshot, the
 * doorbell); a vtime wait, which credits nothing from the slots, still drops a gone daemon's
 * slots set, so that a tracer is not held for a daemon that is gone.
 */
static void wait_prepare(struct barrierd *b, const struct target *t)
{
	if (bd_timens_stale_fork(b))
		(void)bd_timens_current(b);
	if (!bd_ext(b))
		bd_ext_refresh(b);
	if (t->kind == T_VTIME)
		bd_direct_tidy(b);
}

/*
 * Whether t has passed now: 0 when it has (and the move check a success needs said so), GO_ON
 * when not, or -errno.  slow: on the slow path, where every success pays the move check once;
 * on the fast path only a fresh stamp's does.
 *
 * Except barrierd_barrier()'s stamp passed by idle and own-CPU credit alone (CLIENT-EVIDENCE
 * §10), which needs no move check (a stat()): both clock readings, T and r, were taken in this
 * call, r after T (program order, after T's MFENCE), with the same offset (learnt before T;
 * within the call it can only become unknown, and then nothing is credited).  setns() needs a
 * single-threaded process, and even a move by this thread's signal handler while the call
 * sleeps cannot matter: r, the CPU read and the idle loads come after T's MFENCE in program
 * order, which is what r > T stands for, so a shifted r can at most refuse a credit.
 * That holds at every check of the call: the fast path's, the look's and the slow path's.
 * A caller's own stamp is not checked on the fast path, which cannot afford a stat(): such
 * callers rule out namespace moves by re-opening the handle (docs/CLIENT.md).
 */
static int wait_check(struct barrierd *b, const struct target *t, struct wait_state *w, bool slow)
{
	if (w->fresh && t->kind == T_NS) {
		bool clock_only;

		if (bd_direct_passed(b, t->value, NULL, 0, NULL, &clock_only) == 1 && clock_only)
			return 0;
	}
	if (!bd_wait_passed(b, t))
		return GO_ON;
	return w->fresh || slow ? ns_check(b, t, &w->ns_checked) : 0;
}

/* Step 3: the deadlines, in host time; -EPROTO when our time namespace's offset is unknown. */
static int wait_start(struct barrierd *b, int64_t timeout_ns, struct wait_state *w)
{
	uint64_t start;

	if (bd_timens_current(b) == INT64_MIN)
		return -EPROTO;
	start = host_now(b);
	w->deadline = timeout_ns >= 0 ? start + (uint64_t)timeout_ns : UINT64_MAX;
	w->fb_deadline = b->fallback == BARRIERD_FALLBACK_MEMBARRIER
			     ? start + (uint64_t)b->fallback_after_ns
			     : UINT64_MAX;
	w->stale_end = 0;
	return 0;
}

/*
 * Step 4, the daemon gone (not live at now): the fallback if it proves the stamp, else a
 * back-off.  A daemon gone at once turns a caller's retry loop into a spin that starves the
 * daemon it waits for (a stalled one under load), so the wait gives it one liveness bound,
 * never past the deadline, and returns -ESTALE only then; unless the file itself went away,
 * which is not waited out.  GO_ON for the next turn, or the wait's result.
 */
static int wait_stale(struct barrierd *b, const struct target *t, struct wait_state *w,
		      uint64_t now, uint32_t snap_flags, uint32_t snap_hb)
{
	int ret;

	/* A move to a namespace ahead makes the heartbeat look old: rule it out first. */
	if (!w->ns_checked) {
		ret = ns_check(b, t, &w->ns_checked);
		return ret ? ret : GO_ON;
	}
	/*
	 * The fallback, for a stamp it proves.  Not proven (a vtime the file has not published; a
	 * ns stamp equal to r): the back-off below, as without one, and the fallback tried again
	 * at the next turn.
	 */
	if (b->fallback == BARRIERD_FALLBACK_MEMBARRIER) {
		ret = fallback(b, t);
		if (ret != BD_FALLBACK_UNPROVEN)
			return ret;
	}
	if (!w->stale_end) {
		ret = bd_file_moved(b);
		if (ret)
			return ret;
		w->stale_end = now + bd_liveness_ns(b);
		if (w->stale_end > w->deadline)
			w->stale_end = w->deadline;
		now = host_now(b); /* after the stat(): the slice must not outlast the end */
	}
	if (now >= w->stale_end)
		return -ESTALE;
	bd_wait_sleep_stale(b, snap_flags, snap_hb, (int64_t)(w->stale_end - now));
	return GO_ON;
}

/*
 * Step 5, the daemon live and the fallback due.  membarrier unavailable (EINVAL under
 * nohz_full, ENOSYS, EPERM under seccomp) while the daemon nudges every CPU we still lag on:
 * the daemon can still serve this wait (a tickless CPU by a nudge), so wait for it until the
 * deadline instead.  Any other result is the barrier's, and so is the error when some lagging
 * CPU has no nudge.  Not proven (the call may precede the stamp): the wait goes on with the
 * daemon, as without a fallback (a ns stamp above the host time meets ns_check: -ESTALE; a
 * vtime above the file's waits for the daemon, or its deadline), and tries again next turn.
 */
static int wait_fallback(const struct barrierd *b, const struct target *t, struct wait_state *w)
{
	int ret = fallback(b, t);

	if (ret == BD_FALLBACK_UNPROVEN)
		return GO_ON;
	if ((ret != -EINVAL && ret != -ENOSYS && ret != -EPERM) || !lagging_all_nudged(b, t))
		return ret;
	w->fb_deadline = UINT64_MAX;
	return GO_ON;
}

/*
 * Step 6, the ring (lib/wait_ring.c): the longest slice to sleep after it.  A lost ring sleeps
 * short: the next turn rings again.  A vtime wait's ring makes each busy CPU signal once, at
 * its first event past the ring; an event just before the ring advanced vtime can carry the
 * old one and is then that CPU's last signal (docs/DESIGN.md §7), so it rings again soon, not
 * after a whole slice.
 */
static int64_t wait_ring(const struct barrierd *b, const struct target *t)
{
	if (!bd_wait_need_ring(b, t))
		return SLICE_NS;
	if (!bd_wait_ring(b, t))
		return LOST_RING_SLICE_NS;
	return t->kind == T_VTIME ? VTIME_RING_SLICE_NS : SLICE_NS;
}

/*
 * Step 7, after the ring (the daemon works on it meanwhile): no slots of this daemon yet (a
 * restart, a late start, a fork)?  Ask, at most every 100 ms, backing off, within what is left
 * of the deadline.
 */
static void wait_fetch_slots(struct barrierd *b, const struct target *t, const struct wait_state *w)
{
	if (t->kind == T_VTIME)
		return;
	bd_direct_refresh(b, w->deadline == UINT64_MAX ? -1 : (int64_t)(w->deadline - host_now(b)));
}

/*
 * One turn of the slow path, with the daemon live: the deadlines, a look at the slots (first
 * turn only), the ring, the move check, the slots, a last check and the sleep.  GO_ON for the next
 * turn, or the wait's result.
 */
static int wait_turn(struct barrierd *b, const struct target *t, struct wait_state *w, uint64_t now,
		     uint32_t snap)
{
	int64_t slice;
	uint64_t end;
	int ret;

	if (now >= w->fb_deadline) {
		ret = wait_fallback(b, t, w);
		if (ret != GO_ON)
			return ret;
	}
	if (now >= w->deadline)
		return -ETIMEDOUT;
	if (!bd_ext(b))
		bd_ext_refresh(b);
	/* The first turn looks at the slots a while before it rings (bd_wait_look says why). */
	if (!w->looked) {
		w->looked = true;
		if (bd_wait_look(b, t)) {
			/* Again, for which evidence passed it (cheap: loads, now in cache). */
			ret = wait_check(b, t, w, true);
			if (ret != GO_ON)
				return ret;
		}
	}
	slice = wait_ring(b, t);
	ret = ns_check(b, t, &w->ns_checked);
	if (ret)
		return ret;
	wait_fetch_slots(b, t, w);
	if (bd_wait_passed(b, t))
		return 0;
	/* A fallback deadline already passed (a stamp it did not prove) bounds nothing. */
	end = w->fb_deadline > now && w->fb_deadline < w->deadline ? w->fb_deadline : w->deadline;
	if (end - now < (uint64_t)slice)
		slice = (int64_t)(end - now);
	bd_wait_sleep(b, t, snap, slice);
	return GO_ON;
}

/* fresh: the stamp was just taken by barrierd_barrier(), in this call (wait_check). */
static int wait_common(struct barrierd *b, const struct target *t, int64_t timeout_ns, bool fresh)
{
	struct wait_state w = {0};
	int ret;

	wait_prepare(b, t);
	/* Step 2, the fast path: loads only. */
	w.fresh = fresh;
	ret = wait_check(b, t, &w, false);
	if (ret != GO_ON)
		return ret;
	ret = wait_start(b, timeout_ns, &w);
	if (ret)
		return ret;
	for (;;) {
		/*
		 * Read the futex words before checking, so no change between them is missed: the
		 * global word for the wait, the flags and the heartbeat for a stale daemon's.
		 */
		uint32_t snap = bd_load_low(global_word(b, t));
		uint32_t snap_flags = bd_load_low(&b->hdr->flags);
		uint32_t snap_hb = bd_load_low(&b->hdr->heartbeat_ns);
		uint64_t now;

		/* A move (found by any thread) puts this stamp under the floor: not judged. */
		if (t->kind != T_VTIME &&
		    t->value <= __atomic_load_n(&b->valid_after, __ATOMIC_ACQUIRE))
			return -ESTALE;
		ret = wait_check(b, t, &w, true);
		if (ret != GO_ON)
			return ret;
		now = host_now(b);
		if (!bd_live(b, now)) {
			ret = wait_stale(b, t, &w, now, snap_flags, snap_hb);
		} else {
			w.stale_end = 0; /* live again: a later stall gets its own bound */
			ret = wait_turn(b, t, &w, now, snap);
		}
		if (ret != GO_ON)
			return ret;
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
