// SPDX-License-Identifier: MIT
/*
 * libbarrierd against the real daemon: a client in a time namespace, a client that moves to
 * another one with setns(), eight waiters looping, and a daemon killed with SIGKILL under a
 * waiter, with and without the membarrier fallback.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <sys/resource.h>

#include "harness.h"

static int setup(void **state)
{
	(void)state;
	h_mkdir(&H);
	return h_start(&H, -1, NULL);
}

static int teardown(void **state)
{
	(void)state;
	h_stop(&H);
	h_rmdir(&H);
	return 0;
}

static int rd(int fd, uint64_t *v)
{
	return read(fd, v, sizeof(*v)) == sizeof(*v) ? 0 : -1;
}

static int wr(int fd, uint64_t v)
{
	return write(fd, &v, sizeof(v)) == sizeof(v) ? 0 : -1;
}

/*
 * The client runs in a time namespace whose CLOCK_MONOTONIC is half the uptime behind the
 * host's.  The host's clock readings, passed through a pipe, must bracket the client's
 * stamp; and with the daemon frozen, a fresh stamp must not count as passed (unconverted, it
 * would be half the uptime in the past and pass at once).
 */
static void time_namespace_client(void **state)
{
	int to_child[2], to_host[2];
	struct timespec up;
	uint64_t h1, h2, s, ok;
	long off;
	pid_t pid;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &up);
	off = -(long)(up.tv_sec / 2);
	if (off == 0)
		test_skip_or_fail("uptime too short for a time-namespace offset");
	assert_int_equal(pipe(to_child), 0);
	assert_int_equal(pipe(to_host), 0);
	pid = fork();
	if (pid == 0) {
		char buf[64];
		struct barrierd *b;
		struct timespec raw;
		int fd, n;
		pid_t inner;

		/* A new time namespace takes effect for children; set its offset first. */
		if (unshare(CLONE_NEWTIME))
			_exit(10);
		fd = open("/proc/self/timens_offsets", O_WRONLY);
		n = snprintf(buf, sizeof(buf), "monotonic %ld 0\n", off);
		if (fd < 0 || write(fd, buf, (size_t)n) != n)
			_exit(11);
		close(fd);
		inner = fork();
		if (inner == 0) {
			uint64_t t;

			clock_gettime(CLOCK_MONOTONIC, &raw);
			/*
			 * The file alone: round 2 checks the stamp against published values, which
			 * an unconverted stamp would pass; the slots would pass a fresh stamp by
			 * idle and own-CPU credit, rightly (the audit's timens phase covers those).
			 */
			if (test_open_file_only(&b, H.state, NULL))
				_exit(12);
			/* round 1: bracketed by the host's readings */
			if (rd(to_child[0], &t))
				_exit(13);
			s = barrierd_stamp_ns(b);
			if (wr(to_host[1], s))
				_exit(14);
			/* the raw clock really is behind: the conversion is not a no-op */
			if ((uint64_t)raw.tv_sec * 1000000000ULL + (uint64_t)raw.tv_nsec >= t)
				_exit(15);
			/* round 2: daemon frozen by the host, a fresh stamp must not pass */
			if (rd(to_child[0], &t))
				_exit(16);
			s = barrierd_stamp_ns(b);
			ok = !barrierd_passed(b, s);
			if (wr(to_host[1], ok))
				_exit(17);
			/* round 3: daemon thawed, the wait completes */
			if (rd(to_child[0], &t))
				_exit(18);
			ok = barrierd_wait(b, s, 5000000000LL) == 0 && barrierd_passed(b, s);
			if (wr(to_host[1], ok))
				_exit(19);
			barrierd_close(b);
			_exit(0);
		}
		int st;
		waitpid(inner, &st, 0);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 20);
	}
	h1 = bd_mono_ns();
	assert_int_equal(wr(to_child[1], h1), 0);
	assert_int_equal(rd(to_host[0], &s), 0);
	h2 = bd_mono_ns();
	printf("host %llu < stamp %llu < host %llu (namespace offset %ld s)\n",
	       (unsigned long long)h1, (unsigned long long)s, (unsigned long long)h2, off);
	assert_true(h1 < s && s < h2);

	kill(H.pid, SIGSTOP);
	assert_int_equal(wr(to_child[1], bd_mono_ns()), 0);
	assert_int_equal(rd(to_host[0], &ok), 0);
	kill(H.pid, SIGCONT);
	assert_true(ok); /* not passed while nobody could publish */
	assert_int_equal(wr(to_child[1], bd_mono_ns()), 0);
	assert_int_equal(rd(to_host[0], &ok), 0);
	assert_true(ok);
	int st = test_reap(pid, 20);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/*
 * A single-threaded client moves itself with setns() into a time namespace whose clock is
 * 0.2 s behind (or ahead of) the one it opened the handle in.  Its stamps are still converted
 * with the old offset until the library notices the move, so one taken now (s1) is 0.2 s too
 * early (or too late).  Children forked before the move was noticed must not pass s1, whatever
 * their first call; barrierd_barrier() must notice the move (-ESTALE) whether or not its stamp
 * would pass on the fast path, and retire the handle: s1 refused by barrierd_passed(), every
 * wait -EPROTO.  A handle opened again in the new namespace works.
 */
static int setns_kid(struct barrierd *b, uint64_t s1, int first_call_is_wait)
{
	pid_t kid = fork();
	int st;

	if (kid == 0) {
		if (!first_call_is_wait && barrierd_passed(b, s1))
			_exit(1);
		_exit(barrierd_wait(b, s1, 5000000000LL) == 0 || barrierd_passed(b, s1) ? 2 : 0);
	}
	if (kid < 0)
		return -1;
	st = test_reap(kid, 10);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int setns_child(const char *offs)
{
	struct timespec pause = {0, 300000000};
	struct barrierd *b;
	uint64_t s1, s2, v;
	int fd;

	/*
	 * The file's path: a barrier that the slots pass by idle and own-CPU credit alone
	 * needs no move check (CLIENT-EVIDENCE §10), and would not notice the move here.
	 */
	if (test_open_file_only(&b, H.state, NULL))
		return 10;
	nanosleep(&pause, NULL); /* so that a too-early stamp is still after open_ns */
	if (unshare(CLONE_NEWTIME))
		return 11;
	fd = open("/proc/self/timens_offsets", O_WRONLY);
	if (fd < 0 || write(fd, offs, strlen(offs)) != (ssize_t)strlen(offs))
		return 12;
	close(fd);
	fd = open("/proc/self/ns/time_for_children", O_RDONLY);
	if (fd < 0 || setns(fd, CLONE_NEWTIME))
		return 13;
	close(fd);
	s1 = barrierd_stamp_ns(b);
	if (setns_kid(b, s1, 0) || setns_kid(b, s1, 1))
		return 20;
	if (barrierd_barrier(b, 5000000000LL) != -ESTALE)
		return 14;
	if (barrierd_passed(b, s1))
		return 15;
	if (barrierd_wait(b, s1, 5000000000LL) != -EPROTO ||
	    barrierd_barrier(b, 5000000000LL) != -EPROTO)
		return 16;
	barrierd_close(b);
	/* Re-opened in the new namespace: converts with its offset. */
	if (barrierd_open(&b, H.state))
		return 17;
	nanosleep(&pause, NULL);
	v = barrierd_stamp_vtime(b);
	if (barrierd_wait_vtime(b, v, 5000000000LL) != 0)
		return 18;
	s2 = barrierd_stamp_ns(b);
	if (barrierd_wait(b, s2, 5000000000LL) != 0 || !barrierd_passed(b, s2) ||
	    barrierd_barrier(b, 5000000000LL) != 0)
		return 19;
	barrierd_close(b);
	return 0;
}

/*
 * A forked child that never changes namespace keeps a working handle even when it can open no
 * file any more (its descriptor limit at 0): it was born into the pinned namespace.
 */
static void fork_child_without_files(void **state)
{
	struct barrierd *b;
	pid_t kid;
	int st;

	(void)state;
	assert_int_equal(barrierd_open(&b, H.state), 0);
	kid = fork();
	if (kid == 0) {
		struct rlimit none = {0, 0};
		uint64_t s;

		if (setrlimit(RLIMIT_NOFILE, &none))
			_exit(10);
		s = barrierd_stamp_ns(b);
		if (s >= UINT64_MAX - 1)
			_exit(11);
		_exit(barrierd_wait(b, s, 5000000000LL) == 0 && barrierd_passed(b, s) ? 0 : 12);
	}
	st = test_reap(kid, 20);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	barrierd_close(b);
}

static void setns_case(const char *offs)
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(setns_child(offs));
	st = test_reap(pid, 20);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void time_namespace_setns_behind(void **state)
{
	(void)state;
	setns_case("monotonic -1 800000000\n"); /* -0.2 s */
}

static void time_namespace_setns_ahead(void **state)
{
	(void)state;
	setns_case("monotonic 0 200000000\n"); /* +0.2 s */
}

struct waiter {
	struct barrierd *b;
	int rounds, failures;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	for (int i = 0; i < w->rounds; i++)
		if (barrierd_barrier(w->b, 5000000000LL) != 0) /* hang guard */
			w->failures++;
	return NULL;
}

static void eight_waiters(void **state)
{
	struct waiter w[8];
	pthread_t t[8];
	struct barrierd *b;
	int failures = 0;

	(void)state;
	assert_int_equal(barrierd_open(&b, H.state), 0);
	for (int i = 0; i < 8; i++) {
		w[i] = (struct waiter){.b = b, .rounds = 300};
		pthread_create(&t[i], NULL, waiter_main, &w[i]);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		failures += w[i].failures;
	}
	printf("8 waiters x 300 barriers: %d failures\n", failures);
	assert_int_equal(failures, 0);
	barrierd_close(b);
}

/* SIGKILL: the heartbeat stops; a waiter returns within the bound, never hangs. */
static void killed_daemon(void **state)
{
	struct barrierd_open_opts fb = {.sz = sizeof(fb),
					.fallback = BARRIERD_FALLBACK_MEMBARRIER,
					.fallback_after_ns = 200000000LL};
	struct barrierd *plain, *with_fb;
	uint64_t t0, t1;

	(void)state;
	assert_int_equal(test_open_file_only(&plain, H.state, NULL), 0);
	assert_int_equal(test_open_file_only(&with_fb, H.state, &fb), 0);
	assert_int_equal(barrierd_barrier(plain, 5000000000LL), 0);
	kill(H.pid, SIGKILL);
	assert_true(test_reap(H.pid, 10) != -1);
	H.pid = -1;

	t0 = bd_mono_ns();
	assert_int_equal(barrierd_barrier(plain, -1), -ESTALE); /* no timeout: liveness ends it */
	t1 = bd_mono_ns();
	printf("no fallback: -ESTALE after %.1f ms\n", (double)(t1 - t0) / 1e6);
	assert_true(t1 - t0 < 5000000000ULL); /* hang guard */

	t0 = bd_mono_ns();
	assert_int_equal(barrierd_barrier(with_fb, -1), 0); /* membarrier(GLOBAL) did the work */
	t1 = bd_mono_ns();
	printf("fallback: membarrier after %.1f ms\n", (double)(t1 - t0) / 1e6);
	barrierd_close(plain);
	barrierd_close(with_fb);
}

static int setup_no_daemon(void **state)
{
	(void)state;
	h_mkdir(&H);
	return 0;
}

/*
 * A program started before the daemon (BARRIERD_OPEN_ATTACH_LATER): its handle runs on the
 * fallback (or backs off to -ESTALE) until the real daemon creates the file, then serves
 * barriers from it without a reopen.
 */
static void attach_later_real_daemon(void **state)
{
	struct barrierd_open_opts o = {.sz = sizeof(o), .flags = BARRIERD_OPEN_ATTACH_LATER};
	struct barrierd *plain, *with_fb;
	uint64_t t0;

	(void)state;
	assert_int_equal(barrierd_open(&plain, H.state), -ENOENT);
	assert_int_equal(barrierd_open_opts(&plain, H.state, &o), 0);
	o.fallback = BARRIERD_FALLBACK_MEMBARRIER;
	assert_int_equal(barrierd_open_opts(&with_fb, H.state, &o), 0);
	assert_int_equal(barrierd_barrier(plain, 20000000LL), -ESTALE);
	assert_int_equal(barrierd_barrier(with_fb, 5000000000LL), 0); /* membarrier */
	assert_false(barrierd_live(plain));

	assert_int_equal(h_start(&H, -1, NULL), 0);
	t0 = bd_mono_ns();
	for (int r; (r = barrierd_barrier(plain, 1000000000LL)) != 0;) {
		assert_int_equal(r, -ESTALE);
		assert_true(bd_mono_ns() - t0 < 10000000000ULL); /* hang guard */
	}
	printf("attach later: first barrier %.1f ms after the daemon was ready\n",
	       (double)(bd_mono_ns() - t0) / 1e6);
	assert_true(barrierd_live(plain));
	assert_int_equal(barrierd_barrier(with_fb, 5000000000LL), 0);
	assert_non_null(barrierd_mapping(with_fb, NULL));
	barrierd_close(plain);
	barrierd_close(with_fb);
}

int main(void)
{
	test_require_root();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(time_namespace_client, setup, teardown),
	    cmocka_unit_test_setup_teardown(time_namespace_setns_behind, setup, teardown),
	    cmocka_unit_test_setup_teardown(time_namespace_setns_ahead, setup, teardown),
	    cmocka_unit_test_setup_teardown(fork_child_without_files, setup, teardown),
	    cmocka_unit_test_setup_teardown(eight_waiters, setup, teardown),
	    cmocka_unit_test_setup_teardown(killed_daemon, setup, teardown),
	    cmocka_unit_test_setup_teardown(attach_later_real_daemon, setup_no_daemon, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
