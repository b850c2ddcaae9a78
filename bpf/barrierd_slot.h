/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The per-CPU slot the BPF programs write and the daemon reads through mmap.  Shared by the
 * BPF side and the daemon; not part of the state-file ABI (the daemon folds it into the file).
 */
#ifndef BARRIERD_SLOT_H
#define BARRIERD_SLOT_H

#include <linux/types.h>

/* slot.idle: an absolute state, never a counter (DESIGN rule 2).  0 is BUSY or unknown. */
#define BARRIERD_SLOT_BUSY 0
#define BARRIERD_SLOT_IDLE 1

/* Most daemon threads whose events never signal the ring buffer. */
#define BARRIERD_MAX_DAEMON_TIDS 8

struct barrierd_slot {
	__u64 stamp;	 /* bpf_ktime_get_ns() of the latest event, stored by xchg (rule 1) */
	__u64 vtime;	 /* the .bss vtime that event loaded before its clock read (rule 4) */
	__u64 idle;	 /* BARRIERD_SLOT_IDLE / _BUSY, xchg'ed on every sched_switch */
	__u64 switches;	 /* sched_switch hits on this CPU */
	__u64 events;	 /* evidence hits on this CPU (all programs) */
	__u64 signals;	 /* ring-buffer signals sent from this CPU */
	__u64 sig_stamp; /* stamp of the latest event that was not a daemon thread's */
	__u64 pad;
};

_Static_assert(sizeof(struct barrierd_slot) == 64, "one cache line per CPU");

#endif
