// SPDX-License-Identifier: MIT
/* Is a daemon publishing?  The flags and the heartbeat tell a live daemon from a dead one. */
#include "internal.h"

int bd_live(const struct barrierd *b, uint64_t now_host)
{
	const struct barrierd_header *h = b->hdr;
	uint64_t flags = bd_load(&h->flags);
	uint64_t hb = bd_load(&h->heartbeat_ns);
	uint64_t period = bd_load(&h->heartbeat_period_ns);

	if (!(flags & BARRIERD_FLAG_RUNNING) || (flags & BARRIERD_FLAG_STOPPED))
		return 0;
	if (period == 0 || period > BARRIERD_MAX_HEARTBEAT_PERIOD_NS)
		period = BARRIERD_DEFAULT_HEARTBEAT_PERIOD_NS;
	/* Three periods without a heartbeat: the daemon is gone (kill -9) or wedged. */
	return now_host <= hb + BARRIERD_LIVENESS_PERIODS * period;
}

BDLIB_EXPORT bool barrierd_live(const struct barrierd *b)
{
	return b && bd_live(b, bd_clock_raw() - (uint64_t)bd_timens_current(b));
}
