/* SPDX-License-Identifier: MIT */
/*
 * The BPF side, as the daemon drives it: load the embedded skeleton, map the slots and the
 * .bss words, register the daemon's thread ids, attach the programs to tracepoints, and drain
 * the ring buffer the programs signal through.
 */
#ifndef BARRIERD_PROBES_H
#define BARRIERD_PROBES_H

#include "tracepoints.h"
#include "barrierd_slot.h"

#include <stdbool.h>
#include <stdint.h>

struct barrierd_bpf;
struct ring_buffer;
struct bpf_link;

struct probes {
	struct barrierd_bpf *skel;
	struct barrierd_slot *slots; /* mmap of the BPF_F_MMAPABLE array, one slot per CPU */
	size_t slots_len;
	uint64_t ncpu;
	/* .bss globals, through the skeleton's mmap */
	volatile uint64_t *vtime;
	volatile uint64_t *watermark;
	volatile uint64_t *main_switches;
	struct ring_buffer *rb;
	bool switch_stamps; /* sched_switch is evidence: every switch stamps, the daemon's too */
	struct bpf_link *links[BARRIERD_MAX_TRACEPOINTS + 1];
	size_t n_links;
};

/* Open and load the programs sized for ncpu possible CPUs; map the slots.  0 or -errno. */
int probes_load(struct probes *b, uint64_t ncpu, char *err, size_t errlen);

/* The calling thread's global tid, learned through a test run of barrierd_whoami. */
int probes_whoami(struct probes *b, uint32_t *tid);

/* Register a daemon thread: its events never signal; main also feeds the detach check. */
int probes_add_daemon_tid(struct probes *b, uint32_t tid, bool main);

/*
 * Attach sched_switch (always: it tracks idle CPUs; it stamps only if listed) and the event
 * program to each other listed tracepoint.  0, or -errno with the tracepoint named in err.
 */
int probes_attach(struct probes *b, const struct resolved_tp *tps, size_t n, char *err,
		  size_t errlen);

/* Detach the sched_switch program (test-only builds use it to exercise rule 6). */
void probes_detach_switch(struct probes *b);

/* Drain the ring buffer (no syscall: it is mmaped).  Returns records consumed. */
int probes_drain(struct probes *b);
int probes_rb_fd(struct probes *b);

void probes_destroy(struct probes *b);

#endif
