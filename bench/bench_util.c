// SPDX-License-Identifier: MIT
/*
 * bench_util: workloads for bench/run.sh.
 *
 *   bench_util loop STATE_PATH SECONDS [RATE]
 *                                        barrierd_barrier() back to back, or RATE per second
 *                                        (paced by absolute sleeps); prints
 *                                        "loop barriers N seconds S p50_us P p99_us Q errors E"
 *                                        (a failed call is reported on stderr and counted)
 *   bench_util churn SECONDS             one thread per online CPU, pinned, sleeping 200 us
 *                                        in a loop: a steady stream of timer interrupts,
 *                                        softirqs, context switches and system calls (the
 *                                        workload of the BPF cost windows)
 */
#include "bench_common.h"

#include <barrierd.h>
#include <pthread.h>

static uint64_t churn_end;

static void *churn_thread(void *arg)
{
	bench_pin((int)(intptr_t)arg);
	while (bd_mono_ns() < churn_end)
		bench_sleep_ns(200000);
	return NULL;
}

static int churn(double secs)
{
	cpu_set_t cpus;
	pthread_t th[CPU_SETSIZE];
	int n = 0;

	if (sched_getaffinity(0, sizeof(cpus), &cpus))
		return 1;
	churn_end = bd_mono_ns() + (uint64_t)(secs * 1e9);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &cpus) &&
		    pthread_create(&th[n], NULL, churn_thread, (void *)(intptr_t)c) == 0)
			n++;
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return 0;
}

static int loop(const char *path, double secs, double rate)
{
	struct barrierd *b;
	uint64_t t0 = bd_mono_ns(), end = t0 + (uint64_t)(secs * 1e9), n = 0, cap = 1 << 16;
	uint64_t *lat = malloc(cap * sizeof(*lat)), errors = 0;
	int ret = barrierd_open(&b, path);

	if (ret || !lat) {
		fprintf(stderr, "bench_util loop: %s: %s\n", path, strerror(ret ? -ret : ENOMEM));
		return 1;
	}
	while (bd_mono_ns() < end) {
		uint64_t s;

		if (rate > 0)
			bench_sleep_until(t0 + (uint64_t)((double)n * 1e9 / rate));
		s = bd_mono_ns();

		ret = barrierd_barrier(b, 5 * (int64_t)BENCH_SEC);
		if (ret) {
			/*
			 * Count and go on: one failed call must not end a benchmark run.  Say what
			 * the file showed, for the report (-ESTALE: not live, or a namespace
			 * change).
			 */
			size_t sz;
			const struct barrierd_header *h = barrierd_mapping(b, &sz);
			uint64_t now = bd_mono_ns(), hb = bd_load(&h->heartbeat_ns);

			fprintf(stderr,
				"bench_util loop: barrier %llu: %s (flags %#llx, heartbeat %.1f "
				"ms old, period %.0f ms)\n",
				(unsigned long long)n, strerror(-ret),
				(unsigned long long)bd_load(&h->flags),
				now > hb ? (double)(now - hb) / 1e6 : 0.0,
				(double)bd_load(&h->heartbeat_period_ns) / 1e6);
			if (++errors > 100)
				return 1;
			continue;
		}
		if (n == cap) {
			uint64_t *nl = realloc(lat, 2 * cap * sizeof(*lat));

			if (!nl)
				return 1;
			lat = nl;
			cap *= 2;
		}
		lat[n++] = bd_mono_ns() - s;
	}
	sort_u64(lat, n);
	printf("loop barriers %llu seconds %.3f p50_us %.1f p99_us %.1f errors %llu\n",
	       (unsigned long long)n, (double)(bd_mono_ns() - t0) / 1e9,
	       (double)percentile_u64(lat, n, 50) / 1e3, (double)percentile_u64(lat, n, 99) / 1e3,
	       (unsigned long long)errors);
	free(lat);
	barrierd_close(b);
	return 0;
}

int main(int argc, char **argv)
{
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "loop"))
		return loop(argv[2], atof(argv[3]), argc == 5 ? atof(argv[4]) : 0);
	if (argc == 3 && !strcmp(argv[1], "churn"))
		return churn(atof(argv[2]));
	fprintf(stderr, "usage: bench_util loop STATE_PATH SECONDS [RATE] | churn SECONDS\n");
	return 64;
}
