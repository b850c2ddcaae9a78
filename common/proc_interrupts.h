/* SPDX-License-Identifier: MIT */
/*
 * /proc/interrupts, read for the IPI counts of `barrierctl bench` and bench/bench_ipi: the
 * CAL, RES, IWI and TLB rows, per CPU.
 */
#ifndef BARRIERD_PROC_INTERRUPTS_H
#define BARRIERD_PROC_INTERRUPTS_H

#include <stddef.h>
#include <stdint.h>

enum { IPI_CAL, IPI_RES, IPI_IWI, IPI_TLB, IPI_KINDS };
extern const char *const proc_interrupts_rows[IPI_KINDS];

struct proc_interrupts {
	int fd;	   /* /proc/interrupts, or -1 */
	char *buf; /* the file's text, grown as needed */
	size_t cap;
	int ncols;    /* CPU columns of the latest read */
	int *col_cpu; /* the CPU id of each column (offline CPUs have none) */
};

/* Open the file (0 or -errno); proc_interrupts_close() frees what a reader holds either way. */
int proc_interrupts_open(struct proc_interrupts *pi);
void proc_interrupts_close(struct proc_interrupts *pi);

/*
 * Read the file: out[cpu * IPI_KINDS + kind] for every CPU id below maxcpu (zeroed first).
 * 0 or -errno.
 */
int proc_interrupts_read(struct proc_interrupts *pi, uint64_t *out, int maxcpu);

/* The same, summed over every CPU: out[kind]. */
int proc_interrupts_sum(struct proc_interrupts *pi, uint64_t out[IPI_KINDS]);

#endif
