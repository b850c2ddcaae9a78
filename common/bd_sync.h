/* SPDX-License-Identifier: MIT */
/*
 * bd_sync.h - the one home of barrierd's shared-memory primitives: the loads, stores and
 * compare-and-swap of shared words, the fences and the monotonic clock.  The daemon,
 * libbarrierd, barrierctl and the benchmarks use these names for every fence and every atomic
 * access to the state file.  Outside them: the samples, which show the raw protocol without
 * this internal header, and tests that race the file's words on purpose (a foreign writer, a
 * concurrent flag update).  Internal: never installed.
 *
 * The soundness argument is x86-TSO (docs/DESIGN.md, "The x86-TSO facts"): an aligned 64-bit
 * MOV is a single-copy-atomic load or store, loads are not reordered with older loads, stores
 * not with older loads or stores.  Acquire and release below compile to plain MOVs; they keep
 * the *compiler* from reordering, which is all x86 needs for those two orders.  The one order
 * x86 does not keep, a later load performed before an earlier store is visible, needs
 * bd_mfence() or a locked instruction, and a clock read (RDTSC in the vDSO) needs bd_lfence()
 * before it to be ordered at all.
 */
#ifndef BARRIERD_BD_SYNC_H
#define BARRIERD_BD_SYNC_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/*
 * Load a shared 64-bit word (one aligned MOV).  The empty asm hides the pointer's provenance:
 * GCC 12 misjudges atomics on flexible array members (the per-CPU entries) as out-of-bounds.
 */
static inline uint64_t bd_load(const uint64_t *p)
{
	__asm__("" : "+r"(p));
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* The low half of a shared word: its futex word (x86 is little-endian). */
static inline uint32_t bd_load_low(const uint64_t *p)
{
	__asm__("" : "+r"(p));
	return __atomic_load_n((const uint32_t *)p, __ATOMIC_ACQUIRE);
}

/* A shared 32-bit word (a futex word of the file): one aligned MOV. */
static inline uint32_t bd_load32(const uint32_t *p)
{
	__asm__("" : "+r"(p));
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* One byte of a shared field written byte by byte (the boot id). */
static inline uint8_t bd_load8(const uint8_t *p)
{
	__asm__("" : "+r"(p));
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Publish a shared 64-bit word with one aligned store, in program order with earlier stores. */
static inline void bd_store(uint64_t *p, uint64_t v)
{
	__asm__("" : "+r"(p));
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/*
 * Replace *p by v if it still holds *expected (one LOCK CMPXCHG, a full barrier on x86); else
 * load the word into *expected.  True if replaced.  Release on success: every earlier store is
 * visible to a reader that loads v.
 */
static inline bool bd_cas(uint64_t *p, uint64_t *expected, uint64_t v)
{
	__asm__("" : "+r"(p));
	return __atomic_compare_exchange_n(p, expected, v, false, __ATOMIC_RELEASE,
					   __ATOMIC_RELAXED);
}

/* Drain the store buffer; no later load is performed before it (DESIGN fact F3). */
static inline void bd_mfence(void)
{
	__asm__ __volatile__("mfence" ::: "memory");
}

/* No later instruction starts before earlier ones completed locally (fact F5: orders RDTSC). */
static inline void bd_lfence(void)
{
	__asm__ __volatile__("lfence" ::: "memory");
}

/*
 * The stamp fence (rule 5): every earlier store is globally visible, and the clock read that
 * follows is performed after that.
 */
static inline void bd_stamp_fence(void)
{
	__asm__ __volatile__("mfence; lfence" ::: "memory");
}

/* CLOCK_MONOTONIC in nanoseconds (this process's time namespace; never a coarse clock). */
static inline uint64_t bd_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#endif
