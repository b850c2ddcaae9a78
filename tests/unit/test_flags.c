// SPDX-License-Identifier: MIT
/*
 * header.flags has several writers: the start, the stop path and the SIGSYS handler (on any
 * thread), each through state_flags_update or a CAS.  Each must change only its own bits: a
 * stop that a concurrent update of another bit overwrites leaves a dead daemon's file marked
 * running (docs/LIFECYCLE.md, "Flags").  No BPF here: the publisher runs on simulated slots.
 */
#include "publisher.h"
#include "state_file.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define TRIALS 200000

struct toggler {
	struct publisher *p;
	uint64_t rounds; /* advanced after every update */
	int stop;
};

static void *toggle(void *arg)
{
	struct toggler *t = arg;

	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
		/* Another writer's bit, set and cleared through the one RMW helper. */
		state_flags_update(&t->p->sf->hdr->flags, 0, BARRIERD_FLAG_ARMED);
		__atomic_fetch_add(&t->rounds, 1, __ATOMIC_RELEASE);
		state_flags_update(&t->p->sf->hdr->flags, BARRIERD_FLAG_ARMED, 0);
		__atomic_fetch_add(&t->rounds, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void stop_survives_concurrent_updates(void **state)
{
	char dir[] = "/tmp/barrierd-flags-XXXXXX", path[64], err[512];
	volatile uint64_t bss_vtime = 0, bss_wm = 0;
	struct barrierd_slot *slots;
	struct state_file sf;
	struct publisher p;
	struct toggler t = {.p = &p};
	pthread_t th;
	unsigned lost = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/state", dir);
	assert_int_equal(state_file_open(&sf, path, 1, err, sizeof(err)), 0);
	slots = aligned_alloc(64, sizeof(*slots));
	assert_non_null(slots);
	memset(slots, 0, sizeof(*slots));
	assert_int_equal(publisher_init(&p, &sf, slots, &bss_vtime, &bss_wm, NULL, 1, -1), 0);
	assert_int_equal(pthread_create(&th, NULL, toggle, &t), 0);

	for (int i = 0; i < TRIALS; i++) {
		uint64_t r;

		/* Running again (the test's own RMW: it must not be the write that is lost). */
		__atomic_fetch_and(&sf.hdr->flags, ~BARRIERD_FLAG_STOPPED, __ATOMIC_SEQ_CST);
		__atomic_fetch_or(&sf.hdr->flags, BARRIERD_FLAG_RUNNING, __ATOMIC_SEQ_CST);
		for (volatile int k = rand() % 512; k > 0; k--)
			;
		state_file_set_stopped(&sf, p.g_ns, p.g_vt);
		/* Let the other thread finish the update it was in, and one more. */
		r = __atomic_load_n(&t.rounds, __ATOMIC_ACQUIRE);
		while (__atomic_load_n(&t.rounds, __ATOMIC_ACQUIRE) < r + 2)
			;
		if (!(__atomic_load_n(&sf.hdr->flags, __ATOMIC_ACQUIRE) & BARRIERD_FLAG_STOPPED))
			lost++;
	}
	__atomic_store_n(&t.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	if (lost)
		print_error("%u of %d stops were overwritten by a concurrent flags update\n", lost,
			    TRIALS);
	assert_int_equal(lost, 0);

	publisher_free(&p);
	state_file_close(&sf);
	free(slots);
	unlink(path);
	snprintf(path, sizeof(path), "%s/state.lock", dir);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(stop_survives_concurrent_updates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
