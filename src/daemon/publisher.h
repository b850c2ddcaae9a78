/* SPDX-License-Identifier: MIT */
/*
 * The publisher: folds the BPF slots into the state file, gives idle and offline credit on
 * demand, runs the watermark handshake and futex-wakes every word that changed.  It knows the
 * slots and .bss words only as memory, so benchmarks can drive it with simulated arrays.
 * publisher.c holds the pass, step by step; credit.c the credit snapshot and the rule-6 checks.
 */
#ifndef BARRIERD_PUBLISHER_H
#define BARRIERD_PUBLISHER_H

#include "state_file.h"
#include <barrierd_slot.h>

struct demand_facts;

#include <stdbool.h>
#include <stdint.h>

struct publisher {
	struct state_file *sf;
	const struct barrierd_slot *slots; /* read-only: the map is frozen (rule 11) */
	volatile uint64_t *bss_vtime;
	volatile uint64_t *bss_watermark;
	volatile uint64_t *bss_main_switches; /* NULL: no detach check (simulations) */
	volatile uint64_t *bss_quiet_cpu;     /* NULL: publisher_quiet does nothing */
	volatile uint64_t *bss_quiet_upto;
	uint64_t ncpu;
	int online_fd; /* /sys/devices/system/cpu/online, opened before any sandbox */

	/* What we last published: the file must hold exactly this (else another writer). */
	uint64_t vtime;
	uint64_t g_ns, g_vt;
	uint64_t *ns, *vt;
	uint8_t *state;	  /* enum barrierd_cpu_state */
	uint8_t *kind;	  /* enum barrierd_cause of each CPU's latest advance */
	uint8_t *online;  /* from the latest read of the online mask */
	uint8_t *changed; /* per pass: which words changed (1: ns, 2: vtime) */
	char *online_buf; /* the online mask's text, sized for ncpu */
	size_t online_buf_len;

	/* DESIGN rule 6: the main thread's switches, the kernel's count against the program's */
	uint64_t rusage_base, bpf_base;

	/*
	 * The demand horizon H (docs/DEMAND.md), as the demand unit set it (publisher_raise) or a
	 * following pass moved it: the watermark is H while any CPU is at or below it, else 0, so
	 * each lagging CPU signals once, at its first event past it.
	 */
	uint64_t horizon;
	uint64_t served_pub;   /* what ext.served_ns holds */
	bool wake_ns, wake_vt; /* the latest pass moved the global words: publisher_pass_finish */
	long legacy;	     /* following: sleepers that cannot ring, counted in the latest pass */
	uint64_t probe_next; /* next per-CPU word to probe for waiters */
	/*
	 * The other words only we write (publisher_seal): layout, identity, liveness and the
	 * stop snapshot.  A change to any of them is a foreign writer's as surely as one to a
	 * value: a longer heartbeat period, a raised stop snapshot or a smaller ncpu would let a
	 * later writer's values count for longer or cover fewer CPUs.
	 */
	uint64_t sealed[16], sealed_ext[2], hb_last;
	uint64_t futex_wakes; /* statistics */
};

/*
 * Adopt the file: keep every value already published this boot, resume vtime above all of
 * them (max + 1), store it in the file and then in .bss.  Call before attaching anything.
 */
int publisher_init(struct publisher *p, struct state_file *sf, const struct barrierd_slot *slots,
		   volatile uint64_t *bss_vtime, volatile uint64_t *bss_watermark,
		   volatile uint64_t *bss_main_switches, uint64_t ncpu, int online_fd);

/* Take the rule-6 baseline; call on the main thread once the programs are attached (credit.c). */
void publisher_arm_detach_check(struct publisher *p);

/*
 * One pass, but for its wakes: check for a foreign writer, advance vtime, take the credit
 * snapshot (credit only), fold each CPU, publish the globals, run the watermark handshake.
 * credit: also give idle and offline credit (rules 2 and 3) and credit the CPU the pass runs
 * on (rule 7).  follow: H moves to a clock reading later than everything folded first, and the
 * sleepers that cannot ring are counted (p->legacy) before any wake.  *again is set when the
 * handshake found a stamp that may not have signalled: run another pass.  Returns 0, -EBUSY
 * (another process wrote the file), or -ENOLINK (the programs were detached: the kernel saw
 * switches they did not).  publisher_pass_finish must follow a 0.
 */
int publisher_pass_fold(struct publisher *p, bool credit, bool follow, bool *again);

/* The pass's end: publish the served word (after its handshake), then wake what changed. */
void publisher_pass_finish(struct publisher *p, uint64_t served);

/* Both, the served word unchanged (simulations and benchmarks). */
int publisher_pass(struct publisher *p, bool credit, bool *again);

/* Store ext.served_ns (docs/DEMAND.md): only after the handshake for a horizon at least it. */
void publisher_publish_served(struct publisher *p, uint64_t served);

/*
 * Raise H to h (a ring's time, or the time sleepers were found), outside a pass: check the
 * file (a foreign writer's words are never overwritten), advance vtime (a vtime waiter's next
 * event must carry a newer one), run the watermark handshake.  0, 1 (a stamp moved under the
 * handshake: a pass must fold it), or -EBUSY (another writer: stop as a pass would).
 */
int publisher_raise(struct publisher *p, uint64_t h);

/*
 * Keep the CPU `here` (the one this thread runs on) from signalling the current horizon, after
 * a ring's raise.  It needs no signal: the ring's credit pass credits it if it runs there (rule
 * 7), and if it runs elsewhere our switch away from `here` has stamped it past the horizon
 * first (daemon events stamp when sched_switch is evidence: call this only then).  Its signal
 * would only wake us once more (the ringer we preempted there, going to sleep).
 */
void publisher_quiet(struct publisher *p, int here);

/*
 * The demand unit's facts (demand.h) against the horizon H, for the CPU `here` this thread runs
 * on: whether a CPU lags H, whether a busy one owes an event past it (heard from within
 * silent_ns: one silent longer runs without ticks), whether a credit pass would move one, who
 * holds the global value, the lowest value of the CPUs only credit moves.  Loads only.
 */
void publisher_facts(const struct publisher *p, uint64_t horizon, int here, uint64_t now,
		     uint64_t silent_ns, struct demand_facts *f);

/*
 * The facts for a nudge look at `upto`: lag[c] for each CPU that can be nudged (can[c]) and
 * lags it in the file and in its slot, online, not idle, not `here`; *global, the sleepers on
 * the global words, and own[c], each lagging CPU's own sleepers (counted only while nobody
 * sleeps on a global word and at most DEMAND_NUDGE_COUNT_MAX CPUs lag: a bound on the futex
 * calls a look costs).  Returns how many lag.  Loads and futex counts only.
 */
uint64_t publisher_nudge_facts(struct publisher *p, uint64_t upto, int here, const bool *can,
			       bool *lag, long *own, long *global);

/*
 * How many threads sleep on the file's words without being libbarrierd's (which also queue on
 * the doorbell's high half when they sleep on a global word): the global words' sleepers less
 * the marked ones, plus every sleeper on up to max_cpus per-CPU words (rotating).  Counted with
 * FUTEX_CMP_REQUEUE onto the same word: nobody is woken.  An estimate (the counts are not taken at
 * one instant); it only decides when to follow.  confirm: the global words' part counted twice,
 * the smaller count kept (library sleepers caught arriving and leaving at once are not counted).
 */
long publisher_count_legacy(struct publisher *p, uint64_t max_cpus, long *global, bool confirm);

/* Every per-CPU word still what we wrote?  0, or -EBUSY (another writer). */
int publisher_verify(struct publisher *p);

/*
 * Record the header words only we write, as they are now (publisher_init does it; the daemon
 * again once it has stored its generation, pid and heartbeat period).
 */
void publisher_seal(struct publisher *p);

/* Refresh the heartbeat, once publisher_check() vouches for the file: 0 or -EBUSY. */
int publisher_heartbeat(struct publisher *p, uint64_t now_ns);

/*
 * Does the file hold exactly what this daemon published (magic, vtime, the globals and every
 * per-CPU word)?  0, or -EBUSY: another writer.
 */
int publisher_check(struct publisher *p);

void publisher_free(struct publisher *p);

#endif
