/* SPDX-License-Identifier: MIT */
/*
 * What the file's published values prove: values read while one daemon of ours ran throughout
 * (lib/trusted.c), and whether a daemon is publishing (lib/liveness.c).
 */
#ifndef BARRIERD_LIB_PUBLISHED_H
#define BARRIERD_LIB_PUBLISHED_H

#include "handle.h"

/*
 * A published value as far as it can be trusted (lib/trusted.c): the value itself if it was
 * read while one daemon of ours ran throughout; otherwise no more than what our daemon left
 * when it stopped (ext.stop_ns or stop_vtime), or 0 without the extension.
 */
uint64_t bd_trusted(const struct barrierd *b, const uint64_t *word, int vtime);

/*
 * Has every CPU of the set published a CLOCK_MONOTONIC value above stamp_ns, read while one
 * daemon of ours ran throughout (lib/trusted.c)?  Per-CPU values have no stop snapshot: they
 * count only while a daemon runs.
 */
bool bd_cpus_passed(const struct barrierd *b, const unsigned long *set, size_t nbits,
		    uint64_t stamp_ns);

/* Is a daemon publishing?  (running flag, not stopped, heartbeat fresh) */
int bd_live(const struct barrierd *b, uint64_t now_host);

/* The liveness bound: BARRIERD_LIVENESS_PERIODS heartbeat periods, as the file states them. */
uint64_t bd_liveness_ns(const struct barrierd *b);

#endif
