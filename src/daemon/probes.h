/* SPDX-License-Identifier: MIT */
/*
 * The BPF side, as the daemon drives it: load the embedded skeleton, map the slots and the
 * .bss words, register the daemon's thread ids, attach the programs to tracepoints, and drain
 * the ring buffer the programs signal through.
 */
#ifndef BARRIERD_PROBES_H
#define BARRIERD_PROBES_H

#include "tracepoints.h"
#include <barrierd_slot.h>
#include "daemon_tids.h"

#include <stdbool.h>
#include <stdint.h>

struct barrierd_bpf;
struct ring_buffer;
struct bpf_link;

struct probes {
	struct barrierd_bpf *skel;
	struct barrierd_slot *slots; /* mmap of the BPF_F_MMAPABLE array, one slot per CPU:
					read-only after probes_freeze() */
	size_t slots_len;
	uint64_t ncpu;
	/* .bss globals, through the skeleton's mmap */
	volatile uint64_t *vtime;
	volatile uint64_t *watermark;
	volatile uint64_t *main_switches;
	volatile uint64_t *quiet_cpu;
	volatile uint64_t *quiet_upto;
	struct ring_buffer *rb;
	bool switch_stamps; /* sched_switch is evidence: every switch stamps, the daemon's too */
	struct bpf_link *links[BARRIERD_MAX_TRACEPOINTS + 1];
	size_t n_links;
	bool frozen; /* the slots map is frozen: its descriptor may be handed to clients */
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

/*
 * After every program is attached and `online` was read (after an MFENCE that followed the
 * attach; NULL if it could not be): idle-credit the CPUs offline now (UNKNOWN to IDLE, DESIGN
 * rule 2), freeze the slots map and map it read-only in place of the writable mapping.  0;
 * the freeze's -errno (the slots are then read-only here but not handed out); or mmap's
 * -errno, with no mapping left (fatal).
 */
int probes_freeze(struct probes *b, const uint8_t *online);

/*
 * The descriptors a client holds (DESIGN rule 11): the frozen slots map, then the
 * sched_switch link.  How many (2), or -ENOSPC (not frozen, no such link, max below 2).
 */
int probes_share_fds(const struct probes *b, int *fds, size_t max);

/* Detach the sched_switch program (test-only builds use it to exercise rule 6). */
void probes_detach_switch(struct probes *b);

/* Drain the ring buffer (no syscall: it is mmaped).  Returns records consumed. */
int probes_drain(struct probes *b);
int probes_rb_fd(struct probes *b);

void probes_destroy(struct probes *b);

#endif
