// SPDX-License-Identifier: MIT
/*
 * The demand facts the publisher hands the demand unit (publisher_facts, src/daemon/publisher.c)
 * against the horizon H, one CPU case per row: which CPUs a credit pass waits for (owed), which
 * it would move (credit_needed), the floor the served word stays below (quiet_floor) and who
 * holds the global value (hold).  A busy CPU whose latest event was a daemon thread's (its stamp
 * past sig_stamp: such switches stamp but never signal, docs/DEMAND.md) may go idle with no
 * signal, so it counts as quiet, never as owed.  No BPF: the publisher runs over a real state
 * file and a simulated slot array, and each row sets the view a pass leaves (the published
 * values and states) and the slots as the BPF programs would have left them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "demand.h"
#include "publisher.h"
#include "state_file.h"
#include "test_util.h"

#define NCPU 2
#define HERE 0 /* the CPU the daemon's thread runs on; row CPU is the other one */
#define ROW_CPU 1
#define H (1000 * TEST_MS)
#define NOW (H + TEST_MS)
#define SILENT (100 * TEST_MS)
#define NONE UINT64_MAX

struct row {
	const char *name;
	/* The CPU's published view and slot. */
	uint8_t state;	    /* enum barrierd_cpu_state, as of the latest pass */
	uint64_t idle;	    /* BARRIERD_SLOT_* */
	uint64_t stamp;	    /* the latest event's */
	uint64_t sig_stamp; /* the latest event's that was not a daemon thread's */
	uint64_t ns;	    /* its published value */
	/* The facts expected. */
	bool owed, credit_needed;
	uint64_t quiet_floor, credit_floor, hold;
};

/* Not const: each row is its test's state (cmocka's void pointer). */
static struct row ROWS[] = {
    /* Busy, its latest event signalled, heard lately: only its own next event moves it. */
    {"busy_signalled_lagging_owed", BARRIERD_CPU_BUSY, BARRIERD_SLOT_BUSY, H - 10 * TEST_US,
     H - 10 * TEST_US, H - 10 * TEST_US, true, false, NONE, NONE, 0},
    /* The same, silent for longer than silent_ns: neither waited for nor credited. */
    {"busy_signalled_silent_not_owed", BARRIERD_CPU_BUSY, BARRIERD_SLOT_BUSY, H - 200 * TEST_MS,
     H - 200 * TEST_MS, H - 200 * TEST_MS, false, false, NONE, NONE, 0},
    /*
     * Busy, its latest event a daemon thread's, lagging H, its slot busy (the thread, or a task
     * after it, still runs): S stays below it and nothing waits for it, but credit would not
     * move it, so none is asked for.
     */
    {"busy_daemon_ran_lagging_quiet", BARRIERD_CPU_BUSY, BARRIERD_SLOT_BUSY, H - 10 * TEST_US,
     H - 200 * TEST_US, H - 10 * TEST_US, false, false, H - 10 * TEST_US, NONE, 0},
    /* The same once the daemon thread went to sleep (slot IDLE, no signal): credit moves it. */
    {"busy_daemon_ran_went_idle_credited", BARRIERD_CPU_BUSY, BARRIERD_SLOT_IDLE, H - 10 * TEST_US,
     H - 200 * TEST_US, H - 10 * TEST_US, false, true, H - 10 * TEST_US, H - 10 * TEST_US, 0},
    /* Idle, lagging H: quiet, credited, and it holds the global value. */
    {"idle_lagging_quiet", BARRIERD_CPU_IDLE, BARRIERD_SLOT_IDLE, H - 10 * TEST_US,
     H - 10 * TEST_US, H - 10 * TEST_US, false, true, H - 10 * TEST_US, H - 10 * TEST_US,
     H - 10 * TEST_US},
    /* Busy, its latest event a daemon thread's, past H: no credit asked, still the floor. */
    {"busy_daemon_ran_past_h_floor", BARRIERD_CPU_BUSY, BARRIERD_SLOT_BUSY, H + 10 * TEST_US,
     H - 10 * TEST_US, H + 10 * TEST_US, false, false, H + 10 * TEST_US, NONE, 0},
};

/* One publisher for every row: each row sets every word publisher_facts reads. */
static struct {
	char dir[128], path[160];
	struct state_file sf;
	struct publisher p;
	struct barrierd_slot *slots;
	volatile uint64_t bss_vtime, bss_wm;
} W;

static int world_setup(void **state)
{
	char err[256];

	(void)state;
	if (test_mkdtemp(W.dir, sizeof(W.dir), "/tmp"))
		return -1;
	snprintf(W.path, sizeof(W.path), "%s/state", W.dir);
	W.slots = aligned_alloc(64, NCPU * sizeof(*W.slots));
	if (!W.slots)
		return -1;
	memset(W.slots, 0, NCPU * sizeof(*W.slots));
	if (state_file_open(&W.sf, W.path, NCPU, err, sizeof(err))) {
		print_error("state_file_open: %s\n", err);
		return -1;
	}
	/* No online mask (every CPU online), no detach check. */
	return publisher_init(&W.p, &W.sf, W.slots, &W.bss_vtime, &W.bss_wm, NULL, NCPU, -1) ? -1
											     : 0;
}

static int world_teardown(void **state)
{
	(void)state;
	publisher_free(&W.p);
	state_file_close(&W.sf);
	test_rmtree(W.dir);
	free(W.slots);
	return 0;
}

/* A CPU as a pass leaves it (published value, state) and as the programs left its slot. */
static void set_cpu(int c, uint8_t st, uint64_t idle, uint64_t stamp, uint64_t sig_stamp,
		    uint64_t ns)
{
	W.p.state[c] = st;
	W.p.ns[c] = ns;
	W.p.online[c] = 1;
	W.slots[c].idle = idle;
	W.slots[c].stamp = stamp;
	W.slots[c].sig_stamp = sig_stamp;
	W.slots[c].switches = 1;
}

static void check_row(void **state)
{
	const struct row *r = *state;
	struct demand_facts f = {0};
	uint64_t here_ns = H + 500 * TEST_US;

	/* The daemon's own CPU: busy, signalled, past H, above the row's CPU (so out of the way).
	 */
	set_cpu(HERE, BARRIERD_CPU_BUSY, BARRIERD_SLOT_BUSY, here_ns, here_ns, here_ns);
	set_cpu(ROW_CPU, r->state, r->idle, r->stamp, r->sig_stamp, r->ns);
	W.p.g_ns = r->ns < here_ns ? r->ns : here_ns;

	publisher_facts(&W.p, H, HERE, NOW, SILENT, &f);
	assert_int_equal(f.now, NOW);
	assert_int_equal(f.g, W.p.g_ns);
	assert_int_equal(f.lagging, W.p.g_ns <= H);
	assert_int_equal(f.owed, r->owed);
	assert_int_equal(f.credit_needed, r->credit_needed);
	assert_int_equal(f.quiet_floor, r->quiet_floor);
	assert_int_equal(f.credit_floor, r->credit_floor);
	assert_int_equal(f.hold, r->hold);
}

#define ROW_TEST(i)                                                                                \
	{                                                                                          \
		ROWS[i].name, check_row, NULL, NULL, &ROWS[i]                                      \
	}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    ROW_TEST(0), ROW_TEST(1), ROW_TEST(2), ROW_TEST(3), ROW_TEST(4), ROW_TEST(5),
	};

	return cmocka_run_group_tests(tests, world_setup, world_teardown);
}
