/* SPDX-License-Identifier: MIT */
/*
 * The evidence audit's own record format, shared by its BPF recorder (recorder.bpf.c) and the
 * auditor that drains it.  Deliberately independent of bpf/barrierd_slot.h and slot_logic.h:
 * the audit must not inherit a bug from the code it checks.
 */
#ifndef BARRIERD_AUDIT_RECORD_H
#define BARRIERD_AUDIT_RECORD_H

#include <linux/types.h>

/* What fired.  Every kind is a serialising event the daemon also stamps on. */
#define AUDIT_EV_SOFTIRQ 1 /* irq/softirq_entry */
#define AUDIT_EV_TIMER 2   /* irq_vectors/local_timer_entry */
#define AUDIT_EV_SWITCH 3  /* sched/sched_switch: also the idle bookkeeping */
/*
 * A pread() by the daemon (of the online mask, a sysfs file), entered and returned on this
 * CPU.  A sysfs read takes a mutex (a locked cmpxchg) on the reading CPU between the two: a
 * locked instruction there somewhere in [since, time].  This is how the audit sees the
 * daemon's own-CPU credit (DESIGN rule 7), whose pass point, the daemon's own locked
 * RMWs, no tracepoint shows: the daemon reads the mask right before them, after its clock.
 */
#define AUDIT_EV_LOCKED_KERNEL 4
/*
 * Not an event: the bytes the kernel returned to one of the daemon's pread() calls, the online
 * CPU list (struct audit_mask_record).  A CPU missing from it had its online bit clear at an
 * instant in [since, time]: rule 3's evidence as the kernel answered the daemon, not as the
 * daemon reports it.  No tracepoint fires on a CPU whose bit is clear (their condition is
 * cpu_online()), so nothing else shows when an unplugged CPU stopped.
 */
#define AUDIT_EV_ONLINE_MASK 5

struct audit_record {
	__u64 time;  /* bpf_ktime_get_ns(), read first thing in the probe */
	__u64 since; /* = time, except AUDIT_EV_LOCKED_KERNEL: the pread's entry */
	__u32 cpu;
	__u32 seq;	/* per-CPU sequence number, to prove that nothing was lost */
	__u32 kind;	/* AUDIT_EV_* */
	__u32 prev_pid; /* sched_switch only: 0 is the idle task */
	__u32 next_pid;
	__u32 pad;
};

/* AUDIT_EV_ONLINE_MASK: the record, then the first bytes the read returned. */
#define AUDIT_MASK_BYTES 64
struct audit_mask_record {
	struct audit_record rec;
	__u32 len; /* what pread() returned */
	__u32 pad;
	char mask[AUDIT_MASK_BYTES];
};

/* The recorder's CPU array and sequence counters are sized for at most this many CPUs. */
#define AUDIT_MAX_CPUS 1024

#endif
