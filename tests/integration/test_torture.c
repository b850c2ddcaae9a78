// SPDX-License-Identifier: MIT
/*
 * Torture test: hazard pointers whose readers use no fence, and whose writer retires an object
 * only after barrierd_barrier(), against the real daemon.  It runs for BARRIERD_TORTURE_SECONDS
 * (default 30, the CI minimum) and asserts that no reader ever uses a retired object.  A short
 * control phase runs the same scheme with no barrier and reports what it catches.
 *
 * The scheme.  `cur` points at a live object {generation, canary, payload[]}.
 *
 *	reader i (no fence)			writer
 *	R1 p = cur				W1 cur = new (release); old joins the retired list
 *	R2 hazard[i] = p (plain store)		W2 barrierd_barrier()
 *	   compiler barrier			W3 h[] = hazard[] (loads)
 *	R3 if (cur != p) goto R1		W4 each retired object not in h[]: poison it
 *	R4 read p->canary, p->payload		   (canary = DEAD, payload scrambled), free list
 *	R5 hazard[i] = NULL (release: a plain store on x86)
 *
 * R2 -> R3 is a store followed by a load: x86-TSO may perform the load of cur while the hazard
 * store still sits in the store buffer, which is why a classic hazard-pointer reader needs
 * MFENCE there.  Here the writer pays instead (the asymmetric-fence pattern, as with
 * membarrier(MEMBARRIER_CMD_GLOBAL)).  Why it is sound: suppose reader i uses an object o at
 * R4 after R3 loaded cur == o, and the writer retired o at W1.
 *   - R3 returned o, so it was performed before W1's store became visible.  W2 starts with
 *     MFENCE (W1 visible) and then reads the clock, stamp T: R3 was performed before T.
 *   - W2 returns only with evidence, for the CPU c reader i runs on, stamped after T (DESIGN
 *     rules 1 to 3): a locked instruction E on c (or an idle/offline instant of c, which is the
 *     same argument with the scheduler's locked instructions around it).  No load is performed
 *before an earlier locked instruction, and R3 was performed before T < E's clock read, so R3, and
 *     R2 before it, precede E in the reader's program order.
 *   - TSO: R2's store precedes E's locked store in c's store order, so hazard[i] = o is
 *     visible before E's stamp, which the daemon read and published before the writer's wait
 *     loaded it, and W3's loads come after that load (x86 keeps loads in order).  W3 therefore
 *     reads o, or a later value of hazard[i].
 *   - It reads o: o stays retired but is not poisoned.  It reads a later value: that store
 *     follows this use's R5, and R4's loads were performed before R5's store became visible
 *     (x86 does not reorder a store before older loads; it is a release store for the
 *     compiler's sake), so the use ended before W3, before W4's poison.
 * A reader that migrates between R2 and R3 goes through the scheduler, whose locked
 * instructions drain its store buffer: the hazard is visible before R3 then.
 *
 * Objects are recycled, so memory stays bounded: poisoned objects queue FIFO on the free list
 * and are reinitialised when they reach its head.  Reuse needs no barrier of its own: the scan
 * proved no reader holds the object, and a reader that loaded it from cur long ago must see it
 * in cur again at R3 before using it, and then sees the new contents (release/acquire).  The
 * FIFO keeps a poisoned object poisoned for hundreds of retirements, which makes a late use
 * easy to see.  A reader counts a violation when it sees canary != ALIVE (before or after
 * reading the payload) or a payload that does not match the generation it read: a poisoned
 * object, or one being poisoned or reinitialised under it.
 *
 * What it can catch: a barrier that does not wait for the readers' CPUs (the writer-mfence-only
 * control is that barrier, and shows violations).  What it cannot: a barrier that waits about
 * as long as a real one but on no evidence, since store buffers drain in nanoseconds.  As with
 * the litmus test's sham, that is the evidence audit's job (tests/audit/README.md).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>

#include "harness.h"

#define POOL 1024
#define PAYLOAD 6
#define MAX_READERS 64
#define UNPINNED_READERS 2
#define CONTROL_SECONDS 3
#define ALIVE 0x414c495645414c49ULL /* "ILAEVILA" */
#define DEAD 0xdeaddeaddeaddeadULL

/* One cache line: the reader's checks read all of it. */
struct obj {
	uint64_t generation;
	uint64_t canary;
	uint64_t payload[PAYLOAD];
};
_Static_assert(sizeof(struct obj) == 64, "one line");

struct hazard {
	_Alignas(128) struct obj *p;
};

struct reader {
	_Alignas(128) int idx;
	int cpu; /* -1: unpinned */
	uint64_t reads, retries, violations;
	uint64_t bad_canary, bad_generation; /* the first violation seen, for the report */
};

enum w2 {
	W2_BARRIERD, /* the scheme under test */
	W2_NONE,     /* control: no barrier at all */
	W2_MFENCE,   /* control: the writer's own fence only, readers' store buffers left open */
};

struct writer {
	enum w2 mode;
	struct barrierd *b; /* W2_BARRIERD only */
	int cpu, nreaders;
	uint64_t duration_ns;
	uint64_t published, retired, protected_seen, barriers, barrier_errors;
	uint64_t barrier_ns_max, barrier_ns_sum, elapsed_ns;
	int first_error, starved;
};

static _Alignas(128) struct obj *cur;
static _Alignas(128) int stop;
static struct hazard hazard[MAX_READERS];
static struct obj *pool;

static int cpus[CPU_SETSIZE], ncpus;
static uint64_t barrierd_seconds; /* of the barrierd phase */

static inline uint64_t expect(uint64_t gen, int k)
{
	return gen * 0x9e3779b97f4a7c15ULL + (uint64_t)k;
}

static inline uint64_t ld(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static inline void st(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

/* R4: 0 when the object is live and whole. */
static int check(struct reader *r, struct obj *p)
{
	uint64_t c1 = ld(&p->canary), g = ld(&p->generation), c2;
	int bad = c1 != ALIVE;

	for (int k = 0; k < PAYLOAD; k++)
		bad |= ld(&p->payload[k]) != expect(g, k);
	c2 = ld(&p->canary);
	bad |= c2 != ALIVE;
	if (bad && !r->violations) {
		r->bad_canary = c1 != ALIVE ? c1 : c2;
		r->bad_generation = g;
	}
	return bad;
}

static void *reader(void *arg)
{
	struct reader *r = arg;
	struct obj **hz = &hazard[r->idx].p;

	if (r->cpu >= 0)
		test_pin(r->cpu);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		struct obj *p = __atomic_load_n(&cur, __ATOMIC_ACQUIRE); /* R1 */

		__atomic_store_n(hz, p, __ATOMIC_RELAXED); /* R2: no fence */
		/* Only the compiler is kept from sinking R2 below R3; the CPU is not. */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&cur, __ATOMIC_ACQUIRE) != p) { /* R3 */
			r->retries++;
			continue;
		}
		if (check(r, p))
			r->violations++;
		r->reads++;
		__atomic_store_n(hz, NULL, __ATOMIC_RELEASE); /* R5 */
	}
	__atomic_store_n(hz, NULL, __ATOMIC_RELEASE);
	return NULL;
}

static void poison(struct obj *o)
{
	st(&o->canary, DEAD);
	for (int k = 0; k < PAYLOAD; k++)
		st(&o->payload[k], DEAD ^ (uint64_t)k);
}

static void init_obj(struct obj *o, uint64_t gen)
{
	st(&o->generation, gen);
	for (int k = 0; k < PAYLOAD; k++)
		st(&o->payload[k], expect(gen, k));
	st(&o->canary, ALIVE);
}

static void *writer(void *arg)
{
	struct writer *w = arg;
	int nreaders = w->nreaders;
	struct obj *freeq[POOL], *retired[POOL], *seen[MAX_READERS];
	unsigned head = 0, tail = 0, nfree, nret = 0;
	uint64_t gen = 1, start;

	test_pin(w->cpu);
	/* Object 0 (generation 1) is published already; the rest are poisoned and queued. */
	for (int i = 1; i < POOL; i++) {
		poison(&pool[i]);
		freeq[tail++ % POOL] = &pool[i];
	}
	nfree = POOL - 1;

	start = bd_mono_ns();
	while (bd_mono_ns() - start < w->duration_ns) {
		struct obj *o, *old;
		unsigned keep = 0;

		if (nfree == 0) {
			/* At most one object per reader is protected: this cannot happen. */
			w->starved = 1;
			break;
		}
		o = freeq[head++ % POOL];
		nfree--;
		init_obj(o, ++gen);
		old = __atomic_load_n(&cur, __ATOMIC_RELAXED);
		__atomic_store_n(&cur, o, __ATOMIC_RELEASE); /* W1 */
		retired[nret++] = old;
		w->published++;

		if (w->mode == W2_MFENCE)
			__asm__ __volatile__("mfence" ::: "memory");
		if (w->mode == W2_BARRIERD) { /* W2 */
			uint64_t t0 = bd_mono_ns(), dt;
			int rc = barrierd_barrier(w->b, 5000000000LL);

			dt = bd_mono_ns() - t0;
			w->barriers++;
			w->barrier_ns_sum += dt;
			w->barrier_ns_max = dt > w->barrier_ns_max ? dt : w->barrier_ns_max;
			if (rc) {
				/* Without a barrier nothing may be reclaimed; try again next time.
				 */
				if (!w->barrier_errors)
					w->first_error = rc;
				w->barrier_errors++;
				continue;
			}
		}
		for (int i = 0; i < nreaders; i++) /* W3 */
			seen[i] = __atomic_load_n(&hazard[i].p, __ATOMIC_ACQUIRE);
		for (unsigned j = 0; j < nret; j++) { /* W4 */
			int held = 0;

			for (int i = 0; i < nreaders; i++)
				held |= seen[i] == retired[j];
			if (held) {
				w->protected_seen++;
				retired[keep++] = retired[j];
				continue;
			}
			poison(retired[j]);
			freeq[tail++ % POOL] = retired[j];
			nfree++;
			w->retired++;
		}
		nret = keep;
	}
	w->elapsed_ns = bd_mono_ns() - start;
	return NULL;
}

/*
 * One phase: the writer pinned to the first CPU, one reader pinned to each other CPU, and
 * UNPINNED_READERS more that the scheduler moves around (onto the writer's CPU while it sleeps
 * in the barrier, among others).
 */
static void run_phase(const char *name, enum w2 mode, struct barrierd *b, uint64_t seconds,
		      struct writer *w, struct reader *rd, int *nreaders_out)
{
	pthread_t wt, rt[MAX_READERS];
	int nr = 0;
	uint64_t reads = 0, retries = 0, violations = 0;

	pool = aligned_alloc(64, POOL * sizeof(*pool));
	assert_non_null(pool);
	memset(pool, 0, POOL * sizeof(*pool));
	memset(hazard, 0, sizeof(hazard));
	memset(w, 0, sizeof(*w));
	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	w->mode = mode;
	w->b = b;
	w->cpu = cpus[0];
	w->duration_ns = seconds * 1000000000ULL;
	for (int c = 1; c < ncpus && nr < MAX_READERS - UNPINNED_READERS; c++, nr++)
		rd[nr] = (struct reader){.idx = nr, .cpu = cpus[c]};
	for (int u = 0; u < UNPINNED_READERS; u++, nr++)
		rd[nr] = (struct reader){.idx = nr, .cpu = -1};
	w->nreaders = nr;
	/* The writer publishes the first object before any reader may load cur. */
	init_obj(&pool[0], 1);
	__atomic_store_n(&cur, &pool[0], __ATOMIC_RELEASE);
	for (int i = 0; i < nr; i++)
		assert_int_equal(pthread_create(&rt[i], NULL, reader, &rd[i]), 0);
	assert_int_equal(pthread_create(&wt, NULL, writer, w), 0);
	pthread_join(wt, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nr; i++) {
		pthread_join(rt[i], NULL);
		reads += rd[i].reads;
		retries += rd[i].retries;
		violations += rd[i].violations;
	}
	printf("torture %s: %.1f s, %d readers, %llu published, %llu retired, %llu reads "
	       "(%llu retries), %llu violations, %llu still protected at a scan",
	       name, (double)w->elapsed_ns / 1e9, nr, (unsigned long long)w->published,
	       (unsigned long long)w->retired, (unsigned long long)reads,
	       (unsigned long long)retries, (unsigned long long)violations,
	       (unsigned long long)w->protected_seen);
	if (mode == W2_BARRIERD)
		printf(", %llu barriers (mean %.0f us, max %.1f ms, %llu failed)",
		       (unsigned long long)w->barriers,
		       w->barriers ? (double)w->barrier_ns_sum / 1e3 / (double)w->barriers : 0.0,
		       (double)w->barrier_ns_max / 1e6, (unsigned long long)w->barrier_errors);
	printf("\n");
	for (int i = 0; i < nr; i++) {
		printf("  reader %d (cpu %d): %llu reads, %llu violations", i, rd[i].cpu,
		       (unsigned long long)rd[i].reads, (unsigned long long)rd[i].violations);
		if (rd[i].violations)
			printf(" (first: canary %#llx, generation %llu)",
			       (unsigned long long)rd[i].bad_canary,
			       (unsigned long long)rd[i].bad_generation);
		printf("\n");
	}
	fflush(stdout);
	free(pool);
	pool = NULL;
	*nreaders_out = nr;
}

static uint64_t torture_seconds(void)
{
	const char *e = getenv("BARRIERD_TORTURE_SECONDS");
	char *end;
	long v;

	if (!e || !*e)
		return 30;
	v = strtol(e, &end, 10);
	if (*end || v <= 0) {
		fprintf(stderr, "BARRIERD_TORTURE_SECONDS=%s: not a positive integer\n", e);
		exit(1);
	}
	return (uint64_t)v;
}

static uint64_t total_violations(const struct reader *rd, int nr)
{
	uint64_t v = 0;

	for (int i = 0; i < nr; i++)
		v += rd[i].violations;
	return v;
}

/*
 * The controls, reported and not asserted (whether they show anything in a few seconds depends
 * on the machine).  With no barrier between W1 and W3, the race is store buffering on both
 * sides: R2 still buffered while R3 reads the old cur, W1 still buffered while W3 reads the
 * hazards.  With the writer's MFENCE alone, only the readers' side is open, and that is the
 * part barrierd_barrier() closes on their behalf: violations there show that the test sees a
 * missing reader-side fence, not only a missing writer-side one.
 */
static void control(enum w2 mode, const char *name)
{
	static struct reader rd[MAX_READERS];
	struct writer w;
	int nr;

	run_phase(name, mode, NULL, CONTROL_SECONDS, &w, rd, &nr);
	assert_false(w.starved);
	assert_true(w.retired > 0);
	printf("torture %s: %llu violations (reported, not asserted)\n", name,
	       (unsigned long long)total_violations(rd, nr));
	fflush(stdout);
}

static void torture_no_barrier_control(void **state)
{
	(void)state;
	control(W2_NONE, "no-barrier control");
}

static void torture_writer_mfence_control(void **state)
{
	(void)state;
	control(W2_MFENCE, "writer-mfence-only control");
}

static void torture_barrierd(void **state)
{
	static struct reader rd[MAX_READERS];
	struct barrierd *b;
	struct writer w;
	uint64_t reads = 0;
	int nr;

	(void)state;
	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_int_equal(barrierd_open(&b, H.state), 0);
	run_phase("barrierd", W2_BARRIERD, b, barrierd_seconds, &w, rd, &nr);
	barrierd_close(b);
	for (int i = 0; i < nr; i++)
		reads += rd[i].reads;
	assert_false(w.starved);
	if (w.barrier_errors)
		fail_msg("%llu barriers failed (first: %d)", (unsigned long long)w.barrier_errors,
			 w.first_error);
	assert_true(w.retired > 0);
	assert_true(reads > 0);
	assert_int_equal(total_violations(rd, nr), 0);
}

int main(void)
{
	cpu_set_t s;

	test_require_root();
	/* Before any daemon starts: a bad value must not leave one behind. */
	barrierd_seconds = torture_seconds();
	if (sched_getaffinity(0, sizeof(s), &s)) {
		perror("sched_getaffinity");
		return 1;
	}
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &s))
			cpus[ncpus++] = c;
	if (ncpus < 2)
		test_skip_or_fail("needs two CPUs");
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(torture_no_barrier_control),
	    cmocka_unit_test(torture_writer_mfence_control),
	    cmocka_unit_test_setup_teardown(torture_barrierd, h_setup, h_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
