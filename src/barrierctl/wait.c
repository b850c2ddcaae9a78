// SPDX-License-Identifier: MIT
/*
 * barrierctl wait: one barrier from a fenced stamp, through libbarrierd's barrierd_wait(); its
 * latency, or on a timeout the CPUs that held it back.
 */
#include "barrierctl.h"

#include <errno.h>
#include <string.h>

/* On a timeout, name the CPUs that hold the barrier back: the useful part of the message. */
static void describe_blockers(struct barrierd *b, const struct bctl_opts *o, uint64_t stamp)
{
	struct bctl_snapshot s;
	unsigned shown = 0, more = 0;

	if (bctl_snapshot_take(b, bctl_state_path(o), &s))
		return;
	for (uint64_t c = 0; c < s.ncpu; c++) {
		if (s.cpu[c].ns > stamp)
			continue;
		if (shown == 8) {
			more++;
			continue;
		}
		fprintf(stderr, "%s CPU %llu (%s, %.3f ms before the stamp)",
			shown ? "," : "; held back by", (unsigned long long)c,
			bctl_state_name(s.cpu[c].state), bctl_ms(stamp - s.cpu[c].ns));
		shown++;
	}
	if (more)
		fprintf(stderr, " and %u more", more);
	bctl_snapshot_free(&s);
}

int bctl_cmd_wait(const struct bctl_opts *o)
{
	const char *path = bctl_state_path(o);
	struct barrierd *b;
	uint64_t stamp, done;
	int ret;

	ret = bctl_open(o, &b);
	if (ret) {
		fprintf(stderr, "barrierctl: wait: cannot use %s: %s\n", path,
			bctl_open_error(ret));
		return BCTL_EXIT_UNUSABLE;
	}
	/* The library refuses stamps at or below the clock reading it took at open. */
	while ((stamp = barrierd_stamp_ns(b)) <= barrierd_open_ns(b))
		__builtin_ia32_pause();
	ret = barrierd_wait(b, stamp, o->timeout_ns);
	done = barrierd_stamp_ns(b);
	switch (ret) {
	case 0:
		printf("barrier passed in %.3f ms\n", bctl_ms(done - stamp));
		ret = BCTL_EXIT_OK;
		break;
	case -ETIMEDOUT:
		fprintf(stderr, "barrierctl: wait: timed out: no barrier within %lld ms",
			(long long)(o->timeout_ns / (int64_t)BCTL_MS));
		describe_blockers(b, o, stamp);
		fputc('\n', stderr);
		ret = BCTL_EXIT_TIMEOUT;
		break;
	case -ESTALE:
		fprintf(stderr,
			"barrierctl: wait: the daemon is not running (stopped flag, or no "
			"heartbeat for 3 periods) on %s\n",
			path);
		ret = BCTL_EXIT_NOT_RUNNING;
		break;
	default:
		fprintf(stderr, "barrierctl: wait: %s\n", strerror(-ret));
		ret = BCTL_EXIT_FAILED;
		break;
	}
	barrierd_close(b);
	return ret;
}
