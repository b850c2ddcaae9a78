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
	 * The demand horizon (docs/DESIGN.md §4.1): the latest time a waiter may wait past, from
	 * the rings heard and the sleepers found.  The watermark is the horizon while any CPU is
	 * at or below it, else 0: each lagging CPU signals once, at its first event past it.
	 */
	uint64_t horizon;
	uint64_t horizon_pub; /* what ext.served_ns holds */
	bool armed;	      /* following: the horizon moves to the end of every pass */
	long legacy;	      /* following: sleepers that cannot ring, counted in the latest pass */
	uint64_t probe_next;  /* next per-CPU word to probe for waiters */
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
 * One pass: check for a foreign writer, advance vtime, take the credit snapshot (credit only),
 * fold each CPU, publish the globals, wake the changed words, run the watermark handshake.
 * credit: also give idle and offline credit (rules 2 and 3) and credit the CPU the pass runs
 * on (rule 7).  *again is set when the watermark handshake found a stamp that may not have
 * signalled: run another pass.  Returns 0, -EBUSY (another process wrote the file), or
 * -ENOLINK (the programs were detached: the kernel saw switches they did not).
 */
int publisher_pass(struct publisher *p, bool credit, bool *again);

/*
 * Start or stop following, for clients that cannot ring (original-layout ones): while armed,
 * every pass moves the horizon to its end, so every CPU signals its next event, and the
 * header's ARMED flag tells waiters that busy CPUs need no ring.  Disarming wakes the global
 * words so a waiter that decided not to ring re-checks the flag.
 */
void publisher_set_armed(struct publisher *p, bool armed);

/*
 * Raise the horizon to h (a ring's time, or the time sleepers were found), outside a pass:
 * check the file (a foreign writer's words are never overwritten), advance vtime (a vtime
 * waiter's next event must carry a newer one), run the watermark handshake, publish
 * ext.served_ns.  0, or -EBUSY (another writer: stop as a pass would).
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
 * Does a CPU still owe evidence past the horizon that only its own next event can bring: at
 * or below it in the file and in its slot, not idle, online, not the CPU `here` (a credit
 * pass there credits it), and heard from within silent_ns of now (one silent longer runs
 * without ticks and may never signal)?  Loads only.  A credit pass waits for these (it would
 * not complete the horizon's barriers), and every one of them signals when its event comes.
 */
bool publisher_owed(const struct publisher *p, int here, uint64_t now, uint64_t silent_ns);

/*
 * The CPUs to nudge for the demand up to `upto` (a ring's horizon whose nudge deadline came):
 * each online CPU other than `here` that lags it in the file and in its slot, is not idle (idle
 * credit serves those), and that someone still waits for, a sleeper on a global word (every CPU
 * holds it back) or on one of that CPU's own words (barrierd_wait_cpus()).  Sleepers are
 * counted as publisher_count_legacy() counts them, only once a CPU lags.  Sets want[c]; the
 * number set, and in *lagging how many CPUs lag it (waited for or not).  On entry want[c] says
 * whether CPU c can be nudged at all (a nudge thread serves it); the others are not looked at.
 * Past NUDGE_COUNT_MAX lagging CPUs the per-CPU sleepers are not counted: every lagging CPU is
 * taken as waited for (a bound on the futex calls a deadline costs).  Loads and futex counts
 * only: what a nudge brings is evidence by rule 1 alone.
 */
uint64_t publisher_nudge_targets(struct publisher *p, uint64_t upto, int here, bool *want,
				 uint64_t *lagging);

/*
 * Would a credit pass on CPU `here` move a CPU at or below the horizon: one published idle,
 * offline or the daemon's, or `here` itself (DESIGN rule 7)?  Else a fold does as well.
 */
bool publisher_credit_needed(const struct publisher *p, int here);

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

/* Does a CPU that is not busy (idle, offline, unknown, ours) hold the global value (*held)? */
bool publisher_idle_hold(const struct publisher *p, uint64_t *held);

/* Does a CPU lag the horizon (is anything asked for that a fold could bring)? */
static inline bool publisher_lagging(const struct publisher *p)
{
	return p->g_ns <= p->horizon;
}

/* Does an idle, offline or the daemon's CPU hold the global value (a credit pass moves it)? */
bool publisher_credit_holds(const struct publisher *p);

/* Does an idle, offline or unknown CPU hold the global value, older than age_ns? */
bool publisher_idle_holds_back(const struct publisher *p, uint64_t now_ns, uint64_t age_ns);

void publisher_free(struct publisher *p);

#endif
