// SPDX-License-Identifier: MIT
/*
 * What one user can make the daemon spend (docs/THREAT-MODEL.md §5, "What one user can make the
 * daemon spend").  A forked child drops to nobody and, for the attack's length, combines:
 * four threads asleep unmarked on the global word (the daemon takes them for clients that
 * cannot ring and follows), two pipe ping-pong pairs (a switch per bounce, each one an event a
 * following daemon hears), a doorbell flood and a switch flood (two threads pinned to one CPU
 * calling sched_yield()).  Meanwhile a root client passes a barrier every 10 ms.
 *
 * Checked: the daemon follows (the attack is real: its log says so), every barrier of the root
 * client passes, and the structural bounds hold over the window: passes at most one per
 * FOLLOW_GAP_NS sustained (src/daemon/demand.c, the follow gate) plus its burst, and nudges at most
 * --max-nudge-rate per CPU per second plus their burst.  The margin is generous: the figure
 * this guards against is several thousand passes a second.  The daemon's CPU is printed, never
 * asserted (timing goals do not go in tests; bench/follow_attack.sh measures it).
 *
 *   test_follow_bound [--seconds N]   (default 5)
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <linux/futex.h>
#include <pthread.h>

#include "harness.h"

/* The follow gate's count bound (DEMAND_FOLLOW_GAP_NS, _BURST in src/daemon/demand.h). */
#define FOLLOW_RATE 1000.0
#define FOLLOW_BURST 8
/* --max-nudge-rate's default and the nudges' burst (docs/DEMAND.md, "Nudges"). */
#define NUDGE_RATE 200.0
#define NUDGE_BURST 4
/* How far over the bound a count may go before it is a failure: scheduling noise only. */
#define MARGIN 1.5

static int attack_s = 5;

struct attack {
	const uint8_t *map;
	uint64_t end;
	int in, out; /* a ping-pong side's pipes */
	bool first;
};

static void *sleeper(void *arg)
{
	const struct attack *a = arg;
	const uint64_t *global_ns = (const uint64_t *)(a->map + 16);
	struct timespec ts = {0, 100 * 1000000L};

	while (bd_mono_ns() < a->end)
		syscall(SYS_futex, global_ns, FUTEX_WAIT, (uint32_t)bd_load(global_ns), &ts, NULL,
			0);
	return NULL;
}

static void *pingpong(void *arg)
{
	const struct attack *a = arg;
	char c = 0;

	if (a->first && write(a->out, &c, 1) != 1)
		return NULL;
	while (bd_mono_ns() < a->end)
		if (read(a->in, &c, 1) != 1 || write(a->out, &c, 1) != 1)
			break;
	return NULL;
}

static void *ringer(void *arg)
{
	const struct attack *a = arg;

	while (bd_mono_ns() < a->end)
		for (int i = 0; i < 256; i++)
			syscall(SYS_futex, a->map + 112, FUTEX_WAKE, 1, NULL, NULL, 0);
	return NULL;
}

static void *yielder(void *arg)
{
	const struct attack *a = arg;

	test_pin(1);
	while (bd_mono_ns() < a->end)
		sched_yield();
	return NULL;
}

/* The child, as nobody: every thread runs until the end, then the process exits. */
static int attack_main(void *arg)
{
	const char *path = arg;
	struct attack base, pong[4];
	pthread_t t[16];
	size_t size;
	int n = 0;

	base.map = map_ro(path, &size);
	if (!base.map)
		return 1;
	base.end = bd_mono_ns() + (uint64_t)(attack_s + 1) * TEST_SEC;
	for (int i = 0; i < 4; i++)
		if (pthread_create(&t[n++], NULL, sleeper, &base))
			return 2;
	for (int i = 0; i < 2; i++) {
		int x[2], y[2];

		if (pipe(x) || pipe(y))
			return 3;
		pong[2 * i] = base;
		pong[2 * i + 1] = base;
		pong[2 * i].in = x[0], pong[2 * i].out = y[1], pong[2 * i].first = true;
		pong[2 * i + 1].in = y[0], pong[2 * i + 1].out = x[1],
			     pong[2 * i + 1].first = false;
		if (pthread_create(&t[n++], NULL, pingpong, &pong[2 * i]) ||
		    pthread_create(&t[n++], NULL, pingpong, &pong[2 * i + 1]))
			return 2;
	}
	if (pthread_create(&t[n++], NULL, ringer, &base))
		return 2;
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[n++], NULL, yielder, &base))
			return 2;
	test_sleep_ns((uint64_t)(attack_s + 1) * TEST_SEC);
	_exit(0); /* a ping-pong side may sit in read(): the exit ends it */
}

static int setup_running(void **state)
{
	(void)state;
	h_mkdir(&H);
	return h_start(&H, -1, NULL);
}

static const struct barrierd_ext *ext_of(const struct barrierd_header *m)
{
	return (const struct barrierd_ext *)((const uint8_t *)m + bd_load(&m->ext_offset));
}

static uint64_t sched_ns(pid_t pid)
{
	char cmd[128];
	unsigned long long ns = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "cat /proc/%d/task/*/schedstat | awk '{s += $1} END {printf \"%%.0f\\n\", s}'",
		 (int)pid);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &ns) != 1)
		ns = 0;
	pclose(f);
	return ns;
}

static void follow_attack_bounded(void **state)
{
	const struct barrierd_header *m;
	const struct barrierd_ext *x;
	struct barrierd *b;
	uint64_t p0, p1, n0, n1, c0, c1, t0, t1, ncpu, barriers = 0, failures = 0;
	bool followed = false;
	double secs, passes, nudges;
	long mark = h_log_mark(&H);
	int st;
	pid_t pid;

	(void)state;
	assert_int_equal(barrierd_open(&b, H.state), 0);
	m = barrierd_mapping(b, NULL);
	x = ext_of(m);
	ncpu = bd_load(&m->ncpu);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(test_drop_to_nobody() ? 100 : attack_main(H.state));
	/* The heartbeat's probe finds the sleepers within a period or two. */
	for (int i = 0; i < 100 && !followed; i++) {
		test_sleep_ms(10);
		followed = h_log_has_since(&H, mark, "following every pass");
	}
	test_sleep_ms(500);
	p0 = bd_load(&x->passes);
	n0 = bd_load(&x->nudges);
	c0 = sched_ns(H.pid);
	t0 = bd_mono_ns();
	/* A legitimate client under the attack: every barrier passes (5 s each: a hang guard). */
	while (bd_mono_ns() - t0 < (uint64_t)(attack_s - 1) * TEST_SEC) {
		if (barrierd_barrier(b, 5 * (int64_t)TEST_SEC))
			failures++;
		barriers++;
		test_sleep_ms(10);
	}
	t1 = bd_mono_ns();
	p1 = bd_load(&x->passes);
	n1 = bd_load(&x->nudges);
	c1 = sched_ns(H.pid);
	st = test_reap(pid, attack_s + 10);
	assert_true(st != -1 && WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	secs = (double)(t1 - t0) / 1e9;
	passes = (double)(p1 - p0);
	nudges = (double)(n1 - n0);
	printf(
	    "follow attack by nobody, %.1f s: %s; %.0f passes/s (bound %.0f/s), %.1f nudges/s "
	    "(bound %.0f/s per CPU, %llu CPUs); daemon CPU %.2f %% (not asserted); a root client: "
	    "%llu barriers, %llu failed\n",
	    secs, followed ? "following" : "NOT following", passes / secs, FOLLOW_RATE,
	    nudges / secs, NUDGE_RATE, (unsigned long long)ncpu,
	    c1 > c0 ? 100.0 * (double)(c1 - c0) / (double)(t1 - t0) : 0.0,
	    (unsigned long long)barriers, (unsigned long long)failures);
	assert_true(followed); /* else the attack did not test the gate */
	assert_int_equal(failures, 0);
	assert_true(barriers > 0);
	assert_true(passes <= FOLLOW_RATE * secs * MARGIN + FOLLOW_BURST);
	assert_true(nudges <= (NUDGE_RATE * secs * MARGIN + NUDGE_BURST) * (double)ncpu);
	assert_int_equal(barrierd_barrier(b, 5 * (int64_t)TEST_SEC), 0); /* still serving */
	barrierd_close(b);
}

int main(int argc, char **argv)
{
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "--seconds") == 0)
			attack_s = atoi(argv[i + 1]);
	if (attack_s < 3)
		attack_s = 3;
	test_require_root();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(follow_attack_bounded, setup_running, h_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
