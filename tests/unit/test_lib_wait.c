// SPDX-License-Identifier: MIT
/*
 * passed() and the waits against a simulated daemon: strict comparisons, futex wake-ups on the
 * right words, the bounded sleep that catches a change in a word's high half, the doorbell
 * (rung only for idle/offline/unknown/daemon CPUs at or below the stamp), a stale daemon,
 * the membarrier fallback and its errors, a daemon restart under an open handle, and
 * wait_cpus.
 *
 * Timeouts here are hang guards (seconds) or deliberately short waits that must time out;
 * nothing asserts how long anything took.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
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
#include <sys/wait.h>
#include <unistd.h>

#include "sim_daemon.h"

#define NCPU 2
#define FEATS (BARRIERD_FEAT_EXTENSION | BARRIERD_FEAT_DOORBELL)

struct fx {
	struct sim s;
	struct barrierd *b;
};

static int setup_ncpu(void **state, uint64_t ncpu)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	*state = f;
	if (sim_create(&f->s, ncpu) || sim_start_heartbeat(&f->s))
		return -1;
	return sim_open_lib(&f->b, f->s.path, NULL) ? -1 : 0;
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
	sim_stop_doorbell(&f->s);
	sim_stop_heartbeat(&f->s);
	barrierd_close(f->b);
	sim_destroy(&f->s);
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

	assert_int_equal(sim_open_lib(&b, f->s.path, &o), 0);
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
	sim_stop_heartbeat(&f->s);
	sim_stop_daemon(&f->s);
}

/* ---------------------------------------------------------------------------------------- */
/* The simulated daemon's actions, run from a thread while the test waits                    */
/* ---------------------------------------------------------------------------------------- */

struct adv {
	struct sim *s;
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
	uint64_t n = sim_now();

	return n > t ? n : t + 1;
}

static void act_all(struct adv *a)
{
	sim_credit_all(a->s, later_than(a->after));
}

static void act_cpu(struct adv *a)
{
	sim_credit(a->s, a->cpu, later_than(a->after));
}

/*
 * Raise every ns word by exactly 2^32 with no FUTEX_WAKE: the low halves, the futex words,
 * do not change, so only a bounded futex sleep followed by a full 64-bit re-check sees it.
 * (The values are then ~4.3 s ahead of the clock; the library checks times only at open.)
 */
static void act_high_half(struct adv *a)
{
	struct sim *s = a->s;

	pthread_mutex_lock(&s->lock);
	for (uint64_t c = 0; c < s->ncpu; c++)
		sim_store(&s->h->per_cpu[c].last_interrupt_ns,
			  sim_load(&s->h->per_cpu[c].last_interrupt_ns) + (1ULL << 32));
	sim_store(&s->h->last_interrupt_ns, sim_load(&s->h->last_interrupt_ns) + (1ULL << 32));
	pthread_mutex_unlock(&s->lock);
}

/* A busy machine: every CPU brings fresh evidence every millisecond. */
static void act_tick(struct adv *a)
{
	while (!__atomic_load_n(&a->stop, __ATOMIC_ACQUIRE)) {
		sim_credit_all(a->s, sim_now());
		sim_sleep_ns(SIM_MS);
	}
}

static void *adv_main(void *arg)
{
	struct adv *a = arg;

	if (a->sleeper)
		a->saw_sleeper = sim_await_sleeper(a->sleeper, SIM_HANG_GUARD_NS / 2);
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
	sim_credit_all(&f->s, s - 1);
	assert_false(barrierd_passed(f->b, s));
	/* Equal is not evidence (BRIEF §3: the model finds a counterexample with >=). */
	sim_credit_all(&f->s, s);
	assert_int_equal(f->s.h->last_interrupt_ns, s);
	assert_false(barrierd_passed(f->b, s));
	assert_int_equal(barrierd_wait(f->b, s, 0), -ETIMEDOUT); /* the waits compare alike */
	sim_credit_all(&f->s, s + 1);
	assert_true(barrierd_passed(f->b, s));
	assert_false(barrierd_passed(f->b, s + 1));
}

static void passed_refuses_stamps_before_open(void **state)
{
	struct fx *f = *state;
	uint64_t o = barrierd_open_ns(f->b);

	/* The daemon moves far past open_ns; stamps at or below it still never pass. */
	sim_credit_all(&f->s, later_than(o) + SIM_SEC);
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

	assert_int_equal(v, sim_load(&f->s.h->vtime));
	assert_false(barrierd_passed_vtime(f->b, v));
	/* The global vtime reaching v exactly is not enough. */
	sim_store(&f->s.h->last_interrupt_vtime, v);
	assert_false(barrierd_passed_vtime(f->b, v));
	assert_int_equal(barrierd_wait_vtime(f->b, v, 0), -ETIMEDOUT);
	sim_store(&f->s.h->last_interrupt_vtime, v + 1);
	assert_true(barrierd_passed_vtime(f->b, v));
	assert_false(barrierd_passed_vtime(f->b, v + 1));
	/* stamp_vtime follows the published vtime. */
	sim_store(&f->s.h->vtime, v + 100);
	assert_int_equal(barrierd_stamp_vtime(f->b), v + 100);
}

/* ---------------------------------------------------------------------------------------- */
/* wait()                                                                                    */
/* ---------------------------------------------------------------------------------------- */

static void wait_fast_path(void **state)
{
	struct fx *f = *state;
	uint64_t s = stamp(f->b);

	sim_credit_all(&f->s, s + 1);
	assert_int_equal(barrierd_wait(f->b, s, 0), 0);
	assert_int_equal(barrierd_wait(f->b, s, SIM_HANG_GUARD_NS), 0);
}

static void wait_woken_by_daemon(void **state)
{
	struct fx *f = *state;
	struct adv a = {.s = &f->s, .act = act_all};

	a.after = stamp(f->b);
	/* The waiter must be found asleep on the global word's low half, as a shared futex. */
	a.sleeper = &f->s.h->last_interrupt_ns;
	adv_start(&a);
	assert_int_equal(barrierd_wait(f->b, a.after, SIM_HANG_GUARD_NS), 0);
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
	assert_int_equal(barrierd_wait_vtime(f->b, v, SIM_HANG_GUARD_NS), 0);
	adv_join(&a);
	assert_true(a.saw_sleeper);
	assert_true(barrierd_passed_vtime(f->b, v));
}

static void wait_times_out(void **state)
{
	struct fx *f = *state;
	uint64_t s = stamp(f->b);

	/* A live daemon whose busy CPUs bring no evidence: a short wait must time out. */
	assert_int_equal(barrierd_wait(f->b, s, 50 * SIM_MS), -ETIMEDOUT);
	assert_int_equal(barrierd_wait(f->b, s, 0), -ETIMEDOUT);
	assert_int_equal(barrierd_wait_vtime(f->b, barrierd_stamp_vtime(f->b), 20 * SIM_MS),
			 -ETIMEDOUT);
	assert_false(barrierd_passed(f->b, s));
}

static void wait_refuses_stamps_before_open(void **state)
{
	struct fx *f = *state;
	uint64_t o = barrierd_open_ns(f->b);

	sim_credit_all(&f->s, later_than(o) + SIM_SEC);
	assert_int_equal(barrierd_wait(f->b, o, SIM_HANG_GUARD_NS), -EINVAL);
	assert_int_equal(barrierd_wait(f->b, o - 1, SIM_HANG_GUARD_NS), -EINVAL);
	assert_int_equal(barrierd_wait(f->b, 0, SIM_HANG_GUARD_NS), -EINVAL);
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
	low_before = (uint32_t)sim_load(&f->s.h->last_interrupt_ns);
	a.sleeper = &f->s.h->last_interrupt_ns;
	adv_start(&a);
	assert_int_equal(barrierd_wait(f->b, a.after, SIM_HANG_GUARD_NS), 0);
	adv_join(&a);
	assert_true(a.saw_sleeper);
	/* The futex word itself never changed and was never woken after the poke. */
	assert_int_equal((uint32_t)sim_load(&f->s.h->last_interrupt_ns), low_before);
	assert_true(sim_load(&f->s.h->last_interrupt_ns) > a.after);
}

/* ---------------------------------------------------------------------------------------- */
/* The doorbell                                                                              */
/* ---------------------------------------------------------------------------------------- */

/*
 * CPU 0 is busy and past the stamp; CPU 1 holds the barrier back in `cpu_state`, at the stamp
 * or below it.  The wait must ring; the simulated doorbell thread then credits CPU 1, as the
 * daemon's idle/offline credit does, and the wait ends.
 */
static void ring_case(struct fx *f, uint64_t cpu_state, int at_stamp)
{
	uint64_t s = stamp(f->b);

	sim_credit(&f->s, 0, s + 1);
	if (at_stamp)
		sim_credit(&f->s, 1, s);
	sim_set_state(&f->s, 1, cpu_state);
	assert_int_equal(sim_start_doorbell(&f->s, SIM_CREDIT_IDLE), 0);
	assert_int_equal(barrierd_wait(f->b, s, SIM_HANG_GUARD_NS), 0);
	sim_stop_doorbell(&f->s);
	if (sim_rings(&f->s) < 1)
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
	uint64_t end = sim_now() + SIM_HANG_GUARD_NS;

	while (sim_rings(&f->s) == 0 && sim_now() < end) {
		assert_int_equal(barrierd_request(f->b), 0);
		sim_sleep_ns(SIM_MS);
	}
	assert_true(sim_rings(&f->s) > 0);
}

static void no_ring_when_lagging_cpus_busy(void **state)
{
	struct fx *f = *state;
	uint64_t s = stamp(f->b);

	/* CPU 1 is idle but already past the stamp; CPU 0, below it, is busy. */
	sim_credit(&f->s, 1, s + 1);
	sim_set_state(&f->s, 1, BARRIERD_CPU_IDLE);
	assert_int_equal(sim_start_doorbell(&f->s, SIM_CREDIT_NONE), 0);
	assert_int_equal(barrierd_wait(f->b, s, 200 * SIM_MS), -ETIMEDOUT);
	assert_int_equal(sim_rings(&f->s), 0);
	listener_hears_requests(f);
}

static void no_ring_without_doorbell_feature(void **state)
{
	struct fx *f = *state;
	uint64_t s = stamp(f->b);

	/* No daemon thread waits on the doorbell: ringing would only cost the client. */
	sim_store(&f->s.h->flags, BARRIERD_FLAG_RUNNING | BARRIERD_FEAT_EXTENSION);
	sim_set_state(&f->s, 1, BARRIERD_CPU_IDLE);
	assert_int_equal(sim_start_doorbell(&f->s, SIM_CREDIT_NONE), 0);
	assert_int_equal(barrierd_wait(f->b, s, 100 * SIM_MS), -ETIMEDOUT);
	assert_int_equal(sim_rings(&f->s), 0);
	listener_hears_requests(f);
}

/*
 * A disarmed daemon listens to no CPU until someone rings: then the waiter rings even though
 * every lagging CPU is busy.  The simulated daemon arms on the ring and its busy CPUs' events
 * reach it.
 */
static void rings_when_disarmed(void **state)
{
	struct fx *f = *state;
	uint64_t s = stamp(f->b);

	sim_store(&f->s.h->flags, BARRIERD_FLAG_RUNNING | FEATS);
	assert_int_equal(sim_start_doorbell(&f->s, SIM_CREDIT_ARM), 0);
	assert_int_equal(barrierd_wait(f->b, s, SIM_HANG_GUARD_NS), 0);
	sim_stop_doorbell(&f->s);
	assert_true(sim_rings(&f->s) >= 1);
	assert_true(sim_load(&f->s.h->flags) & BARRIERD_FLAG_ARMED);
}

static void request_rings(void **state)
{
	struct fx *f = *state;

	/* Nobody listening: the ring is lost, which is not an error. */
	assert_int_equal(barrierd_request(f->b), 0);
	assert_int_equal(sim_start_doorbell(&f->s, SIM_CREDIT_NONE), 0);
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
#define STALE_WAIT_NS (100 * SIM_MS)

static void stale_stopped_flag(void **state)
{
	struct fx *f = *state;
	struct barrierd *fb = open_fallback(f, 0);
	uint64_t s = stamp(f->b);

	/* The heartbeat thread keeps running: only the flags say the daemon stopped. */
	sim_store(&f->s.h->flags, BARRIERD_FLAG_STOPPED | FEATS);
	assert_int_equal(barrierd_wait(f->b, s, STALE_WAIT_NS), -ESTALE);
	assert_int_equal(barrierd_wait_vtime(f->b, barrierd_stamp_vtime(f->b), STALE_WAIT_NS),
			 -ESTALE);
	/* Stopped wins over running. */
	sim_store(&f->s.h->flags, BARRIERD_FLAG_RUNNING | BARRIERD_FLAG_STOPPED | FEATS);
	assert_int_equal(barrierd_wait(f->b, s, STALE_WAIT_NS), -ESTALE);
	/* With the fallback: membarrier's own result instead. */
	assert_int_equal(barrierd_wait(fb, stamp(fb), SIM_HANG_GUARD_NS), membarrier_result());
	assert_int_equal(barrierd_barrier(fb, SIM_HANG_GUARD_NS), membarrier_result());
	barrierd_close(fb);
}

static void stale_not_running(void **state)
{
	struct fx *f = *state;

	/* Neither flag (heartbeat still fresh): no daemon owns the file. */
	sim_store(&f->s.h->flags, FEATS);
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
	sim_stop_heartbeat(&f->s);
	for (int attempt = 0;; attempt++) {
		uint64_t hb = sim_now() - SIM_HB_PERIOD_NS / 2;
		int r;

		sim_store(&f->s.h->heartbeat_ns, hb);
		r = barrierd_wait(f->b, s, 10 * SIM_MS);
		if (sim_now() - hb > 3 * SIM_HB_PERIOD_NS && attempt < 5)
			continue;
		assert_int_equal(r, -ETIMEDOUT);
		break;
	}
	/* Older than three periods (the flags still say running): a dead or wedged daemon. */
	sim_store(&f->s.h->heartbeat_ns, sim_now() - 3 * SIM_HB_PERIOD_NS - 50 * SIM_MS);
	assert_int_equal(barrierd_wait(f->b, s, STALE_WAIT_NS), -ESTALE);
	assert_int_equal(barrierd_wait(fb, stamp(fb), SIM_HANG_GUARD_NS), membarrier_result());
	barrierd_close(fb);
}

static void stale_but_already_passed(void **state)
{
	struct fx *f = *state;
	uint64_t s = stamp(f->b);

	/* Evidence published before the daemon died stays evidence. */
	sim_credit_all(&f->s, s + 1);
	daemon_dies(f);
	assert_true(barrierd_passed(f->b, s));
	assert_int_equal(barrierd_wait(f->b, s, SIM_HANG_GUARD_NS), 0);
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
	sim_credit_all(&f->s, s + SIM_MS);
	assert_true(sim_load(&f->s.h->last_interrupt_ns) > s);
	assert_true(sim_load(&f->s.h->last_interrupt_vtime) > v);
	assert_false(barrierd_passed(f->b, s));
	assert_false(barrierd_passed_vtime(f->b, v));
	assert_int_equal(barrierd_wait(f->b, s, SIM_HANG_GUARD_NS), -ESTALE);
	assert_int_equal(barrierd_wait_vtime(f->b, v, SIM_HANG_GUARD_NS), -ESTALE);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, sizeof(set), SIM_HANG_GUARD_NS),
			 -ESTALE);
	assert_int_equal(barrierd_wait(fb, s, SIM_HANG_GUARD_NS), membarrier_result());
	barrierd_close(fb);
}

/* Without the extension there is no stop snapshot: a file not marked running proves nothing. */
static void stopped_without_extension_trusts_nothing(void **state)
{
	struct fx *f = *state;
	struct barrierd *b = NULL;
	uint64_t s;

	sim_store(&f->s.h->flags, BARRIERD_FLAG_RUNNING);
	assert_int_equal(sim_open_lib(&b, f->s.path, NULL), 0);
	s = stamp(b);
	sim_credit_all(&f->s, s + 1);
	assert_true(barrierd_passed(b, s)); /* control: running, the value counts */
	sim_stop_heartbeat(&f->s);
	sim_store(&f->s.h->flags, BARRIERD_FLAG_STOPPED);
	assert_false(barrierd_passed(b, s));
	assert_false(barrierd_passed_vtime(b, 0));
	assert_int_equal(barrierd_wait(b, s, SIM_HANG_GUARD_NS), -ESTALE);
	barrierd_close(b);
}

static void fallback_after_bound(void **state)
{
	struct fx *f = *state;
	struct barrierd *fb = open_fallback(f, 20 * SIM_MS);
	uint64_t s = stamp(fb);

	/* Live daemon, no evidence: after fallback_after_ns the wait finishes with membarrier. */
	assert_int_equal(barrierd_wait(fb, s, SIM_HANG_GUARD_NS), membarrier_result());
	assert_int_equal(barrierd_barrier(fb, SIM_HANG_GUARD_NS), membarrier_result());
	assert_false(barrierd_passed(fb, s));
	/* The handle without the fallback just times out. */
	assert_int_equal(barrierd_wait(f->b, s, 30 * SIM_MS), -ETIMEDOUT);
	barrierd_close(fb);
}

/* Make membarrier fail with EPERM in this process, as a seccomp sandbox would. */
static int deny_membarrier(void)
{
	struct sock_filter insns[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_membarrier, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(insns) / sizeof(insns[0]), .filter = insns};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -errno;
	return 0;
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
	int pfd[2], res[3] = {1, 1, 1}, st = 0;
	pid_t pid;

	daemon_dies(f); /* also stops the heartbeat thread: fork a single-threaded process */
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int r[3];

		close(pfd[0]);
		alarm(30);
		r[0] = deny_membarrier();
		r[1] = barrierd_wait(fb, s, SIM_HANG_GUARD_NS);
		r[2] = barrierd_barrier(fb, SIM_HANG_GUARD_NS);
		_exit(write(pfd[1], r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 1);
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], res, sizeof(res)), sizeof(res));
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(res[0], 0);
	assert_int_equal(res[1], -EPERM);
	assert_int_equal(res[2], -EPERM);
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
	struct sim *s = &f->s;
	struct adv a = {.s = s, .act = act_all};
	uint64_t vmax, gen = sim_load(&s->h->generation);

	a.after = stamp(f->b);
	daemon_dies(f);
	assert_int_equal(barrierd_wait(f->b, a.after, SIM_HANG_GUARD_NS), -ESTALE);

	vmax = sim_load(&s->h->vtime);
	for (uint64_t c = 0; c < s->ncpu; c++) {
		uint64_t v = sim_load(&s->h->per_cpu[c].last_interrupt_vtime);

		vmax = v > vmax ? v : vmax;
	}
	sim_store(&s->h->vtime, vmax + 1);
	sim_store(&s->h->generation, gen + 1);
	sim_store(&s->h->daemon_pid, s->h->daemon_pid + 1);
	sim_store(&s->h->heartbeat_ns, sim_now());
	sim_store(&s->h->flags, BARRIERD_FLAG_RUNNING | FEATS);
	assert_int_equal(sim_start_heartbeat(s), 0);

	a.sleeper = &s->h->last_interrupt_ns;
	adv_start(&a);
	assert_int_equal(barrierd_wait(f->b, a.after, SIM_HANG_GUARD_NS), 0);
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
		assert_int_equal(barrierd_barrier(f->b, SIM_HANG_GUARD_NS), 0);
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
	sim_credit(&f->s, 0, s);
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, sizeof(set), 0), -ETIMEDOUT);
	/* CPU 0 passed, CPU 1 (and so the global value) lags. */
	sim_credit(&f->s, 0, s + 1);
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, sizeof(set), 0), 0);
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, sizeof(set), SIM_HANG_GUARD_NS), 0);
	assert_false(barrierd_passed(f->b, s));
	assert_int_equal(barrierd_wait(f->b, s, 0), -ETIMEDOUT);
	CPU_SET(1, &set);
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, sizeof(set), 20 * SIM_MS), -ETIMEDOUT);
	CPU_ZERO(&set);
	CPU_SET(1, &set);
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, sizeof(set), 0), -ETIMEDOUT);
}

static void wait_cpus_woken_by_daemon(void **state)
{
	struct fx *f = *state;
	struct adv a = {.s = &f->s, .act = act_cpu, .cpu = 0};
	cpu_set_t set;

	/* CPU 1 is idle and lags, but is outside the set: no ring for it. */
	sim_set_state(&f->s, 1, BARRIERD_CPU_IDLE);
	assert_int_equal(sim_start_doorbell(&f->s, SIM_CREDIT_NONE), 0);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	a.after = stamp(f->b);
	/* futex_waitv on CPU 0's word, shared. */
	a.sleeper = &f->s.h->per_cpu[0].last_interrupt_ns;
	adv_start(&a);
	assert_int_equal(barrierd_wait_cpus(f->b, a.after, &set, sizeof(set), SIM_HANG_GUARD_NS),
			 0);
	adv_join(&a);
	assert_true(a.saw_sleeper);
	assert_false(barrierd_passed(f->b, a.after));
	assert_int_equal(sim_rings(&f->s), 0);
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
	assert_int_equal(barrierd_wait_cpus(f->b, a.after, &set, sizeof(set), SIM_HANG_GUARD_NS),
			 0);
	adv_join(&a);
	assert_true(a.saw_sleeper);
}

static void wait_cpus_bad_arguments(void **state)
{
	struct fx *f = *state;
	uint64_t s = stamp(f->b);
	cpu_set_t set;

	sim_credit_all(&f->s, s + 1);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, 0, 0), -EINVAL);
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, 3, 0), -EINVAL);
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, sizeof(long) + 1, 0), -EINVAL);
	assert_int_equal(barrierd_wait_cpus(f->b, s, NULL, sizeof(set), 0), -EINVAL);
	assert_int_equal(barrierd_wait_cpus(NULL, s, &set, sizeof(set), 0), -EINVAL);
	assert_int_equal(
		barrierd_wait_cpus(f->b, barrierd_open_ns(f->b), &set, sizeof(set), 0), -EINVAL);
	/* A smaller set than cpu_set_t is fine when it is whole longs. */
	assert_int_equal(barrierd_wait_cpus(f->b, s, &set, sizeof(long), 0), 0);
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
		cmocka_unit_test_setup_teardown(no_ring_when_lagging_cpus_busy, setup, teardown),
		cmocka_unit_test_setup_teardown(no_ring_without_doorbell_feature, setup, teardown),
		cmocka_unit_test_setup_teardown(rings_when_disarmed, setup, teardown),
		cmocka_unit_test_setup_teardown(request_rings, setup, teardown),
		cmocka_unit_test_setup_teardown(stale_stopped_flag, setup, teardown),
		cmocka_unit_test_setup_teardown(stale_not_running, setup, teardown),
		cmocka_unit_test_setup_teardown(stale_heartbeat, setup, teardown),
		cmocka_unit_test_setup_teardown(stale_but_already_passed, setup, teardown),
		cmocka_unit_test_setup_teardown(values_after_stop_not_trusted, setup, teardown),
		cmocka_unit_test_setup_teardown(stopped_without_extension_trusts_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(fallback_after_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(fallback_error_returned, setup, teardown),
		cmocka_unit_test_setup_teardown(restart_keeps_handle, setup, teardown),
		cmocka_unit_test_setup_teardown(barrier_with_busy_machine, setup, teardown),
		cmocka_unit_test_setup_teardown(wait_cpus_subset, setup, teardown),
		cmocka_unit_test_setup_teardown(wait_cpus_woken_by_daemon, setup, teardown),
		cmocka_unit_test_setup_teardown(wait_cpus_many, setup_200, teardown),
		cmocka_unit_test_setup_teardown(wait_cpus_bad_arguments, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
