/* SPDX-License-Identifier: MIT */
/*
 * Demand (docs/DEMAND.md): when the daemon looks.  One unit owns every decision about when a
 * pass, a probe or a nudge runs: the demand horizon H (the watermark's value) and the served
 * word S it publishes, following and its hold, the credit deferral, the fold and follow caps,
 * the nudge schedule and every due time.  It never reads the slots or the file: the daemon
 * gathers facts (publisher_facts and the counts), hands them in, and carries out the actions it
 * gets back.  So every decision here is a function of its state and the facts, without a
 * syscall, and tested table by table (tests/unit/test_demand.c).
 *
 * None of it is evidence: what a pass publishes is decided by the slots and the credit rules
 * alone.  A wrong decision here delays a waiter (to the next heartbeat fold at worst), never
 * makes one return early; S is a promise about when the daemon looks, which the library uses
 * only to decide whether to ring.
 */
#ifndef BARRIERD_DEMAND_H
#define BARRIERD_DEMAND_H

#include "nudge.h"
#include "rate_limit.h"

#include <stdbool.h>
#include <stdint.h>

/* Pass caps (docs/DEMAND.md, "Caps"): folds, and a following daemon's passes. */
#define DEMAND_FOLD_RATE 5000
#define DEMAND_FOLD_BURST 64
#define DEMAND_FOLLOW_GAP_NS (1000000ULL)
#define DEMAND_FOLLOW_BURST 8
#define DEMAND_FOLLOW_CPU_PERMILLE 40
#define DEMAND_FOLLOW_CPU_WINDOW_NS (40000000ULL)
#define DEMAND_FOLLOW_MAX_GAP_NS (10000000ULL)
/* How long the daemon follows after the last sign of a client that cannot ring. */
#define DEMAND_FOLLOW_HOLD_NS (1000000000ULL)
/*
 * The peek: while not following and while a peek window is open, how often the global words
 * are counted for sleepers that cannot ring (two futex counts when nobody sleeps, no pass), so
 * that such a client's first barrier is served within 10 ms however long the daemon was idle.
 * A wake-up of the daemon for nothing else costs tens of microseconds on a VM: any wake-up in
 * the second half of the period peeks too and starts the next period, so a busy daemon adds
 * few.  Every CPU's per-CPU words are probed at the heartbeat only.
 *
 * The window: a client that starts opens the state file first.  An open of the file (the
 * daemon watches it, demand_opened), the daemon's start and every sleeper found that cannot
 * ring keep the window open for DEMAND_PEEK_WINDOW_NS more; outside it nothing peeks, and a
 * client that opened the file earlier is found by the heartbeat's probe.  The first peek of a
 * window that opens after a quiet period is DEMAND_PEEK_FIRST_NS after the open (the client
 * maps the file and goes to sleep meanwhile), never sooner than a period after the previous
 * peek: opens in a loop make the daemon peek at most as often as DEMAND_PEEK_NS allows.
 */
#define DEMAND_PEEK_NS (8000000ULL)
#define DEMAND_PEEK_FIRST_NS (2000000ULL)
#define DEMAND_PEEK_WINDOW_NS (500000000ULL)
/* Nudge looks again at CPUs that still lag: how often, and how often while nobody sleeps. */
#define DEMAND_NUDGE_RETRIES 4
#define DEMAND_NUDGE_RETRY_NS (1000000ULL)
/* A following daemon's horizons, queued for nudges at most this often. */
#define DEMAND_NUDGE_TRACK_NS (1000000ULL)
/* Lagging CPUs past which the per-CPU sleepers are not counted: all are taken as waited for. */
#define DEMAND_NUDGE_COUNT_MAX 64

struct demand_cfg {
	uint64_t heartbeat_ns;	 /* --heartbeat-period: the probe and the heartbeat fold */
	uint64_t beat_ns;	 /* the tick: the heartbeat, or less for the watchdog */
	uint64_t idle_credit_ns; /* --idle-credit-interval */
	uint64_t nudge_after_ns; /* --nudge-after; 0: no nudges */
	uint64_t credit_rate;	 /* --max-credit-rate */
	bool always_follow;	 /* --always-armed */
	bool nudges;		 /* nudge threads run */
	bool opens_watched; /* opens of the file are reported (demand_opened); else peek always */
};

/*
 * What the daemon found, gathered for one decision.  The per-CPU facts are taken against the
 * unit's own H and S (publisher_facts); the counts only where an action asked for them.
 */
struct demand_facts {
	uint64_t now;
	uint64_t g;	    /* the published global value */
	bool lagging;	    /* the global value is at or below H: a fold may bring what is asked */
	bool owed;	    /* a busy CPU at or below H owes an event, heard from lately */
	bool credit_needed; /* a credit pass would move a CPU at or below H */
	uint64_t hold;	    /* g, while a CPU not busy (idle, offline, unknown, ours) holds it; 0 */
	/*
	 * The lowest value of a CPU no event of its own is sure to move soon: idle, offline, ours,
	 * or one whose latest event was a daemon thread's (those never signal).  S stays below it.
	 * UINT64_MAX: none.
	 */
	uint64_t quiet_floor;
	/* The lowest value of a CPU a credit pass moves now (quiet, and not busy); UINT64_MAX none
	 */
	uint64_t credit_floor;
	long legacy; /* sleepers that cannot ring, as counted; 0 when not counted */
	long global; /* every sleeper on the global words (the probe's count); 0 */
};

/* What to do now (demand_duties, demand_pass), as bits. */
enum {
	DEMAND_BEAT = 1 << 0,	/* heartbeat duties: file check, heartbeat, watchdog, status */
	DEMAND_PROBE = 1 << 1,	/* count sleepers: global words and PROBE_CPUS per-CPU words */
	DEMAND_PEEK = 1 << 2,	/* count sleepers on the global words only */
	DEMAND_NUDGE = 1 << 3,	/* a nudge look (demand_nudge_upto, demand_nudge_done) */
	DEMAND_CREDIT = 1 << 4, /* a credit pass (a fold with credit) */
	DEMAND_FOLD = 1 << 5,	/* a fold pass */
};

struct demand {
	struct demand_cfg cfg;
	uint64_t horizon; /* H: the latest stamp asked for; the watermark while a CPU lags it */
	uint64_t served;  /* S: every ns wait with a stamp at or below it is served (DEMAND.md) */

	bool following;	       /* a client that cannot ring waits: H moves at every pass */
	uint64_t follow_until; /* following ends then (DEMAND_FOLLOW_HOLD_NS) */
	bool credit_pending;   /* a credit pass is asked for */
	bool deferring;	       /* it waits for busy CPUs' events past H */
	uint64_t credit_asked; /* when the pending credit pass was asked for */
	uint64_t last_credit;  /* when the latest credit pass ran */
	bool fold_asked;       /* a signal, a beat, a pass that asked to go again */
	bool beat_fold;	       /* the heartbeat's fold (runs even while deferring) */
	bool signalled;	       /* a ring-buffer signal since the last decision */
	bool paused;	       /* out of tokens: signals and rings unwatched until paused_due */
	uint64_t paused_due;   /* when a pass token is due, while paused */
	struct rate_limit credit_limit, fold_limit, follow_limit;
	uint64_t cpu_tat; /* the follow CPU budget's theoretical arrival time */

	uint64_t next_beat, next_probe, next_peek;
	bool peeking;	     /* the peek window is open (the daemon then ignores opens) */
	uint64_t peek_until; /* when it closes; UINT64_MAX: never (opens not watched) */
	uint64_t peek_from;  /* the earliest time the next peek may run */
	uint64_t last_peek;  /* when the global words were last counted (peek or probe) */

	struct nudge_queue nq;	    /* horizons whose nudge deadline has not come */
	uint64_t retry_h, retry_at; /* a horizon looked at again; 0: none */
	unsigned retry_idle;	    /* looks in a row that found CPUs lagging, nobody waiting */
	uint64_t tracked_at;	    /* when a following pass's horizon was last queued */
	bool track_pending;	    /* one was skipped since: queue it at tracked_at + interval */
	bool beat_look;		    /* the beat's look at S is due (demand_nudge_upto) */
	bool beat_only;		    /* the look under way is the beat's alone */
};

void demand_init(struct demand *d, const struct demand_cfg *cfg, uint64_t now);

/*
 * A ring (or rings the doorbell thread missed) whose ringers all stamped before `when`: H rises
 * to it, a credit pass is asked for, the horizon waits for its nudge deadline.  S rises to H:
 * the caller runs the watermark handshake for H (publisher_raise) and then publishes S.
 */
void demand_ring(struct demand *d, uint64_t now, uint64_t when);

/*
 * The state file was opened at or before `now` (by anyone; an overflow of the daemon's queue of
 * open events counts as an open): the peek window stays open until now + DEMAND_PEEK_WINDOW_NS.
 * While it is open, `peeking` is set and the daemon need not report opens: it reads those that
 * queued meanwhile when the window closes, and reports them then.
 */
void demand_opened(struct demand *d, uint64_t now);

/* Opens are no longer reported (the watch is gone): the window never closes. */
void demand_opens_lost(struct demand *d);

/* The doorbell thread sat out its rate limit (rings faster than it serves them): follow. */
void demand_saturated(struct demand *d, uint64_t now);

/* A busy CPU signalled (the ring buffer had records). */
void demand_signal(struct demand *d);

/*
 * The probe's or the peek's counts (f->legacy, f->global, and the per-CPU facts): a sleeper
 * that cannot ring starts following and is served as a ring (H and S rise to now: *raise is
 * set, and the caller runs publisher_raise and publishes S); a sleeper on a global word while a
 * CPU not busy held the global value back for a whole heartbeat (one hidden by a marked
 * sleeper) gets a credit pass.  probe: the heartbeat's (the hidden-sleeper rule is its alone).
 */
void demand_probed(struct demand *d, const struct demand_facts *f, bool probe, bool *raise);

/* Which duties are due at `now` (BEAT, PROBE, PEEK, NUDGE); each is then not due again. */
unsigned demand_duties(struct demand *d, uint64_t now);

/*
 * Given the facts now, which pass runs now: DEMAND_CREDIT, DEMAND_FOLD or 0.  Takes the pass's
 * tokens.  Out of tokens, d->paused is set: the daemon stops watching the signals and the
 * doorbell until d->paused_due (they only ask for passes, and the pass then runs anyway).
 */
unsigned demand_pass(struct demand *d, const struct demand_facts *f);

/* A pass that asked to go again (the handshake saw a stamp move): may it run now? */
bool demand_again(struct demand *d, uint64_t now);

/*
 * After a pass (folded, handshake done, before its wakes): H as the pass left it (a following
 * pass moves it), what it found.  Raises S where the promise holds: following, to H if no CPU
 * that is not busy lags H, else below the lowest of them; asks for a credit pass when a CPU
 * that is not busy lags S (the invariant); asks for a pass when `again`.  Returns true when
 * sleepers that cannot ring were counted in the pass: the caller counts them again after the
 * wakes and calls demand_legacy_asleep.
 */
bool demand_after_pass(struct demand *d, const struct demand_facts *f, uint64_t pass_horizon,
		       bool credit, bool again);

/*
 * Sleepers that cannot ring were still asleep after a following pass's wakes (f->legacy): a
 * ring for them at f->now (*raise: H and S rose, run publisher_raise, publish S), a credit pass
 * if a CPU not busy lags it.
 */
void demand_legacy_asleep(struct demand *d, const struct demand_facts *f, bool *raise);

/* The daemon's CPU time `used` since the last charge: the follow gate's budget. */
void demand_charge(struct demand *d, uint64_t now, uint64_t used);

/* When the loop must look again without any event (its one timer), given the facts now. */
uint64_t demand_due(const struct demand *d, const struct demand_facts *f);

/* A nudge look is due (DEMAND_NUDGE): the horizon the CPUs must pass, 0 for none. */
uint64_t demand_nudge_upto(struct demand *d, uint64_t now);

/*
 * Whom to nudge for `upto`: each CPU that can be nudged (can[c]), lags it (lag[c]: in the file
 * and its slot, online, not idle, not ours) and is waited for: someone sleeps on a global word
 * (global > 0), on its own words (own[c] > 0), or more than DEMAND_NUDGE_COUNT_MAX CPUs lag (the
 * per-CPU words were not counted).  Sets want[c]; returns the number set.
 */
uint64_t demand_nudge_pick(uint64_t ncpu, const bool *can, const bool *lag, const long *own,
			   long global, uint64_t lagging, bool *want);

/*
 * The look's result: lagging CPUs, targets picked, and held_until (when the rate limit allows
 * a nudge it held back; 0 none): when to look again.
 */
void demand_nudge_done(struct demand *d, uint64_t now, uint64_t upto, uint64_t lagging,
		       uint64_t targets, uint64_t held_until);

#endif
