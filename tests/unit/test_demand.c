// SPDX-License-Identifier: MIT
/*
 * The demand unit (src/daemon/demand.c) without a daemon: facts in, actions and due times out,
 * table by table.  Each decision it owns: a ring's raise and credit, the credit deferral, the
 * signal's fold, the fold and follow caps, the served word after a pass and its invariant, the
 * probe and the peek, the peek window, following and its hold, the slow idle credit, the one due
 * time, and the nudge schedule and pick.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "demand.h"
#include "test_util.h"

#define T0 (1000 * TEST_MS)
#define NONE UINT64_MAX

static const struct demand_cfg CFG = {
    .heartbeat_ns = 100 * TEST_MS,
    .beat_ns = 100 * TEST_MS,
    .idle_credit_ns = 10 * TEST_MS,
    .nudge_after_ns = 10 * TEST_MS,
    .credit_rate = 1000,
    .nudges = true,
};

static struct demand_facts facts(uint64_t now)
{
	return (struct demand_facts){.now = now, .quiet_floor = NONE, .credit_floor = NONE};
}

/* The periodic duties out of the way, for tests of another due time. */
static void no_duties(struct demand *d)
{
	d->next_beat = d->next_probe = d->next_peek = T0 + 100 * TEST_SEC;
}

/* A ring raises H and S to its time and asks for a credit pass; the credit pass then runs. */
static void ring_raises_and_asks_credit(void **state)
{
	struct demand d;
	struct demand_facts f = facts(T0 + TEST_MS);

	(void)state;
	demand_init(&d, &CFG, T0);
	demand_ring(&d, T0 + TEST_MS, T0 + 900 * TEST_US);
	assert_int_equal(d.horizon, T0 + 900 * TEST_US);
	assert_int_equal(d.served, T0 + 900 * TEST_US);
	assert_true(d.credit_pending);
	/* An older ring changes nothing. */
	demand_ring(&d, T0 + TEST_MS, T0 + 100 * TEST_US);
	assert_int_equal(d.served, T0 + 900 * TEST_US);
	f.credit_needed = true;
	f.lagging = true;
	assert_int_equal(demand_pass(&d, &f), DEMAND_CREDIT);
	assert_false(d.credit_pending);
	assert_int_equal(d.last_credit, f.now);
	/* Nothing more is asked. */
	assert_int_equal(demand_pass(&d, &f), 0);
}

/* The pending credit pass: deferred while a busy CPU owes an event, at most the interval. */
static void credit_deferral(void **state)
{
	static const struct {
		bool owed, needed;
		uint64_t after; /* since it was asked for */
		unsigned act;
		bool deferring, still_pending;
	} rows[] = {
	    {true, true, 1 * TEST_MS, 0, true, true},		     /* owed: wait for its signal */
	    {true, true, 10 * TEST_MS, DEMAND_CREDIT, false, false}, /* waited the interval */
	    {false, true, 1 * TEST_MS, DEMAND_CREDIT, false, false}, /* nothing owed: now */
	    {false, false, 1 * TEST_MS, DEMAND_FOLD, false, false},  /* credit moves nothing */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct demand d;
		struct demand_facts f;

		demand_init(&d, &CFG, T0);
		demand_ring(&d, T0, T0);
		f = facts(T0 + rows[i].after);
		f.owed = rows[i].owed;
		f.credit_needed = rows[i].needed;
		f.lagging = true;
		assert_int_equal(demand_pass(&d, &f), rows[i].act);
		assert_int_equal(d.deferring, rows[i].deferring);
		assert_int_equal(d.credit_pending, rows[i].still_pending);
		no_duties(&d);
		if (rows[i].deferring)
			assert_int_equal(demand_due(&d, &f), T0 + CFG.idle_credit_ns);
	}
}

/* A signal asks for a fold only while a CPU lags H; the heartbeat's fold always runs. */
static void signal_folds_only_when_lagging(void **state)
{
	static const struct {
		bool signal, lagging, beat;
		unsigned act;
	} rows[] = {
	    {true, true, false, DEMAND_FOLD},
	    {true, false, false, 0},
	    {false, true, false, 0},
	    {false, false, true, DEMAND_FOLD},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct demand d;
		struct demand_facts f = facts(T0 + TEST_MS);

		demand_init(&d, &CFG, T0);
		if (rows[i].signal)
			demand_signal(&d);
		if (rows[i].beat) {
			struct demand_facts p = f;
			bool raise;

			demand_probed(&d, &p, true, &raise);
		}
		f.lagging = rows[i].lagging;
		assert_int_equal(demand_pass(&d, &f), rows[i].act);
	}
}

/* The fold cap: a burst, then a pause until the next token, then the deferred fold. */
static void fold_cap_pauses(void **state)
{
	struct demand d;
	struct demand_facts f = facts(T0);
	int n = 0;

	(void)state;
	demand_init(&d, &CFG, T0);
	f.lagging = true;
	for (int i = 0; i < 2 * DEMAND_FOLD_BURST; i++) {
		demand_signal(&d);
		if (demand_pass(&d, &f) == DEMAND_FOLD)
			n++;
	}
	assert_int_equal(n, DEMAND_FOLD_BURST);
	assert_true(d.paused);
	assert_int_equal(d.paused_due, T0 + 1000000000ULL / DEMAND_FOLD_RATE);
	assert_int_equal(demand_due(&d, &f), d.paused_due);
	/* Paused: signals ask nothing until the token is due. */
	demand_signal(&d);
	assert_int_equal(demand_pass(&d, &f), 0);
	f.now = d.paused_due;
	assert_int_equal(demand_pass(&d, &f), DEMAND_FOLD);
	assert_false(d.paused);
}

/* Following: the follow token (a burst, then one a millisecond) and the CPU budget. */
static void follow_gate(void **state)
{
	struct demand d;
	struct demand_facts f = facts(T0);
	int n = 0;

	(void)state;
	demand_init(&d, &CFG, T0);
	demand_saturated(&d, T0);
	assert_true(d.following);
	f.lagging = true;
	for (int i = 0; i < 2 * DEMAND_FOLLOW_BURST; i++) {
		demand_signal(&d);
		if (demand_pass(&d, &f) == DEMAND_FOLD)
			n++;
	}
	assert_int_equal(n, DEMAND_FOLLOW_BURST);
	assert_true(d.paused);
	assert_int_equal(d.paused_due, T0 + DEMAND_FOLLOW_GAP_NS);
	/*
	 * A pass that cost 1 ms of CPU costs 25 ms of the 4 % budget: two reach the 40 ms
	 * tolerance plus 10 ms, so the next pass waits until T0 + 10 ms, however many tokens.
	 */
	d.paused = false;
	d.paused_due = 0;
	for (int i = 0; i < 2; i++)
		demand_charge(&d, T0, TEST_MS);
	f.now = T0 + 5 * TEST_MS;
	demand_signal(&d);
	assert_int_equal(demand_pass(&d, &f), 0);
	assert_int_equal(d.paused_due, T0 + 10 * TEST_MS);
	f.now = T0 + 10 * TEST_MS;
	assert_int_equal(demand_pass(&d, &f), DEMAND_FOLD);
	/* Never a gap over DEMAND_FOLLOW_MAX_GAP_NS, whatever the charge. */
	demand_charge(&d, T0, 1000 * TEST_MS);
	assert_int_equal(d.cpu_tat, T0 + DEMAND_FOLLOW_CPU_WINDOW_NS + DEMAND_FOLLOW_MAX_GAP_NS);
	/* Not following: nothing is charged. */
	d.following = false;
	d.cpu_tat = 0;
	demand_charge(&d, T0, TEST_MS);
	assert_int_equal(d.cpu_tat, 0);
}

/*
 * After a pass: S where the promise holds.  Following, H if no CPU that only credit moves lags
 * it, else just below the lowest of them; not following, S is left alone.  Then the invariant:
 * such a CPU at or below S gets a credit pass.
 */
static void served_after_pass(void **state)
{
	static const struct {
		bool following;
		uint64_t served0, pass_h, floor;
		uint64_t served, h;
		bool credit;
	} rows[] = {
	    /* following, every CPU busy: S = H */
	    {true, 0, T0 + 5 * TEST_MS, NONE, T0 + 5 * TEST_MS, T0 + 5 * TEST_MS, false},
	    /* following, an idle CPU at T0 + 2 ms: S stops below it */
	    {true, 0, T0 + 5 * TEST_MS, T0 + 2 * TEST_MS, T0 + 2 * TEST_MS - 1, T0 + 5 * TEST_MS,
	     false},
	    /* following, the idle CPU past H: S = H */
	    {true, 0, T0 + 5 * TEST_MS, T0 + 6 * TEST_MS, T0 + 5 * TEST_MS, T0 + 5 * TEST_MS,
	     false},
	    /* not following: S stays; H as it was */
	    {false, T0, T0, NONE, T0, T0, false},
	    /* S from a ring; a CPU went idle below it after the handshake: credit */
	    {false, T0 + 3 * TEST_MS, T0 + 3 * TEST_MS, T0 + 2 * TEST_MS, T0 + 3 * TEST_MS,
	     T0 + 3 * TEST_MS, true},
	    /* following never lowers S */
	    {true, T0 + 4 * TEST_MS, T0 + 5 * TEST_MS, T0 + 2 * TEST_MS, T0 + 4 * TEST_MS,
	     T0 + 5 * TEST_MS, true},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct demand d;
		struct demand_facts f = facts(T0 + 6 * TEST_MS);

		demand_init(&d, &CFG, T0);
		d.following = rows[i].following;
		d.follow_until = T0 + TEST_SEC;
		d.served = d.horizon = rows[i].served0;
		f.quiet_floor = f.credit_floor = rows[i].floor;
		assert_false(demand_after_pass(&d, &f, rows[i].pass_h, false, false));
		assert_int_equal(d.served, rows[i].served);
		assert_int_equal(d.horizon, rows[i].h);
		assert_int_equal(d.credit_pending, rows[i].credit);
	}
}

/* A pass that asked to go again without a token: a fold is asked for, after the pause. */
static void again_without_token(void **state)
{
	struct demand d;
	struct demand_facts f = facts(T0);

	(void)state;
	demand_init(&d, &CFG, T0);
	d.fold_limit.tat = T0 + TEST_SEC; /* out of fold tokens */
	assert_false(demand_again(&d, T0));
	demand_after_pass(&d, &f, 0, false, true);
	assert_true(d.fold_asked);
	assert_int_equal(demand_pass(&d, &f), 0);
	assert_true(d.paused);
}

/*
 * The probe and the peek: a sleeper that cannot ring starts following and is served as a ring
 * (H and S rise, credit if a CPU only credit moves holds the global value); a sleeper on a
 * global word hidden from the count gets credit after a whole heartbeat, at the probe only.
 */
static void probe_and_peek(void **state)
{
	static const struct {
		bool probe;
		long legacy, global;
		uint64_t hold, floor, g;
		bool following, raise, credit, beat_fold;
	} rows[] = {
	    /* nobody: only the heartbeat's fold */
	    {true, 0, 0, 0, NONE, T0, false, false, false, true},
	    {false, 0, 0, 0, NONE, T0, false, false, false, false},
	    /* an original-layout sleeper, an idle CPU holds g: follow, raise, credit */
	    {false, 1, 1, T0, T0, T0, true, true, true, false},
	    /* the same, every CPU busy: follow and raise, no credit */
	    {false, 1, 1, 0, NONE, T0, true, true, false, false},
	    /* hidden (marked count cancels it), an idle CPU held g a whole period: credit */
	    {true, 0, 1, T0 - 100 * TEST_MS, T0 - 100 * TEST_MS, T0 - 100 * TEST_MS, false, false,
	     true, true},
	    /* hidden, but the hold is younger than a period: nothing */
	    {true, 0, 1, T0 - 50 * TEST_MS, T0 - 50 * TEST_MS, T0 - 50 * TEST_MS, false, false,
	     false, true},
	    /* the peek does not apply the hidden-sleeper rule */
	    {false, 0, 1, T0 - 100 * TEST_MS, T0 - 100 * TEST_MS, T0 - 100 * TEST_MS, false, false,
	     false, false},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct demand d;
		struct demand_facts f = facts(T0);
		bool raise;

		demand_init(&d, &CFG, T0 - 200 * TEST_MS);
		f.legacy = rows[i].legacy;
		f.global = rows[i].global;
		f.hold = rows[i].hold;
		f.quiet_floor = f.credit_floor = rows[i].floor;
		f.g = rows[i].g;
		demand_probed(&d, &f, rows[i].probe, &raise);
		assert_int_equal(d.following, rows[i].following);
		assert_int_equal(raise, rows[i].raise);
		assert_int_equal(d.credit_pending, rows[i].credit);
		assert_int_equal(d.beat_fold, rows[i].beat_fold);
		if (rows[i].raise) {
			assert_int_equal(d.horizon, T0);
			/* S below a CPU only credit moves, H otherwise */
			assert_int_equal(d.served, rows[i].floor <= T0 ? rows[i].floor - 1 : T0);
		}
	}
}

/*
 * Duties by time: the beat, the probe each heartbeat, the peek every DEMAND_PEEK_NS between
 * while not following (none while following), following's end after its hold.
 */
static void duties_by_time(void **state)
{
	struct demand d;
	struct demand_facts f = facts(T0);
	int peeks = 0;

	(void)state;
	demand_init(&d, &CFG, T0);
	/* Woken only by its timer: a peek each period, and the probe at the heartbeat. */
	for (f.now = demand_due(&d, &f); f.now < T0 + 100 * TEST_MS; f.now = demand_due(&d, &f))
		assert_int_equal(demand_duties(&d, f.now), DEMAND_PEEK), peeks++;
	assert_int_equal(peeks, 100 * TEST_MS / DEMAND_PEEK_NS);
	assert_int_equal(demand_duties(&d, T0 + 100 * TEST_MS), DEMAND_BEAT | DEMAND_PROBE);
	/* Woken for something else in the period's second half: it peeks then. */
	f.now = T0 + 100 * TEST_MS + DEMAND_PEEK_NS / 2 - 1;
	assert_int_equal(demand_duties(&d, f.now), 0);
	f.now++;
	assert_int_equal(demand_duties(&d, f.now), DEMAND_PEEK);
	assert_int_equal(demand_due(&d, &f), f.now + DEMAND_PEEK_NS);
	/* A beat shorter than the heartbeat (the watchdog's): beats without probes. */
	{
		struct demand_cfg c = CFG;

		c.beat_ns = 25 * TEST_MS;
		demand_init(&d, &c, T0);
		assert_int_equal(demand_duties(&d, T0 + 25 * TEST_MS) & ~DEMAND_PEEK, DEMAND_BEAT);
	}
	/* Following: no peeks; the hold ends it; peeks resume at once. */
	demand_init(&d, &CFG, T0);
	demand_saturated(&d, T0);
	for (uint64_t t = T0; t < T0 + 50 * TEST_MS; t += TEST_MS)
		assert_false(demand_duties(&d, t) & DEMAND_PEEK);
	assert_true(demand_duties(&d, T0 + DEMAND_FOLLOW_HOLD_NS) & (DEMAND_PEEK | DEMAND_PROBE));
	assert_false(d.following);
	/* --always-armed: for good. */
	{
		struct demand_cfg c = CFG;

		c.always_follow = true;
		demand_init(&d, &c, T0);
		demand_duties(&d, T0 + 10 * TEST_SEC);
		assert_true(d.following);
	}
}

/* Peeks (counted) from `from` to `to`, woken only at the due times. */
static int run_peeks(struct demand *d, uint64_t from, uint64_t to, uint64_t *last)
{
	struct demand_facts f = facts(from);
	int peeks = 0;

	for (f.now = from; f.now < to; f.now = demand_due(d, &f))
		if (demand_duties(d, f.now) & (DEMAND_PEEK | DEMAND_PROBE)) {
			peeks++;
			*last = f.now;
		}
	return peeks;
}

/*
 * The peek window (opens watched): open from the start for DEMAND_PEEK_WINDOW_NS, then closed
 * (no peek, no due time of its own, only the probe); an open reopens it, its first peek
 * DEMAND_PEEK_FIRST_NS later but never within a period of the previous look.
 */
static void peek_window(void **state)
{
	static const struct {
		uint64_t last, open, first; /* the previous look, the open, the first peek */
	} rows[] = {
	    /* idle a while: a little after the open */
	    {T0, T0 + 50 * TEST_MS, T0 + 50 * TEST_MS + DEMAND_PEEK_FIRST_NS},
	    /* a look just before: a period after it */
	    {T0, T0 + TEST_MS, T0 + DEMAND_PEEK_NS},
	    {T0, T0 + DEMAND_PEEK_NS - DEMAND_PEEK_FIRST_NS, T0 + DEMAND_PEEK_NS},
	};
	struct demand_cfg c = CFG;
	struct demand d;
	struct demand_facts f = facts(T0);
	uint64_t last = 0, prev = 0, end = T0 + DEMAND_PEEK_WINDOW_NS;

	(void)state;
	c.opens_watched = true;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		demand_init(&d, &c, 0);
		d.peeking = false;
		d.last_peek = rows[i].last;
		d.next_probe = T0 + 10 * TEST_SEC;
		demand_opened(&d, rows[i].open);
		assert_true(d.peeking);
		assert_int_equal(d.peek_until, rows[i].open + DEMAND_PEEK_WINDOW_NS);
		/* Not at the open itself, nor in the period's second half before the first. */
		assert_int_equal(demand_duties(&d, rows[i].open) & DEMAND_PEEK, 0);
		assert_int_equal(demand_duties(&d, rows[i].first - 1) & DEMAND_PEEK, 0);
		f.now = rows[i].open;
		assert_int_equal(demand_due(&d, &f), rows[i].first);
		assert_int_equal(demand_duties(&d, rows[i].first) & DEMAND_PEEK, DEMAND_PEEK);
	}

	/* From the start: a window (peeks as without one), then nothing but the probe. */
	{
		struct demand always;

		demand_init(&always, &CFG, T0);
		demand_init(&d, &c, T0);
		assert_true(d.peeking);
		assert_int_equal(run_peeks(&d, T0, end, &last), run_peeks(&always, T0, end, &prev));
	}
	f.now = last;
	while (f.now < end + DEMAND_PEEK_NS)
		demand_duties(&d, f.now = demand_due(&d, &f));
	assert_false(d.peeking);
	f.now = end + DEMAND_PEEK_NS;
	assert_int_equal(demand_due(&d, &f) % (100 * TEST_MS), T0 % (100 * TEST_MS));
	for (uint64_t to = f.now + TEST_SEC; f.now < to; f.now = demand_due(&d, &f))
		assert_int_equal(demand_duties(&d, f.now) & DEMAND_PEEK, 0);

	/* Opens and sleepers that cannot ring keep it open. */
	demand_init(&d, &c, T0);
	demand_opened(&d, T0 + TEST_SEC);
	assert_int_equal(d.peek_until, T0 + TEST_SEC + DEMAND_PEEK_WINDOW_NS);
	demand_opened(&d, T0 + 10 * TEST_MS); /* an older report: no shorter */
	assert_int_equal(d.peek_until, T0 + TEST_SEC + DEMAND_PEEK_WINDOW_NS);
	{
		bool raise;

		f.now = T0 + 2 * TEST_SEC;
		f.legacy = f.global = 1;
		demand_probed(&d, &f, false, &raise);
		assert_true(raise);
		assert_int_equal(d.peek_until, f.now + DEMAND_PEEK_WINDOW_NS);
		f.legacy = f.global = 0;
	}

	/* Opens not watched, or the watch lost: the window never closes. */
	demand_init(&d, &CFG, T0);
	assert_true(d.peeking && d.peek_until == UINT64_MAX);
	demand_init(&d, &c, T0);
	demand_opens_lost(&d);
	{
		struct demand always;

		demand_init(&always, &CFG, T0);
		assert_int_equal(run_peeks(&d, T0, T0 + 10 * TEST_SEC, &last),
				 run_peeks(&always, T0, T0 + 10 * TEST_SEC, &prev));
	}

	/* Following: the window stays, without peeks; after the hold they resume in it. */
	demand_init(&d, &c, T0);
	demand_saturated(&d, T0);
	for (uint64_t t = T0; t < T0 + 50 * TEST_MS; t += TEST_MS)
		assert_false(demand_duties(&d, t) & DEMAND_PEEK);
	demand_opened(&d, T0 + 900 * TEST_MS);
	assert_true(demand_duties(&d, T0 + DEMAND_FOLLOW_HOLD_NS) & (DEMAND_PEEK | DEMAND_PROBE));
}

/*
 * Opens in a loop (reported whenever the daemon watches them, i.e. at every wake-up with the
 * window closed): no more peeks than without a window, and never two within half a period.
 */
static void peek_window_under_opens(void **state)
{
	struct demand_cfg c = CFG;
	struct demand d, always;
	struct demand_facts f = facts(T0);
	uint64_t last = 0, prev = 0, until = T0 + 30 * TEST_SEC;
	int peeks = 0, bound;

	(void)state;
	c.opens_watched = true;
	demand_init(&d, &c, T0);
	demand_init(&always, &CFG, T0);
	bound = run_peeks(&always, T0, until, &last);
	for (f.now = T0; f.now < until; f.now = demand_due(&d, &f)) {
		if (!d.peeking)
			demand_opened(&d, f.now);
		if (demand_duties(&d, f.now) & (DEMAND_PEEK | DEMAND_PROBE)) {
			if (prev)
				assert_true(f.now - prev >= DEMAND_PEEK_NS / 2);
			prev = f.now;
			peeks++;
		}
		/* The window closed at this wake-up: the daemon watches again, the open is read. */
		if (!d.peeking) {
			demand_opened(&d, f.now);
			assert_true(demand_due(&d, &f) >= prev + DEMAND_PEEK_NS ||
				    demand_due(&d, &f) == d.next_probe);
		}
	}
	assert_true(peeks <= bound);
	assert_true(peeks >= bound - (int)(30 * TEST_SEC / DEMAND_PEEK_WINDOW_NS) - 1);
}

/* Slow idle credit while following: a CPU not busy held g for the interval since g and since
 * the last credit pass. */
static void slow_idle_credit(void **state)
{
	static const struct {
		bool following;
		uint64_t hold, now;
		unsigned act;
	} rows[] = {
	    {true, T0, T0 + 10 * TEST_MS, DEMAND_CREDIT},
	    {true, T0, T0 + 9 * TEST_MS, 0},
	    {true, 0, T0 + 50 * TEST_MS, 0},   /* nobody not busy holds g */
	    {false, T0, T0 + 50 * TEST_MS, 0}, /* not following: rings ask */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct demand d;
		struct demand_facts f = facts(rows[i].now);

		demand_init(&d, &CFG, T0 - TEST_SEC);
		d.following = rows[i].following;
		d.follow_until = T0 + TEST_SEC;
		d.last_credit = T0 - TEST_SEC;
		f.hold = rows[i].hold;
		f.credit_needed = true;
		no_duties(&d);
		if (rows[i].following && rows[i].hold && !rows[i].act) {
			f.now = T0;
			assert_int_equal(demand_due(&d, &f), T0 + 10 * TEST_MS);
			f.now = rows[i].now;
		}
		assert_int_equal(demand_pass(&d, &f), rows[i].act);
	}
}

/* The one due time: the earliest of what is scheduled. */
static void due_is_earliest(void **state)
{
	struct demand d;
	struct demand_facts f = facts(T0);

	(void)state;
	demand_init(&d, &CFG, T0);
	assert_int_equal(demand_due(&d, &f), T0 + DEMAND_PEEK_NS);
	/* A ring: the credit pass is due now (the limit allows it), its nudge later. */
	demand_ring(&d, T0, T0);
	assert_int_equal(demand_due(&d, &f), T0);
	f.credit_needed = true;
	assert_int_equal(demand_pass(&d, &f), DEMAND_CREDIT);
	assert_int_equal(demand_due(&d, &f), T0 + DEMAND_PEEK_NS);
	/* Following: no peek; the beat and the nudge deadline. */
	d.following = true;
	d.follow_until = T0 + TEST_SEC;
	assert_int_equal(demand_due(&d, &f), T0 + CFG.nudge_after_ns);
	/* Credit held by the rate limit: due when it allows. */
	d.credit_limit.tat = T0 + 5 * TEST_MS + d.credit_limit.tolerance;
	demand_ring(&d, T0, T0 + 1);
	assert_int_equal(demand_due(&d, &f), T0 + 5 * TEST_MS);
}

/* Nudges: the deadline, the look's horizon, the pick, and the looks again. */
static void nudge_schedule(void **state)
{
	struct demand d;
	const bool can[4] = {true, true, true, false}, lag[4] = {true, false, true, true};
	const long own[4] = {0, 1, 1, 1};
	bool want[4];

	(void)state;
	/* Whom: can, lags, and someone waits (global, own, or too many to count). */
	assert_int_equal(demand_nudge_pick(4, can, lag, own, 1, 3, want), 2);
	assert_true(want[0] && !want[1] && want[2] && !want[3]);
	assert_int_equal(demand_nudge_pick(4, can, lag, own, 0, 3, want), 1);
	assert_true(!want[0] && want[2]);
	assert_int_equal(demand_nudge_pick(4, can, lag, own, 0, DEMAND_NUDGE_COUNT_MAX + 1, want),
			 2);

	demand_init(&d, &CFG, T0);
	demand_ring(&d, T0, T0);
	assert_false(demand_duties(&d, T0 + CFG.nudge_after_ns - 1) & DEMAND_NUDGE);
	assert_true(demand_duties(&d, T0 + CFG.nudge_after_ns) & DEMAND_NUDGE);
	assert_int_equal(demand_nudge_upto(&d, T0 + CFG.nudge_after_ns), T0);
	/* Lagging, nobody asleep yet: looks again 1, 2, 4, 8 ms later, then no more. */
	uint64_t now = T0 + CFG.nudge_after_ns;
	for (unsigned i = 0; i < DEMAND_NUDGE_RETRIES; i++) {
		demand_nudge_done(&d, now, T0, 1, 0, 0);
		assert_int_equal(d.retry_at, now + (DEMAND_NUDGE_RETRY_NS << i));
		now = d.retry_at;
		assert_int_equal(demand_nudge_upto(&d, now), T0);
	}
	demand_nudge_done(&d, now, T0, 1, 0, 0);
	assert_int_equal(d.retry_at, 0);
	/* Targets picked: again after --nudge-after, or when the rate limit allows. */
	demand_nudge_done(&d, now, T0, 1, 1, 0);
	assert_int_equal(d.retry_at, now + CFG.nudge_after_ns);
	demand_nudge_done(&d, now, T0, 1, 1, now + 50 * TEST_MS);
	assert_int_equal(d.retry_at, now + 50 * TEST_MS);
	/* Nobody lags: done. */
	demand_nudge_done(&d, now, T0, 0, 0, 0);
	assert_int_equal(d.retry_at, 0);
	/*
	 * The beat looks at S once its deadline passed, for a waiter that fell asleep after the
	 * looks ended; nobody asleep: no retries of its own.
	 */
	d.retry_at = 0;
	d.next_beat = now;
	assert_true(demand_duties(&d, now) & DEMAND_NUDGE);
	assert_int_equal(demand_nudge_upto(&d, now), T0);
	demand_nudge_done(&d, now, T0, 1, 0, 0);
	assert_int_equal(d.retry_at, 0);
	/* Someone asleep at the beat's look: looked at again as any look. */
	d.next_beat = now;
	demand_duties(&d, now);
	assert_int_equal(demand_nudge_upto(&d, now), T0);
	demand_nudge_done(&d, now, T0, 1, 1, 0);
	assert_int_equal(d.retry_at, now + CFG.nudge_after_ns);
	/* Before S's deadline, the beat does not look. */
	demand_ring(&d, now, now);
	d.next_beat = now + 1;
	assert_false(demand_duties(&d, now + 1) & DEMAND_NUDGE && d.beat_look);
	/* No nudges configured: nothing queued, nothing due. */
	{
		struct demand_cfg c = CFG;

		c.nudge_after_ns = 0;
		demand_init(&d, &c, T0);
		demand_ring(&d, T0, T0);
		assert_int_equal(d.nq.n, 0);
		assert_false(demand_duties(&d, T0 + TEST_SEC) & DEMAND_NUDGE);
	}
}

/* A following daemon's S is queued for nudges at most once per DEMAND_NUDGE_TRACK_NS. */
static void following_tracks_served(void **state)
{
	struct demand d;
	struct demand_facts f = facts(T0);

	(void)state;
	demand_init(&d, &CFG, T0);
	demand_saturated(&d, T0);
	demand_after_pass(&d, &f, T0 + 1, false, false);
	assert_int_equal(d.nq.n, 1);
	f.now = T0 + 100 * TEST_US;
	demand_after_pass(&d, &f, T0 + 2, false, false);
	assert_int_equal(d.nq.n, 1); /* coalesced */
	assert_true(d.track_pending);
	assert_int_equal(demand_due(&d, &f), T0 + DEMAND_NUDGE_TRACK_NS);
	demand_nudge_upto(&d, T0 + DEMAND_NUDGE_TRACK_NS);
	assert_false(d.track_pending);
	assert_int_equal(d.nq.n, 2);
}

/* Sleepers still asleep after a following pass's wakes: served as a ring. */
static void legacy_after_pass(void **state)
{
	struct demand d;
	struct demand_facts f = facts(T0 + 5 * TEST_MS);
	bool raise;

	(void)state;
	demand_init(&d, &CFG, T0);
	/* Not following: the count is not asked for, nothing follows. */
	f.legacy = 1;
	assert_false(demand_after_pass(&d, &f, 0, false, false));
	demand_legacy_asleep(&d, &f, &raise);
	assert_false(raise);
	/* Following: recount, then a raise, and credit when an idle CPU holds g. */
	demand_saturated(&d, T0);
	assert_true(demand_after_pass(&d, &f, T0 + 4 * TEST_MS, false, false));
	assert_int_equal(d.follow_until, f.now + DEMAND_FOLLOW_HOLD_NS);
	f.now = T0 + 6 * TEST_MS;
	f.g = f.quiet_floor = f.credit_floor = T0 + TEST_MS;
	demand_legacy_asleep(&d, &f, &raise);
	assert_true(raise);
	assert_int_equal(d.horizon, T0 + 6 * TEST_MS);
	/* S never falls below what the pass raised it to. */
	assert_int_equal(d.served, T0 + 4 * TEST_MS);
	assert_true(d.credit_pending);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(ring_raises_and_asks_credit),
	    cmocka_unit_test(credit_deferral),
	    cmocka_unit_test(signal_folds_only_when_lagging),
	    cmocka_unit_test(fold_cap_pauses),
	    cmocka_unit_test(follow_gate),
	    cmocka_unit_test(served_after_pass),
	    cmocka_unit_test(again_without_token),
	    cmocka_unit_test(probe_and_peek),
	    cmocka_unit_test(duties_by_time),
	    cmocka_unit_test(peek_window),
	    cmocka_unit_test(peek_window_under_opens),
	    cmocka_unit_test(slow_idle_credit),
	    cmocka_unit_test(due_is_earliest),
	    cmocka_unit_test(nudge_schedule),
	    cmocka_unit_test(following_tracks_served),
	    cmocka_unit_test(legacy_after_pass),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
