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
 * Methods: barrierd, membarrier-global, global-expedited, private-expedited, mprotect (the
 * calls are common/barrier_method.c's, as in barrierctl bench; the sibling is
 * common/siblings.c's).
 *
 * Rounds interleave conditions and methods; each batch is at most --calls calls or 0.5 s.
 * Between batches, a background window of the same condition (the caller sleeping) measures
 * what lands without any call: run.sh subtracts its rate.  CSV rows, totals over all rounds:
 *   label,cond,method,calls,seconds,cpu,cal,res,iwi,tlb
 */
#include "bench_common.h"

#include "barrier_method.h"
#include "proc_interrupts.h"
#include "siblings.h"

#include <barrierd.h>
#include <linux/membarrier.h>

#define MAXCPU 256
#define BATCH_NS (500 * BENCH_MS)
#define BG_NS (200 * BENCH_MS)

/* The methods in the order each round runs them, then the background window. */
enum { M_BARRIERD, M_GLOBAL, M_GLOBAL_EXP, M_PRIVATE_EXP, M_MPROTECT, M_BACKGROUND, NM };
static const enum barrier_method method_of[M_BACKGROUND] = {
    BM_BARRIERD, BM_MEMBARRIER_GLOBAL, BM_GLOBAL_EXPEDITED, BM_PRIVATE_EXPEDITED, BM_MPROTECT,
};

static const char *method_name(int m)
{
	return m == M_BACKGROUND ? "background" : barrier_method_names[method_of[m]];
}

enum { C_IDLE, C_BUSY, NC };
static const char *const cond_names[NC] = {"idle", "busy"};

static const char *cond_name(int c)
{
	return cond_names[c];
}

struct acc {
	uint64_t calls, ns;
	uint64_t irq[MAXCPU][IPI_KINDS];
};

static struct acc acc[NC][NM];
static struct proc_interrupts irqs = {.fd = -1};

static struct barrier_method_ctx ctx; /* the state file and the mprotect page */
static struct siblings sib;	      /* one, on the target CPU */
static int cond = C_IDLE;	      /* what the sibling does now */

static int read_irqs(uint64_t out[MAXCPU][IPI_KINDS])
{
	return proc_interrupts_read(&irqs, &out[0][0], MAXCPU);
}

/* Idle: the sibling parks; busy: it spins reading the page (its TLB holds it). */
static void set_cond(int c)
{
	int ret;

	if (c == cond)
		return;
	ret = siblings_set(&sib, c == C_BUSY ? SIB_TOUCH : SIB_PARK);
	if (ret) {
		fprintf(stderr, "bench_ipi: the sibling did not respond: %s\n", strerror(-ret));
		exit(1);
	}
	cond = c;
	/* The wake-up's own IPI has landed; let the target settle into its new state. */
	bench_sleep_ns(5 * BENCH_MS);
}

/* One call of method m; a failed call ends the run. */
static void call(int m)
{
	int ret = barrier_method_call(&ctx, method_of[m]);

	if (ret) {
		fprintf(stderr, "bench_ipi: %s: %s\n", method_name(m), strerror(-ret));
		exit(1);
	}
}

static void add(struct acc *a, uint64_t before[MAXCPU][IPI_KINDS],
		uint64_t after[MAXCPU][IPI_KINDS])
{
	for (int c = 0; c < MAXCPU; c++)
		for (int k = 0; k < IPI_KINDS; k++)
			a->irq[c][k] += after[c][k] - before[c][k];
}

static int parse_list(const char *s, const char *(*name)(int), int count)
{
	int mask = 0;
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int i;

		for (i = 0; i < count && strcmp(t, name(i)); i++)
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
	cpu_set_t one;
	FILE *csv;

	if (argc < 3) {
		fprintf(stderr,
			"usage: bench_ipi STATE_PATH CSV [--label L] [--caller CPU] [--target "
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
			methods = parse_list(argv[i + 1], method_name, M_BACKGROUND);
		else if (!strcmp(argv[i], "--conds"))
			conds = parse_list(argv[i + 1], cond_name, NC);
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
	if ((methods & (1 << M_BARRIERD)) && (ret = barrierd_open(&ctx.b, argv[1]))) {
		fprintf(stderr, "bench_ipi: %s: %s\n", argv[1], strerror(-ret));
		return 1;
	}
	if ((ret = membarrier_call(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)) ||
	    (ret = membarrier_call(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED))) {
		fprintf(stderr, "bench_ipi: membarrier registration: %s\n", strerror(-ret));
		return 1;
	}
	if ((ret = barrier_method_map_page(&ctx))) {
		fprintf(stderr, "bench_ipi: mmap: %s\n", strerror(-ret));
		return 1;
	}

	CPU_ZERO(&one);
	CPU_SET(target, &one);
	if (siblings_start(&sib, &one, ctx.page)) {
		fprintf(stderr, "bench_ipi: cannot start the sibling on CPU %d\n", target);
		return 1;
	}
	/* Warm-up: one call of each method in each condition. */
	for (int c = 0; c < NC; c++) {
		if (!(conds & (1 << c)))
			continue;
		set_cond(c);
		for (int m = 0; m < M_BACKGROUND; m++)
			if (methods & (1 << m))
				call(m);
	}

	for (int r = 0; r < rounds; r++) {
		for (int c = 0; c < NC; c++) {
			if (!(conds & (1 << c)))
				continue;
			set_cond(c);
			for (int m = 0; m <= M_BACKGROUND; m++) {
				struct acc *a = &acc[c][m];
				uint64_t t0, t1, k = 0;

				if (m < M_BACKGROUND && !(methods & (1 << m)))
					continue;
				read_irqs(before);
				t0 = bd_mono_ns();
				if (m == M_BACKGROUND) {
					bench_sleep_ns(BG_NS);
				} else {
					for (k = 0; k < calls && bd_mono_ns() - t0 < BATCH_NS; k++)
						call(m);
				}
				t1 = bd_mono_ns();
				read_irqs(after);
				add(a, before, after);
				a->calls += k;
				a->ns += t1 - t0;
			}
		}
	}
	siblings_stop(&sib);

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
					cond_names[c], method_name(m), (unsigned long long)a->calls,
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
	barrier_method_unmap_page(&ctx);
	barrierd_close(ctx.b);
	return 0;
}
