/* SPDX-License-Identifier: MIT */
/*
 * The membarrier fallback (lib/fallback.c), and the bound that keeps it from answering for a
 * stamp it does not cover.
 */
#ifndef BARRIERD_LIB_FALLBACK_H
#define BARRIERD_LIB_FALLBACK_H

#include "handle.h"

/* What a fallback answers for (bd_fallback). */
enum bd_fb_stamp {
	BD_FB_BARRIER, /* a barrier with no stamp yet: the call is the barrier */
	BD_FB_NS,      /* a ns stamp in host time */
	BD_FB_VTIME,   /* a vtime stamp */
};

/* bd_fallback(): the call would not prove a barrier for this stamp, and was not made. */
#define BD_FALLBACK_UNPROVEN 1

/* membarrier(MEMBARRIER_CMD_GLOBAL): 0 or its -errno, never a success it did not get. */
int bd_fallback_membarrier(void);

/*
 * The fallback for one stamp (lib/fallback.c): membarrier's result (0 or -errno) when a
 * barrier that began with the call covers the stamp, else BD_FALLBACK_UNPROVEN without the
 * call: a ns stamp T not below r, the host clock read before the call (LFENCE between them);
 * a vtime stamp V above the file's vtime loaded before the call (or no file: only the
 * UINT64_MAX an attach-later handle's barrierd_stamp_vtime() gives without one).  A caller
 * then goes on as without a fallback.
 */
int bd_fallback(const struct barrierd *b, enum bd_fb_stamp kind, uint64_t stamp);

#endif
