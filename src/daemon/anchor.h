/* SPDX-License-Identifier: MIT */
/*
 * The anchor (PROTOCOL.md §6.12, THREAT-MODEL.md §7): this run's identity, written into the
 * frozen .rodata of a program only a privileged loader can load, and handed to clients beside
 * the slots.  It is what a client that cannot trust the state file's owner (a user namespace
 * where root is unmapped) checks the file and the slots against.
 */
#ifndef BARRIERD_ANCHOR_H
#define BARRIERD_ANCHOR_H

#include <barrierd.h>
#include <stdint.h>

struct probes;
struct barrierd_anchor_bpf;

struct anchor {
	struct barrierd_anchor_bpf *skel;
	int fds[2]; /* the program, its .rodata map: the skeleton's, closed with it */
};

/*
 * Load the anchor naming p's slots map and sched_switch program, the state file open at
 * file_fd, and `generation` (the one this run stores in the file).  Needs CAP_BPF: before the
 * sandbox.  0 or -errno (the daemon then serves no anchor).
 */
int anchor_load(struct anchor *a, const struct probes *p, int file_fd, uint64_t generation);
void anchor_destroy(struct anchor *a);

#endif
