// SPDX-License-Identifier: MIT
/*
 * Epochs and hazard pointers in a forked child: the child has only the thread that forked, so
 * the other threads' records, copied with the memory, must hold nothing there, while the
 * forking thread's own record and the child's new threads' records still count.  Domains
 * without a handle (the barrier is membarrier(GLOBAL)): no daemon needed.  Timeouts are hang
 * guards, or the calls' own short deadlines where a section is meant to hold the writer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <barrierd_reclaim.h>
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

#define SHORT_NS (50 * TEST_MS)

/* A reader thread: registers, enters (or protects), says so, stays until told to go. */
struct reader {
	struct barrierd_epoch *e;
	struct barrierd_hp *d;
	void *const *src;
	int in[2], out[2]; /* in: "go" to the reader; out: "inside" from it */
	pthread_t t;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	char c = 1;

	if (r->e) {
		struct barrierd_epoch_record *rec = barrierd_epoch_register(r->e);

		barrierd_epoch_enter(rec);
		(void)!write(r->out[1], &c, 1);
		(void)!read(r->in[0], &c, 1);
		barrierd_epoch_exit(rec);
		barrierd_epoch_unregister(r->e, rec);
	} else {
		struct barrierd_hp_record *rec = barrierd_hp_register(r->d);

		barrierd_hp_protect(rec, 0, r->src);
		(void)!write(r->out[1], &c, 1);
		(void)!read(r->in[0], &c, 1);
		barrierd_hp_clear(rec, 0);
		barrierd_hp_unregister(r->d, rec);
	}
	return NULL;
}

static void reader_start(struct reader *r)
{
	char c;

	assert_int_equal(pipe(r->in), 0);
	assert_int_equal(pipe(r->out), 0);
	assert_int_equal(pthread_create(&r->t, NULL, reader_main, r), 0);
	assert_int_equal(read(r->out[0], &c, 1), 1);
}

static void reader_stop(struct reader *r)
{
	char c = 1;

	assert_int_equal(write(r->in[1], &c, 1), 1);
	assert_int_equal(pthread_join(r->t, NULL), 0);
	for (int i = 0; i < 2; i++) {
		close(r->in[i]);
		close(r->out[i]);
	}
}

static void skip_without_membarrier(void)
{
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0))
		skip();
}

/* Run fn in a forked child; its exit status (0: every check held). */
static int in_child(int (*fn)(void *), void *arg)
{
	int st;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fn(arg));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

struct epoch_child {
	struct barrierd_epoch *e;
	struct barrierd_epoch_record *own; /* the forking thread's, inside a section at fork */
};

static int epoch_child(void *arg)
{
	struct epoch_child *c = arg;
	struct reader r = {.e = c->e};

	/* The forking thread's section goes on in the child: it holds the writer. */
	if (barrierd_epoch_synchronize(c->e, SHORT_NS) != -ETIMEDOUT)
		return 1;
	barrierd_epoch_exit(c->own);
	/* The parent's reader is not here: its record holds nothing. */
	if (barrierd_epoch_synchronize(c->e, (int64_t)TEST_HANG_GUARD_NS) != 0)
		return 2;
	/* A reader of the child's own counts. */
	reader_start(&r);
	if (barrierd_epoch_synchronize(c->e, SHORT_NS) != -ETIMEDOUT)
		return 3;
	reader_stop(&r);
	if (barrierd_epoch_synchronize(c->e, (int64_t)TEST_HANG_GUARD_NS) != 0)
		return 4;
	return 0;
}

static void epoch_fork_during_section(void **state)
{
	struct barrierd_epoch *e = barrierd_epoch_new(NULL, 0);
	struct epoch_child c = {.e = e};
	struct reader r = {.e = e};

	(void)state;
	skip_without_membarrier();
	assert_non_null(e);
	c.own = barrierd_epoch_register(e);
	assert_non_null(c.own);
	reader_start(&r);
	barrierd_epoch_enter(c.own);
	assert_int_equal(in_child(epoch_child, &c), 0);
	barrierd_epoch_exit(c.own);
	/* In the parent the reader is still inside: it holds the writer. */
	assert_int_equal(barrierd_epoch_synchronize(e, SHORT_NS), -ETIMEDOUT);
	reader_stop(&r);
	assert_int_equal(barrierd_epoch_synchronize(e, (int64_t)TEST_HANG_GUARD_NS), 0);
	barrierd_epoch_unregister(e, c.own);
	barrierd_epoch_free(e);
}

static int freed;
static void count_free(void *p)
{
	(void)p;
	freed++;
}

struct hp_child {
	struct barrierd_hp *d;
	struct barrierd_hp_record *own;
	void *obj, *obj2;
};

static int hp_child(void *arg)
{
	struct hp_child *c = arg;

	/* The parent reader's slot protects nothing here; the forking thread's still does. */
	freed = 0;
	if (barrierd_hp_retire(c->d, c->obj, count_free) ||
	    barrierd_hp_retire(c->d, c->obj2, count_free) || barrierd_hp_reclaim(c->d))
		return 1;
	if (freed != 1)
		return 2;
	barrierd_hp_clear(c->own, 0);
	if (barrierd_hp_reclaim(c->d) || freed != 2)
		return 3;
	return 0;
}

static void hp_fork_during_protect(void **state)
{
	static char obj, obj2;
	void *src = &obj, *src2 = &obj2;
	struct barrierd_hp *d = barrierd_hp_new(NULL, 0);
	struct hp_child c = {.d = d, .obj = &obj, .obj2 = &obj2};
	struct reader r = {.d = d, .src = &src};

	(void)state;
	skip_without_membarrier();
	assert_non_null(d);
	c.own = barrierd_hp_register(d);
	assert_non_null(c.own);
	reader_start(&r);
	barrierd_hp_protect(c.own, 0, &src2);
	assert_int_equal(in_child(hp_child, &c), 0);
	/* In the parent both slots still hold their objects. */
	freed = 0;
	assert_int_equal(barrierd_hp_retire(d, &obj, count_free), 0);
	assert_int_equal(barrierd_hp_retire(d, &obj2, count_free), 0);
	assert_int_equal(barrierd_hp_reclaim(d), 0);
	assert_int_equal(freed, 0);
	reader_stop(&r);
	barrierd_hp_clear(c.own, 0);
	assert_int_equal(barrierd_hp_reclaim(d), 0);
	assert_int_equal(freed, 2);
	barrierd_hp_unregister(d, c.own);
	barrierd_hp_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(epoch_fork_during_section),
	    cmocka_unit_test(hp_fork_during_protect),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
