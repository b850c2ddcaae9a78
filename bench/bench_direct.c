// SPDX-License-Identifier: MIT
/*
 * bench_direct: the direct-evidence measurements that barrierctl bench cannot make (bench/run.sh
 * section 13; docs/PERFORMANCE.md §10).
 *
 *   bench_direct calls STATE_PATH METHOD N GAP_MS
 *        METHOD: direct (barrierd_barrier() on the default handle, which must credit from
 *        the slots), file (a handle opened with BARRIERD_OPEN_NO_DIRECT) or private-expedited
 *        (membarrier, registered).  After the open (or registration) and one warm-up call:
 *        prctl(PR_SET_NAME, "bd-calls"), N calls each after a random 0..GAP_MS ms sleep, then
 *        prctl(PR_SET_NAME, "bd-done"); prints "calls METHOD N errors E".  Run under
 *        strace -f, the system calls between the two markers are the calls' and the gaps'
 *        (clock_nanosleep): the open's are left out without a second run to subtract.
 *   bench_direct passed STATE_PATH BATCHES
 *        barrierd_passed() on the default handle (direct) and on a NO_DIRECT one (file):
 *        "already" (a stamp that has passed, asked again), "fresh" (barrierd_stamp_ns() then
 *        barrierd_passed() on it; the stamp's own cost measured alone and subtracted) and
 *        "stamp" (barrierd_stamp_ns() alone).  Batches of 1000 calls, the six kinds rotating
 *        batch by batch with a random 0-2 ms sleep after each; prints one CSV row per
 *        handle and kind: "passed,HANDLE,KIND,ns_per_call_p50,ns_per_call_min,passed_share,
 *        batches" (the median and the smallest batch's per-call time).
 */
#include "bench_common.h"

#include <barrierd.h>
#include <linux/membarrier.h>
#include <sys/prctl.h>

#define BATCH 1000

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static int open_handle(const char *path, bool direct, struct barrierd **b)
{
	struct barrierd_open_opts oo = {
	    .sz = sizeof(oo),
	    .fallback = BARRIERD_FALLBACK_NONE, /* a benchmark must not hide a dead daemon */
	    .flags = direct ? 0 : BARRIERD_OPEN_NO_DIRECT,
	};
	int ret = barrierd_open_opts(b, path, &oo);

	if (ret) {
		fprintf(stderr, "bench_direct: %s: %s\n", path, strerror(-ret));
		return ret;
	}
	/* Without slots "direct" would measure the file path under another name. */
	if (direct && !barrierd_direct(*b)) {
		fprintf(stderr, "bench_direct: the daemon on %s serves no slots\n", path);
		barrierd_close(*b);
		return -ENOTSUP;
	}
	return 0;
}

static int one_call(struct barrierd *b)
{
	if (!b)
		return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) ? -errno : 0;
	return barrierd_barrier(b, 5 * (int64_t)BENCH_SEC);
}

static int calls(const char *path, const char *method, uint64_t n, uint64_t gap_ms)
{
	struct barrierd *b = NULL;
	uint64_t errors = 0;

	if (!strcmp(method, "private-expedited")) {
		if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0)) {
			fprintf(stderr, "bench_direct: membarrier registration: %s\n",
				strerror(errno));
			return 1;
		}
	} else if (strcmp(method, "direct") && strcmp(method, "file")) {
		fprintf(stderr, "bench_direct: unknown method '%s'\n", method);
		return 64;
	} else if (open_handle(path, !strcmp(method, "direct"), &b)) {
		return 1;
	}
	rng_state = bd_mono_ns() | 1;
	/* The first call finds what is left to find (the extension); it is not counted. */
	if (one_call(b))
		errors++;
	prctl(PR_SET_NAME, "bd-calls");
	for (uint64_t i = 0; i < n; i++) {
		if (gap_ms)
			bench_sleep_ns(rnd() % (gap_ms * BENCH_MS + 1));
		if (one_call(b))
			errors++;
	}
	prctl(PR_SET_NAME, "bd-done");
	printf("calls %s %llu errors %llu\n", method, (unsigned long long)n,
	       (unsigned long long)errors);
	barrierd_close(b);
	return errors ? 1 : 0;
}

enum kind { K_ALREADY, K_FRESH, K_STAMP, K_COUNT };
static const char *const kind_names[K_COUNT] = {"already", "fresh", "stamp"};

/* One batch: BATCH calls of kind k; the per-call time in ns, and how many passed. */
static double batch(struct barrierd *b, enum kind k, uint64_t old, uint64_t *passed)
{
	uint64_t t0, t1, p = 0, sink = 0;

	t0 = bd_mono_ns();
	for (int i = 0; i < BATCH; i++) {
		switch (k) {
		case K_ALREADY:
			p += barrierd_passed(b, old);
			break;
		case K_FRESH:
			p += barrierd_passed(b, barrierd_stamp_ns(b));
			break;
		default:
			sink += barrierd_stamp_ns(b);
			break;
		}
	}
	t1 = bd_mono_ns();
	__asm__ volatile("" : : "r"(sink));
	*passed += p;
	return (double)(t1 - t0) / BATCH;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int passed_cost(const char *path, uint64_t batches)
{
	struct barrierd *h[2];
	uint64_t old[2], npassed[2][K_COUNT] = {{0}};
	double *ns[2][K_COUNT];

	if (open_handle(path, true, &h[0]))
		return 1;
	if (open_handle(path, false, &h[1]))
		return 1;
	for (int d = 0; d < 2; d++) {
		/* A stamp that has passed: taken, then waited for. */
		old[d] = barrierd_stamp_ns(h[d]);
		if (barrierd_wait(h[d], old[d], 5 * (int64_t)BENCH_SEC)) {
			fprintf(stderr, "bench_direct: the first barrier did not pass\n");
			return 1;
		}
		for (int k = 0; k < K_COUNT; k++) {
			ns[d][k] = calloc(batches, sizeof(double));
			if (!ns[d][k])
				return 1;
		}
	}
	rng_state = bd_mono_ns() | 1;
	for (uint64_t i = 0; i < batches; i++) {
		/* Rotate: no kind always follows the same one, or the sleep. */
		for (int j = 0; j < 2 * K_COUNT; j++) {
			int x = (int)((i + (uint64_t)j) % (2 * K_COUNT)), d = x / K_COUNT;
			enum kind k = (enum kind)(x % K_COUNT);

			ns[d][k][i] = batch(h[d], k, old[d], &npassed[d][k]);
		}
		bench_sleep_ns(rnd() % (2 * BENCH_MS + 1));
	}
	for (int d = 0; d < 2; d++) {
		double stamp_p50;

		for (int k = 0; k < K_COUNT; k++)
			qsort(ns[d][k], batches, sizeof(double), cmp_double);
		stamp_p50 = ns[d][K_STAMP][batches / 2];
		for (int k = 0; k < K_COUNT; k++) {
			/* fresh: the passed() call alone, the stamp's median subtracted. */
			double sub = k == K_FRESH ? stamp_p50 : 0;

			printf("passed,%s,%s,%.1f,%.1f,%.3f,%llu\n", d ? "file" : "direct",
			       kind_names[k], ns[d][k][batches / 2] - sub, ns[d][k][0] - sub,
			       k == K_STAMP ? 0.0
					    : (double)npassed[d][k] / (double)(batches * BATCH),
			       (unsigned long long)batches);
			free(ns[d][k]);
		}
		barrierd_close(h[d]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "calls"))
		return calls(argv[2], argv[3], strtoull(argv[4], NULL, 10),
			     strtoull(argv[5], NULL, 10));
	if (argc == 4 && !strcmp(argv[1], "passed"))
		return passed_cost(argv[2], strtoull(argv[3], NULL, 10));
	fprintf(stderr, "usage: bench_direct calls STATE_PATH direct|file|private-expedited N "
			"GAP_MS | passed STATE_PATH BATCHES\n");
	return 64;
}
