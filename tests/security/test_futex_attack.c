// SPDX-License-Identifier: MIT
/*
 * Futex tricks as nobody.  Every 4-byte word of the state file is a futex word any user can
 * name on a read-only mapping: the doorbell the daemon waits on, the global and per-CPU words,
 * the flags, the heartbeat and the mark its clients sleep on, and every other word.  A forked
 * child drops to uid/gid 65534 and, on every word of the file: FUTEX_CMP_REQUEUE once (onto a
 * private word of its own that nobody wakes, or onto the mark, a word of the file nobody wakes)
 * and in a loop (also only the doorbell's first waiter, the daemon's thread, while a thief of
 * the attacker's keeps waiting there and takes the rings); FUTEX_CMP_REQUEUE_PI; FUTEX_WAKE_OP;
 * futex_waitv (it becomes a waiter there); and FUTEX_LOCK_PI and FUTEX_TRYLOCK_PI, which must fail
 * with EFAULT (the mapping is read-only). After each attack (and, for the loop and the waitv,
 * during it): a root client's barrier on a fresh stamp completes on the daemon's path (rings still
 * served), the doorbell hears rings again, a SIGTERM stops the daemon (marked stopped), and a
 * daemon starts again on the same path.  And the evasion of the doorbell's bounded wait: the
 * daemon's thread parked on a private word, waiters of the attacker's kept on the doorbell word
 * (so that no tick finds the thread moved) and taken off it around each expected end of the
 * thread's wait (so that the expiry finds nobody on the word); rings of the test's, taken by
 * those waiters, are still served (served_ns passes them) within the guard.  Times are hang
 * guards only, in seconds.  `--long`: the
 * loops last 30 s, with 5 stops and restarts under each (label security-long).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>

#include "harness.h"

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef FUTEX2_SIZE_U32
#define FUTEX2_SIZE_U32 0x02
#endif
#define WAITV_MAX 128

/* A call may take this long past its own timeout before it counts as hung. */
#define GUARD_S 5
#define CALL_TIMEOUT_NS (5 * (int64_t)TEST_SEC)

static uint64_t loop_s = 3; /* how long a background attack lasts (--long: 30) */
static int cycles = 1;	    /* stops and restarts under a background attack (--long: 5) */

enum attack {
	A_REQUEUE,	 /* FUTEX_CMP_REQUEUE once, onto a private word of the attacker's */
	A_REQUEUE_MARK,	 /* the same, onto the mark (the doorbell's high half): nobody wakes it */
	A_REQUEUE_LOOP,	 /* FUTEX_CMP_REQUEUE in a loop, for loop_s */
	A_REQUEUE_THIEF, /* the doorbell's first waiter only, in a loop, while a thief waits there
			  */
	A_REQUEUE_PI, /* FUTEX_CMP_REQUEUE_PI, onto a PI word of the attacker's and of the file */
	A_WAKE_OP,    /* FUTEX_WAKE_OP, the operation on a word of the attacker's and of the file */
	A_WAITV,      /* futex_waitv on every word, for loop_s */
	A_LOCK_PI,    /* FUTEX_LOCK_PI and FUTEX_TRYLOCK_PI: EFAULT on every word */
	A_EVADE_EXPIRY, /* park the daemon's thread; decoys on the word except at its expiries */
};

struct attack_arg {
	const char *path;
	enum attack kind;
	int pipe_w;
};

/* What the attacker did, written to the pipe when it ends. */
struct report {
	long doorbell_moved; /* waiters moved off the doorbell word (the daemon's thread) */
	long calls;
	long not_efault; /* LOCK_PI/TRYLOCK_PI calls that did not fail with EFAULT */
};

static uint32_t own_word; /* the attacker's: nobody else can name it, nobody wakes it */
static uint32_t own_pi;	  /* the attacker's PI futex (unlocked: 0) */

static long futex(const void *uaddr, int op, uint32_t val, uintptr_t val2, const void *uaddr2,
		  uint32_t val3)
{
	return syscall(SYS_futex, uaddr, op, val, val2, uaddr2, val3);
}

static uint32_t load32(const uint32_t *w)
{
	return __atomic_load_n(w, __ATOMIC_RELAXED);
}

/* Requeue every waiter of w onto to, waking none; the number moved (or -1). */
static long requeue(const uint32_t *w, const uint32_t *to)
{
	return futex(w, FUTEX_CMP_REQUEUE, 0, INT32_MAX, to, load32(w));
}

struct sweep {
	const uint32_t *base;
	size_t nwords;
	const uint32_t *doorbell, *mark;
	struct report r;
};

/* One pass of the attack over every word of the file. */
static void sweep_once(struct sweep *s, enum attack kind)
{
	for (size_t i = 0; i < s->nwords; i++) {
		const uint32_t *w = s->base + i;
		long n = 0;

		switch (kind) {
		case A_REQUEUE:
		case A_REQUEUE_LOOP:
			n = requeue(w, &own_word);
			break;
		case A_REQUEUE_MARK:
			n = w == s->mark ? 0 : requeue(w, s->mark);
			break;
		case A_REQUEUE_PI:
			/* Only waiters of FUTEX_WAIT_REQUEUE_PI may be moved so: EINVAL. */
			n = futex(w, FUTEX_CMP_REQUEUE_PI, 1, INT32_MAX, &own_pi, load32(w));
			futex(w, FUTEX_CMP_REQUEUE_PI, 1, INT32_MAX, s->mark, load32(w));
			n = n > 0 ? n : 0;
			break;
		case A_WAKE_OP:
			/* Wakes w's waiters (a ring, for the doorbell); the operation needs
			 * writing. */
			futex(w, FUTEX_WAKE_OP, INT32_MAX, INT32_MAX, &own_word,
			      FUTEX_OP(FUTEX_OP_ADD, 1, FUTEX_OP_CMP_GE, 0));
			futex(w, FUTEX_WAKE_OP, INT32_MAX, INT32_MAX, s->mark,
			      FUTEX_OP(FUTEX_OP_ADD, 1, FUTEX_OP_CMP_GE, 0));
			break;
		case A_LOCK_PI:
			if (futex(w, FUTEX_LOCK_PI, 0, 0, NULL, 0) != -1 || errno != EFAULT)
				s->r.not_efault++;
			if (futex(w, FUTEX_TRYLOCK_PI, 0, 0, NULL, 0) != -1 || errno != EFAULT)
				s->r.not_efault++;
			break;
		case A_WAITV:
		case A_REQUEUE_THIEF:
		case A_EVADE_EXPIRY:
			break;
		}
		s->r.calls++;
		if (w == s->doorbell && n > 0)
			s->r.doorbell_moved += n;
	}
}

struct thief {
	const uint32_t *words;
	size_t n;
	uint64_t end;
};

/* futex_waitv on up to WAITV_MAX words at once, again and again until end. */
static void *thief_main(void *arg)
{
	struct thief *t = arg;
	struct futex_waitv wv[WAITV_MAX];

	while (bd_mono_ns() < t->end) {
		uint64_t due = bd_mono_ns() + 100 * TEST_MS;
		struct timespec ts = {(time_t)(due / TEST_SEC), (long)(due % TEST_SEC)};

		memset(wv, 0, sizeof(wv));
		for (size_t i = 0; i < t->n; i++) {
			wv[i].uaddr = (uintptr_t)(t->words + i);
			wv[i].val = load32(t->words + i);
			wv[i].flags = FUTEX2_SIZE_U32; /* shared, as the file's waiters are */
		}
		if (syscall(SYS_futex_waitv, wv, (unsigned)t->n, 0, &ts, CLOCK_MONOTONIC) < 0 &&
		    errno == ENOSYS)
			return NULL;
	}
	return NULL;
}

static int waitv_all(struct sweep *s, uint64_t end)
{
	size_t nt = (s->nwords + WAITV_MAX - 1) / WAITV_MAX;
	pthread_t *tid = calloc(nt, sizeof(*tid));
	struct thief *t = calloc(nt, sizeof(*t));

	if (!tid || !t)
		return 1;
	for (size_t i = 0; i < nt; i++) {
		t[i].words = s->base + i * WAITV_MAX;
		t[i].n =
		    s->nwords - i * WAITV_MAX < WAITV_MAX ? s->nwords - i * WAITV_MAX : WAITV_MAX;
		t[i].end = end;
		if (pthread_create(&tid[i], NULL, thief_main, &t[i]))
			return 2;
	}
	for (size_t i = 0; i < nt; i++)
		pthread_join(tid[i], NULL);
	s->r.calls = (long)nt;
	return 0;
}

/* Wait on the doorbell word until end, again after each wake: it takes the rings it can. */
static void *doorbell_thief(void *arg)
{
	const struct sweep *s = arg;
	uint64_t end = bd_mono_ns() + loop_s * TEST_SEC;

	while (bd_mono_ns() < end) {
		struct timespec ts = {0, 100 * (long)TEST_MS};

		futex(s->doorbell, FUTEX_WAIT, 0, (uintptr_t)&ts, NULL, 0);
	}
	return NULL;
}

/*
 * Requeue the doorbell's first waiter only (the daemon's SCHED_FIFO thread goes first) onto a
 * word of ours, in a loop, while a thief keeps its place on the word.
 */
static int requeue_first_with_thief(struct sweep *s, uint64_t end)
{
	pthread_t t;

	if (pthread_create(&t, NULL, doorbell_thief, s))
		return 2;
	while (bd_mono_ns() < end) {
		long n = futex(s->doorbell, FUTEX_CMP_REQUEUE, 0, 1, &own_word, 0);

		s->r.doorbell_moved += n > 0 ? n : 0;
		s->r.calls++;
	}
	pthread_join(t, NULL);
	return 0;
}

/* Waiters of the evasion's: on the doorbell word, or parked on decoy_hold while decoys_held. */
static uint32_t decoy_hold, mark_hold;
static volatile int decoys_held, decoys_stop;

static long waiters(const uint32_t *w)
{
	return futex(w, FUTEX_CMP_REQUEUE, 0, INT32_MAX, w, 0);
}

static void *decoy_main(void *arg)
{
	const struct sweep *s = arg;

	while (!decoys_stop)
		futex(decoys_held ? &decoy_hold : s->doorbell, FUTEX_WAIT, 0, 0, NULL, 0);
	return NULL;
}

/* The daemon's thread, alone on the word, moved onto own_word: its wait began after t0. */
static int park_thread(struct sweep *s, uint64_t *t0)
{
	uint64_t guard = bd_mono_ns() + 100 * TEST_MS;

	*t0 = bd_mono_ns();
	while (bd_mono_ns() < guard)
		if (waiters(s->doorbell) > 0 &&
		    futex(s->doorbell, FUTEX_CMP_REQUEUE, 0, 1, &own_word, 0) == 1) {
			s->r.doorbell_moved++;
			return 0;
		}
	return -1;
}

/*
 * The evasion, until killed.  It bets that the thread's wait ends 1 s (the longest) after it
 * began, and that the ticks come at the heartbeat's phase: every steal is made half a period
 * away from a tick, so that the decoys' absence around each expected expiry spans no tick.
 */
static int evade_expiry(struct sweep *s, const struct barrierd_header *m, int pipe_w)
{
	uint64_t period = m->heartbeat_period_ns, hb = bd_load(&m->heartbeat_ns), t0, due;
	uint64_t end = bd_mono_ns() + 60 * TEST_SEC;
	pthread_t t[3];

	if (!period)
		return 4;
	while (bd_load(&m->heartbeat_ns) == hb)
		test_sleep_ms(1);
	due = bd_load(&m->heartbeat_ns) + period / 2;
	while (due < bd_mono_ns() + TEST_MS)
		due += period;
	/* A ring that wakes the thread starts its next wait now; it is alone on the word. */
	do {
		while (bd_mono_ns() < due)
			;
		due += period;
	} while (futex(s->doorbell, FUTEX_WAKE, 1, 0, NULL, 0) != 1);
	if (park_thread(s, &t0))
		return 5;
	for (int i = 0; i < 3; i++)
		if (pthread_create(&t[i], NULL, decoy_main, s))
			return 6;
	if (write(pipe_w, "p", 1) != 1)
		return 7;
	while (bd_mono_ns() < end) {
		if (bd_mono_ns() + 2 * TEST_MS < t0 + TEST_SEC) {
			usleep(200);
			continue;
		}
		/*
		 * Nobody on the word nor on the mark when the wait ends: the decoys leave the
		 * word once, before the expiry, so that no requeue can take the thread along
		 * when it comes back.
		 */
		decoys_held = 1;
		futex(s->doorbell, FUTEX_CMP_REQUEUE, 0, INT32_MAX, &decoy_hold, 0);
		futex(s->mark, FUTEX_CMP_REQUEUE, 0, INT32_MAX, &mark_hold, 0);
		while (waiters(&own_word) > 0 && bd_mono_ns() < t0 + TEST_SEC + 100 * TEST_MS)
			;
		/* Back on the word: park it again at once, then the decoys return. */
		if (park_thread(s, &t0)) {
			futex(&own_word, FUTEX_WAKE, INT32_MAX, 0, NULL, 0);
			futex(&decoy_hold, FUTEX_WAKE, INT32_MAX, 0, NULL, 0);
			if (park_thread(s, &t0))
				return 8;
		}
		decoys_held = 0;
		futex(&decoy_hold, FUTEX_WAKE, INT32_MAX, 0, NULL, 0);
		s->r.calls++;
	}
	return 0;
}

static int attack_main(void *arg)
{
	const struct attack_arg *a = arg;
	struct sweep s = {0};
	size_t size;
	const struct barrierd_header *m = map_ro(a->path, &size);
	uint64_t end = bd_mono_ns() + loop_s * TEST_SEC, guard = bd_mono_ns() + 2 * TEST_SEC;
	int ret = 0;

	if (!m)
		return 1;
	s.base = (const uint32_t *)m;
	s.nwords = size / sizeof(uint32_t);
	s.doorbell = (const uint32_t *)&m->doorbell;
	s.mark = s.doorbell + 1;
	switch (a->kind) {
	case A_REQUEUE:
	case A_REQUEUE_MARK:
		/* Once over every word; the doorbell until its thread was caught there. */
		sweep_once(&s, a->kind);
		while (!s.r.doorbell_moved && bd_mono_ns() < guard) {
			long n = requeue(s.doorbell, a->kind == A_REQUEUE ? &own_word : s.mark);

			s.r.doorbell_moved += n > 0 ? n : 0;
			test_sleep_ms(1);
		}
		break;
	case A_REQUEUE_LOOP:
		while (bd_mono_ns() < end)
			sweep_once(&s, a->kind);
		break;
	case A_WAITV:
		ret = waitv_all(&s, end);
		break;
	case A_REQUEUE_THIEF:
		ret = requeue_first_with_thief(&s, end);
		break;
	case A_EVADE_EXPIRY:
		ret = evade_expiry(&s, m, a->pipe_w);
		break;
	default:
		sweep_once(&s, a->kind);
		break;
	}
	if (write(a->pipe_w, &s.r, sizeof(s.r)) != sizeof(s.r))
		return 3;
	return ret;
}

static pid_t attacker = -1;

static pid_t attack_start(enum attack kind, int *pipe_r)
{
	int pfd[2];
	struct attack_arg a = {.path = H.state, .kind = kind};
	pid_t pid;

	if (pipe(pfd))
		return -1;
	a.pipe_w = pfd[1];
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		_exit(test_drop_to_nobody() ? 100 : attack_main(&a));
	}
	close(pfd[1]);
	*pipe_r = pfd[0];
	attacker = pid;
	return pid;
}

static struct report attack_end(pid_t pid, int pipe_r)
{
	struct report r = {0};
	int st = test_reap(pid, (int)loop_s + 20);

	attacker = -1;
	assert_true(st != -1 && WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(read(pipe_r, &r, sizeof(r)), (ssize_t)sizeof(r));
	close(pipe_r);
	return r;
}

/* ---- the checks ----------------------------------------------------------------------- */

/* A barrier on a fresh stamp, on the daemon's path (no direct credit), completes. */
static void check_served(void)
{
	struct barrierd *b;
	uint64_t t0 = bd_mono_ns();

	assert_int_equal(test_open_file_only(&b, H.state, NULL), 0);
	assert_int_equal(barrierd_barrier(b, CALL_TIMEOUT_NS), 0);
	assert_true(bd_mono_ns() - t0 < (uint64_t)CALL_TIMEOUT_NS + GUARD_S * TEST_SEC);
	barrierd_close(b);
}

/*
 * Barriers, one after the other, until `seconds` passed: each completes; the slowest is
 * printed (information, not asserted).
 */
static void check_served_for(uint64_t seconds, const char *what)
{
	struct barrierd *b;
	uint64_t end = bd_mono_ns() + seconds * TEST_SEC, worst = 0, n = 0;

	assert_int_equal(test_open_file_only(&b, H.state, NULL), 0);
	while (bd_mono_ns() < end) {
		uint64_t t0 = bd_mono_ns(), dt;

		assert_int_equal(barrierd_barrier(b, CALL_TIMEOUT_NS), 0);
		dt = bd_mono_ns() - t0;
		worst = dt > worst ? dt : worst;
		n++;
	}
	printf("%s: %llu barriers on the daemon's path, the slowest %.1f ms\n", what,
	       (unsigned long long)n, (double)worst / 1e6);
	barrierd_close(b);
}

/* A ring reaches a daemon thread again (FUTEX_WAKE wakes one) within the guard. */
static void check_heard(void)
{
	size_t size;
	const struct barrierd_header *m = map_ro(H.state, &size);
	uint64_t end = bd_mono_ns() + GUARD_S * TEST_SEC;
	long r = 0;

	assert_non_null(m);
	while (bd_mono_ns() < end && (r = test_futex_wake(&m->doorbell)) < 1)
		test_sleep_ms(10);
	munmap((void *)m, size);
	if (r < 1)
		fprintf(stderr, "no daemon thread waits on the doorbell word %d s on\n", GUARD_S);
	assert_true(r >= 1);
}

/* SIGTERM: the daemon exits 0 within the guard and leaves the file marked stopped. */
static void check_stop(void)
{
	size_t size;
	const struct barrierd_header *m;
	int st;

	assert_int_equal(kill(H.pid, SIGTERM), 0);
	st = test_reap(H.pid, GUARD_S);
	H.pid = -1;
	if (st == -1)
		fprintf(stderr, "the daemon did not stop within %d s of SIGTERM (killed)\n",
			GUARD_S);
	assert_true(st != -1 && WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	m = map_ro(H.state, &size);
	assert_non_null(m);
	assert_true(bd_load(&m->flags) & BARRIERD_FLAG_STOPPED);
	munmap((void *)m, size);
}

/* A daemon starts again on the same path and serves. */
static void check_restart(void)
{
	assert_int_equal(h_start(&H, -1, NULL), 0);
	check_served();
}

/* ---- the cases ------------------------------------------------------------------------ */

static int setup_running(void **state)
{
	(void)state;
	h_mkdir(&H);
	return h_start(&H, -1, NULL);
}

static int teardown(void **state)
{
	if (attacker > 0) {
		kill(attacker, SIGKILL);
		waitpid(attacker, NULL, 0);
		attacker = -1;
	}
	return h_teardown(state);
}

/* An attack that ends by itself; then the checks. */
static void one_shot(enum attack kind, const char *what)
{
	struct report r;
	int pipe_r;
	pid_t pid;

	check_served();
	pid = attack_start(kind, &pipe_r);
	assert_true(pid > 0);
	r = attack_end(pid, pipe_r);
	printf("%s: %ld calls, %ld waiters moved off the doorbell\n", what, r.calls,
	       r.doorbell_moved);
	if (kind == A_REQUEUE || kind == A_REQUEUE_MARK)
		assert_true(r.doorbell_moved >= 1); /* the daemon's thread was moved */
	if (kind == A_LOCK_PI)
		assert_int_equal(r.not_efault, 0);
	check_served();
	check_heard();
	check_stop();
	check_restart();
	check_heard();
}

/* An attack that lasts loop_s: barriers, stops and restarts during it; then the checks. */
static void background(enum attack kind, const char *what)
{
	uint64_t t0 = bd_mono_ns();
	struct report r;
	int pipe_r;
	pid_t pid;

	check_served();
	pid = attack_start(kind, &pipe_r);
	assert_true(pid > 0);
	check_served_for(loop_s > 2 ? (loop_s - 1) / 2 : 1, what);
	for (int i = 0; i < cycles; i++) {
		check_stop();
		check_restart();
	}
	if (bd_mono_ns() - t0 < loop_s * TEST_SEC)
		check_served_for(1, what);
	r = attack_end(pid, pipe_r);
	printf("%s: %ld calls, %ld waiters moved off the doorbell\n", what, r.calls,
	       r.doorbell_moved);
	check_served();
	check_heard();
	check_stop();
	check_restart();
}

static void requeue_once(void **state)
{
	(void)state;
	one_shot(A_REQUEUE, "FUTEX_CMP_REQUEUE once, onto nobody's own word");
}

static void requeue_once_onto_mark(void **state)
{
	(void)state;
	one_shot(A_REQUEUE_MARK, "FUTEX_CMP_REQUEUE once, onto the mark");
}

static void requeue_loop(void **state)
{
	(void)state;
	background(A_REQUEUE_LOOP, "FUTEX_CMP_REQUEUE in a loop");
}

static void requeue_loop_with_thief(void **state)
{
	(void)state;
	background(A_REQUEUE_THIEF,
		   "FUTEX_CMP_REQUEUE of the daemon's thread, a thief in its place");
}

static void requeue_pi(void **state)
{
	(void)state;
	one_shot(A_REQUEUE_PI, "FUTEX_CMP_REQUEUE_PI");
}

static void wake_op(void **state)
{
	(void)state;
	one_shot(A_WAKE_OP, "FUTEX_WAKE_OP");
}

static void waitv_thieves(void **state)
{
	(void)state;
	background(A_WAITV, "futex_waitv on every word");
}

static void lock_pi_efault(void **state)
{
	(void)state;
	one_shot(A_LOCK_PI, "FUTEX_LOCK_PI and FUTEX_TRYLOCK_PI");
}

/*
 * Rings lost to the evasion (taken by its decoys, or by nobody) are served: served_ns passes
 * each ring's time within the guard.
 */
static void evade_expiry_served(void **state)
{
	size_t size;
	const struct barrierd_header *m = map_ro(H.state, &size);
	const struct barrierd_ext *x;
	int pipe_r, st;
	char c = 0;
	pid_t pid;

	(void)state;
	assert_non_null(m);
	x = (const struct barrierd_ext *)((const char *)m + m->ext_offset);
	pid = attack_start(A_EVADE_EXPIRY, &pipe_r);
	assert_true(pid > 0);
	if (read(pipe_r, &c, 1) != 1) {
		st = test_reap(pid, GUARD_S);
		attacker = -1;
		fail_msg("the evasion did not park the doorbell thread (exit %d)",
			 st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
	for (int i = 0; i < 6; i++) {
		uint64_t t = bd_mono_ns(), end = t + 2 * TEST_SEC;
		long woke = test_futex_wake(&m->doorbell);

		while (bd_load(&x->served_ns) < t && bd_mono_ns() < end)
			test_sleep_ms(5);
		printf("ring %d (woke %ld): served after %.0f ms\n", i, woke,
		       bd_load(&x->served_ns) < t ? -1.0 : (double)(bd_mono_ns() - t) / 1e6);
		assert_true(bd_load(&x->served_ns) >= t);
		test_sleep_ms(100 + 100 * i);
	}
	kill(pid, SIGKILL);
	test_reap(pid, GUARD_S);
	attacker = -1;
	close(pipe_r);
	munmap((void *)m, size);
	check_served();
	check_heard();
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--long") == 0) {
		loop_s = 30;
		cycles = 5;
	} else if (argc > 1) {
		cmocka_set_test_filter(argv[1]);
	}
	test_require_root();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(requeue_once, setup_running, teardown),
	    cmocka_unit_test_setup_teardown(requeue_once_onto_mark, setup_running, teardown),
	    cmocka_unit_test_setup_teardown(requeue_loop, setup_running, teardown),
	    cmocka_unit_test_setup_teardown(requeue_loop_with_thief, setup_running, teardown),
	    cmocka_unit_test_setup_teardown(requeue_pi, setup_running, teardown),
	    cmocka_unit_test_setup_teardown(wake_op, setup_running, teardown),
	    cmocka_unit_test_setup_teardown(waitv_thieves, setup_running, teardown),
	    cmocka_unit_test_setup_teardown(lock_pi_efault, setup_running, teardown),
	    cmocka_unit_test_setup_teardown(evade_expiry_served, setup_running, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
