/* SPDX-License-Identifier: MIT */
/*
 * The credit snapshot: what a credit pass may credit to CPUs that bring no event of their own
 * (idle, offline, the daemon's own), read in the order DESIGN rules 2, 3, 6 and 7 require.
 * Internal to the publisher (publisher.c folds what it returns).
 */
#ifndef BARRIERD_CREDIT_H
#define BARRIERD_CREDIT_H

#include "publisher.h"

#include <stdint.h>

struct credit {
	uint64_t r; /* CLOCK_MONOTONIC, read before everything below: the credited time */
	uint64_t v; /* the file's vtime, loaded after r: the credited vtime */
	int self;   /* the CPU this thread ran the credit's MFENCE on (rule 7), or -1 */
};

/*
 * Take the snapshot: the rule-6 check, the clock, the file's vtime, MFENCE, the online mask,
 * a load of each online CPU's idle word (p->state[c]: IDLE or BUSY), the rule-6 check after
 * those loads, and the CPU we run on.  0; -ENOLINK: the programs were detached (no
 * credit, and the daemon stops).  Without a forced switch to prove the programs attached,
 * every IDLE read is withdrawn and the pass still succeeds.
 */
int credit_snapshot(struct publisher *p, struct credit *cr);

/*
 * Read the online mask into p->online ("0-3,5").  On failure every CPU counts as online, so a
 * read error can only withhold offline credit, never give it.  0 or -errno.
 */
int online_mask_read(struct publisher *p);

#endif
