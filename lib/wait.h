/* SPDX-License-Identifier: MIT */
/*
 * What the wait (lib/wait.c) offers the other primitives.
 */
#ifndef BARRIERD_LIB_WAIT_H
#define BARRIERD_LIB_WAIT_H

#include "handle.h"

/*
 * A sleep of another primitive's (primitives/ec.c) on its own 32-bit word, expecting val, that the
 * daemon also counts as a library waiter's for every CPU: queued as well on the global ns word
 * (expecting snap_global, its low half loaded before the caller's last check) and on the
 * doorbell's mark (lib/wait.c).  At most slice_ns.  1 when it slept (or a word differed), 0
 * when futex_waitv could not be used: the caller sleeps its own way then.
 */
int bd_sleep_counted(const struct barrierd *b, const uint32_t *word, uint32_t val, bool shared,
		     uint32_t snap_global, int64_t slice_ns);

#endif
