// SPDX-License-Identifier: MIT
/* Is a daemon publishing?  The flags and the heartbeat tell a live daemon from a dead one. */
#include "handle.h"
#include "published.h"
#include "timens.h"

uint64_t bd_liveness_ns(const struct barrierd *b)
{
	uint64_t period = bd_load(&b->hdr->heartbeat_period_ns);

	if (period == 0 || period > BARRIERD_MAX_HEARTBEAT_PERIOD_NS)
		period = BARRIERD_DEFAULT_HEARTBEAT_PERIOD_NS;
	return BARRIERD_LIVENESS_PERIODS * period;
}

int bd_live(const struct barrierd *b, uint64_t now_host)
{
	const struct barrierd_header *h = b->hdr;
	uint64_t flags = bd_load(&h->flags);
	uint64_t hb = bd_load(&h->heartbeat_ns);

	if (!(flags & BARRIERD_FLAG_RUNNING) || (flags & BARRIERD_FLAG_STOPPED))
		return 0;
	/* Three periods without a heartbeat: the daemon is gone (kill -9) or wedged. */
	return now_host <= hb + bd_liveness_ns(b);
}

BDLIB_EXPORT bool barrierd_live(const struct barrierd *b)
{
	return b && bd_hdr(b) && bd_live(b, bd_clock_raw() - (uint64_t)bd_timens_current(b));
}
