/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The maps and .bss globals the evidence logic (slot_logic.h) works on.  Each object that
 * includes this gets its own instances: the test-only object can never touch a live slot.
 */
#ifndef BARRIERD_SLOT_MAPS_H
#define BARRIERD_SLOT_MAPS_H

#include <barrierd_slot.h>
#include "daemon_tids.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct barrierd_slot);
	__uint(max_entries, 1); /* resized to the possible CPUs before load */
} slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096 * 4);
} signal_rb SEC(".maps");

/* Written by the daemon through the skeleton's mmap of .bss; see slot_logic.h. */
volatile __u64 vtime;
volatile __u64 watermark;
volatile __u64 switch_stamps;
volatile __u64 main_tid;
volatile __u64 main_switches;
volatile __u64 quiet_cpu; /* CPU + 1 kept from signalling up to quiet_upto; 0: none */
volatile __u64 quiet_upto;
volatile __u32 daemon_tids[BARRIERD_MAX_DAEMON_TIDS];

#endif
