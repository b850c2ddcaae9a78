// SPDX-License-Identifier: MIT
/*
 * bench_overshoot - how far past its timeout a wait that cannot pass returns.
 *
 *   bench_overshoot N CSV
 *
 * Against a file of its own (the fake daemon of tests/common: no root, no BPF), for each case
 * and timeout, N waits whose barrier cannot pass, and the overshoot of each: its wall time
 * minus the timeout.  The library never asks for a sleep past the deadline
 * (tests/unit/test_lib_deadline.c holds it to that); what is left is the scheduler's wake-up
 * delay, which is what this measures.  Cases:
 *   live   a live, armed daemon whose CPUs are all busy and bring no evidence: the wait sleeps
 *          on the global word in 10 ms slices until the deadline (-ETIMEDOUT);
 *   stale  a daemon whose heartbeat is stale: the back-off on the heartbeat word (-ESTALE);
 * each on a quiet machine and with 1000 runnable threads (spinning, nice 0) in this process.
 * The waiting thread runs at normal priority: under load, the overshoot is its wait for a CPU.
 * CSV rows: case,load,timeout_ns,index,overshoot_ns.  Percentiles go to stdout.
 */
#include <barrierd.h>
#include <pthread.h>

#include "bench_common.h"
#include "fake_daemon.h"

#define SPINNERS 1000

static int spin_stop; /* __atomic */

static void *spinner(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&spin_stop, __ATOMIC_RELAXED))
		__builtin_ia32_pause();
	return NULL;
}

/*
 * The fake daemon's ticker keeps the heartbeat fresh; among 1000 runnable threads only a
 * real-time ticker does (as the real daemon's main thread is, docs/LIFECYCLE.md).
 */
static int start_ticker(struct fake_daemon *d)
{
	int ret = fake_start_ticker(d, 0);

	if (!ret)
		pthread_setschedparam(d->tick_thread, SCHED_FIFO,
				      &(struct sched_param){.sched_priority = 1});
	return ret;
}

static int run(struct barrierd *b, const char *kase, const char *load, int64_t timeout, int n,
	       FILE *csv)
{
	uint64_t *over = calloc((size_t)n, sizeof(*over));
	int expect = strcmp(kase, "live") == 0 ? -ETIMEDOUT : -ESTALE;

	if (!over)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		uint64_t t0, took;
		int r;

		t0 = bd_mono_ns();
		r = barrierd_barrier(b, timeout);
		took = bd_mono_ns() - t0;
		if (r != expect) {
			fprintf(stderr, "bench_overshoot: %s/%s: %d, expected %d\n", kase, load, r,
				expect);
			free(over);
			return -EPROTO;
		}
		over[i] = took > (uint64_t)timeout ? took - (uint64_t)timeout : 0;
		fprintf(csv, "%s,%s,%lld,%d,%llu\n", kase, load, (long long)timeout, i,
			(unsigned long long)over[i]);
	}
	sort_u64(over, (size_t)n);
	printf("| %s | %s | %.1f | %.3f | %.3f | %.3f |\n", kase, load, timeout / 1e6,
	       percentile_u64(over, (size_t)n, 50) / 1e6, percentile_u64(over, (size_t)n, 99) / 1e6,
	       percentile_u64(over, (size_t)n, 100) / 1e6);
	free(over);
	return 0;
}

int main(int argc, char **argv)
{
	static const int64_t timeouts[] = {100000, 1000000, 10000000};
	static pthread_t spin[SPINNERS];
	struct fake_daemon d;
	struct barrierd *b;
	int n, ret = 0, nspin = 0;
	FILE *csv;

	if (argc != 3 || (n = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: bench_overshoot N CSV\n");
		return 2;
	}
	csv = fopen(argv[2], "w");
	if (!csv || fake_create(&d, 2, FAKE_LIVE) || start_ticker(&d) ||
	    fake_open_lib(&b, d.path, NULL)) {
		fprintf(stderr, "bench_overshoot: cannot set up: %s\n", strerror(errno));
		return 1;
	}
	fprintf(csv, "case,load,timeout_ns,index,overshoot_ns\n");
	printf("| case | load | timeout (ms) | p50 (ms) | p99 (ms) | max (ms) |\n");
	printf("|---|---|---|---|---|---|\n");
	for (int l = 0; l < 2 && !ret; l++) {
		const char *load = l ? "1000 runnable threads" : "quiet";

		if (l)
			for (; nspin < SPINNERS; nspin++)
				if (pthread_create(&spin[nspin], NULL, spinner, NULL))
					break;
		for (size_t t = 0; t < sizeof(timeouts) / sizeof(timeouts[0]) && !ret; t++) {
			/* live: the ticker keeps the heartbeat fresh, no CPU brings evidence */
			ret = run(b, "live", load, timeouts[t], n, csv);
			if (ret)
				break;
			fake_stop_ticker(&d);
			bd_store(&d.h->heartbeat_ns, bd_mono_ns() - 10 * FAKE_HB_PERIOD_NS);
			ret = run(b, "stale", load, timeouts[t], n, csv);
			if (start_ticker(&d))
				ret = -EIO;
		}
	}
	__atomic_store_n(&spin_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nspin; i++)
		pthread_join(spin[i], NULL);
	fake_stop_ticker(&d);
	barrierd_close(b);
	fake_destroy(&d);
	fclose(csv);
	return ret ? 1 : 0;
}
