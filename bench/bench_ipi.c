// SPDX-License-Identifier: MIT
/*
 * bench_ipi: IPIs per barrier, per method, per kind (CAL, RES, IWI, TLB) and per CPU, from
 * /proc/interrupts column by column.  The caller stays pinned on one CPU (run.sh pins the daemon
 * there too) and what lands on every CPU is counted, so the rows for the target CPU say what
 * each method costs a CPU that is neither the waiter's nor the daemon's.
 *
 *   bench_ipi STATE_PATH CSV [--label L] [--caller CPU] [--target CPU] [--calls N]
 *             [--rounds R] [--methods m1,m2,...] [--conds idle,busy]
 *
 * Conditions of the target CPU:
 *   idle  nothing of ours runs there (a sibling thread is parked on a futex);
 *   busy  a sibling thread of this process spins there, reading a page: it is what makes
 *         PRIVATE_EXPEDITED (same mm), GLOBAL_EXPEDITED (registered mm) and the mprotect trick
 *         (the page is in that CPU's TLB) do their work; for barrierd it is a busy CPU.
 * Methods: barrierd, membarrier-global, global-expedited, private-expedited, mprotect.
 *
 * Rounds interleave conditions and methods; each batch is at most --calls calls or 0.5 s.
 * Between batches, a background window of the same condition (the caller sleeping) measures
 * what lands without any call: run.sh subtracts its rate.  CSV rows, totals over all rounds:
 *   label,cond,method,calls,seconds,cpu,cal,res,iwi,tlb
 */
#include "bench_common.h"

#include <barrierd.h>
#include "proc_interrupts.h"
#include <linux/membarrier.h>
#include <pthread.h>

#define MAXCPU 256
#define BATCH_NS (500 * BENCH_MS)
#define BG_NS (200 * BENCH_MS)


enum { M_BARRIERD, M_GLOBAL, M_GLOBAL_EXP, M_PRIVATE_EXP, M_MPROTECT, M_BACKGROUND, NM };
static const char *const method_names[NM] = {"barrierd",	  "membarrier-global",
					      "global-expedited",	  "private-expedited",
					      "mprotect",	  "background"};

enum { C_IDLE, C_BUSY, NC };
static const char *const cond_names[NC] = {"idle", "busy"};

struct acc {
	uint64_t calls, ns;
	uint64_t irq[MAXCPU][IPI_KINDS];
};

static struct acc acc[NC][NM];
static struct proc_interrupts irqs = {.fd = -1};

static volatile unsigned char *page;
static size_t page_size;
static uint32_t mode;		 /* 0 park, 1 spin, 2 exit (private futex) */
static uint32_t acked = UINT32_MAX; /* last mode the sibling saw */
static struct barrierd *bd;

static int read_irqs(uint64_t out[MAXCPU][IPI_KINDS])
{
	return proc_interrupts_read(&irqs, &out[0][0], MAXCPU);
}

static void *sibling(void *arg)
{
	(void)arg;
	for (;;) {
		uint32_t m = __atomic_load_n(&mode, __ATOMIC_ACQUIRE);

		__atomic_store_n(&acked, m, __ATOMIC_RELEASE);
		if (m == 2)
			return NULL;
		if (m == 0) {
			syscall(SYS_futex, &mode, FUTEX_WAIT_PRIVATE, m, NULL, NULL, 0);
			continue;
		}
		/* No PAUSE: under a hypervisor it can make the host deschedule the vCPU. */
		while (__atomic_load_n(&mode, __ATOMIC_ACQUIRE) == m)
			(void)page[0];
	}
}

static void set_mode(uint32_t m)
{
	if (__atomic_load_n(&mode, __ATOMIC_RELAXED) == m)
		return;
	__atomic_store_n(&mode, m, __ATOMIC_RELEASE);
	syscall(SYS_futex, &mode, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	while (__atomic_load_n(&acked, __ATOMIC_ACQUIRE) != m)
		sched_yield();
	/* The wake-up's own IPI has landed; let the target settle into its new state. */
	bench_sleep_ns(5 * BENCH_MS);
}

static int call(int m)
{
	switch (m) {
	case M_BARRIERD:
		return barrierd_barrier(bd, 5 * (int64_t)BENCH_SEC);
	case M_GLOBAL:
		return syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) ? -errno : 0;
	case M_GLOBAL_EXP:
		return syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) ? -errno : 0;
	case M_PRIVATE_EXP:
		return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) ? -errno : 0;
	case M_MPROTECT:
		if (mprotect((void *)page, page_size, PROT_READ | PROT_WRITE))
			return -errno;
		page[0]++;
		return mprotect((void *)page, page_size, PROT_READ) ? -errno : 0;
	}
	return -EINVAL;
}

static void add(struct acc *a, uint64_t before[MAXCPU][IPI_KINDS], uint64_t after[MAXCPU][IPI_KINDS])
{
	for (int c = 0; c < MAXCPU; c++)
		for (int k = 0; k < IPI_KINDS; k++)
			a->irq[c][k] += after[c][k] - before[c][k];
}

static int parse_list(const char *s, const char *const *names, int count)
{
	int mask = 0;
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int i;

		for (i = 0; i < count && strcmp(t, names[i]); i++)
			;
		if (i == count) {
			fprintf(stderr, "bench_ipi: unknown name '%s'\n", t);
			exit(64);
		}
		mask |= 1 << i;
	}
	return mask;
}

int main(int argc, char **argv)
{
	static uint64_t before[MAXCPU][IPI_KINDS], after[MAXCPU][IPI_KINDS];
	const char *label = "pinned";
	int caller = 0, target = 1, rounds = 5, methods = (1 << M_BACKGROUND) - 1;
	int conds = (1 << NC) - 1, ret;
	uint64_t calls = 200;
	pthread_t th;
	pthread_attr_t attr;
	cpu_set_t one;
	FILE *csv;

	if (argc < 3) {
		fprintf(stderr, "usage: bench_ipi STATE_PATH CSV [--label L] [--caller CPU] [--target "
				"CPU] [--calls N] [--rounds R] [--methods LIST] [--conds LIST]\n");
		return 64;
	}
	for (int i = 3; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--label"))
			label = argv[i + 1];
		else if (!strcmp(argv[i], "--caller"))
			caller = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--target"))
			target = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--calls"))
			calls = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--rounds"))
			rounds = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--methods"))
			methods = parse_list(argv[i + 1], method_names, M_BACKGROUND);
		else if (!strcmp(argv[i], "--conds"))
			conds = parse_list(argv[i + 1], cond_names, NC);
		else {
			fprintf(stderr, "bench_ipi: unknown option %s\n", argv[i]);
			return 64;
		}
	}
	if (caller < 0 || caller >= MAXCPU || target < 0 || target >= MAXCPU || caller == target) {
		fprintf(stderr, "bench_ipi: bad CPUs\n");
		return 64;
	}
	if ((ret = bench_pin(caller))) {
		fprintf(stderr, "bench_ipi: cannot pin to CPU %d: %s\n", caller, strerror(-ret));
		return 1;
	}
	if (proc_interrupts_open(&irqs) || read_irqs(before)) {
		fprintf(stderr, "bench_ipi: cannot read /proc/interrupts\n");
		return 1;
	}
	if ((methods & (1 << M_BARRIERD)) && (ret = barrierd_open(&bd, argv[1]))) {
		fprintf(stderr, "bench_ipi: %s: %s\n", argv[1], strerror(-ret));
		return 1;
	}
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) ||
	    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0)) {
		fprintf(stderr, "bench_ipi: membarrier registration: %s\n", strerror(errno));
		return 1;
	}
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	page = mmap(NULL, page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return 1;
	page[0] = 1;
	mlock((void *)page, page_size);

	CPU_ZERO(&one);
	CPU_SET(target, &one);
	pthread_attr_init(&attr);
	pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
	if (pthread_create(&th, &attr, sibling, NULL)) {
		fprintf(stderr, "bench_ipi: cannot start the sibling on CPU %d\n", target);
		return 1;
	}
	while (__atomic_load_n(&acked, __ATOMIC_ACQUIRE) != 0)
		sched_yield();
	/* Warm-up: one call of each method in each condition. */
	for (int c = 0; c < NC; c++) {
		if (!(conds & (1 << c)))
			continue;
		set_mode(c == C_BUSY);
		for (int m = 0; m < M_BACKGROUND; m++)
			if ((methods & (1 << m)) && (ret = call(m))) {
				fprintf(stderr, "bench_ipi: %s: %s\n", method_names[m], strerror(-ret));
				return 1;
			}
	}

	for (int r = 0; r < rounds; r++) {
		for (int c = 0; c < NC; c++) {
			if (!(conds & (1 << c)))
				continue;
			set_mode(c == C_BUSY);
			for (int m = 0; m <= M_BACKGROUND; m++) {
				struct acc *a = &acc[c][m];
				uint64_t t0, t1, k = 0;

				if (m < M_BACKGROUND && !(methods & (1 << m)))
					continue;
				read_irqs(before);
				t0 = bench_now();
				if (m == M_BACKGROUND) {
					bench_sleep_ns(BG_NS);
				} else {
					for (k = 0; k < calls && bench_now() - t0 < BATCH_NS; k++) {
						if ((ret = call(m))) {
							fprintf(stderr, "bench_ipi: %s: %s\n",
								method_names[m], strerror(-ret));
							return 1;
						}
					}
				}
				t1 = bench_now();
				read_irqs(after);
				add(a, before, after);
				a->calls += k;
				a->ns += t1 - t0;
			}
		}
	}
	set_mode(2);
	pthread_join(th, NULL);

	csv = bench_csv(argv[2], "label,cond,method,calls,seconds,cpu,cal,res,iwi,tlb");
	if (!csv)
		return 1;
	for (int c = 0; c < NC; c++) {
		for (int m = 0; m < NM; m++) {
			struct acc *a = &acc[c][m];

			if (!a->ns)
				continue;
			for (int col = 0; col < irqs.ncols; col++) {
				int cpu = irqs.col_cpu[col];

				if (cpu >= MAXCPU)
					continue;
				fprintf(csv, "%s,%s,%s,%llu,%.6f,%d,%llu,%llu,%llu,%llu\n", label,
					cond_names[c], method_names[m], (unsigned long long)a->calls,
					(double)a->ns / 1e9, cpu,
					(unsigned long long)a->irq[cpu][IPI_CAL],
					(unsigned long long)a->irq[cpu][IPI_RES],
					(unsigned long long)a->irq[cpu][IPI_IWI],
					(unsigned long long)a->irq[cpu][IPI_TLB]);
			}
		}
	}
	fclose(csv);
	proc_interrupts_close(&irqs);
	barrierd_close(bd);
	return 0;
}
