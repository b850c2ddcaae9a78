// SPDX-License-Identifier: MIT
/*
 * Demand: when the daemon looks (demand.h, docs/DEMAND.md).  No syscalls, no shared memory:
 * the state here and the facts handed in decide everything, so tests/unit/test_demand.c drives
 * it without a daemon.
 */
#include "demand.h"

#include <stddef.h>

static uint64_t umax(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static uint64_t due_min(uint64_t due, uint64_t t)
{
	return t && (!due || t < due) ? t : due;
}

void demand_init(struct demand *d, const struct demand_cfg *cfg, uint64_t now)
{
	*d = (struct demand){.cfg = *cfg};
	if (!d->cfg.beat_ns || d->cfg.beat_ns > d->cfg.heartbeat_ns)
		d->cfg.beat_ns = d->cfg.heartbeat_ns;
	if (!d->cfg.nudge_after_ns)
		d->cfg.nudges = false;
	rate_limit_init(&d->credit_limit, cfg->credit_rate, BARRIERD_CREDIT_BURST);
	rate_limit_init(&d->fold_limit, DEMAND_FOLD_RATE, DEMAND_FOLD_BURST);
	rate_limit_init(&d->follow_limit, 1000000000ULL / DEMAND_FOLLOW_GAP_NS,
			DEMAND_FOLLOW_BURST);
	d->following = cfg->always_follow;
	d->last_credit = now;
	d->next_beat = now + d->cfg.beat_ns;
	d->next_probe = now + d->cfg.heartbeat_ns;
	d->next_peek = now + DEMAND_PEEK_NS;
	d->peek_from = d->next_peek - DEMAND_PEEK_NS / 2;
	d->last_peek = now;
	/* The start opens a window: clients that waited for the daemon are found by a peek. */
	d->peeking = true;
	d->peek_until = cfg->opens_watched ? now + DEMAND_PEEK_WINDOW_NS : UINT64_MAX;
}

void demand_opened(struct demand *d, uint64_t now)
{
	if (!d->peeking) {
		/*
		 * The opener maps the file and goes to sleep in the meantime: the first look a
		 * little later, but never sooner than a period after the previous one, so that
		 * opens in a loop, each closing window reopened at once, add no peeks.
		 */
		d->peeking = true;
		d->next_peek = umax(now + DEMAND_PEEK_FIRST_NS, d->last_peek + DEMAND_PEEK_NS);
		d->peek_from = d->next_peek;
	}
	d->peek_until = umax(d->peek_until, now + DEMAND_PEEK_WINDOW_NS);
}

void demand_opens_lost(struct demand *d)
{
	d->cfg.opens_watched = false;
	d->peeking = true;
	d->peek_until = UINT64_MAX;
}

/* A sleeper that cannot ring was found: a sign of such clients, the window stays open. */
static void legacy_seen(struct demand *d, uint64_t now)
{
	if (d->peeking)
		d->peek_until = umax(d->peek_until, now + DEMAND_PEEK_WINDOW_NS);
	else
		demand_opened(d, now);
}

static void follow(struct demand *d, uint64_t now)
{
	d->following = true;
	d->follow_until = now + DEMAND_FOLLOW_HOLD_NS;
}

static void ask_credit(struct demand *d, uint64_t now)
{
	if (!d->credit_pending)
		d->credit_asked = now;
	d->credit_pending = true;
}

/*
 * S rose: its nudge deadline.  A following daemon raises S at most once a pass: those are
 * queued at most once per DEMAND_NUDGE_TRACK_NS (coalesce); one skipped is queued when that
 * interval ends (track_pending, demand_nudge_upto), so the latest is never lost.
 */
static void track(struct demand *d, uint64_t now, bool coalesce)
{
	if (!d->cfg.nudges)
		return;
	if (coalesce && now < d->tracked_at + DEMAND_NUDGE_TRACK_NS) {
		d->track_pending = true;
		return;
	}
	if (coalesce) {
		d->tracked_at = now;
		d->track_pending = false;
	}
	nudge_queue_push(&d->nq, d->served);
}

/* Raise S to s; true if it rose. */
static bool serve(struct demand *d, uint64_t s)
{
	if (s <= d->served)
		return false;
	d->served = s;
	return true;
}

/*
 * The highest S that a following pass's H supports without a credit pass: H, but below every
 * CPU that no event of its own will move (idle, offline, ours): those are served only by credit.
 */
static uint64_t follow_served(const struct demand *d, const struct demand_facts *f)
{
	uint64_t s = d->horizon;

	if (f->quiet_floor <= s)
		s = f->quiet_floor ? f->quiet_floor - 1 : 0;
	return s;
}

void demand_ring(struct demand *d, uint64_t now, uint64_t when)
{
	d->horizon = umax(d->horizon, when);
	/* Busy CPUs: the caller's handshake for H.  The others: the credit pass asked here. */
	ask_credit(d, now);
	if (serve(d, d->horizon))
		track(d, now, false);
}

void demand_saturated(struct demand *d, uint64_t now)
{
	/* A ring per barrier costs more than following, and lost rings cost 1 ms sleeps. */
	follow(d, now);
}

void demand_signal(struct demand *d)
{
	d->signalled = true;
}

/*
 * A sleeper that cannot ring, found at f->now: H rises to then (later than its stamp); S to H
 * but below the CPUs only credit moves; and if one of those holds the global value back, a
 * credit pass (idle CPUs of a big machine would otherwise wait for the slow idle credit).
 */
static void serve_legacy(struct demand *d, const struct demand_facts *f, bool *raise)
{
	d->horizon = umax(d->horizon, f->now);
	*raise = true;
	legacy_seen(d, f->now);
	if (f->credit_floor <= f->g)
		ask_credit(d, f->now);
	if (serve(d, follow_served(d, f)))
		track(d, f->now, false);
}

void demand_probed(struct demand *d, const struct demand_facts *f, bool probe, bool *raise)
{
	*raise = false;
	if (f->legacy > 0) {
		follow(d, f->now);
		serve_legacy(d, f, raise);
	}
	/*
	 * Anyone can queue on the mark and so hide a sleeper that cannot ring.  Whoever sleeps on
	 * a global word while a CPU not busy has held the global value back for a whole period
	 * gets a credit pass at the heartbeat: a client that rings would have rung long before.
	 */
	if (probe && f->global > 0 && f->hold && f->now >= f->hold + d->cfg.heartbeat_ns)
		ask_credit(d, f->now);
	if (probe)
		d->beat_fold = true; /* the heartbeat's fold: the file never a period stale */
}

unsigned demand_duties(struct demand *d, uint64_t now)
{
	unsigned act = 0;

	if (now >= d->next_beat) {
		act |= DEMAND_BEAT;
		d->next_beat = now + d->cfg.beat_ns;
		/*
		 * Each beat also looks at S once its deadline passed: a waiter at or below S that
		 * fell asleep after the looks for it ended (preempted between its ring and its
		 * sleep) does not ring again, and is nudged for here, within a beat.  Free while no
		 * busy CPU lags S: the counts are taken only for a lagging CPU.
		 */
		if (d->cfg.nudges && d->served && now >= d->served + d->cfg.nudge_after_ns) {
			d->beat_look = true;
			act |= DEMAND_NUDGE;
		}
	}
	/*
	 * The window closes at the first wake-up after its end (no wake-up of its own); opens that
	 * came meanwhile are reported then, and reopen it.
	 */
	if (d->peeking && now >= d->peek_until)
		d->peeking = false;
	if (d->following && !d->cfg.always_follow && now >= d->follow_until) {
		d->following = false;
		d->next_peek = d->peek_from = now; /* peeking resumes at once, in a window */
	}
	if (now >= d->next_probe) {
		act |= DEMAND_PROBE;
		d->next_probe = now + d->cfg.heartbeat_ns;
	} else if (!d->following && d->peeking && now >= d->peek_from) {
		act |= DEMAND_PEEK;
	}
	if (act & (DEMAND_PROBE | DEMAND_PEEK)) {
		d->last_peek = now;
		d->next_peek = now + DEMAND_PEEK_NS;
		d->peek_from = now + DEMAND_PEEK_NS / 2;
	}
	if (d->cfg.nudges) {
		uint64_t q = nudge_queue_next(&d->nq, d->cfg.nudge_after_ns);

		if ((q && q <= now) || (d->retry_at && d->retry_at <= now) ||
		    (d->track_pending && d->tracked_at + DEMAND_NUDGE_TRACK_NS <= now))
			act |= DEMAND_NUDGE;
	}
	return act;
}

/* When following allows the next pass: a follow token and the CPU budget (demand_charge). */
static uint64_t follow_next(const struct demand *d, uint64_t now)
{
	uint64_t t = rate_limit_next(&d->follow_limit, now);
	uint64_t c =
	    d->cpu_tat > DEMAND_FOLLOW_CPU_WINDOW_NS ? d->cpu_tat - DEMAND_FOLLOW_CPU_WINDOW_NS : 0;

	return umax(c, t);
}

/*
 * Out of tokens: signals and rings only ask for passes, so they go unwatched until the next
 * token, and a fold runs then.  Safe: a pass reads the slots themselves and r inside the pass.
 */
static void pause(struct demand *d, uint64_t now)
{
	uint64_t next = rate_limit_next(&d->fold_limit, now);

	if (d->following)
		next = umax(next, follow_next(d, now));
	d->paused = true;
	d->paused_due = umax(d->paused_due, next);
}

/* A fold token, and a follow token while following: both or neither. */
static bool take_fold(struct demand *d, uint64_t now)
{
	if (rate_limit_next(&d->fold_limit, now) > now ||
	    (d->following && follow_next(d, now) > now))
		return false;
	rate_limit_take(&d->fold_limit, now);
	if (d->following)
		rate_limit_take(&d->follow_limit, now);
	return true;
}

/*
 * A credit pass asked for: does it run now?  It waits, for at most the idle-credit interval
 * after it was asked for, while a busy CPU owes an event past H (run now, it would complete
 * none of the barriers behind H and that CPU's signal would bring a second pass).  If no CPU at
 * or below H needs credit, it is a fold (*fold), under the fold cap.  Following, it needs a
 * follow token too.
 */
static bool take_credit(struct demand *d, const struct demand_facts *f, bool *fold)
{
	uint64_t now = f->now;

	d->deferring = false;
	if (!d->credit_pending)
		return false;
	if (now < d->credit_asked + d->cfg.idle_credit_ns && f->owed) {
		d->deferring = true;
		return false;
	}
	if (!f->credit_needed) {
		d->credit_pending = false;
		*fold = true;
		return false;
	}
	if (d->following && follow_next(d, now) > now) {
		pause(d, now);
		return false;
	}
	if (!rate_limit_take(&d->credit_limit, now))
		return false;
	if (d->following)
		rate_limit_take(&d->follow_limit, now);
	d->credit_pending = false;
	d->last_credit = now;
	return true;
}

unsigned demand_pass(struct demand *d, const struct demand_facts *f)
{
	uint64_t now = f->now;
	bool fold, credit;

	/*
	 * Slow idle credit while following: a CPU not busy has held the global value back for the
	 * idle-credit interval (counted from the latest credit pass too: an UNKNOWN CPU, which
	 * credit cannot move, would otherwise ask at the credit rate).
	 */
	if (d->following && !d->credit_pending && f->hold &&
	    now >= umax(f->hold, d->last_credit) + d->cfg.idle_credit_ns)
		ask_credit(d, now);
	if (d->paused && now >= d->paused_due) {
		d->paused = false;
		d->paused_due = 0;
		d->fold_asked = true; /* the one that was deferred */
	}
	/* A signal asks for a fold only while a CPU lags H: else its evidence was taken. */
	fold = (d->signalled && f->lagging) || d->fold_asked;
	d->signalled = false;
	credit = take_credit(d, f, &fold);
	/* A deferred credit pass folds every slot when it runs: only the heartbeat's before. */
	if (d->deferring)
		fold = d->fold_asked = false;
	fold = fold || d->beat_fold;
	if (credit) {
		d->fold_asked = d->beat_fold = false;
		return DEMAND_CREDIT;
	}
	if (!fold || d->paused)
		return 0;
	if (!take_fold(d, now)) {
		pause(d, now);
		return 0;
	}
	d->fold_asked = d->beat_fold = false;
	return DEMAND_FOLD;
}

bool demand_again(struct demand *d, uint64_t now)
{
	return take_fold(d, now);
}

bool demand_after_pass(struct demand *d, const struct demand_facts *f, uint64_t pass_horizon,
		       bool credit, bool again)
{
	(void)credit;
	d->horizon = umax(d->horizon, pass_horizon);
	if (d->following && serve(d, follow_served(d, f)))
		track(d, f->now, true);
	/*
	 * The invariant: a CPU that no event of its own will move (it went idle after the
	 * handshake, say) and that lags S gets a credit pass, since waiters at or below S do not
	 * ring.  Credit moves each such CPU past S (r is read after S was raised).
	 */
	if (f->credit_floor <= d->served)
		ask_credit(d, f->now);
	if (again)
		d->fold_asked = true;
	if (d->following && f->legacy > 0) {
		d->follow_until = f->now + DEMAND_FOLLOW_HOLD_NS;
		legacy_seen(d, f->now);
		return true;
	}
	return false;
}

void demand_legacy_asleep(struct demand *d, const struct demand_facts *f, bool *raise)
{
	*raise = false;
	if (d->following && f->legacy > 0)
		serve_legacy(d, f, raise);
}

void demand_charge(struct demand *d, uint64_t now, uint64_t used)
{
	if (!d->following)
		return;
	if (d->cpu_tat < now)
		d->cpu_tat = now;
	d->cpu_tat += used * 1000 / DEMAND_FOLLOW_CPU_PERMILLE;
	if (d->cpu_tat > now + DEMAND_FOLLOW_CPU_WINDOW_NS + DEMAND_FOLLOW_MAX_GAP_NS)
		d->cpu_tat = now + DEMAND_FOLLOW_CPU_WINDOW_NS + DEMAND_FOLLOW_MAX_GAP_NS;
}

uint64_t demand_due(const struct demand *d, const struct demand_facts *f)
{
	uint64_t now = f->now, due = d->next_beat;

	due = due_min(due, d->next_probe);
	if (!d->following && d->peeking)
		due = due_min(due, d->next_peek);
	if (d->credit_pending) {
		uint64_t c = rate_limit_next(&d->credit_limit, now);

		if (d->following)
			c = umax(c, follow_next(d, now));
		if (d->deferring)
			c = umax(c, d->credit_asked + d->cfg.idle_credit_ns);
		due = due_min(due, c);
	} else if (d->following && f->hold) {
		due = due_min(due, umax(f->hold, d->last_credit) + d->cfg.idle_credit_ns);
	}
	if (d->paused)
		due = due_min(due, d->paused_due);
	if (d->cfg.nudges) {
		due = due_min(due, nudge_queue_next(&d->nq, d->cfg.nudge_after_ns));
		due = due_min(due, d->retry_at);
		if (d->track_pending)
			due = due_min(due, d->tracked_at + DEMAND_NUDGE_TRACK_NS);
	}
	return due;
}

uint64_t demand_nudge_upto(struct demand *d, uint64_t now)
{
	uint64_t upto;

	if (d->track_pending && now >= d->tracked_at + DEMAND_NUDGE_TRACK_NS) {
		d->tracked_at = now;
		d->track_pending = false;
		nudge_queue_push(&d->nq, d->served);
	}
	upto = nudge_queue_due(&d->nq, now, d->cfg.nudge_after_ns);
	if (upto > d->retry_h)
		d->retry_idle = 0; /* a newer horizon: looks of its own */
	if (d->beat_look) {
		d->beat_look = false;
		/* No retries of its own while nobody sleeps: the next beat looks again. */
		if (!upto && !(d->retry_at && now >= d->retry_at)) {
			d->beat_only = true;
			return d->served;
		}
	}
	if (d->retry_at && now >= d->retry_at) {
		if (d->retry_h > upto)
			upto = d->retry_h;
		d->retry_at = 0;
	}
	return upto;
}

uint64_t demand_nudge_pick(uint64_t ncpu, const bool *can, const bool *lag, const long *own,
			   long global, uint64_t lagging, bool *want)
{
	uint64_t n = 0;

	for (uint64_t c = 0; c < ncpu; c++) {
		want[c] = can[c] && lag[c] &&
			  (global > 0 || lagging > DEMAND_NUDGE_COUNT_MAX || (own && own[c] > 0));
		n += want[c];
	}
	return n;
}

/*
 * While a CPU still lags `upto`, it is looked at again: after max(--nudge-after,
 * DEMAND_NUDGE_RETRY_NS) while someone waits for it (a nudge held back, run elsewhere or kept
 * out), not before the rate limit allows the held one; DEMAND_NUDGE_RETRIES times at doubling
 * intervals while nobody sleeps for it yet (a waiter not yet in its futex wait); then no more.
 */
void demand_nudge_done(struct demand *d, uint64_t now, uint64_t upto, uint64_t lagging,
		       uint64_t targets, uint64_t held_until)
{
	if (!upto)
		return;
	if (d->beat_only) {
		d->beat_only = false;
		if (!targets)
			return; /* the beat's look: the next beat looks again */
	}
	d->retry_idle = lagging && !targets ? d->retry_idle + 1 : 0;
	if (lagging && d->retry_idle <= DEMAND_NUDGE_RETRIES) {
		uint64_t gap = umax(d->cfg.nudge_after_ns, DEMAND_NUDGE_RETRY_NS);

		if (!targets)
			gap = DEMAND_NUDGE_RETRY_NS << (d->retry_idle - 1);
		d->retry_h = upto;
		d->retry_at = umax(now + gap, held_until);
	} else {
		d->retry_idle = 0;
		d->retry_at = 0;
	}
}
