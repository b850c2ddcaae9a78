// SPDX-License-Identifier: MIT
/*
 * The first barrier of an original-layout client that starts against a daemon that has been
 * idle for more than ten heartbeats, and for longer than a peek window (docs/DEMAND.md, "The
 * heartbeat, the probe and the peek"): such a client never rings, and waits as bench_legacy and
 * the original clients do, in 10 ms FUTEX_WAITs on the global word.  It opens and maps the file
 * as it starts, and the daemon must find it asleep by itself, within a slice or two, not at a
 * later heartbeat probe.  Counted in futex time-outs (at most 2), with a 5 s hang guard; how
 * long the first call takes is bench/legacy_first.sh's business.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include "demand.h"
#include "harness.h"

#define SLICE_NS (10 * TEST_MS)
#define MAX_TIMEOUTS 2
/* Idle before each client starts: ten heartbeats (100 ms, the default), and past any window. */
#define IDLE_MS (DEMAND_PEEK_WINDOW_NS / TEST_MS + 1100)

/* One original-layout wait for stamp t: its futex time-outs, or -1 past the hang guard. */
static int first_wait(const struct barrierd_header *m, uint64_t t)
{
	struct timespec to = {0, (long)SLICE_NS};
	uint64_t start = bd_mono_ns();
	int timeouts = 0;

	for (;;) {
		uint32_t w = bd_load_low(&m->last_interrupt_ns);

		if (bd_load(&m->last_interrupt_ns) > t)
			return timeouts;
		if (bd_mono_ns() - start > 5 * TEST_SEC)
			return -1;
		if (syscall(SYS_futex, &m->last_interrupt_ns, FUTEX_WAIT, w, &to, NULL, 0) &&
		    errno == ETIMEDOUT)
			timeouts++;
	}
}

static void first_barrier_of_a_late_client(void **state)
{
	int worst = 0;

	(void)state;
	assert_int_equal(h_start(&H, -1, NULL), 0);
	/* Three clients, each starting (opening and mapping the file) after a long idle time. */
	for (int round = 0; round < 3; round++) {
		const struct barrierd_header *m;
		size_t sz = 0;
		uint64_t t;
		int n;

		test_sleep_ms(IDLE_MS);
		m = map_ro(H.state, &sz);
		assert_non_null(m);
		bd_stamp_fence();
		t = bd_mono_ns();
		n = first_wait(m, t);
		munmap((void *)m, sz);
		if (n < 0)
			fail_msg("round %d: the first wait did not pass in 5 s", round);
		printf("round %d: the first wait passed after %d futex time-outs\n", round, n);
		worst = n > worst ? n : worst;
	}
	if (worst > MAX_TIMEOUTS)
		fail_msg("a first wait took %d time-outs of 10 ms (at most %d): the daemon did not "
			 "find the sleeper",
			 worst, MAX_TIMEOUTS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(first_barrier_of_a_late_client, h_setup, h_teardown),
	};

	test_require_root();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
