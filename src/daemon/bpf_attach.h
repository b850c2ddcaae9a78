/* SPDX-License-Identifier: MIT */
/* Loading the embedded BPF skeleton and attaching its programs to tracepoints. */
#ifndef BARRIERD_BPF_ATTACH_H
#define BARRIERD_BPF_ATTACH_H

#include "tracepoints.h"
#include "barrierd_slot.h"

#include <stdbool.h>
#include <stdint.h>

struct barrierd_bpf;
struct ring_buffer;
struct bpf_link;

struct bpf_ctx {
	struct barrierd_bpf *skel;
	struct barrierd_slot *slots; /* mmap of the BPF_F_MMAPABLE array, one slot per CPU */
	size_t slots_len;
	uint64_t ncpu;
	/* .bss globals, through the skeleton's mmap */
	volatile uint64_t *vtime;
	volatile uint64_t *watermark;
	volatile uint64_t *main_switches;
	struct ring_buffer *rb;
	uint64_t signals; /* ring-buffer records consumed */
	struct bpf_link *links[BARRIERD_MAX_TRACEPOINTS + 1];
	size_t n_links;
};

/* Open and load the programs sized for ncpu possible CPUs; map the slots.  0 or -errno. */
int bpf_ctx_load(struct bpf_ctx *b, uint64_t ncpu, char *err, size_t errlen);

/* The calling thread's global tid, learned through a test run of barrierd_whoami. */
int bpf_ctx_whoami(struct bpf_ctx *b, uint32_t *tid);

/* Register a daemon thread: its events never signal; main also feeds the detach check. */
int bpf_ctx_add_daemon_tid(struct bpf_ctx *b, uint32_t tid, bool main);

/*
 * Attach sched_switch (always: it tracks idle CPUs; it stamps only if listed) and the event
 * program to each other listed tracepoint.  0, or -errno with the tracepoint named in err.
 */
int bpf_ctx_attach(struct bpf_ctx *b, const struct resolved_tp *tps, size_t n, char *err,
		   size_t errlen);

/* Detach the sched_switch program (test-only builds use it to exercise rule 6). */
void bpf_ctx_detach_switch(struct bpf_ctx *b);

/* Drain the ring buffer (no syscall: it is mmaped).  Returns records consumed. */
int bpf_ctx_drain(struct bpf_ctx *b);
int bpf_ctx_rb_fd(struct bpf_ctx *b);

void bpf_ctx_destroy(struct bpf_ctx *b);

#endif
