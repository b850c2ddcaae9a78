/* SPDX-License-Identifier: MIT */
/*
 * Handles opened before the daemon ever ran (BARRIERD_OPEN_ATTACH_LATER, lib/attach.c).
 */
#ifndef BARRIERD_LIB_ATTACH_H
#define BARRIERD_LIB_ATTACH_H

#include "fallback.h"
#include "handle.h"

/* A handle without a file yet (BARRIERD_OPEN_ATTACH_LATER): remember where to look.  0 or -ENOMEM.
 */
int bd_attach_later(struct barrierd *b, const char *path);

/*
 * An attach-later handle's attempt to map its file: 0 once mapped (by this call or before),
 * -ENOENT while it is not there (or another thread is trying, or the last try was under
 * 10 ms ago: nobody waits for an attempt), or bd_map_file()'s error.
 */
int bd_attach(struct barrierd *b);

/*
 * A wait on a handle with no file: the fallback if the handle has one and it proves the stamp
 * (bd_fallback); otherwise a back-off of one default liveness bound within timeout_ns, then
 * one more attempt.  1 if the file was mapped by then (*left_ns: the time left of timeout_ns,
 * < 0 for none), else membarrier's result, -ESTALE or an attach error.
 */
int bd_detached_wait(struct barrierd *b, enum bd_fb_stamp kind, uint64_t stamp, int64_t timeout_ns,
		     int64_t *left_ns);

/*
 * What a wait for a stamp taken before the file was mapped gets: the fallback, or -EINVAL (also
 * for a stamp the fallback does not prove).
 */
int bd_before_attach(struct barrierd *b, enum bd_fb_stamp kind, uint64_t stamp);

#endif
