/* SPDX-License-Identifier: MIT */
/*
 * The clock and time namespaces (lib/timens.c): this process's raw CLOCK_MONOTONIC and its
 * offset against the host's (DESIGN rule 5).
 */
#ifndef BARRIERD_LIB_TIMENS_H
#define BARRIERD_LIB_TIMENS_H

#include "handle.h"

/* The raw CLOCK_MONOTONIC of this process (in its time namespace), in ns: bd_mono_ns(). */
uint64_t bd_clock_raw(void);

/*
 * This process's CLOCK_MONOTONIC offset and its time namespace's inode.  /proc/self/
 * timens_offsets describes the namespace of the process's future children, which differs
 * from its own after unshare(CLONE_NEWTIME): then -EPROTO, as without /proc.
 */
int bd_timens_offset(int64_t *off, uint64_t *ino);

/*
 * Learn this process's offset and pin its namespace (an open fd keeps the namespace, and so
 * its inode number, from being freed and reused).  0, or -EPROTO with the offset INT64_MIN.
 */
int bd_timens_derive(struct barrierd *b);

/* Close the handle's pinned namespace fd, if the number still refers to it. */
void bd_timens_unpin(struct barrierd *b);

/* Bumped in every child after fork(): handles re-derive their offset (see timens.c). */
extern unsigned bd_fork_gen;

/* The offset to subtract from this process's clock, re-derived after a fork. */
int64_t bd_timens_current(const struct barrierd *b);

/*
 * Has a setns() moved this thread to another time namespace since the handle learnt its
 * offset?  0, or -ESTALE: the handle is retired (offset unknown: waits -EPROTO; every ns
 * stamp refused); -EPROTO if it already was.  One stat() when nothing moved: the pinned
 * namespace's inode number cannot be reused, so the same inode means the same namespace, and
 * a namespace's offsets cannot change once a process has entered it.
 */
int bd_timens_moved(struct barrierd *b);

/* Has this process forked since the handle learnt its offset (loads only)? */
bool bd_timens_stale_fork(const struct barrierd *b);

#endif
