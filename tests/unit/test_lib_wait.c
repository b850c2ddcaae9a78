// SPDX-License-Identifier: MIT
/*
 * passed() and the waits against a fake daemon: strict comparisons, futex wake-ups on the
 * right words, the bounded sleep that catches a change in a word's high half, the doorbell
 * (rung iff the stamp is above served_ns, and at every turn for vtime), a stale daemon,
 * the membarrier fallback and its errors, a daemon restart under an open handle, and
 * wait_cpus.  Then the library cases of the stop rule and of the wake-ups: a restart between
 * the library's load of a value and its load of the flags (access_hook.h stops the library
 * between the two), an extension laid out after open, and futex_waitv refused by seccomp.
 *
 * Timeouts here are hang guards (seconds) or deliberately short waits that must time out;
 * nothing asserts how long anything took, except that a wait without futex_waitv must not
 * spin (its CPU time against its length).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/futex.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/membarrier.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "access_hook.h"
#include "fake_daemon.h"

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

#define NCPU 2
#define FEATS (BARRIERD_FEAT_EXTENSION | BARRIERD_FEAT_DOORBELL)

struct fx {
	struct fake_daemon s;
	struct barrierd *b;
};

static int setup_ncpu(void **state, uint64_t ncpu)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	*state = f;
	if (fake_create(&f->s, ncpu, FAKE_LIVE) || fake_start_ticker(&f->s, 0))
		return -1;
	return fake_open_lib(&f->b, f->s.path, NULL) ? -1 : 0;
}

static int setup(void **state)
{
	return setup_ncpu(state, NCPU);
}

static int setup_200(void **state)
{
	/* More CPUs than futex_waitv takes (128): the global word stands for the rest. */
	return setup_ncpu(state, 200);
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (!f)
		return 0;
	/* Threads first: they write the mapping the handle reads. */
	fake_stop_doorbell(&f->s);
	fake_stop_ticker(&f->s);
	barrierd_close(f->b);
	fake_destroy(&f->s);
	free(f);
	return 0;
}

/* What membarrier(GLOBAL) gives this process right now: the fallback must return exactly it. */
static int membarrier_result(void)
{
	return syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) ? -errno : 0;
}

/* A second handle on the same file, with the membarrier fallback. */
static struct barrierd *open_fallback(struct fx *f, int64_t after_ns)
{
	struct barrierd_open_opts o = {.sz = sizeof(o),
				       .fallback = BARRIERD_FALLBACK_MEMBARRIER,
				       .fallback_after_ns = after_ns};
	struct barrierd *b = NULL;

	assert_int_equal(fake_open_lib(&b, f->s.path, &o), 0);
	return b;
}

/* A stamp the library accepts (the clock may not have moved past open_ns yet). */
static uint64_t stamp(struct barrierd *b)
{
	uint64_t t;

	while ((t = barrierd_stamp_ns(b)) <= barrierd_open_ns(b))
		sched_yield();
	return t;
}

/* The daemon stops: no more heartbeats, the stop snapshot, the stopped flag. */
static void daemon_dies(struct fx *f)
{
	fake_stop_ticker(&f->s);
	fake_stop(&f->s);
}

/* ---------------------------------------------------------------------------------------- */
/* The fake daemon's actions, run from a thread while the test waits                        */
/* ---------------------------------------------------------------------------------------- */

struct adv {
	struct fake_daemon *s;
	const uint64_t *sleeper; /* first wait until a waiter sleeps on this word (NULL: don't) */
	void (*act)(struct adv *);
	uint64_t after; /* published values must be later than this stamp */
	uint64_t cpu;
	int saw_sleeper;
	int stop; /* __atomic: ends act_tick */
	pthread_t t;
};

static uint64_t later_than(uint64_t t)
{
	uint64_t n = bd_mono_ns();

	return n > t ? n : t + 1;
}

static void act_all(struct adv *a)
{
	fake_credit_all(a->s, later_than(a->after));
}

static void act_cpu(struct adv *a)
{
	fake_credit(a->s, a->cpu, later_than(a->after));
}

/*
 * Raise every ns word by exactly 2^32 with no FUTEX_WAKE: the low halves, the futex words,
 * do not change, so only a bounded futex sleep followed by a full 64-bit re-check sees it.
 * (The values are then ~4.3 s ahead of the clock; the library checks times only at open.)
 */
static void act_high_half(struct adv *a)
{
	struct fake_daemon *s = a->s;

	pthread_mutex_lock(&s->lock);
	for (uint64_t c = 0; c < s->ncpu; c++)
		bd_store(&s->h->per_cpu[c].last_interrupt_ns,
			 bd_load(&s->h->per_cpu[c].last_interrupt_ns) + (1ULL << 32));
	bd_store(&s->h->last_interrupt_ns, bd_load(&s->h->last_interrupt_ns) + (1ULL << 32));
	pthread_mutex_unlock(&s->lock);
}

/* A busy machine: every CPU brings fresh evidence every millisecond. */
static void act_tick(struct adv *a)
{
	while (!__atomic_load_n(&a->stop, __ATOMIC_ACQUIRE)) {
		fake_credit_all(a->s, bd_mono_ns());
		test_sleep_ns(TEST_MS);
	}
}

static void *adv_main(void *arg)
{
	struct adv *a = arg;

	if (a->sleeper)
		a->saw_sleeper = test_await_sleeper(a->sleeper, TEST_HANG_GUARD_NS / 2);
	a->act(a);
	return NULL;
}

static void adv_start(struct adv *a)
{
	assert_int_equal(pthread_create(&a->t, NULL, adv_main, a), 0);
}

static void adv_join(struct adv *a)
{
	__atomic_store_n(&a->stop, 1, __ATOMIC_RELEASE);
	pthread_join(a->t, NULL);
}

/* ---------------------------------------------------------------------------------------- */
/* passed()                                                                                  */
/* ---------------------------------------------------------------------------------------- */

static void passed_is_strict(void **state)
{
	struct fx *f = *state;
	uint64_t s = stamp(f->b);

	assert_false(barrierd_passed(f->b, s));
	fake_credit_all(&f->s, s - 1);
	assert_false(barrierd_passed(f->b, s));
	/* Equal is not evidence (DESIGN rule 8: the model finds a counterexample with >=). */
	fake_credit_all(&f->s, s);
	assert_int_equal(f->s.h->last_interrupt_ns, s);
	assert_false(barrierd_passed(f->b, s));
	assert_int_equal(barrierd_wait(f->b, s, 0), -ETIMEDOUT); /* the waits compare alike */
	fake_credit_all(&f->s, s + 1);
	assert_true(barrierd_passed(f->b, s));
	assert_false(barrierd_passed(f->b, s + 1));
}

static void passed_refuses_stamps_before_open(void **state)
{
	struct fx *f = *state;
	uint64_t o = barrierd_open_ns(f->b);

	/* The daemon moves far past open_ns; stamps at or below it still never pass. */
	fake_credit_all(&f->s, later_than(o) + TEST_SEC);
	assert_true(f->s.h->last_interrupt_ns > o);
	assert_false(barrierd_passed(f->b, o));
	assert_false(barrierd_passed(f->b, o - 1));
	assert_false(barrierd_passed(f->b, 0));
	assert_true(barrierd_passed(f->b, o + 1));
}

static void passed_vtime_is_strict(void **state)
{
	struct fx *f = *state;
	uint64_t v = barrierd_stamp_vtime(f->b);

	assert_int_equal(v, bd_load(&f->s.h->vtime));
	assert_false(barrierd_passed_vtime(f->b, v));
	/* The global vtime reaching v exactly is not enough. */
	bd_store(&f->s.h->last_interrupt_vtime, v);
	assert_false(barrierd_passed_vtime(f->b, v));
	assert_int_equal(barrierd_wait_vtime(f->b, v, 0), -ETIMEDOUT);
	bd_store(&f->s.h->last_interrupt_vtime, v + 1);
	assert_true(barrierd_passed_vtime(f->b, v));
	assert_false(barrierd_passed_vtime(f->b, v + 1));
	/* stamp_vtime follows the published vtime. */
	bd_store(&f->s.h->vtime, v + 100);
	assert_int_equal(barrierd_stamp_vtime(f->b), v + 100);
}

/* ---------------------------------------------------------------------------------------- */
/* wait()                                                                                    */
/* ---------------------------------------------------------------------------------------- */

static void wait_fast_path(void **state)
{
	struct fx *f = *state;
	uint64_t s = stamp(f->b);

	fake_credit_all(&f->s, s + 1);
	assert_int_equal(barrierd_wait(f->b, s, 0), 0);
	assert_int_equal(barrierd_wait(f->b, s, TEST_HANG_GUARD_NS), 0);
}

static void wait_woken_by_daemon(void **state)
{
	struct fx *f = *state;
	struct adv a = {.s = &f->s, .act = act_all};

	a.after = stamp(f->b);
	/* The waiter must be found asleep on the global word's low half, as a shared futex. */
	a.sleeper = &f->s.h->last_interrupt_ns;
	adv_start(&a);
	assert_int_equal(barrierd_wait(f->b, a.after, TEST_HANG_GUARD_NS), 0);
	adv_join(&a);
	assert_true(a.saw_sleeper);
	assert_true(barrierd_passed(f->b, a.after));
}

static void wait_vtime_woken_by_daemon(void **state)
{
	struct fx *f = *state;
	struct adv a = {.s = &f->s, .act = act_all};
	uint64_t v = barrierd_stamp_vtime(f->b);

	a.after = stamp(f->b);
	a.sleeper = &f->s.h->last_interrupt_vtime;
	adv_start(&a);
	assert_int_equal(barrierd_wait_vtime(f->b, v, TEST_HANG_GUARD_NS), 0);
	adv_join(&a);
	assert_true(a.saw_sleeper);
	assert_true(barrierd_passed_vtime(f->b, v));
}

static void wait_times_out(void **state)
{
	struct fx *f = *state;
	uint64_t s = stamp(f->b);

	/* A live daemon whose busy CPUs bring no evidence: a short wait must time out. */
	assert_int_equal(barrierd_wait(f->b, s, 50 * TEST_MS), -ETIMEDOUT);
	assert_int_equal(barrierd_wait(f->b, s, 0), -ETIMEDOUT);
	assert_int_equal(barrierd_wait_vtime(f->b, barrierd_stamp_vtime(f->b), 20 * TEST_MS),
			 -ETIMEDOUT);
	assert_false(barrierd_passed(f->b, s));
}

static void wait_refuses_stamps_before_open(void **state)
{
	struct fx *f = *state;
	uint64_t o = barrierd_open_ns(f->b);

	fake_credit_all(&f->s, later_than(o) + TEST_SEC);
	assert_int_equal(barrierd_wait(f->b, o, TEST_HANG_GUARD_NS), -EINVAL);
	assert_int_equal(barrierd_wait(f->b, o - 1, TEST_HANG_GUARD_NS), -EINVAL);
	assert_int_equal(barrierd_wait(f->b, 0, TEST_HANG_GUARD_NS), -EINVAL);
	assert_int_equal(barrierd_wait(NULL, o + 1, 0), -EINVAL);
	assert_int_equal(barrierd_wait_vtime(NULL, 1, 0), -EINVAL);
	assert_int_equal(barrierd_barrier(NULL, 0), -EINVAL);
}

static void wait_sees_high_half_change(void **state)
{
	struct fx *f = *state;
	struct adv a = {.s = &f->s, .act = act_high_half};
	uint32_t low_before;

	a.after = stamp(f->b);
	low_before = (uint32_t)bd_load(&f->s.h->last_interrupt_ns);
	a.sleeper = &f->s.h->last_interrupt_ns;
	adv_start(&a);
	assert_int_equal(barrierd_wait(f->b, a.after, TEST_HANG_GUARD_NS), 0);
	adv_join(&a);
	assert_true(a.saw_sleeper);
	/* The futex word itself never changed and was never woken after the poke. */
	assert_int_equal((uint32_t)bd_load(&f->s.h->last_interrupt_ns), low_before);
	assert_true(bd_load(&f->s.h->last_interrupt_ns) > a.after);
}

/* ---------------------------------------------------------------------------------------- */
/* The doorbell                                                                              */
/* ---------------------------------------------------------------------------------------- */

/*
 * CPU 0 is busy and past the stamp; CPU 1 holds the barrier back in `cpu_state`, at the stamp
 * or below it; served_ns (fake_fill's) is below the stamp.  The wait must ring; the fake
 * daemon's doorbell listener then credits CPU 1, as the daemon's idle/offline credit does, and
 * the wait ends.
 */
static void ring_case(struct fx *f, uint64_t cpu_state, int at_stamp)
{
	uint64_t s = stamp(f->b);

	fake_credit(&f->s, 0, s + 1);
	if (at_stamp)
		fake_credit(&f->s, 1, s);
	fake_set_state(&f->s, 1, cpu_state);
	assert_int_equal(fake_start_doorbell(&f->s, FAKE_CREDIT_IDLE), 0);
	assert_int_equal(barrierd_wait(f->b, s, TEST_HANG_GUARD_NS), 0);
	fake_stop_doorbell(&f->s);
	if (fake_rings(&f->s) < 1)
		fail_msg("CPU state %llu: the wait ended without ringing",
			 (unsigned long long)cpu_state);
	assert_true(f->s.h->per_cpu[1].last_interrupt_ns > s);
}

static void rings_for_idle(void **state)
{
	ring_case(*state, BARRIERD_CPU_IDLE, 0);
}

static void rings_for_unknown(void **state)
{
	ring_case(*state, BARRIERD_CPU_UNKNOWN, 0);
}

static void rings_for_offline(void **state)
{
	ring_case(*state, BARRIERD_CPU_OFFLINE, 0);
}

static void rings_for_daemon_cpu(void **state)
{
	ring_case(*state, BARRIERD_CPU_DAEMON, 0);
}

static void rings_for_idle_at_stamp(void **state)
{
	/* A value equal to the stamp is not evidence: that CPU still needs credit. */
	ring_case(*state, BARRIERD_CPU_IDLE, 1);
}

/*
 * After a wait that must not have rung, prove the listener was listening: ring with
 * barrierd_request() until it counts a ring.
 */
static void listener_hears_requests(struct fx *f)
{
	uint64_t end = bd_mono_ns() + TEST_HANG_GUARD_NS;

	while (fake_rings(&f->s) == 0 && bd_mono_ns() < end) {
		assert_int_equal(barrierd_request(f->b), 0);
		test_sleep_ns(TEST_MS);
	}
	assert_true(fake_rings(&f->s) > 0);
}

/* A wait for s must time out without ringing, although the listener listens. */
static void no_ring_case(struct fx *f, uint64_t s, int64_t wait_ns)
{
	assert_int_equal(fake_start_doorbell(&f->s, FAKE_CREDIT_NONE), 0);
	assert_int_equal(barrierd_wait(f->b, s, wait_ns), -ETIMEDOUT);
	assert_int_equal(fake_rings(&f->s), 0);
	listener_hears_requests(f);
}

/*
 * served_ns at exactly the stamp: the daemon promised to serve it, so no ring, whatever the
 * lagging CPU's state.  Here the test plays that daemon and serves nothing: the wait times out.
 * busy: CPU 0 (busy) lags, CPU 1 is past; otherwise CPU 1 lags too, idle.
 */
static void no_ring_when_served(struct fx *f, bool idle_lags)
{
	uint64_t s = stamp(f->b);

	if (idle_lags)
		fake_set_state(&f->s, 1, BARRIERD_CPU_IDLE);
	else
		fake_credit(&f->s, 1, s + 1);
	bd_store(&f->s.x->served_ns, s);
	no_ring_case(f, s, 100 * TEST_MS);
}

static void no_ring_when_served_busy(void **state)
{
	no_ring_when_served(*state, false);
}

/* A CPU that is not busy lags too: served_ns alone decides, no per-CPU state is read. */
static void no_ring_when_served_idle(void **state)
{
	no_ring_when_served(*state, true);
}

/* A CPU-set wait follows the same rule: CPU 0 (busy) lags, the stamp is served. */
static void no_ring_when_served_cpus(void **state)
{
	struct fx *f = *state;
	uint64_t s = stamp(f->b);
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	bd_store(&f->s.x->served_ns, s);
	assert_int_equal(fake_start_doorbell(&f->s, FAKE_CREDIT_NONE), 0);
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, sizeof(set), 100 * TEST_MS), -ETIMEDOUT);
	assert_int_equal(fake_rings(&f->s), 0);
	listener_hears_requests(f);
}

static void no_ring_without_doorbell_feature(void **state)
{
	struct fx *f = *state;
	uint64_t s = stamp(f->b);

	/* No daemon thread waits on the doorbell: ringing would only cost the client. */
	bd_store(&f->s.h->flags, BARRIERD_FLAG_RUNNING | BARRIERD_FEAT_EXTENSION);
	fake_set_state(&f->s, 1, BARRIERD_CPU_IDLE);
	no_ring_case(f, s, 100 * TEST_MS);
}

/* A daemon that publishes served_ns (docs/PROTOCOL.md §6.8). */
#define SERVED_FLAGS (BARRIERD_FLAG_RUNNING | FEATS | BARRIERD_FEAT_SERVED)

/*
 * served_ns just below the stamp, every lagging CPU busy: the waiter rings (no per-CPU state
 * makes it skip), and the fake daemon's answer (served_ns raised past the stamp, the CPUs
 * published) ends the wait.
 */
static void rings_when_stamp_above_served(void **state)
{
	struct fx *f = *state;
	uint64_t s = stamp(f->b);

	fake_credit(&f->s, 1, s + 1);
	bd_store(&f->s.h->flags, SERVED_FLAGS);
	bd_store(&f->s.x->served_ns, s - 1);
	assert_int_equal(fake_start_doorbell(&f->s, FAKE_CREDIT_SERVED), 0);
	assert_int_equal(barrierd_wait(f->b, s, TEST_HANG_GUARD_NS), 0);
	fake_stop_doorbell(&f->s);
	assert_true(fake_rings(&f->s) >= 1);
	assert_true(bd_load(&f->s.x->served_ns) > s);
}

/*
 * Without FEAT_SERVED the word promises nothing: a waiter rings although it reads above the
 * stamp.
 */
static void rings_without_served_feature(void **state)
{
	struct fx *f = *state;
	uint64_t s = stamp(f->b);

	fake_credit(&f->s, 1, s + 1);
	bd_store(&f->s.h->flags, BARRIERD_FLAG_RUNNING | FEATS);
	bd_store(&f->s.x->served_ns, UINT64_MAX);
	assert_int_equal(fake_start_doorbell(&f->s, FAKE_CREDIT_SERVED), 0);
	assert_int_equal(barrierd_wait(f->b, s, TEST_HANG_GUARD_NS), 0);
	fake_stop_doorbell(&f->s);
	assert_true(fake_rings(&f->s) >= 1);
}

/*
 * A lost ring (nobody listening yet) does not raise served_ns, so the wait rings again: once
 * the listener runs, a later ring is heard and served.  A wait that rang once and then only
 * slept would time out here.
 */
struct late_listener {
	struct fake_daemon *s;
	int saw_sleeper;
	pthread_t t;
};

static void *start_listener_late(void *arg)
{
	struct late_listener *l = arg;

	/* The waiter has rung (lost) and sleeps on the global word: only now listen. */
	l->saw_sleeper = test_await_sleeper(&l->s->h->last_interrupt_ns, TEST_HANG_GUARD_NS / 2);
	if (fake_start_doorbell(l->s, FAKE_CREDIT_SERVED))
		l->saw_sleeper = -1;
	return NULL;
}

static void lost_ring_rings_again(void **state)
{
	struct fx *f = *state;
	struct late_listener l = {.s = &f->s};
	uint64_t s = stamp(f->b);

	fake_credit(&f->s, 1, s + 1);
	assert_int_equal(pthread_create(&l.t, NULL, start_listener_late, &l), 0);
	assert_int_equal(barrierd_wait(f->b, s, TEST_HANG_GUARD_NS), 0);
	assert_int_equal(pthread_join(l.t, NULL), 0);
	assert_int_equal(l.saw_sleeper, 1);
	fake_stop_doorbell(&f->s);
	assert_true(fake_rings(&f->s) >= 1);
	assert_true(bd_load(&f->s.x->served_ns) > s);
}

/* A vtime wait rings for a busy CPU whatever served_ns says: it is a time, not a vtime. */
static void vtime_rings_past_served(void **state)
{
	struct fx *f = *state;
	uint64_t v = barrierd_stamp_vtime(f->b);

	bd_store(&f->s.h->flags, SERVED_FLAGS);
	bd_store(&f->s.x->served_ns, UINT64_MAX);
	assert_int_equal(fake_start_doorbell(&f->s, FAKE_CREDIT_SERVED), 0);
	assert_int_equal(barrierd_wait_vtime(f->b, v, TEST_HANG_GUARD_NS), 0);
	fake_stop_doorbell(&f->s);
	assert_true(fake_rings(&f->s) >= 1);
}

/*
 * ... and at every turn while it has not passed: nobody answers, so a 200 ms wait rings more
 * than once (after each heard ring it sleeps at most VTIME_RING_SLICE_NS, 1 ms; the count
 * asserted is far below that, so a slow machine cannot fail it).
 */
static void vtime_rings_every_turn(void **state)
{
	struct fx *f = *state;
	uint64_t v = barrierd_stamp_vtime(f->b);

	bd_store(&f->s.x->served_ns, UINT64_MAX);
	assert_int_equal(fake_start_doorbell(&f->s, FAKE_CREDIT_NONE), 0);
	assert_int_equal(barrierd_wait_vtime(f->b, v, 200 * TEST_MS), -ETIMEDOUT);
	fake_stop_doorbell(&f->s);
	if (fake_rings(&f->s) < 3)
		fail_msg("a vtime wait of 200 ms rang %llu times, not at every turn",
			 (unsigned long long)fake_rings(&f->s));
}

static void *count_marked(void *arg)
{
	const uint32_t *mark = (const uint32_t *)&((struct fx *)arg)->s.h->doorbell + 1;
	uint64_t end = bd_mono_ns() + TEST_HANG_GUARD_NS;
	long n = 0;

	while (n <= 0 && bd_mono_ns() < end) {
		n = syscall(SYS_futex, mark, FUTEX_CMP_REQUEUE, 0, (void *)(long)INT32_MAX, mark,
			    __atomic_load_n(mark, __ATOMIC_RELAXED));
		test_sleep_ns(TEST_MS);
	}
	return (void *)(intptr_t)n;
}

/*
 * A sleeping waiter queues on the doorbell's high half too, so that the daemon counts it as
 * one that rings, not as a client of the original layout to follow (docs/DEMAND.md, "Following").
 */
static void sleeper_is_marked(void **state)
{
	struct fx *f = *state;
	uint64_t s = stamp(f->b);
	pthread_t th;
	void *n;

	fake_credit(&f->s, 1, s + 1);
	bd_store(&f->s.h->flags, SERVED_FLAGS);
	bd_store(&f->s.x->served_ns, s);
	assert_int_equal(pthread_create(&th, NULL, count_marked, f), 0);
	assert_int_equal(barrierd_wait(f->b, s, 300 * TEST_MS), -ETIMEDOUT);
	assert_int_equal(pthread_join(th, &n), 0);
	/* Without futex_waitv (valgrind has none) the sleep is a FUTEX_WAIT on one word. */
	if (syscall(SYS_futex_waitv, NULL, 0, 0, NULL, 0) < 0 && errno == ENOSYS) {
		print_message("no futex_waitv here: the sleep cannot be marked\n");
		assert_int_equal((intptr_t)n, 0);
		return;
	}
	assert_int_equal((intptr_t)n, 1);
}

static void request_rings(void **state)
{
	struct fx *f = *state;

	/* Nobody listening: the ring is lost, which is not an error. */
	assert_int_equal(barrierd_request(f->b), 0);
	assert_int_equal(fake_start_doorbell(&f->s, FAKE_CREDIT_NONE), 0);
	listener_hears_requests(f);
}

/* ---------------------------------------------------------------------------------------- */
/* A stale daemon, the fallback, a restart                                                   */
/* ---------------------------------------------------------------------------------------- */

/*
 * Each stale case keeps the other signs of life fresh, so that one sign alone must be enough.
 * The waits are short: a library that missed the sign would time out (or, after three
 * periods of an unrefreshed heartbeat, see the wrong sign) instead of returning -ESTALE.
 */
#define STALE_WAIT_NS (100 * TEST_MS)

static void stale_stopped_flag(void **state)
{
	struct fx *f = *state;
	struct barrierd *fb = open_fallback(f, 0);
	uint64_t s = stamp(f->b);

	/* The heartbeat thread keeps running: only the flags say the daemon stopped. */
	bd_store(&f->s.h->flags, BARRIERD_FLAG_STOPPED | FEATS);
	assert_int_equal(barrierd_wait(f->b, s, STALE_WAIT_NS), -ESTALE);
	assert_int_equal(barrierd_wait_vtime(f->b, barrierd_stamp_vtime(f->b), STALE_WAIT_NS),
			 -ESTALE);
	/* Stopped wins over running. */
	bd_store(&f->s.h->flags, BARRIERD_FLAG_RUNNING | BARRIERD_FLAG_STOPPED | FEATS);
	assert_int_equal(barrierd_wait(f->b, s, STALE_WAIT_NS), -ESTALE);
	/* With the fallback: membarrier's own result instead. */
	assert_int_equal(barrierd_wait(fb, stamp(fb), TEST_HANG_GUARD_NS), membarrier_result());
	assert_int_equal(barrierd_barrier(fb, TEST_HANG_GUARD_NS), membarrier_result());
	barrierd_close(fb);
}

static void stale_not_running(void **state)
{
	struct fx *f = *state;

	/* Neither flag (heartbeat still fresh): no daemon owns the file. */
	bd_store(&f->s.h->flags, FEATS);
	assert_int_equal(barrierd_wait(f->b, stamp(f->b), STALE_WAIT_NS), -ESTALE);
}

static void stale_heartbeat(void **state)
{
	struct fx *f = *state;
	struct barrierd *fb = open_fallback(f, 0);
	uint64_t s = stamp(f->b);

	/*
	 * Within three periods the daemon is alive: a short wait times out, it is not stale.  If
	 * this thread itself was held off the CPU until the heartbeat really was three periods
	 * old, the attempt proves nothing and is repeated.
	 */
	fake_stop_ticker(&f->s);
	for (int attempt = 0;; attempt++) {
		uint64_t hb = bd_mono_ns() - FAKE_HB_PERIOD_NS / 2;
		int r;

		bd_store(&f->s.h->heartbeat_ns, hb);
		r = barrierd_wait(f->b, s, 10 * TEST_MS);
		if (bd_mono_ns() - hb > 3 * FAKE_HB_PERIOD_NS && attempt < 5)
			continue;
		assert_int_equal(r, -ETIMEDOUT);
		break;
	}
	/* Older than three periods (the flags still say running): a dead or wedged daemon. */
	bd_store(&f->s.h->heartbeat_ns, bd_mono_ns() - 3 * FAKE_HB_PERIOD_NS - 50 * TEST_MS);
	assert_int_equal(barrierd_wait(f->b, s, STALE_WAIT_NS), -ESTALE);
	assert_int_equal(barrierd_wait(fb, stamp(fb), TEST_HANG_GUARD_NS), membarrier_result());
	barrierd_close(fb);
}

static void stale_but_already_passed(void **state)
{
	struct fx *f = *state;
	uint64_t s = stamp(f->b);

	/* Evidence published before the daemon died stays evidence. */
	fake_credit_all(&f->s, s + 1);
	daemon_dies(f);
	assert_true(barrierd_passed(f->b, s));
	assert_int_equal(barrierd_wait(f->b, s, TEST_HANG_GUARD_NS), 0);
}

/*
 * Once our daemon stopped, values raised by anyone else (the original barrierd taking the
 * file over) are no evidence: globals count only up to the stop snapshot, per-CPU values not
 * at all.
 */
static void values_after_stop_not_trusted(void **state)
{
	struct fx *f = *state;
	struct barrierd *fb = open_fallback(f, 0);
	uint64_t s = stamp(f->b), v = barrierd_stamp_vtime(f->b);
	cpu_set_t set;

	daemon_dies(f);
	assert_true(f->s.x->stop_ns <= s);
	/* Another writer, with no RUNNING flag: every word goes past the stamps. */
	fake_credit_all(&f->s, s + TEST_MS);
	assert_true(bd_load(&f->s.h->last_interrupt_ns) > s);
	assert_true(bd_load(&f->s.h->last_interrupt_vtime) > v);
	assert_false(barrierd_passed(f->b, s));
	assert_false(barrierd_passed_vtime(f->b, v));
	assert_int_equal(barrierd_wait(f->b, s, TEST_HANG_GUARD_NS), -ESTALE);
	assert_int_equal(barrierd_wait_vtime(f->b, v, TEST_HANG_GUARD_NS), -ESTALE);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, sizeof(set), TEST_HANG_GUARD_NS),
			 -ESTALE);
	assert_int_equal(barrierd_wait(fb, s, TEST_HANG_GUARD_NS), membarrier_result());
	barrierd_close(fb);
}

/* Without the extension there is no stop snapshot: a file not marked running proves nothing. */
static void stopped_without_extension_trusts_nothing(void **state)
{
	struct fx *f = *state;
	struct barrierd *b = NULL;
	uint64_t s;

	bd_store(&f->s.h->flags, BARRIERD_FLAG_RUNNING);
	assert_int_equal(fake_open_lib(&b, f->s.path, NULL), 0);
	s = stamp(b);
	fake_credit_all(&f->s, s + 1);
	assert_true(barrierd_passed(b, s)); /* control: running, the value counts */
	fake_stop_ticker(&f->s);
	bd_store(&f->s.h->flags, BARRIERD_FLAG_STOPPED);
	assert_false(barrierd_passed(b, s));
	assert_false(barrierd_passed_vtime(b, 0));
	assert_int_equal(barrierd_wait(b, s, TEST_HANG_GUARD_NS), -ESTALE);
	barrierd_close(b);
}

static void fallback_after_bound(void **state)
{
	struct fx *f = *state;
	struct barrierd *fb = open_fallback(f, 20 * TEST_MS);
	uint64_t s = stamp(fb);

	/* Live daemon, no evidence: after fallback_after_ns the wait finishes with membarrier. */
	assert_int_equal(barrierd_wait(fb, s, TEST_HANG_GUARD_NS), membarrier_result());
	assert_int_equal(barrierd_barrier(fb, TEST_HANG_GUARD_NS), membarrier_result());
	assert_false(barrierd_passed(fb, s));
	/* The handle without the fallback just times out. */
	assert_int_equal(barrierd_wait(f->b, s, 30 * TEST_MS), -ETIMEDOUT);
	barrierd_close(fb);
}

/*
 * membarrier proves a barrier only for stamps taken before the call began: the fallback never
 * answers a ns stamp above the clock read before its call, with the daemon live past
 * fallback_after_ns (1 ns: due at the first turn) or gone.  Such a stamp gets what the handle
 * without the fallback gets.
 */
static void fallback_future_ns_refused(void **state)
{
	struct fx *f = *state;
	struct barrierd *fb = open_fallback(f, 1);
	uint64_t future = stamp(fb) + 10 * TEST_SEC, cpus = (1ULL << NCPU) - 1;

	/* Live daemon, no evidence. */
	assert_int_equal(barrierd_wait(fb, future, TEST_HANG_GUARD_NS), -ESTALE);
	assert_int_equal(barrierd_wait(f->b, future, TEST_HANG_GUARD_NS), -ESTALE);
	assert_int_equal(barrierd_wait_cpus(fb, future, &cpus, sizeof(cpus), TEST_HANG_GUARD_NS),
			 -ESTALE);
	/* Control: a stamp taken before the call is the fallback's. */
	assert_int_equal(barrierd_wait(fb, stamp(fb), TEST_HANG_GUARD_NS), membarrier_result());
	daemon_dies(f);
	assert_int_equal(barrierd_wait(fb, future, STALE_WAIT_NS), -ESTALE);
	assert_int_equal(barrierd_wait(fb, stamp(fb), TEST_HANG_GUARD_NS), membarrier_result());
	barrierd_close(fb);
}

/* Likewise a vtime stamp above the file's vtime, loaded before the call. */
static void fallback_future_vtime_refused(void **state)
{
	struct fx *f = *state;
	struct barrierd *fb = open_fallback(f, 1);
	uint64_t vt = barrierd_stamp_vtime(fb), vfuture = vt + 1000000;

	/* Live daemon, no evidence: the daemon's answer, at the deadline. */
	assert_int_equal(barrierd_wait_vtime(fb, vfuture, 30 * TEST_MS), -ETIMEDOUT);
	assert_int_equal(barrierd_wait_vtime(f->b, vfuture, 30 * TEST_MS), -ETIMEDOUT);
	assert_int_equal(barrierd_wait_vtime(fb, vt, TEST_HANG_GUARD_NS), membarrier_result());
	/* Daemon gone: the fallback at once for what it proves, else the back-off and -ESTALE. */
	daemon_dies(f);
	assert_int_equal(barrierd_wait_vtime(fb, vfuture, STALE_WAIT_NS), -ESTALE);
	assert_int_equal(barrierd_wait_vtime(f->b, vfuture, STALE_WAIT_NS), -ESTALE);
	assert_int_equal(barrierd_wait_vtime(fb, vt, TEST_HANG_GUARD_NS), membarrier_result());
	barrierd_close(fb);
}

/* Make system call nr fail with err in this process, as a seccomp sandbox would. */
static int deny_syscall(unsigned nr, unsigned err)
{
	struct sock_filter insns[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(insns) / sizeof(insns[0]), .filter = insns};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -errno;
	return 0;
}

static int deny_membarrier(void)
{
	return deny_syscall(__NR_membarrier, EPERM);
}

/*
 * In a child with membarrier denied (EPERM, as seccomp would): one barrierd_wait() for s (or a
 * barrierd_barrier()) with the hang guard; its result.  A child, so that the filter does not
 * outlive the call.
 */
static int fallback_in_child(struct barrierd *fb, uint64_t s, bool barrier)
{
	int pfd[2], r[2] = {1, 1}, st = 0;
	pid_t pid;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		alarm(30);
		r[0] = deny_membarrier();
		r[1] = barrier ? barrierd_barrier(fb, TEST_HANG_GUARD_NS)
			       : barrierd_wait(fb, s, TEST_HANG_GUARD_NS);
		_exit(write(pfd[1], r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 1);
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], r, sizeof(r)), sizeof(r));
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(r[0], 0);
	return r[1];
}

/*
 * The fallback returns membarrier's error, never a success it did not get.  In a child, so
 * the seccomp filter does not outlive the test.
 */
static void fallback_error_returned(void **state)
{
	struct fx *f = *state;
	struct barrierd *fb = open_fallback(f, 0);
	uint64_t s = stamp(fb);

	daemon_dies(f); /* also stops the heartbeat thread: fork a single-threaded process */
	assert_int_equal(fallback_in_child(fb, s, false), -EPERM);
	assert_int_equal(fallback_in_child(fb, s, true), -EPERM);
	barrierd_close(fb);
}

/* Set or clear BARRIERD_CPUF_NUDGE on every CPU of the fake daemon's file (ABI 1.2). */
static void set_nudged(struct fx *f, bool on)
{
	uint64_t *flags = (uint64_t *)((uint8_t *)f->s.h + barrierd_cpu_flags_offset(f->s.ncpu));

	for (uint64_t c = 0; c < f->s.ncpu; c++)
		bd_store(&flags[c], on ? BARRIERD_CPUF_NUDGE : 0);
}

/*
 * membarrier unavailable (here EPERM, as under seccomp; EINVAL under nohz_full) while the
 * daemon is live and nudges every lagging CPU: the wait goes on with the daemon past
 * fallback_after_ns, until its timeout or its evidence, instead of returning the error.  With a
 * lagging CPU the daemon does not nudge, the error.  In a child, as above; the daemon's heartbeat
 * thread stays in this process and keeps it live through the shared mapping.
 */
static void fallback_unavailable_waits_for_daemon(void **state)
{
	struct fx *f = *state;
	struct barrierd *fb = open_fallback(f, 10 * TEST_MS);
	uint64_t s = stamp(fb), s2;
	int pfd[2], res[3] = {1, 1, 1}, st = 0;
	pid_t pid;

	set_nudged(f, true);
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int r[3];

		close(pfd[0]);
		alarm(30);
		r[0] = deny_membarrier();
		r[1] = barrierd_wait(fb, s, 60 * TEST_MS);
		if (write(pfd[1], r, sizeof(int) * 2) != (ssize_t)(sizeof(int) * 2))
			_exit(1);
		r[2] = barrierd_wait(fb, s, TEST_HANG_GUARD_NS);
		_exit(write(pfd[1], &r[2], sizeof(int)) == (ssize_t)sizeof(int) ? 0 : 1);
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], res, sizeof(int) * 2), sizeof(int) * 2);
	/* The child now waits with the hang guard: the evidence ends it. */
	test_sleep_ms(20);
	fake_credit_all(&f->s, s + 1);
	assert_int_equal(read(pfd[0], &res[2], sizeof(int)), sizeof(int));
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(res[0], 0);
	assert_int_equal(res[1], -ETIMEDOUT);
	assert_int_equal(res[2], 0);

	/* No nudge for the lagging CPUs: membarrier's error, after fallback_after_ns. */
	set_nudged(f, false);
	s2 = stamp(fb);
	assert_int_equal(fallback_in_child(fb, s2, false), -EPERM);
	barrierd_close(fb);
}

/*
 * A restarted daemon updates the same inode in place: bumps the generation, keeps every value
 * (none may go back within a boot), resumes vtime above all of them.  A handle opened before
 * the restart keeps working.
 */
static void restart_keeps_handle(void **state)
{
	struct fx *f = *state;
	struct fake_daemon *s = &f->s;
	struct adv a = {.s = s, .act = act_all};
	uint64_t vmax, gen = bd_load(&s->h->generation);

	a.after = stamp(f->b);
	daemon_dies(f);
	assert_int_equal(barrierd_wait(f->b, a.after, TEST_HANG_GUARD_NS), -ESTALE);

	vmax = bd_load(&s->h->vtime);
	for (uint64_t c = 0; c < s->ncpu; c++) {
		uint64_t v = bd_load(&s->h->per_cpu[c].last_interrupt_vtime);

		vmax = v > vmax ? v : vmax;
	}
	bd_store(&s->h->vtime, vmax + 1);
	bd_store(&s->h->generation, gen + 1);
	bd_store(&s->h->daemon_pid, s->h->daemon_pid + 1);
	bd_store(&s->h->heartbeat_ns, bd_mono_ns());
	bd_store(&s->h->flags, BARRIERD_FLAG_RUNNING | FEATS);
	assert_int_equal(fake_start_ticker(s, 0), 0);

	a.sleeper = &s->h->last_interrupt_ns;
	adv_start(&a);
	assert_int_equal(barrierd_wait(f->b, a.after, TEST_HANG_GUARD_NS), 0);
	adv_join(&a);
	assert_true(a.saw_sleeper);
	assert_int_equal(barrierd_mapping(f->b, NULL)->generation, gen + 1);
}

static void barrier_with_busy_machine(void **state)
{
	struct fx *f = *state;
	struct adv a = {.s = &f->s, .act = act_tick};

	adv_start(&a);
	for (int i = 0; i < 5; i++)
		assert_int_equal(barrierd_barrier(f->b, TEST_HANG_GUARD_NS), 0);
	adv_join(&a);
}

/* ---------------------------------------------------------------------------------------- */
/* wait_cpus()                                                                               */
/* ---------------------------------------------------------------------------------------- */

static void wait_cpus_subset(void **state)
{
	struct fx *f = *state;
	uint64_t s = stamp(f->b);
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	/* CPU 0 at the stamp exactly has not passed it. */
	fake_credit(&f->s, 0, s);
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, sizeof(set), 0), -ETIMEDOUT);
	/* CPU 0 passed, CPU 1 (and so the global value) lags. */
	fake_credit(&f->s, 0, s + 1);
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, sizeof(set), 0), 0);
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, sizeof(set), TEST_HANG_GUARD_NS), 0);
	assert_false(barrierd_passed(f->b, s));
	assert_int_equal(barrierd_wait(f->b, s, 0), -ETIMEDOUT);
	CPU_SET(1, &set);
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, sizeof(set), 20 * TEST_MS), -ETIMEDOUT);
	CPU_ZERO(&set);
	CPU_SET(1, &set);
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, sizeof(set), 0), -ETIMEDOUT);
}

static void wait_cpus_woken_by_daemon(void **state)
{
	struct fx *f = *state;
	struct adv a = {.s = &f->s, .act = act_cpu, .cpu = 0};
	cpu_set_t set;

	/* CPU 1 is idle and lags, outside the set; the stamp is served: no ring, a sleep. */
	fake_set_state(&f->s, 1, BARRIERD_CPU_IDLE);
	assert_int_equal(fake_start_doorbell(&f->s, FAKE_CREDIT_NONE), 0);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	a.after = stamp(f->b);
	bd_store(&f->s.x->served_ns, a.after);
	/* futex_waitv on CPU 0's word, shared. */
	a.sleeper = &f->s.h->per_cpu[0].last_interrupt_ns;
	adv_start(&a);
	assert_int_equal(barrierd_wait_cpus(f->b, a.after, &set, sizeof(set), TEST_HANG_GUARD_NS),
			 0);
	adv_join(&a);
	assert_true(a.saw_sleeper);
	assert_false(barrierd_passed(f->b, a.after));
	assert_int_equal(fake_rings(&f->s), 0);
}

static void wait_cpus_many(void **state)
{
	struct fx *f = *state;
	struct adv a = {.s = &f->s, .act = act_all};
	cpu_set_t set;

	CPU_ZERO(&set);
	for (int c = 0; c < 200; c++)
		CPU_SET(c, &set);
	a.after = stamp(f->b);
	/* 200 lagging CPUs: 127 per-CPU words and the global one. */
	a.sleeper = &f->s.h->last_interrupt_ns;
	adv_start(&a);
	assert_int_equal(barrierd_wait_cpus(f->b, a.after, &set, sizeof(set), TEST_HANG_GUARD_NS),
			 0);
	adv_join(&a);
	assert_true(a.saw_sleeper);
}

static void wait_cpus_bad_arguments(void **state)
{
	struct fx *f = *state;
	uint64_t s = stamp(f->b);
	cpu_set_t set;

	fake_credit_all(&f->s, s + 1);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, 0, 0), -EINVAL);
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, 3, 0), -EINVAL);
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, sizeof(long) + 1, 0), -EINVAL);
	assert_int_equal(barrierd_wait_cpus(f->b, s, NULL, sizeof(set), 0), -EINVAL);
	assert_int_equal(barrierd_wait_cpus(NULL, s, &set, sizeof(set), 0), -EINVAL);
	assert_int_equal(barrierd_wait_cpus(f->b, barrierd_open_ns(f->b), &set, sizeof(set), 0),
			 -EINVAL);
	/* A smaller set than cpu_set_t is fine when it is whole longs. */
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, sizeof(long), 0), 0);
}

/* ---------------------------------------------------------------------------------------- */
/* A restart between two loads of the library (lib/trusted.c)                                */
/* ---------------------------------------------------------------------------------------- */

/* The flags a started daemon of ours publishes here (the same as fake_fill's). */
#define RUN_FLAGS (BARRIERD_FLAG_RUNNING | FEATS | BARRIERD_FEAT_SERVED)

/*
 * Our daemon stops (the stop snapshot, then the stopped flag), then another writer (the
 * original barrierd) raises every time word to ns and vtime.  Plain stores and no lock: also
 * run from the access hook's signal handler, while no other thread publishes.
 */
static void stop_and_take_over(struct fake_daemon *s, uint64_t ns, uint64_t vtime)
{
	struct barrierd_header *h = s->h;

	bd_store(&s->x->stop_ns, bd_load(&h->last_interrupt_ns));
	bd_store(&s->x->stop_vtime, bd_load(&h->last_interrupt_vtime));
	bd_store(&h->flags,
		 (bd_load(&h->flags) & ~BARRIERD_FLAGS_STATE_MASK) | BARRIERD_FLAG_STOPPED);
	/* The other writer, after the stopped flag. */
	if (bd_load(&h->vtime) <= vtime)
		bd_store(&h->vtime, vtime + 1);
	for (uint64_t c = 0; c < s->ncpu; c++) {
		bd_store(&h->per_cpu[c].last_interrupt_ns, ns);
		bd_store(&h->per_cpu[c].last_interrupt_vtime, vtime);
	}
	bd_store(&h->last_interrupt_ns, ns);
	bd_store(&h->last_interrupt_vtime, vtime);
}

/*
 * The next daemon of ours, as src/state_file.c treats a file changed after its stop: the
 * reset (vtime raised; every other word but ncpu zeroed, the stop snapshot and the generation
 * included; stopped), then its start (generation + 1, heartbeat, then RUNNING).  Single
 * ordered stores, no lock (see above).
 */
static void restart_with_reset(struct fake_daemon *s)
{
	struct barrierd_header *h = s->h;
	uint64_t vmax = bd_load(&h->vtime);

	for (uint64_t c = 0; c < s->ncpu; c++) {
		uint64_t v = bd_load(&h->per_cpu[c].last_interrupt_vtime);

		vmax = v > vmax ? v : vmax;
	}
	bd_store(&h->vtime, vmax + 1);
	bd_store(&h->last_interrupt_ns, 0);
	bd_store(&h->last_interrupt_vtime, 0);
	for (uint64_t c = 0; c < s->ncpu; c++) {
		bd_store(&h->per_cpu[c].last_interrupt_ns, 0);
		bd_store(&h->per_cpu[c].last_interrupt_vtime, 0);
	}
	bd_store(&s->x->stop_ns, 0);
	bd_store(&s->x->stop_vtime, 0);
	bd_store(&h->flags, 0);
	bd_store(&h->generation, 0);
	bd_store(&h->flags, BARRIERD_FLAG_STOPPED);
	/* The start. */
	bd_store(&h->generation, bd_load(&h->generation) + 1);
	bd_store(&h->heartbeat_ns, bd_mono_ns());
	bd_store(&h->flags, RUN_FLAGS);
}

/* What happens between the library's loads, in the library's order (access_hook.h). */
struct plot {
	struct fake_daemon *s;
	const char *take_over_at;  /* before this load: stop_and_take_over (NULL: not played) */
	const char *restart_after; /* once this word was loaded: restart before the next load */
	const char *flags, *gen;   /*   of the flags or the generation (the library's mapping) */
	uint64_t ns, vtime;	   /* what the other writer stores */
	int taken_over, restart_armed, restarted;
};

static int plot_step(const char *a, void *arg)
{
	struct plot *p = arg;

	if (a == p->take_over_at && !p->taken_over) {
		stop_and_take_over(p->s, p->ns, p->vtime);
		p->taken_over = 1;
	}
	if (a == p->restart_after) {
		p->restart_armed = 1;
	} else if (p->restart_armed && (a == p->flags || a == p->gen)) {
		restart_with_reset(p->s);
		p->restarted = 1;
		return AH_DONE;
	}
	return AH_GO_ON;
}

static struct plot plot_for(struct fx *f, const uint64_t *take_over_at,
			    const uint64_t *restart_after, uint64_t ns, uint64_t vtime)
{
	const struct barrierd_header *lib = barrierd_mapping(f->b, NULL);

	return (struct plot){.s = &f->s,
			     .take_over_at = (const char *)take_over_at,
			     .restart_after = (const char *)restart_after,
			     .flags = (const char *)&lib->flags,
			     .gen = (const char *)&lib->generation,
			     .ns = ns,
			     .vtime = vtime};
}

/* Arm the hook on the library's mapping with this plot. */
static void play(struct fx *f, struct plot *p)
{
	size_t size;
	const struct barrierd_header *lib = barrierd_mapping(f->b, &size);

	assert_int_equal(ah_arm(lib, size, plot_step, p), 0);
}

static void played(struct plot *p)
{
	ah_disarm();
	assert_true(p->restarted); /* the library did load the words of the plot */
}

/* barrierd_wait_cpus for every CPU, without sleeping. */
static int wait_all_cpus(struct fx *f, uint64_t t)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	for (int c = 0; c < NCPU; c++)
		CPU_SET(c, &set);
	return barrierd_wait_cpus(f->b, t, &set, sizeof(set), 0);
}

enum lib_read { READ_PASSED, READ_PASSED_VTIME, READ_WAIT_ALL_CPUS };

/*
 * One read of the library with the plot played between its loads: barrierd_passed or
 * barrierd_passed_vtime of stamp (1: trusted), or wait_all_cpus (its result).
 */
static int read_under(struct fx *f, struct plot *p, enum lib_read what, uint64_t stamp)
{
	int r;

	play(f, p);
	if (what == READ_PASSED)
		r = barrierd_passed(f->b, stamp);
	else if (what == READ_PASSED_VTIME)
		r = barrierd_passed_vtime(f->b, stamp);
	else
		r = wait_all_cpus(f, stamp);
	played(p);
	return r;
}

/*
 * While the file is stopped, another writer raises every value past the stamps; the library,
 * reading a value, loads it, and before it loads the flags our next daemon resets the file
 * and starts (the generation, then RUNNING).  The value must not be trusted: it was loaded
 * before the reset, and the flags that say "running" belong to a daemon that never published
 * it.  Checked for barrierd_passed, barrierd_passed_vtime and the per-CPU branch of
 * barrierd_wait_cpus.  Flags loaded after the value alone (the old order) trust it.
 */
static void restart_between_value_and_flags(void **state)
{
	struct fx *f = *state;
	struct fake_daemon *s = &f->s;
	const struct barrierd_header *lib = barrierd_mapping(f->b, NULL);
	uint64_t t = stamp(f->b), v = barrierd_stamp_vtime(f->b);
	struct plot p;
	int ret;

	/* The stop rule itself (control): stopped, another writer's values are capped. */
	stop_and_take_over(s, t + TEST_MS, v + 100);
	assert_false(barrierd_passed(f->b, t));
	assert_false(barrierd_passed_vtime(f->b, v));

	p = plot_for(f, NULL, &lib->last_interrupt_ns, 0, 0);
	if (read_under(f, &p, READ_PASSED, t))
		fail_msg("barrierd_passed: a value another writer stored while the file was "
			 "stopped, loaded before a restart, was trusted by flags loaded after it");
	assert_int_equal(bd_load(&s->h->last_interrupt_ns), 0); /* the reset did happen */

	stop_and_take_over(s, t + TEST_MS, v + 100);
	p = plot_for(f, NULL, &lib->last_interrupt_vtime, 0, 0);
	if (read_under(f, &p, READ_PASSED_VTIME, v))
		fail_msg("barrierd_passed_vtime: a stopped file's foreign vtime was trusted "
			 "across a restart");

	/* Per-CPU values: the restart after the last CPU of the set, before the flags. */
	stop_and_take_over(s, t + TEST_MS, v + 100);
	assert_int_equal(wait_all_cpus(f, t), -ESTALE);
	p = plot_for(f, NULL, &lib->per_cpu[NCPU - 1].last_interrupt_ns, 0, 0);
	ret = read_under(f, &p, READ_WAIT_ALL_CPUS, t);
	if (ret == 0)
		fail_msg("barrierd_wait_cpus: per-CPU values of another writer, loaded while "
			 "the file was stopped, were trusted across a restart");
	assert_int_equal(ret, -ETIMEDOUT); /* the new daemon is live; its values are 0 */
}

/*
 * The same with a generation that repeats.  The daemon's reset zeroes the generation, so a
 * daemon that starts after a reset has generation 1, like the first daemon on a new file.
 * Here the library loads the flags (running, generation 1); then that daemon stops and
 * another writer raises the values; the library loads a value; then a daemon resets the file
 * and starts at generation 1 again; the library loads flags and generation: "running, 1"
 * both times.  Equal generations alone would trust the value.
 */
static void restart_repeats_generation(void **state)
{
	struct fx *f = *state;
	struct fake_daemon *s = &f->s;
	const struct barrierd_header *lib = barrierd_mapping(f->b, NULL);
	uint64_t t = stamp(f->b), v = barrierd_stamp_vtime(f->b);
	struct plot p;
	int r;
	int ret;

	assert_int_equal(bd_load(&s->h->generation), 1);
	p = plot_for(f, &lib->last_interrupt_ns, &lib->last_interrupt_ns, t + TEST_MS, v + 100);
	r = read_under(f, &p, READ_PASSED, t);
	assert_true(p.taken_over);
	assert_int_equal(bd_load(&s->h->generation), 1); /* repeated */
	if (r)
		fail_msg("barrierd_passed: a foreign value trusted across a reset and a restart "
			 "that repeated the generation");

	p = plot_for(f, &lib->last_interrupt_vtime, &lib->last_interrupt_vtime, t + TEST_MS,
		     bd_load(&s->h->vtime) + 100);
	v = barrierd_stamp_vtime(f->b);
	if (read_under(f, &p, READ_PASSED_VTIME, v))
		fail_msg("barrierd_passed_vtime: a foreign vtime trusted across a restart that "
			 "repeated the generation");

	p = plot_for(f, &lib->per_cpu[0].last_interrupt_ns,
		     &lib->per_cpu[NCPU - 1].last_interrupt_ns, t + TEST_MS, v + 100);
	ret = read_under(f, &p, READ_WAIT_ALL_CPUS, t);
	if (ret == 0)
		fail_msg("barrierd_wait_cpus: foreign per-CPU values trusted across a restart "
			 "that repeated the generation");
	assert_int_equal(ret, -ETIMEDOUT);
}

/* ---------------------------------------------------------------------------------------- */
/* An extension laid out after the handle was opened                                         */
/* ---------------------------------------------------------------------------------------- */

/* Our daemon starts: generation, heartbeat, then the flags with RUNNING (and its thread). */
static void start_daemon(struct fake_daemon *s)
{
	bd_store(&s->h->generation, bd_load(&s->h->generation) + 1);
	bd_store(&s->h->heartbeat_ns, bd_mono_ns());
	bd_store(&s->h->flags, RUN_FLAGS);
	assert_int_equal(fake_start_ticker(s, 0), 0);
}

/* A new (or reset) file as our daemon lays it out before its start: stopped, no features. */
static void laid_out_not_started(struct fake_daemon *s)
{
	fake_stop_ticker(s);
	bd_store(&s->h->flags, BARRIERD_FLAG_STOPPED);
}

/* CPU 1 is idle and lags, CPU 0 passed: only a ring (and the daemon's credit) ends the wait. */
static int wait_needing_ring(struct fx *f, struct barrierd *b)
{
	uint64_t t = stamp(b);
	int ret;

	fake_credit(&f->s, 0, t + 1);
	fake_set_state(&f->s, 1, BARRIERD_CPU_IDLE);
	assert_int_equal(fake_start_doorbell(&f->s, FAKE_CREDIT_IDLE), 0);
	/* Without a ring this times out; with one it ends within a few milliseconds. */
	ret = barrierd_wait(b, t, 2 * TEST_SEC);
	fake_stop_doorbell(&f->s);
	return ret;
}

/*
 * A handle opened while the file was laid out but not started, without the extension's feature
 * bit, must pick the extension up when the daemon starts: otherwise it never rings.
 */
static void extension_after_open_rings(void **state)
{
	struct fx *f = *state;
	struct barrierd *b = NULL;

	laid_out_not_started(&f->s);
	assert_int_equal(fake_open_lib(&b, f->s.path, NULL), 0);
	start_daemon(&f->s);
	if (wait_needing_ring(f, b) != 0 || fake_rings(&f->s) == 0)
		fail_msg("a handle opened before the extension appeared never rang the doorbell");
	barrierd_close(b);
}

/*
 * The same handle must use the stop snapshot: evidence published before the daemon stopped
 * stays evidence (without the extension the library trusts nothing of a stopped file).  Also
 * for a poller, whose one slow call is barrierd_request().
 */
static void extension_after_open_stop_snapshot(void **state)
{
	struct fx *f = *state;
	struct barrierd *b = NULL, *poller = NULL;
	uint64_t t;

	laid_out_not_started(&f->s);
	assert_int_equal(fake_open_lib(&b, f->s.path, NULL), 0);
	assert_int_equal(fake_open_lib(&poller, f->s.path, NULL), 0);
	start_daemon(&f->s);
	t = stamp(b);
	fake_credit_all(&f->s, t + 1);
	fake_stop_ticker(&f->s);
	fake_stop(&f->s);
	assert_true(f->s.x->stop_ns > t);
	assert_true(barrierd_passed(f->b, t)); /* control: a handle that had the extension */
	assert_int_equal(barrierd_wait(b, t, TEST_HANG_GUARD_NS), 0);
	assert_int_equal(barrierd_request(poller), 0);
	assert_true(barrierd_passed(poller, t));
	barrierd_close(poller);
	barrierd_close(b);
}

/*
 * The file had no room for the extension when the handle mapped it; the daemon then grew it,
 * laid the extension out and started.  The library maps the longer file (keeping the first
 * mapping) and uses the extension.
 */
static void extension_after_growth(void **state)
{
	struct fx *f = *state;
	struct fake_daemon *s = &f->s;
	struct barrierd_ext *x = s->x;
	uint64_t xo = barrierd_ext_offset(s->ncpu);
	struct barrierd *b = NULL;
	size_t size = 0;

	laid_out_not_started(s);
	bd_store(&s->h->ext_offset, 0);
	assert_int_equal(truncate(s->path, (off_t)xo), 0); /* the fake must not touch x now */
	assert_int_equal(fake_open_lib(&b, s->path, NULL), 0);
	barrierd_mapping(b, &size);
	assert_int_equal(size, xo);

	/* The daemon grows the file (zeros), lays the extension out, then starts. */
	assert_int_equal(truncate(s->path, (off_t)s->size), 0);
	bd_store(&x->ext_size, s->size - xo);
	x->ext_header_size = sizeof(*x);
	x->ext_cpu_stride = sizeof(struct barrierd_ext_cpu);
	for (uint64_t c = 0; c < s->ncpu; c++)
		bd_store(&x->cpu[c].state, BARRIERD_CPU_BUSY);
	bd_store(&s->h->ext_offset, xo);
	start_daemon(s);

	if (wait_needing_ring(f, b) != 0 || fake_rings(s) == 0)
		fail_msg("a handle whose mapping was too short for the extension never rang");
	barrierd_mapping(b, &size);
	assert_int_equal(size, s->size);
	barrierd_close(b);
}

/* ---------------------------------------------------------------------------------------- */
/* futex_waitv refused (ENOSYS before Linux 5.16, EPERM or ENOSYS under seccomp)             */
/* ---------------------------------------------------------------------------------------- */

static uint64_t cpu_time_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * TEST_SEC +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * TEST_US;
}

struct nowaitv_res {
	int denied;	    /* deny_syscall's result */
	int timed_out;	    /* the wait that must time out */
	uint64_t wall, cpu; /* its length and the CPU time it used */
	int woken;	    /* the wait that the daemon ends */
};

/*
 * In a child (the filter must not outlive the test): futex_waitv fails with err.  A wait_cpus
 * that nothing ends must time out without spinning (its CPU time well under its length), and
 * one that the daemon ends must sleep on a futex that the daemon's publication wakes.
 */
static void nowaitv_case(struct fx *f, int err)
{
	const int64_t wait_ns = 200 * TEST_MS;
	struct adv a = {.s = &f->s, .act = act_cpu, .cpu = 0};
	struct nowaitv_res res = {.denied = 1};
	uint64_t t = stamp(f->b);
	cpu_set_t set;
	int pfd[2], st = 0;
	pid_t pid;

	/* CPU 0 lags and is busy, the daemon has served t: no ring, the wait just sleeps. */
	bd_store(&f->s.x->served_ns, t);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct nowaitv_res c = {0};
		uint64_t w0, c0;

		close(pfd[0]);
		alarm(30);
		c.denied = deny_syscall(SYS_futex_waitv, (unsigned)err);
		w0 = bd_mono_ns();
		c0 = cpu_time_ns();
		c.timed_out = barrierd_wait_cpus(f->b, t, &set, sizeof(set), wait_ns);
		c.cpu = cpu_time_ns() - c0;
		c.wall = bd_mono_ns() - w0;
		if (write(pfd[1], &c, sizeof(c)) != (ssize_t)sizeof(c))
			_exit(1);
		c.woken = barrierd_wait_cpus(f->b, t, &set, sizeof(set), TEST_HANG_GUARD_NS);
		_exit(write(pfd[1], &c, sizeof(c)) == (ssize_t)sizeof(c) ? 0 : 1);
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &res, sizeof(res)), sizeof(res));
	/* Then the daemon credits CPU 0, once the child sleeps on CPU 0's word. */
	a.after = t;
	a.sleeper = &f->s.h->per_cpu[0].last_interrupt_ns;
	adv_start(&a);
	assert_int_equal(read(pfd[0], &res, sizeof(res)), sizeof(res));
	adv_join(&a);
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(res.denied, 0);
	assert_int_equal(res.timed_out, -ETIMEDOUT);
	assert_true(res.wall >= (uint64_t)wait_ns); /* not early */
	print_message("futex_waitv -> %s: %.1f ms of CPU in a %.1f ms wait\n",
		      err == ENOSYS ? "ENOSYS" : "EPERM", res.cpu / 1e6, res.wall / 1e6);
	if (res.cpu * 4 > res.wall)
		fail_msg("without futex_waitv (%s) the wait spun: %.1f ms of CPU in %.1f ms",
			 err == ENOSYS ? "ENOSYS" : "EPERM", res.cpu / 1e6, res.wall / 1e6);
	assert_int_equal(res.woken, 0);
	assert_true(a.saw_sleeper); /* it slept on the lagging CPU's word, as a shared futex */
}

static void wait_cpus_without_futex_waitv(void **state)
{
	nowaitv_case(*state, ENOSYS);
	nowaitv_case(*state, EPERM);
}

/*
 * What memcheck cannot run (tests/sanitize/valgrind.sh sets BARRIERD_TEST_VALGRIND=1): the access
 * hook's tests, since valgrind's synthetic CPU ignores EFLAGS.TF and so never ends the hook's
 * single step (the mapping stays readable and the plot is never played, or stays PROT_NONE and
 * the library faults), and wait_cpus_many, whose waiter must sleep in futex_waitv, a call
 * valgrind 3.19 does not know (ENOSYS: the library falls back to short sleeps).
 */
static const char *const not_under_valgrind[] = {
    "wait_cpus_many",
    "restart_between_value_and_flags",
    "restart_repeats_generation",
};

static bool runs_under_valgrind(const char *name)
{
	const char *env = getenv("BARRIERD_TEST_VALGRIND");

	if (!env || strcmp(env, "1") != 0)
		return true;
	for (size_t i = 0; i < sizeof(not_under_valgrind) / sizeof(not_under_valgrind[0]); i++)
		if (strcmp(name, not_under_valgrind[i]) == 0)
			return false;
	return true;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(passed_is_strict, setup, teardown),
	    cmocka_unit_test_setup_teardown(passed_refuses_stamps_before_open, setup, teardown),
	    cmocka_unit_test_setup_teardown(passed_vtime_is_strict, setup, teardown),
	    cmocka_unit_test_setup_teardown(wait_fast_path, setup, teardown),
	    cmocka_unit_test_setup_teardown(wait_woken_by_daemon, setup, teardown),
	    cmocka_unit_test_setup_teardown(wait_vtime_woken_by_daemon, setup, teardown),
	    cmocka_unit_test_setup_teardown(wait_times_out, setup, teardown),
	    cmocka_unit_test_setup_teardown(wait_refuses_stamps_before_open, setup, teardown),
	    cmocka_unit_test_setup_teardown(wait_sees_high_half_change, setup, teardown),
	    cmocka_unit_test_setup_teardown(rings_for_idle, setup, teardown),
	    cmocka_unit_test_setup_teardown(rings_for_unknown, setup, teardown),
	    cmocka_unit_test_setup_teardown(rings_for_offline, setup, teardown),
	    cmocka_unit_test_setup_teardown(rings_for_daemon_cpu, setup, teardown),
	    cmocka_unit_test_setup_teardown(rings_for_idle_at_stamp, setup, teardown),
	    cmocka_unit_test_setup_teardown(no_ring_when_served_busy, setup, teardown),
	    cmocka_unit_test_setup_teardown(no_ring_when_served_idle, setup, teardown),
	    cmocka_unit_test_setup_teardown(no_ring_when_served_cpus, setup, teardown),
	    cmocka_unit_test_setup_teardown(no_ring_without_doorbell_feature, setup, teardown),
	    cmocka_unit_test_setup_teardown(rings_when_stamp_above_served, setup, teardown),
	    cmocka_unit_test_setup_teardown(rings_without_served_feature, setup, teardown),
	    cmocka_unit_test_setup_teardown(lost_ring_rings_again, setup, teardown),
	    cmocka_unit_test_setup_teardown(vtime_rings_past_served, setup, teardown),
	    cmocka_unit_test_setup_teardown(vtime_rings_every_turn, setup, teardown),
	    cmocka_unit_test_setup_teardown(sleeper_is_marked, setup, teardown),
	    cmocka_unit_test_setup_teardown(request_rings, setup, teardown),
	    cmocka_unit_test_setup_teardown(stale_stopped_flag, setup, teardown),
	    cmocka_unit_test_setup_teardown(stale_not_running, setup, teardown),
	    cmocka_unit_test_setup_teardown(stale_heartbeat, setup, teardown),
	    cmocka_unit_test_setup_teardown(stale_but_already_passed, setup, teardown),
	    cmocka_unit_test_setup_teardown(values_after_stop_not_trusted, setup, teardown),
	    cmocka_unit_test_setup_teardown(stopped_without_extension_trusts_nothing, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(fallback_after_bound, setup, teardown),
	    cmocka_unit_test_setup_teardown(fallback_future_ns_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(fallback_future_vtime_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(fallback_unavailable_waits_for_daemon, setup, teardown),
	    cmocka_unit_test_setup_teardown(fallback_error_returned, setup, teardown),
	    cmocka_unit_test_setup_teardown(restart_keeps_handle, setup, teardown),
	    cmocka_unit_test_setup_teardown(barrier_with_busy_machine, setup, teardown),
	    cmocka_unit_test_setup_teardown(wait_cpus_subset, setup, teardown),
	    cmocka_unit_test_setup_teardown(wait_cpus_woken_by_daemon, setup, teardown),
	    cmocka_unit_test_setup_teardown(wait_cpus_many, setup_200, teardown),
	    cmocka_unit_test_setup_teardown(wait_cpus_bad_arguments, setup, teardown),
	    cmocka_unit_test_setup_teardown(restart_between_value_and_flags, setup, teardown),
	    cmocka_unit_test_setup_teardown(restart_repeats_generation, setup, teardown),
	    cmocka_unit_test_setup_teardown(extension_after_open_rings, setup, teardown),
	    cmocka_unit_test_setup_teardown(extension_after_open_stop_snapshot, setup, teardown),
	    cmocka_unit_test_setup_teardown(extension_after_growth, setup, teardown),
	    cmocka_unit_test_setup_teardown(wait_cpus_without_futex_waitv, setup, teardown),
	};
	struct CMUnitTest run[sizeof(tests) / sizeof(tests[0])];
	size_t n = 0;

	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (runs_under_valgrind(tests[i].name))
			run[n++] = tests[i];
	return _cmocka_run_group_tests("test_lib_wait", run, n, NULL, NULL);
}
