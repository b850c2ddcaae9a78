/* SPDX-License-Identifier: MIT */
/*
 * The migrate phase's interposer (tests/audit/README.md, section 2): this executable defines
 * sched_getcpu() and exports it, so libbarrierd's call (the CPU it credits as its own, DESIGN
 * rule 11) comes here.  It reads the CPU the thread is on and, while armed for that thread,
 * on some calls moves the thread to another CPU before it returns the CPU it read.  The
 * library is still right to credit that CPU if it read it after its clock reading r > T (the
 * thread was there then); a library that reads it before the stamp credits a CPU the thread
 * may have left before T.
 */
#ifndef BARRIERD_AUDIT_MIGRATE_H
#define BARRIERD_AUDIT_MIGRATE_H

#include <stdbool.h>
#include <stdint.h>

/* The online CPUs the thread may be moved between (at least 2), and the random seed. */
void migrate_setup(const int *online, int nonline, unsigned seed);
/* Arm (for the calling thread only) or disarm the moves. */
void migrate_arm(bool on);
/* Calls made while armed, and how many of them moved the thread. */
void migrate_counts(unsigned long *calls, unsigned long *moves);
/*
 * 0 when the executable's sched_getcpu() is the one the dynamic linker hands out (so the
 * library's call, bound through its PLT, comes here), -ENOENT otherwise.
 */
int migrate_interposed(void);

#endif
