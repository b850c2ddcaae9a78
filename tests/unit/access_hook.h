/* SPDX-License-Identifier: MIT */
/*
 * access_hook.h - act between any two loads the library makes from its mapping, deterministically.
 *
 * Memory-ordering bugs of a reader are windows between two of its loads; a test that runs the
 * fake daemon from another thread hits such a window by luck.  This hook puts the test
 * inside the window instead, without a single test-only line in the library: the library's
 * read-only mapping (barrierd_mapping()) is made PROT_NONE, so each load from it faults.  The
 * SIGSEGV handler calls the test's callback with the address about to be loaded (the load has
 * not been performed yet), makes the mapping readable again and sets the trap flag; the load
 * is performed, and the single-step trap right after it (SIGTRAP) protects the mapping again.
 * The callback thus runs before every load, in the library's own program order, and may act
 * there as the daemon (a restart, a disarm) through the fake daemon's own read-write
 * mapping, which is never protected.  When it returns AH_DONE the mapping stays readable and
 * the hook is off.
 *
 * Rules for tests: the callback runs in a signal handler (atomic stores and futex wakes only:
 * no locks, no allocation); only the calling thread may touch the library's mapping while the
 * hook is on; and the hook must be off before the library makes a system call on the mapping
 * (a futex on a PROT_NONE page fails with EFAULT instead of sleeping).
 */
#ifndef BARRIERD_ACCESS_HOOK_H
#define BARRIERD_ACCESS_HOOK_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define AH_GO_ON 0
#define AH_DONE 1
#define AH_EFLAGS_TF 0x100 /* x86 EFLAGS.TF: trap after the next instruction */

typedef int (*ah_fn)(const char *addr, void *arg);

static struct {
	char *lo;
	size_t len;
	ah_fn fn;
	void *arg;
	volatile sig_atomic_t on;
	volatile unsigned loads; /* loads seen (callbacks made) */
	struct sigaction old_segv, old_trap;
} ah;

static inline void ah_on_segv(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	const char *a = si->si_addr;

	(void)sig;
	if (!ah.on || a < ah.lo || a >= ah.lo + ah.len) {
		/* Not ours: a real crash.  The load faults again, under the previous handler. */
		sigaction(SIGSEGV, &ah.old_segv, NULL);
		return;
	}
	ah.loads++;
	if (ah.fn(a, ah.arg) == AH_DONE) {
		ah.on = 0;
		mprotect(ah.lo, ah.len, PROT_READ);
		return;
	}
	mprotect(ah.lo, ah.len, PROT_READ);
	uc->uc_mcontext.gregs[REG_EFL] |= AH_EFLAGS_TF;
}

static inline void ah_on_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	(void)si;
	uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)AH_EFLAGS_TF;
	if (ah.on)
		mprotect(ah.lo, ah.len, PROT_NONE);
}

/* Hook every load from [base, base + len) (rounded out to pages).  0 or -1. */
static inline int ah_arm(const void *base, size_t len, ah_fn fn, void *arg)
{
	struct sigaction sa;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	memset(&sa, 0, sizeof(sa));
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	ah.lo = (char *)((uintptr_t)base & ~(uintptr_t)(pg - 1));
	ah.len = ((const char *)base + len - ah.lo + pg - 1) & ~(pg - 1);
	ah.fn = fn;
	ah.arg = arg;
	ah.loads = 0;
	sa.sa_sigaction = ah_on_segv;
	if (sigaction(SIGSEGV, &sa, &ah.old_segv))
		return -1;
	sa.sa_sigaction = ah_on_trap;
	if (sigaction(SIGTRAP, &sa, &ah.old_trap))
		return -1;
	ah.on = 1;
	return mprotect(ah.lo, ah.len, PROT_NONE) ? -1 : 0;
}

/* Off (if the callback did not end it), mapping readable, handlers restored. */
static inline void ah_disarm(void)
{
	ah.on = 0;
	mprotect(ah.lo, ah.len, PROT_READ);
	sigaction(SIGSEGV, &ah.old_segv, NULL);
	sigaction(SIGTRAP, &ah.old_trap, NULL);
}

#endif
