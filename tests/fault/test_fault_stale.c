// SPDX-License-Identifier: MIT
/*
 * Faults (issue 13, item "a stale daemon makes waiters spin"): a daemon stopped long enough for
 * its heartbeat to go stale, under 1000 threads looping barrierd_barrier() with a 1 s timeout
 * and no fallback.  The property: no spin, timeouts honoured.  While the daemon is stale, the
 * calls that return per thread per second stay bounded (MAX_CALLS_PER_S); no call returns 0
 * for a stamp nothing covered; no call overshoots its timeout by more than a hang guard; after
 * SIGCONT every thread passes barriers again.
 *
 * A library that returns -ESTALE at once to every call while the daemon is stale makes a
 * retry loop spin: hundreds of calls per thread per second, which this test fails.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "fault_util.h"
#include "looper.h"

#define THREADS 1000
#define CALL_TIMEOUT_NS ((int64_t)TEST_SEC)
#define GUARD_S 5
#define STALE_MS 2000
/*
 * "A few per thread per second": a call that sleeps until its timeout makes one; one that
 * re-checks liveness and gives up after a short sleep, a few.  A spinning loop makes thousands.
 */
#define MAX_CALLS_PER_S 10.0

static int setup(void **state)
{
	(void)state;
	h_mkdir(&H);
	return h_start(&H, -1, NULL);
}

static void stale_daemon_no_spin(void **state)
{
	static uint64_t at_a[THREADS];
	struct barrierd *b;
	struct looper l;
	struct lthread sum;
	uint64_t t_stop, t_a, t_b, t_cont, window, most = 0, total = 0;
	int passed_after;

	(void)state;
	assert_int_equal(test_open_file_only(&b, H.state, NULL), 0);
	assert_int_equal(looper_start(&l, b, THREADS, CALL_TIMEOUT_NS), 0);
	test_sleep_ms(1000);
	assert_int_equal(f_sigstop(H.pid), 0);
	t_stop = bd_mono_ns();
	assert_int_equal(f_wait_stale(b), 0);
	t_a = bd_mono_ns();
	for (int i = 0; i < THREADS; i++)
		at_a[i] = atomic_load(&l.t[i].completed);
	test_sleep_ms(STALE_MS);
	for (int i = 0; i < THREADS; i++) {
		uint64_t n = atomic_load(&l.t[i].completed) - at_a[i];

		total += n;
		if (n > most)
			most = n;
	}
	t_b = bd_mono_ns();
	t_cont = bd_mono_ns();
	kill(H.pid, SIGCONT);
	window = t_b - t_a;
	/* Every thread passes again (hang guard); then the threads stop. */
	for (int i = 0; i < 3000 && looper_threads_passed_after(&l, t_cont) < THREADS; i++)
		test_sleep_ms(10);
	passed_after = looper_threads_passed_after(&l, t_cont);
	assert_int_equal(looper_stop(&l, GUARD_S), 0);
	looper_totals(&l, &sum, "stale daemon, 1000 threads");
	printf("stale window %.2f s: %llu calls returned, %.1f per thread per second (the busiest "
	       "thread %.1f/s; bound %.0f/s); %d of %d threads passed after SIGCONT\n",
	       (double)window / 1e9, (unsigned long long)total,
	       (double)total / THREADS / ((double)window / 1e9),
	       (double)most / ((double)window / 1e9), MAX_CALLS_PER_S, passed_after, THREADS);
	assert_int_equal(looper_early(&l, t_stop, t_cont), 0);
	assert_int_equal(sum.other, 0);
	assert_false(sum.oom);
	assert_true(sum.max_call <= (uint64_t)CALL_TIMEOUT_NS + GUARD_S * TEST_SEC);
	assert_int_equal(passed_after, THREADS);
	/* The property the library change is for: no spin while stale. */
	assert_true((double)most / ((double)window / 1e9) <= MAX_CALLS_PER_S);
	looper_free(&l);
	barrierd_close(b);
}

int main(void)
{
	test_require_root();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(stale_daemon_no_spin, setup, f_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
