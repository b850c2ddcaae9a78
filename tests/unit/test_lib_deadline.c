// SPDX-License-Identifier: MIT
/*
 * A wait never sleeps past its deadline by its own choice, and a daemon found gone is backed
 * off from, not spun on.
 *
 * The library's sleeps are futex calls made through libc's syscall(); this executable
 * defines syscall() itself (the dynamic linker binds libbarrierd's calls to it) and records
 * the absolute end of every sleep the library asks for before passing the call on.  So the
 * deadline is checked on what the library chose, not on when the scheduler woke it: on a
 * busy machine the latter is not the library's to bound.
 *
 * Timeouts here are hang guards or the waits' own timeouts; SLACK_NS only covers the
 * library's few steps between the test's clock read and its own.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fake_daemon.h"

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

#define NCPU 2
#define SLACK_NS (5 * TEST_MS)
/* The fake daemon's liveness bound: three of its heartbeat periods. */
#define BOUND_NS (3 * FAKE_HB_PERIOD_NS)

/* ---- the recorder ---------------------------------------------------------------------- */

static int recording;	 /* __atomic */
static uint64_t max_end; /* __atomic: latest absolute end of a recorded sleep */
static unsigned sleeps;	 /* __atomic */

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * TEST_SEC + (uint64_t)ts->tv_nsec;
}

static void record_end(uint64_t end)
{
	uint64_t cur = __atomic_load_n(&max_end, __ATOMIC_RELAXED);

	while (end > cur && !__atomic_compare_exchange_n(&max_end, &cur, end, false,
							 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	__atomic_fetch_add(&sleeps, 1, __ATOMIC_RELAXED);
}

/* Every sleep's end, as the library asked for it: relative for FUTEX_WAIT, absolute for waitv. */
static void note(long n, const long *a)
{
	if (!__atomic_load_n(&recording, __ATOMIC_RELAXED))
		return;
	if (n == SYS_futex && (a[1] & FUTEX_CMD_MASK) == FUTEX_WAIT) {
		if (!a[3])
			fail_msg("a futex sleep without a timeout");
		record_end(bd_mono_ns() + ts_ns((const struct timespec *)a[3]));
	} else if (n == SYS_futex_waitv) {
		if (!a[3] || a[4] != CLOCK_MONOTONIC)
			fail_msg("a futex_waitv without a CLOCK_MONOTONIC timeout");
		record_end(ts_ns((const struct timespec *)a[3]));
	}
}

/*
 * libc's syscall() takes six register arguments whatever the call; so does this one, which
 * passes them on unchanged.
 */
long syscall(long n, ...)
{
	static long (*real)(long, ...);
	va_list ap;
	long a[6];

	va_start(ap, n);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	note(n, a);
	return real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* The detached handle's back-off (lib/attach.c) sleeps with clock_nanosleep: recorded too. */
int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem)
{
	static int (*real)(clockid_t, int, const struct timespec *, struct timespec *);

	if (!real)
		real = (int (*)(clockid_t, int, const struct timespec *, struct timespec *))dlsym(
		    RTLD_NEXT, "clock_nanosleep");
	if (__atomic_load_n(&recording, __ATOMIC_RELAXED) && clk == CLOCK_MONOTONIC)
		record_end(flags & TIMER_ABSTIME ? ts_ns(req) : bd_mono_ns() + ts_ns(req));
	return real(clk, flags, req, rem);
}

static void rec_start(void)
{
	__atomic_store_n(&max_end, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&sleeps, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&recording, 1, __ATOMIC_SEQ_CST);
}

static void rec_stop(void)
{
	__atomic_store_n(&recording, 0, __ATOMIC_SEQ_CST);
}

/* Every sleep recorded since rec_start ended, as asked, by deadline (+ SLACK_NS). */
static void assert_within(uint64_t deadline)
{
	uint64_t end = __atomic_load_n(&max_end, __ATOMIC_RELAXED);

	if (end > deadline + SLACK_NS)
		fail_msg("a sleep was asked to end %.1f ms after the deadline",
			 (double)(end - deadline) / TEST_MS);
}

/* ---- fixture --------------------------------------------------------------------------- */

struct fx {
	struct fake_daemon s;
	struct barrierd *b;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	*state = f;
	if (fake_create(&f->s, NCPU, FAKE_LIVE) || fake_start_ticker(&f->s, 0))
		return -1;
	return fake_open_lib(&f->b, f->s.path, NULL) ? -1 : 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (!f)
		return 0;
	rec_stop();
	fake_stop_doorbell(&f->s);
	fake_stop_ticker(&f->s);
	barrierd_close(f->b);
	fake_destroy(&f->s);
	free(f);
	return 0;
}

static uint64_t stamp(struct barrierd *b)
{
	uint64_t t;

	while ((t = barrierd_stamp_ns(b)) <= barrierd_open_ns(b))
		sched_yield();
	return t;
}

/* A daemon that stopped heartbeating (a stall or kill -9): the flags still say running. */
static void stall(struct fx *f)
{
	fake_stop_ticker(&f->s);
	bd_store(&f->s.h->heartbeat_ns, bd_mono_ns() - BOUND_NS - 50 * TEST_MS);
}

/* ---- cases ----------------------------------------------------------------------------- */

/* Live, nothing passes (every CPU busy, the daemon armed): the timeout, never a sleep past it. */
static void timeout_not_overslept(void **state)
{
	struct fx *f = *state;
	const uint64_t timeouts[] = {1 * TEST_MS, 15 * TEST_MS, 35 * TEST_MS};

	for (size_t i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++) {
		uint64_t s = stamp(f->b), t0;
		int r;

		rec_start();
		t0 = bd_mono_ns();
		r = barrierd_wait(f->b, s, (int64_t)timeouts[i]);
		rec_stop();
		assert_int_equal(r, -ETIMEDOUT);
		assert_true(bd_mono_ns() - t0 >= timeouts[i]); /* not early either */
		assert_within(t0 + timeouts[i]);
	}
}

/*
 * A stale daemon: the wait backs off, within its deadline, and says -ESTALE at the deadline
 * (before the liveness bound) or at the bound (a longer timeout, or none).
 */
static void stale_backs_off_within_deadline(void **state)
{
	struct fx *f = *state;
	uint64_t s = stamp(f->b), t0, took;
	int r;

	stall(f);
	rec_start();
	t0 = bd_mono_ns();
	r = barrierd_wait(f->b, s, 50 * TEST_MS);
	took = bd_mono_ns() - t0;
	rec_stop();
	assert_int_equal(r, -ESTALE);
	assert_true(took >= 50 * TEST_MS);
	assert_within(t0 + 50 * TEST_MS);
	assert_true(__atomic_load_n(&sleeps, __ATOMIC_RELAXED) >= 1);

	/* No deadline: one liveness bound (the file's period, 100 ms: 300 ms), then -ESTALE. */
	rec_start();
	t0 = bd_mono_ns();
	r = barrierd_wait(f->b, s, -1);
	took = bd_mono_ns() - t0;
	rec_stop();
	assert_int_equal(r, -ESTALE);
	assert_true(took >= BOUND_NS);
	assert_within(t0 + BOUND_NS);

	/* A zero timeout asks for no sleep at all. */
	rec_start();
	assert_int_equal(barrierd_wait(f->b, s, 0), -ESTALE);
	rec_stop();
	assert_int_equal(__atomic_load_n(&sleeps, __ATOMIC_RELAXED), 0);
}

/*
 * A caller that retries on -ESTALE does not spin: a handful of calls a second, mostly asleep.
 * Both ways to retry: a new barrier each time, or the same stamp waited for again.
 */
static void retry_loop(struct fx *f, bool same_stamp)
{
	uint64_t s = stamp(f->b), t0, cpu;
	struct timespec c0, c1;
	unsigned calls = 0;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	t0 = bd_mono_ns();
	while (bd_mono_ns() - t0 < TEST_SEC) {
		int r = same_stamp ? barrierd_wait(f->b, s, TEST_SEC)
				   : barrierd_barrier(f->b, TEST_SEC);

		assert_int_equal(r, -ESTALE);
		calls++;
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	cpu = ts_ns(&c1) - ts_ns(&c0);
	print_message("stale daemon, retry loop (%s): %u calls and %.2f ms of CPU in 1 s\n",
		      same_stamp ? "one stamp" : "barriers", calls, (double)cpu / TEST_MS);
	/* One call per liveness bound (300 ms): 4 in a second, 5 with rounding. */
	assert_true(calls <= 5);
	assert_true(cpu < 100 * TEST_MS);
}

static void stale_retry_loop_does_not_spin(void **state)
{
	struct fx *f = *state;

	stall(f);
	retry_loop(f, false);
	retry_loop(f, true);
}

struct revive {
	struct fake_daemon *s;
	const uint64_t *sleeper; /* first wait until the waiter sleeps on this word */
	int saw_sleeper;
	uint64_t after;
	uint64_t flags; /* restart_main: the running daemon's flags */
	pthread_t t;
};

/* The stalled daemon resumes: a heartbeat (and its wake), then a pass with new evidence. */
static void *revive_main(void *arg)
{
	struct revive *r = arg;

	/*
	 * Found asleep on the heartbeat word (its wake is spurious, and it goes back to sleep):
	 * the back-off watches it, and the heartbeat's wake below is what ends the wait.
	 */
	if (r->sleeper)
		r->saw_sleeper = test_await_sleeper(r->sleeper, TEST_HANG_GUARD_NS / 2);
	bd_store(&r->s->h->heartbeat_ns, bd_mono_ns());
	syscall(SYS_futex, (uint32_t *)&r->s->h->heartbeat_ns, FUTEX_WAKE, INT32_MAX, NULL, NULL,
		0);
	fake_credit_all(r->s, bd_mono_ns() > r->after ? bd_mono_ns() : r->after + 1);
	return NULL;
}

/* A stall shorter than the liveness bound costs a wait its length, not an error. */
static void stall_then_resume_passes(void **state)
{
	struct fx *f = *state;
	struct revive r = {.s = &f->s, .sleeper = &f->s.h->heartbeat_ns};
	uint64_t s = stamp(f->b);
	int ret;

	r.after = s;
	stall(f);
	assert_int_equal(pthread_create(&r.t, NULL, revive_main, &r), 0);
	ret = barrierd_wait(f->b, s, TEST_HANG_GUARD_NS);
	pthread_join(r.t, NULL); /* before any assert: it writes the file */
	assert_int_equal(ret, 0);
	assert_true(r.saw_sleeper);
}

/*
 * A restart during the back-off (stopped; then, as a new daemon starts on the same file: a
 * new generation and pid, a heartbeat, RUNNING and a wake of the flags; then its first pass):
 * the wait goes on and passes on the new daemon's evidence.
 */
static void *restart_main(void *arg)
{
	struct revive *r = arg;
	struct barrierd_header *h = r->s->h;

	/* Asleep on the flags word: the restart's change of the flags is what wakes it. */
	r->saw_sleeper = test_await_sleeper(&h->flags, TEST_HANG_GUARD_NS / 2);
	bd_store(&h->generation, bd_load(&h->generation) + 1);
	bd_store(&h->daemon_pid, bd_load(&h->daemon_pid) + 1);
	bd_store(&h->heartbeat_ns, bd_mono_ns());
	bd_store(&h->flags, r->flags);
	syscall(SYS_futex, (uint32_t *)&h->flags, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
	return revive_main(r);
}

static void restart_during_backoff_passes(void **state)
{
	struct fx *f = *state;
	struct revive r = {.s = &f->s, .flags = bd_load(&f->s.h->flags)};
	uint64_t s = stamp(f->b);
	int ret;

	r.after = s;
	fake_stop_ticker(&f->s);
	fake_stop(&f->s);
	assert_int_equal(pthread_create(&r.t, NULL, restart_main, &r), 0);
	ret = barrierd_wait(f->b, s, TEST_HANG_GUARD_NS);
	pthread_join(r.t, NULL);
	assert_int_equal(ret, 0);
	assert_true(r.saw_sleeper);
}

/* The file went away under the handle: -EIDRM at once, not a back-off for nothing. */
static void file_gone(struct fx *f, void (*act)(struct fx *))
{
	uint64_t s = stamp(f->b), t0;

	stall(f);
	act(f);
	t0 = bd_mono_ns();
	assert_int_equal(barrierd_wait(f->b, s, TEST_HANG_GUARD_NS), -EIDRM);
	assert_true(bd_mono_ns() - t0 < BOUND_NS);
}

static void act_unlink(struct fx *f)
{
	assert_int_equal(unlink(f->s.path), 0);
}

static void act_rename_over(struct fx *f)
{
	char other[PATH_MAX + 8];
	int fd;

	snprintf(other, sizeof(other), "%s.new", f->s.path);
	fd = open(other, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(rename(other, f->s.path), 0);
}

static void act_truncate(struct fx *f)
{
	/* Still inside the first page: the mapping reads zeros, not SIGBUS. */
	assert_int_equal(truncate(f->s.path, 64), 0);
}

static void unlinked_file_eidrm(void **state)
{
	file_gone(*state, act_unlink);
}

static void replaced_file_eidrm(void **state)
{
	file_gone(*state, act_rename_over);
}

static void truncated_file_eidrm(void **state)
{
	file_gone(*state, act_truncate);
}

/* A handle still waiting for its file backs off within the deadline too. */
static void detached_backoff_within_deadline(void **state)
{
	struct fx *f = *state;
	struct barrierd_open_opts o = {.sz = sizeof(o), .flags = BARRIERD_OPEN_ATTACH_LATER};
	char late[PATH_MAX + 8];
	struct barrierd *b = NULL;
	uint64_t t0;

	snprintf(late, sizeof(late), "%s/late", f->s.dir);
	assert_int_equal(fake_open_lib(&b, late, &o), 0);
	rec_start();
	t0 = bd_mono_ns();
	assert_int_equal(barrierd_barrier(b, 40 * TEST_MS), -ESTALE);
	rec_stop();
	assert_true(bd_mono_ns() - t0 >= 40 * TEST_MS);
	assert_within(t0 + 40 * TEST_MS);
	assert_true(__atomic_load_n(&sleeps, __ATOMIC_RELAXED) >= 1);
	barrierd_close(b);
}

/* With the fallback, a stale daemon still means membarrier at once (its own result). */
static void stale_with_fallback_falls_back(void **state)
{
	struct fx *f = *state;
	struct barrierd_open_opts o = {.sz = sizeof(o), .fallback = BARRIERD_FALLBACK_MEMBARRIER};
	struct barrierd *fb = NULL;
	long expect;

	assert_int_equal(fake_open_lib(&fb, f->s.path, &o), 0);
	stall(f);
	expect = syscall(SYS_membarrier, 0x1 /* MEMBARRIER_CMD_GLOBAL */, 0, 0) ? -errno : 0;
	assert_int_equal(barrierd_barrier(fb, TEST_HANG_GUARD_NS), expect);
	barrierd_close(fb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(timeout_not_overslept, setup, teardown),
	    cmocka_unit_test_setup_teardown(stale_backs_off_within_deadline, setup, teardown),
	    cmocka_unit_test_setup_teardown(stale_retry_loop_does_not_spin, setup, teardown),
	    cmocka_unit_test_setup_teardown(stall_then_resume_passes, setup, teardown),
	    cmocka_unit_test_setup_teardown(restart_during_backoff_passes, setup, teardown),
	    cmocka_unit_test_setup_teardown(unlinked_file_eidrm, setup, teardown),
	    cmocka_unit_test_setup_teardown(replaced_file_eidrm, setup, teardown),
	    cmocka_unit_test_setup_teardown(truncated_file_eidrm, setup, teardown),
	    cmocka_unit_test_setup_teardown(stale_with_fallback_falls_back, setup, teardown),
	    cmocka_unit_test_setup_teardown(detached_backoff_within_deadline, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
