// SPDX-License-Identifier: MIT
/*
 * Faults (issue 13): the daemon killed, restarted and stopped under clients that loop
 * barrierd_barrier().  Each case asserts the suite's property: no early success (no call that
 * took its stamp after the daemon could last publish returns 0 before a daemon could publish
 * again), no hang (every call returns within its timeout plus a hang guard), no crash, and
 * clear errors (only 0, -ESTALE or -ETIMEDOUT).  Timings are hang guards only; bench/ measures.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "fault_util.h"
#include "looper.h"

#define CALL_TIMEOUT_NS ((int64_t)TEST_SEC)
/* Seconds a call may take beyond its timeout before it counts as hung (2 CPUs, shared). */
#define GUARD_S 5

static int setup(void **state)
{
	(void)state;
	h_mkdir(&H);
	return h_start(&H, -1, NULL);
}

/* Only 0, -ESTALE or -ETIMEDOUT; no call beyond its timeout plus the guard; nothing lost. */
static void assert_clean(const struct lthread *sum)
{
	assert_int_equal(sum->other, 0);
	assert_false(sum->oom);
	assert_true(sum->max_call <= (uint64_t)CALL_TIMEOUT_NS + GUARD_S * TEST_SEC);
}

/* Until every thread has passed a barrier whose call started after t (hang guard).  0 or -1. */
static int all_pass_after(const struct looper *l, uint64_t t, int guard_s)
{
	for (int i = 0; i < guard_s * 100; i++) {
		if (looper_threads_passed_after(l, t) == l->n)
			return 0;
		test_sleep_ms(10);
	}
	fprintf(stderr, "%d of %d threads passed no barrier after the daemon came back\n",
		l->n - looper_threads_passed_after(l, t), l->n);
	return -1;
}

/*
 * (a) SIGKILL under 100 threads looping barrierd_barrier(1 s) without fallback.  Once the
 * daemon is reaped nothing publishes, and every published value is a clock reading taken before
 * that instant: a call that started after it can pass on nothing, so it must not return 0.
 * Afterwards the same with BARRIERD_FALLBACK_MEMBARRIER: every call succeeds.
 */
static void kill9_under_100_waiters(void **state)
{
	struct barrierd_open_opts fb = {.sz = sizeof(fb), .fallback = BARRIERD_FALLBACK_MEMBARRIER};
	struct barrierd *b, *bf;
	struct looper l;
	struct lthread sum;
	uint64_t t_dead, before_kill;

	(void)state;
	assert_int_equal(test_open_file_only(&b, H.state, NULL), 0);
	assert_int_equal(barrierd_barrier(b, 5 * (int64_t)TEST_SEC), 0);
	assert_int_equal(looper_start(&l, b, 100, CALL_TIMEOUT_NS), 0);
	test_sleep_ms(1000);
	before_kill = 0;
	for (int i = 0; i < l.n; i++)
		before_kill += l.t[i].ok; /* racy read, only printed */
	kill(H.pid, SIGKILL);
	assert_true(test_reap(H.pid, 10) != -1);
	H.pid = -1;
	t_dead = bd_mono_ns();
	assert_int_equal(f_wait_stale(b), 0);
	printf("stale %.1f ms after the kill\n", (double)(bd_mono_ns() - t_dead) / 1e6);
	test_sleep_ms(1500);
	assert_int_equal(looper_stop(&l, GUARD_S), 0);
	looper_totals(&l, &sum, "killed daemon, no fallback");
	printf("about %llu successes before the kill\n", (unsigned long long)before_kill);
	assert_clean(&sum);
	assert_true(sum.ok > 0);     /* the daemon did serve them before the kill */
	assert_true(sum.estale > 0); /* the dead daemon was noticed */
	assert_int_equal(looper_early(&l, t_dead, UINT64_MAX), 0);
	looper_free(&l);

	/* The fallback does the work: every call, of every thread, succeeds. */
	assert_int_equal(test_open_file_only(&bf, H.state, &fb), 0);
	assert_int_equal(looper_start(&l, bf, 100, CALL_TIMEOUT_NS), 0);
	test_sleep_ms(1000);
	assert_int_equal(looper_stop(&l, GUARD_S), 0);
	looper_totals(&l, &sum, "killed daemon, membarrier fallback");
	assert_clean(&sum);
	assert_int_equal(sum.estale + sum.etimedout, 0);
	for (int i = 0; i < l.n; i++)
		assert_true(l.t[i].ok > 0);
	looper_free(&l);
	barrierd_close(bf);
	barrierd_close(b);
}

/*
 * (b) SIGTERM and a new start under a mapped client: during the gap the file is marked stopped
 * and nothing of ours publishes, so no call that started after the old daemon exited returns 0
 * before the new one was started; afterwards the same handle (same inode, higher generation)
 * passes barriers again on every thread.
 */
static void restart_under_client(void **state)
{
	struct barrierd *b;
	const struct barrierd_header *m;
	struct looper l;
	struct lthread sum;
	struct stat st0, st1;
	uint64_t gen0, t_stopped, t_restart;
	int ws;

	(void)state;
	assert_int_equal(test_open_file_only(&b, H.state, NULL), 0);
	assert_int_equal(barrierd_barrier(b, 5 * (int64_t)TEST_SEC), 0);
	m = barrierd_mapping(b, NULL);
	assert_non_null(m);
	gen0 = bd_load(&m->generation);
	assert_int_equal(stat(H.state, &st0), 0);
	assert_int_equal(looper_start(&l, b, 16, CALL_TIMEOUT_NS), 0);
	test_sleep_ms(500);
	ws = h_stop(&H);
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	t_stopped = bd_mono_ns();
	test_sleep_ms(500); /* the gap */
	t_restart = bd_mono_ns();
	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_int_equal(all_pass_after(&l, t_restart, 10), 0);
	assert_int_equal(looper_stop(&l, GUARD_S), 0);
	looper_totals(&l, &sum, "restart");
	assert_clean(&sum);
	assert_int_equal(looper_early(&l, t_stopped, t_restart), 0);
	looper_free(&l);

	/* The handle's mapping is the same inode and follows the new daemon. */
	assert_int_equal(stat(H.state, &st1), 0);
	assert_true(st0.st_ino == st1.st_ino && st0.st_dev == st1.st_dev);
	m = barrierd_mapping(b, NULL);
	assert_true(bd_load(&m->generation) > gen0);
	assert_int_equal(bd_load(&m->daemon_pid), (uint64_t)H.pid);
	assert_true(bd_load(&m->flags) & BARRIERD_FLAG_RUNNING);
	assert_int_equal(barrierd_barrier(b, 5 * (int64_t)TEST_SEC), 0);
	printf("generation %llu -> %llu, same inode %llu\n", (unsigned long long)gen0,
	       (unsigned long long)bd_load(&m->generation), (unsigned long long)st1.st_ino);
	barrierd_close(b);
}

/*
 * (c) SIGSTOP for 2 s under looping clients.  The BPF programs go on stamping, but nothing is
 * published until the daemon runs again: a call that started after the whole daemon stopped
 * and returned before SIGCONT was sent passed on no evidence.  After SIGCONT every thread
 * passes barriers again.
 */
static void sigstop_under_clients(void **state)
{
	struct barrierd *b;
	struct looper l;
	struct lthread sum;
	uint64_t t_stop, t_cont;

	(void)state;
	assert_int_equal(test_open_file_only(&b, H.state, NULL), 0);
	assert_int_equal(looper_start(&l, b, 32, CALL_TIMEOUT_NS), 0);
	test_sleep_ms(500);
	assert_int_equal(f_sigstop(H.pid), 0);
	t_stop = bd_mono_ns();
	test_sleep_ms(2000);
	t_cont = bd_mono_ns();
	kill(H.pid, SIGCONT);
	assert_int_equal(all_pass_after(&l, t_cont, 10), 0);
	assert_int_equal(looper_stop(&l, GUARD_S), 0);
	looper_totals(&l, &sum, "SIGSTOP 2 s");
	assert_clean(&sum);
	assert_int_equal(looper_early(&l, t_stop, t_cont), 0);
	looper_free(&l);
	barrierd_close(b);
}

/* SIGKILL the daemon and map its file for writing, as root after a crash may. */
static struct barrierd_header *kill9_and_map(size_t *sz)
{
	kill(H.pid, SIGKILL);
	assert_true(test_reap(H.pid, 10) != -1);
	H.pid = -1;
	return test_map_rw(H.state, sz);
}

/* Start on the file; its log line about the reset, from the start on, at level lvl. */
static void start_logs_reset_at(int lvl, const char *why)
{
	char line[64];
	long mark = h_log_mark(&H);

	assert_int_equal(h_start(&H, -1, NULL), 0);
	snprintf(line, sizeof(line), "<%d>barrierd: resetting", lvl);
	if (!h_log_has_since(&H, mark, line) || !h_log_has_since(&H, mark, why)) {
		fprintf(stderr, "the start's log lacks \"%s\" or \"%s\":\n", line, why);
		if (test_system("tail -n 20 '%s' >&2", H.log)) {
		}
		fail();
	}
}

/*
 * (d) A SIGKILL in the middle of a pass leaves per-CPU times later than the heartbeat the
 * pass did not get to store.  Made here by hand after a SIGKILL (one per-CPU time raised just
 * past the heartbeat, still in the past): the next start resets the file and says so at info
 * level, naming a killed daemon, not as another writer's doing (warning).  Values that no
 * daemon of ours leaves, at any instant (a global time above a per-CPU one), still warn.
 */
static void kill9_mid_pass_is_no_warning(void **state)
{
	struct barrierd_header *w;
	struct barrierd *b;
	uint64_t top = 0;
	size_t sz;

	(void)state;
	assert_int_equal(test_open_file_only(&b, H.state, NULL), 0);
	assert_int_equal(barrierd_barrier(b, 5 * (int64_t)TEST_SEC), 0);
	barrierd_close(b);
	w = kill9_and_map(&sz);
	assert_non_null(w);
	if (bd_load(&w->per_cpu[0].last_interrupt_ns) <= bd_load(&w->heartbeat_ns))
		bd_store(&w->per_cpu[0].last_interrupt_ns, bd_load(&w->heartbeat_ns) + 1);
	munmap(w, sz);
	start_logs_reset_at(6, "killed");

	assert_int_equal(test_open_file_only(&b, H.state, NULL), 0);
	assert_int_equal(barrierd_barrier(b, 5 * (int64_t)TEST_SEC), 0);
	barrierd_close(b);
	w = kill9_and_map(&sz);
	assert_non_null(w);
	for (uint64_t c = 0; c < bd_load(&w->ncpu); c++)
		if (bd_load(&w->per_cpu[c].last_interrupt_ns) > top)
			top = bd_load(&w->per_cpu[c].last_interrupt_ns);
	bd_store(&w->last_interrupt_ns, top + 1);
	munmap(w, sz);
	start_logs_reset_at(4, "no daemon of ours publishes");
}

int main(void)
{
	test_require_root();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(kill9_under_100_waiters, setup, f_teardown),
	    cmocka_unit_test_setup_teardown(restart_under_client, setup, f_teardown),
	    cmocka_unit_test_setup_teardown(sigstop_under_clients, setup, f_teardown),
	    cmocka_unit_test_setup_teardown(kill9_mid_pass_is_no_warning, setup, f_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
