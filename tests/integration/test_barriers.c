// SPDX-License-Identifier: MIT
/*
 * Real barriers against the real daemon: completion and per-CPU evidence, idle credit with
 * pinned CPUs, the watermark handshake under stress (following every pass, and serving the
 * demand horizon alone), and clients of the original layout.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"

static void two_hundred_barriers(void **state)
{
	const struct barrierd_header *m;
	size_t sz = 0;

	(void)state;
	assert_int_equal(h_start(&H, -1, NULL), 0);
	m = map_ro(H.state, &sz);
	assert_non_null(m);
	for (int i = 0; i < 200; i++) {
		uint64_t t;

		/* By hand, ringing for idle credit as the library does; hang guard 5 s. */
		assert_int_equal(h_raw_barrier(m, true, 2 * TEST_MS, 5 * TEST_SEC, &t), 0);
		for (uint64_t c = 0; c < m->ncpu; c++)
			if (bd_load(&m->per_cpu[c].last_interrupt_ns) <= t)
				fail_msg("barrier %d: cpu %llu value %llu not after stamp %llu", i,
					 (unsigned long long)c,
					 (unsigned long long)m->per_cpu[c].last_interrupt_ns,
					 (unsigned long long)t);
	}
	/* and through the library, 200 more */
	struct barrierd *b;
	assert_int_equal(test_open_file_only(&b, H.state, NULL), 0);
	for (int i = 0; i < 200; i++) {
		uint64_t t = barrierd_stamp_ns(b);

		assert_int_equal(barrierd_wait(b, t, 5000000000LL), 0);
		for (uint64_t c = 0; c < m->ncpu; c++)
			assert_true(bd_load(&m->per_cpu[c].last_interrupt_ns) > t);
	}
	barrierd_close(b);
	munmap((void *)m, sz);
}

/*
 * Daemon and waiter pinned to one CPU: every other CPU sits idle and must be credited as
 * idle (the extension's counters say how), not stall the barrier.
 */
static void idle_cpu_credited(int pin)
{
	const struct barrierd_header *m;
	const struct barrierd_ext *x;
	struct barrierd *b;
	uint64_t before[64] = {0};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t sz = 0;

	if (ncpu < 2)
		test_skip_or_fail("needs two CPUs");
	test_pin(pin);
	assert_int_equal(h_start(&H, pin, NULL), 0);
	m = map_ro(H.state, &sz);
	assert_non_null(m);
	x = (const void *)((const char *)m + m->ext_offset);
	assert_int_equal(test_open_file_only(&b, H.state, NULL), 0);
	for (long c = 0; c < ncpu && c < 64; c++)
		before[c] = bd_load(&x->cpu[c].credit_idle);
	for (int i = 0; i < 100; i++)
		assert_int_equal(barrierd_barrier(b, 5000000000LL), 0);
	for (long c = 0; c < ncpu && c < 64; c++) {
		if (c == pin)
			continue;
		if (bd_load(&x->cpu[c].credit_idle) <= before[c])
			fail_msg("cpu %ld (idle, daemon and waiter on %d) was never credited idle",
				 c, pin);
		printf("cpu %ld: %llu idle credits in 100 barriers (events %llu)\n", c,
		       (unsigned long long)(bd_load(&x->cpu[c].credit_idle) - before[c]),
		       (unsigned long long)bd_load(&x->cpu[c].credit_event));
	}
	barrierd_close(b);
	munmap((void *)m, sz);
	cpu_set_t all;
	CPU_ZERO(&all);
	for (long c = 0; c < ncpu; c++)
		CPU_SET(c, &all);
	sched_setaffinity(0, sizeof(all), &all);
}

static void idle_cpu1_credited(void **state)
{
	(void)state;
	idle_cpu_credited(0);
}

static void idle_cpu0_credited(void **state)
{
	(void)state;
	idle_cpu_credited(1);
}

/*
 * The watermark handshake loses no signal.  The watermark stays armed, the heartbeat's fold
 * and the slow idle-credit timer are off, every CPU is busy (so no idle credit is due) and
 * the waiter never rings the doorbell: each barrier then depends on busy CPUs' signals alone,
 * and one lost signal would stall it for good.
 */
static void watermark_stress(void **state)
{
	const char *extra[] = {"--always-armed", "--idle-credit-interval",
			       "60000",		 "--heartbeat-period",
			       "60000",		 NULL};
	const struct barrierd_header *m;
	pid_t spin[64];
	int ns, worst_ms = 0;
	size_t sz = 0;

	(void)state;
	/* CPUs busy before the daemon's first pass, so that its watermark starts armed. */
	ns = test_spinners(spin, 64);
	if (h_start(&H, -1, extra)) {
		test_kill_all(spin, ns);
		fail_msg("daemon did not start");
	}
	m = map_ro(H.state, &sz);
	assert_non_null(m);
	for (int i = 0; i < 3000; i++) {
		uint64_t t, start = bd_mono_ns();

		/* No ring: the busy CPUs' own events must end every barrier. */
		if (h_raw_barrier(m, false, 20 * TEST_MS, 3 * TEST_SEC, &t)) {
			test_kill_all(spin, ns);
			fail_msg("barrier %d stalled 3 s with busy CPUs: a signal was lost", i);
		}
		int ms = (int)((bd_mono_ns() - start) / 1000000);
		worst_ms = ms > worst_ms ? ms : worst_ms;
	}
	test_kill_all(spin, ns);
	printf("3000 barriers without doorbell, CPUs busy: worst %d ms\n", worst_ms);
	munmap((void *)m, sz);
}

/*
 * The demand horizon alone serves busy CPUs (docs/DEMAND.md): every CPU busy, the
 * heartbeat's fold and the slow idle credit off (60 s), and no client that cannot ring, so the
 * daemon never follows every pass.  The library rings whenever the published horizon is below
 * its stamp; each busy CPU must then signal its first event past the horizon, and the credit
 * pass deferred for it must run when the last one came.  One lost signal stalls a barrier for
 * 60 s (the deferral's bound): the hang guard fails it.
 */
static void horizon_case(int pin, int rounds)
{
	const char *extra[] = {"--idle-credit-interval", "60000", "--heartbeat-period", "60000",
			       NULL};
	const struct barrierd_header *m;
	const struct barrierd_ext *x;
	struct barrierd *b;
	uint64_t p0, r0, covered = 0;
	pid_t spin[64];
	int ns;
	size_t sz = 0;

	long mark;

	ns = test_spinners(spin, 64);
	if (pin >= 0)
		test_pin(pin); /* the waiter beside the daemon (and CPU 0's spinner) */
	mark = h_log_mark(&H);
	if (h_start(&H, pin, extra)) {
		test_kill_all(spin, ns);
		fail_msg("daemon did not start");
	}
	m = map_ro(H.state, &sz);
	assert_non_null(m);
	assert_true(bd_load(&m->flags) & BARRIERD_FEAT_SERVED);
	x = (const void *)((const char *)m + bd_load(&m->ext_offset));
	assert_int_equal(test_open_file_only(&b, H.state, NULL), 0);
	p0 = bd_load(&x->passes);
	r0 = bd_load(&x->doorbell_rings);
	for (int i = 0; i < rounds; i++) {
		uint64_t t = barrierd_stamp_ns(b);
		int ret = barrierd_wait(b, t, 3 * (int64_t)TEST_SEC);

		if (ret) {
			test_kill_all(spin, ns);
			fail_msg("barrier %d: %d with busy CPUs: a signal was lost", i, ret);
		}
		for (uint64_t c = 0; c < m->ncpu; c++) {
			if (bd_load(&m->per_cpu[c].last_interrupt_ns) <= t) {
				test_kill_all(spin, ns);
				fail_msg("barrier %d: cpu %llu not past the stamp", i,
					 (unsigned long long)c);
			}
		}
		if (h_log_has_since(&H, mark, "following every pass")) {
			test_kill_all(spin, ns);
			fail_msg("barrier %d: the daemon follows, with no client that cannot ring",
				 i);
		}
		covered += bd_load(&x->served_ns) >= t;
		/*
		 * Under the doorbell's rate (1000 rings a second): rings beyond it start following
		 * (docs/DEMAND.md), which this test must not rely on.  Some gaps longer, for
		 * variety.
		 */
		usleep(1100 + (i % 10 == 0 ? 1000 * (unsigned)(i % 7) : 0));
	}
	test_kill_all(spin, ns);
	printf("%d barriers, CPUs busy, horizon only%s: %llu passes, %llu rings, horizon past the "
	       "stamp after %llu\n",
	       rounds, pin >= 0 ? ", waiter and daemon pinned" : "",
	       (unsigned long long)(bd_load(&x->passes) - p0),
	       (unsigned long long)(bd_load(&x->doorbell_rings) - r0), (unsigned long long)covered);
	barrierd_close(b);
	munmap((void *)m, sz);
	if (pin >= 0) {
		cpu_set_t all;

		CPU_ZERO(&all);
		for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN); c++)
			CPU_SET(c, &all);
		sched_setaffinity(0, sizeof(all), &all);
	}
}

static void horizon_serves_busy_cpus(void **state)
{
	(void)state;
	horizon_case(-1, 1000);
}

/*
 * The same with the waiter and the daemon on one CPU: the waiter's ring is heard there, and that
 * CPU is kept from signalling the horizon (publisher_quiet): the ring's credit pass must cover
 * it, or the barrier waits out the 60 s.
 */
static void horizon_serves_busy_cpus_pinned(void **state)
{
	(void)state;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		test_skip_or_fail("needs two CPUs");
	horizon_case(0, 300);
}

/*
 * A client that cannot ring, found asleep, counts as a ring, idle credit included
 * (docs/DEMAND.md, "Following"): the daemon and the client pinned to CPU 0, the slow idle-credit
 * timer off (60 s).  Every other CPU is idle or busy with whatever the machine runs; an idle one is
 * credited only because the sleeper was found, and a barrier left to the timer trips the
 * hang guard.
 */
static void legacy_sleeper_is_a_ring(void **state)
{
	const char *extra[] = {"--idle-credit-interval", "60000", NULL};
	const struct barrierd_header *m;
	cpu_set_t one, all;
	size_t sz = 0;

	(void)state;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		skip();
	assert_int_equal(h_start(&H, 0, extra), 0);
	m = map_ro(H.state, &sz);
	assert_non_null(m);
	assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	for (int i = 0; i < 100; i++) {
		uint64_t t;

		/* The original clients' wait: no ring, 10 ms futex timeouts; hang guard 3 s. */
		if (h_raw_barrier(m, false, 10 * TEST_MS, 3 * TEST_SEC, &t)) {
			sched_setaffinity(0, sizeof(all), &all);
			fail_msg("barrier %d: not served within 3 s (left to the slow timer?)", i);
		}
		usleep(1000 * (unsigned)(i % 20)); /* 0-19 ms gaps: the hold must not expire */
	}
	assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
	munmap((void *)m, sz);
}

/*
 * The waiter pinned to CPU 0 and the daemon started there with extra options: its mapping in
 * *m (*sz) and a library handle in *b.
 */
static void start_on_cpu0(const char *const *extra, const struct barrierd_header **m, size_t *sz,
			  struct barrierd **b)
{
	test_pin(0);
	assert_int_equal(h_start(&H, 0, extra), 0);
	*m = map_ro(H.state, sz);
	assert_non_null(*m);
	assert_int_equal(test_open_file_only(b, H.state, NULL), 0);
}

/* The daemon's nudge count (ext.nudges, ABI 1.2). */
static uint64_t nudges(const struct barrierd_header *m)
{
	const struct barrierd_ext *x = (const void *)((const char *)m + m->ext_offset);

	return bd_load(&x->nudges);
}

/*
 * Nudges go only to CPUs that lag a waiter past --nudge-after and that the waiter needs
 * (docs/DEMAND.md, "Nudges"): the daemon and the waiter on CPU 0, a nice-19 spinner on every other
 * CPU.  Waits for CPU 0 alone nudge nothing, although every other CPU lags each of them; waits
 * for all CPUs nudge the spinners' CPUs.  The heartbeat and the slow timer are at 60 s, so
 * what completes a wait for all is a tick or a nudge.
 */
static void nudges_only_lagging_cpus_waited_for(void **state)
{
	const char *extra[] = {"--nudge-after",
			       "0.1",
			       "--max-nudge-rate",
			       "100000",
			       "--heartbeat-period",
			       "60000",
			       "--idle-credit-interval",
			       "60000",
			       NULL};
	const struct barrierd_header *m;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct barrierd *b;
	pid_t spin[64];
	int ns = 0;
	cpu_set_t zero;
	uint64_t n0, n1, n2;
	size_t sz = 0;

	(void)state;
	if (ncpu < 2)
		test_skip_or_fail("needs two CPUs");
	start_on_cpu0(extra, &m, &sz, &b);
	for (long c = 1; c < ncpu && c < 64; c++)
		spin[ns++] = test_spin_on((int)c, 19);
	test_sleep_ms(20);
	CPU_ZERO(&zero);
	CPU_SET(0, &zero);
	n0 = nudges(m);
	for (int i = 0; i < 200; i++) {
		int rc =
		    barrierd_wait_cpus(b, barrierd_stamp_ns(b), &zero, sizeof(zero), 5 * TEST_SEC);

		if (rc) {
			test_kill_all(spin, ns);
			fail_msg("wait for CPU 0, %d: %s", i, strerror(-rc));
		}
		usleep((unsigned)(i % 5) * 100);
	}
	n1 = nudges(m);
	for (int i = 0; i < 200; i++) {
		int rc = barrierd_barrier(b, 5 * TEST_SEC);

		if (rc) {
			test_kill_all(spin, ns);
			fail_msg("barrier %d: %s", i, strerror(-rc));
		}
		usleep((unsigned)(i % 5) * 100);
	}
	n2 = nudges(m);
	test_kill_all(spin, ns);
	printf("nudges: %llu during 200 waits for CPU 0, %llu during 200 barriers\n",
	       (unsigned long long)(n1 - n0), (unsigned long long)(n2 - n1));
	barrierd_close(b);
	munmap((void *)m, sz);
	test_unpin();
	assert_int_equal(n1 - n0, 0);
	assert_true(n2 > n1);
}

/*
 * A CPU made silent: only sched/sched_switch is an evidence tracepoint, so CPU 1, busy with one
 * spinner, stamps only when it switches, as a nohz_full CPU running one task.  The daemon and
 * the waiter on CPU 0, --nudge-after 0.5 at the default rate limit (200 a second, bursts of 4):
 * 300 barriers back to back, faster than the limit, so nudges are held back and must be sent
 * later (a one-shot nudge left such a barrier to its timeout).  Each has a 5 s hang guard.
 */
static void nudges_serve_a_silent_cpu(void **state)
{
	const char *extra[] = {"--tracepoint", "sched/sched_switch", "--nudge-after", "0.5", NULL};
	const struct barrierd_header *m;
	struct barrierd *b;
	uint64_t n0, worst = 0;
	size_t sz = 0;
	pid_t spin;

	(void)state;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		test_skip_or_fail("needs two CPUs");
	start_on_cpu0(extra, &m, &sz, &b);
	spin = test_spin_on(1, 19);
	test_sleep_ms(20);
	n0 = nudges(m);
	for (int i = 0; i < 300; i++) {
		uint64_t t0 = bd_mono_ns();
		int rc = barrierd_barrier(b, 5 * TEST_SEC);

		if (rc) {
			test_kill_all(&spin, 1);
			fail_msg("barrier %d: %s (nudges so far %llu)", i, strerror(-rc),
				 (unsigned long long)(nudges(m) - n0));
		}
		if (bd_mono_ns() - t0 > worst)
			worst = bd_mono_ns() - t0;
	}
	test_kill_all(&spin, 1);
	printf("300 barriers with CPU 1 silent but for nudges: %llu nudges, slowest %.1f ms\n",
	       (unsigned long long)(nudges(m) - n0), (double)worst / 1e6);
	assert_true(nudges(m) > n0);
	barrierd_close(b);
	munmap((void *)m, sz);
	test_unpin();
}

static void original_layout_client(void **state)
{
	(void)state;
	assert_int_equal(h_start(&H, -1, NULL), 0);
	/* No doorbell: found asleep, the client is followed and served as if it rang. */
	assert_int_equal(test_system("%s/tests/integration/original_client '%s' 100",
				     BARRIERD_BINARY_DIR, H.state),
			 0);
}

int main(void)
{
	test_require_root();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(two_hundred_barriers, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(idle_cpu1_credited, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(idle_cpu0_credited, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(watermark_stress, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(horizon_serves_busy_cpus, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(horizon_serves_busy_cpus_pinned, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(legacy_sleeper_is_a_ring, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(original_layout_client, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(nudges_only_lagging_cpus_waited_for, h_setup,
					    h_teardown),
	    cmocka_unit_test_setup_teardown(nudges_serve_a_silent_cpu, h_setup, h_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
