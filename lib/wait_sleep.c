// SPDX-License-Identifier: MIT
/*
 * The wait's futex sleeps: on a word's low half, with a bounded timeout (the caller re-checks
 * the full 64-bit value after each), on several words at once with futex_waitv where the
 * kernel has it, and queued on the doorbell's mark so that the daemon counts libbarrierd's
 * sleepers apart from original-layout clients, which cannot ring.
 */
#include "timens.h"
#include "wait_parts.h"

#include <errno.h>
#include <linux/futex.h>
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

#define WAITV_MAX 128 /* the kernel's FUTEX_WAITV_MAX */

/*
 * futex_waitv is missing (ENOSYS: Linux before 5.16) or forbidden (EPERM or ENOSYS under a
 * container's seccomp profile).  Remembered for the process (__atomic, relaxed: a stale 0
 * costs one more failing call, nothing else), so every later sleep goes to FUTEX_WAIT at once.
 */
static int waitv_unavailable;

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
 * daemon counts as a library waiter's (bd_wait_sleep, below, says why).  The entries written.
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
 * The futex compares only 32 bits (a change in the high half alone is not seen), which is why
 * every sleep is bounded and the caller re-checks all 64 bits.
 *
 * The words: the global word (snap_global, read before the last check) or, for wait_cpus, the
 * lagging CPUs' words (each loaded once, for both its check and its expected value).  A
 * change after the caller's check either fails the kernel's compare or wakes us.
 *
 * Last, with a global word, the doorbell's high half, which nobody writes or wakes: queued
 * there, we are counted as libbarrierd's sleeper (PROTOCOL.md §6.7), not as a client that
 * cannot ring, which the daemon would follow every pass for.  Only with a global word: the
 * daemon subtracts the marked from the global words' sleepers.  Its value is loaded, not
 * assumed, so a changed word costs one early return, never a spin.
 */
void bd_wait_sleep(const struct barrierd *b, const struct target *t, uint32_t snap_global,
		   int64_t slice_ns)
{
	struct futex_waitv wv[WAITV_MAX];
	const uint64_t *word = global_word(b, t); /* for FUTEX_WAIT */
	uint32_t val = snap_global;
	struct timespec ts;
	unsigned n = 0, ncpu_words = 0;
	bool need_global = t->kind != T_CPUS;

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
 * The daemon is gone (stopped, not running, or its heartbeat older than the liveness bound).
 * The words: the flags (a restart sets RUNNING, then wakes them) and the heartbeat (a stalled
 * daemon that resumes stores it, then wakes it).  Not the global word: while the daemon is not
 * live no value above the stop snapshot counts, so its changes could only wake us for nothing.
 * The snapshots were loaded before the liveness check that found the daemon gone, so a change
 * after that check fails the kernel's compare instead of being slept through.  Without
 * futex_waitv, the heartbeat word alone, in slices of at most SLICE_NS: a restart stores a
 * heartbeat before it sets RUNNING, and that flag change alone would go unseen.
 */
void bd_wait_sleep_stale(const struct barrierd *b, uint32_t snap_flags, uint32_t snap_hb,
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
