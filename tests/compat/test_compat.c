// SPDX-License-Identifier: MIT
/*
 * A client built from the previous library code against this build's daemon.  The library is
 * libbarrierd as it was at COMPAT_COMMIT (ABI minor 0), compiled from that commit's history
 * into the build tree (tests/compat/CMakeLists.txt), and this file is compiled against that
 * commit's barrierd.h.  Such a client rings the doorbell only while the header's ARMED flag is
 * clear and sleeps without ringing while it is set: whatever a later daemon publishes for
 * newer clients, these barriers must still complete, and never early.
 *
 * Every barrier has a 5 s hang guard; after each one, the words it waited for must be past the
 * stamp (a stamp taken before barrierd_barrier(), which stamps again inside, for that form).
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"

#define GUARD_NS 5000000000LL /* hang guard per barrier */
#define ROUNDS 100

static const struct barrierd_header *M;
static size_t MSZ;
static struct barrierd *B;
static pid_t spin[64];
static int nspin;

/* The daemon of this build on a fresh state file, our old library's handle, a plain mapping. */
static void start(void)
{
	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_int_equal(barrierd_open(&B, H.state), 0);
	M = map_ro(H.state, &MSZ);
	assert_non_null(M);
}

static int teardown(void **state)
{
	test_kill_all(spin, nspin);
	nspin = 0;
	if (B)
		barrierd_close(B);
	B = NULL;
	if (M)
		munmap((void *)M, MSZ);
	M = NULL;
	return h_teardown(state);
}

static void load_every_cpu(void)
{
	nspin = test_spinners(spin, 64);
	assert_true(nspin > 0);
	test_sleep_ms(20); /* let them settle on their CPUs */
}

static uint64_t doorbell_rings(void)
{
	const struct barrierd_ext *x;

	if (!(bd_load(&M->flags) & BARRIERD_FEAT_EXTENSION))
		return 0;
	x = (const void *)((const char *)M + bd_load(&M->ext_offset));
	return bd_load(&x->doorbell_rings);
}

/* A barrier for ns stamp t returned 0: every CPU's word, hence the global one, is past t. */
static void check_ns(const char *what, int i, uint64_t t)
{
	uint64_t g = bd_load(&M->last_interrupt_ns);

	if (g <= t)
		fail_msg("%s %d returned early: global %llu, stamp %llu", what, i,
			 (unsigned long long)g, (unsigned long long)t);
	for (uint64_t c = 0; c < M->ncpu; c++) {
		uint64_t v = bd_load(&M->per_cpu[c].last_interrupt_ns);

		if (v <= t)
			fail_msg("%s %d returned early: cpu %llu at %llu, stamp %llu", what, i,
				 (unsigned long long)c, (unsigned long long)v,
				 (unsigned long long)t);
	}
}

struct tally {
	const char *what;
	int n;
	uint64_t worst_ns, rings0;
};

static void tally_start(struct tally *t, const char *what)
{
	t->what = what;
	t->n = 0;
	t->worst_ns = 0;
	t->rings0 = doorbell_rings();
}

static void tally_add(struct tally *t, uint64_t t0)
{
	uint64_t d = bd_mono_ns() - t0;

	t->n++;
	t->worst_ns = d > t->worst_ns ? d : t->worst_ns;
}

static void tally_print(const struct tally *t)
{
	printf("old library, %s: %d barriers returned 0, none early; slowest %.2f ms; doorbell "
	       "rings heard by the daemon %llu; daemon ABI %u.%u\n",
	       t->what, t->n, (double)t->worst_ns / 1e6,
	       (unsigned long long)(doorbell_rings() - t->rings0), M->abi_major, M->abi_minor);
}

/* The library this program runs is the old one, not today's from the build tree. */
static void library_is_the_old_one(void **state)
{
	char want[PATH_MAX], got[PATH_MAX];
	Dl_info info;

	(void)state;
	assert_true(dladdr((void *)barrierd_barrier, &info) != 0 && info.dli_fname);
	assert_non_null(realpath(info.dli_fname, got));
	assert_non_null(realpath(COMPAT_LIB_DIR, want));
	if (strncmp(got, want, strlen(want)) != 0 || got[strlen(want)] != '/')
		fail_msg("barrierd_barrier comes from %s, not from the library of %s in %s", got,
			 COMPAT_COMMIT, want);
	printf("client library: %s (commit %s)\n", got, COMPAT_COMMIT);
}

static void barriers(const char *what)
{
	struct tally t;

	tally_start(&t, what);
	for (int i = 0; i < ROUNDS; i++) {
		uint64_t t0 = bd_mono_ns(), stamp = barrierd_stamp_ns(B);
		int ret = barrierd_barrier(B, GUARD_NS);

		if (ret)
			fail_msg("%s: barrier %d: %s", what, i, strerror(-ret));
		check_ns(what, i, stamp);
		tally_add(&t, t0);
	}
	tally_print(&t);
}

static void barrier_idle(void **state)
{
	(void)state;
	start();
	barriers("barrierd_barrier, idle");
}

static void barrier_loaded(void **state)
{
	(void)state;
	start();
	load_every_cpu();
	barriers("barrierd_barrier, nice-19 spinner on every CPU");
}

/* Half on the idle machine, half with every CPU loaded. */
static void wait_vtime(void **state)
{
	struct tally t;

	(void)state;
	start();
	tally_start(&t, "barrierd_wait_vtime, idle then loaded");
	for (int i = 0; i < ROUNDS; i++) {
		uint64_t t0 = bd_mono_ns(), v, g;
		int ret;

		if (i == ROUNDS / 2)
			load_every_cpu();
		v = barrierd_stamp_vtime(B);
		ret = barrierd_wait_vtime(B, v, GUARD_NS);
		if (ret)
			fail_msg("vtime barrier %d: %s", i, strerror(-ret));
		g = bd_load(&M->last_interrupt_vtime);
		if (g <= v)
			fail_msg("vtime barrier %d returned early: global vtime %llu, stamp %llu",
				 i, (unsigned long long)g, (unsigned long long)v);
		tally_add(&t, t0);
	}
	tally_print(&t);
}

/*
 * One CPU of ours at a time, and every fourth wait all of them; half idle, half loaded.
 * Only the set's words are promised past the stamp.
 */
static void wait_cpus(void **state)
{
	cpu_set_t mine;
	int cpus[CPU_SETSIZE], n = 0;
	struct tally t;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(mine), &mine), 0);
	for (int c = 0; c < CPU_SETSIZE && (uint64_t)c < test_possible_cpus(); c++)
		if (CPU_ISSET(c, &mine))
			cpus[n++] = c;
	assert_true(n > 0);
	start();
	tally_start(&t, "barrierd_wait_cpus, idle then loaded");
	for (int i = 0; i < ROUNDS; i++) {
		uint64_t t0 = bd_mono_ns(), stamp;
		cpu_set_t set;
		int ret;

		if (i == ROUNDS / 2)
			load_every_cpu();
		CPU_ZERO(&set);
		if (i % 4 == 3)
			set = mine;
		else
			CPU_SET(cpus[i % n], &set);
		stamp = barrierd_stamp_ns(B);
		ret = barrierd_wait_cpus(B, stamp, &set, sizeof(set), GUARD_NS);
		if (ret)
			fail_msg("wait_cpus %d: %s", i, strerror(-ret));
		for (int c = 0; c < CPU_SETSIZE && (uint64_t)c < M->ncpu; c++) {
			uint64_t v;

			if (!CPU_ISSET(c, &set))
				continue;
			v = bd_load(&M->per_cpu[c].last_interrupt_ns);
			if (v <= stamp)
				fail_msg("wait_cpus %d returned early: cpu %d at %llu, stamp %llu",
					 i, c, (unsigned long long)v, (unsigned long long)stamp);
		}
		tally_add(&t, t0);
	}
	tally_print(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(library_is_the_old_one),
	    cmocka_unit_test_setup_teardown(barrier_idle, h_setup, teardown),
	    cmocka_unit_test_setup_teardown(barrier_loaded, h_setup, teardown),
	    cmocka_unit_test_setup_teardown(wait_vtime, h_setup, teardown),
	    cmocka_unit_test_setup_teardown(wait_cpus, h_setup, teardown),
	};

	test_require_root();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
