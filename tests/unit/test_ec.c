// SPDX-License-Identifier: MIT
/*
 * Event counts (include/barrierd_ec.h, lib/primitives/ec.c) against a fake daemon: the value and
 * its word, single- and multi-producer increments, an increment with no waiter calling nothing,
 * waits that return when the value moved before the wait, during its wait for the barrier,
 * or once it blocks for good, the deadline, the predicate, a shared event count across a
 * fork, the conservative second with no daemon (b NULL, or stopped), and a settling wait the
 * daemon counts as a waiter for every CPU.
 *
 * ec_spy.h sees the waits' futex calls: a FUTEX_WAIT with no timeout is the indefinite
 * block.  Timeouts are hang guards; the only times asserted are lower bounds the code
 * promises (a deadline is not left early, the conservative second is waited out).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ec_spy.h"
#include "fake_daemon.h"

#define NCPU 2
#define GUARD_NS (10 * TEST_SEC) /* hang guard */

struct fx {
	struct fake_daemon s;
	struct barrierd *b;
	struct barrierd_ec ec;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	*state = f;
	/* A busy machine's daemon: every CPU's value kept at "now", so barriers pass in ms. */
	if (fake_create(&f->s, NCPU, FAKE_LIVE) || fake_start_ticker(&f->s, (1ULL << NCPU) - 1))
		return -1;
	if (fake_open_lib(&f->b, f->s.path, NULL))
		return -1;
	if (barrierd_ec_init(&f->ec, 0, 0))
		return -1;
	spy_watch(&f->ec.word);
	spy_reset();
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (!f)
		return 0;
	fake_stop_doorbell(&f->s);
	fake_stop_ticker(&f->s);
	barrierd_close(f->b);
	fake_destroy(&f->s);
	free(f);
	return 0;
}

/* ---- a waiter thread ------------------------------------------------------------------------ */

struct waiter {
	struct barrierd_ec *ec;
	struct barrierd *b;
	uint64_t old;
	int64_t timeout_ns;
	int (*pred)(const struct barrierd_ec *ec, void *arg);
	void *arg;
	pthread_t th;
	int ret;		   /* the wait's result */
	int done;		   /* __atomic */
	uint64_t start_ns, end_ns; /* around the call */
	uint64_t cpu_ns;	   /* the thread's CPU time spent in the call */
	struct spy_thread spy;	   /* what the call did */
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	struct timespec c0, c1;

	spy_thread_reset();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	w->start_ns = bd_mono_ns();
	w->ret = barrierd_ec_wait_pred(w->ec, w->b, w->old, w->pred, w->arg, w->timeout_ns);
	w->end_ns = bd_mono_ns();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	w->cpu_ns = (uint64_t)(c1.tv_sec - c0.tv_sec) * TEST_SEC + (uint64_t)c1.tv_nsec -
		    (uint64_t)c0.tv_nsec;
	w->spy = spy_self;
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void waiter_start(struct waiter *w)
{
	assert_int_equal(pthread_create(&w->th, NULL, waiter_main, w), 0);
}

/* Join within the hang guard; a waiter still inside by then has lost its wake-up. */
static void waiter_join(struct waiter *w)
{
	uint64_t end = bd_mono_ns() + GUARD_NS;

	while (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE)) {
		if (bd_mono_ns() > end)
			fail_msg("a waiter did not return within the hang guard (a lost wake-up)");
		test_sleep_ns(100 * TEST_US);
	}
	pthread_join(w->th, NULL);
}

/* Until the waits made `n` indefinite blocks in all (hang guard). */
static void await_blocks(uint64_t n)
{
	uint64_t end = bd_mono_ns() + GUARD_NS;

	while (spy_get(&spy_block_calls) < n) {
		if (bd_mono_ns() > end)
			fail_msg("no waiter reached its indefinite block");
		test_sleep_ns(100 * TEST_US);
	}
	/* Asked for, not yet in the kernel: a little more (any order is correct anyway). */
	test_sleep_ns(2 * TEST_MS);
}

/* ---- the value and the increments ------------------------------------------------------------ */

static void test_value(void **state)
{
	struct fx *f = *state;
	struct barrierd_ec ec;

	assert_int_equal(barrierd_ec_init(&ec, 5, 0), 0);
	assert_int_equal(barrierd_ec_value(&ec), 5);
	assert_int_equal(ec.word, 5 << 1); /* the ABI: value << 1, flag clear */
	barrierd_ec_inc_sp(&ec);
	barrierd_ec_add_sp(&ec, 10);
	assert_int_equal(barrierd_ec_value(&ec), 16);
	barrierd_ec_inc(&ec);
	barrierd_ec_add(&ec, 3);
	assert_int_equal(barrierd_ec_value(&ec), 20);
	/* An add of 0 stores nothing. */
	barrierd_ec_add(&ec, 0);
	barrierd_ec_add_sp(&ec, 0);
	assert_int_equal(ec.word, 20 << 1);
	/* 63 bits of value. */
	assert_int_equal(barrierd_ec_init(&ec, UINT64_MAX >> 1, BARRIERD_EC_SHARED), 0);
	assert_true(barrierd_ec_value(&ec) == UINT64_MAX >> 1);
	assert_int_equal(barrierd_ec_init(&ec, 1ULL << 63, 0), -EINVAL);
	assert_int_equal(barrierd_ec_init(&ec, 0, 0x2), -EINVAL);
	assert_int_equal(barrierd_ec_init(NULL, 0, 0), -EINVAL);
	/* Waits: a value above 63 bits, or unknown flags in the event count. */
	assert_int_equal(barrierd_ec_init(&ec, 0, 0), 0);
	assert_int_equal(barrierd_ec_wait(&ec, f->b, 1ULL << 63, 0), -EINVAL);
	assert_int_equal(barrierd_ec_wait(NULL, f->b, 0, 0), -EINVAL);
	ec.flags = 0x80;
	assert_int_equal(barrierd_ec_wait(&ec, f->b, 0, 0), -EINVAL);
	assert_int_equal(spy_get(&spy_wake_calls), 0);
}

/* With nobody waiting, no increment calls the library or the kernel. */
static void test_no_waiter_no_call(void **state)
{
	struct fx *f = *state;
	uint64_t wakes = spy_get(&spy_wake_calls), calls = spy_get(&spy_futex_calls);

	for (int i = 0; i < 100000; i++) {
		barrierd_ec_inc_sp(&f->ec);
		barrierd_ec_add_sp(&f->ec, 2);
	}
	assert_int_equal(barrierd_ec_value(&f->ec), 300000);
	assert_int_equal(barrierd_ec_init(&f->ec, 0, 0), 0);
	for (int i = 0; i < 100000; i++) {
		barrierd_ec_inc(&f->ec);
		barrierd_ec_add(&f->ec, 2);
	}
	assert_int_equal(barrierd_ec_value(&f->ec), 300000);
	assert_int_equal(spy_get(&spy_wake_calls), wakes);
	assert_int_equal(spy_get(&spy_futex_calls), calls);

	/* The flag (as a waiter sets it): the next increment wakes, and clears it. */
	__atomic_fetch_or(&f->ec.word, BARRIERD_EC_FLAG, __ATOMIC_SEQ_CST);
	barrierd_ec_inc_sp(&f->ec);
	assert_int_equal(spy_get(&spy_wake_calls), wakes + 1);
	assert_int_equal(f->ec.word, 300001 << 1);
	barrierd_ec_inc_sp(&f->ec);
	__atomic_fetch_or(&f->ec.word, BARRIERD_EC_FLAG, __ATOMIC_SEQ_CST);
	barrierd_ec_inc(&f->ec);
	assert_int_equal(spy_get(&spy_wake_calls), wakes + 2);
	assert_int_equal(f->ec.word, 300003 << 1);
	barrierd_ec_inc(&f->ec);
	assert_int_equal(spy_get(&spy_wake_calls), wakes + 2);
}

#define MP_THREADS 4
#define MP_INCS 200000

static void *mp_main(void *arg)
{
	struct barrierd_ec *ec = arg;

	for (int i = 0; i < MP_INCS; i++)
		barrierd_ec_inc(ec);
	return NULL;
}

/* Multi-producer: no increment lost. */
static void test_mp(void **state)
{
	struct fx *f = *state;
	pthread_t th[MP_THREADS];

	for (int i = 0; i < MP_THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, mp_main, &f->ec), 0);
	for (int i = 0; i < MP_THREADS; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(barrierd_ec_value(&f->ec), MP_THREADS * MP_INCS);
}

/* ---- waits ----------------------------------------------------------------------------------- */

/* The value moved before the wait: 0 at once, no futex call. */
static void test_wait_moved_before(void **state)
{
	struct fx *f = *state;
	uint64_t calls = spy_get(&spy_futex_calls);

	barrierd_ec_inc_sp(&f->ec);
	assert_int_equal(barrierd_ec_wait(&f->ec, f->b, 0, -1), 0);
	assert_int_equal(barrierd_ec_wait(&f->ec, NULL, 0, -1), 0);
	assert_int_equal(spy_get(&spy_futex_calls), calls);
	assert_int_equal(f->ec.word, 1 << 1); /* no flag left behind */
}

/* Blocked for good (the barrier passed), then woken by a single producer's increment. */
static void test_wait_blocked_sp(void **state)
{
	struct fx *f = *state;
	struct waiter w = {.ec = &f->ec, .b = f->b, .old = 0, .timeout_ns = -1};

	waiter_start(&w);
	await_blocks(1);
	assert_true(f->ec.word & BARRIERD_EC_FLAG);
	barrierd_ec_inc_sp(&f->ec);
	waiter_join(&w);
	assert_int_equal(w.ret, 0);
	assert_int_equal(w.spy.blocks, 1);
	assert_int_equal(spy_get(&spy_wake_calls), 1);
	print_message("time to the indefinite block (fake daemon, its value refreshed every "
		      "%llu ms): %.3f ms\n",
		      (unsigned long long)(FAKE_TICK_NS / TEST_MS),
		      (double)(w.spy.first_block_ns - w.start_ns) / TEST_MS);
	/* The wake cleared the flag: the next increment calls nothing. */
	barrierd_ec_inc_sp(&f->ec);
	assert_int_equal(spy_get(&spy_wake_calls), 1);
}

/*
 * The same with a multi-producer's increment, and three waiters on one word.  Only the one whose
 * CAS put the flag in blocks for good; the others found it set and sleep in bounded slices.
 */
static void test_wait_blocked_mp(void **state)
{
	struct fx *f = *state;
	struct waiter w[3];

	for (int i = 0; i < 3; i++) {
		w[i] = (struct waiter){.ec = &f->ec, .b = f->b, .old = 0, .timeout_ns = -1};
		waiter_start(&w[i]);
	}
	await_blocks(1);
	test_sleep_ns(20 * TEST_MS);
	barrierd_ec_inc(&f->ec);
	for (int i = 0; i < 3; i++) {
		waiter_join(&w[i]);
		assert_int_equal(w[i].ret, 0);
	}
	assert_int_equal(spy_get(&spy_wake_calls), 1);
}

/*
 * No daemon (b NULL): ck_ec's conservative second from the CAS before the indefinite block,
 * and an increment during that second ends the wait at once (it sleeps on the word).
 */
static void test_wait_no_daemon(void **state)
{
	struct fx *f = *state;
	struct waiter w = {.ec = &f->ec, .b = NULL, .old = 0, .timeout_ns = -1};
	struct waiter w2 = {.ec = &f->ec, .b = NULL, .old = 1, .timeout_ns = -1};
	uint64_t end = bd_mono_ns() + GUARD_NS;

	waiter_start(&w);
	while (!(__atomic_load_n(&f->ec.word, __ATOMIC_ACQUIRE) & BARRIERD_EC_FLAG)) {
		if (bd_mono_ns() > end)
			fail_msg("the waiter never set the flag");
		test_sleep_ns(100 * TEST_US);
	}
	test_sleep_ns(20 * TEST_MS);
	barrierd_ec_inc_sp(&f->ec);
	waiter_join(&w);
	assert_int_equal(w.ret, 0);
	assert_int_equal(w.spy.blocks, 0); /* woken within the second */

	/* Left alone: the block comes no earlier than a second after the wait began. */
	waiter_start(&w2);
	await_blocks(1);
	barrierd_ec_inc_sp(&f->ec);
	waiter_join(&w2);
	assert_int_equal(w2.ret, 0);
	assert_true(w2.spy.first_block_ns - w2.start_ns >= TEST_SEC);
}

/* A daemon that stopped is no barrier: the conservative second again. */
static void test_wait_stopped_daemon(void **state)
{
	struct fx *f = *state;
	struct waiter w = {.ec = &f->ec, .b = f->b, .old = 0, .timeout_ns = -1};

	fake_stop_ticker(&f->s);
	fake_stop(&f->s);
	waiter_start(&w);
	await_blocks(1);
	barrierd_ec_inc_sp(&f->ec);
	waiter_join(&w);
	assert_int_equal(w.ret, 0);
	assert_true(w.spy.first_block_ns - w.start_ns >= TEST_SEC);
}

/* Deadlines: in the indefinite block, in the conservative second, and 0. */
static void test_deadline(void **state)
{
	struct fx *f = *state;
	struct barrierd *bs[2] = {f->b, NULL};

	for (int i = 0; i < 2; i++) {
		struct waiter w = {.ec = &f->ec, .b = bs[i], .old = 0, .timeout_ns = 50 * TEST_MS};

		waiter_start(&w);
		waiter_join(&w);
		assert_int_equal(w.ret, -ETIMEDOUT);
		assert_true(w.end_ns - w.start_ns >= 50 * TEST_MS);
		assert_int_equal(barrierd_ec_value(&f->ec), 0);
	}
	assert_int_equal(barrierd_ec_wait(&f->ec, f->b, 0, 0), -ETIMEDOUT);
	/* A flag left by a wait that timed out costs the next increment one wake, no more. */
	barrierd_ec_inc_sp(&f->ec);
	assert_false(f->ec.word & BARRIERD_EC_FLAG);
}

struct pred_arg {
	const struct barrierd_ec *ec;
	int calls;   /* __atomic */
	int stop_at; /* the call that returns 42 */
};

static int pred(const struct barrierd_ec *ec, void *arg)
{
	struct pred_arg *p = arg;
	int n = __atomic_add_fetch(&p->calls, 1, __ATOMIC_ACQ_REL);

	if (ec != p->ec)
		return -1; /* (no cmocka assert outside the main thread) */
	return n >= __atomic_load_n(&p->stop_at, __ATOMIC_ACQUIRE) ? 42 : 0;
}

/* The predicate: called before the first sleep and after every wake-up; its result ends it. */
static void test_pred(void **state)
{
	struct fx *f = *state;
	struct pred_arg pa = {.ec = &f->ec, .stop_at = 1};
	int n0;
	struct waiter w = {
	    .ec = &f->ec, .b = f->b, .old = 0, .timeout_ns = -1, .pred = pred, .arg = &pa};
	uint64_t end = bd_mono_ns() + GUARD_NS;

	/* At once: no sleep at all. */
	assert_int_equal(barrierd_ec_wait_pred(&f->ec, f->b, 0, pred, &pa, -1), 42);
	assert_int_equal(pa.calls, 1);

	/*
	 * Called after every slice of the wait for the barrier too; once blocked, each spurious
	 * wake-up asks again, and the third after the block ends it.
	 */
	pa.calls = 0;
	pa.stop_at = INT32_MAX;
	waiter_start(&w);
	await_blocks(1);
	n0 = __atomic_load_n(&pa.calls, __ATOMIC_ACQUIRE);
	assert_true(n0 >= 1);
	__atomic_store_n(&pa.stop_at, n0 + 3, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&w.done, __ATOMIC_ACQUIRE)) {
		if (bd_mono_ns() > end)
			fail_msg("the predicate never ended the wait");
		syscall(SYS_futex, (uint32_t *)&f->ec.word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1,
			NULL, NULL, 0);
		test_sleep_ns(TEST_MS);
	}
	waiter_join(&w);
	assert_int_equal(w.ret, 42);
	assert_int_equal(pa.calls, n0 + 3);
	assert_int_equal(barrierd_ec_value(&f->ec), 0);
	/* A value that moved comes first: 0, not the predicate's result. */
	barrierd_ec_inc_sp(&f->ec);
	pa.calls = 0;
	pa.stop_at = 1;
	assert_int_equal(barrierd_ec_wait_pred(&f->ec, f->b, 0, pred, &pa, -1), 0);
}

/* ---- scripted interleavings (the red team's) ----------------------------------------------- */

/* Until `n` futex calls of any kind on the word (hang guard). */
static void await_futex_calls(uint64_t n)
{
	uint64_t end = bd_mono_ns() + GUARD_NS;

	while (spy_get(&spy_futex_calls) < n) {
		if (bd_mono_ns() > end)
			fail_msg("no waiter went to sleep on the word");
		test_sleep_ns(100 * TEST_US);
	}
}

/* Join within `ns`; else wake the waiter by hand (so the run ends) and fail. */
static void waiter_join_within(struct barrierd_ec *ec, struct waiter *w, uint64_t ns,
			       const char *what)
{
	uint64_t end = bd_mono_ns() + ns;

	while (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE)) {
		if (bd_mono_ns() > end) {
			while (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE)) {
				syscall(SYS_futex, (uint32_t *)&ec->word,
					FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT32_MAX, NULL, NULL, 0);
				test_sleep_ns(TEST_MS);
			}
			pthread_join(w->th, NULL);
			fail_msg("%s", what);
		}
		test_sleep_ns(100 * TEST_US);
	}
	pthread_join(w->th, NULL);
}

/*
 * A flag the waiter found, not put in (the red team's lost wake-up, its aba.c): single
 * producer, every step by hand, the producer's buffered store modelled as a load now and a
 * plain store later.
 *   W1 (old 0) armed the word; the producer's xadd X_j made value 1 and kept the flag (its wake
 *   pending): the flag is doomed.  W2 (old 1, the thread) finds it set.  The producer's wake
 *   ANDs it off; its next xadd X loads the flagless word; W3 (old 1) CASes the flag back in;
 *   the wake's FUTEX_WAKE; X's store lands, erasing W3's flag, and X read no flag so it wakes
 *   nobody.  W3 is covered by its own barrier; W2 must not be asleep on W3's flag for good.
 */
static void test_foreign_flag(void **state)
{
	struct fx *f = *state;
	struct waiter w = {.ec = &f->ec, .b = f->b, .old = 1, .timeout_ns = -1};
	uint64_t xload, armed = (1 << 1) | BARRIERD_EC_FLAG, plain = 1 << 1;

	__atomic_store_n(&f->ec.word, BARRIERD_EC_FLAG, __ATOMIC_SEQ_CST); /* W1's CAS */
	__atomic_store_n(&f->ec.word, armed, __ATOMIC_SEQ_CST);		   /* X_j */
	waiter_start(&w);
	/* W2 asleep on the word; time for its barrier (ms with the ticker) and check. */
	await_futex_calls(1);
	test_sleep_ns(100 * TEST_MS);
	__atomic_fetch_and(&f->ec.word, ~BARRIERD_EC_FLAG, __ATOMIC_SEQ_CST); /* X_j's AND */
	xload = __atomic_load_n(&f->ec.word, __ATOMIC_SEQ_CST);		      /* X's load */
	assert_true(__atomic_compare_exchange_n(&f->ec.word, &plain, armed, false, __ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST)); /* W3 */
	syscall(SYS_futex, (uint32_t *)&f->ec.word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT32_MAX,
		NULL, NULL, 0); /* X_j's FUTEX_WAKE */
	test_sleep_ns(50 * TEST_MS);
	assert_false(__atomic_load_n(&w.done, __ATOMIC_ACQUIRE));
	__atomic_store_n(&f->ec.word, xload + BARRIERD_EC_ONE, __ATOMIC_SEQ_CST); /* X's store */
	/* Nobody wakes W2: its own slice must end it (at most 10 ms; a second is plenty). */
	waiter_join_within(&f->ec, &w, TEST_SEC,
			   "a waiter asleep on a flag it did not put in lost its wake-up");
	assert_int_equal(w.ret, 0);
	assert_int_equal(w.spy.blocks, 0); /* never blocked for good on a flag not its own */
}

/*
 * The flag cleared while the value stays (finding 2): W2 (old 1, no daemon: the conservative
 * second) finds a doomed flag; the producer's wake ANDs it off, the value still 1.  Every
 * FUTEX_WAIT expecting armed now fails at once: the wait must not spin on them until its
 * deadline.  Its CPU time is asserted under a quarter of the wait.
 */
static void test_flag_cleared_no_spin(void **state)
{
	struct fx *f = *state;
	struct waiter w = {.ec = &f->ec, .b = NULL, .old = 1, .timeout_ns = 300 * TEST_MS};

	__atomic_store_n(&f->ec.word, (1 << 1) | BARRIERD_EC_FLAG, __ATOMIC_SEQ_CST);
	waiter_start(&w);
	await_futex_calls(1);
	test_sleep_ns(20 * TEST_MS);
	barrierd_ec_wake(&f->ec); /* AND + FUTEX_WAKE: the value unchanged for W2 */
	waiter_join_within(&f->ec, &w, GUARD_NS, "the wait did not end at its deadline");
	assert_int_equal(w.ret, -ETIMEDOUT);
	print_message("CPU over a %.0f ms wait: %.3f ms\n",
		      (double)(w.end_ns - w.start_ns) / TEST_MS, (double)w.cpu_ns / TEST_MS);
	assert_true(w.cpu_ns < (w.end_ns - w.start_ns) / 4);
}

/*
 * Sleepers on a futex word, counted without waking them, once there is one (hang guard);
 * private: a process-private key, as the event count's own word has without BARRIERD_EC_SHARED.
 */
static long count_sleepers(const void *word, bool private)
{
	const uint32_t *w = word;
	uint64_t end = bd_mono_ns() + GUARD_NS;
	long n = 0;

	while (n <= 0 && bd_mono_ns() < end) {
		/* Requeued onto itself: the count, nobody woken. */
		n = syscall(SYS_futex, w, FUTEX_CMP_REQUEUE | (private ? FUTEX_PRIVATE_FLAG : 0), 0,
			    (void *)(long)INT32_MAX, w, __atomic_load_n(w, __ATOMIC_RELAXED));
		test_sleep_ns(TEST_MS);
	}
	return n;
}

/*
 * A CPU without events (tickless): the barrier the settling wait needs comes only from the
 * daemon's nudges, which go to CPUs someone is counted asleep for on the global word
 * (DEMAND.md, "Nudges").  So that wait sleeps there too, marked as the library's, and on its own
 * word with the key the increment's wake uses.  In a child for a shared event count (its own word's
 * key is then the page's).
 */
static void settle_counted(struct fx *f, struct barrierd_ec *ec)
{
	bool shared = ec->flags & BARRIERD_EC_SHARED;
	struct waiter w = {.ec = ec, .b = f->b, .old = 0, .timeout_ns = GUARD_NS};
	long own, global, mark;
	pid_t pid = 0;
	int st = 0;

	fake_stop_ticker(&f->s);
	assert_int_equal(fake_start_ticker(&f->s, 1), 0); /* CPU 1 silent: T never passes */
	if (shared) {
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(barrierd_ec_wait(ec, f->b, 0, GUARD_NS) == 0 ? 0 : 1);
	} else {
		waiter_start(&w);
	}
	own = count_sleepers(&ec->word, !shared);
	global = count_sleepers(&f->s.h->last_interrupt_ns, false);
	mark = count_sleepers((const uint32_t *)&f->s.h->doorbell + 1, false);
	/* The waiter ended before anything is asserted: a failure leaves nothing behind. */
	barrierd_ec_inc_sp(ec);
	if (shared)
		st = test_reap(pid, 20);
	else
		waiter_join(&w);
	assert_true(own > 0);
	assert_true(global > 0);
	assert_true(mark > 0);
	if (shared) {
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		return;
	}
	assert_int_equal(w.ret, 0);
	assert_int_equal(w.spy.blocks, 0); /* woken while settling, never blocked for good */
}

/*
 * Without futex_waitv (valgrind has none; a seccomp profile may refuse it) the settling sleep
 * is on the word alone, as the library falls back: skipped then.
 */
static void need_waitv(void)
{
	if (syscall(449 /* futex_waitv */, NULL, 0, 0, NULL, 0) < 0 &&
	    (errno == ENOSYS || errno == EPERM)) {
		print_message("no futex_waitv here: the settling sleep cannot be counted\n");
		skip();
	}
}

static void test_settle_counted(void **state)
{
	struct fx *f = *state;

	need_waitv();
	settle_counted(f, &f->ec);
}

static void test_settle_counted_shared(void **state)
{
	struct fx *f = *state;
	struct barrierd_ec *ec;

	need_waitv();
	ec = mmap(NULL, sizeof(*ec), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(ec != MAP_FAILED);
	assert_int_equal(barrierd_ec_init(ec, 0, BARRIERD_EC_SHARED), 0);
	settle_counted(f, ec);
	munmap(ec, sizeof(*ec));
}

/* BARRIERD_EC_SHARED: a waiter in another process, woken through a shared futex. */
static void test_shared(void **state)
{
	struct fx *f = *state;
	struct barrierd_ec *ec =
	    mmap(NULL, sizeof(*ec), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid;
	int st;

	assert_true(ec != MAP_FAILED);
	assert_int_equal(barrierd_ec_init(ec, 7, BARRIERD_EC_SHARED), 0);
	spy_watch(&ec->word);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int r = barrierd_ec_wait(ec, f->b, 7, 30 * TEST_SEC);

		_exit(r == 0 && barrierd_ec_value(ec) == 8 ? 0 : 1);
	}
	/* The child sleeps on the word as a shared futex: test_await_sleeper's wake finds it. */
	assert_true(test_await_sleeper(&ec->word, GUARD_NS));
	test_sleep_ns(20 * TEST_MS);
	barrierd_ec_inc_sp(ec);
	st = test_reap(pid, 20);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	munmap(ec, sizeof(*ec));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_value, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_waiter_no_call, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_mp, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wait_moved_before, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wait_blocked_sp, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wait_blocked_mp, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wait_no_daemon, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wait_stopped_daemon, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_deadline, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pred, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_foreign_flag, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_flag_cleared_no_spin, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_shared, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_settle_counted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_settle_counted_shared, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
