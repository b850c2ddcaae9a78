// SPDX-License-Identifier: MIT
#include "nudge.h"
#include "bd_sync.h"
#include "log.h"
#include "sandbox.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * How long the start waits for the threads to drop their privileges, and the stop for them to
 * leave.  A thread pinned to a CPU that a SCHED_FIFO 99 task holds never runs: the daemon must
 * neither hang at its start nor at its stop for it.
 */
#define NUDGE_START_WAIT_NS (1000000000ULL)
#define NUDGE_STOP_WAIT_NS (100000000ULL)

static void futex_wake1(uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static bool pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) == 0;
}

static void *nudge_main(void *arg)
{
	struct nudge_cpu *nc = arg;
	uint32_t st = NUDGE_STARTING;
	char name[16];
	int err;

	/*
	 * Given up on (we could not run in time): the seccomp filter may be on, and it forbids
	 * what dropping privileges calls.  Leave having run nothing.
	 */
	if (!__atomic_compare_exchange_n(&nc->state, &st, NUDGE_SETUP, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return NULL;
	/* Named, so that tools moving the daemon's threads (taskset -a) can leave these alone. */
	snprintf(name, sizeof(name), "bd-nudge/%d", nc->cpu);
	pthread_setname_np(pthread_self(), name);
	err = sandbox_drop_privileges();
	__atomic_store_n(&nc->state, err ? NUDGE_FAILED : NUDGE_READY, __ATOMIC_RELEASE);
	futex_wake1(&nc->state);
	if (err)
		return NULL;
	while (!__atomic_load_n(&nc->stop, __ATOMIC_ACQUIRE)) {
		uint32_t seen = __atomic_load_n(&nc->word, __ATOMIC_ACQUIRE);
		bool lost;

		if (__atomic_load_n(&nc->stop, __ATOMIC_ACQUIRE))
			break;
		/*
		 * Waking here is the whole nudge: the kernel switched this CPU to us, and the
		 * switch stamped it.  Nothing to do but sleep again.
		 */
		syscall(SYS_futex, &nc->word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
		if (sched_getcpu() == nc->cpu)
			continue;
		/*
		 * A CPU that went offline took our pinning with it (the kernel moved us and
		 * widened the mask); once it is back, go back to it.  A nudge served elsewhere
		 * stamped the wrong CPU: a delay until the next one, never evidence for this one.
		 * Refused (offline for now, or no longer in our cpuset): not nudged until a later
		 * wake gets us back (the main thread's looks still wake us, within the limit).
		 */
		lost = !pin_self(nc->cpu);
		if (lost != __atomic_exchange_n(&nc->lost, lost, __ATOMIC_RELAXED))
			log_warn("nudges: cpu %d %s", nc->cpu,
				 lost
				     ? "cannot be returned to (offline, or not in our cpuset): not "
				       "nudged"
				     : "is ours to run on again: nudged again");
	}
	return NULL;
}

/* Wait for a started thread's handshake until end (absolute, CLOCK_MONOTONIC); its state. */
static uint32_t await_ready(struct nudge_cpu *nc, uint64_t end)
{
	for (;;) {
		uint32_t st = __atomic_load_n(&nc->state, __ATOMIC_ACQUIRE);
		uint64_t now = bd_mono_ns();
		struct timespec ts;

		if (st == NUDGE_READY || st == NUDGE_FAILED || st == NUDGE_ABANDONED)
			return st;
		if (st == NUDGE_STARTING && now >= end) {
			/* Give up on it, unless it just began its setup (then it ends in µs). */
			if (__atomic_compare_exchange_n(&nc->state, &st, NUDGE_ABANDONED, false,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				return NUDGE_ABANDONED;
			continue;
		}
		if (st == NUDGE_SETUP) {
			syscall(SYS_futex, &nc->state, FUTEX_WAIT_PRIVATE, st, NULL, NULL, 0);
			continue;
		}
		ts.tv_sec = (time_t)((end - now) / 1000000000ULL);
		ts.tv_nsec = (long)((end - now) % 1000000000ULL);
		syscall(SYS_futex, &nc->state, FUTEX_WAIT_PRIVATE, st, &ts, NULL, 0);
	}
}

int nudger_start(struct nudger *n, uint64_t ncpu, int priority, uint64_t rate)
{
	struct sched_param sp = {.sched_priority = priority};
	uint64_t end;
	int ret = 0;

	memset(n, 0, sizeof(*n));
	n->ncpu = ncpu;
	n->cpu = calloc(ncpu, sizeof(*n->cpu));
	if (!n->cpu)
		return -ENOMEM;
	for (uint64_t c = 0; c < ncpu && !ret; c++) {
		struct nudge_cpu *nc = &n->cpu[c];
		pthread_attr_t attr;
		cpu_set_t set;

		nc->cpu = (int)c;
		rate_limit_init(&nc->limit, rate, BARRIERD_NUDGE_BURST);
		CPU_ZERO(&set);
		CPU_SET(c, &set);
		pthread_attr_init(&attr);
		/* Small stacks: a thread per CPU, each of which only sleeps. */
		pthread_attr_setstacksize(&attr, 64 * 1024);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
		pthread_attr_setschedparam(&attr, &sp);
		ret = -pthread_create(&nc->thread, &attr, nudge_main, nc);
		pthread_attr_destroy(&attr);
		if (ret == -EINVAL) {
			/* Offline, or outside our cpuset: nothing of ours can run there. */
			log_info("nudges: cpu %llu is offline or not in our cpuset: not nudged",
				 (unsigned long long)c);
			ret = 0;
			continue;
		}
		if (!ret)
			nc->started = true;
	}
	/*
	 * Every thread drops its privileges before the filter goes on (the filter forbids the
	 * calls that do it), the threads started before an error included.  One that cannot run
	 * within the wait is given up: never nudged, and it leaves without running anything.
	 */
	end = bd_mono_ns() + NUDGE_START_WAIT_NS;
	for (uint64_t c = 0; c < ncpu; c++) {
		struct nudge_cpu *nc = &n->cpu[c];
		uint32_t st;

		if (!nc->started)
			continue;
		st = await_ready(nc, end);
		if (st == NUDGE_FAILED && !ret)
			ret = -EPERM;
		else if (st == NUDGE_ABANDONED)
			log_warn("nudges: the thread for cpu %llu did not run within %llu ms (a "
				 "SCHED_FIFO 99 task there?): that CPU is not nudged",
				 (unsigned long long)c,
				 (unsigned long long)(NUDGE_START_WAIT_NS / 1000000));
	}
	if (ret)
		nudger_stop(n);
	return ret;
}

bool nudger_can(const struct nudger *n, uint64_t c)
{
	if (!n->cpu || n->stopped || c >= n->ncpu)
		return false;
	return n->cpu[c].started &&
	       __atomic_load_n(&n->cpu[c].state, __ATOMIC_ACQUIRE) == NUDGE_READY;
}

bool nudger_serves(const struct nudger *n, uint64_t c)
{
	return nudger_can(n, c) && !__atomic_load_n(&n->cpu[c].lost, __ATOMIC_RELAXED);
}

bool nudger_nudge(struct nudger *n, uint64_t c, uint64_t now, uint64_t *next)
{
	struct nudge_cpu *nc;

	if (!nudger_can(n, c))
		return false;
	nc = &n->cpu[c];
	if (!rate_limit_take(&nc->limit, now)) {
		if (next) {
			uint64_t t = rate_limit_next(&nc->limit, now);

			if (!*next || t < *next)
				*next = t;
		}
		return false;
	}
	/*
	 * The bump before the wake, so that a thread between its load and its FUTEX_WAIT
	 * returns at once (the kernel compares the word) instead of sleeping through this.  A
	 * thread that lost its CPU is woken too: that wake is its chance to get back.
	 */
	__atomic_add_fetch(&nc->word, 1, __ATOMIC_RELEASE);
	futex_wake1(&nc->word);
	return true;
}

void nudger_stop(struct nudger *n)
{
	struct timespec end;
	uint64_t e = bd_mono_ns() + NUDGE_STOP_WAIT_NS;
	bool all = true;

	if (!n->cpu || n->stopped)
		return;
	n->stopped = true;
	for (uint64_t c = 0; c < n->ncpu; c++) {
		struct nudge_cpu *nc = &n->cpu[c];

		if (!nc->started)
			continue;
		__atomic_store_n(&nc->stop, 1, __ATOMIC_RELEASE);
		__atomic_add_fetch(&nc->word, 1, __ATOMIC_RELEASE);
		futex_wake1(&nc->word);
	}
	/*
	 * A thread a SCHED_FIFO 99 task keeps off its CPU cannot leave: not waited for past the
	 * bound (the process's exit ends it).  The array it uses is then never freed.
	 */
	end.tv_sec = (time_t)(e / 1000000000ULL);
	end.tv_nsec = (long)(e % 1000000000ULL);
	for (uint64_t c = 0; c < n->ncpu; c++) {
		struct nudge_cpu *nc = &n->cpu[c];

		if (!nc->started)
			continue;
		if (pthread_clockjoin_np(nc->thread, NULL, CLOCK_MONOTONIC, &end) == 0)
			nc->started = false;
		else
			all = false;
	}
	if (all) {
		free(n->cpu);
		n->cpu = NULL;
	}
}
