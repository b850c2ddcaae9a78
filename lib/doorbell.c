// SPDX-License-Identifier: MIT
/* Ringing the daemon's doorbell: a FUTEX_WAKE on a word of the read-only mapping. */
#include "attach.h"
#include "doorbell.h"
#include "handle.h"
#include "mapping.h"
#include "timens.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

int bd_ring(const struct barrierd *b)
{
	/*
	 * FUTEX_WAKE needs no write access, so any user can ring.  Shared (not private): the
	 * daemon waits on the same file page from another process.  The result counts the
	 * daemon threads that heard it; 0 means the ring was lost (no thread was waiting).
	 */
	long r =
	    syscall(SYS_futex, (const uint32_t *)&b->hdr->doorbell, FUTEX_WAKE, 1, NULL, NULL, 0);

	return r < 0 ? -errno : (int)r;
}

BDLIB_EXPORT int barrierd_request(struct barrierd *b)
{
	int r;

	/* An attach-later handle without its file: look for it (a poller's way to attach). */
	if (!bd_hdr(b)) {
		r = bd_attach(b);
		if (r)
			return r;
	}
	/* After a fork, barrierd_passed() is false until the offset is learnt: learn it here. */
	if (bd_timens_stale_fork(b))
		(void)bd_timens_current(b);
	/* A poller's one slow call: pick up an extension laid out since open (stop snapshot). */
	if (!bd_ext(b))
		bd_ext_refresh(b);
	r = bd_ring(b);

	return r < 0 ? r : 0;
}
