// SPDX-License-Identifier: MIT
/* The migrate phase's sched_getcpu() interposer (migrate.h). */
#include "migrate.h"

#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MIGRATE_MAX_CPUS 1024

/*
 * Touched by the armed thread only (the client), except the setup and the counts, which the
 * same thread calls between barriers.
 */
static struct {
	int online[MIGRATE_MAX_CPUS];
	int nonline;
	unsigned seed;
	pid_t tid; /* armed for this thread; 0: disarmed */
	unsigned long calls, moves;
} M;

void migrate_setup(const int *online, int nonline, unsigned seed)
{
	M.nonline = nonline < MIGRATE_MAX_CPUS ? nonline : MIGRATE_MAX_CPUS;
	for (int i = 0; i < M.nonline; i++)
		M.online[i] = online[i];
	M.seed = seed;
	M.calls = M.moves = 0;
}

void migrate_arm(bool on)
{
	__atomic_store_n(&M.tid, on ? gettid() : 0, __ATOMIC_RELAXED);
}

void migrate_counts(unsigned long *calls, unsigned long *moves)
{
	*calls = M.calls;
	*moves = M.moves;
}

int migrate_interposed(void)
{
	return dlsym(RTLD_DEFAULT, "sched_getcpu") == (void *)sched_getcpu ? 0 : -ENOENT;
}

/* The online CPU after cpu, in a ring. */
static int next_cpu(int cpu)
{
	for (int i = 0; i < M.nonline; i++)
		if (M.online[i] == cpu)
			return M.online[(i + 1) % M.nonline];
	return M.online[0];
}

/*
 * Exported from the executable (-Wl,--export-dynamic-symbol=sched_getcpu, tests/audit/
 * CMakeLists.txt): an unversioned definition in the executable comes first in the global
 * scope and satisfies libbarrierd's sched_getcpu@GLIBC_2.6.  The real CPU comes from the system
 * call, not glibc's copy (rseq or the vDSO): it cannot be the one we replace.
 */
__attribute__((visibility("default"))) int sched_getcpu(void)
{
	unsigned cpu;
	pid_t armed = __atomic_load_n(&M.tid, __ATOMIC_RELAXED);

	if (syscall(SYS_getcpu, &cpu, NULL, NULL))
		return -1;
	if (armed && armed == gettid() && M.nonline >= 2) {
		M.calls++;
		/*
		 * Half of the calls, at random: a library that reads the CPU at the wrong moment
		 * is caught when it was moved at that read and not moved back before the barrier
		 * ended, which a fixed pattern could avoid by the number of calls per barrier.
		 */
		if (rand_r(&M.seed) & 1) {
			cpu_set_t one;
			int saved = errno;

			CPU_ZERO(&one);
			CPU_SET(next_cpu((int)cpu), &one);
			/* Moves the running thread at once: it returns on the new CPU. */
			if (sched_setaffinity(0, sizeof(one), &one) == 0)
				M.moves++;
			errno = saved;
		}
	}
	return (int)cpu;
}
