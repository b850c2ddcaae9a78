/* SPDX-License-Identifier: MIT */
/*
 * The barrier methods that `barrierctl bench` and bench/bench_ipi measure against each other,
 * and the one switch that calls each: barrierd (libbarrierd's barrierd_barrier), its vtime
 * form, the membarrier commands, the mprotect trick (a TLB shootdown of one page), and
 * barrierd_barrier() on a handle that credits CPUs from the slots (direct) beside one opened
 * with BARRIERD_OPEN_NO_DIRECT (file), for their side-by-side comparison.
 *
 * barrier_method.c calls libbarrierd: a program that calls barrier_method_call() links
 * barrierd_lib as well (the daemon, which never does, does not pull the object in).
 */
#ifndef BARRIERD_BARRIER_METHOD_H
#define BARRIERD_BARRIER_METHOD_H

#include <stddef.h>
#include <stdint.h>

struct barrierd;

/* In the order `barrierctl bench` lists, runs and prints them. */
enum barrier_method {
	BM_BARRIERD,
	BM_VTIME,
	BM_MEMBARRIER_GLOBAL,
	BM_PRIVATE_EXPEDITED,
	BM_MPROTECT,
	BM_GLOBAL_EXPEDITED,
	BM_DIRECT, /* barrierd_barrier(), only while the handle credits from the slots */
	BM_FILE,   /* barrierd_barrier() on a handle opened with BARRIERD_OPEN_NO_DIRECT */
	BM_COUNT,
};

/*
 * What `barrierctl bench` runs without -m: every method but direct and file, which measure
 * what barrierd already measures (with slots, or through the file alone) and are asked for by name.
 */
#define BM_DEFAULT_MASK ((1u << BM_DIRECT) - 1)

/* The names on the command lines and in the CSV files: "barrierd", "membarrier-global", ... */
extern const char *const barrier_method_names[BM_COUNT];

/* The method called name[0..len), or -1. */
int barrier_method_lookup(const char *name, size_t len);

/* A barrierd call that takes longer than this failed. */
#define BARRIER_METHOD_TIMEOUT_NS (5 * 1000000000LL)

/*
 * What the calls need: the state file for barrierd, vtime and direct, a second handle of it
 * without direct evidence for file, the page for mprotect.
 */
struct barrier_method_ctx {
	struct barrierd *b;
	struct barrierd *b_file; /* opened with BARRIERD_OPEN_NO_DIRECT */
	volatile unsigned char *page;
	size_t page_size;
};

/* Map, dirty and lock the mprotect trick's page (0 or -errno); unmap it again. */
int barrier_method_map_page(struct barrier_method_ctx *c);
void barrier_method_unmap_page(struct barrier_method_ctx *c);

/* One call of method m: 0, or -errno (-ETIMEDOUT, -ESTALE from libbarrierd). */
int barrier_method_call(const struct barrier_method_ctx *c, enum barrier_method m);

/* membarrier(cmd, 0, 0): 0 or -errno. */
int membarrier_call(int cmd);

#endif
