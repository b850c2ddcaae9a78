/* SPDX-License-Identifier: MIT */
/*
 * Fetching the daemon's slots from its socket (lib/slots_fetch.c): for a handle's direct
 * evidence, or only to verify a relayed file against the daemon's anchor.
 */
#ifndef BARRIERD_LIB_SLOTS_FETCH_H
#define BARRIERD_LIB_SLOTS_FETCH_H

#include "handle.h"

/*
 * Ask the daemon for its slots (lib/slots_fetch.c) when the file offers them and the handle
 * has none of this daemon's (or of this process: after a fork): at most one attempt per
 * 100 ms per handle, backing off to 10 s while attempts fail, never blocking another thread (a
 * trylock), and not with less than twice the reply timeout of budget_ns left (< 0: no limit).
 * Silent: any failure leaves the handle on the file alone.
 */
void bd_direct_refresh(struct barrierd *b, int64_t budget_ns);

/*
 * For a handle whose file was opened by bd_open_relayed: fetch a set from the socket beside it
 * and keep nothing; 0 only if the set is anchored, the anchor names the file open at file_fd
 * (mapped at h) and its generation, and the slots are the anchor's.  -errno otherwise.
 */
int bd_relay_verify(const struct barrierd *b, const struct barrierd_header *h, int file_fd);

#endif
