// SPDX-License-Identifier: MIT
/*
 * Litmus smoke test: asymmetric store buffering (SB) against the real daemon.
 *
 *	fast side A (CPU a)		slow side B (CPU b)
 *	x = 1;				y = 1;
 *	compiler barrier;		HEAVY;
 *	r1 = y;				r2 = x;
 *
 * Forbidden with a real heavy barrier: r1 == 0 && r2 == 0.  Three variants, each counted:
 *   (a) HEAVY = compiler barrier only: the control.  x86-TSO lets each store wait in its CPU's
 *       store buffer while the later load is performed, so the forbidden outcome can show up.
 *       Reported, not required (its rate depends on the machine).
 *   (b) HEAVY = usleep(1000): a sham.  Store buffers drain in nanoseconds, so it shows no
 *       violation either, although it gives A no guarantee at all.  Reported, not asserted: it
 *       is here to show that a litmus test cannot prove a barrier sound (that is the evidence
 *       audit's job: tests/audit/README.md), only catch a grossly broken one.
 *   (c) HEAVY = barrierd_barrier(b, 5 s): must show none.
 *
 * Why (c) forbids r1 == 0 && r2 == 0 (DESIGN rules 1 to 5).  barrierd_barrier() executes MFENCE, so
 * y = 1 is globally visible, then LFENCE and reads the clock: stamp T.  It returns after loading a
 * published value above T, which needs evidence on A's CPU stamped after T: an event whose stamp
 * was stored by a locked instruction (xchg), or an idle/offline instant after T.  Take the event
 * case, and call its locked instruction E:
 *   - If A's store x = 1 comes before E in A's program order, then x = 1 precedes E's stamp in
 *     A's store order (TSO: stores become visible in program order, and a locked instruction
 *     drains the store buffer).  So x = 1 is visible before the stamp is, before the daemon read
 *     it, before B loaded the published value, and B's load of x comes after that load (x86 does
 *     not reorder loads with older loads): r2 == 1.
 *   - Otherwise A's load of y comes after E in program order too (it follows x = 1), and no
 *     load is performed before an earlier locked instruction: it is performed after E's clock
 *     read, which is after T, which is after y = 1 became visible: r1 == 1.
 * An idle or offline instant after T splits A's program the same way: what A ran before it
 * left the CPU was drained by the scheduler's locked instructions, and what it runs after is
 * performed after the instant, after T.  (Here A is pinned and always runnable, so its CPU is
 * never idle: the test asserts that it is credited by events only.)  Without any such evidence,
 * x = 1 may still sit in A's store buffer when B loads x: that is what the control (a) shows.
 *
 * Round structure.  No location is reset between rounds: in round i both sides store the tag
 * i + 1, so "the load saw the other side's store" is "the load returned i + 1", and anything
 * else can only be i (the previous round's value, made visible by the rendezvous).  Each round
 * starts with a two-sided rendezvous (each side publishes the round it reached, then spins
 * until the other has too), so while both threads run, both bodies start within a cache-line
 * transfer of each other, and neither side starts round i + 1's body before the other finished
 * round i's (a side may publish round i + 1 while the other, preempted, is still in round i).
 * A leaves r1 in res_a[i & 1]; B reads it after the next rendezvous, when A has moved on to
 * the other slot.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>

#include "harness.h"

/*
 * B ends A's loop by publishing the round it stopped at with this bit set.  The round must be
 * part of it: a preempted A can miss B's previous value and read the stop first, and a bare
 * stop value would then end A one round early, leaving B waiting for a round A never runs.
 */
#define STOP_BIT (1ULL << 63)

enum heavy { HEAVY_NONE, HEAVY_SLEEP, HEAVY_BARRIERD };

static const char *const heavy_name[] = {"no-barrier", "sham usleep(1000)", "barrierd"};

/* Every shared word on its own 128-byte block (adjacent-line prefetch pairs lines). */
struct sb {
	_Alignas(128) uint64_t x;
	_Alignas(128) uint64_t y;
	_Alignas(128) uint64_t ready_a;	 /* the round A reached (tag) */
	_Alignas(128) uint64_t ready_b;	 /* the round B reached, | STOP_BIT at the end */
	_Alignas(128) uint64_t res_a[2]; /* r1 of round i, in slot i & 1 */
};

struct litmus {
	struct sb *s;
	struct barrierd *b;
	enum heavy heavy;
	int cpu_a, cpu_b;
	uint64_t min_rounds, max_rounds, min_ns;
	/* results, written by B */
	uint64_t rounds, violations, insane, barrier_errors, elapsed_ns;
	int first_error;
	/* (c): the extension's credit counters of A's and B's CPUs, after round 0 and at the end */
	uint64_t ev[2][2], idle[2][2];
};

static struct barrierd *B;
static int cpu_a = -1, cpu_b = -1;

static inline void cpu_relax(void)
{
	__builtin_ia32_pause();
}

static void *side_a(void *arg)
{
	struct litmus *l = arg;
	struct sb *s = l->s;

	test_pin(l->cpu_a);
	for (uint64_t i = 0;; i++) {
		uint64_t tag = i + 1, rb, r1;

		__atomic_store_n(&s->ready_a, tag, __ATOMIC_RELEASE);
		while (((rb = __atomic_load_n(&s->ready_b, __ATOMIC_ACQUIRE)) & ~STOP_BIT) < tag)
			cpu_relax();
		/* B may already be one round ahead (it published its next round): run this one. */
		if (rb == (tag | STOP_BIT))
			break;
		/* The light side: a compiler barrier only; relaxed atomics are plain MOVs. */
		__atomic_store_n(&s->x, tag, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		r1 = __atomic_load_n(&s->y, __ATOMIC_RELAXED);
		__atomic_store_n(&s->res_a[i & 1], r1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void heavy(struct litmus *l)
{
	int rc;

	switch (l->heavy) {
	case HEAVY_NONE:
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		break;
	case HEAVY_SLEEP:
		usleep(1000);
		break;
	case HEAVY_BARRIERD:
		rc = barrierd_barrier(l->b, 5000000000LL);
		if (rc) {
			if (!l->barrier_errors)
				l->first_error = rc;
			l->barrier_errors++;
		}
		break;
	}
}

/* Round j used tag j + 1; each load returned j (stale) or j + 1 (saw the other's store). */
static void tally(struct litmus *l, uint64_t j, uint64_t r1, uint64_t r2)
{
	uint64_t tag = j + 1;

	if ((r1 != tag && r1 != j) || (r2 != tag && r2 != j))
		l->insane++; /* the harness itself is broken: no other value was ever stored */
	else if (r1 != tag && r2 != tag)
		l->violations++;
}

/* How the daemon credited A's and B's CPUs: assert how, not only that (tests/audit/README.md). */
static void snap_credits(struct litmus *l, int when)
{
	size_t sz;
	const struct barrierd_header *m = barrierd_mapping(l->b, &sz);
	const struct barrierd_ext *x = (const void *)((const char *)m + bd_load(&m->ext_offset));
	int cpu[2] = {l->cpu_a, l->cpu_b};

	for (int k = 0; k < 2; k++) {
		l->ev[k][when] = bd_load(&x->cpu[cpu[k]].credit_event);
		l->idle[k][when] = bd_load(&x->cpu[cpu[k]].credit_idle);
	}
}

static void *side_b(void *arg)
{
	struct litmus *l = arg;
	struct sb *s = l->s;
	uint64_t start, prev_r2 = 0, i;

	test_pin(l->cpu_b);
	start = bd_mono_ns();
	for (i = 0;; i++) {
		uint64_t tag = i + 1, r2 = 0;
		int stop =
		    i >= l->max_rounds ||
		    (i >= l->min_rounds &&
		     (l->min_ns == 0 || ((i & 255) == 0 && bd_mono_ns() - start >= l->min_ns)));

		/*
		 * After round 0's barrier, any pass the daemon starts comes after A was running
		 * pinned on its CPU, which then never goes idle: it may only be credited by events.
		 */
		if (l->heavy == HEAVY_BARRIERD && (i == 1 || (stop && i < 1)))
			snap_credits(l, 0);
		if (l->heavy == HEAVY_BARRIERD && stop)
			snap_credits(l, 1);
		__atomic_store_n(&s->ready_b, stop ? tag | STOP_BIT : tag, __ATOMIC_RELEASE);
		while (__atomic_load_n(&s->ready_a, __ATOMIC_ACQUIRE) < tag)
			cpu_relax();
		if (!stop) {
			__atomic_store_n(&s->y, tag, __ATOMIC_RELAXED);
			heavy(l);
			r2 = __atomic_load_n(&s->x, __ATOMIC_RELAXED);
		}
		/*
		 * The previous round's r1 is final: A stored it before publishing ready_a = tag,
		 * which we acquired.  Tallying after our body keeps the rendezvous-to-body paths of
		 * both sides equally short.
		 */
		if (i > 0)
			tally(l, i - 1, __atomic_load_n(&s->res_a[(i - 1) & 1], __ATOMIC_RELAXED),
			      prev_r2);
		if (stop)
			break;
		prev_r2 = r2;
	}
	l->rounds = i;
	l->elapsed_ns = bd_mono_ns() - start;
	return NULL;
}

static void run_litmus(struct litmus *l)
{
	pthread_t ta, tb;

	l->s = aligned_alloc(128, sizeof(*l->s));
	assert_non_null(l->s);
	memset(l->s, 0, sizeof(*l->s));
	l->b = B;
	l->cpu_a = cpu_a;
	l->cpu_b = cpu_b;
	assert_int_equal(pthread_create(&ta, NULL, side_a, l), 0);
	assert_int_equal(pthread_create(&tb, NULL, side_b, l), 0);
	pthread_join(tb, NULL);
	pthread_join(ta, NULL);
	free(l->s);
	printf("litmus %s: %llu rounds, %llu violations (%.2f s, %.2f us/round, A on cpu %d, "
	       "B on cpu %d)\n",
	       heavy_name[l->heavy], (unsigned long long)l->rounds,
	       (unsigned long long)l->violations, (double)l->elapsed_ns / 1e9,
	       l->rounds ? (double)l->elapsed_ns / 1e3 / (double)l->rounds : 0.0, l->cpu_a,
	       l->cpu_b);
	fflush(stdout);
	assert_int_equal(l->insane, 0);
	assert_true(l->rounds >= l->min_rounds);
}

/* (a) The control: as many cheap rounds as fit in 3 s, at least 200 000. */
static void sb_no_barrier(void **state)
{
	struct litmus l = {.heavy = HEAVY_NONE,
			   .min_rounds = 200000,
			   .max_rounds = 100000000,
			   .min_ns = 3000000000ULL};

	(void)state;
	run_litmus(&l);
}

/* (b) The sham: 0 expected and not asserted; a 1 ms sleep is no barrier. */
static void sb_sham_sleep(void **state)
{
	struct litmus l = {.heavy = HEAVY_SLEEP, .min_rounds = 3000, .max_rounds = 3000};

	(void)state;
	run_litmus(&l);
}

/* (c) barrierd: every round's barrier completes, and the forbidden outcome never shows. */
static void sb_barrierd(void **state)
{
	struct litmus l = {.heavy = HEAVY_BARRIERD, .min_rounds = 2000, .max_rounds = 2000};

	(void)state;
	run_litmus(&l);
	for (int k = 0; k < 2; k++)
		printf("  cpu %d (%s): %llu event credits, %llu idle credits after round 0\n",
		       k ? l.cpu_b : l.cpu_a, k ? "B, waits in the barrier" : "A, spins",
		       (unsigned long long)(l.ev[k][1] - l.ev[k][0]),
		       (unsigned long long)(l.idle[k][1] - l.idle[k][0]));
	if (l.barrier_errors)
		fail_msg("%llu barriers failed (first: %d)", (unsigned long long)l.barrier_errors,
			 l.first_error);
	assert_int_equal(l.violations, 0);
	/* A busy CPU credited as idle would be a false credit (rule 2). */
	assert_int_equal(l.idle[0][1] - l.idle[0][0], 0);
}

static int group_setup(void **state)
{
	cpu_set_t s;

	(void)state;
	/* Two distinct CPUs this process may run on. */
	if (sched_getaffinity(0, sizeof(s), &s))
		return -1;
	for (int c = 0; c < CPU_SETSIZE && cpu_b < 0; c++) {
		if (!CPU_ISSET(c, &s))
			continue;
		if (cpu_a < 0)
			cpu_a = c;
		else
			cpu_b = c;
	}
	if (cpu_b < 0)
		test_skip_or_fail("needs two CPUs");
	h_mkdir(&H);
	if (h_start(&H, -1, NULL) || barrierd_open(&B, H.state)) {
		h_stop(&H);
		h_rmdir(&H);
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	barrierd_close(B);
	h_stop(&H);
	h_rmdir(&H);
	return 0;
}

int main(void)
{
	test_require_root();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(sb_no_barrier),
	    cmocka_unit_test(sb_sham_sleep),
	    cmocka_unit_test(sb_barrierd),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
