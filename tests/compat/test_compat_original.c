// SPDX-License-Identifier: MIT
/*
 * A client of the original layout against this build's daemon: no libbarrierd, no doorbell
 * (it knows none), only a read-only mapping, the fenced stamp, FUTEX_WAIT on the low half of a
 * global word with a 10 ms timeout and a re-check of its 64 bits (harness.h's h_raw_*).  ns and
 * vtime barriers, spaced by random sleeps of up to 100 ms (mostly under 20 ms) so that they
 * find the daemon armed, disarmed and in between, on an idle machine and with every CPU busy.
 * Each barrier has a 5 s hang guard and must leave the words it waited for past its stamp.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"

#define ROUNDS 100
#define SLICE_NS (10 * TEST_MS)
#define GUARD_NS (5 * TEST_SEC)

static pid_t spin[64];
static int nspin;

static int teardown(void **state)
{
	test_kill_all(spin, nspin);
	nspin = 0;
	return h_teardown(state);
}

/* 0 to 20 ms, and one time in ten up to 100 ms. */
static void random_gap(unsigned *seed)
{
	long ms = rand_r(seed) % 10 == 0 ? rand_r(seed) % 101 : rand_r(seed) % 21;

	test_sleep_ms(ms);
}

static void rounds(const char *what)
{
	const struct barrierd_header *m;
	unsigned seed = (unsigned)bd_mono_ns();
	uint64_t worst = 0;
	int nvt = 0;
	size_t sz = 0;

	m = map_ro(H.state, &sz);
	assert_non_null(m);
	printf("original layout, %s: seed %u\n", what, seed);
	for (int i = 0; i < ROUNDS; i++) {
		uint64_t t0, t, g;

		random_gap(&seed);
		t0 = bd_mono_ns();
		if (i % 3 == 2) {
			t = h_raw_stamp_vtime(m);
			if (h_raw_wait_vtime(m, t, false, SLICE_NS, GUARD_NS))
				fail_msg("%s: vtime barrier %d: no pass within 5 s", what, i);
			g = bd_load(&m->last_interrupt_vtime);
			nvt++;
		} else {
			if (h_raw_barrier(m, false, SLICE_NS, GUARD_NS, &t))
				fail_msg("%s: barrier %d: no pass within 5 s", what, i);
			g = bd_load(&m->last_interrupt_ns);
			for (uint64_t c = 0; c < m->ncpu; c++)
				if (bd_load(&m->per_cpu[c].last_interrupt_ns) <= t)
					fail_msg("%s: barrier %d: cpu %llu not past the stamp",
						 what, i, (unsigned long long)c);
		}
		if (g <= t)
			fail_msg("%s: barrier %d returned early: %llu, stamp %llu", what, i,
				 (unsigned long long)g, (unsigned long long)t);
		worst = bd_mono_ns() - t0 > worst ? bd_mono_ns() - t0 : worst;
	}
	printf("original layout, %s: %d barriers (%d ns, %d vtime) passed, none early; slowest "
	       "%.2f ms\n",
	       what, ROUNDS, ROUNDS - nvt, nvt, (double)worst / 1e6);
	munmap((void *)m, sz);
}

static void original_idle(void **state)
{
	(void)state;
	assert_int_equal(h_start(&H, -1, NULL), 0);
	rounds("idle");
}

static void original_loaded(void **state)
{
	(void)state;
	assert_int_equal(h_start(&H, -1, NULL), 0);
	nspin = test_spinners(spin, 64);
	assert_true(nspin > 0);
	rounds("nice-19 spinner on every CPU");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(original_idle, h_setup, teardown),
	    cmocka_unit_test_setup_teardown(original_loaded, h_setup, teardown),
	};

	test_require_root();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
