// SPDX-License-Identifier: MIT
/*
 * BARRIERD_OPEN_ATTACH_LATER against a fake daemon: a handle opened before the file exists
 * runs on its fallback policy (membarrier, or a back-off and -ESTALE), maps the file once it
 * appears, with every check of an open, and never lets a stamp older than the file pass.
 *
 * The file "appears" as a hard link to the fake daemon's file, so the daemon's writes reach it.
 * Timeouts are hang guards, or the waits' own (short) timeouts.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fake_daemon.h"

#define NCPU 2
#define ALL_CPUS ((1ULL << NCPU) - 1)

struct fx {
	struct fake_daemon s;
	char late[PATH_MAX + 8]; /* where the handles look: not there until appear() */
	struct barrierd *b;	 /* attach later, no fallback */
	struct barrierd *fb;	 /* attach later, membarrier fallback */
};

static int open_late(struct fx *f, struct barrierd **b, int fallback, const char *path)
{
	struct barrierd_open_opts o = {
	    .sz = sizeof(o), .fallback = fallback, .flags = BARRIERD_OPEN_ATTACH_LATER};

	return fake_open_lib(b, path ? path : f->late, &o);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	*state = f;
	/* Every CPU kept fresh: once the file is there, a barrier passes within a tick. */
	if (fake_create(&f->s, NCPU, FAKE_LIVE) || fake_start_ticker(&f->s, ALL_CPUS))
		return -1;
	snprintf(f->late, sizeof(f->late), "%s/late", f->s.dir);
	if (open_late(f, &f->b, BARRIERD_FALLBACK_NONE, NULL) ||
	    open_late(f, &f->fb, BARRIERD_FALLBACK_MEMBARRIER, NULL))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (!f)
		return 0;
	fake_stop_ticker(&f->s);
	barrierd_close(f->b);
	barrierd_close(f->fb);
	unlink(f->late);
	fake_destroy(&f->s);
	free(f);
	return 0;
}

static int membarrier_result(void)
{
	return syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) ? -errno : 0;
}

/* The file appears; the handles' next look (at most 10 ms after their last) finds it. */
static void appear(struct fx *f)
{
	assert_int_equal(link(f->s.path, f->late), 0);
	test_sleep_ns(15 * TEST_MS);
}

static void without_flag_enoent(void **state)
{
	struct fx *f = *state;
	struct barrierd_open_opts o = {.sz = sizeof(o), .flags = 0x80};
	struct barrierd *b = NULL;

	assert_int_equal(fake_open_lib(&b, f->late, NULL), -ENOENT);
	assert_null(b);
	assert_int_equal(fake_open_lib(&b, f->late, &o), -EINVAL); /* an unknown flag */
}

static void before_the_file(void **state)
{
	struct fx *f = *state;
	size_t size = 1;
	uint64_t t0;

	assert_null(barrierd_mapping(f->b, &size));
	assert_int_equal(size, 0);
	assert_false(barrierd_live(f->b));
	assert_false(barrierd_passed(f->b, barrierd_stamp_ns(f->b)));
	assert_int_equal(barrierd_stamp_vtime(f->b), UINT64_MAX);
	assert_false(barrierd_passed_vtime(f->b, 1));
	assert_int_equal(barrierd_request(f->b), -ENOENT);
	/* Without a fallback: a back-off within the timeout, then -ESTALE; never success. */
	t0 = bd_mono_ns();
	assert_int_equal(barrierd_barrier(f->b, 30 * TEST_MS), -ESTALE);
	assert_true(bd_mono_ns() - t0 >= 30 * TEST_MS);
	assert_int_equal(barrierd_wait(f->b, barrierd_stamp_ns(f->b), 0), -ESTALE);
	assert_int_equal(barrierd_wait_vtime(f->b, barrierd_stamp_vtime(f->b), 0), -ESTALE);
	/* With it: membarrier's own result, at once. */
	assert_int_equal(barrierd_barrier(f->fb, TEST_HANG_GUARD_NS), membarrier_result());
	assert_int_equal(barrierd_wait(f->fb, barrierd_stamp_ns(f->fb), TEST_HANG_GUARD_NS),
			 membarrier_result());
	/* Stamps up to the open are refused as for any handle. */
	assert_int_equal(barrierd_wait(f->b, barrierd_open_ns(f->b), 0), -EINVAL);
}

/*
 * Before the file, too, the fallback answers only what its call proves: a ns stamp from the
 * future, or a vtime stamp other than the one barrierd_stamp_vtime() gives without a file,
 * waits as without a fallback (the back-off, then -ESTALE); once the file is there, as on any
 * handle.
 */
static void fallback_future_stamps_refused(void **state)
{
	struct fx *f = *state;
	uint64_t future = barrierd_stamp_ns(f->fb) + 10 * TEST_SEC;

	assert_int_equal(barrierd_wait(f->fb, future, 30 * TEST_MS), -ESTALE);
	assert_int_equal(barrierd_wait(f->b, future, 30 * TEST_MS), -ESTALE);
	assert_int_equal(barrierd_wait_vtime(f->fb, 5, 30 * TEST_MS), -ESTALE);
	/* Controls: stamps taken before the call. */
	assert_int_equal(barrierd_wait(f->fb, barrierd_stamp_ns(f->fb), TEST_HANG_GUARD_NS),
			 membarrier_result());
	assert_int_equal(
	    barrierd_wait_vtime(f->fb, barrierd_stamp_vtime(f->fb), TEST_HANG_GUARD_NS),
	    membarrier_result());
	appear(f);
	assert_int_equal(barrierd_wait(f->fb, future, TEST_HANG_GUARD_NS), -ESTALE);
	assert_non_null(barrierd_mapping(f->fb, NULL));
}

static void attaches_when_the_file_appears(void **state)
{
	struct fx *f = *state;
	uint64_t old_ns = barrierd_stamp_ns(f->b), old_vt = barrierd_stamp_vtime(f->b);
	uint64_t old_fb = barrierd_stamp_ns(f->fb);

	appear(f);
	/* The barrier finds the file and passes on the daemon's evidence, with a fresh stamp. */
	assert_int_equal(barrierd_barrier(f->b, TEST_HANG_GUARD_NS), 0);
	assert_non_null(barrierd_mapping(f->b, NULL));
	assert_true(barrierd_live(f->b));
	assert_true(barrierd_open_ns(f->b) >= old_ns);
	/*
	 * Stamps older than the file: nothing in the file may pass them, ever (-EINVAL, as any
	 * stamp at or below open_ns: not -ESTALE, which a caller would retry); the fallback may.
	 */
	assert_false(barrierd_passed(f->b, old_ns));
	assert_int_equal(barrierd_wait(f->b, old_ns, TEST_HANG_GUARD_NS), -EINVAL);
	assert_int_equal(barrierd_wait_vtime(f->b, old_vt, TEST_HANG_GUARD_NS), -EINVAL);
	assert_int_equal(barrierd_wait(f->fb, old_fb, TEST_HANG_GUARD_NS), membarrier_result());
	/* New stamps are served by the daemon as on any handle. */
	assert_int_equal(barrierd_wait(f->b, barrierd_stamp_ns(f->b), TEST_HANG_GUARD_NS), 0);
	assert_int_equal(barrierd_barrier(f->fb, TEST_HANG_GUARD_NS), 0);
}

static void request_attaches(void **state)
{
	struct fx *f = *state;
	uint64_t s;

	appear(f);
	assert_int_equal(barrierd_request(f->b), 0);
	assert_true(barrierd_live(f->b));
	s = barrierd_stamp_ns(f->b);
	for (uint64_t t0 = bd_mono_ns(); !barrierd_passed(f->b, s);) {
		assert_true(bd_mono_ns() - t0 < TEST_HANG_GUARD_NS);
		test_sleep_ns(TEST_MS);
	}
}

/* The file that appears gets every check of an open: one anyone may write is refused. */
static void untrusted_file_refused(void **state)
{
	struct fx *f = *state;
	int fd = open(f->late, O_WRONLY | O_CREAT | O_EXCL, 0644);

	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, 0666), 0);
	close(fd);
	test_sleep_ns(15 * TEST_MS);
	assert_int_equal(barrierd_barrier(f->b, TEST_HANG_GUARD_NS), -EPERM);
	assert_int_equal(barrierd_barrier(f->fb, TEST_HANG_GUARD_NS), -EPERM);
	assert_null(barrierd_mapping(f->b, NULL));
}

/* A relative path is the one of the directory at open, whatever the process does later. */
static void relative_path_kept(void **state)
{
	struct fx *f = *state;
	struct barrierd *b = NULL;
	char cwd[PATH_MAX];

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(f->s.dir), 0);
	assert_int_equal(open_late(f, &b, BARRIERD_FALLBACK_NONE, "late"), 0);
	assert_int_equal(chdir("/"), 0);
	appear(f);
	assert_int_equal(barrierd_barrier(b, TEST_HANG_GUARD_NS), 0);
	barrierd_close(b);
	assert_int_equal(chdir(cwd), 0);
}

/*
 * Many threads retrying while the file appears: every one ends with a barrier, none crashes,
 * and no stamp at or below the file's open_ns ever passes.  Half retry barriers, half take a
 * stamp and wait for it (a stamp that predates the file: -EINVAL, then a new one).
 */
struct racer {
	struct barrierd *b;
	bool stamps;
	int ok, stale, other; /* other: the last other error */
	uint64_t passed;      /* the stamp that passed (stamps) */
	pthread_t t;
};

static void *racer_main(void *arg)
{
	struct racer *r = arg;
	uint64_t t0 = bd_mono_ns();

	while (bd_mono_ns() - t0 < TEST_HANG_GUARD_NS) {
		uint64_t s = barrierd_stamp_ns(r->b);
		int ret = r->stamps ? barrierd_wait(r->b, s, 50 * TEST_MS)
				    : barrierd_barrier(r->b, 50 * TEST_MS);

		if (ret == 0 && r->stamps)
			r->passed = s;
		if (ret == -EINVAL && r->stamps)
			continue; /* stamped before the file was mapped */

		if (ret == 0) {
			r->ok++;
			break;
		}
		/* The file may be found with none of the 50 ms left: then the barrier times out. */
		if (ret == -ESTALE || ret == -ETIMEDOUT)
			r->stale++;
		else
			r->other = ret;
	}
	return NULL;
}

static void threads_attach_together(void **state)
{
	struct fx *f = *state;
	struct racer r[8];

	for (int i = 0; i < 8; i++) {
		r[i] = (struct racer){.b = f->b, .stamps = i % 2};
		assert_int_equal(pthread_create(&r[i].t, NULL, racer_main, &r[i]), 0);
	}
	test_sleep_ns(80 * TEST_MS);
	assert_int_equal(link(f->s.path, f->late), 0);
	for (int i = 0; i < 8; i++) {
		pthread_join(r[i].t, NULL);
		assert_int_equal(r[i].other, 0);
		assert_int_equal(r[i].ok, 1);
		if (r[i].stamps)
			assert_true(r[i].passed > barrierd_open_ns(f->b));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(without_flag_enoent, setup, teardown),
	    cmocka_unit_test_setup_teardown(before_the_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(fallback_future_stamps_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(attaches_when_the_file_appears, setup, teardown),
	    cmocka_unit_test_setup_teardown(request_attaches, setup, teardown),
	    cmocka_unit_test_setup_teardown(untrusted_file_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(relative_path_kept, setup, teardown),
	    cmocka_unit_test_setup_teardown(threads_attach_together, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
