// SPDX-License-Identifier: MIT
#include "siblings.h"

#include "bd_sync.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SIBLING_HANG_GUARD_NS (10 * 1000000000ULL)

static void *sibling_main(void *arg)
{
	struct siblings *s = arg;
	uint32_t seen = UINT32_MAX;

	for (;;) {
		uint32_t m = __atomic_load_n(&s->mode, __ATOMIC_ACQUIRE);

		if (m != seen) {
			seen = m;
			__atomic_add_fetch(&s->acks, 1, __ATOMIC_ACQ_REL);
		}
		switch ((enum sib_kind)(m & 3)) {
		case SIB_EXIT:
			return NULL;
		case SIB_PARK:
			syscall(SYS_futex, &s->mode, FUTEX_WAIT_PRIVATE, m, NULL, NULL, 0);
			break;
		case SIB_SPIN:
			/*
			 * No PAUSE in these loops: under a hypervisor, PAUSE loops cause
			 * pause-loop exits and the host may deschedule the vCPU, so the IPI
			 * would wait for the host's scheduler (measured: p90 of 8 ms instead
			 * of 21 us for PRIVATE_EXPEDITED on a 2-vCPU VM).
			 */
			while (__atomic_load_n(&s->mode, __ATOMIC_ACQUIRE) == m)
				;
			break;
		case SIB_TOUCH:
			while (__atomic_load_n(&s->mode, __ATOMIC_ACQUIRE) == m)
				(void)s->page[0];
			break;
		}
	}
}

/* Until every started sibling has seen the current mode: 0, or -ETIMEDOUT. */
static int wait_acks(struct siblings *s)
{
	uint64_t start = bd_mono_ns();

	for (int i = 0; __atomic_load_n(&s->acks, __ATOMIC_ACQUIRE) < (uint32_t)s->started; i++) {
		if (i < 1000) {
			__builtin_ia32_pause();
			continue;
		}
		if (bd_mono_ns() - start > SIBLING_HANG_GUARD_NS)
			return -ETIMEDOUT;
		sched_yield();
	}
	return 0;
}

int siblings_start(struct siblings *s, const cpu_set_t *cpus, const volatile unsigned char *page)
{
	int n = CPU_COUNT(cpus);

	s->page = page;
	if (n <= 0)
		return 0;
	s->threads = calloc((size_t)n, sizeof(*s->threads));
	if (!s->threads)
		return -ENOMEM;
	for (int cpu = 0; cpu < CPU_SETSIZE && s->started < n; cpu++) {
		pthread_attr_t attr;
		cpu_set_t one;
		int err;

		if (!CPU_ISSET(cpu, cpus))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		pthread_attr_init(&attr);
		pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
		pthread_attr_setstacksize(&attr, 64 * 1024);
		err = pthread_create(&s->threads[s->started], &attr, sibling_main, s);
		pthread_attr_destroy(&attr);
		if (err)
			return -err;
		s->started++;
	}
	/* Every sibling has reached the parked mode: pinned, and about to sleep. */
	return wait_acks(s);
}

int siblings_set(struct siblings *s, enum sib_kind kind)
{
	uint32_t cur = __atomic_load_n(&s->mode, __ATOMIC_RELAXED);

	if (s->started == 0 || (enum sib_kind)(cur & 3) == kind)
		return 0;
	__atomic_store_n(&s->acks, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->mode, ((cur >> 2) + 1) << 2 | kind, __ATOMIC_RELEASE);
	syscall(SYS_futex, &s->mode, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	if (kind == SIB_EXIT)
		return 0;
	return wait_acks(s);
}

void siblings_stop(struct siblings *s)
{
	if (!s->threads)
		return;
	if (s->started) {
		siblings_set(s, SIB_EXIT);
		for (int i = 0; i < s->started; i++)
			pthread_join(s->threads[i], NULL);
	}
	free(s->threads);
	s->threads = NULL;
}
