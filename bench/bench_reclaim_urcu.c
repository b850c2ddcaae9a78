// SPDX-License-Identifier: MIT
/*
 * One liburcu flavour for bench_reclaim (bench_reclaim.h), compiled once per flavour with
 * RCL_FLAVOUR 1 (memb: membarrier PRIVATE_EXPEDITED), 2 (mb: a fence in every read lock) or
 * 3 (qsbr: quiescent states).  _LGPL_SOURCE: the read side is liburcu's inline fast path, as
 * a program that cares about its cost uses it (the benchmark is built, never installed).
 * Retired objects go to call_rcu (the flavour's worker thread frees them in batches).
 */
#define _LGPL_SOURCE
#include "bench_reclaim.h"

#include <errno.h>
#include <stddef.h>
#include <time.h>

#if RCL_FLAVOUR == 1
#include <urcu/urcu-memb.h>
#define F(x) urcu_memb_##x
#define IMPL rcl_urcu_memb
#define NAME "urcu-memb"
#elif RCL_FLAVOUR == 2
#include <urcu/urcu-mb.h>
#define F(x) urcu_mb_##x
#define IMPL rcl_urcu_mb
#define NAME "urcu-mb"
#elif RCL_FLAVOUR == 3
#include <urcu/urcu-qsbr.h>
#define F(x) urcu_qsbr_##x
#define IMPL rcl_urcu_qsbr
#define NAME "urcu-qsbr"
#else
#error "RCL_FLAVOUR must be 1 (memb), 2 (mb) or 3 (qsbr)"
#endif

_Static_assert(sizeof(struct rcu_head) <= sizeof(((struct rcl_obj *)0)->hook),
	       "rcu_head fits the object's hook");

static int setup(void)
{
#if RCL_FLAVOUR != 3
	F(init)(); /* qsbr has none */
#endif
	return 0;
}

static void teardown(void)
{
	F(barrier)();
}

static void *reader_register(void)
{
	F(register_thread)();
	return (void *)1;
}

static void reader_unregister(void *r)
{
	(void)r;
	F(unregister_thread)();
}

static uint64_t read_loop(void *r, uint64_t n)
{
	uint64_t sum = 0;

	(void)r;
	for (uint64_t i = 0; i < n; i++) {
		struct rcl_obj *p;

		F(read_lock)();
		p = rcu_dereference(rcl_src);
		sum += p->data[0];
		F(read_unlock)();
#if RCL_FLAVOUR == 3
		/* qsbr's readers must announce quiescent states: once per 1024 sections here. */
		if (!(i & 1023))
			F(quiescent_state)();
#endif
	}
#if RCL_FLAVOUR == 3
	F(quiescent_state)();
#endif
	return sum;
}

static void reader_sleep(void *r, uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ULL),
			      .tv_nsec = (long)(ns % 1000000000ULL)};

	(void)r;
#if RCL_FLAVOUR == 3
	F(thread_offline)();
#endif
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
#if RCL_FLAVOUR == 3
	F(thread_online)();
#endif
}

/* call_rcu takes the flavour's read lock: the writer is a registered thread (qsbr: offline
 * but around its calls, so that it never holds a grace period back). */
static void *writer_register(void)
{
	F(register_thread)();
#if RCL_FLAVOUR == 3
	F(thread_offline)();
#endif
	return (void *)1;
}

static void writer_unregister(void *w)
{
	(void)w;
#if RCL_FLAVOUR == 3
	F(thread_online)();
#endif
	F(unregister_thread)();
}

static int synchronize(void *w)
{
	(void)w;
	F(synchronize_rcu)();
	return 0;
}

static void free_cb(struct rcu_head *h)
{
	rcl_obj_free((struct rcl_obj *)(void *)h);
}

static int retire(void *w, struct rcl_obj *o)
{
	(void)w;
#if RCL_FLAVOUR == 3
	F(thread_online)();
#endif
	F(call_rcu)((struct rcu_head *)(void *)o->hook, free_cb);
#if RCL_FLAVOUR == 3
	F(thread_offline)();
#endif
	return 0;
}

/* rcu_barrier refuses to wait inside a read section, which an online qsbr thread is in. */
static int drain(void *w)
{
	(void)w;
	F(barrier)();
	return 0;
}

const struct rcl_impl IMPL = {
    .name = NAME,
    .setup = setup,
    .teardown = teardown,
    .reader_register = reader_register,
    .reader_unregister = reader_unregister,
    .read_loop = read_loop,
    .reader_sleep = reader_sleep,
    .writer_register = writer_register,
    .writer_unregister = writer_unregister,
    .synchronize = synchronize,
    .retire = retire,
    .drain = drain,
};
