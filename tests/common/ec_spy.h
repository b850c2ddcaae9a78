/* SPDX-License-Identifier: MIT */
/*
 * ec_spy.h - what an event count's waits ask of the kernel, and which increments call the
 * library, seen from inside the test.  Include it in ONE file of a test program: it defines
 * two functions that take the place of the library's.
 *
 *   syscall()           libbarrierd calls libc's through its PLT, and the executable's own
 *                       definition comes first (ld exports it: the library refers to it).
 *                       Each FUTEX_WAIT on the watched word's low half is counted: with no
 *                       timeout it is the wait's indefinite block (step (f) of
 * lib/primitives/ec.c), with one a slice.  Six register arguments in, the same six passed on.
 *   barrierd_ec_wake()  the increments call it through the executable's symbol; counted,
 *                       then the library's (dlsym RTLD_NEXT).
 */
#ifndef BARRIERD_EC_SPY_H
#define BARRIERD_EC_SPY_H

#include <barrierd_ec.h>

#include <dlfcn.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/syscall.h>

#include "bd_sync.h"

/* Per thread: what this thread's waits did since spy_thread_reset(). */
struct spy_thread {
	uint64_t blocks;	 /* FUTEX_WAITs with no timeout on the word */
	uint64_t slices;	 /* FUTEX_WAITs with a timeout */
	uint64_t first_block_ns; /* bd_mono_ns() as the first block was asked for, or 0 */
};

static __thread struct spy_thread spy_self;
static const void *spy_word;	 /* __atomic */
static uint64_t spy_wake_calls;	 /* __atomic: barrierd_ec_wake() calls */
static uint64_t spy_futex_calls; /* __atomic: futex calls of any kind on the word */
static uint64_t spy_block_calls; /* __atomic: indefinite blocks, every thread */

static inline void spy_watch(const void *word)
{
	__atomic_store_n(&spy_word, word, __ATOMIC_SEQ_CST);
}

/* Every count back to 0 (the process's and this thread's). */
static inline void spy_reset(void)
{
	__atomic_store_n(&spy_wake_calls, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&spy_futex_calls, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&spy_block_calls, 0, __ATOMIC_SEQ_CST);
	spy_self = (struct spy_thread){0};
}

static inline void spy_thread_reset(void)
{
	spy_self = (struct spy_thread){0};
}

static inline uint64_t spy_get(const uint64_t *counter)
{
	return __atomic_load_n(counter, __ATOMIC_SEQ_CST);
}

long syscall(long n, ...)
{
	static long (*real)(long, ...);
	va_list ap;
	long a[6];

	va_start(ap, n);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	if (n == SYS_futex && a[0] &&
	    (const void *)a[0] == __atomic_load_n(&spy_word, __ATOMIC_RELAXED)) {
		__atomic_add_fetch(&spy_futex_calls, 1, __ATOMIC_SEQ_CST);
		if ((a[1] & FUTEX_CMD_MASK) == FUTEX_WAIT) {
			if (a[3]) {
				spy_self.slices++;
			} else {
				if (!spy_self.blocks)
					spy_self.first_block_ns = bd_mono_ns();
				spy_self.blocks++;
				__atomic_add_fetch(&spy_block_calls, 1, __ATOMIC_SEQ_CST);
			}
		}
	}
	return real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

void barrierd_ec_wake(struct barrierd_ec *ec)
{
	static void (*real)(struct barrierd_ec *);

	if (!real)
		real = (void (*)(struct barrierd_ec *))dlsym(RTLD_NEXT, "barrierd_ec_wake");
	__atomic_add_fetch(&spy_wake_calls, 1, __ATOMIC_SEQ_CST);
	real(ec);
}

#endif
