// SPDX-License-Identifier: MIT
/*
 * Direct evidence (CLIENT-EVIDENCE.md) against the real daemon: what the library credits
 * from the slots it was handed, seen through barrierd_set_credit_observer().
 *
 * Every test runs on a private state path in a temporary directory (never /run/barrierd), with
 * the client pinned to CPU 0 and CPU 1 left to idle or to a spinner: it needs two CPUs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"
#include <barrierd_slot.h>

#include <pthread.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>

#define CLIENT_CPU 0
#define OTHER_CPU 1

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * TEST_SEC + (uint64_t)ts.tv_nsec;
}

/* Open a handle on the running daemon and wait (hang guard) until it credits from slots. */
static struct barrierd *open_direct(void)
{
	struct barrierd *b;

	assert_int_equal(barrierd_open(&b, H.state), 0);
	/* The handle asks for the slots at open and, at most every 100 ms, in a wait. */
	for (int i = 0; i < 100 && !barrierd_direct(b); i++) {
		assert_int_equal(barrierd_barrier(b, 5 * TEST_SEC), 0);
		test_sleep_ms(20);
	}
	if (!barrierd_direct(b))
		fail_msg("the handle does not credit from the daemon's slots");
	return b;
}

/* ---- future_stamp_not_passed ------------------------------------------------------------- */

struct early {
	uint64_t T;
	unsigned n;	/* idle or own-CPU credits with a clock reading not above T */
	unsigned cpu;	/* the first one's */
	int kind;	/* BARRIERD_CREDIT_* */
	uint64_t value; /* its clock reading */
};

static void watch_early(void *arg, uint64_t T, unsigned cpu, int kind, uint64_t value)
{
	struct early *e = arg;

	/* A stamp's value above T is evidence whatever the clock; idle and self need r > T. */
	if (T != e->T || kind == BARRIERD_CREDIT_STAMP || value > T)
		return;
	if (e->n++ == 0) {
		e->cpu = cpu;
		e->kind = kind;
		e->value = value;
	}
}

static void check_early(const struct early *e, const char *what)
{
	if (e->n)
		fail_msg("%s: %u CPU(s) credited %s for a stamp %llu ns ahead of the clock reading "
			 "%llu (cpu %u first)",
			 what, e->n, e->kind == BARRIERD_CREDIT_IDLE ? "idle" : "as our own",
			 (unsigned long long)(e->T - e->value), (unsigned long long)e->value,
			 e->cpu);
}

/*
 * A wait for T returned 0: only the clock having reached T could make that right.  Any error
 * (the timeout; -ESTALE, for a stamp the library cannot place in its clock) passes nothing.
 */
static void check_wait(int ret, uint64_t T, const char *what)
{
	uint64_t now = now_ns();

	if (ret == 0 && now <= T)
		fail_msg("%s returned 0 for a stamp %llu ns in the future", what,
			 (unsigned long long)(T - now));
	print_message("%s: %d\n", what, ret);
}

/*
 * Rule 11's r > T: a CPU that reads IDLE now, or the CPU the caller runs on now, proves nothing
 * about a stamp T later than now.  barrierd_passed() and the waits accept any T (another
 * thread's, or one from the future), so a stamp a second ahead must pass none of them, on an
 * idle machine where every CPU but ours reads IDLE at once.
 */
static void future_stamp_not_passed(void **state)
{
	struct early e = {0};
	struct barrierd *b;
	cpu_set_t own;

	(void)state;
	test_pin(CLIENT_CPU);
	assert_int_equal(h_start(&H, CLIENT_CPU, NULL), 0);
	b = open_direct();
	assert_int_equal(barrierd_set_credit_observer(b, watch_early, &e), 0);

	e.T = barrierd_stamp_ns(b) + TEST_SEC;
	/* Polled for a while: on a machine busy elsewhere, CPU 1 reads IDLE now and then. */
	for (int i = 0; i < 50; i++) {
		if (barrierd_passed(b, e.T))
			fail_msg("barrierd_passed() true for a stamp %llu ns in the future",
				 (unsigned long long)(e.T - now_ns()));
		test_sleep_ms(1);
	}
	check_early(&e, "barrierd_passed()");

	/* Our own CPU alone: own-CPU credit is all that could pass it. */
	CPU_ZERO(&own);
	CPU_SET(CLIENT_CPU, &own);
	check_wait(barrierd_wait_cpus(b, e.T, &own, sizeof(own), 30 * TEST_MS), e.T,
		   "barrierd_wait_cpus() on our own CPU");
	check_early(&e, "barrierd_wait_cpus()");
	check_wait(barrierd_wait(b, e.T, 30 * TEST_MS), e.T, "barrierd_wait()");
	check_early(&e, "barrierd_wait()");

	/* Not vacuous: the same handle passes a stamp of now, with direct credit. */
	assert_true(barrierd_direct(b));
	assert_int_equal(barrierd_barrier(b, 5 * TEST_SEC), 0);
	barrierd_close(b);
}

/* ---- held_link_keeps_idle_live ----------------------------------------------------------- */

/*
 * Our own view of the slots, as a client gets them (docs/PROTOCOL.md §7), keeping only the
 * mapping: every link descriptor received is closed at once, so that this view holds no
 * program attached (the library's handle must be what does).
 */
static const struct barrierd_slot *map_slots(uint64_t ncpu, size_t *len)
{
	uint64_t n = 0;
	const struct barrierd_slot *map = test_map_slots(H.dir, len, &n);

	assert_non_null(map);
	assert_int_equal(n, ncpu);
	return map;
}

/* Every CPU's sched_switch count: it rises only while the program is attached. */
static uint64_t switches(const struct barrierd_slot *s, uint64_t ncpu)
{
	uint64_t n = 0;

	for (uint64_t c = 0; c < ncpu; c++)
		n += __atomic_load_n(&s[c].switches, __ATOMIC_RELAXED);
	return n;
}

/* Does the count rise over a stretch in which this thread sleeps (switches of its own)? */
static bool switches_rise(const struct barrierd_slot *s, uint64_t ncpu)
{
	uint64_t n0 = switches(s, ncpu);

	for (int i = 0; i < 20; i++)
		test_sleep_ms(1);
	return switches(s, ncpu) != n0;
}

struct idle_watch {
	bool on;	/* the spinner runs on OTHER_CPU */
	unsigned idle;	/* idle credits for OTHER_CPU while it ran */
	unsigned total; /* credits seen while it ran, any kind, any CPU */
	uint64_t value; /* the first such idle credit's clock reading */
};

static void watch_idle(void *arg, uint64_t T, unsigned cpu, int kind, uint64_t value)
{
	struct idle_watch *w = arg;

	(void)T;
	if (!w->on)
		return;
	w->total++;
	if (cpu == OTHER_CPU && kind == BARRIERD_CREDIT_IDLE && w->idle++ == 0)
		w->value = value;
}

static pid_t spinner = -1;

static void stop_spinner(void)
{
	test_kill_all(&spinner, 1);
}

/*
 * The handle holds the sched_switch link it was handed, so the program stays attached, and the
 * idle words live, for as long as the handle is open, whatever happens to the daemon: after a
 * SIGKILL (the file still says running, and a 60 s heartbeat period keeps the library's
 * liveness bound, three periods, from ending direct use), a spinner started on a CPU that was
 * idle makes that CPU's word read BUSY, and it gets no idle credit.  A library that kept only
 * the map would see the word frozen at IDLE.
 */
static void held_link_keeps_idle_live(void **state)
{
	const char *args[] = {"--heartbeat-period", "60000", NULL};
	uint64_t ncpu = test_possible_cpus(), end;
	const struct barrierd_slot *slots;
	struct idle_watch w = {0};
	struct barrierd *b;
	unsigned passed = 0;
	size_t len;
	int st;

	(void)state;
	if (ncpu < 2)
		skip();
	test_pin(CLIENT_CPU);
	assert_int_equal(h_start(&H, CLIENT_CPU, args), 0);
	b = open_direct();
	slots = map_slots(ncpu, &len);
	assert_int_equal(barrierd_set_credit_observer(b, watch_idle, &w), 0);
	/* With the daemon on our CPU, CPU 1 idles (but for other users of the machine). */
	test_sleep_ms(20);

	assert_int_equal(kill(H.pid, SIGKILL), 0);
	st = test_reap(H.pid, 10);
	H.pid = -1;
	assert_true(st != -1 && WIFSIGNALED(st));
	/* Its descriptors are closed: only what the handle holds keeps the program. */
	test_sleep_ms(20);
	assert_true(barrierd_direct(b));
	if (!switches_rise(slots, ncpu))
		fail_msg("the sched_switch program left the tracepoint when the daemon was killed, "
			 "although the handle is open: the handle does not hold its link");
	print_message(
	    "cpu %d's idle word after the kill: %llu\n", OTHER_CPU,
	    (unsigned long long)__atomic_load_n(&slots[OTHER_CPU].idle, __ATOMIC_RELAXED));

	spinner = test_spin_running(OTHER_CPU);
	assert_true(spinner > 0);
	w.on = true;
	/* Barriers for 300 ms: CPU 1 passes only by its own events, never as idle. */
	end = now_ns() + 300 * TEST_MS;
	while (now_ns() < end) {
		int ret = barrierd_barrier(b, 20 * TEST_MS);

		assert_true(ret == 0 || ret == -ETIMEDOUT);
		passed += ret == 0;
	}
	w.on = false;
	print_message("%u barriers passed, %u direct credits while the spinner ran\n", passed,
		      w.total);
	assert_int_equal(__atomic_load_n(&slots[OTHER_CPU].idle, __ATOMIC_RELAXED),
			 BARRIERD_SLOT_BUSY);
	stop_spinner();
	if (w.idle)
		fail_msg("cpu %d credited idle %u times (first at %llu) while a task spun on it",
			 OTHER_CPU, w.idle, (unsigned long long)w.value);
	assert_true(w.total > 0); /* the observer saw direct credit: not vacuous */

	/* Closed, the handle lets the program go: nothing else holds the link. */
	barrierd_close(b);
	for (int i = 0; i < 100 && switches_rise(slots, ncpu); i++)
		;
	if (switches_rise(slots, ncpu))
		fail_msg("the sched_switch program is still attached after barrierd_close()");
	munmap((void *)slots, len);
}

/* ---- offline_at_start_credited_idle (label hotplug) -------------------------------------- */

static int cpu_online_set(int cpu, int on)
{
	char path[96];
	int fd, ok;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ok = write(fd, on ? "1" : "0", 1) == 1;
	close(fd);
	return ok ? 0 : -errno;
}

struct kinds {
	bool on;
	unsigned idle, other; /* OTHER_CPU's credits: idle, and any other kind */
};

static void count_kinds(void *arg, uint64_t T, unsigned cpu, int kind, uint64_t value)
{
	struct kinds *k = arg;

	(void)T;
	(void)value;
	if (!k->on || cpu != OTHER_CPU)
		return;
	if (kind == BARRIERD_CREDIT_IDLE)
		k->idle++;
	else
		k->other++;
}

/*
 * CLIENT-EVIDENCE §6, offline CPUs: a CPU offline when the daemon starts has never switched since
 * the attach (its idle word UNKNOWN), and the daemon swaps it to IDLE before it freezes the
 * slots, so clients credit it without asking anyone (VMs with more possible than online CPUs).
 * Once it comes up, its first switch to a task exchanges BUSY: a spinner there is never
 * credited idle.  Only under the hotplug label (it takes CPU 1 offline; the fixture restores).
 */
static void offline_at_start_credited_idle(void **state)
{
	struct kinds k = {0};
	const struct barrierd_slot *slots;
	struct barrierd *b;
	size_t len;
	uint64_t end;
	int ret;

	(void)state;
	test_pin(CLIENT_CPU);
	ret = cpu_online_set(OTHER_CPU, 0);
	if (ret)
		test_skip_or_fail("cannot take CPU 1 offline");
	assert_int_equal(h_start(&H, CLIENT_CPU, NULL), 0);
	b = open_direct();
	slots = map_slots(test_possible_cpus(), &len);
	assert_int_equal(__atomic_load_n(&slots[OTHER_CPU].idle, __ATOMIC_ACQUIRE),
			 BARRIERD_SLOT_IDLE);
	assert_int_equal(barrierd_set_credit_observer(b, count_kinds, &k), 0);
	k.on = true;
	for (int i = 0; i < 100; i++) {
		unsigned before = k.idle;

		assert_int_equal(barrierd_barrier(b, 5 * TEST_SEC), 0);
		/* At least one idle credit per barrier (a barrier may look more than once). */
		if (k.idle == before)
			fail_msg("barrier %d passed without crediting the offline CPU 1 idle", i);
	}
	k.on = false;
	print_message("CPU 1 offline since before the start: %u idle credits, %u other\n", k.idle,
		      k.other);

	/* Up again, with a task on it: never idle credit while that task runs. */
	assert_int_equal(cpu_online_set(OTHER_CPU, 1), 0);
	spinner = test_spin_running(OTHER_CPU);
	assert_true(spinner > 0);
	k.idle = k.other = 0;
	k.on = true;
	end = now_ns() + 200 * TEST_MS;
	while (now_ns() < end)
		assert_int_equal(barrierd_barrier(b, 5 * TEST_SEC), 0);
	k.on = false;
	print_message("CPU 1 online and busy: %u idle credits, %u other\n", k.idle, k.other);
	assert_int_equal(k.idle, 0); /* stamps or the daemon's published words serve it */
	assert_int_equal(__atomic_load_n(&slots[OTHER_CPU].idle, __ATOMIC_ACQUIRE),
			 BARRIERD_SLOT_BUSY);
	stop_spinner();
	barrierd_close(b);
	munmap((void *)slots, len);
}

/* ---- idle_credit_before_stamp ------------------------------------------------------------ */

struct first_kind {
	int kind; /* OTHER_CPU's credit in the call: BARRIERD_CREDIT_*, 0 for none */
};

static void watch_other(void *arg, uint64_t T, unsigned cpu, int kind, uint64_t value)
{
	struct first_kind *f = arg;

	(void)T;
	(void)value;
	if (cpu == OTHER_CPU && !f->kind)
		f->kind = kind;
}

/* A thread on OTHER_CPU that runs for a moment at each byte, then blocks again (goes idle). */
static void *blinker(void *arg)
{
	int fd = *(int *)arg;
	char c;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(OTHER_CPU, &set);
	sched_setaffinity(0, sizeof(set), &set);
	while (read(fd, &c, 1) == 1 && c)
		;
	return NULL;
}

/*
 * CLIENT-EVIDENCE §10: a CPU that ran after T and went idle has both a stamp above T and an
 * IDLE word; the library credits it by the clock reading (idle), which lets a fresh barrier
 * skip the time-namespace move check.  A trial counts when the slot did not change across the
 * call (the same stamp above T, IDLE before and after): the library saw both, and must report
 * idle.  Trials where something else ran on CPU 1 meanwhile are left out (a loaded machine).
 */
static void idle_credit_before_stamp(void **state)
{
	struct first_kind f = {0};
	const struct barrierd_slot *slots;
	struct barrierd *b;
	unsigned decisive = 0, idle = 0;
	int fds[2];
	pthread_t th;
	size_t len;

	(void)state;
	test_pin(CLIENT_CPU);
	assert_int_equal(h_start(&H, CLIENT_CPU, NULL), 0);
	b = open_direct();
	slots = map_slots(test_possible_cpus(), &len);
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(pthread_create(&th, NULL, blinker, &fds[0]), 0);
	assert_int_equal(barrierd_set_credit_observer(b, watch_other, &f), 0);
	for (int i = 0; i < 200 && decisive < 20; i++) {
		const struct barrierd_slot *s = &slots[OTHER_CPU];
		uint64_t T = barrierd_stamp_ns(b), st,
			 end = now_ns() + 100 * TEST_MS; /* hang guard */
		char one = 1;

		assert_int_equal(write(fds[1], &one, 1), 1);
		/* Until the blinker ran after T and CPU 1 went idle again. */
		do {
			st = __atomic_load_n(&s->stamp, __ATOMIC_ACQUIRE);
		} while ((st <= T ||
			  __atomic_load_n(&s->idle, __ATOMIC_ACQUIRE) != BARRIERD_SLOT_IDLE) &&
			 now_ns() < end);
		if (st <= T || __atomic_load_n(&s->idle, __ATOMIC_ACQUIRE) != BARRIERD_SLOT_IDLE)
			continue;
		f.kind = 0;
		assert_true(barrierd_passed(b, T));
		if (!f.kind || __atomic_load_n(&s->stamp, __ATOMIC_ACQUIRE) != st ||
		    __atomic_load_n(&s->idle, __ATOMIC_ACQUIRE) != BARRIERD_SLOT_IDLE)
			continue; /* credited by the file, or CPU 1 switched during the call */
		decisive++;
		if (f.kind == BARRIERD_CREDIT_IDLE)
			idle++;
		else
			fail_msg("CPU 1, idle with a stamp above T, credited by kind %d, not idle",
				 f.kind);
	}
	barrierd_set_credit_observer(b, NULL, NULL);
	assert_int_equal(write(fds[1], "", 1), 1);
	pthread_join(th, NULL);
	close(fds[0]);
	close(fds[1]);
	print_message("CPU 1 idle with a stamp above T: %u trials, %u idle credits\n", decisive,
		      idle);
	if (!decisive)
		test_skip_or_fail("CPU 1 never stayed idle across a call (a loaded machine?)");
	barrierd_close(b);
	munmap((void *)slots, len);
}

static int teardown(void **state)
{
	stop_spinner();
	cpu_online_set(OTHER_CPU, 1); /* if a test took it offline */
	return h_teardown(state);
}

int main(int argc, char **argv)
{
	test_require_root();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(future_stamp_not_passed, h_setup, teardown),
	    cmocka_unit_test_setup_teardown(held_link_keeps_idle_live, h_setup, teardown),
	    cmocka_unit_test_setup_teardown(idle_credit_before_stamp, h_setup, teardown),
	};
	const struct CMUnitTest hotplug[] = {
	    cmocka_unit_test_setup_teardown(offline_at_start_credited_idle, h_setup, teardown),
	};

	/* `hotplug`: the case that takes a CPU offline (its own ctest, label hotplug). */
	if (argc > 1 && !strcmp(argv[1], "hotplug"))
		return cmocka_run_group_tests(hotplug, NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
