// SPDX-License-Identifier: MIT
#include "nudge.h"
#include "log.h"
#include "sandbox.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Threads that finished their setup (dropped privileges), and the first error among them. */
static uint32_t ready;

static void pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *nudge_main(void *arg)
{
	struct nudge_cpu *nc = arg;
	struct nudger *n = nc->n;
	char name[16];
	int err;

	/* Named, so that tools moving the daemon's threads (taskset -a) can leave these alone. */
	snprintf(name, sizeof(name), "bd-nudge/%d", nc->cpu);
	pthread_setname_np(pthread_self(), name);
	err = sandbox_drop_privileges();

	if (err)
		__atomic_store_n(&n->start_err, err, __ATOMIC_RELAXED);
	__atomic_add_fetch(&ready, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &ready, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	if (err)
		return NULL;
	while (!n->stop) {
		uint32_t seen = __atomic_load_n(&nc->word, __ATOMIC_ACQUIRE);

		if (n->stop)
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
		 */
		if (sched_getcpu() != nc->cpu)
			pin_self(nc->cpu);
	}
	return NULL;
}

int nudger_start(struct nudger *n, uint64_t ncpu, int priority, uint64_t rate)
{
	struct sched_param sp = {.sched_priority = priority};
	uint32_t started = 0;
	int ret = 0;

	memset(n, 0, sizeof(*n));
	n->ncpu = ncpu;
	n->cpu = calloc(ncpu, sizeof(*n->cpu));
	if (!n->cpu)
		return -ENOMEM;
	__atomic_store_n(&ready, 0, __ATOMIC_RELAXED);
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
			ret = 0; /* an offline CPU: no thread, it runs nothing to nudge */
			continue;
		}
		if (!ret) {
			nc->started = true;
			started++;
		}
	}
	/* Every started thread has dropped its privileges before the filter goes on. */
	for (;;) {
		uint32_t r = __atomic_load_n(&ready, __ATOMIC_ACQUIRE);

		if (r >= started)
			break;
		syscall(SYS_futex, &ready, FUTEX_WAIT_PRIVATE, r, NULL, NULL, 0);
	}
	if (!ret)
		ret = __atomic_load_n(&n->start_err, __ATOMIC_RELAXED);
	if (ret)
		nudger_stop(n);
	return ret;
}

bool nudger_nudge(struct nudger *n, uint64_t c, uint64_t now)
{
	struct nudge_cpu *nc;

	if (c >= n->ncpu || !n->cpu[c].started)
		return false;
	nc = &n->cpu[c];
	if (!rate_limit_take(&nc->limit, now)) {
		nc->held++;
		n->held++;
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
	if (!n->cpu)
		return;
	n->stop = 1;
	for (uint64_t c = 0; c < n->ncpu; c++) {
		struct nudge_cpu *nc = &n->cpu[c];

		if (!nc->started)
			continue;
		__atomic_add_fetch(&nc->word, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &nc->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		pthread_join(nc->thread, NULL);
		nc->started = false;
	}
	free(n->cpu);
	n->cpu = NULL;
}
