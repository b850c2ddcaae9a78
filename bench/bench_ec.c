// SPDX-License-Identifier: MIT
/*
 * bench_ec: barrierd's event counts (barrierd_ec.h) against Concurrency Kit's ck_ec64, single
 * and multiple producer (bench/run.sh section 14; docs/PERFORMANCE.md §11).  ck_ec runs on a
 * ck_ec_ops of ours: CLOCK_MONOTONIC, FUTEX_WAIT_BITSET_PRIVATE to its absolute deadline (plain
 * FUTEX_WAIT_PRIVATE with none) and FUTEX_WAKE_PRIVATE of everyone, its other fields at 0 (its
 * defaults: 100 spins, backoff 2 ms x8 until a second has passed, then no deadline).  Kinds:
 * bd-sp, bd-mp (barrierd_ec_inc_sp / barrierd_ec_inc), ck-sp, ck-mp (ck_ec64_inc with a
 * single- or multiple-producer mode).  The producer runs on the first CPU, the waiter on the
 * second.
 *
 *   bench_ec inc STATE N REPS OUT.csv
 *        Cycles (RDTSC) and ns per increment over N increments in a loop, no waiter ("none"),
 *        and with a thread on the second CPU looping on wait() for the next value ("active":
 *        the line shared with a waiter that sets the flag now and then); kinds rotating, REPS
 *        times; an empty loop's cycles beside them.  Rows: kind,waiter,rep,n,cycles,ns.
 *   bench_ec wake STATE N OUT.csv
 *        N wake-ups per kind, kinds rotating sample by sample: the waiter blocks; once the
 *        producer sees it asleep in the kernel on the event count's word (/proc/self/task/TID/
 *        syscall; ours: with no timeout, its indefinite block) and after a further random
 *        0-1 ms, it reads the clock (t0), increments (the cycles of that increment: RDTSC
 *        around it), and the waiter reads the clock once wait() returns (t1).
 *        Rows: kind,index,wake_ns,inc_cycles,state (2: its indefinite block; 1: a sleep with
 *        a timeout, taken for ours only when the indefinite one is not seen within a second).
 *   bench_ec block STATE N HOLD_MS OUT.csv
 *        N waits per kind (bd, ck: the wait is the same for SP and MP), watched from outside:
 *        the producer polls every 20 us the word (the flag's first sighting) and the waiter's
 *        /proc/self/task/TID/syscall (the first sighting of FUTEX_WAIT with no timeout on the
 *        word, or futex_waitv with none), holds HOLD_MS (at least until the block plus 10 ms,
 *        at most 5 s), then increments.  The waiter's CPU time over the wait
 *        (CLOCK_THREAD_CPUTIME_ID and getrusage(RUSAGE_THREAD)).  Rows: kind,index,hold_ns,
 *        flag_ns,block_ns,cpu_ns,rusage_us,wake_ns (flag and block from the call, -1: not seen).
 *   bench_ec insn N
 *        For callgrind: N increments of each kind in its own noinline function (insn_bd_sp,
 *        insn_bd_mp, insn_ck_sp, insn_ck_mp) and an empty loop (insn_empty); nothing measured
 *        here: (Ir(insn_KIND) - Ir(insn_empty)) / N is the increment's instruction count.
 */
#include "bench_common.h"

#include <barrierd.h>
#include <barrierd_ec.h>
#include <ck_ec.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <x86intrin.h>

enum kind { K_BD_SP, K_BD_MP, K_CK_SP, K_CK_MP, K_COUNT };
static const char *const kind_names[K_COUNT] = {"bd-sp", "bd-mp", "ck-sp", "ck-mp"};

/* ---- ck_ec's operations ------------------------------------------------------------------ */

static int ck_gettime(const struct ck_ec_ops *ops, struct timespec *out)
{
	(void)ops;
	return clock_gettime(CLOCK_MONOTONIC, out);
}

static void ck_wait32(const struct ck_ec_wait_state *st, const uint32_t *addr, uint32_t expected,
		      const struct timespec *deadline)
{
	(void)st;
	if (deadline)
		syscall(SYS_futex, addr, FUTEX_WAIT_BITSET_PRIVATE, expected, deadline, NULL,
			FUTEX_BITSET_MATCH_ANY);
	else
		syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

/* The low half of the word is the futex word (little-endian), as ck_ec.h says. */
static void ck_wait64(const struct ck_ec_wait_state *st, const uint64_t *addr, uint64_t expected,
		      const struct timespec *deadline)
{
	ck_wait32(st, (const uint32_t *)addr, (uint32_t)expected, deadline);
}

static void ck_wake32(const struct ck_ec_ops *ops, const uint32_t *addr)
{
	(void)ops;
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

static void ck_wake64(const struct ck_ec_ops *ops, const uint64_t *addr)
{
	ck_wake32(ops, (const uint32_t *)addr);
}

static const struct ck_ec_ops ck_ops = {
    .gettime = ck_gettime,
    .wait32 = ck_wait32,
    .wait64 = ck_wait64,
    .wake32 = ck_wake32,
    .wake64 = ck_wake64,
};
static const struct ck_ec_mode ck_sp = {.ops = &ck_ops, .single_producer = true};
static const struct ck_ec_mode ck_mp = {.ops = &ck_ops, .single_producer = false};

/* ---- one event count of either kind ------------------------------------------------------ */

static struct barrierd *handle;
static struct barrierd_ec bd_ec __attribute__((aligned(64)));
static struct ck_ec64 ck_ec __attribute__((aligned(64)));

static const uint64_t *ec_word(enum kind k)
{
	return k <= K_BD_MP ? &bd_ec.word : &ck_ec.counter;
}

static void ec_reset(void)
{
	barrierd_ec_init(&bd_ec, 0, 0);
	ck_ec64_init(&ck_ec, 0);
}

static inline void ec_inc(enum kind k)
{
	switch (k) {
	case K_BD_SP:
		barrierd_ec_inc_sp(&bd_ec);
		break;
	case K_BD_MP:
		barrierd_ec_inc(&bd_ec);
		break;
	case K_CK_SP:
		ck_ec64_inc(&ck_ec, &ck_sp);
		break;
	default:
		ck_ec64_inc(&ck_ec, &ck_mp);
		break;
	}
}

static inline uint64_t ec_value(enum kind k)
{
	return k <= K_BD_MP ? barrierd_ec_value(&bd_ec) : ck_ec64_value(&ck_ec);
}

/* Wait until the value moves from old (no deadline).  0, or an error. */
static int ec_wait(enum kind k, uint64_t old)
{
	if (k <= K_BD_MP)
		return barrierd_ec_wait(&bd_ec, handle, old, -1);
	return ck_ec64_wait(&ck_ec, k == K_CK_SP ? &ck_sp : &ck_mp, old, NULL) ? -ETIMEDOUT : 0;
}

/* ---- the increment loops (their own functions: callgrind counts them one by one) ------------ */

#define INSN_LOOP(name, body)                                                                      \
	__attribute__((noinline)) static void name(uint64_t n)                                     \
	{                                                                                          \
		for (uint64_t i = 0; i < n; i++) {                                                 \
			body;                                                                      \
		}                                                                                  \
	}

INSN_LOOP(insn_empty, __asm__ __volatile__("" ::: "memory"))
INSN_LOOP(insn_bd_sp, barrierd_ec_inc_sp(&bd_ec))
INSN_LOOP(insn_bd_mp, barrierd_ec_inc(&bd_ec))
INSN_LOOP(insn_ck_sp, ck_ec64_inc(&ck_ec, &ck_sp))
INSN_LOOP(insn_ck_mp, ck_ec64_inc(&ck_ec, &ck_mp))

static void (*const loops[K_COUNT])(uint64_t) = {insn_bd_sp, insn_bd_mp, insn_ck_sp, insn_ck_mp};

/* ---- the waiter thread ------------------------------------------------------------------ */

struct waiter {
	pthread_t thread;
	_Atomic pid_t tid;
	_Atomic int go;	  /* 1: wait once (job), 2: loop until stop, -1: exit */
	_Atomic int done; /* the wait returned */
	_Atomic int stop;
	enum kind kind;
	uint64_t old;
	_Atomic uint64_t t_call;
	uint64_t t_ret, cpu_ns, ru_us;
	int err;
};

static uint64_t rusage_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000ULL +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	bench_pin(1);
	prctl(PR_SET_TIMERSLACK, 1UL);
	atomic_store(&w->tid, (pid_t)syscall(SYS_gettid));
	for (;;) {
		int go;

		/* Asleep between jobs: nothing of ours runs on the second CPU. */
		while (!(go = atomic_load(&w->go)))
			syscall(SYS_futex, &w->go, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
		if (go < 0)
			return NULL;
		if (go == 1) {
			uint64_t c0 = bench_thread_cpu(), r0 = rusage_us();

			atomic_store(&w->t_call, bd_mono_ns());
			w->err = ec_wait(w->kind, w->old);
			w->t_ret = bd_mono_ns();
			w->cpu_ns = bench_thread_cpu() - c0;
			w->ru_us = rusage_us() - r0;
		} else {
			while (!atomic_load(&w->stop)) {
				uint64_t v = ec_value(w->kind);

				if (ec_wait(w->kind, v))
					w->err = -1;
			}
		}
		atomic_store(&w->go, 0);
		atomic_store(&w->done, 1);
	}
}

static void waiter_job(struct waiter *w, enum kind k, int go)
{
	w->kind = k;
	w->old = ec_value(k);
	w->err = 0;
	atomic_store(&w->stop, 0);
	atomic_store(&w->done, 0);
	atomic_store(&w->t_call, 0);
	atomic_store(&w->go, go);
	syscall(SYS_futex, &w->go, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void waiter_join(struct waiter *w)
{
	while (!atomic_load(&w->done))
		bench_sleep_ns(20000);
}

/* End a looping waiter: it may wait again for the value it read after the stop, so keep
 * incrementing (the producer is still the only one) until it is done. */
static void waiter_stop(struct waiter *w, enum kind k)
{
	atomic_store(&w->stop, 1);
	while (!atomic_load(&w->done)) {
		ec_inc(k);
		bench_sleep_ns(50000);
	}
}

/*
 * What the waiter's thread is doing: 2 asleep in FUTEX_WAIT (or FUTEX_WAIT_BITSET) on word
 * with no timeout, or in futex_waitv with none; 1 asleep in a futex wait on word with a
 * timeout; 0 anything else (running, another system call).
 */
static int waiter_state(int fd, const uint64_t *word)
{
	char buf[256];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	unsigned long long a[7];

	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (sscanf(buf, "%llu %llx %llx %llx %llx", &a[0], &a[1], &a[2], &a[3], &a[4]) != 5)
		return 0;
	if (a[0] == SYS_futex && a[1] == (unsigned long long)(uintptr_t)word) {
		unsigned op = (unsigned)a[2] & FUTEX_CMD_MASK;

		if (op != FUTEX_WAIT && op != FUTEX_WAIT_BITSET)
			return 0;
		return a[4] ? 1 : 2;
	}
#ifdef SYS_futex_waitv
	if (a[0] == SYS_futex_waitv)
		return a[4] ? 1 : 2;
#endif
	return 0;
}

static int open_syscall_file(struct waiter *w)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)atomic_load(&w->tid));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fprintf(stderr, "bench_ec: %s: %s\n", path, strerror(errno));
	return fd;
}

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static inline uint64_t tsc(void)
{
	uint64_t t;

	_mm_lfence();
	t = __rdtsc();
	_mm_lfence();
	return t;
}

/* ---- inc ------------------------------------------------------------------------------- */

static int run_inc(uint64_t n, unsigned reps, const char *out, struct waiter *w)
{
	FILE *f = bench_csv(out, "kind,waiter,rep,n,cycles,ns");

	if (!f)
		return 1;
	for (unsigned r = 0; r < reps; r++) {
		for (int j = 0; j <= 2 * K_COUNT; j++) {
			/* Rotate: 2 * K_COUNT kind/waiter pairs, then the empty loop. */
			int x = (int)((r + (unsigned)j) % (2 * K_COUNT + 1));
			uint64_t c0, c1, t0, t1;
			const char *name = "empty";
			int active = 0;
			enum kind k = K_BD_SP;

			ec_reset();
			if (x < 2 * K_COUNT) {
				k = (enum kind)(x % K_COUNT);
				active = x / K_COUNT;
				name = kind_names[k];
				if (active) {
					waiter_job(w, k, 2);
					bench_sleep_ns(2 * BENCH_MS);
				}
			}
			t0 = bd_mono_ns();
			c0 = tsc();
			if (x < 2 * K_COUNT)
				loops[k](n);
			else
				insn_empty(n);
			c1 = tsc();
			t1 = bd_mono_ns();
			if (active)
				waiter_stop(w, k);
			fprintf(f, "%s,%s,%u,%llu,%.3f,%.3f\n", name, active ? "active" : "none", r,
				(unsigned long long)n, (double)(c1 - c0) / (double)n,
				(double)(t1 - t0) / (double)n);
		}
	}
	fclose(f);
	return 0;
}

/* ---- wake ------------------------------------------------------------------------------ */

static int run_wake(uint64_t n, const char *out, struct waiter *w)
{
	FILE *f = bench_csv(out, "kind,index,wake_ns,inc_cycles,state");
	int fd = open_syscall_file(w), rc = 0;

	if (!f || fd < 0)
		return 1;
	for (uint64_t i = 0; i < n; i++) {
		for (int j = 0; j < K_COUNT; j++) {
			enum kind k = (enum kind)((i + (uint64_t)j) % K_COUNT);
			/* Ours: its indefinite block (after the barrier); ck: any futex sleep. */
			int want = k <= K_BD_MP ? 2 : 1;
			uint64_t start, t0, c0, c1;
			int st;

			ec_reset();
			waiter_job(w, k, 1);
			start = bd_mono_ns();
			/* Past a second, any futex sleep on the word will do (noted in the row). */
			while ((st = waiter_state(fd, ec_word(k))) < want &&
			       !(st && bd_mono_ns() - start > BENCH_SEC)) {
				if (bd_mono_ns() - start > 5 * BENCH_SEC) {
					fprintf(stderr, "bench_ec: %s: the waiter never slept\n",
						kind_names[k]);
					rc = 1;
					break;
				}
				bench_sleep_ns(20000);
			}
			bench_sleep_ns(rnd() % (BENCH_MS + 1));
			t0 = bd_mono_ns();
			c0 = tsc();
			ec_inc(k);
			c1 = tsc();
			waiter_join(w);
			if (w->err)
				rc = 1;
			fprintf(f, "%s,%llu,%lld,%llu,%d\n", kind_names[k], (unsigned long long)i,
				(long long)(w->t_ret - t0), (unsigned long long)(c1 - c0), st);
		}
	}
	close(fd);
	fclose(f);
	return rc;
}

/* ---- block ----------------------------------------------------------------------------- */

static int run_block(uint64_t n, uint64_t hold_ms, const char *out, struct waiter *w)
{
	FILE *f = bench_csv(out, "kind,index,hold_ns,flag_ns,block_ns,cpu_ns,rusage_us,wake_ns");
	int fd = open_syscall_file(w), rc = 0;

	if (!f || fd < 0)
		return 1;
	for (uint64_t i = 0; i < 2 * n; i++) {
		/* bd and ck alternate; the wait does not depend on the producer mode. */
		enum kind k = i % 2 ? K_CK_SP : K_BD_SP;
		const uint64_t *word = ec_word(k);
		uint64_t start, now, flag = 0, block = 0, t0;
		uint64_t hold = hold_ms * BENCH_MS, limit = 5 * BENCH_SEC;

		ec_reset();
		waiter_job(w, k, 1);
		while (!(start = atomic_load(&w->t_call)))
			;
		for (;;) {
			now = bd_mono_ns();
			if (!flag && (bd_load(word) & 1))
				flag = now;
			if (!block && waiter_state(fd, word) == 2)
				block = now;
			if (now - start >= limit ||
			    (now - start >= hold && block && now - block >= 10 * BENCH_MS))
				break;
			bench_sleep_ns(20000);
		}
		t0 = bd_mono_ns();
		ec_inc(k);
		waiter_join(w);
		if (w->err)
			rc = 1;
		fprintf(f, "%s,%llu,%llu,%lld,%lld,%llu,%llu,%lld\n", k <= K_BD_MP ? "bd" : "ck",
			(unsigned long long)(i / 2), (unsigned long long)(t0 - start),
			flag ? (long long)(flag - start) : -1LL,
			block ? (long long)(block - start) : -1LL, (unsigned long long)w->cpu_ns,
			(unsigned long long)w->ru_us, (long long)(w->t_ret - t0));
	}
	close(fd);
	fclose(f);
	return rc;
}

/* ---- main ------------------------------------------------------------------------------ */

static int open_handle(const char *path)
{
	struct barrierd_open_opts oo = {
	    .sz = sizeof(oo),
	    .fallback = BARRIERD_FALLBACK_NONE, /* a benchmark must not hide a dead daemon */
	};
	int ret = barrierd_open_opts(&handle, path, &oo);

	if (ret)
		fprintf(stderr, "bench_ec: %s: %s\n", path, strerror(-ret));
	return ret;
}

static int usage(void)
{
	fprintf(stderr, "usage: bench_ec inc STATE N REPS OUT.csv | wake STATE N OUT.csv | "
			"block STATE N HOLD_MS OUT.csv | insn N\n");
	return 64;
}

int main(int argc, char **argv)
{
	struct waiter w = {0};
	int rc;

	if (argc == 3 && !strcmp(argv[1], "insn")) {
		uint64_t n = strtoull(argv[2], NULL, 10);

		ec_reset();
		insn_empty(n);
		for (int k = 0; k < K_COUNT; k++)
			loops[k](n);
		printf("insn %llu bd %llu ck %llu\n", (unsigned long long)n,
		       (unsigned long long)barrierd_ec_value(&bd_ec),
		       (unsigned long long)ck_ec64_value(&ck_ec));
		return 0;
	}
	if (argc < 5)
		return usage();
	if (open_handle(argv[2]))
		return 1;
	bench_pin(0);
	prctl(PR_SET_TIMERSLACK, 1UL);
	rng_state = bd_mono_ns() | 1;
	ec_reset();
	if (pthread_create(&w.thread, NULL, waiter_main, &w))
		return 1;
	while (!atomic_load(&w.tid))
		bench_sleep_ns(100000);
	if (argc == 6 && !strcmp(argv[1], "inc"))
		rc = run_inc(strtoull(argv[3], NULL, 10), (unsigned)strtoul(argv[4], NULL, 10),
			     argv[5], &w);
	else if (argc == 5 && !strcmp(argv[1], "wake"))
		rc = run_wake(strtoull(argv[3], NULL, 10), argv[4], &w);
	else if (argc == 6 && !strcmp(argv[1], "block"))
		rc = run_block(strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10), argv[5],
			       &w);
	else
		rc = usage();
	atomic_store(&w.go, -1);
	syscall(SYS_futex, &w.go, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	pthread_join(w.thread, NULL);
	barrierd_close(handle);
	return rc;
}
