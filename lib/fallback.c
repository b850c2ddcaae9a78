// SPDX-License-Identifier: MIT
/*
 * The membarrier fallback: a real global barrier, or its error, for the stamps it proves.
 *
 * membarrier(MEMBARRIER_CMD_GLOBAL) makes every CPU pass a barrier after the call began: it
 * proves nothing for a stamp taken after that.  A wait may be handed any value (another
 * thread's stamp, the future), so bd_fallback() bounds what a result of the call may answer.
 */
#include "fallback.h"
#include "handle.h"
#include "timens.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

int bd_fallback_membarrier(void)
{
	/* EINVAL under nohz_full, EPERM/ENOSYS under seccomp: returned, never hidden. */
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0))
		return -errno;
	return 0;
}

int bd_fallback(const struct barrierd *b, enum bd_fb_stamp kind, uint64_t stamp)
{
	const struct barrierd_header *h;
	int64_t off;
	uint64_t r;

	switch (kind) {
	case BD_FB_BARRIER:
		break; /* no stamp: the call is the barrier */
	case BD_FB_NS:
		/*
		 * r, host time, read before the call.  LFENCE: the system call does not start
		 * before the clock read completed (F5; SYSCALL orders nothing, F6), so r is
		 * earlier than the call's start, and a stamp T < r was taken before it.  Without
		 * the fence RDTSC may execute after the call began and r may be later than it.
		 * An unknown offset cannot convert r: nothing is proven.
		 */
		off = bd_timens_current(b);
		r = bd_clock_raw();
		bd_lfence();
		if (off == INT64_MIN || stamp >= r - (uint64_t)off)
			return BD_FALLBACK_UNPROVEN;
		break;
	case BD_FB_VTIME:
		/*
		 * barrierd_stamp_vtime()'s stamp without a file, on a handle that had none: taken
		 * before the file was mapped, so before this call (docs/PROTOCOL.md §6.9).
		 */
		if (stamp == UINT64_MAX && b->late_path)
			break;
		/*
		 * A vtime stamp V is a load of header.vtime after an MFENCE (rule 5).  Proven only
		 * if V <= W, the file's vtime loaded here, before the call: V had been published by
		 * then (vtime only grows), and a stamp that reached this call was loaded before our
		 * load (by the caller, or by a thread that handed it over: loads keep their order
		 * and stores follow older loads, F2), so the stamping thread's stores were visible
		 * before the call.  No fence: unlike RDTSC, the load is performed before the
		 * kernel's later loads and stores (F2).  A V above W was not published yet: the
		 * call may precede it.
		 */
		h = bd_hdr(b);
		if (!h || stamp > bd_load(&h->vtime))
			return BD_FALLBACK_UNPROVEN;
		break;
	}
	return bd_fallback_membarrier();
}
