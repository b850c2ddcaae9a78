// SPDX-License-Identifier: MIT
/*
 * Load (issue 13): for SECONDS, with every CPU busy (a nice-19 spinner pinned to each), 1000
 * threads of one process and 8 processes loop barrierd_barrier() against the real daemon.
 * Every call must complete and none may fail: a call gets a generous 5 s timeout (a hang
 * guard, not a goal), and an -ETIMEDOUT or -ESTALE is a failure, counted and reported.
 *
 * Reports, per process: calls, failures by errno, the longest call and p50/p99/p99.9 of call
 * latency; the daemon's CPU (utime + stime from /proc/PID/stat over the run); and the oldest
 * heartbeat the controller saw (a stale-heartbeat episode is what makes waiters fail with
 * -ESTALE under load).  Latency figures are reported, never asserted: bench/ owns timing goals.
 *
 *   test_load [--seconds N] [--waiters N] [--procs N]    (defaults 15, 1000, 8)
 *
 * Exit 0 when every call returned 0 and every worker exited; 1 otherwise; 77 (skip) without
 * root or BPF.  ctest runs the 15 s version (label load) and, configured with
 * -DBARRIERD_LOAD_LONG=ON, the 60 s one (label load-long).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>

#include "harness.h"

#define CALL_TIMEOUT_NS (5 * (int64_t)TEST_SEC)
#define GUARD_S 20 /* beyond the run and one call's timeout: a worker still running is hung */
#define MAX_ERRNO 256
#define HBUCKETS 1024

/* Log-linear latency buckets: 16 per power of two, exact below 16 ns (~6 % resolution). */
static unsigned bucket_of(uint64_t v)
{
	unsigned e;

	if (v < 16)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v);
	return 16u + (e - 4u) * 16u + (unsigned)((v >> (e - 4u)) & 15u);
}

/* The smallest value of a bucket: what a percentile in it is reported as. */
static uint64_t bucket_low(unsigned i)
{
	unsigned e;

	if (i < 16)
		return i;
	e = (i - 16u) / 16u + 4u;
	return (16ULL + (i - 16u) % 16u) << (e - 4u);
}

struct stats {
	uint64_t calls, ok, max_ns;
	uint64_t err[MAX_ERRNO]; /* by -return value; the last slot: anything larger */
	uint64_t hist[HBUCKETS];
};

/* Shared with the workers (MAP_SHARED | MAP_ANONYMOUS): one slot per process. */
struct shared {
	_Atomic uint64_t go_ns, end_ns; /* 0 until the controller starts the run */
	pthread_mutex_t merge;		/* the waiter process's threads merge into their slot */
	struct stats p[];
};

static struct shared *S;
static int nprocs = 8, nwaiters = 1000;

static void record(struct stats *s, int r, uint64_t ns)
{
	s->calls++;
	if (r == 0)
		s->ok++;
	else
		s->err[-r > 0 && -r < MAX_ERRNO ? -r : MAX_ERRNO - 1]++;
	if (ns > s->max_ns)
		s->max_ns = ns;
	s->hist[bucket_of(ns)]++;
}

static void merge(struct stats *into, const struct stats *s)
{
	into->calls += s->calls;
	into->ok += s->ok;
	if (s->max_ns > into->max_ns)
		into->max_ns = s->max_ns;
	for (int i = 0; i < MAX_ERRNO; i++)
		into->err[i] += s->err[i];
	for (int i = 0; i < HBUCKETS; i++)
		into->hist[i] += s->hist[i];
}

/* Loop barrierd_barrier() from go_ns to end_ns. */
static void loop(struct barrierd *b, struct stats *s)
{
	uint64_t end;

	while (!atomic_load(&S->go_ns))
		test_sleep_ms(1);
	end = atomic_load(&S->end_ns);
	while (bd_mono_ns() < end) {
		uint64_t t0 = bd_mono_ns();
		int r = barrierd_barrier(b, CALL_TIMEOUT_NS);

		record(s, r, bd_mono_ns() - t0);
	}
}

struct waiter {
	struct barrierd *b;
	struct stats *slot;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	struct stats *s = calloc(1, sizeof(*s));

	if (!s)
		abort();
	loop(w->b, s);
	pthread_mutex_lock(&S->merge);
	merge(w->slot, s);
	pthread_mutex_unlock(&S->merge);
	free(s);
	return NULL;
}

/* Worker process `idx`: nthreads threads (1 for a looping process) on one handle. */
static int worker(int idx, int nthreads)
{
	struct barrierd *b;
	pthread_t *t = calloc((size_t)nthreads, sizeof(*t));
	struct waiter w;
	pthread_attr_t attr;

	if (!t || barrierd_open(&b, H.state))
		return 2;
	if (nthreads == 1) {
		loop(b, &S->p[idx]);
		barrierd_close(b);
		return 0;
	}
	w = (struct waiter){b, &S->p[idx]};
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 128 * 1024); /* 1000 threads, not 8 GiB of stacks */
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&t[i], &attr, waiter_main, &w))
			return 3;
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	barrierd_close(b);
	return 0;
}

/* utime + stime of a process in clock ticks (/proc/PID/stat, every thread); 0 if unreadable. */
static uint64_t proc_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut = 0, st = 0;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the command name may hold spaces */
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return 0;
	return ut + st;
}

static uint64_t pct_of(const struct stats *s, double q)
{
	uint64_t want = (uint64_t)((double)s->calls * q + 0.999999), seen = 0;

	if (want == 0)
		want = 1;
	for (unsigned i = 0; i < HBUCKETS; i++) {
		seen += s->hist[i];
		if (seen >= want)
			return bucket_low(i);
	}
	return 0;
}

/* One line per process; returns its failed calls. */
static uint64_t report(const char *name, const struct stats *s)
{
	uint64_t failed = s->calls - s->ok;

	printf("%-22s calls %8llu  failed %llu", name, (unsigned long long)s->calls,
	       (unsigned long long)failed);
	for (int e = 1; e < MAX_ERRNO; e++)
		if (s->err[e])
			printf(" [-%s: %llu]", strerrorname_np(e) ? strerrorname_np(e) : "?",
			       (unsigned long long)s->err[e]);
	printf("  p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f ms\n", (double)pct_of(s, 0.5) / 1e6,
	       (double)pct_of(s, 0.99) / 1e6, (double)pct_of(s, 0.999) / 1e6,
	       (double)s->max_ns / 1e6);
	return failed;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {{"seconds", required_argument, NULL, 's'},
						 {"waiters", required_argument, NULL, 'w'},
						 {"procs", required_argument, NULL, 'p'},
						 {NULL, 0, NULL, 0}};
	pid_t spin[256], kids[65];
	const struct barrierd_header *m;
	pthread_mutexattr_t ma;
	struct stats all;
	uint64_t ticks0, ticks1, t0, t1, failed = 0, hb_max = 0, period;
	size_t msz, shsz;
	int seconds = 15, nspin, bad = 0, opt;

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt == 's')
			seconds = atoi(optarg);
		else if (opt == 'w')
			nwaiters = atoi(optarg);
		else if (opt == 'p')
			nprocs = atoi(optarg);
		else
			return 64;
	}
	if (seconds < 1 || nwaiters < 1 || nprocs < 0 || nprocs > 64) {
		fprintf(stderr, "usage: test_load [--seconds N] [--waiters N] [--procs 0..64]\n");
		return 64;
	}
	test_require_root();
	setvbuf(stdout, NULL, _IOLBF, 0);
	shsz = sizeof(*S) + (size_t)(nprocs + 1) * sizeof(struct stats);
	S = mmap(NULL, shsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (S == MAP_FAILED)
		return 1;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&S->merge, &ma);

	h_mkdir(&H);
	if (h_start(&H, -1, NULL)) {
		h_rmdir(&H);
		return 1;
	}
	m = map_ro(H.state, &msz);
	if (!m) {
		h_stop(&H);
		h_rmdir(&H);
		return 1;
	}
	/* Slot 0: the waiter process; 1..nprocs: the looping processes. */
	for (int i = 0; i <= nprocs; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			_exit(worker(i, i == 0 ? nwaiters : 1));
	}
	nspin = test_spinners(spin, 256);
	test_sleep_ms(500); /* every worker opened its handle and waits for go */

	ticks0 = proc_ticks(H.pid);
	t0 = bd_mono_ns();
	atomic_store(&S->end_ns, t0 + (uint64_t)seconds * TEST_SEC);
	atomic_store(&S->go_ns, t0);
	/* While they run: the oldest heartbeat seen, sampled every 10 ms. */
	period = bd_load(&m->heartbeat_period_ns);
	while (bd_mono_ns() < t0 + (uint64_t)seconds * TEST_SEC) {
		uint64_t now = bd_mono_ns(), hb = bd_load(&m->heartbeat_ns);

		if (now > hb && now - hb > hb_max)
			hb_max = now - hb;
		test_sleep_ms(10);
	}
	for (int i = 0; i <= nprocs; i++) {
		int st = test_reap(kids[i], (int)(CALL_TIMEOUT_NS / (int64_t)TEST_SEC) + GUARD_S);

		if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "worker %d: %s (status %d)\n", i,
				st == -1 ? "hung, killed" : "did not exit cleanly", st);
			bad = 1;
		}
	}
	t1 = bd_mono_ns();
	ticks1 = proc_ticks(H.pid);
	test_kill_all(spin, nspin);

	printf("load: %d s, %d spinners (every CPU), %d waiter threads, %d looping processes, "
	       "call timeout %.0f s\n",
	       seconds, nspin, nwaiters, nprocs, (double)CALL_TIMEOUT_NS / 1e9);
	memset(&all, 0, sizeof(all));
	failed += report("waiters (1 process)", &S->p[0]);
	merge(&all, &S->p[0]);
	for (int i = 1; i <= nprocs; i++) {
		char name[32];

		snprintf(name, sizeof(name), "looping process %d", i);
		failed += report(name, &S->p[i]);
		merge(&all, &S->p[i]);
	}
	report("all", &all);
	printf("daemon CPU %.2f %% of one CPU over %.1f s (utime+stime %llu ticks); oldest "
	       "heartbeat seen %.1f ms (period %.0f ms, stale after %u periods)\n",
	       100.0 * (double)(ticks1 - ticks0) / (double)sysconf(_SC_CLK_TCK) /
		   ((double)(t1 - t0) / 1e9),
	       (double)(t1 - t0) / 1e9, (unsigned long long)(ticks1 - ticks0), (double)hb_max / 1e6,
	       (double)period / 1e6, BARRIERD_LIVENESS_PERIODS);
	if (all.calls == 0)
		bad = 1;
	if (failed)
		printf("FAIL: %llu of %llu calls failed\n", (unsigned long long)failed,
		       (unsigned long long)all.calls);
	munmap((void *)m, msz);
	if (h_stop(&H) == -1)
		bad = 1;
	if (failed || bad) {
		fprintf(stderr, "daemon log:\n");
		if (test_system("tail -20 '%s' >&2", H.log)) {
		}
	}
	h_rmdir(&H);
	return failed || bad ? 1 : 0;
}
