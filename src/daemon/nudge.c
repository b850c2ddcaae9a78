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
	struct nudger *n = nc->n;
	char name[16];
	int err;

	/*
	 * Too late: the start gave up on us (we could not run in time) and the seccomp filter may
	 * be on, which forbids what dropping privileges calls.  We were never counted as serving.
	 */
	if (__atomic_load_n(&n->closed, __ATOMIC_ACQUIRE))
		return NULL;
	/* Named, so that tools moving the daemon's threads (taskset -a) can leave these alone. */
	snprintf(name, sizeof(name), "bd-nudge/%d", nc->cpu);
	pthread_setname_np(pthread_self(), name);
	err = sandbox_drop_privileges();
	__atomic_store_n(&nc->state, err ? NUDGE_FAILED : NUDGE_READY, __ATOMIC_RELEASE);
	syscall(SYS_futex, &nc->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	if (err)
		return NULL;
	while (!__atomic_load_n(&n->stop, __ATOMIC_ACQUIRE)) {
		uint32_t seen = __atomic_load_n(&nc->word, __ATOMIC_ACQUIRE);

		if (__atomic_load_n(&n->stop, __ATOMIC_ACQUIRE))
			break;
		/*
		 * Waking here is the whole nudge: the kernel switched this CPU to us, and the
		 * switch stamped it.  Nothing to do but sleep again.
		 */
		syscall(SYS_futex, &nc->word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
		/*
		 * A CPU that went offline took our pinning with it (the kernel moved us and
		 * widened the mask); once it is back, go back to it.  A nudge served elsewhere
		 * stamped the wrong CPU: a delay until the next one, never evidence for this one.
		 * Refused (the CPU left our cpuset): say so once, and stop being nudged.
		 */
		if (sched_getcpu() != nc->cpu && !pin_self(nc->cpu) &&
		    !__atomic_exchange_n(&nc->lost, true, __ATOMIC_RELAXED))
			log_warn("nudges: cpu %d is no longer ours to run on (cpuset?): not nudged",
				 nc->cpu);
	}
	return NULL;
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

		nc->n = n;
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
			ret = 0;
			continue;
		}
		if (!ret)
			nc->started = true;
	}
	/*
	 * Every thread drops its privileges before the filter goes on (the filter forbids the
	 * calls that do it).  One that cannot run within the wait is given up: never nudged, and
	 * it leaves without running anything once it does run.
	 */
	end = bd_mono_ns() + NUDGE_START_WAIT_NS;
	for (uint64_t c = 0; c < ncpu && !ret; c++) {
		struct nudge_cpu *nc = &n->cpu[c];
		uint32_t st;

		while (nc->started &&
		       (st = __atomic_load_n(&nc->state, __ATOMIC_ACQUIRE)) == NUDGE_STARTING) {
			uint64_t now = bd_mono_ns();
			struct timespec ts;

			if (now >= end)
				break;
			ts.tv_sec = (time_t)((end - now) / 1000000000ULL);
			ts.tv_nsec = (long)((end - now) % 1000000000ULL);
			syscall(SYS_futex, &nc->state, FUTEX_WAIT_PRIVATE, NUDGE_STARTING, &ts,
				NULL, 0);
		}
		if (!nc->started)
			continue;
		st = __atomic_load_n(&nc->state, __ATOMIC_ACQUIRE);
		if (st == NUDGE_FAILED)
			ret = -EPERM;
		else if (st == NUDGE_STARTING)
			log_warn("nudges: the thread for cpu %llu did not run within %llu ms (a "
				 "SCHED_FIFO 99 task there?): that CPU is not nudged",
				 (unsigned long long)c,
				 (unsigned long long)(NUDGE_START_WAIT_NS / 1000000));
	}
	__atomic_store_n(&n->closed, true, __ATOMIC_RELEASE);
	if (ret)
		nudger_stop(n);
	return ret;
}

bool nudger_serves(const struct nudger *n, uint64_t c)
{
	const struct nudge_cpu *nc;

	if (!n->cpu || c >= n->ncpu)
		return false;
	nc = &n->cpu[c];
	return nc->started && __atomic_load_n(&nc->state, __ATOMIC_ACQUIRE) == NUDGE_READY &&
	       !__atomic_load_n(&nc->lost, __ATOMIC_RELAXED);
}

bool nudger_nudge(struct nudger *n, uint64_t c, uint64_t now, uint64_t *next)
{
	struct nudge_cpu *nc;

	if (!nudger_serves(n, c))
		return false;
	nc = &n->cpu[c];
	if (!rate_limit_take(&nc->limit, now)) {
		nc->held++;
		n->held++;
		if (next) {
			uint64_t t = rate_limit_next(&nc->limit, now);

			if (!*next || t < *next)
				*next = t;
		}
		return false;
	}
	/*
	 * The bump before the wake, so that a thread between its load and its FUTEX_WAIT
	 * returns at once (the kernel compares the word) instead of sleeping through this.
	 */
	__atomic_add_fetch(&nc->word, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &nc->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	nc->sent++;
	n->sent++;
	return true;
}

void nudger_stop(struct nudger *n)
{
	struct timespec end;
	uint64_t e = bd_mono_ns() + NUDGE_STOP_WAIT_NS;
	bool all = true;

	if (!n->cpu)
		return;
	__atomic_store_n(&n->stop, 1, __ATOMIC_RELEASE);
	for (uint64_t c = 0; c < n->ncpu; c++) {
		struct nudge_cpu *nc = &n->cpu[c];

		if (!nc->started)
			continue;
		__atomic_add_fetch(&nc->word, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &nc->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	/*
	 * A thread a SCHED_FIFO 99 task keeps off its CPU cannot leave: not waited for past the
	 * bound (the process's exit ends it).  Its memory is then kept, since it may still run.
	 */
	end.tv_sec = (time_t)(e / 1000000000ULL);
	end.tv_nsec = (long)(e % 1000000000ULL);
	for (uint64_t c = 0; c < n->ncpu; c++) {
		struct nudge_cpu *nc = &n->cpu[c];

		if (!nc->started)
			continue;
		if (pthread_timedjoin_np(nc->thread, NULL, &end) == 0)
			nc->started = false;
		else
			all = false;
	}
	if (all) {
		free(n->cpu);
		n->cpu = NULL;
	}
}
