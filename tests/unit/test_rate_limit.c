// SPDX-License-Identifier: MIT
/*
 * The credit-pass rate limit (src/rate_limit.h): a burst at full speed, then the sustained
 * rate, never more than burst + rate x t events in any window t; and the time it names as the
 * next conforming one is exactly when it allows the next event.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "rate_limit.h"
#include "test_util.h"

static void burst_then_rate(void **state)
{
	struct rate_limit r;
	uint64_t t = 1000 * TEST_MS;
	int n = 0;

	(void)state;
	rate_limit_init(&r, 1000, 32);
	/* A burst of 32 at one instant, not 33. */
	while (rate_limit_take(&r, t))
		n++;
	assert_int_equal(n, 32);
	/* Then one per millisecond: the next is due exactly 1 ms after the first. */
	assert_int_equal(rate_limit_next(&r, t), t + 1 * TEST_MS);
	assert_false(rate_limit_take(&r, t + 1 * TEST_MS - 1));
	assert_true(rate_limit_take(&r, t + 1 * TEST_MS));
	assert_false(rate_limit_take(&r, t + 1 * TEST_MS));
	assert_true(rate_limit_take(&r, t + 2 * TEST_MS));
}

static void flood_bound(void **state)
{
	struct rate_limit r;
	uint64_t t0 = 5000 * TEST_MS, n = 0;

	(void)state;
	rate_limit_init(&r, 1000, 32);
	/* Offer an event every 10 µs for one second: burst + rate, at most. */
	for (uint64_t t = t0; t < t0 + 1000 * TEST_MS; t += 10000)
		n += rate_limit_take(&r, t);
	assert_true(n <= 32 + 1000);
	assert_true(n >= 1000);
}

static void refills_when_quiet(void **state)
{
	struct rate_limit r;
	uint64_t t = 1;
	int n = 0;

	(void)state;
	rate_limit_init(&r, 1000, 4);
	while (rate_limit_take(&r, t))
		n++;
	assert_int_equal(n, 4);
	/* Quiet for longer than the whole burst takes to refill: a full burst again. */
	t += 100 * TEST_MS;
	n = 0;
	while (rate_limit_take(&r, t))
		n++;
	assert_int_equal(n, 4);
	/* The next conforming time is never in the past. */
	assert_true(rate_limit_next(&r, t) >= t);
}

static void rate_one_no_burst(void **state)
{
	struct rate_limit r;

	(void)state;
	rate_limit_init(&r, 1, 1);
	assert_true(rate_limit_take(&r, 10 * 1000 * TEST_MS));
	assert_false(rate_limit_take(&r, 10 * 1000 * TEST_MS + 999 * TEST_MS));
	assert_true(rate_limit_take(&r, 11 * 1000 * TEST_MS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(burst_then_rate),
	    cmocka_unit_test(flood_bound),
	    cmocka_unit_test(refills_when_quiet),
	    cmocka_unit_test(rate_one_no_burst),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
