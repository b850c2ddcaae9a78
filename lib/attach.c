// SPDX-License-Identifier: MIT
/*
 * Handles opened before the daemon ever ran (BARRIERD_OPEN_ATTACH_LATER): a program started
 * at boot ahead of barrierd gets a handle without a file, runs on its fallback policy
 * meanwhile, and maps the file as soon as a call finds it.  Until then nothing of a file is
 * read: there is none, so nothing can pass but membarrier.
 */
#include "attach.h"
#include "fallback.h"
#include "handle.h"
#include "mapping.h"
#include "timens.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ATTACH_RETRY_NS (10 * 1000000ULL) /* at most 100 attempts a second per handle */

static uint64_t host_now(const struct barrierd *b)
{
	return bd_clock_raw() - (uint64_t)bd_timens_current(b);
}

int bd_attach_later(struct barrierd *b, const char *path)
{
	char cwd[PATH_MAX];

	/* Absolute, so that a chdir() before the daemon starts cannot make us look elsewhere. */
	if (path[0] == '/') {
		b->late_path = strdup(path);
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		if (asprintf(&b->late_path, "%s/%s", cwd, path) < 0)
			b->late_path = NULL;
	}
	if (!b->late_path)
		return -ENOMEM;
	b->created_ns = host_now(b);
	/* Stamps up to now are refused as for any handle (-EINVAL); later ones predate the file. */
	b->open_ns = b->created_ns;
	b->valid_after = b->created_ns;
	return 0;
}

int bd_attach(struct barrierd *b)
{
	int mine = (int)((__atomic_load_n(&bd_fork_gen, __ATOMIC_ACQUIRE) << 1) | 1);
	uint64_t now, next;
	int expected = 0, ret;

	if (bd_hdr(b))
		return 0;
	if (!b->late_path)
		return -ENOENT; /* cannot happen: a handle without a file is an attach-later one */
	now = host_now(b);
	next = __atomic_load_n(&b->attach_next_ns, __ATOMIC_RELAXED);
	if (now < next)
		return -ENOENT;
	/* A lock of another fork generation is a dead thread's: taken over (as bd_ext_refresh). */
	if (!__atomic_compare_exchange_n(&b->attach_busy, &expected, mine, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED) &&
	    (expected == mine ||
	     !__atomic_compare_exchange_n(&b->attach_busy, &expected, mine, false, __ATOMIC_ACQUIRE,
					  __ATOMIC_RELAXED)))
		return -ENOENT;
	/*
	 * A setns() since the handle learnt its offset: the file's times cannot be checked
	 * against our clock (bd_timens_moved retires the handle, as a wait would).
	 */
	ret = bd_hdr(b) ? 0 : bd_timens_moved(b);
	if (!ret && !bd_hdr(b))
		ret = bd_map_file(b, b->late_path, true);
	if (ret)
		__atomic_store_n(&b->attach_next_ns, host_now(b) + ATTACH_RETRY_NS,
				 __ATOMIC_RELAXED);
	__atomic_store_n(&b->attach_busy, 0, __ATOMIC_RELEASE);
	return ret;
}

int bd_before_attach(struct barrierd *b, enum bd_fb_stamp kind, uint64_t stamp)
{
	int ret;

	/*
	 * No value of the file may pass it, ever: -EINVAL, the answer to any stamp at or below
	 * barrierd_open_ns(), and not -ESTALE, on which a caller would retry for nothing.
	 * membarrier, run now, is later than the stamp: bd_fallback checks that it is.
	 */
	if (b->fallback != BARRIERD_FALLBACK_MEMBARRIER)
		return -EINVAL;
	ret = bd_fallback(b, kind, stamp);
	return ret == BD_FALLBACK_UNPROVEN ? -EINVAL : ret;
}

int bd_detached_wait(struct barrierd *b, enum bd_fb_stamp kind, uint64_t stamp, int64_t timeout_ns,
		     int64_t *left_ns)
{
	uint64_t start, span, end;
	struct timespec ts;
	int ret;

	/* A stamp the call does not prove (from the future) waits as without a fallback. */
	if (b->fallback == BARRIERD_FALLBACK_MEMBARRIER) {
		ret = bd_fallback(b, kind, stamp);
		if (ret != BD_FALLBACK_UNPROVEN)
			return ret;
	}
	if (bd_timens_current(b) == INT64_MIN)
		return -EPROTO;
	/*
	 * No daemon has ever been here: back off as from a daemon gone (lib/wait.c), for one
	 * liveness bound at the default period, never past the deadline, so that a caller
	 * retrying on -ESTALE sleeps instead of spinning.  Nothing to watch meanwhile: the file
	 * is looked for again at the end.
	 */
	span = BARRIERD_LIVENESS_PERIODS * BARRIERD_DEFAULT_HEARTBEAT_PERIOD_NS;
	if (timeout_ns >= 0 && (uint64_t)timeout_ns < span)
		span = (uint64_t)timeout_ns;
	start = bd_clock_raw();
	end = start + span;
	ts.tv_sec = (time_t)(end / 1000000000ULL);
	ts.tv_nsec = (long)(end % 1000000000ULL);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	ret = bd_attach(b);
	if (ret)
		return ret == -ENOENT ? -ESTALE : ret;
	if (timeout_ns < 0) {
		*left_ns = -1;
	} else {
		uint64_t spent = bd_clock_raw() - start;

		*left_ns = spent >= (uint64_t)timeout_ns ? 0 : timeout_ns - (int64_t)spent;
	}
	return 1;
}
