// SPDX-License-Identifier: MIT
/*
 * barrierctl against the real daemon (root, BPF): status shows every CPU of a live daemon,
 * wait passes a real barrier, watch refreshes, bench measures barrierd next to
 * membarrier(GLOBAL), and once the daemon stops, status and wait say so (3).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"
#include "cli_run.h"

static struct harness H;
static uint64_t ncpu;

static int group_setup(void **state)
{
	const struct barrierd_header *m;
	size_t sz;

	(void)state;
	test_require_root();
	h_mkdir(&H);
	if (h_start(&H, -1, NULL))
		return -1;
	m = map_ro(H.state, &sz);
	if (!m)
		return -1;
	ncpu = bd_load(&m->ncpu);
	munmap((void *)m, sz);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	h_stop(&H);
	h_rmdir(&H);
	return 0;
}

/* Table rows: lines that start with a CPU number. */
static uint64_t count_rows(const char *out)
{
	uint64_t n = 0;

	for (const char *line = out; line && *line;) {
		unsigned c;
		char st[32];
		double lag;

		if (sscanf(line, " %u %31s %lf", &c, st, &lag) == 3 && c == n)
			n++;
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	return n;
}

/*
 * A live daemon: exit 0 and one row per possible CPU.  A CPU the daemon last saw busy can be
 * published busy for up to one pass after it went idle (its value then falls behind): that
 * is transient, so a few attempts are allowed before "degraded" counts as a failure.
 */
static void status_live(void **state)
{
	struct cli_result r;
	char check[512];
	int attempt;

	(void)state;
	for (attempt = 1;; attempt++) {
		bctl(&r, "status", "--state", H.state, NULL);
		if (r.code == 0 || attempt == 5)
			break;
		printf("attempt %d: exit %d\n%s", attempt, r.code, r.out);
		cli_result_free(&r);
		test_sleep_ms(200);
	}
	expect_code(&r, 0);
	assert_non_null(strstr(r.out, ": healthy"));
	assert_non_null(strstr(r.out, "daemon:       running"));
	assert_int_equal(count_rows(r.out), ncpu);
	printf("%s", r.out);
	cli_result_free(&r);

	/* The JSON's structure; the 1 s threshold keeps this about the fields, not timing. */
	bctl(&r, "status", "--state", H.state, "--lag-threshold", "1000", "--json", NULL);
	expect_code(&r, 0);
	snprintf(check, sizeof(check),
		 "d['ncpu'] == %llu and len(d['cpus']) == %llu and d['daemon']['live'] and "
		 "d['daemon']['pid'] == %d and d['health'] == 'healthy' and "
		 "d['abi_major'] == 1 and d['last_advance'] is not None and "
		 "all(c['state'] in ('busy', 'idle', 'offline', 'daemon', 'unknown') "
		 "for c in d['cpus'])",
		 (unsigned long long)ncpu, (unsigned long long)ncpu, (int)H.pid);
	assert_int_equal(cli_json_check(H.dir, r.out, check), 0);
	cli_result_free(&r);
}

static void wait_live(void **state)
{
	struct cli_result r;
	double ms = -1;

	(void)state;
	for (int i = 0; i < 3; i++) {
		bctl(&r, "wait", "--state", H.state, "--timeout", "5000", NULL);
		expect_code(&r, 0);
		assert_int_equal(sscanf(r.out, "barrier passed in %lf ms", &ms), 1);
		assert_true(ms >= 0 && ms < 5000);
		printf("barrierctl wait: %s", r.out);
		cli_result_free(&r);
	}
}

static void watch_live(void **state)
{
	struct cli_result r;

	(void)state;
	bctl(&r, "watch", "--state", H.state, "--count", "2", "--interval", "50", "--lag-threshold",
	     "1000", NULL);
	expect_code(&r, 0);
	assert_int_equal(cli_count(r.out, "  CPU  STATE"), 2);
	assert_null(strchr(r.out, '\033'));
	cli_result_free(&r);
}

static void bench_live(void **state)
{
	struct cli_result r;

	(void)state;
	bctl(&r, "bench", "--state", H.state, "-n", "20", "--method", "barrierd", "--method",
	     "membarrier-global", NULL);
	expect_code(&r, 0);
	printf("%s", r.out);
	assert_non_null(strstr(r.out, "\nbarrierd                20 "));
	/* membarrier(GLOBAL) is refused under nohz_full: then it says why. */
	assert_true(strstr(r.out, "\nmembarrier-global       20 ") != NULL ||
		    strstr(r.out, "\nmembarrier-global  unavailable: ") != NULL);
	cli_result_free(&r);
}

/* direct and file: the same barrier with and without the slots, and direct's credit table. */
static void bench_direct_file(void **state)
{
	struct cli_result r;

	(void)state;
	bctl(&r, "bench", "--state", H.state, "-n", "20", "--gap", "1", "--method", "direct,file",
	     NULL);
	expect_code(&r, 0);
	printf("%s", r.out);
	assert_non_null(strstr(r.out, "\ndirect                  20 "));
	assert_non_null(strstr(r.out, "\nfile                    20 "));
	assert_non_null(strstr(r.out, "\ndirect calls: 20; every CPU idle or own: "));
	cli_result_free(&r);
}

/* Must run last: it stops the daemon, which leaves a valid, stopped file. */
static void after_stop(void **state)
{
	struct cli_result r;

	(void)state;
	assert_true(WIFEXITED(h_stop(&H)));
	bctl(&r, "status", "--state", H.state, NULL);
	expect_code(&r, 3);
	assert_non_null(strstr(r.out, "not running (stopped flag set)"));
	cli_result_free(&r);
	bctl(&r, "wait", "--state", H.state, "--timeout", "2000", NULL);
	expect_code(&r, 3);
	cli_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(status_live),	 cmocka_unit_test(wait_live),
	    cmocka_unit_test(watch_live),	 cmocka_unit_test(bench_live),
	    cmocka_unit_test(bench_direct_file), cmocka_unit_test(after_stop),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
