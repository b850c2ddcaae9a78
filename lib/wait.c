// SPDX-License-Identifier: MIT
/*
 * The futex wait: sleep on a word's low half with a bounded timeout, re-check the full
 * 64-bit value, ring the doorbell when an idle, offline or unknown CPU holds the barrier back.
 */
#include "internal.h"

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

#define SLICE_NS (10 * 1000000LL)     /* longest sleep between liveness re-checks */
#define LOST_RING_SLICE_NS (1000000LL) /* sleep after a ring nobody heard */
#define RERING_WINDOW_NS (200 * 1000LL) /* how long to keep re-ringing (bounded spin) */
#define WAITV_MAX 128

enum target_kind { T_NS, T_VTIME, T_CPUS };

struct target {
	enum target_kind kind;
	uint64_t value;
	const unsigned long *set; /* T_CPUS: a cpu_set_t as bits */
	size_t nbits;
};

static inline int in_set(const struct target *t, uint64_t c)
{
	if (t->kind != T_CPUS)
		return 1;
	if (c >= t->nbits)
		return 0;
	return (t->set[c / (8 * sizeof(long))] >> (c % (8 * sizeof(long)))) & 1;
}

static inline const uint64_t *cpu_word(const struct barrierd *b, const struct target *t,
				       uint64_t c)
{
	return t->kind == T_VTIME ? &b->hdr->per_cpu[c].last_interrupt_vtime
				  : &b->hdr->per_cpu[c].last_interrupt_ns;
}

static inline const uint64_t *global_word(const struct barrierd *b, const struct target *t)
{
	return t->kind == T_VTIME ? &b->hdr->last_interrupt_vtime : &b->hdr->last_interrupt_ns;
}

static int passed(const struct barrierd *b, const struct target *t)
{
	uint64_t f;

	if (b->ncpu == 0)
		return 0;
	/*
	 * A ns stamp at or below valid_after is refused (open_ns; everything once retired).
	 * Acquire: retire() raises the floor before it changes the offset (both release), so a
	 * stamp converted with the retired offset never meets the old floor here.
	 */
	if (t->kind != T_VTIME && t->value <= __atomic_load_n(&b->valid_after, __ATOMIC_ACQUIRE))
		return 0;
	if (bd_trusted(b, global_word(b, t), t->kind == T_VTIME) > t->value)
		return 1;
	if (t->kind != T_CPUS)
		return 0;
	for (uint64_t c = 0; c < b->ncpu; c++)
		if (in_set(t, c) && bd_load(cpu_word(b, t, c)) <= t->value)
			return 0;
	/* Per-CPU values count only while our daemon runs (see bd_trusted). */
	f = bd_load(&b->hdr->flags);
	return (f & BARRIERD_FLAG_RUNNING) && !(f & BARRIERD_FLAG_STOPPED);
}

/*
 * Ring only when the daemon is disarmed (it waits for a ring before it listens to busy CPUs),
 * or a CPU at or below the target is idle, offline, unknown or the daemon's own (BRIEF §4):
 * a busy CPU of an armed daemon brings its own evidence at its next event.
 */
static int need_ring(const struct barrierd *b, const struct target *t)
{
	uint64_t flags = bd_load(&b->hdr->flags);

	if (!b->ext || !(flags & BARRIERD_FEAT_DOORBELL))
		return 0;
	/* Disarmed: no CPU signals the daemon until someone rings. */
	if (!(flags & BARRIERD_FLAG_ARMED))
		return 1;
	for (uint64_t c = 0; c < b->ncpu; c++) {
		if (!in_set(t, c) || bd_load(cpu_word(b, t, c)) > t->value)
			continue;
		if (bd_load(&b->ext->cpu[c].state) != BARRIERD_CPU_BUSY)
			return 1;
	}
	return 0;
}

static uint64_t host_now(const struct barrierd *b)
{
	return bd_clock_raw() - (uint64_t)bd_timens_current(b);
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

/*
 * Sleep until a watched word's low half differs from what we read before the last check, or
 * the slice ends.  The futex compares only 32 bits (a change in the high half alone is not
 * seen), which is why every sleep is bounded and the caller re-checks all 64 bits.
 */
static void sleep_on(const struct barrierd *b, const struct target *t, const uint32_t *snap_global,
		     int64_t slice_ns)
{
	struct timespec ts;

	if (t->kind == T_CPUS) {
		struct futex_waitv wv[WAITV_MAX];
		unsigned n = 0;
		int more = 0;

		for (uint64_t c = 0; c < b->ncpu; c++) {
			const uint64_t *w = cpu_word(b, t, c);
			uint64_t cur;

			if (!in_set(t, c))
				continue;
			/* One load serves the check and the futex's expected value. */
			cur = bd_load(w);
			if (cur > t->value)
				continue;
			if (n == WAITV_MAX - 1) {
				more = 1;
				break;
			}
			memset(&wv[n], 0, sizeof(wv[n]));
			wv[n].uaddr = (uintptr_t)w;
			wv[n].val = (uint32_t)cur;
			wv[n].flags = FUTEX2_SIZE_U32; /* shared: not FUTEX2_PRIVATE */
			n++;
		}
		/* More lagging CPUs than futex_waitv takes: the global word stands for the rest. */
		if (more) {
			memset(&wv[n], 0, sizeof(wv[n]));
			wv[n].uaddr = (uintptr_t)global_word(b, t);
			wv[n].val = *snap_global;
			wv[n].flags = FUTEX2_SIZE_U32;
			n++;
		}
		if (n > 0) {
			to_timespec((int64_t)bd_clock_raw() + slice_ns, &ts); /* absolute */
			syscall(SYS_futex_waitv, wv, n, 0, &ts, CLOCK_MONOTONIC);
			return;
		}
	}
	to_timespec(slice_ns, &ts); /* relative */
	syscall(SYS_futex, (const uint32_t *)global_word(b, t), FUTEX_WAIT, *snap_global, &ts, NULL,
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
	uint64_t start, deadline, fb_deadline;
	bool ns_checked = false;

	/* First use after a fork: learn this process's offset (or retire), before any check. */
	if (bd_timens_stale_fork(b))
		(void)bd_timens_current(b);
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
	deadline = timeout_ns >= 0 ? start + (uint64_t)timeout_ns : UINT64_MAX;
	fb_deadline = b->fallback == BARRIERD_FALLBACK_MEMBARRIER
			      ? start + (uint64_t)b->fallback_after_ns
			      : UINT64_MAX;
	for (;;) {
		/* Read the futex word before checking, so no change between them is missed. */
		uint32_t snap = bd_load_low(global_word(b, t));
		int64_t slice = SLICE_NS;
		uint64_t now, end;
		int ret;

		/* A move (found by any thread) puts this stamp under the floor: not judged. */
		if (t->kind != T_VTIME && t->value <= __atomic_load_n(&b->valid_after, __ATOMIC_ACQUIRE))
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
			if (b->fallback == BARRIERD_FALLBACK_MEMBARRIER)
				return bd_fallback_membarrier();
			return -ESTALE;
		}
		if (now >= fb_deadline)
			return bd_fallback_membarrier();
		if (now >= deadline)
			return -ETIMEDOUT;
		if (need_ring(b, t) && !ring(b, t))
			slice = LOST_RING_SLICE_NS;
		ret = ns_check(b, t, &ns_checked);
		if (ret)
			return ret;
		if (passed(b, t))
			return 0;
		end = deadline < fb_deadline ? deadline : fb_deadline;
		if (end - now < (uint64_t)slice)
			slice = (int64_t)(end - now);
		sleep_on(b, t, &snap, slice);
	}
}

BDLIB_EXPORT int barrierd_wait(struct barrierd *b, uint64_t stamp_ns, int64_t timeout_ns)
{
	struct target t = {.kind = T_NS, .value = stamp_ns};

	if (!b)
		return -EINVAL;
	if (stamp_ns <= b->open_ns)
		return -EINVAL; /* could be passed by a value we never checked */
	return wait_common(b, &t, timeout_ns, false);
}

BDLIB_EXPORT int barrierd_wait_vtime(struct barrierd *b, uint64_t vtime, int64_t timeout_ns)
{
	struct target t = {.kind = T_VTIME, .value = vtime};

	if (!b)
		return -EINVAL;
	return wait_common(b, &t, timeout_ns, false);
}

BDLIB_EXPORT int barrierd_wait_cpus(struct barrierd *b, uint64_t stamp_ns, const void *cpus,
				    size_t setsize, int64_t timeout_ns)
{
	struct target t = {.kind = T_CPUS, .value = stamp_ns, .set = cpus, .nbits = setsize * 8};

	if (!b || !cpus || setsize == 0 || setsize % sizeof(long))
		return -EINVAL;
	if (stamp_ns <= b->open_ns)
		return -EINVAL;
	return wait_common(b, &t, timeout_ns, false);
}

BDLIB_EXPORT int barrierd_barrier(struct barrierd *b, int64_t timeout_ns)
{
	struct target t = {.kind = T_NS};

	if (!b)
		return -EINVAL;
	/*
	 * A stamp equal to open_ns would be refused; the clock moves on within nanoseconds.
	 * Only a clock behind the one at open keeps it there: a move to a namespace behind.
	 */
	for (int i = 0; (t.value = barrierd_stamp_ns(b)) <= b->open_ns; i++) {
		if (i == 1000) {
			bool checked = false;
			int ret = ns_check(b, &t, &checked);

			return ret ? ret : -ESTALE;
		}
		__builtin_ia32_pause();
	}
	return wait_common(b, &t, timeout_ns, true);
}
