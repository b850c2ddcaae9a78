/* SPDX-License-Identifier: MIT */
/*
 * The doorbell (lib/doorbell.c): asking the daemon for idle and offline credit.
 */
#ifndef BARRIERD_LIB_DOORBELL_H
#define BARRIERD_LIB_DOORBELL_H

#include "handle.h"

/* Doorbell: one FUTEX_WAKE; returns how many daemon threads heard it, or -errno. */
int bd_ring(const struct barrierd *b);

#endif
