/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * barrierd_slot.h - the per-CPU slot the BPF programs write: slot ABI version 1.
 *
 * The one definition of the slots' layout.  The BPF programs write it, the daemon reads it
 * through a read-only mapping, and with BARRIERD_FEAT_DIRECT clients map it too,
 * from a frozen BPF array the daemon hands out on its socket (docs/PROTOCOL.md §6.12): so this
 * layout is ABI.  One 64-byte slot per possible CPU, at 64 * cpu, written only by programs
 * running on that CPU.  Only linux/types.h: the BPF side includes it too.
 */
#ifndef BARRIERD_SLOT_H
#define BARRIERD_SLOT_H

#include <linux/types.h>

#define BARRIERD_SLOT_ABI 1u

/*
 * slot.idle: an absolute state, never a counter (DESIGN rule 2), exchanged on every traced
 * switch.  UNKNOWN until the CPU's first traced switch since the programs were attached, except
 * for CPUs offline at the daemon's start, which the daemon moved from UNKNOWN to IDLE before
 * freezing the map (CLIENT-EVIDENCE.md §6).  Only IDLE is evidence.
 */
#define BARRIERD_SLOT_UNKNOWN 0
#define BARRIERD_SLOT_IDLE 1
#define BARRIERD_SLOT_BUSY 2

/*
 * The ABI asserts of this header and of barrierd.h (which includes this one), in C11 and in
 * C++11 (g++ has no _Static_assert in C++; static_assert there).  A consumer may define it
 * first.
 */
#ifndef BARRIERD_STATIC_ASSERT
#ifdef __cplusplus
#define BARRIERD_STATIC_ASSERT(e, m) static_assert(e, m)
#else
#define BARRIERD_STATIC_ASSERT(e, m) _Static_assert(e, m)
#endif
#endif

/* UNKNOWN must differ from BUSY: the daemon's start-up swap from UNKNOWN must fail on BUSY. */
BARRIERD_STATIC_ASSERT(BARRIERD_SLOT_BUSY != BARRIERD_SLOT_UNKNOWN, "slot abi");

struct barrierd_slot {
	__u64 stamp;	 /* bpf_ktime_get_ns() of the latest event, stored by xchg (rule 1) */
	__u64 vtime;	 /* the .bss vtime that event loaded before its clock read (rule 4) */
	__u64 idle;	 /* BARRIERD_SLOT_*, xchg'ed on every sched_switch */
	__u64 switches;	 /* sched_switch hits on this CPU */
	__u64 events;	 /* evidence hits on this CPU (all programs) */
	__u64 signals;	 /* ring-buffer signals sent from this CPU */
	__u64 sig_stamp; /* stamp of the latest event that was not a daemon thread's */
	__u64 reserved;	 /* 0 */
};

BARRIERD_STATIC_ASSERT(sizeof(struct barrierd_slot) == 64, "one cache line per CPU");
BARRIERD_STATIC_ASSERT(__builtin_offsetof(struct barrierd_slot, stamp) == 0, "slot abi");
BARRIERD_STATIC_ASSERT(__builtin_offsetof(struct barrierd_slot, vtime) == 8, "slot abi");
BARRIERD_STATIC_ASSERT(__builtin_offsetof(struct barrierd_slot, idle) == 16, "slot abi");
BARRIERD_STATIC_ASSERT(__builtin_offsetof(struct barrierd_slot, switches) == 24, "slot abi");
BARRIERD_STATIC_ASSERT(__builtin_offsetof(struct barrierd_slot, events) == 32, "slot abi");
BARRIERD_STATIC_ASSERT(__builtin_offsetof(struct barrierd_slot, signals) == 40, "slot abi");
BARRIERD_STATIC_ASSERT(__builtin_offsetof(struct barrierd_slot, sig_stamp) == 48, "slot abi");

#endif
