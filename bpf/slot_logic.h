/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The evidence logic, shared by the production programs (barrierd.bpf.c) and the test-only
 * object (barrierd_test.bpf.c), which drives it with plain arguments through BPF_PROG_TEST_RUN.
 * The includer defines the maps `slots` and `signal_rb` and the globals named below.
 */
#ifndef BARRIERD_SLOT_LOGIC_H
#define BARRIERD_SLOT_LOGIC_H

#include <barrierd_slot.h>

/*
 * Globals in .bss, written by the daemon through the skeleton's mmap:
 *   vtime          published vtime; the daemon stores it in the state file first, here second
 *   watermark      signal when a CPU's previous stamp is <= this; 0 means never signal
 *   switch_stamps  nonzero: sched_switch is an evidence tracepoint (it stamps); it always
 *                  tracks idle state
 *   daemon_tids[]  global tids of the daemon's threads: their events never signal
 *   main_tid       the daemon's main thread: switches with it as prev are counted in
 *   main_switches  for the detach check (rule 6)
 *   quiet_cpu, quiet_upto  CPU + 1 that must not signal while the watermark is at or below
 *                  quiet_upto (the daemon's own CPU after a ring: publisher_quiet)
 */

static __always_inline int is_daemon_tid(__u32 tid)
{
	if (tid == 0)
		return 0;
#pragma unroll
	for (int i = 0; i < BARRIERD_MAX_DAEMON_TIDS; i++)
		if (daemon_tids[i] == tid)
			return 1;
	return 0;
}

/*
 * Stamp the slot of this CPU.  Order matters, each step for a reason:
 *  1. load vtime from .bss *before* the clock (rule 4): the daemon published it in the state
 *     file before .bss, so a client that read an older vtime did so before this event;
 *  2. read the clock and exchange it into the slot: the exchange is a locked instruction, it
 *     cannot be performed before the clock read that produced its operand, and no later load
 *     of this CPU can be performed before it (rule 1);
 *  3. store the vtime after the exchange: x86 keeps stores in order, so a daemon that sees
 *     this vtime also sees that the exchange (the serialising event) already happened;
 *  4. load the watermark after the exchange: either this load sees the daemon's new watermark
 *     or the daemon's re-read (after its MFENCE) sees our stamp (docs/DESIGN.md, "The
 *     watermark handshake").
 * Events of the daemon's own threads never signal (its sleeps and wake-ups are switches too,
 * and would signal the next pass forever), and they must not use up this CPU's one signal per
 * watermark either: the signal decision uses sig_stamp, the latest stamp of a non-daemon event (or
 * the exchanged-out stamp, if older).  It is a heuristic for waking the daemon, not evidence, so
 * plain accesses do.
 */
static __always_inline void stamp_slot(struct barrierd_slot *slot, __u32 cpu, int daemon)
{
	__u64 vt = *(volatile __u64 *)&vtime;
	__u64 now = bpf_ktime_get_ns();
	__u64 prev_sig = slot->sig_stamp;

	if (!daemon)
		slot->sig_stamp = now;
	__u64 prev = __sync_lock_test_and_set(&slot->stamp, now);

	/*
	 * Nested runs can leave sig_stamp newer than the stamp the daemon folded; the exchange's
	 * previous value cannot be newer than what the daemon saw or will see, so taking the
	 * older of the two never loses a signal.
	 */
	if (prev < prev_sig)
		prev_sig = prev;

	*(volatile __u64 *)&slot->vtime = vt;
	/* Counters below are written by this CPU only (the daemon only reads them): no lock. */
	slot->events++;

	__u64 wm = *(volatile __u64 *)&watermark;
	/* The bound before the CPU: the daemon stores them the other way round (publisher_quiet).
	 */
	__u64 qupto = *(volatile __u64 *)&quiet_upto;
	__u64 qcpu = *(volatile __u64 *)&quiet_cpu;

	if (wm != 0 && prev_sig <= wm && !daemon && !(qcpu == (__u64)cpu + 1 && wm <= qupto)) {
		slot->signals++;
		bpf_ringbuf_output(&signal_rb, &cpu, sizeof(cpu), BPF_RB_FORCE_WAKEUP);
	}
}

/* An evidence tracepoint (irq, softirq, timer, ...): stamp. */
static __always_inline int on_event(__u32 cpu, __u32 cur_tid)
{
	struct barrierd_slot *slot = bpf_map_lookup_elem(&slots, &cpu);

	if (!slot)
		return 0;
	stamp_slot(slot, cpu, is_daemon_tid(cur_tid));
	return 0;
}

/*
 * sched_switch: stamp (if it is an evidence tracepoint), then exchange the absolute idle state
 * of what runs next.  The exchange is a locked store: it is never left in a store buffer, so
 * the daemon cannot read a stale IDLE after this CPU has left idle (rule 2).
 */
static __always_inline int on_switch(__u32 cpu, __u32 prev_tid, __u32 next_pid)
{
	struct barrierd_slot *slot;

	/* Counted before anything can fail: a miss here would look like a detach (rule 6). */
	if (prev_tid != 0 && prev_tid == main_tid)
		__sync_fetch_and_add(&main_switches, 1);
	slot = bpf_map_lookup_elem(&slots, &cpu);
	if (!slot)
		return 0;
	slot->switches++;
	if (switch_stamps)
		/*
		 * A switch to or from a daemon thread is the daemon's own doing: switching it in
		 * must not signal either, or each wake-up of the daemon would signal the next
		 * one and the daemon would chase itself across CPUs.
		 */
		stamp_slot(slot, cpu, is_daemon_tid(prev_tid) || is_daemon_tid(next_pid));
	__sync_lock_test_and_set(&slot->idle,
				 next_pid == 0 ? BARRIERD_SLOT_IDLE : BARRIERD_SLOT_BUSY);
	return 0;
}

#endif
