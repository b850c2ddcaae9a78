/* SPDX-License-Identifier: MIT */
/*
 * The credit-pass rate limit (docs/DESIGN.md, "The doorbell": credit passes are capped per second,
 * which bounds the daemon's CPU under a doorbell flood).  A token bucket in its GCRA form: `rate`
 * events per second sustained, bursts of up to `burst` at full speed.  The burst keeps a few
 * barriers in quick succession from waiting out the gap (two barriers 100 µs apart are ordinary);
 * the sustained rate is what a flood gets, and what bounds its cost: at most rate x (one credit
 * pass) per second, plus one burst.
 */
#ifndef BARRIERD_RATE_LIMIT_H
#define BARRIERD_RATE_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

#define BARRIERD_CREDIT_BURST 32

struct rate_limit {
	uint64_t tat;	    /* theoretical arrival time of the next event (ns) */
	uint64_t interval;  /* 1 / rate (ns) */
	uint64_t tolerance; /* (burst - 1) x interval */
};

static inline void rate_limit_init(struct rate_limit *r, uint64_t rate, uint64_t burst)
{
	r->interval = 1000000000ULL / (rate ? rate : 1);
	r->tolerance = (burst ? burst - 1 : 0) * r->interval;
	r->tat = 0;
}

/* The earliest time at which an event conforms (now, or later). */
static inline uint64_t rate_limit_next(const struct rate_limit *r, uint64_t now)
{
	uint64_t t = r->tat > r->tolerance ? r->tat - r->tolerance : 0;

	return t > now ? t : now;
}

/* Take one event at `now` if it conforms; false (and nothing taken) otherwise. */
static inline bool rate_limit_take(struct rate_limit *r, uint64_t now)
{
	if (rate_limit_next(r, now) > now)
		return false;
	r->tat = (r->tat > now ? r->tat : now) + r->interval;
	return true;
}

#endif
