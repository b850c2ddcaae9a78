// SPDX-License-Identifier: MIT
/*
 * The credit snapshot (credit.h) and the rule-6 checks that guard it.  The BPF-side words (the
 * slots, the .bss counters) are __u64 and volatile, which bd_sync.h's helpers do not take: they
 * are read with the __atomic builtins directly.
 */
#include "credit.h"
#include "bd_sync.h"
#include "log.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

int online_mask_read(struct publisher *p)
{
	char *buf = p->online_buf, *s = buf;
	ssize_t n = pread(p->online_fd, buf, p->online_buf_len, 0);

	memset(p->online, 1, p->ncpu);
	/*
	 * A whole list ends in a newline and fits the buffer (sized for the worst list of ncpu
	 * ids).  A list cut short would mark every CPU after the cut offline: refuse it.
	 */
	if (n <= 0 || (size_t)n >= p->online_buf_len || buf[n - 1] != '\n')
		return n < 0 ? -errno : -EIO;
	buf[n] = 0;
	memset(p->changed, 0, p->ncpu); /* scratch for the parse */
	while (*s && *s != '\n') {
		char *end;
		unsigned long a = strtoul(s, &end, 10), b = a;

		if (end == s)
			return -EIO;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		for (unsigned long c = a; c <= b && c < p->ncpu; c++)
			p->changed[c] = 1;
		if (*end != ',' && *end != '\n')
			return -EIO;
		s = *end == ',' ? end + 1 : end;
	}
	memcpy(p->online, p->changed, p->ncpu);
	memset(p->changed, 0, p->ncpu);
	return 0;
}

/* ---- DESIGN rule 6: the programs must be live ------------------------------------------- */

static uint64_t thread_switches(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return 0;
	return (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}

void publisher_arm_detach_check(struct publisher *p)
{
	if (!p->bss_main_switches)
		return;
	/*
	 * The program's count first, the kernel's second: a switch in between raises only the
	 * kernel's baseline, which can hide one missed switch but never raise a false alarm.
	 */
	p->bpf_base = __atomic_load_n(p->bss_main_switches, __ATOMIC_ACQUIRE);
	p->rusage_base = thread_switches();
}

/* Rule 6: has the kernel switched this thread out more often than the program saw? */
static int detach_check(struct publisher *p)
{
	uint64_t k, b;

	if (!p->bss_main_switches)
		return 0;
	/* Kernel first, program second: every switch counted by the kernel has been traced. */
	k = thread_switches() - p->rusage_base;
	b = __atomic_load_n(p->bss_main_switches, __ATOMIC_ACQUIRE) - p->bpf_base;
	if (k > b) {
		log_err("the kernel switched the daemon out %llu times, the BPF program saw %llu: "
			"the programs were detached; refusing to credit idle CPUs",
			(unsigned long long)k, (unsigned long long)b);
		return -ENOLINK;
	}
	return 0;
}

/*
 * Rule 6, for the credit itself: were the programs attached at some instant after the idle
 * idle loads?  Force a switch of this thread (a short sleep) and see the program count it.  The
 * program's count is loaded first, after the idle loads (loads are performed in order, F2),
 * so any increment seen afterwards comes from a switch after them, traced by an
 * attached program.  The kernel's count only tells that a switch did happen (it is raised in
 * the same __schedule() call, before the tracepoint), so that a missing increment means a
 * detached program and not a sleep that never slept.  0, -ENOLINK (detached), or -EAGAIN (no
 * switch could be forced: the caller withholds idle credit).
 */
#define FORCED_SWITCH_TRIES 12 /* sleeps of 1 us, doubling: about 4 ms in all at worst */

static __attribute__((unused)) int attached_after_loads(struct publisher *p)
{
	uint64_t b0, k0;

	if (!p->bss_main_switches)
		return 0;
	b0 = __atomic_load_n(p->bss_main_switches, __ATOMIC_ACQUIRE);
	k0 = thread_switches();
	for (int i = 0; i < FORCED_SWITCH_TRIES; i++) {
		struct timespec ts = {0, 1000L << i};

		/* The main thread's timer slack is 1 ns (daemon setup): this really is ~1 us. */
		clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
		if (thread_switches() == k0)
			continue; /* the timer expired before we slept: no switch */
		if (__atomic_load_n(p->bss_main_switches, __ATOMIC_ACQUIRE) > b0)
			return 0;
		log_err("the kernel switched the daemon out after the idle check, the BPF program "
			"did not see it: the programs were detached; refusing to credit idle CPUs");
		return -ENOLINK;
	}
	return -EAGAIN;
}

/* ---- the snapshot ------------------------------------------------------------------------- */

/*
 * tests/audit/check_disasm.sh reads this function's machine code: the clock call, LFENCE and
 * MFENCE in straight-line code, before the idle loads.  Keep the sequence in this function,
 * not in a helper the compiler may keep out of line.
 */
int credit_snapshot(struct publisher *p, struct credit *cr)
{
	struct barrierd_header *h = p->sf->hdr;
	int ret;

	/* DESIGN rule 6: a detach seen since the last pass (this thread slept since) ends it. */
	ret = detach_check(p);
	if (ret)
		return ret;
	/*
	 * DESIGN rules 2 and 3: the clock (r) first; LFENCE so the vtime load below cannot be
	 * performed before the clock read; then v, the vtime the file shows now.
	 */
	cr->r = bd_mono_ns();
	bd_lfence();
	cr->v = bd_load(&h->vtime);
	/*
	 * DESIGN rules 2 and 3: the drain.  Our vtime store and all earlier stores are globally
	 * visible before the online mask and the idle words are loaded (no load is performed
	 * before an MFENCE).  A CPU that comes up sets its bit (locked) before running any task,
	 * so a clear bit read after this fence means the CPU runs nothing until after r, and it
	 * will see v; the same holds for a CPU whose idle word reads IDLE below.
	 */
	bd_mfence();
	if (p->online_fd >= 0 && online_mask_read(p))
		log_warn("cannot read the online CPU mask; no offline credit this pass");
	for (uint64_t c = 0; c < p->ncpu; c++) {
		uint64_t old;

		if (!p->online[c])
			continue;
		/*
		 * DESIGN rule 2: a load after the MFENCE above (the slots are frozen and mapped
		 * read-only: no RMW is possible, and none is needed).  If it reads IDLE, the
		 * CPU's next exit from idle (a locked xchg to BUSY, never left in its store
		 * buffer) was not in memory yet, so it comes after this load, after r; and the
		 * MFENCE made v visible before this load, so before that CPU runs user code.
		 */
		old = __atomic_load_n(&p->slots[c].idle, __ATOMIC_ACQUIRE);
		p->state[c] = old == BARRIERD_SLOT_IDLE ? BARRIERD_CPU_IDLE : BARRIERD_CPU_BUSY;
	}
	/*
	 * DESIGN rule 6: an IDLE read above is evidence only if the switch program was attached
	 * after it (the check before the loads sees a detach only once this thread has slept
	 * since; a ring wakes us with a switch *in*, which no count sees).
	 */
	/* Only an IDLE read needs it: with no idle credit to give, the forced sleep is skipped. */
	ret = 0;
	for (uint64_t c = 0; c < p->ncpu && !ret; c++)
		ret = p->state[c] == BARRIERD_CPU_IDLE;
	if (ret)
		ret = attached_after_loads(p);
	if (ret == -ENOLINK)
		return ret;
	if (ret) {
		log_warn(
		    "could not force a switch to check the programs: no idle credit this pass");
		for (uint64_t c = 0; c < p->ncpu; c++)
			if (p->state[c] == BARRIERD_CPU_IDLE)
				p->state[c] = BARRIERD_CPU_BUSY;
	}
	/*
	 * DESIGN rule 7: the CPU this thread runs on executed the MFENCE above after r (rule 1
	 * applied to our own event): its earlier stores were drained by it and its later loads
	 * come after it.  If we migrated since, the CPU we run on now
	 * switched us in after it, through the scheduler's locked instructions: it passed r as
	 * well.  Without this, a daemon that was already running when a client stamped would hold
	 * its own CPU back until that CPU's next event.
	 */
	cr->self = sched_getcpu();
	return 0;
}
