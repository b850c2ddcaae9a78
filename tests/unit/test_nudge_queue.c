// SPDX-License-Identifier: MIT
/*
 * The nudge deadlines (src/daemon/nudge.h): every ring's horizon comes due exactly at horizon +
 * the delay, oldest first, none lost when more come than the queue holds, and a ring no later
 * than one already waiting adds nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "nudge.h"
#include "test_util.h"

static void due_in_order(void **state)
{
	struct nudge_queue q = {0};
	const uint64_t d = 500 * TEST_US;

	(void)state;
	assert_int_equal(nudge_queue_next(&q, d), 0);
	assert_int_equal(nudge_queue_due(&q, 10 * TEST_MS, d), 0);
	nudge_queue_push(&q, 1 * TEST_MS);
	nudge_queue_push(&q, 1 * TEST_MS); /* the same horizon: nothing new */
	nudge_queue_push(&q, 1200 * TEST_US);
	nudge_queue_push(&q, 2 * TEST_MS);
	assert_int_equal(q.n, 3);
	assert_int_equal(nudge_queue_next(&q, d), 1 * TEST_MS + d);
	/* One nanosecond early: nothing. */
	assert_int_equal(nudge_queue_due(&q, 1 * TEST_MS + d - 1, d), 0);
	/* Both of the first two due at once: the later one is what the CPUs must pass. */
	assert_int_equal(nudge_queue_due(&q, 1200 * TEST_US + d, d), 1200 * TEST_US);
	assert_int_equal(nudge_queue_next(&q, d), 2 * TEST_MS + d);
	assert_int_equal(nudge_queue_due(&q, 3 * TEST_MS, d), 2 * TEST_MS);
	assert_int_equal(q.n, 0);
	assert_int_equal(nudge_queue_next(&q, d), 0);
}

static void full_queue_loses_no_ring(void **state)
{
	struct nudge_queue q = {0};
	uint64_t h = 0, last = 0, latest = 0;

	(void)state;
	for (int i = 1; i <= 3 * NUDGE_QUEUE; i++)
		nudge_queue_push(&q, last = (uint64_t)i * TEST_US);
	assert_int_equal(q.n, NUDGE_QUEUE);
	/* The oldest kept its deadline; the newest entry carries the latest ring. */
	assert_int_equal(nudge_queue_next(&q, 0), 1 * TEST_US);
	while (q.n) {
		uint64_t got = nudge_queue_due(&q, h += TEST_US, 0);

		if (got > latest)
			latest = got;
	}
	assert_int_equal(latest, last);
	/* Pushed again after a wrap of the ring buffer, it still orders. */
	for (int i = 0; i < 5; i++)
		nudge_queue_push(&q, last + (uint64_t)i + 1);
	assert_int_equal(nudge_queue_due(&q, last + 3, 0), last + 3);
	assert_int_equal(q.n, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(due_in_order),
	    cmocka_unit_test(full_queue_loses_no_ring),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
