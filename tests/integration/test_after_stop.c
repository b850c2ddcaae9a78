// SPDX-License-Identifier: MIT
/*
 * What a file says once no daemon of ours publishes (DESIGN rules 9 and 10), against the real
 * daemon: a writer that comes after a clean stop or after a SIGKILL must not make any barrier
 * pass, and the next start must carry none of its values over.
 *
 * Every test runs on a private state path in a temporary directory (never /run/barrierd).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

/* Run the daemon, let it publish, and open a handle that outlives it. */
static struct barrierd *start_and_open(void)
{
	struct barrierd *b;

	assert_int_equal(h_start(&H, -1, NULL), 0);
	/*
	 * The file's path: these barriers are what makes the daemon publish (a stop snapshot
	 * above the first vtime); the slots would pass them without it.
	 */
	assert_int_equal(test_open_file_only(&b, H.state, NULL), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(barrierd_barrier(b, 5000 * TEST_MS), 0);
	return b;
}

static void stop_cleanly(void)
{
	int st = h_stop(&H);

	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/*
 * A writer that comes after a clean stop raises every per-CPU time to the stop heartbeat and
 * leaves the globals (equal to the stop snapshot) alone, as the original barrierd does while
 * the CPU holding the minimum has no new event.  Nothing in the file tells those values from
 * ours; the next start must not carry them over.  Probed with a start that fails right after
 * the file was opened (an unknown tracepoint), so nothing new is published.
 */
static void next_start_carries_nothing_over(void **state)
{
	const char *args[] = {"--state", H.state, "-t", "irq/no_such_tracepoint", NULL};
	uint64_t ncpu = test_possible_cpus(), hb;
	struct barrierd_header *w;
	struct barrierd *b;
	size_t wsz;
	int st;

	(void)state;
	b = start_and_open();
	stop_cleanly();
	w = test_map_rw(H.state, &wsz);
	assert_non_null(w);
	hb = bd_load(&w->heartbeat_ns);
	assert_true(hb > bd_load(&w->last_interrupt_ns));
	for (uint64_t c = 0; c < ncpu; c++)
		bd_store(&w->per_cpu[c].last_interrupt_ns, hb);

	st = test_reap(h_spawn(&H, -1, args), 20);
	assert_true(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) != 0);
	for (uint64_t c = 0; c < ncpu; c++)
		if (bd_load(&w->per_cpu[c].last_interrupt_ns) == hb)
			fail_msg("cpu %llu kept the value %llu written after the stop",
				 (unsigned long long)c, (unsigned long long)hb);
	assert_int_equal(bd_load(&w->last_interrupt_ns), 0);
	assert_true(bd_load(&w->flags) & BARRIERD_FLAG_STOPPED);
	barrierd_close(b);
	munmap(w, wsz);
}

/*
 * A writer that comes after a clean stop lowers header.vtime (the original barrierd writes its
 * own, smaller counter).  A vtime stamp is a load of that word: it must not pass on the values
 * our daemon left, although they are at or below the stop snapshot.
 */
static void lowered_vtime_not_passed(void **state)
{
	struct barrierd_header *w;
	struct barrierd *b, *fresh;
	uint64_t v;
	size_t wsz;

	(void)state;
	b = start_and_open();
	stop_cleanly();
	w = test_map_rw(H.state, &wsz);
	assert_non_null(w);
	assert_true(bd_load(&test_ext_of(w, test_possible_cpus())->stop_vtime) > 1);
	bd_store(&w->vtime, 1);

	v = barrierd_stamp_vtime(b);
	assert_int_equal(v, 1);
	assert_false(barrierd_passed_vtime(b, v));
	assert_int_not_equal(barrierd_wait_vtime(b, v, 200 * TEST_MS), 0);
	/* A handle opened now (the file is a valid stopped one) says the same. */
	assert_int_equal(barrierd_open(&fresh, H.state), 0);
	v = barrierd_stamp_vtime(fresh);
	assert_false(barrierd_passed_vtime(fresh, v));
	assert_int_not_equal(barrierd_wait_vtime(fresh, v, 200 * TEST_MS), 0);
	barrierd_close(fresh);
	barrierd_close(b);
	munmap(w, wsz);
}

/*
 * A daemon killed with SIGKILL leaves the file marked running.  Once its heartbeat is stale, a
 * writer raises every time past a stamp taken before the kill (and, with future_hb, stores a
 * heartbeat from the future, to be believed for longer): no stamp may pass, not through
 * barrierd_passed(), not through a wait, not through wait_cpus.
 */
static void kill_then_raise(bool future_hb)
{
	uint64_t ncpu = test_possible_cpus(), t;
	struct barrierd_header *w;
	struct barrierd *b;
	cpu_set_t all;
	size_t wsz;
	int st;

	b = start_and_open();
	t = barrierd_stamp_ns(b);
	assert_int_equal(kill(H.pid, SIGKILL), 0);
	st = test_reap(H.pid, 10);
	H.pid = -1;
	assert_true(st != -1 && WIFSIGNALED(st));
	w = test_map_rw(H.state, &wsz);
	assert_non_null(w);
	assert_true(bd_load(&w->flags) & BARRIERD_FLAG_RUNNING); /* what SIGKILL leaves */
	/* Past the liveness bound: three heartbeat periods (100 ms each) and some. */
	test_sleep_ms(500);
	assert_false(barrierd_live(b));
	if (future_hb)
		bd_store(&w->heartbeat_ns, bd_mono_ns() + 3600 * TEST_SEC);
	for (uint64_t c = 0; c < ncpu; c++)
		bd_store(&w->per_cpu[c].last_interrupt_ns, t + 1000);
	bd_store(&w->last_interrupt_ns, t + 1000);

	assert_false(barrierd_passed(b, t));
	assert_int_not_equal(barrierd_wait(b, t, 200 * TEST_MS), 0);
	CPU_ZERO(&all);
	for (uint64_t c = 0; c < ncpu && c < CPU_SETSIZE; c++)
		CPU_SET(c, &all);
	assert_int_not_equal(barrierd_wait_cpus(b, t, &all, sizeof(all), 200 * TEST_MS), 0);
	barrierd_close(b);
	munmap(w, wsz);
}

static void killed_daemon_then_writer(void **state)
{
	(void)state;
	kill_then_raise(false);
}

/* A heartbeat later than the reader's clock is no daemon's of ours. */
static void killed_daemon_future_heartbeat(void **state)
{
	(void)state;
	kill_then_raise(true);
}

int main(void)
{
	test_require_root();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(next_start_carries_nothing_over, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(lowered_vtime_not_passed, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(killed_daemon_then_writer, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(killed_daemon_future_heartbeat, h_setup, h_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
