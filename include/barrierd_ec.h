/* SPDX-License-Identifier: MIT */
/*
 * barrierd_ec.h - event counts on barrierd (libbarrierd.so.1, version node LIBBARRIERD_1.1).
 *
 * An event count is a counter that producers increment and waiters block on until it moves
 * past a value they saw.  Nobody pays for waiting when nobody waits: a single producer's
 * increment is one non-atomic instruction (no lock prefix), a multi-producer's one atomic.  A
 * waiter sets a "sleepers" flag in the same word; a racing non-atomic increment can overwrite
 * it, so before it blocks for good the waiter takes a barrierd barrier for a stamp taken after
 * the flag was set: once every CPU has serialised after that stamp, no increment that read the
 * word without the flag can still be in flight (an instruction completes before the CPU's next
 * serialising event), and every later increment sees the flag and wakes it.  Concurrency Kit's
 * ck_ec assumes instead that every CPU takes an interrupt within a second, and waits that
 * second before it trusts the flag.  docs/PRIMITIVES.md has the argument.
 *
 * The control word is ABI: bit 0 is the sleepers flag, bits 1-63 the counter (value << 1); its
 * low 32 bits (the first four bytes: x86 is little-endian) are the futex word.  The
 * increments are inline so that a producer calls no function when nobody waits.
 */
#ifndef BARRIERD_EC_H
#define BARRIERD_EC_H

#include <barrierd.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BARRIERD_EC_FLAG 1ULL	/* control word: someone may sleep on the word */
#define BARRIERD_EC_ONE 2ULL	/* control word: one increment */
#define BARRIERD_EC_SHARED 0x1u /* barrierd_ec_init(): the word lives in shared memory */

struct barrierd_ec {
	uint64_t word;	/* (value << 1) | sleepers flag: the ABI above */
	uint32_t flags; /* BARRIERD_EC_SHARED: shared futexes; else process-private ones */
	uint32_t reserved;
};

/*
 * Set the value (no waiter may use it yet).  0, or -EINVAL (unknown flags, value >= 2^63).
 * The value is modulo 2^63 (two adds of 2^62 wrap it): a waiter's expected value must not be
 * lapped between its read and its wait, or the wait sees no move.
 */
int barrierd_ec_init(struct barrierd_ec *ec, uint64_t value, unsigned flags);

/* The current value (63 bits). */
static inline uint64_t barrierd_ec_value(const struct barrierd_ec *ec)
{
	return __atomic_load_n(&ec->word, __ATOMIC_ACQUIRE) >> 1;
}

/*
 * The slow path of an increment that found the flag: clear it and wake every sleeper.  Only the
 * increments may call it: the waiters count on every AND following an increment that read the
 * flag (docs/PRIMITIVES.md §1).
 */
void barrierd_ec_wake(struct barrierd_ec *ec);

/*
 * Single producer: add delta (at most 2^62) with one non-atomic read-modify-write (xadd
 * without lock).  Only one thread may increment an event count that uses the single-producer
 * forms, and only with them: a locked add racing the unlocked one can be lost.  The
 * producer's earlier stores are visible before the new value (x86 keeps stores in order).
 * It must stay ONE instruction: an interrupt lands between instructions, and that is what
 * makes a waiter's barrier prove that no increment which read the word without the flag is
 * still in flight.  An add of 0 does nothing: a waiter's argument counts on every store of a
 * producer moving the value (docs/PRIMITIVES.md §1).
 */
static inline void barrierd_ec_add_sp(struct barrierd_ec *ec, uint64_t delta)
{
	uint64_t old = delta << 1;

	if (__builtin_expect(delta == 0, 0))
		return;
	__asm__ __volatile__("xaddq %0, %1" : "+r"(old), "+m"(ec->word) : : "memory", "cc");
	if (__builtin_expect(old & BARRIERD_EC_FLAG, 0))
		barrierd_ec_wake(ec);
}

static inline void barrierd_ec_inc_sp(struct barrierd_ec *ec)
{
	barrierd_ec_add_sp(ec, 1);
}

/*
 * Any number of producers: one locked xadd; the flag seen in its result wakes the sleepers.
 * delta as above (an add of 0 does nothing).
 */
static inline void barrierd_ec_add(struct barrierd_ec *ec, uint64_t delta)
{
	uint64_t old;

	if (__builtin_expect(delta == 0, 0))
		return;
	old = __atomic_fetch_add(&ec->word, delta << 1, __ATOMIC_SEQ_CST);

	if (__builtin_expect(old & BARRIERD_EC_FLAG, 0))
		barrierd_ec_wake(ec);
}

static inline void barrierd_ec_inc(struct barrierd_ec *ec)
{
	barrierd_ec_add(ec, 1);
}

/*
 * Wait until the value differs from old_value.  Spins briefly, then sets the flag, stamps and
 * sleeps in short slices until b says every CPU passed the stamp (or, with no live daemon, for
 * ck_ec's conservative second), then blocks on the futex until an increment wakes it.  A
 * waiter that finds the flag already set (another waiter's) does not block for good on it: it
 * sleeps in slices of at most 10 ms until the value moves or it can set the flag itself.
 * timeout_ns < 0: no deadline.  b may be NULL (the conservative second always).
 * Returns 0 (the value moved), -ETIMEDOUT, or -EINVAL (old_value above 2^63 - 1, unknown
 * flags in ec).
 */
int barrierd_ec_wait(struct barrierd_ec *ec, struct barrierd *b, uint64_t old_value,
		     int64_t timeout_ns);

/*
 * The same, and pred(ec, arg) is called before every sleep and after every wake-up: a non-zero
 * result ends the wait and is returned (the value need not have moved).  pred must not block.
 * A value that moved is seen first (0).  pred NULL: barrierd_ec_wait().
 */
int barrierd_ec_wait_pred(struct barrierd_ec *ec, struct barrierd *b, uint64_t old_value,
			  int (*pred)(const struct barrierd_ec *ec, void *arg), void *arg,
			  int64_t timeout_ns);

#ifdef __cplusplus
}
#endif

#endif /* BARRIERD_EC_H */
