// SPDX-License-Identifier: MIT
/*
 * Event-count torture (docs/PRIMITIVES.md §1): one single producer (barrierd_ec_inc_sp, an
 * unlocked xadd), several waiters, each waiting for the value to move past what it saw, for
 * BARRIERD_EC_TORTURE_SECONDS (default 10; BARRIERD_EC_TORTURE_MODEL=0 runs the xadd alone,
 * without the store-buffer model below).  A waiter must always be woken: one still inside
 * its wait WATCHDOG_NS after the value moved past what it waits on has lost its wake-up.  The
 * producer mixes back-to-back bursts with gaps of every length, from a few hundred
 * nanoseconds (waiters set the flag while it runs) to milliseconds (waiters reach the
 * indefinite block), and the report says how many waits blocked for good and how long after
 * the call they got there (ec_spy.h sees the FUTEX_WAIT with no timeout).
 *
 *   test_ec_torture          against the real daemon: no lost wake-up.
 *   test_ec_torture_control  the same against a sham barrier: a fake daemon whose file says
 *                            every CPU passed a time far in the future, so every barrier
 *                            passes at its first check, with no evidence.  It must lose a
 *                            wake-up (its ctest passes when it fails: expect_caught.sh).
 *
 * What the barrier guards against is an increment whose load came before the flag's CAS and
 * whose store lands after the waiter's futex compare: as long as the xadd's store may wait in
 * the producer's store buffer, which x86-TSO lets its load pass (fact F2).  On real hardware
 * that is a commit's latency, under a microsecond, shorter than a waiter's path from its CAS
 * to the kernel's compare: the sham loses nothing with the xadd alone (measured: 0 in 33 152
 * waits, docs/PRIMITIVES.md §1).  So the producer also runs, for the first increment of half
 * its bursts, a model of the worst store buffer TSO allows: the increment's load, then its
 * store held for HOLD_MIN_NS to HOLD_MAX_NS, and made only if no serialising event came on
 * its CPU meanwhile (the CPU's slot stamp unchanged: no event the daemon stamps, rule 1; no
 * gap in its clock readings over GAP_NS: no switch, no interrupt of any kind).  A real store
 * buffer would have drained at such an event; the model then drops the increment and tries
 * again.  The real barrier, whose evidence from the producer's CPU comes from exactly those
 * events, covers the model as it covers the xadd (the store is made before the next one); the
 * sham does not.  The only window the model adds is between its last check and its store, a
 * few instructions.  Both runs need the real daemon, for the slots.
 *
 * Producer and waiters are pinned apart (two CPUs of the affinity): a waiter that shares the
 * producer's CPU would see its stores in its own program order.
 *
 * A lost waiter is woken by hand (a FUTEX_WAKE on the word) after it is counted, so that
 * every run ends.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <barrierd_slot.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>

#include "ec_spy.h"
#include "fake_daemon.h"
#include "harness.h"

#define WAITERS 3
#define WATCHDOG_NS (2 * TEST_SEC)
#define MAX_SAMPLES 200000
#define HOLD_MIN_NS 2000
#define HOLD_MAX_NS 20000
#define GAP_NS 500

struct waiter {
	_Alignas(128) int idx;
	uint64_t waits, blocked, errors, first_error;
	uint64_t since_ns;  /* __atomic: in a wait since (0: not in one) */
	uint64_t seen;	    /* __atomic: the value it waits to move past */
	uint64_t moved_ns;  /* watchdog's: when it first saw the value moved under the waiter */
	uint64_t lost;	    /* watchdog's */
	uint64_t *to_block; /* ns from the call to the indefinite block, one per blocked wait */
	uint64_t nsamples;
	pthread_t th;
};

static _Alignas(128) struct barrierd_ec ec;
static _Alignas(128) int stop;
static struct barrierd *handle;
static struct waiter waiters[WAITERS];
static int cpu_producer = -1, cpu_waiters = -1;
static int stop_on_loss; /* the control: the first lost wake-up is enough */

/* The producer CPU's slot (the real daemon's, read-only): its stamp moves at every event. */
static const struct barrierd_slot *slots;
static size_t slots_len;
static uint64_t model_incs, model_drops; /* producer's */
static int model_off;			 /* BARRIERD_EC_TORTURE_MODEL=0: the xadd alone */

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void spin_ns(uint64_t ns)
{
	uint64_t end = bd_mono_ns() + ns;

	while (bd_mono_ns() < end)
		__builtin_ia32_pause();
}

/*
 * The worst store buffer TSO allows, for one increment: its load now, its store after
 * hold_ns, unless a serialising event came on this CPU in between (then false: nothing was
 * stored, as a drained store buffer would have made the store visible before the event).
 */
static bool model_inc(uint64_t hold_ns)
{
	const uint64_t *stamp = (const uint64_t *)&slots[cpu_producer].stamp;
	uint64_t s0 = bd_load(stamp), w, t, prev, end;

	w = __atomic_load_n(&ec.word, __ATOMIC_RELAXED); /* the xadd's load */
	prev = bd_mono_ns();
	end = prev + hold_ns;
	for (;;) {
		t = bd_mono_ns();
		if (bd_load(stamp) != s0 || t - prev > GAP_NS)
			return false;
		if (t >= end)
			break;
		prev = t;
	}
	__atomic_store_n(&ec.word, w + BARRIERD_EC_ONE, __ATOMIC_RELAXED); /* its store */
	if (w & BARRIERD_EC_FLAG)
		barrierd_ec_wake(&ec);
	return true;
}

static void *producer(void *arg)
{
	uint64_t s = 0x9e3779b97f4a7c15ULL;

	(void)arg;
	test_pin(cpu_producer);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		uint64_t k = 1 + rnd(&s) % 64, g = rnd(&s) % 100;

		if (!model_off && (rnd(&s) & 1)) {
			while (!model_inc(HOLD_MIN_NS + rnd(&s) % (HOLD_MAX_NS - HOLD_MIN_NS)))
				model_drops++;
			model_incs++;
			k--;
		}
		for (uint64_t i = 0; i < k; i++)
			barrierd_ec_inc_sp(&ec);
		if (g < 60)
			spin_ns(200 + rnd(&s) % 3000); /* waiters spin, then set the flag */
		else if (g < 95)
			test_sleep_ns(20 * TEST_US + rnd(&s) % (2 * TEST_MS));
		else
			test_sleep_ns(5 * TEST_MS + rnd(&s) % (20 * TEST_MS)); /* to the block */
	}
	/* Until every waiter has left (they look at stop after each wait). */
	for (int i = 0; i < WAITERS; i++)
		while (__atomic_load_n(&waiters[i].idx, __ATOMIC_ACQUIRE) >= 0) {
			barrierd_ec_inc_sp(&ec);
			test_sleep_ns(TEST_MS);
		}
	return NULL;
}

static void *waiter(void *arg)
{
	struct waiter *w = arg;

	test_pin(cpu_waiters);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		uint64_t seen, t0;
		int r;

		seen = barrierd_ec_value(&ec);

		__atomic_store_n(&w->seen, seen, __ATOMIC_RELAXED);
		t0 = bd_mono_ns();
		__atomic_store_n(&w->since_ns, t0, __ATOMIC_RELEASE);
		spy_thread_reset();
		r = barrierd_ec_wait(&ec, handle, seen, -1);
		__atomic_store_n(&w->since_ns, 0, __ATOMIC_RELEASE);
		w->waits++;
		if (r != 0 || barrierd_ec_value(&ec) <= seen) {
			if (!w->errors++)
				w->first_error = (uint64_t)(r ? r : 1);
		}
		if (spy_self.blocks) {
			w->blocked++;
			if (w->nsamples < MAX_SAMPLES)
				w->to_block[w->nsamples++] = spy_self.first_block_ns - t0;
		}
	}
	__atomic_store_n(&w->idx, -1, __ATOMIC_RELEASE);
	return NULL;
}

/* The main thread's watch: a waiter inside its wait long after the value moved is lost. */
static void watchdog(uint64_t end)
{
	uint64_t lost = 0;

	while (bd_mono_ns() < end && !(stop_on_loss && lost)) {
		test_sleep_ns(5 * TEST_MS);
		for (int i = 0; i < WAITERS; i++) {
			struct waiter *w = &waiters[i];
			uint64_t since = __atomic_load_n(&w->since_ns, __ATOMIC_ACQUIRE);
			uint64_t now = bd_mono_ns();

			if (!since ||
			    barrierd_ec_value(&ec) <= __atomic_load_n(&w->seen, __ATOMIC_RELAXED)) {
				w->moved_ns = 0;
				continue;
			}
			if (!w->moved_ns) {
				w->moved_ns = now;
			} else if (now - w->moved_ns > WATCHDOG_NS) {
				w->lost++;
				lost++;
				w->moved_ns = 0;
				print_message(
				    "waiter %d: lost wake-up (waiting on %llu, value %llu)\n", i,
				    (unsigned long long)w->seen,
				    (unsigned long long)barrierd_ec_value(&ec));
				/* Rescue it, so the run goes on and ends. */
				syscall(SYS_futex, (uint32_t *)&ec.word,
					FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT32_MAX, NULL, NULL, 0);
			}
		}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t torture_seconds(void)
{
	const char *e = getenv("BARRIERD_EC_TORTURE_SECONDS");
	long v = e ? atol(e) : 10;

	return v > 0 ? (uint64_t)v : 10;
}

/* The real daemon's slots, as a client gets them; no link kept. */
static void map_slots(void)
{
	uint64_t ncpu = 0;

	slots = test_map_slots(H.dir, &slots_len, &ncpu);
	assert_non_null(slots);
	assert_true((uint64_t)cpu_producer < ncpu);
}

/* One run; the lost wake-ups it saw. */
static uint64_t run(const char *name, struct barrierd *b, uint64_t seconds)
{
	uint64_t lost = 0, waits = 0, blocked = 0, errors = 0, n = 0, *all;
	pthread_t prod;

	handle = b;
	stop = 0;
	model_incs = model_drops = 0;
	assert_int_equal(barrierd_ec_init(&ec, 0, 0), 0);
	spy_watch(&ec.word);
	spy_reset();
	for (int i = 0; i < WAITERS; i++) {
		waiters[i] = (struct waiter){.idx = i};
		waiters[i].to_block = calloc(MAX_SAMPLES, sizeof(uint64_t));
		assert_non_null(waiters[i].to_block);
		assert_int_equal(pthread_create(&waiters[i].th, NULL, waiter, &waiters[i]), 0);
	}
	assert_int_equal(pthread_create(&prod, NULL, producer, NULL), 0);
	watchdog(bd_mono_ns() + seconds * TEST_SEC);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	/* The ending, watched too: a waiter lost now would hang the joins. */
	watchdog(bd_mono_ns() + WATCHDOG_NS + 500 * TEST_MS);
	for (int i = 0; i < WAITERS; i++)
		pthread_join(waiters[i].th, NULL);
	pthread_join(prod, NULL);

	all = calloc(WAITERS * MAX_SAMPLES, sizeof(uint64_t));
	assert_non_null(all);
	for (int i = 0; i < WAITERS; i++) {
		struct waiter *w = &waiters[i];

		lost += w->lost;
		waits += w->waits;
		blocked += w->blocked;
		errors += w->errors;
		memcpy(all + n, w->to_block, w->nsamples * sizeof(uint64_t));
		n += w->nsamples;
		free(w->to_block);
	}
	print_message("%s: %llu s, value %llu, %llu waits, %llu reached the indefinite block, "
		      "%llu lost wake-ups, %llu errors\n",
		      name, (unsigned long long)seconds, (unsigned long long)barrierd_ec_value(&ec),
		      (unsigned long long)waits, (unsigned long long)blocked,
		      (unsigned long long)lost, (unsigned long long)errors);
	print_message("%s: %llu model increments (store held %d to %d us), %llu dropped at an "
		      "event\n",
		      name, (unsigned long long)model_incs, HOLD_MIN_NS / 1000, HOLD_MAX_NS / 1000,
		      (unsigned long long)model_drops);
	if (n) {
		qsort(all, n, sizeof(*all), cmp_u64);
		print_message(
		    "%s: call to indefinite block: min %.1f us, p50 %.1f us, p90 %.1f us, "
		    "p99 %.1f us, max %.1f us\n",
		    name, (double)all[0] / 1e3, (double)all[n / 2] / 1e3,
		    (double)all[n * 9 / 10] / 1e3, (double)all[n * 99 / 100] / 1e3,
		    (double)all[n - 1] / 1e3);
	}
	free(all);
	assert_int_equal(errors, 0);
	return lost;
}

static void test_ec_torture(void **state)
{
	struct barrierd *b;

	(void)state;
	test_require_root();
	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_int_equal(barrierd_open(&b, H.state), 0);
	map_slots();
	uint64_t lost = run("barrierd", b, torture_seconds());

	barrierd_close(b);
	munmap((void *)slots, slots_len);
	assert_int_equal(lost, 0);
}

/*
 * The sham: a live fake daemon whose every value is far in the future.  The real daemon runs
 * only for the producer's model (its slots).
 */
static void test_ec_torture_control(void **state)
{
	struct fake_daemon d;
	struct barrierd *b;
	uint64_t future = bd_mono_ns() + 3600 * TEST_SEC;

	(void)state;
	test_require_root();
	assert_int_equal(h_start(&H, -1, NULL), 0);
	map_slots();
	assert_int_equal(fake_create(&d, 2, FAKE_LIVE), 0);
	assert_int_equal(fake_start_ticker(&d, 0), 0);
	assert_int_equal(fake_open_lib(&b, d.path, NULL), 0);
	for (uint64_t c = 0; c < d.ncpu; c++)
		bd_store(&d.h->per_cpu[c].last_interrupt_ns, future);
	bd_store(&d.h->last_interrupt_ns, future);
	assert_true(barrierd_passed(b, barrierd_stamp_ns(b)));
	stop_on_loss = 1;
	uint64_t lost = run("sham barrier", b, torture_seconds());

	barrierd_close(b);
	fake_destroy(&d);
	munmap((void *)slots, slots_len);
	if (lost)
		fail_msg("the sham barrier lost %llu wake-ups", (unsigned long long)lost);
	print_message("the sham barrier lost no wake-up in this run\n");
}

int main(int argc, char **argv)
{
	cpu_set_t set;

	/* Two CPUs of our affinity: the producer's, and the waiters'. */
	if (sched_getaffinity(0, sizeof(set), &set)) {
		perror("sched_getaffinity");
		return 1;
	}
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		if (cpu_producer < 0)
			cpu_producer = c;
		else if (cpu_waiters < 0)
			cpu_waiters = c;
	}
	if (cpu_waiters < 0)
		test_skip_or_fail("needs two CPUs");
	model_off = getenv("BARRIERD_EC_TORTURE_MODEL") &&
		    strcmp(getenv("BARRIERD_EC_TORTURE_MODEL"), "0") == 0;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_ec_torture, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(test_ec_torture_control, h_setup, h_teardown),
	};

	/* No argument: the real daemon's run.  A test's name: that one (the control's ctest). */
	cmocka_set_test_filter(argc > 1 ? argv[1] : "test_ec_torture");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
