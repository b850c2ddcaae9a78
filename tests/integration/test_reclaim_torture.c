// SPDX-License-Identifier: MIT
/*
 * Torture tests of libbarrierd's reclamation (include/barrierd_reclaim.h), in rcutorture's
 * style: readers check a pattern in every object they reach, the writer replaces objects and
 * retires the old ones, and the free function poisons each object before it goes to a
 * quarantine.  A reader that reads an object after it was freed reads the poison.
 *
 *	shared:	slot[NSLOTS], each pointing at a live object {magic, gen, birth, payload[]}
 *
 *	reader (no fence)			writer
 *	enter / protect(slot[i])		o = a new object, gen + 1, born now
 *	p = slot[i]				old = slot[i]; slot[i] = o (release)
 *	HOLD times: check *p			retire(old, poison_free)
 *	exit / clear
 *
 *	poison_free(p): age = now - p->birth into the histogram; memset(p, POISON); then the
 *	quarantine (a FIFO of QUARANTINE objects): only the oldest goes back to malloc, so a late
 *	read finds the poison and not a reused object.
 *
 * A check reads the magic, the payload (a function of gen), then the magic again; any
 * mismatch is a violation ("poisoned" when a word read POISON).  The reader holds the object
 * HOLD checks long, so that a free that comes while it is inside lands under its loads.
 *
 * Two kinds of test, for each scheme:
 *   - epoch_torture_*, hp_torture_*: against the real daemon (needs root and BPF), with one and
 *     two readers, BARRIERD_TORTURE_SECONDS (default 3) each.  No violation allowed; the
 *     histograms of ages at free and of retire() durations are printed.
 *   - *_control*: the same torture made as easy to catch as it can be (below), for
 *     BARRIERD_CONTROL_SECONDS (default 8) or until the first violation, on a fake daemon's
 *     handle (tests/common/fake_daemon.h) opened on the file alone, whose barriers pass on no
 *     evidence:
 *       epoch_control, hp_control: every CPU's value an hour ahead, so a barrier passes at its
 *         first check;
 *       *_control_doorbell: every CPU IDLE and every ring credited at once (FAKE_CREDIT_IDLE),
 *         so a barrier passes after one doorbell round trip.
 *     Against the real library these shams are NOT caught (0 violations in every run, as
 *     measured in docs/PRIMITIVES.md §2): the cheapest barrier the library passes takes
 *     microseconds, and the readers' store buffers drain in far less.  What is caught is the
 *     missing barrier itself: epoch_control and hp_control linked against the
 *     reclaim_no_barrier mutant library (tests/audit/mutants/), whose ctests
 *     (test_mutant_reclaim_no_barrier_epoch, _hp) pass when the control fails.  A control's
 *     set-up failure exits with status 2, so that it never counts as a catch.
 *
 * Windows are store-buffer sized: the reader's publication (the enter or hazard store) must
 * still sit in its store buffer when the writer scans.  So everything is done to widen them
 * in the controls: one slot, readers with nothing between the publication and the load of the
 * slot, a batch of 1 (a scan after every replacement), the writer and the reader pinned to
 * different CPUs, the writer replacing back to back.  The reader's store to its record misses
 * in its cache every time (the writer's scan read the line), which keeps it buffered longest.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <barrierd_reclaim.h>
#include <pthread.h>

#include "fake_daemon.h"
#include "harness.h"

#define MAX_SLOTS 8
#define HOLD 32
#define QUARANTINE 16384
#define PAYLOAD 5
#define NBUCKETS 40
#define ALIVE 0x4556494c41455649ULL /* "IVEALIVE" */
#define POISON 0x6b6b6b6b6b6b6b6bULL
#define POISON_BYTE 0x6b
/* Readers re-register every REREGISTER sections: records claimed and released under scans. */
#define REREGISTER 4096
#define CONTROL_SECONDS 8

enum scheme { EPOCH, HP };
enum barrier_kind { REAL, SHAM_DOORBELL, SHAM_INSTANT };

static const char *const kind_name[] = {"barrierd", "sham_doorbell", "sham_instant"};

/* One cache line. */
struct obj {
	uint64_t magic;
	uint64_t gen;
	uint64_t birth_ns;
	uint64_t payload[PAYLOAD];
};
_Static_assert(sizeof(struct obj) == 64, "one line");

struct reader {
	_Alignas(128) int idx;
	int cpu; /* -1: unpinned */
	uint64_t sections, violations, poisoned;
	uint64_t first_bad; /* the first bad word read */
	int reg_failed;
};

struct run {
	enum scheme scheme;
	enum barrier_kind kind;
	int nreaders, nslots;
	unsigned batch;
	uint64_t seconds;
	int stop_at_first; /* controls: end at the first violation */
	struct barrierd *b;
	struct barrierd_epoch *ep;
	struct barrierd_hp *hp;
	/* writer's results */
	uint64_t replaced, retire_errors, retire_ns_max, elapsed_ns;
	uint64_t retire_hist[NBUCKETS]; /* how long retire() took, log2 buckets of us */
	int first_error;
	int reclaim_rc; /* the explicit reclaim after the run */
};

static _Alignas(128) struct obj *slot[MAX_SLOTS];
static _Alignas(128) int stop;
static _Alignas(128) uint64_t violations_seen;
static struct run *R;

/* The free side: only the writer retires, so only it runs poison_free (outside the domain's mutex,
 * but in the writer's thread). */
static struct obj *quarantine[QUARANTINE];
static unsigned q_head, q_len;
static uint64_t freed, age_hist[NBUCKETS];

static inline uint64_t ld(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static inline uint64_t expect(uint64_t gen, int k)
{
	return gen * 0x9e3779b97f4a7c15ULL + (uint64_t)k;
}

static struct obj *new_obj(uint64_t gen)
{
	struct obj *o = aligned_alloc(64, sizeof(*o));

	if (!o) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	o->gen = gen;
	for (int k = 0; k < PAYLOAD; k++)
		o->payload[k] = expect(gen, k);
	o->birth_ns = bd_mono_ns();
	o->magic = ALIVE;
	return o;
}

static unsigned bucket(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned k = 0;

	while (us > 1 && k < NBUCKETS - 1) {
		us >>= 1;
		k++;
	}
	return k;
}

static void poison_free(void *ptr)
{
	struct obj *o = ptr;

	age_hist[bucket(bd_mono_ns() - o->birth_ns)]++;
	memset(o, POISON_BYTE, sizeof(*o));
	freed++;
	if (q_len == QUARANTINE) {
		free(quarantine[q_head]);
		quarantine[q_head] = o;
		q_head = (q_head + 1) % QUARANTINE;
		return;
	}
	quarantine[(q_head + q_len++) % QUARANTINE] = o;
}

static void quarantine_drain(void)
{
	for (unsigned i = 0; i < q_len; i++)
		free(quarantine[(q_head + i) % QUARANTINE]);
	q_head = q_len = 0;
}

/* One check of *p: 0 when whole and alive. */
static int check(struct reader *r, const struct obj *p)
{
	uint64_t m1 = ld(&p->magic), g = ld(&p->gen), m2, bad_word = 0;
	int bad = m1 != ALIVE;

	if (bad)
		bad_word = m1;
	for (int k = 0; k < PAYLOAD; k++) {
		uint64_t v = ld(&p->payload[k]);

		if (v != expect(g, k)) {
			bad = 1;
			bad_word = bad_word ? bad_word : v;
		}
	}
	m2 = ld(&p->magic);
	if (m2 != ALIVE) {
		bad = 1;
		bad_word = bad_word ? bad_word : m2;
	}
	if (!bad)
		return 0;
	if (!r->violations)
		r->first_bad = bad_word;
	r->violations++;
	if (m1 == POISON || m2 == POISON || g == POISON || bad_word == POISON)
		r->poisoned++;
	__atomic_add_fetch(&violations_seen, 1, __ATOMIC_RELAXED);
	return 1;
}

static void hold(struct reader *r, const struct obj *p)
{
	for (int h = 0; h < HOLD; h++)
		if (check(r, p))
			return;
}

static void *epoch_reader(void *arg)
{
	struct reader *r = arg;
	struct barrierd_epoch_record *rec;
	unsigned i = 0;

	if (r->cpu >= 0)
		test_pin(r->cpu);
	rec = barrierd_epoch_register(R->ep);
	if (!rec) {
		r->reg_failed = 1;
		return NULL;
	}
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		const struct obj *p;

		barrierd_epoch_enter(rec);
		p = __atomic_load_n(&slot[i], __ATOMIC_ACQUIRE);
		hold(r, p);
		barrierd_epoch_exit(rec);
		r->sections++;
		i = (i + 1) % (unsigned)R->nslots;
		if (r->sections % REREGISTER == 0) {
			barrierd_epoch_unregister(R->ep, rec);
			rec = barrierd_epoch_register(R->ep);
			if (!rec) {
				r->reg_failed = 1;
				return NULL;
			}
		}
	}
	barrierd_epoch_unregister(R->ep, rec);
	return NULL;
}

static void *hp_reader(void *arg)
{
	struct reader *r = arg;
	struct barrierd_hp_record *rec;
	unsigned i = 0;

	if (r->cpu >= 0)
		test_pin(r->cpu);
	rec = barrierd_hp_register(R->hp);
	if (!rec) {
		r->reg_failed = 1;
		return NULL;
	}
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		const struct obj *p = barrierd_hp_protect(rec, 0, (void *const *)&slot[i]);

		hold(r, p);
		barrierd_hp_clear(rec, 0);
		r->sections++;
		i = (i + 1) % (unsigned)R->nslots;
		if (r->sections % REREGISTER == 0) {
			barrierd_hp_unregister(R->hp, rec);
			rec = barrierd_hp_register(R->hp);
			if (!rec) {
				r->reg_failed = 1;
				return NULL;
			}
		}
	}
	barrierd_hp_unregister(R->hp, rec);
	return NULL;
}

static void writer(struct run *w)
{
	uint64_t start = bd_mono_ns(), gen = MAX_SLOTS;
	unsigned i = 0;

	while (bd_mono_ns() - start < w->seconds * TEST_SEC) {
		struct obj *o, *old;
		uint64_t t0;
		int rc;

		if (w->stop_at_first && __atomic_load_n(&violations_seen, __ATOMIC_RELAXED))
			break;
		o = new_obj(++gen);
		old = __atomic_load_n(&slot[i], __ATOMIC_RELAXED);
		__atomic_store_n(&slot[i], o, __ATOMIC_RELEASE);
		w->replaced++;
		t0 = bd_mono_ns();
		rc = w->scheme == EPOCH ? barrierd_epoch_retire(w->ep, old, poison_free)
					: barrierd_hp_retire(w->hp, old, poison_free);
		t0 = bd_mono_ns() - t0;
		w->retire_ns_max = t0 > w->retire_ns_max ? t0 : w->retire_ns_max;
		w->retire_hist[bucket(t0)]++;
		if (rc) {
			if (!w->retire_errors)
				w->first_error = rc;
			w->retire_errors++;
		}
		i = (i + 1) % (unsigned)w->nslots;
	}
	w->elapsed_ns = bd_mono_ns() - start;
}

static void print_histogram(const char *what, const uint64_t *hist)
{
	uint64_t total = 0, cum = 0, p50 = 0, p99 = 0;

	for (int k = 0; k < NBUCKETS; k++)
		total += hist[k];
	printf("  %s (%llu), log2 buckets of us:\n", what, (unsigned long long)total);
	for (int k = 0; k < NBUCKETS; k++) {
		if (!hist[k])
			continue;
		cum += hist[k];
		if (!p50 && cum * 2 >= total)
			p50 = 1ULL << (k + 1);
		if (!p99 && cum * 100 >= total * 99)
			p99 = 1ULL << (k + 1);
		printf("    [%7llu, %7llu) us: %llu\n", k ? 1ULL << k : 0, 1ULL << (k + 1),
		       (unsigned long long)hist[k]);
	}
	printf("  median below %llu us, 99th percentile below %llu us\n", (unsigned long long)p50,
	       (unsigned long long)p99);
}

/* One torture run; the readers' results in rd.  Returns the total violations. */
static uint64_t torture(struct run *w, struct reader *rd, int *cpus, int ncpus)
{
	static const char *const sname[] = {"epoch", "hp"};
	pthread_t t[2];
	uint64_t sections = 0, violations = 0, poisoned = 0;

	R = w;
	memset(age_hist, 0, sizeof(age_hist));
	freed = 0;
	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&violations_seen, 0, __ATOMIC_RELAXED);
	for (int s = 0; s < MAX_SLOTS; s++)
		slot[s] = new_obj((uint64_t)s + 1);
	if (w->scheme == EPOCH)
		w->ep = barrierd_epoch_new(w->b, w->batch);
	else
		w->hp = barrierd_hp_new(w->b, w->batch);
	if (!w->ep && !w->hp) {
		fprintf(stderr, "domain: out of memory\n");
		exit(2);
	}
	/* The writer on the first CPU; reader 0 on the second; reader 1 wherever it is put. */
	test_pin(cpus[0]);
	for (int i = 0; i < w->nreaders; i++) {
		rd[i] = (struct reader){.idx = i, .cpu = i == 0 ? cpus[1 % ncpus] : -1};
		if (pthread_create(&t[i], NULL, w->scheme == EPOCH ? epoch_reader : hp_reader,
				   &rd[i])) {
			fprintf(stderr, "pthread_create failed\n");
			exit(2);
		}
	}
	writer(w);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < w->nreaders; i++) {
		pthread_join(t[i], NULL);
		if (rd[i].reg_failed) {
			fprintf(stderr, "register: out of memory\n");
			exit(2);
		}
		sections += rd[i].sections;
		violations += rd[i].violations;
		poisoned += rd[i].poisoned;
	}
	/*
	 * retire() returns 0 once it took the object, whatever its reclaim did: a failed
	 * synchronize or scan shows here, in an explicit reclaim (readers are gone).  Then the
	 * domain's final reclaim frees what is still retired.
	 */
	w->reclaim_rc =
	    w->scheme == EPOCH ? barrierd_epoch_reclaim(w->ep) : barrierd_hp_reclaim(w->hp);
	if (w->scheme == EPOCH)
		barrierd_epoch_free(w->ep);
	else
		barrierd_hp_free(w->hp);
	w->ep = NULL;
	w->hp = NULL;
	for (int s = 0; s < MAX_SLOTS; s++)
		free(slot[s]);
	test_unpin();
	printf("%s torture, %s handle: %.1f s, %d reader(s), %d slot(s), batch %u: %llu "
	       "replaced, %llu freed, %llu sections, %llu violations (%llu poisoned reads), "
	       "%llu retire errors, slowest retire %.2f ms\n",
	       sname[w->scheme], kind_name[w->kind], (double)w->elapsed_ns / 1e9, w->nreaders,
	       w->nslots, w->batch, (unsigned long long)w->replaced, (unsigned long long)freed,
	       (unsigned long long)sections, (unsigned long long)violations,
	       (unsigned long long)poisoned, (unsigned long long)w->retire_errors,
	       (double)w->retire_ns_max / 1e6);
	for (int i = 0; i < w->nreaders; i++) {
		printf("  reader %d (cpu %d): %llu sections, %llu violations", i, rd[i].cpu,
		       (unsigned long long)rd[i].sections, (unsigned long long)rd[i].violations);
		if (rd[i].violations)
			printf(" (first bad word %#llx)", (unsigned long long)rd[i].first_bad);
		printf("\n");
	}
	print_histogram("ages at free", age_hist);
	print_histogram("retire() calls, by duration", w->retire_hist);
	fflush(stdout);
	quarantine_drain();
	return violations;
}

static int cpus[CPU_SETSIZE], ncpus;

static uint64_t seconds_from_env(const char *name, uint64_t dflt)
{
	const char *e = getenv(name);
	char *end;
	long v;

	if (!e || !*e)
		return dflt;
	v = strtol(e, &end, 10);
	if (*end || v <= 0) {
		fprintf(stderr, "%s=%s: not a positive integer\n", name, e);
		exit(2);
	}
	return (uint64_t)v;
}

/* ---- against the real daemon ------------------------------------------------------------ */

static void real(enum scheme scheme, int nreaders, unsigned batch, int nslots)
{
	struct reader rd[2];
	struct run w = {.scheme = scheme,
			.kind = REAL,
			.nreaders = nreaders,
			.nslots = nslots,
			.batch = batch,
			.seconds = seconds_from_env("BARRIERD_TORTURE_SECONDS", 3)};
	uint64_t v;

	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_int_equal(barrierd_open(&w.b, H.state), 0);
	v = torture(&w, rd, cpus, ncpus);
	barrierd_close(w.b);
	if (w.retire_errors)
		fail_msg("%llu retires failed (first: %d)", (unsigned long long)w.retire_errors,
			 w.first_error);
	assert_int_equal(w.reclaim_rc, 0);
	assert_true(freed > 0);
	for (int i = 0; i < nreaders; i++)
		assert_true(rd[i].sections > 0);
	assert_int_equal(v, 0);
}

static void epoch_torture_1reader(void **state)
{
	(void)state;
	real(EPOCH, 1, 1, 1);
}

static void epoch_torture_2readers(void **state)
{
	(void)state;
	real(EPOCH, 2, 16, 4);
}

static void hp_torture_1reader(void **state)
{
	(void)state;
	real(HP, 1, 1, 1);
}

static void hp_torture_2readers(void **state)
{
	(void)state;
	real(HP, 2, 16, 4);
}

/* ---- the retire side's contract: no lock held while waiting or freeing ------------------- */

static _Alignas(128) uint64_t nfreed;

static void count_free(void *p)
{
	free(p);
	__atomic_add_fetch(&nfreed, 1, __ATOMIC_RELAXED);
}

static int retire_any(enum scheme scheme, void *dom, void *p, void (*fn)(void *))
{
	return scheme == EPOCH ? barrierd_epoch_retire(dom, p, fn) : barrierd_hp_retire(dom, p, fn);
}

static int reclaim_any(enum scheme scheme, void *dom)
{
	return scheme == EPOCH ? barrierd_epoch_reclaim(dom) : barrierd_hp_reclaim(dom);
}

/* A free function that retires on its own domain, and tries to reclaim there. */
static struct {
	enum scheme scheme;
	void *dom;
	int retire_rc, reclaim_rc, calls;
} nested;

static void free_and_retire(void *p)
{
	nested.calls++;
	/* The child: only queued (this thread is inside the domain's free functions). */
	nested.retire_rc = retire_any(nested.scheme, nested.dom, malloc(16), count_free);
	nested.reclaim_rc = reclaim_any(nested.scheme, nested.dom);
	count_free(p);
}

static void free_retires(enum scheme scheme)
{
	struct barrierd *b;
	void *dom;

	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_int_equal(barrierd_open(&b, H.state), 0);
	dom = scheme == EPOCH ? (void *)barrierd_epoch_new(b, 1) : (void *)barrierd_hp_new(b, 1);
	assert_non_null(dom);
	nested.scheme = scheme;
	nested.dom = dom;
	nested.retire_rc = nested.reclaim_rc = -1;
	nested.calls = 0;
	__atomic_store_n(&nfreed, 0, __ATOMIC_RELAXED);
	/* Batch 1: this retire reclaims, and its free function retires the child (no deadlock). */
	assert_int_equal(retire_any(scheme, dom, malloc(16), free_and_retire), 0);
	assert_int_equal(nested.calls, 1);
	assert_int_equal(nested.retire_rc, 0);
	assert_int_equal(nested.reclaim_rc, -EDEADLK);
	assert_int_equal(__atomic_load_n(&nfreed, __ATOMIC_RELAXED), 1);
	/* The child stayed retired; the next reclaim, outside, frees it. */
	assert_int_equal(reclaim_any(scheme, dom), 0);
	assert_int_equal(__atomic_load_n(&nfreed, __ATOMIC_RELAXED), 2);
	if (scheme == EPOCH)
		barrierd_epoch_free(dom);
	else
		barrierd_hp_free(dom);
	barrierd_close(b);
}

static void epoch_torture_free_retires(void **state)
{
	(void)state;
	free_retires(EPOCH);
}

static void hp_torture_free_retires(void **state)
{
	(void)state;
	free_retires(HP);
}

/*
 * A reader that stays in its section holds the retirer whose batch must wait for it, and only
 * that one: another thread's retire that does not fill a batch returns at once (it used to
 * sleep on the domain's mutex behind the waiting retirer), and a synchronize with a deadline
 * times out.
 */
struct stuck {
	struct barrierd_epoch *e;
	int started, done;
	int rc[2]; /* what the thread's calls returned (cmocka asserts only in the main thread) */
};

static void *blocked_retirer(void *arg)
{
	struct stuck *s = arg;

	s->rc[0] = barrierd_epoch_retire(s->e, malloc(16), count_free);
	__atomic_store_n(&s->started, 1, __ATOMIC_RELEASE);
	/* The second fills the batch of 2: a synchronize that waits for the reader. */
	s->rc[1] = barrierd_epoch_retire(s->e, malloc(16), count_free);
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *other_retirer(void *arg)
{
	struct stuck *s = arg;

	s->rc[0] = barrierd_epoch_retire(s->e, malloc(16), count_free);
	s->rc[1] = barrierd_epoch_synchronize(s->e, 20 * 1000 * 1000);
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int wait_flag(const int *f, uint64_t ns)
{
	uint64_t t0 = bd_mono_ns();

	while (!__atomic_load_n(f, __ATOMIC_ACQUIRE))
		if (bd_mono_ns() - t0 > ns)
			return 0;
		else
			usleep(1000);
	return 1;
}

static void epoch_torture_stuck_reader(void **state)
{
	struct barrierd *b;
	struct barrierd_epoch_record *r;
	struct stuck sa = {0}, sb = {0};
	pthread_t ta, tb;

	(void)state;
	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_int_equal(barrierd_open(&b, H.state), 0);
	sa.e = sb.e = barrierd_epoch_new(b, 2);
	assert_non_null(sa.e);
	__atomic_store_n(&nfreed, 0, __ATOMIC_RELAXED);
	r = barrierd_epoch_register(sa.e);
	assert_non_null(r);
	barrierd_epoch_enter(r);
	assert_int_equal(pthread_create(&ta, NULL, blocked_retirer, &sa), 0);
	assert_true(wait_flag(&sa.started, 10 * TEST_SEC));
	usleep(100 * 1000); /* long enough for its synchronize to be waiting for us */
	assert_false(__atomic_load_n(&sa.done, __ATOMIC_ACQUIRE));
	/* The other writer is not held: it queues, and its own synchronize times out. */
	assert_int_equal(pthread_create(&tb, NULL, other_retirer, &sb), 0);
	assert_true(wait_flag(&sb.done, 10 * TEST_SEC));
	pthread_join(tb, NULL);
	assert_int_equal(sb.rc[0], 0);
	assert_int_equal(sb.rc[1], -ETIMEDOUT);
	assert_int_equal(__atomic_load_n(&nfreed, __ATOMIC_RELAXED), 0);
	barrierd_epoch_exit(r);
	pthread_join(ta, NULL);
	assert_int_equal(sa.rc[0], 0);
	assert_int_equal(sa.rc[1], 0);
	assert_int_equal(__atomic_load_n(&nfreed, __ATOMIC_RELAXED), 2);
	assert_int_equal(barrierd_epoch_reclaim(sa.e), 0);
	assert_int_equal(__atomic_load_n(&nfreed, __ATOMIC_RELAXED), 3);
	barrierd_epoch_unregister(sa.e, r);
	barrierd_epoch_free(sa.e);
	barrierd_close(b);
}

/* ---- the controls: a sham barrier ------------------------------------------------------- */

/* A set-up step of a control failed: not a catch. */
static void need(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "control set-up failed: %s\n", what);
		exit(2);
	}
}

static void control(enum scheme scheme, enum barrier_kind kind)
{
	struct barrierd_open_opts o = {.sz = sizeof(o), .flags = BARRIERD_OPEN_NO_DIRECT};
	struct fake_daemon d;
	struct reader rd[2];
	struct run w = {.scheme = scheme,
			.kind = kind,
			.nreaders = 1,
			.nslots = 1,
			.batch = 1,
			.stop_at_first = 1,
			.seconds = seconds_from_env("BARRIERD_CONTROL_SECONDS", CONTROL_SECONDS)};
	uint64_t v, t0, ncpu = test_possible_cpus();
	int rc;

	need(fake_create(&d, ncpu, FAKE_LIVE) == 0, "fake_create");
	for (uint64_t c = 0; c < ncpu; c++)
		fake_set_state(&d, c, BARRIERD_CPU_IDLE);
	/* The heartbeat only: a run of several seconds must not see the daemon go stale. */
	need(fake_start_ticker(&d, 0) == 0, "ticker");
	need(fake_start_doorbell(&d, FAKE_CREDIT_IDLE) == 0, "doorbell");
	need(fake_open_lib(&w.b, d.path, &o) == 0, "open");
	if (kind == SHAM_INSTANT) {
		/* After the open, which refuses times from the future: an hour ahead, every CPU. */
		uint64_t ahead = bd_mono_ns() + 3600 * TEST_SEC;

		for (uint64_t c = 0; c < ncpu; c++)
			bd_store(&d.h->per_cpu[c].last_interrupt_ns, ahead);
		fake_refold(&d);
	}
	/* The sham passes, and passes fast. */
	t0 = bd_mono_ns();
	rc = barrierd_barrier(w.b, (int64_t)TEST_HANG_GUARD_NS);
	need(rc == 0, "a sham barrier");
	printf("sham barrier (%s): %.1f us, %llu rings\n", kind_name[kind],
	       (double)(bd_mono_ns() - t0) / 1e3, (unsigned long long)fake_rings(&d));
	v = torture(&w, rd, cpus, ncpus);
	barrierd_close(w.b);
	fake_destroy(&d);
	need(w.retire_errors == 0 && w.reclaim_rc == 0, "retire");
	need(rd[0].sections > 0 && w.replaced > 0, "progress");
	/* The control is caught: the test fails, and its ctest (expect_caught.sh) passes. */
	if (v)
		fail_msg("%llu violations with a sham barrier: the torture sees a missing barrier",
			 (unsigned long long)v);
	printf("no violation in %.1f s: this control was not caught\n", (double)w.elapsed_ns / 1e9);
}

static void epoch_control(void **state)
{
	(void)state;
	control(EPOCH, SHAM_INSTANT);
}

static void epoch_control_doorbell(void **state)
{
	(void)state;
	control(EPOCH, SHAM_DOORBELL);
}

static void hp_control(void **state)
{
	(void)state;
	control(HP, SHAM_INSTANT);
}

static void hp_control_doorbell(void **state)
{
	(void)state;
	control(HP, SHAM_DOORBELL);
}

/*
 * argv[1]: run only the tests whose names match this pattern; without it, the tortures against
 * the real daemon (the controls fail by design, and need no root).
 */
int main(int argc, char **argv)
{
	const char *filter = argc > 1 ? argv[1] : "*_torture_*";
	cpu_set_t s;

	setvbuf(stdout, NULL, _IOLBF, 0);
	cmocka_set_test_filter(filter);
	if (!strstr(filter, "control"))
		test_require_root();
	if (sched_getaffinity(0, sizeof(s), &s)) {
		perror("sched_getaffinity");
		return 2;
	}
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &s))
			cpus[ncpus++] = c;
	if (ncpus < 2)
		test_skip_or_fail("needs two CPUs");
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(epoch_torture_1reader, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(epoch_torture_2readers, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(hp_torture_1reader, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(hp_torture_2readers, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(epoch_torture_free_retires, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(hp_torture_free_retires, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(epoch_torture_stuck_reader, h_setup, h_teardown),
	    cmocka_unit_test(epoch_control),
	    cmocka_unit_test(epoch_control_doorbell),
	    cmocka_unit_test(hp_control),
	    cmocka_unit_test(hp_control_doorbell),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
