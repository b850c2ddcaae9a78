// SPDX-License-Identifier: MIT
/*
 * bench_getpid: the cost of a getpid() system call, timed with CLOCK_THREAD_CPUTIME_ID over a
 * million calls, repeated.  run.sh runs it with no daemon, with the daemon on its default
 * tracepoints and with raw_syscalls/sys_enter added, rotating, and takes the deltas.
 *
 *   bench_getpid [--cpu CPU] [--reps R] [--calls N]
 *
 * Prints one line per repetition ("rep I NS_PER_CALL") and a last line
 * "getpid min_ns MIN median_ns MEDIAN".  The call is syscall(SYS_getpid): glibc does not cache
 * getpid() any more, but the raw call leaves no doubt.
 */
#include "bench_common.h"

int main(int argc, char **argv)
{
	int cpu = -1, reps = 5;
	uint64_t calls = 1000000;
	double v[64];

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--cpu"))
			cpu = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--reps"))
			reps = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--calls"))
			calls = strtoull(argv[i + 1], NULL, 10);
		else {
			fprintf(stderr, "usage: bench_getpid [--cpu CPU] [--reps R] [--calls N]\n");
			return 64;
		}
	}
	if (reps < 1 || reps > 64 || calls == 0)
		return 64;
	if (cpu >= 0 && bench_pin(cpu)) {
		fprintf(stderr, "bench_getpid: cannot pin to CPU %d\n", cpu);
		return 1;
	}
	for (uint64_t i = 0; i < calls / 10; i++) /* warm-up */
		syscall(SYS_getpid);
	for (int r = 0; r < reps; r++) {
		uint64_t t0 = bench_thread_cpu();

		for (uint64_t i = 0; i < calls; i++)
			syscall(SYS_getpid);
		v[r] = (double)(bench_thread_cpu() - t0) / (double)calls;
		printf("rep %d %.2f\n", r, v[r]);
	}
	for (int i = 1; i < reps; i++) /* insertion sort */
		for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
			double t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	printf("getpid min_ns %.2f median_ns %.2f\n", v[0], v[reps / 2]);
	return 0;
}
